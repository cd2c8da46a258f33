//! `pagewire prefetch`: the dependency-graph predictor of paper 003 §7 and
//! its log-driven simulator (§8). A group of verbs: `simulate`, `synth-log`.
//! Flags become a `pagewire_prefetch::run::SimulateJob`; the crate does the
//! work, this module draws the progress bar.
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pagewire_prefetch::run::{SimulateJob, TimeModelChoice};
use pagewire_prefetch::sim::{CacheConfig, Grid, Split, PAPER_SIMULATE, PAPER_TRAIN};
use pagewire_prefetch::spec::{parse_hints, parse_models, parse_thresholds, parse_windows};
use pagewire_prefetch::synth::{synth_file, SynthOptions};
use pagewire_prefetch::variant::{
    Entries, Schedule, ThresholdRule, TrafficMeasure, Variant, WeightTiming,
};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Replay an access log through the predictor and per-client caches
    /// (paper 003 §8) over a grid of p, w, i and both models.
    Simulate(SimulateArgs),
    /// Statistics of a log that bear on prediction (accesses per host,
    /// successors per document, arc weights, gaps, usefulness of prefetches
    /// by arc weight) beside what paper 003 says of DEC's log.
    Stats(StatsArgs),
    /// Write a log with a known answer: hosts walking a tree of documents
    /// with known transition probabilities (0.7 / 0.3, 3 steps); prints the
    /// simple model's exact miss rate and traffic for w = 2, i = all.
    MarkovLog(MarkovArgs),
    /// Write a large log made of time-shifted copies of a real one (for
    /// speed tests).
    SynthLog(SynthArgs),
}

