//! `pagewire shell`: a command (default: your shell) in a network namespace
//! whose every connection crosses the emulated link, as Mahimahi's
//! `mm-delay`/`mm-link` shells do; the far side of the link is a gateway to
//! the host and its network (docs/link.md, "pagewire shell").
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::{Context, Result};
use pagewire_emu::cli as emu_cli;
use pagewire_emu::gateway::{self, Gateway, GatewayConfig, HOST_ADDR};
use pagewire_emu::{Datapath, Link, LinkConfig, StartOptions};

#[derive(clap::Args)]
#[command(
    after_help = "Inside: every TCP connection and DNS query crosses the link; \
                  198.18.0.2 is the host (198.18.0.2:PORT reaches the host's 127.0.0.1:PORT).\n\
                  Examples:\n  pagewire shell --net wan\n  \
                  pagewire shell --net ppp -- curl -o /dev/null http://198.18.0.2:8080/\n  \
                  pagewire shell --net wan -- pagewire shell --net ppp   (nested: each level relays)"
)]
pub struct Args {
    /// Network profile (as for `pagewire link`): lan, lan100, t1, wan, ppp,
    /// none, with optional +codel / +pie / +fq-codel.
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
    /// Print the counters on exit as JSON (on stderr; the command owns stdout).
    #[arg(long)]
    json: bool,
    /// Print nothing on exit.
    #[arg(long, short)]
    quiet: bool,
    /// How packets reach the forwarder: tun, packet (veth pairs and AF_PACKET
    /// sockets) or auto (TUN where /dev/net/tun opens). Default:
    /// $PAGEWIRE_DATAPATH, else auto.
    #[arg(long, value_name = "tun|packet|auto")]
    datapath: Option<String>,
    /// The command and its arguments (default: $SHELL, else /bin/sh).
    #[arg(last = true)]
    command: Vec<String>,
}

fn config(a: &Args) -> Result<LinkConfig> {
    a.link
        .parse()
        .and_then(|o| o.config(&a.net, a.seed))
        .map_err(super::usage_from)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let cfg = config(&args)?;
    let datapath = match args.datapath.as_deref() {
        Some(d) => Datapath::parse(d).map_err(super::usage_from)?,
        None => Datapath::from_env().map_err(super::usage_from)?,
    };
    let gw_cfg = GatewayConfig::from_env().map_err(super::usage_from)?;
    let argv: Vec<String> = if args.command.is_empty() {
        vec![std::env::var("SHELL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".into())]
    } else {
        args.command.clone()
    };
    // Still single-threaded here: the only moment a user namespace can be
    // entered (a no-op as root). Checked before any file is written.
    pagewire_emu::privilege::enter_user_namespace()?;
    pagewire_emu::privilege::check_for(Datapath::resolve(datapath))?;
    emu_cli::install_termination_handlers();

    let link = Link::start_with(
        cfg.clone(),
        StartOptions {
            datapath,
            client_default_route: true,
        },
    )
    .context("start the emulated link")?;
    let gw = Gateway::start(&link, gw_cfg).context("start the gateway to the host")?;

    // The shell's resolv.conf, bind-mounted over /etc/resolv.conf in its
    // own mount namespace; the file can go once the child has it mounted.
    let mut resolv = tempfile::Builder::new()
        .prefix("pagewire-shell-resolv.")
        .tempfile()
        .context("write the shell's resolv.conf")?;
    resolv.write_all(gateway::shell_resolv_conf().as_bytes())?;
    resolv.flush()?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(resolv.path(), std::fs::Permissions::from_mode(0o644))?;
    }

    let terminal = pagewire_emu::shell::Terminal::foreground();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env(gateway::ENV_SHELL_HOST, HOST_ADDR.to_string())
        .env("PAGEWIRE_SHELL", shell_depth().to_string())
        .env("PAGEWIRE_SHELL_NET", &cfg.profile);
    pagewire_emu::shell::prepare(
        &mut cmd,
        resolv.path(),
        pagewire_emu::privilege::outside_ids(),
        terminal.is_some(),
    )?;
    link.begin_run(args.pcap.as_deref())?;
    let mut child = link
        .spawn_in_client(cmd)
        .with_context(|| format!("start {:?} in the shell's namespace", argv[0]))?;
    if let Some(t) = &terminal {
        t.hand_to(child.id());
    }

    // Wait for the command, or a termination signal. Bounded by the
    // command's own lifetime; 5 ms steps.
    let status = loop {
        if let Some(sig) = emu_cli::terminated_by() {
            emu_cli::stop_process_group(&mut child, Duration::from_millis(500));
            drop(terminal);
            link.kill_client_processes();
            drop(gw);
            drop(link);
            eprintln!("pagewire shell: stopped by signal {sig}; link torn down");
            return Ok(ExitCode::from((128 + sig).min(255) as u8));
        }
        if let Some(st) = child.try_wait()? {
            break st;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    drop(terminal);
    drop(resolv);
    let code = emu_cli::exit_code(status);
    // What the command left in the background goes with it.
    link.kill_client_processes();
    let counters = link.end_run()?;
    let summary = format!(
        "{}\ndatapath {}, forwarder at {}",
        gw.stats().summary(),
        link.datapath().name(),
        if link.realtime_forwarder() {
            "real-time priority"
        } else {
            "normal priority (no CAP_SYS_NICE or RLIMIT_RTPRIO: timing is looser on a busy machine)"
        }
    );
    drop(gw);
    drop(link);

    if !args.quiet {
        let mut err = std::io::stderr().lock();
        if args.json {
            let json = emu_cli::render_json(&cfg, &counters, Some(code), args.pcap.as_deref());
            writeln!(err, "{json}")?;
        } else {
            write!(err, "{}", emu_cli::render_text(&cfg, &counters))?;
            writeln!(err, "{summary}")?;
            if let Some(p) = &args.pcap {
                writeln!(
                    err,
                    "pcap: {} (what made it: {})",
                    p.display(),
                    pagewire_link::pcap::sidecar_path(p).display()
                )?;
            }
        }
    }
    Ok(ExitCode::from(code))
}

/// 1 in a first shell, 2 in a shell started inside it, ...
fn shell_depth() -> u32 {
    std::env::var("PAGEWIRE_SHELL")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0)
        + 1
}
