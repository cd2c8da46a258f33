//! `pagewire fetch`: the robot of paper 001 on one page.
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use pagewire_client::{FetchConfig, RequestProfile, Revalidation, Strategy, Timeouts};

#[derive(clap::Args)]
#[command(
    after_help = "The default strategy is paper 001's pipelining robot (`pipeline`): \
requests are buffered and sent when the buffer fills, after the page request, \
or when its 50 ms flush timer (--flush-after) fires, so on a fast link a fetch \
can include 50 ms timer waits that curl would not have. For plain persistent \
HTTP/1.1 (one request after another, like curl), use --strategy http11.\n\n\
Exit status: 0 every object answered with a success status \
(2xx, or 304 when revalidating); 1 some object answered otherwise (an error \
status (4xx/5xx), or a redirect (3xx) not followed: the page's are followed \
with --max-redirects N; an embedded object's never are), or the fetch failed \
(connection refused or reset, malformed or truncated response, a deadline or \
the minimum rate missed); 2 a usage error (bad arguments, nothing fetched); \
130 interrupted."
)]
pub struct Args {
    /// Page URL (http://host[:port]/path; https:// with --strategy h2 or h3).
    pub url: String,
    /// Transfer strategies, comma-separated (each fetches the page in turn,
    /// as `bench --strategy` runs each): http10, http11, pipeline,
    /// pipeline-deflate, getall (GETALL/GETLIST, paper 003), objpack
    /// (object package by content negotiation, paper 002). Both fall back
    /// to pipelining against servers that do not offer them. h2 (HTTP/2
    /// over TLS 1.3) and h3 (HTTP/3 over QUIC): one connection, a stream
    /// per object; https URLs and --ca. The default, pipeline, is paper
    /// 001's robot with its 50 ms flush timer (see below); http11 is plain
    /// persistent HTTP/1.1. With more than one, --har FILE is written once
    /// per strategy (FILE with `.STRATEGY` before its extension).
    #[arg(long, value_delimiter = ',', default_value = "pipeline", value_parser = parse_strategy)]
    pub strategy: Vec<Strategy>,
    /// Pipeline output buffer size in bytes (flushed when full).
    #[arg(long, default_value_t = pagewire_client::config::DEFAULT_OUT_BUFFER_BYTES)]
    pub out_buffer: usize,
    /// Pipeline flush timer, e.g. 50ms.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub flush_after: Duration,
    /// Pipeline: flush explicitly also when the page has been parsed to its
    /// end (the paper's robot left the last batch to the timer).
    #[arg(long)]
    pub flush_at_page_end: bool,
    /// Pipeline: do not flush after the page request (the paper's initial,
    /// untuned robot of Table 3; the first batch waits for the timer).
    #[arg(long)]
    pub no_explicit_flush: bool,
    /// Pipelining strategies, first visit: ask for the first N bytes of
    /// every image (Range), then the rest of each once all first parts
    /// are in ("poor man's multiplexing", paper 001); parts are joined and
    /// checked. The JSON report gives metadata_ms.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub range_first: Option<u64>,
    /// How to revalidate: get-head (page GET + HEADs, libwww 4.1D),
    /// conditional-get-head, conditional (conditional GETs, libwww 5.1).
    /// Default: get-head for http10, conditional otherwise.
    #[arg(long, value_name = "STYLE", value_parser = parse_revalidation)]
    pub revalidation: Option<Revalidation>,
    /// Request headers: libwww-1997 (sized like paper 001's robot,
    /// ~190-byte requests; the default, as in `bench`), or minimal
    /// (~90 bytes, curl-like).
    #[arg(long, value_name = "PROFILE", default_value = "libwww-1997", value_parser = parse_profile)]
    pub request_profile: RequestProfile,
    /// http10: most connections open at once.
    #[arg(long, default_value_t = pagewire_client::config::DEFAULT_MAX_CONNS)]
    pub max_conns: usize,
    /// Persistent cache directory (bodies and validators).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Revalidate cached objects (see --revalidation).
    #[arg(long)]
    pub revalidate: bool,
    /// Follow `Link: <url>; rel=prefetch` hints into the cache.
    #[arg(long)]
    pub prefetch: bool,
    /// Print the report as JSON (one object per fetch).
    #[arg(long)]
    pub json: bool,
    /// Save the fetched objects under DIR like `wget -p`.
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
    /// Write an HTTP Archive (HAR 1.2) file.
    #[arg(long, value_name = "FILE")]
    pub har: Option<PathBuf>,
    /// Connect timeout, e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub connect_timeout: Duration,
    /// Read timeout (silence while a response is awaited), e.g. 30s.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub read_timeout: Duration,
    /// Deadline of one response, from when it is awaited to its last byte,
    /// whatever trickles in meanwhile, e.g. 2m.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub object_timeout: Duration,
    /// Least progress while a response is awaited, in bytes per second over
    /// windows of --read-timeout, e.g. 100B/s, 1KiB/s; 0 turns it off.
    #[arg(long, value_name = "RATE", default_value = "100B/s", value_parser = pagewire_client::config::parse_byte_rate)]
    pub min_rate: u64,
    /// Fetch this many times in a row (each a separate record; with --cache
    /// and --revalidate, the first fills the cache).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Follow up to N redirects of the page (301/302/303/307/308 with a
    /// Location), like curl -L; 0 follows none.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=20))]
    pub max_redirects: u8,
    /// A deflate body inflating past this size fails its object (a "deflate
    /// bomb"), e.g. 32MiB, 500kB. The page is held in memory up to it; other
    /// objects kept for --cache are inflated into their cache file.
    #[arg(long, value_name = "SIZE", default_value = "32MiB", value_parser = pagewire_client::config::parse_size)]
    pub max_inflated: u64,
    /// Inflate Content-Encoding: deflate also when the request did not ask
    /// for it (by default such a body is kept as sent, with a warning).
    #[arg(long)]
    pub decode_unasked: bool,
    /// Leave Nagle's algorithm on (paper 001 turned it off).
    #[arg(long)]
    pub nagle: bool,
    /// Connect to ADDR for HOST:PORT, keeping the URL's Host (curl's
    /// --resolve HOST:PORT:ADDR; HOST `*` for any), e.g. to reach a
    /// `serve --replay` server under the recorded names.
    #[arg(long, value_name = "HOST:PORT:ADDR", value_parser = pagewire_client::ConnectTo::parse_resolve)]
    pub resolve: Vec<pagewire_client::ConnectTo>,
    /// Connect to ADDR:PORT2 for HOST1:PORT1 (curl's --connect-to; HOST1 or
    /// PORT1 empty: any), e.g. `::127.0.0.2:8080`.
    #[arg(long, value_name = "HOST1:PORT1:ADDR:PORT2", value_parser = pagewire_client::ConnectTo::parse_connect_to)]
    pub connect_to: Vec<pagewire_client::ConnectTo>,
    /// Width in CSS pixels of the window the page is laid out for: which
    /// srcset / <picture> candidate and which media queries match.
    #[arg(long, value_name = "PX", default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub viewport: u32,
    /// Also fetch references to other origins (scheme, host or port), each
    /// alone after the page; without it they are only listed.
    #[arg(long)]
    pub cross_origin: bool,
    /// Device pixel ratio for srcset, image-set() and resolution queries.
    #[arg(long, value_name = "RATIO", default_value_t = 1.0, value_parser = parse_dpr)]
    pub dpr: f64,
    /// CA certificate (PEM) to trust for https:// URLs: the ca.pem that
    /// `pagewire serve --tls DIR` wrote; nothing else is trusted.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// The directory `pagewire serve --tls DIR` wrote: trust DIR/ca.pem
    /// (the same as --ca DIR/ca.pem).
    #[arg(long, value_name = "DIR", conflicts_with = "ca")]
    pub tls: Option<PathBuf>,
    /// Which @font-face sources to fetch: `used` (the faces the page's text
    /// uses, as a browser) or `all` (one source of every @font-face).
    #[arg(long, value_name = "used|all", default_value = "used", value_parser = ["used", "all"])]
    pub fonts: String,
}