#[derive(clap::Args)]
pub struct SimulateArgs {
    /// Access log in Common Log Format, plain or gzip (detected by content).
    #[arg(long)]
    log: PathBuf,
    /// Thresholds: `0.5`, `0.3,0.7` or `start:end:step` (paper: 0:1.1:0.1).
    #[arg(long = "p", default_value = "0:1.1:0.1")]
    thresholds: String,
    /// Lookahead windows: `4`, `2,4` or `2..10` (paper: 2..10).
    #[arg(long = "w", default_value = "2..10")]
    windows: String,
    /// Hint limits: `1`, `1,2,all` (paper: 1,2,all).
    #[arg(long = "i", default_value = "1,2,all")]
    hints: String,
    /// simple (prefetches complete instantly, §8.1), realistic (§8.2) or both.
    #[arg(long, default_value = "both")]
    model: String,
    /// File accesses used only to train the graph (paper: 50000).
    #[arg(long, default_value_t = PAPER_TRAIN)]
    train: usize,
    /// File accesses simulated after training: a number or `rest` (paper:
    /// 70000). A log shorter than train + simulate is split in the same
    /// 50:70 proportion.
    #[arg(long, default_value = "70000")]
    simulate: String,
    /// Client cache size in bytes (paper: 4 MB).
    #[arg(long, default_value_t = 4 << 20)]
    cache_bytes: u64,
    /// Cache block size in bytes (paper: 8 KB).
    #[arg(long, default_value_t = 8 << 10)]
    block_bytes: u64,
    /// Fetch-time model y = a + b·x: `paper` (a = 1.13 s, b = 5.36e-5 s/byte),
    /// `fit` (fitted from this log's inter-request gaps), or `A,B`.
    #[arg(long, default_value = "paper")]
    time_model: String,
    /// When weights are read: `before` counting the request that triggers
    /// the prediction (the graph as the request found it; a weight of 1.0 is
    /// reachable, so p = 1.0 still prefetches and p = 1.1 is "no
    /// prefetching", as paper 003 §8 says), or `after` (its successors not
    /// yet seen, so no weight reaches 1.0).
    #[arg(long, default_value = "before")]
    weights: WeightTiming,
    /// Candidates: weight `ge` p, or `gt` p (the paper's "higher than").
    #[arg(long, default_value = "ge")]
    threshold_rule: ThresholdRule,
    /// What `traffic_increase` measures: net-bytes (bytes sent with / without
    /// prefetching - 1), gross-bytes (prefetched bytes / bytes without),
    /// net-blocks, gross-blocks, net-files, gross-files. Every measure is in
    /// the JSON records' `traffic` either way.
    #[arg(long, default_value = "net-bytes")]
    traffic: TrafficMeasure,
    /// Which lines are accesses: files (GET with status 200/203/206/304),
    /// get (every GET), all (every request).
    #[arg(long, default_value = "files")]
    entries: Entries,
    /// Realistic model: `serial` (prefetches start when the requested file
    /// has arrived — a + b·size after a miss — and run one after another),
    /// `shared` (start then, all at once, sharing the bandwidth) or
    /// `independent` (each from the request on its own, as if in parallel:
    /// pagewire's first model).
    #[arg(long, default_value = "serial")]
    schedule: Schedule,
    /// Empty a host's lookahead window after this much silence (`30m`);
    /// default: never.
    #[arg(long, value_parser = super::positive_duration, allow_hyphen_values = true)]
    window_reset: Option<std::time::Duration>,
    /// Print one JSON record per parameter point on stdout.
    #[arg(long)]
    json: bool,
    /// Write results.csv, results.jsonl, summary.json, tables.txt and SVG
    /// plots (the paper's Figures 10-13, 15, 16) into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct StatsArgs {
    /// Access log in Common Log Format, plain or gzip (detected by content).
    #[arg(long)]
    log: PathBuf,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct MarkovArgs {
    /// Output file (Common Log Format). (`--out` is an alias.)
    #[arg(long = "out-file", alias = "out", value_name = "FILE")]
    out: PathBuf,
    /// Walks (one host each, unless proxied).
    #[arg(long, default_value_t = 20_000)]
    hosts: usize,
    /// Share of the walks made through a proxy host (0..1); the exact answer
    /// printed holds only for 0.
    #[arg(long, default_value_t = 0.0)]
    proxied: f64,
    /// Proxies the proxied walks are spread over.
    #[arg(long, default_value_t = 1)]
    proxies: usize,
    /// Seed of the walks (the default is every command's).
    #[arg(long, default_value_t = super::DEFAULT_SEED)]
    seed: u64,
}

#[derive(clap::Args)]
struct SynthArgs {
    /// Source log (plain or gzip).
    #[arg(long)]
    log: PathBuf,
    /// Lines to write.
    #[arg(long, default_value_t = 1_000_000)]
    lines: u64,
    /// Output file; `.gz` writes gzip. (`--out` is an alias.)
    #[arg(long = "out-file", alias = "out", value_name = "FILE")]
    out: PathBuf,
    /// Give each copy its own host names (`host.cK`) instead of the same
    /// clients returning every "day".
    #[arg(long)]
    distinct_hosts: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Simulate(a) => simulate(a),
        Command::SynthLog(a) => synth(a),
        Command::Stats(a) => stats(a),
        Command::MarkovLog(a) => markov_log(a),
    }
}

