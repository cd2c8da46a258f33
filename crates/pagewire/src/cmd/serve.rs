//! `pagewire serve`: run the origin server on a directory or a generated site.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use pagewire_prefetch::PrefetchParams;
use pagewire_server::{ClosePolicy, FlushPolicy, ServerConfig};
use pagewire_site::microscape;
use pagewire_site::store::Site;

#[derive(clap::Args)]
pub struct Args {
    /// Serve the files under this directory (symlinks out of it and dotfiles
    /// are never served).
    #[arg(long, conflicts_with_all = ["site", "replay"], required_unless_present_any = ["site", "replay"])]
    pub root: Option<PathBuf>,
    /// Serve a generated site instead: `microscape` (paper 001's test page).
    #[arg(long, value_parser = ["microscape"], conflicts_with = "replay")]
    pub site: Option<String>,
    /// Serve a recorded site: a WARC file (`.warc`, `.warc.gz`) or a HAR
    /// with response bodies. Requests are matched by method, Host and
    /// target (query included), for any number of origins: point each
    /// recorded name at this server (`fetch --resolve`, Chromium's
    /// `--host-resolver-rules`). Unrecorded requests get 404 and a line on
    /// stderr.
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// With --replay: also offer a deflate (zlib) variant of identity-coded
    /// text, CSS, JavaScript, JSON, XML and SVG responses of 256 bytes or
    /// more to requests that accept deflate (like mod_deflate; paper 001's
    /// "pipelining with compression"). Off: every response is the recorded
    /// bytes.
    #[arg(long, requires = "replay")]
    pub replay_deflate: bool,
    /// With --replay: wait each response's recorded server think time
    /// (what `pagewire record` wrote) before its first byte, over HTTP/1.x.
    /// Off: every response is sent as soon as it is asked for.
    #[arg(long, requires = "replay")]
    pub replay_server_time: bool,
    /// Seed of the generated site.
    #[arg(long, default_value_t = super::DEFAULT_SEED, requires = "site")]
    pub seed: u64,
    /// Address to listen on; port 0 picks a free port. The chosen address is
    /// printed as "listening on http://ADDR".
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Worker threads (default: number of cores; at least 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub threads: Option<u64>,
    /// Close a connection after N responses (Apache 1.2b2 used 5; at least 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub max_requests: Option<u64>,
    /// When the response buffer is written: when-idle (when full, when no
    /// complete request is waiting, before idling) or each-response.
    #[arg(long, default_value = "when-idle")]
    pub flush: FlushPolicy,
    /// Leave Nagle's algorithm on (no TCP_NODELAY).
    #[arg(long)]
    pub nagle: bool,
    /// How to close: linger (half-close, drain, then close) or abrupt
    /// (close both halves at once; loses pipelined responses).
    #[arg(long, default_value = "linger")]
    pub close: ClosePolicy,
    /// Idle keep-alive timeout, e.g. 60s, 500ms (more than zero).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_nonzero_duration, allow_hyphen_values = true)]
    pub idle_timeout: Duration,
    /// Time allowed to receive a request head (slowloris defence; more
    /// than zero).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_nonzero_duration, allow_hyphen_values = true)]
    pub header_timeout: Duration,
    /// Time allowed for a request body the server waits for (GETLIST's
    /// uri-list), extended by one second per --body-min-rate bytes received;
    /// answered with 408 and a close.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub body_timeout: Duration,
    /// Least rate of such a body, e.g. 500B/s, 1KiB/s; 0: the whole body
    /// within --body-timeout.
    #[arg(long, value_name = "RATE", default_value = "500B/s", value_parser = pagewire_client::config::parse_byte_rate)]
    pub body_min_rate: u64,
    /// Most open connections; at the limit the least recently active idle
    /// connection is closed. Default: the open-files limit (soft raised to
    /// hard) minus a reserve of 64 for files and the log.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_conns: Option<u64>,
    /// Largest request head in bytes (request line, fields, blank line);
    /// larger gets 431.
    #[arg(long, default_value_t = pagewire_h1::Limits::default().max_head_bytes)]
    pub max_head_bytes: usize,
    /// Most field lines in a request head (at most 256); more gets 431.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub max_headers: u16,
    /// Longest single field line in bytes; longer gets 431.
    #[arg(long, default_value_t = pagewire_h1::Limits::default().max_header_line_bytes)]
    pub max_header_line_bytes: usize,
    /// Write a Common Log Format access log here.
    #[arg(long)]
    pub access_log: Option<PathBuf>,
    /// Piggyback prefetch hints (paper 003): e.g. w=4,p=0.5,i=2.
    #[arg(long)]
    pub prefetch: Option<PrefetchParams>,
    /// Build no precompressed variants (faster start).
    #[arg(long)]
    pub no_compress: bool,
    /// Speak TLS 1.3 instead of plain HTTP/1.x: HTTP/2 (ALPN h2) on the TCP
    /// port and HTTP/3 over QUIC on the same UDP port. DIR holds the run's
    /// throwaway CA (`ca.pem`, `server.pem`, `server-key.pem`); when they are
    /// missing a new CA and a certificate for localhost, 127.0.0.1, ::1 and
    /// the --addr address are made there. Clients trust DIR/ca.pem. HTTP/1.1
    /// over TLS is not offered. With --replay: the recorded site over TLS
    /// (every recorded origin, https or not, answered by its Host).
    #[arg(long, value_name = "DIR")]
    pub tls: Option<PathBuf>,
    /// With --tls: no HTTP/3 (no UDP socket).
    #[arg(long, requires = "tls")]
    pub no_h3: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stats = rt.block_on(async move {
        // Catch SIGINT/SIGTERM before the (possibly long) site load, so a
        // signal at any moment means a clean stop, never the default action.
        let signals = Signals::register()?;
        let (site, replay) = match &args.replay {
            Some(file) => {
                let replay = crate::cmd::record::load_replay(
                    file,
                    args.replay_deflate,
                    args.replay_server_time,
                )?;
                (Site::default(), Some(Arc::new(replay)))
            }
            None => (load_site(&args)?, None),
        };
        let config = config_from(&args);
        let resources = match &replay {
            Some(r) => r.len(),
            None => site.len(),
        };
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .with_context(|| format!("binding {}", args.addr))?;
        let addr = listener.local_addr()?;
        eprintln!(
            "pagewire serve: {} resources, {} threads",
            resources, config.threads
        );
        let budget = pagewire_server::fd_budget();
        match config.max_conns {
            None => eprintln!("pagewire serve: {budget}"),
            Some(n) => eprintln!(
                "pagewire serve: --max-conns {n}; open files: soft limit {} (hard {})",
                budget.soft, budget.hard
            ),
        }
        if let Some(dir) = &args.tls {
            let tls = tls_serve(dir, addr, !args.no_h3)?;
            println!(
                "listening on https://{addr} (HTTP/2 over TLS 1.3{}; CA {})",
                if tls.udp.is_some() {
                    ", HTTP/3 over QUIC on UDP"
                } else {
                    ""
                },
                dir.join("ca.pem").display()
            );
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
            let handler = match &replay {
                Some(r) => pagewire_server::Handler::from(r.clone()),
                None => pagewire_server::Handler::from(Arc::new(site)),
            };
            let stats = pagewire_server::serve_tls(listener, handler, config, tls, signals.wait())
                .await
                .context("serving")?;
            report_replay(replay.as_deref());
            return anyhow::Ok(stats);
        }
        // Scripts and tests read this line to learn the port.
        println!("listening on http://{addr}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let handler = match &replay {
            Some(r) => pagewire_server::Handler::from(r.clone()),
            None => pagewire_server::Handler::from(Arc::new(site)),
        };
        let stats = pagewire_server::serve(listener, handler, config, signals.wait())
            .await
            .context("serving")?;
        report_replay(replay.as_deref());
        anyhow::Ok(stats)
    })?;
    eprintln!("pagewire serve: stopped\n{stats}");
    Ok(ExitCode::SUCCESS)
}

/// The run's certificates (made when missing) and the UDP socket for
/// HTTP/3 on the listener's port.
/// The replay summary line on stderr (what `browse` and scripts read).
fn report_replay(replay: Option<&pagewire_server::replay::ReplaySite>) {
    if let Some(r) = replay {
        eprintln!(
            "pagewire serve: replay misses (404, no recorded answer): {}; fuzzy query matches: {}",
            r.misses(),
            r.fuzzy_matches()
        );
    }
}

fn tls_serve(
    dir: &std::path::Path,
    addr: SocketAddr,
    h3: bool,
) -> anyhow::Result<pagewire_server::TlsServe> {
    let ip = addr.ip().to_string();
    let mut names = vec!["localhost", "127.0.0.1", "::1"];
    if !addr.ip().is_unspecified() {
        names.push(&ip);
    }
    let files = pagewire_tls::ensure(dir, &names)?;
    let tls = pagewire_tls::server_config(&files, &[pagewire_tls::ALPN_H2])?;
    let udp = if h3 {
        Some(
            pagewire_server::modern::udp_for(addr)
                .with_context(|| format!("binding UDP {addr} for HTTP/3"))?,
        )
    } else {
        None
    };
    Ok(pagewire_server::TlsServe { tls, udp })
}

fn load_site(args: &Args) -> anyhow::Result<Site> {
    let options = pagewire_site::store::LoadOptions {
        no_compression: args.no_compress,
        ..Default::default()
    };
    let site = match (&args.root, args.site.as_deref()) {
        (Some(root), _) => {
            let site = Site::from_dir_with(root, &options)
                .with_context(|| format!("loading {}", root.display()))?;
            let sk = site.skipped();
            let skipped = sk.symlinks.len() + sk.names.len() + sk.other.len();
            if skipped > 0 {
                eprintln!(
                    "pagewire serve: skipped {} symlinks leaving the root or dangling, {} dotfiles/non-UTF-8 names, {} other",
                    sk.symlinks.len(),
                    sk.names.len(),
                    sk.other.len()
                );
            }
            site
        }
        (None, Some("microscape")) => {
            let m = microscape::generate(microscape::Options {
                seed: args.seed,
                ..Default::default()
            });
            eprintln!(
                "pagewire serve: synthetic Microscape site, seed {} (generated, not the original files)",
                args.seed
            );
            Site::from_files_with(m.site_files(), &options)
        }
        _ => crate::usage_bail!("give --root DIR or --site microscape"),
    };
    if site.is_empty() {
        anyhow::bail!("the site has no files");
    }
    Ok(site)
}

/// A duration that must be more than zero: a zero deadline would refuse
/// every request (or close every connection) at once.
fn parse_nonzero_duration(s: &str) -> Result<Duration, String> {
    let d = super::positive_duration(s)?;
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

fn config_from(args: &Args) -> ServerConfig {
    ServerConfig {
        threads: args
            .threads
            .map_or(ServerConfig::default().threads, |t| t as usize),
        flush: args.flush,
        nagle: args.nagle,
        close: args.close,
        max_requests: args.max_requests,
        idle_timeout: args.idle_timeout,
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        body_min_rate: args.body_min_rate,
        max_conns: args.max_conns.map(|n| n as usize),
        limits: pagewire_h1::Limits {
            max_head_bytes: args.max_head_bytes,
            max_headers: usize::from(args.max_headers),
            max_header_line_bytes: args.max_header_line_bytes,
            ..Default::default()
        },
        access_log: args.access_log.clone(),
        prefetch: args.prefetch,
        command_line: pagewire_emu::command_line().join(" "),
        ..Default::default()
    }
}

/// SIGINT and SIGTERM, registered once.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn register() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// Completes at the first SIGINT or SIGTERM: a graceful shutdown.
    async fn wait(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
