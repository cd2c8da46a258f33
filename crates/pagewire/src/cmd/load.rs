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
use pagewire_load::calibration::Calibration;
use pagewire_load::fileset::Manifest;
use pagewire_load::metrics::{merge_dirs, write_dir};
use pagewire_load::model::{self, Params};
use pagewire_load::run::{self, Config, Live, LoadModel, Mode};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub sub: Option<Sub>,
    /// URLs to load as wrk or k6 would (http://HOST[:PORT]/PATH; connection i asks for URL i mod
    /// their number), instead of SURGE users: `pagewire load URL... -c N -d 30s [--rate R]`.
    #[arg(value_name = "URL", conflicts_with_all = ["target", "site", "check_model"])]
    pub urls: Vec<String>,
    /// URL mode: persistent connections.
    #[arg(short = 'c', long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub connections: u64,
    /// URL mode: requests per second over all connections (open model, latency from the
    /// intended send time); without it each connection sends as fast as responses come (closed).
    #[arg(long, value_name = "PER_SECOND")]
    pub rate: Option<f64>,
    /// URL mode with --rate: tick (one loop that wakes once per tick and reads every response
    /// that has arrived, latency from the kernel's receive timestamps) or tokio (a task per
    /// connection, woken per response; the engine of closed runs).
    #[arg(long, default_value = "tick", value_name = "ENGINE", value_parser = ["tick", "tokio"])]
    pub engine: String,
    /// The server: http://HOST[:PORT] (paths come from the site's manifest).
    #[arg(long, required_unless_present_any = ["check_model", "urls"])]
    pub target: Option<String>,
    /// The SURGE site the server serves (made by `pagewire site surge`; its manifest.json is read).
    #[arg(long, required_unless_present_any = ["check_model", "urls"])]
    pub site: Option<PathBuf>,
    /// User equivalents (the paper ran 20 to 640; one UE makes about 0.45 GETs/s).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub ues: u64,
    /// How long UEs start new requests (e.g. 30s, 10m); in-flight requests then finish or time out.
    #[arg(long, short = 'd', default_value = "30s", value_name = "DURATION", value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// The first part of the run that is not measured (default: a tenth of
    /// --duration, at most 30 s). UEs start at a random phase of their
    /// ON/OFF cycle, so the load is stationary from the start; the warm-up
    /// covers the server's and the connections' start.
    #[arg(long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,
    /// Exit 1 when failed GETs exceed this share of all GETs (0 = any error fails the run).
    #[arg(long, default_value_t = 0.0, value_name = "SHARE")]
    pub max_error_rate: f64,
    /// closed (the paper's fixed UEs) | open (Poisson session arrivals; nobody waits for a
    /// response before the next object is due) | partly-open (Poisson session arrivals, each
    /// a closed UE for its session). Open models need --session-rate.
    #[arg(long, default_value = "closed", value_parser = ["closed", "open", "partly-open"])]
    pub model: String,
    /// Sessions per second arriving in the open and partly-open models.
    #[arg(long, value_name = "PER_SECOND")]
    pub session_rate: Option<f64>,
    /// http10 | http11 | pipeline | early-close.
    #[arg(long, default_value = "http11")]
    pub mode: Mode,
    /// Start the UEs evenly over this time instead of all at once.
    #[arg(long, default_value = "0s", value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    pub ramp: Duration,
    /// Connections per UE for embedded files (paper 004 Figure 10 used 2); http10 and http11 only.
    #[arg(long, default_value_t = 1)]
    pub conns_per_ue: usize,
    /// Seed of the request stream; UE i's choices depend only on it and i
    /// (the default is every command's, as `bench surge`).
    #[arg(long, default_value_t = super::DEFAULT_SEED)]
    pub seed: u64,
    /// Run only the K-th of N slices of the UEs (0-based), e.g. 2/8; merge with `pagewire load merge`.
    #[arg(long, default_value = "0/1", value_parser = parse_shard)]
    pub shard: (u64, u64),
    /// Runtime threads (each a single-threaded runtime with its share of the UEs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: u64,
    /// Connect and each response must complete within this, else the GET counts as a timeout error.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = positive_duration, allow_hyphen_values = true)]
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

fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = super::positive_duration(s)?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be positive"));
    }
    Ok(d)
}

/// The default warm-up: a tenth of the run, at most 30 s.
pub fn default_warmup(duration: Duration) -> Duration {
    (duration / 10).min(Duration::from_secs(30))
}

