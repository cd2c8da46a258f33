//! `pagewire link`: run a server command and a client command on the two
//! sides of an emulated link and count every packet that crosses it.
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use pagewire_emu::cli as emu_cli;
use pagewire_emu::{Link, LinkConfig};

#[derive(clap::Args)]
#[command(
    after_help = "Both commands get PAGEWIRE_SERVER_ADDR and PAGEWIRE_CLIENT_ADDR.\n\
                  Example: pagewire link --net wan --json \\\n  \
                  --server 'pagewire serve --site microscape --addr $PAGEWIRE_SERVER_ADDR:8080' \\\n  \
                  -- sh -c 'pagewire fetch http://$PAGEWIRE_SERVER_ADDR:8080/'"
)]
pub struct Args {
    /// Network profile: lan (10 Mbit/s, 0.5 ms), lan100 (100 Mbit/s, 0.2 ms),
    /// t1 (1.544 Mbit/s, 70 ms), wan (1.5 Mbit/s, 90 ms), ppp (28.8 kbit/s,
    /// 150 ms), none (no delay, no rate limit); `+codel`, `+pie` or
    /// `+fq-codel` (with optional `:key=value,...`) adds a queue discipline,
    /// e.g. ppp+fq-codel.
    #[arg(long, default_value = "none")]
    net: String,
    #[command(flatten)]
    link: super::linkopts::LinkOptions,
    /// Seed for loss and jitter (the default is every command's, as `bench`).
    #[arg(long, default_value_t = super::DEFAULT_SEED)]
    seed: u64,
    /// Write everything that crossed the link to this pcap (+ FILE.json).
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Print the counters as JSON.
    #[arg(long)]
    json: bool,
    /// Server command, run with `sh -c` in the server namespace.
    #[arg(long)]
    server: Option<String>,
    /// How long to wait for the server to listen before starting the client.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    server_wait: Duration,
    /// Client command and its arguments, run in the client namespace.
    #[arg(last = true, required = true)]
    client: Vec<String>,
}

fn config(a: &Args) -> Result<LinkConfig> {
    a.link
        .parse()
        .and_then(|o| o.config(&a.net, a.seed))
        .map_err(super::usage_from)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let cfg = config(&args)?;
    let server_wait = args.server_wait;
    // Still single-threaded here: the only moment a user namespace can be
    // entered (a no-op as root).
    pagewire_emu::privilege::enter_user_namespace()?;
    emu_cli::install_termination_handlers();

    let link = Link::start(cfg.clone()).context("start the emulated link")?;
    link.begin_run(args.pcap.as_deref())?;

    let mut server = match &args.server {
        Some(s) => {
            let mut cmd = Command::new("/bin/sh");
            cmd.arg("-c").arg(s);
            let mut child = link
                .spawn_in_server(cmd)
                .context("start the server command")?;
            // Wait for a listener in 50 ms slices, noticing a server that
            // exits instead (bounded by `server_wait`).
            let until = std::time::Instant::now() + server_wait;
            loop {
                if link.wait_server_listening(Duration::from_millis(50))? {
                    break;
                }
                if let Some(st) = child.try_wait()? {
                    bail!("the server command exited ({st}) before listening: {s}");
                }
                if std::time::Instant::now() >= until {
                    eprintln!(
                        "pagewire link: warning: no TCP listener in the server namespace \
                         after {server_wait:?}; starting the client anyway"
                    );
                    break;
                }
            }
            Some(child)
        }
        None => None,
    };

    let mut cmd = Command::new(&args.client[0]);
    cmd.args(&args.client[1..]);
    let mut client = link
        .spawn_in_client(cmd)
        .with_context(|| format!("start the client command {:?}", args.client[0]))?;

    // Wait for the client, or a termination signal. Bounded by the client's
    // own lifetime; 5 ms steps.
    let status = loop {
        if let Some(sig) = emu_cli::terminated_by() {
            emu_cli::stop_process_group(&mut client, Duration::from_millis(500));
            if let Some(s) = server.as_mut() {
                emu_cli::stop_process_group(s, Duration::from_millis(500));
            }
            drop(link);
            eprintln!("pagewire link: stopped by signal {sig}; link torn down");
            return Ok(ExitCode::from((128 + sig).min(255) as u8));
        }
        if let Some(st) = client.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let code = emu_cli::exit_code(status);

    // Let the connection tear-down in flight finish crossing the link.
    let counters = link.end_run()?;
    if let Some(s) = server.as_mut() {
        emu_cli::stop_process_group(s, Duration::from_secs(2));
    }
    drop(link);

    // Write errors (a closed pipe) go to main, which treats EPIPE as "stop".
    let mut out = std::io::stdout().lock();
    if args.json {
        let json = emu_cli::render_json(&cfg, &counters, Some(code), args.pcap.as_deref());
        writeln!(out, "{json}")?;
    } else {
        write!(out, "{}", emu_cli::render_text(&cfg, &counters))?;
        if let Some(p) = &args.pcap {
            writeln!(
                out,
                "pcap: {} (what made it: {})",
                p.display(),
                pagewire_link::pcap::sidecar_path(p).display()
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::from(code))
}
