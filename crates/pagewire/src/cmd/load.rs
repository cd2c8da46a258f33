//! `pagewire load`: SURGE user equivalents against a server
//! (Barford & Crovella), `pagewire load merge` and `--check-model`.
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pagewire_load::fileset::Manifest;
use pagewire_load::metrics::{merge_dirs, write_dir};
use pagewire_load::model::{self, Params};
use pagewire_load::run::{self, Config, Live, Mode};

use pagewire_link::config::parse_duration;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    /// The server: http://HOST[:PORT] (paths come from the site's manifest).
    #[arg(long, required_unless_present = "check_model")]
    pub target: Option<String>,
    /// The SURGE site the server serves (made by `pagewire site surge`; its manifest.json is read).
    #[arg(long, required_unless_present = "check_model")]
    pub site: Option<PathBuf>,
    /// User equivalents (the paper ran 20 to 640).
    #[arg(long, default_value_t = 640)]
    pub ues: u64,
    /// How long UEs start new requests (e.g. 30s, 10m); in-flight requests then finish or time out.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Duration,
    /// http10 | http11 | pipeline | early-close.
    #[arg(long, default_value = "http11")]
    pub mode: Mode,
    /// Start the UEs evenly over this time instead of all at once.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = parse_duration)]
    pub ramp: Duration,
    /// Connections per UE for embedded files (paper 004 Figure 10 used 2); http10 and http11 only.
    #[arg(long, default_value_t = 1)]
    pub conns_per_ue: usize,
    /// Seed of the request stream; UE i's choices depend only on it and i.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only the K-th of N slices of the UEs (0-based), e.g. 2/8; merge with `pagewire load merge`.
    #[arg(long, default_value = "0/1", value_parser = parse_shard)]
    pub shard: (u64, u64),
    /// Runtime threads (each a single-threaded runtime with its share of the UEs).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Connect and each response must complete within this, else the GET counts as a timeout error.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Begin at this UTC time (RFC 3339, e.g. 2026-11-22T15:00:00Z) so that
    /// shards on several machines start together.
    #[arg(long, value_parser = parse_start_at)]
    pub start_at: Option<std::time::SystemTime>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write summary.json, timeseries.csv and the HDR histograms into DIR.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No live progress line.
    #[arg(long)]
    pub no_progress: bool,
    /// Draw large samples from every model, print KS statistics and the Zipf slope, exit 1 if any fails.
    #[arg(long)]
    pub check_model: bool,
    /// Samples per model for --check-model.
    #[arg(long, default_value_t = 200_000)]
    pub samples: usize,
}

#[derive(clap::Subcommand)]
pub enum Sub {
    /// Combine shard results exactly: counts add, histograms merge.
    Merge {
        /// Result directories written with --out.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Print the merged summary as JSON.
        #[arg(long)]
        json: bool,
        /// Write the merged results into DIR.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn parse_start_at(s: &str) -> Result<std::time::SystemTime, String> {
    pagewire_load::run::parse_rfc3339(s)
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let (k, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard {s:?}: expected K/N"))?;
    let k: u64 = k
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s:?}: bad K"))?;
    let n: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard {s:?}: bad N"))?;
    if n == 0 || k >= n {
        return Err(format!("--shard {s:?}: need 0 <= K < N"));
    }
    Ok((k, n))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Sub::Merge { dirs, json, out }) = args.sub {
        let (mut summary, metrics) = merge_dirs(&dirs)?;
        summary.run.command_line = std::env::args().collect::<Vec<_>>().join(" ");
        if let Some(out) = out {
            write_dir(&out, &summary, &metrics)?;
        }
        if json {
            println!("{}", serde_json::to_string_pretty(&summary)?);
        } else {
            print!("{}", summary.text());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.check_model {
        return check_model(args.samples, args.seed, args.json);
    }
    let site = args.site.clone().context("--site DIR is required")?;
    let manifest = Manifest::load(&site)?;
    let cfg = Config {
        target: args.target.clone().context("--target URL is required")?,
        ues: args.ues,
        duration: args.duration,
        ramp: args.ramp,
        mode: args.mode,
        conns_per_ue: args.conns_per_ue,
        seed: args.seed,
        shard: args.shard,
        threads: args.threads,
        timeout: args.timeout,
        params: Params::default(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        start_at: args.start_at,
    };
    let live = Arc::new(Live::default());
    let stop = Arc::new(AtomicBool::new(false));
    let progress = (!args.no_progress && std::io::stderr().is_terminal()).then(|| {
        let live = live.clone();
        let stop = stop.clone();
        let total = args.duration;
        std::thread::spawn(move || progress_line(&live, &stop, total))
    });
    let result = run::run(cfg, &manifest, live);
    stop.store(true, Ordering::Relaxed);
    if let Some(p) = progress {
        let _ = p.join();
    }
    let (summary, metrics) = result?;
    if let Some(out) = &args.out {
        write_dir(out, &summary, &metrics)
            .with_context(|| format!("writing results to {}", out.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.text());
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_line(live: &Live, stop: &AtomicBool, total: Duration) {
    let bar =
        ProgressBar::with_draw_target(Some(total.as_secs().max(1)), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:20}] {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let started = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(250));
        let el = started.elapsed();
        bar.set_position(el.as_secs().min(total.as_secs()));
        let gets = live.gets.load(Ordering::Relaxed);
        bar.set_message(format!(
            "GETs {gets}  errors {}  conns opened {}  open {}  UEs {}",
            live.errors.load(Ordering::Relaxed),
            live.connections.load(Ordering::Relaxed),
            live.open.load(Ordering::Relaxed),
            live.active_ues.load(Ordering::Relaxed),
        ));
    }
    bar.finish_and_clear();
}

fn check_model(samples: usize, seed: u64, json: bool) -> anyhow::Result<ExitCode> {
    if samples < 1000 {
        anyhow::bail!("--samples must be at least 1000");
    }
    let lines = model::check(&Params::default(), samples, seed);
    if json {
        println!("{}", serde_json::to_string_pretty(&lines)?);
    } else {
        println!(
            "{:<38} {:<52} {:>8} {:>10} {:>10}  verdict",
            "model", "distribution", "samples", "statistic", "bound"
        );
        for l in &lines {
            println!(
                "{:<38} {:<52} {:>8} {:>10.5} {:>10.5}  {}",
                l.model,
                l.distribution,
                l.samples,
                l.statistic,
                l.bound,
                if l.pass { "pass" } else { "FAIL" }
            );
        }
        println!("statistic: KS D against the model's CDF (bound: critical value at 0.01); popularity: fitted log-log slope (bound: -s, pass within 0.1)");
    }
    Ok(if lines.iter().all(|l| l.pass) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