fn parse_dpr(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(d) if d > 0.0 && d <= 16.0 => Ok(d),
        _ => Err(format!("--dpr must be a number in (0, 16], got {s:?}")),
    }
}

fn parse_revalidation(s: &str) -> Result<Revalidation, pagewire_client::config::UnknownOption> {
    s.parse()
}

fn parse_profile(s: &str) -> Result<RequestProfile, pagewire_client::config::UnknownOption> {
    s.parse()
}

fn parse_strategy(s: &str) -> Result<Strategy, pagewire_client::config::UnknownStrategy> {
    s.parse()
}

/// `--har FILE` for strategy `st`: FILE itself with one strategy, else
/// FILE with `.st` before its extension (`page.har` -> `page.http11.har`).
fn har_path(file: &std::path::Path, st: Strategy, several: bool) -> PathBuf {
    if !several {
        return file.to_path_buf();
    }
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    let name = match file.extension() {
        Some(ext) => format!("{stem}.{st}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{st}"),
    };
    file.with_file_name(name)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut strategies = args.strategy.clone();
    strategies.dedup();
    let several = strategies.len() > 1;
    let mut code = ExitCode::SUCCESS;
    for st in strategies {
        if run_one(&args, st, several)? != ExitCode::SUCCESS {
            code = ExitCode::from(1);
        }
    }
    Ok(code)
}