/// Exit status of a finished run: 1 when failed GETs exceed `max_share`
/// of all GETs (also when nothing completed at all).
pub fn error_exit(summary: &pagewire_load::metrics::Summary, max_share: f64) -> ExitCode {
    let done = summary.gets + summary.gets_outside_window;
    let total = done + summary.errors;
    let share = if total == 0 {
        1.0
    } else {
        summary.errors as f64 / total as f64
    };
    if total == 0 {
        eprintln!("pagewire load: no GET was made (no UE reached its first request)");
        return ExitCode::SUCCESS;
    }
    if share > max_share {
        eprintln!(
            "pagewire load: {} of {} GETs failed ({:.1} %), above --max-error-rate {}",
            summary.errors,
            total,
            share * 100.0,
            max_share
        );
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
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
        let calibration = Calibration::of(&summary);
        if json {
            let mut v = serde_json::to_value(&summary)?;
            v["calibration"] = serde_json::to_value(&calibration)?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        } else {
            print!("{}", summary.text());
            print!("{}", calibration.text());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.check_model {
        let manifest = match &args.site {
            Some(dir) => Manifest::load(dir)?,
            None => pagewire_load::fileset::generate(
                pagewire_load::fileset::DEFAULT_FILES,
                pagewire_load::fileset::DEFAULT_SEED,
                &Params::default(),
            ),
        };
        return check_model(&manifest, args.samples, args.seed, args.json);
    }
    if !(0.0..=1.0).contains(&args.max_error_rate) {
        anyhow::bail!("--max-error-rate must be a share between 0 and 1");
    }
    if !args.urls.is_empty() {
        return run_urls(&args);
    }
    let site = args.site.clone().context("--site DIR is required")?;
    let manifest = Manifest::load(&site)?;
    let cfg = Config {
        target: args.target.clone().context("--target URL is required")?,
        ues: args.ues,
        model: match (args.model.as_str(), args.session_rate) {
            ("closed", None) => LoadModel::Closed,
            ("closed", Some(_)) => {
                anyhow::bail!("--session-rate applies to --model open or partly-open")
            }
            (_, None) => anyhow::bail!("--model {} needs --session-rate", args.model),
            ("open", Some(r)) => LoadModel::Open { sessions_per_s: r },
            (_, Some(r)) => LoadModel::PartlyOpen { sessions_per_s: r },
        },
        duration: args.duration,
        warmup: args.warmup.unwrap_or_else(|| default_warmup(args.duration)),
        ramp: args.ramp,
        mode: args.mode,
        conns_per_ue: args.conns_per_ue,
        seed: args.seed,
        shard: args.shard,
        threads: args.threads as usize,
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
    let calibration = Calibration::of(&summary);
    if let Some(out) = &args.out {
        write_dir(out, &summary, &metrics)
            .with_context(|| format!("writing results to {}", out.display()))?;
        std::fs::write(
            out.join("calibration.json"),
            serde_json::to_string_pretty(&calibration)? + "\n",
        )?;
    }
    if args.json {
        let mut v = serde_json::to_value(&summary)?;
        v["calibration"] = serde_json::to_value(&calibration)?;
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", summary.text());
        print!("{}", calibration.text());
    }
    Ok(error_exit(&summary, args.max_error_rate))
}

fn run_urls(args: &Args) -> anyhow::Result<ExitCode> {
    let cfg = pagewire_load::urls::UrlConfig {
        urls: args.urls.clone(),
        connections: args.connections,
        duration: args.duration,
        warmup: args.warmup.unwrap_or_else(|| default_warmup(args.duration)),
        rate: args.rate,
        timeout: args.timeout,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        engine: args.engine.parse().map_err(anyhow::Error::msg)?,
    };
    let live = Arc::new(Live::default());
    let stop = Arc::new(AtomicBool::new(false));
    let progress = (!args.no_progress && std::io::stderr().is_terminal()).then(|| {
        let live = live.clone();
        let stop = stop.clone();
        let total = args.duration;
        std::thread::spawn(move || progress_line(&live, &stop, total))
    });
    let result = pagewire_load::urls::run_urls(cfg, live);
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
    Ok(error_exit(&summary, args.max_error_rate))
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

fn check_model(
    manifest: &Manifest,
    samples: usize,
    seed: u64,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if samples < 1000 {
        anyhow::bail!("--samples must be at least 1000");
    }
    let mut lines = model::check(&Params::default(), samples, seed);
    lines.push(pagewire_load::streamcheck::popularity(
        &Params::default(),
        samples,
        seed,
    ));
    lines.extend(pagewire_load::streamcheck::check(
        manifest,
        &Params::default(),
        seed,
        pagewire_load::streamcheck::DEFAULT_UES,
        pagewire_load::streamcheck::DEFAULT_SECONDS,
    ));
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
        println!(
            "stream lines: {} UEs of the file set {:?} played for {} s of simulated time with zero transfer time (stream seed {seed}); bands: the calibration table's",
            pagewire_load::streamcheck::DEFAULT_UES,
            manifest.generator,
            pagewire_load::streamcheck::DEFAULT_SECONDS
        );
    }
    Ok(if lines.iter().all(|l| l.pass) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