fn markov_log(a: MarkovArgs) -> anyhow::Result<ExitCode> {
    use pagewire_prefetch::markov::{expected, MarkovSpec};
    if !(0.0..=1.0).contains(&a.proxied) || a.proxies == 0 || a.hosts == 0 {
        crate::usage_bail!("--proxied must be in 0..1, --proxies and --hosts > 0");
    }
    let spec = MarkovSpec {
        hosts: a.hosts,
        proxied_share: a.proxied,
        proxies: a.proxies,
        seed: a.seed,
        ..MarkovSpec::default()
    };
    std::fs::write(&a.out, spec.log_text())
        .with_context(|| format!("writing {}", a.out.display()))?;
    let mut err = io::stderr().lock();
    writeln!(
        err,
        "wrote {} walks of {} requests to {} (q = {:?}, {}% proxied)",
        spec.hosts,
        spec.depth + 1,
        a.out.display(),
        spec.q,
        100.0 * spec.proxied_share
    )?;
    writeln!(
        err,
        "exact answer without proxies, simple model, w = 2, i = all:"
    )?;
    for p in [0.1, 0.5, 0.8] {
        let e = expected(&spec, 2, p, usize::MAX);
        writeln!(
            err,
            "  p = {p}: miss rate {:.4}, traffic net-bytes {:+.4}, net-files {:+.4}, gross-bytes {:+.4}",
            e.miss_rate, e.traffic_net_bytes, e.traffic_net_files, e.traffic_gross_bytes
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn stats(a: StatsArgs) -> anyhow::Result<ExitCode> {
    let log = pagewire_prefetch::log::AccessLog::read_path(&a.log)
        .with_context(|| format!("reading {}", a.log.display()))?;
    let s = pagewire_prefetch::stats::LogStats::compute(&log);
    let mut out = io::stdout().lock();
    if a.json {
        writeln!(out, "{}", serde_json::to_string(&s)?)?;
    } else {
        writeln!(out, "{} prefetch stats — {}", tool(), command_line())?;
        write!(out, "{}", s.text())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn command_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    let mut parts = vec!["pagewire".to_string()];
    parts.extend(args.into_iter().skip(1).map(
        |a| {
            if a.contains(' ') {
                format!("'{a}'")
            } else {
                a
            }
        },
    ));
    parts.join(" ")
}

fn tool() -> String {
    format!("pagewire {}", env!("CARGO_PKG_VERSION"))
}

pub fn simulate(a: SimulateArgs) -> anyhow::Result<ExitCode> {
    // Validate every flag before the (possibly long) read.
    let grid = Grid {
        thresholds: parse_thresholds(&a.thresholds)
            .context("--p")
            .map_err(super::usage_from)?,
        windows: parse_windows(&a.windows)
            .context("--w")
            .map_err(super::usage_from)?,
        max_hints: parse_hints(&a.hints)
            .context("--i")
            .map_err(super::usage_from)?,
        models: parse_models(&a.model)
            .context("--model")
            .map_err(super::usage_from)?,
    };
    let simulate = match a.simulate.as_str() {
        "rest" => None,
        n => Some(
            n.parse::<usize>()
                .with_context(|| format!("--simulate: `{n}` is not a number or `rest`"))
                .map_err(super::usage_from)?,
        ),
    };
    let defaults = a.train == PAPER_TRAIN && simulate == Some(PAPER_SIMULATE);
    if a.block_bytes == 0 || a.cache_bytes < a.block_bytes {
        crate::usage_bail!("--cache-bytes must be at least one block and --block-bytes > 0");
    }
    let job = SimulateJob {
        log: a.log,
        grid,
        split: Split {
            train: a.train,
            simulate,
            proportional: defaults,
        },
        cache: CacheConfig {
            capacity_bytes: a.cache_bytes,
            block_bytes: a.block_bytes,
        },
        time_model: a
            .time_model
            .parse::<TimeModelChoice>()
            .context("--time-model")
            .map_err(super::usage_from)?,
        variant: Variant {
            weights: a.weights,
            threshold: a.threshold_rule,
            traffic: a.traffic,
            entries: a.entries,
            schedule: a.schedule,
            window_reset_s: a.window_reset.map(|d| d.as_secs_f64()),
        },
    };

    let loaded = job.load(tool(), command_line())?;
    // Context goes to stderr with --json (stdout carries only records).
    let mut out = io::stdout().lock();
    let mut err = io::stderr().lock();
    if a.json {
        loaded.write_header(&mut err)?;
    } else {
        loaded.write_header(&mut out)?;
    }

    let bar = if io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(loaded.points() as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} simulating [{bar:40}] {pos}/{len} points {elapsed}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let done = loaded.run(&|n| bar.inc(n));
    bar.finish_and_clear();

    if a.json {
        done.write_json(&mut out)?;
        writeln!(err, "{}", done.timing())?;
    } else {
        done.write_text(&mut out)?;
    }
    out.flush()?;

    if let Some(dir) = &a.out {
        done.write_dir(dir)?;
        writeln!(err, "wrote results to {}", dir.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn synth(a: SynthArgs) -> anyhow::Result<ExitCode> {
    let opts = SynthOptions {
        lines: a.lines,
        distinct_hosts: a.distinct_hosts,
    };
    let made_by = format!("{} — {}", tool(), command_line());
    let stats = synth_file(&a.log, &a.out, opts, &made_by)?;
    eprintln!(
        "wrote {} lines ({} copies, shift {} s) to {}",
        stats.lines,
        stats.copies,
        stats.shift_s,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
