//! `pagewire browse`: headless Chromium on any page over the emulated link,
//! live or replayed from an archive (docs/browse.md).
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};
use pagewire_emu::Datapath;
use pagewire_lab::browse::{self, BrowseConfig, BrowseProtocol};

#[derive(clap::Args)]
#[command(
    after_help = "Live pages go out through the link's gateway to the host (as in `pagewire \
                  shell`: 198.18.0.2:PORT is the host's 127.0.0.1:PORT); --replay serves every \
                  recorded origin in the server namespace instead (http on port 80, https with \
                  a throwaway certificate only this browser trusts on 443) and maps each \
                  recorded host:port there with Chromium's --host-resolver-rules.\n\
                  Examples:\n  pagewire browse https://example.org/ --net wan --reps 5\n  \
                  pagewire browse --replay site.warc.gz --net ppp --har page.har\n  \
                  pagewire browse http://198.18.0.2:8080/ --net lan --protocol h1"
)]
pub struct Args {
    /// The page (with --replay: a recorded URL; default the archive's
    /// first recorded HTML page).
    url: Option<String>,
    /// Network profile: lan, lan100, t1, wan, ppp, none, with optional
    /// +codel / +pie / +fq-codel.
    #[arg(long, default_value = "none")]
    net: String,
    #[command(flatten)]
    link: super::linkopts::LinkOptions,
    /// Seed for loss and jitter.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replay a recorded site (WARC or HAR with bodies) instead of the
    /// network.
    #[arg(long, value_name = "ARCHIVE")]
    replay: Option<PathBuf>,
    /// With --replay: wait each response's recorded server think time.
    #[arg(long, requires = "replay")]
    replay_server_time: bool,
    /// How https origins are spoken: h1 (live only), h2, h3 (replay only).
    /// http origins are always HTTP/1.1.
    #[arg(long, default_value = "h2", value_name = "h1|h2|h3")]
    protocol: BrowseProtocol,
    /// Repetitions (each a fresh browser profile: a first visit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// Also write one HAR with every repetition's page here.
    #[arg(long, value_name = "FILE")]
    har: Option<PathBuf>,
    /// Output directory (per-rep HARs and pcaps, browse.json, report.html).
    #[arg(long, default_value = "browse-results")]
    out: PathBuf,
    /// Longest one page load may take.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    timeout: Duration,
    /// Print browse.json on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// How packets reach the forwarder: tun, packet or auto (default:
    /// $PAGEWIRE_DATAPATH, else auto).
    #[arg(long, value_name = "tun|packet|auto")]
    datapath: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let link = args
        .link
        .parse()
        .and_then(|o| o.config(&args.net, args.seed))
        .map_err(super::usage_from)?;
    let datapath = match args.datapath.as_deref() {
        Some(d) => Datapath::parse(d).map_err(super::usage_from)?,
        None => Datapath::from_env().map_err(super::usage_from)?,
    };
    if args.url.is_none() && args.replay.is_none() {
        crate::usage_bail!("name the page URL, or --replay ARCHIVE");
    }
    // Still single-threaded: the only moment a user namespace can be
    // entered (a no-op as root). Checked before any file is written.
    pagewire_emu::privilege::enter_user_namespace()?;
    pagewire_emu::privilege::check_for(Datapath::resolve(datapath))?;
    pagewire_lab::interrupt::install();
    let cfg = BrowseConfig {
        url: args.url,
        replay: args.replay,
        replay_server_time: args.replay_server_time,
        link,
        datapath,
        protocol: args.protocol,
        reps: args.reps,
        out_dir: args.out,
        har: args.har,
        exe: std::env::current_exe().context("find the pagewire binary")?,
        timeout: args.timeout,
        gateway: None,
    };
    let out = browse::run(&cfg)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!("{}", browse::render_text(&out));
    }
    Ok(if out.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