fn run_one(args: &Args, strategy: Strategy, several: bool) -> anyhow::Result<ExitCode> {
    let mut cfg = FetchConfig::new(args.url.clone(), strategy);
    cfg.out_buffer_bytes = args.out_buffer;
    cfg.flush_after = args.flush_after;
    cfg.flush_at_page_end = args.flush_at_page_end;
    cfg.explicit_flush = !args.no_explicit_flush;
    cfg.range_first = args.range_first;
    if let Some(r) = args.revalidation {
        cfg.revalidation = r;
    }
    cfg.request_profile = args.request_profile;
    cfg.max_conns = args.max_conns;
    cfg.cache_dir = args.cache.clone();
    cfg.revalidate = args.revalidate;
    cfg.prefetch = args.prefetch;
    // --save and --har need the bodies (a HAR carries them, base64, so
    // that `serve --replay` can serve it); bodies not kept stay out of
    // memory.
    cfg.keep_bodies = args.save.is_some() || args.har.is_some();
    cfg.save_dir = args.save.clone();
    cfg.nodelay = !args.nagle;
    cfg.max_redirects = args.max_redirects.into();
    cfg.max_inflated = args.max_inflated;
    cfg.decode_unasked = args.decode_unasked;
    cfg.connect_to = args
        .resolve
        .iter()
        .chain(&args.connect_to)
        .cloned()
        .collect();
    cfg.cross_origin = args.cross_origin;
    cfg.all_fonts = args.fonts == "all";
    cfg.viewport = pagewire_client::Viewport {
        width: args.viewport,
        dpr: args.dpr,
    };
    cfg.tls_ca = args
        .ca
        .clone()
        .or_else(|| args.tls.as_ref().map(|d| d.join("ca.pem")));
    cfg.timeouts = Timeouts {
        connect: args.connect_timeout,
        read: args.read_timeout,
        object: args.object_timeout,
        min_rate: args.min_rate,
        ..Timeouts::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the runtime")?;
    let mut code = ExitCode::SUCCESS;
    let stdout = std::io::stdout();
    for _ in 0..args.repeat {
        let report = rt
            .block_on(pagewire_client::fetch(cfg.clone()))
            .map_err(|e| match e {
                // Flags that cannot work together: a usage error (exit 2).
                pagewire_client::FetchError::Config(m) => super::usage(m),
                e => anyhow::Error::new(e),
            })?;
        let mut out = stdout.lock();
        if args.json {
            writeln!(out, "{}", report.to_json())?;
        } else {
            write!(out, "{}", report.summary())?;
            if matches!(cfg.strategy, Strategy::Pipeline | Strategy::PipelineDeflate) {
                writeln!(
                    out,
                    "  strategy {}: paper 001's pipelining robot; a batch not flushed \
                     explicitly waits for the {} ms flush timer (--flush-after); \
                     --strategy http11 fetches without it",
                    cfg.strategy,
                    cfg.flush_after.as_millis()
                )?;
            }
        }
        if let Some(dir) = &args.save {
            let saved = pagewire_client::save::save(&report, dir)?;
            for line in &saved.skipped {
                eprintln!("pagewire: fetch: warning: {line}");
            }
            if !args.json {
                writeln!(
                    out,
                    "  saved {} files under {}",
                    saved.files.len(),
                    dir.display()
                )?;
            }
        }
        // A redirect chain cut by --max-redirects: the page is the 3xx, so
        // the exit status is 1; say why on stderr (also with --json).
        for w in report
            .warnings
            .iter()
            .filter(|w| w.contains("--max-redirects"))
        {
            eprintln!("pagewire: fetch: {w}");
        }
        if let Some(file) = &args.har {
            let path = har_path(file, strategy, several);
            std::fs::write(&path, pagewire_client::har::to_har_string(&report))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if report.failed_objects().next().is_some() {
            code = ExitCode::from(1);
        }
    }
    Ok(code)
}
