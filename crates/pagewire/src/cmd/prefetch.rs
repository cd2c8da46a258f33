//! `pagewire prefetch`: the dependency-graph predictor of paper 003 §7 and
//! its log-driven simulator (§8). A group of verbs: `simulate`, `synth-log`.
use std::fs::{self, File};
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pagewire_prefetch::fit::{fit_time_model, DEFAULT_MAX_GAP_S};
use pagewire_prefetch::log::{AccessLog, SkipReason};
use pagewire_prefetch::report::{
    csv, paper_comparison, text_tables, write_plots, HashingReader, Provenance,
};
use pagewire_prefetch::sim::{
    sweep, CacheConfig, Grid, SimOptions, Split, TimeModel, Trace, PAPER_SIMULATE, PAPER_TRAIN,
};
use pagewire_prefetch::spec::{parse_hints, parse_models, parse_thresholds, parse_windows};
use pagewire_prefetch::synth::{synth_log, SynthOptions};

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
    /// Write a large log made of time-shifted copies of a real one (for
    /// speed tests).
    SynthLog(SynthArgs),
}

#[derive(clap::Args)]
struct SimulateArgs {
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
    /// Print one JSON record per parameter point on stdout.
    #[arg(long)]
    json: bool,
    /// Write results.csv, results.jsonl, summary.json, tables.txt and SVG
    /// plots (the paper's Figures 10-13, 15, 16) into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct SynthArgs {
    /// Source log (plain or gzip).
    #[arg(long)]
    log: PathBuf,
    /// Lines to write.
    #[arg(long, default_value_t = 1_000_000)]
    lines: u64,
    /// Output file; `.gz` writes gzip.
    #[arg(long)]
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
    }
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

fn simulate(a: SimulateArgs) -> anyhow::Result<ExitCode> {
    // Validate every flag before the (possibly long) read.
    let grid = Grid {
        thresholds: parse_thresholds(&a.thresholds).context("--p")?,
        windows: parse_windows(&a.windows).context("--w")?,
        max_hints: parse_hints(&a.hints).context("--i")?,
        models: parse_models(&a.model).context("--model")?,
    };
    let simulate = match a.simulate.as_str() {
        "rest" => None,
        n => Some(
            n.parse::<usize>()
                .with_context(|| format!("--simulate: `{n}` is not a number or `rest`"))?,
        ),
    };
    let defaults = a.train == PAPER_TRAIN && simulate == Some(PAPER_SIMULATE);
    let split = Split {
        train: a.train,
        simulate,
        proportional: defaults,
    };
    if a.block_bytes == 0 || a.cache_bytes < a.block_bytes {
        bail!("--cache-bytes must be at least one block and --block-bytes > 0");
    }
    let cache = CacheConfig {
        capacity_bytes: a.cache_bytes,
        block_bytes: a.block_bytes,
    };

    let started = Instant::now();
    let file = File::open(&a.log).with_context(|| format!("opening {}", a.log.display()))?;
    let mut reader = HashingReader::new(file);
    let log =
        AccessLog::read(&mut reader).with_context(|| format!("reading {}", a.log.display()))?;
    let (log_bytes, log_sha256) = reader.finish();
    let read_s = started.elapsed().as_secs_f64();
    let trace = Trace::new(&log, split);
    if trace.simulate == 0 {
        let st = &log.stats;
        let reasons: Vec<String> = SkipReason::ALL
            .iter()
            .filter_map(|&r| {
                let n = st.skipped_for(r);
                (n > 0).then(|| format!("{} {n}", r.as_str()))
            })
            .collect();
        bail!(
            "{}: nothing to simulate: {} lines, {} parsed, {} skipped ({}), {} file accesses; {}",
            a.log.display(),
            st.lines,
            st.parsed,
            st.skipped,
            reasons.join(", "),
            trace.accesses.len(),
            trace.split_note
        );
    }

    let fit = fit_time_model(&log, DEFAULT_MAX_GAP_S);
    let (time, time_source) = match a.time_model.as_str() {
        "paper" => (TimeModel::PAPER, "paper 003 Fig. 14 regression".to_string()),
        "fit" => match &fit {
            Ok(f) => (
                f.model,
                format!(
                    "fitted from this log's inter-request gaps <= {DEFAULT_MAX_GAP_S} s ({} of {} points, R² {:.3})",
                    f.used, f.points, f.r2
                ),
            ),
            Err(e) => bail!("--time-model fit: cannot fit this log: {e}"),
        },
        other => {
            let (x, y) = other
                .split_once(',')
                .context("--time-model: use paper, fit or A,B (seconds, seconds per byte)")?;
            let tm = TimeModel {
                a_s: x.trim().parse().context("--time-model: A is not a number")?,
                b_s_per_byte: y.trim().parse().context("--time-model: B is not a number")?,
            };
            if !(tm.a_s >= 0.0 && tm.b_s_per_byte >= 0.0) {
                bail!("--time-model: A and B must be >= 0");
            }
            (tm, "given on the command line".to_string())
        }
    };
    let opts = SimOptions {
        cache,
        time,
        ..SimOptions::default()
    };
    let prov = Provenance {
        tool: tool(),
        command: command_line(),
        log_path: a.log.display().to_string(),
        log_bytes,
        log_sha256,
        log_lines: log.stats.lines,
        split: trace.split_note.clone(),
        cache,
        time_model: time,
        time_model_source: time_source.clone(),
        created_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };

    let mut err = io::stderr().lock();
    let st = &log.stats;
    let skipped: Vec<String> = SkipReason::ALL
        .iter()
        .filter_map(|&r| {
            let n = st.skipped_for(r);
            (n > 0).then(|| format!("{} {n}", r.as_str()))
        })
        .collect();
    let mut header = vec![
        format!("{} prefetch simulate (paper 003 §8)", tool()),
        format!(
            "log: {} ({} bytes{}, sha256 {})",
            a.log.display(),
            log_bytes,
            if st.gzip { ", gzip" } else { "" },
            prov.log_sha256
        ),
        format!(
            "lines {}: parsed {}, skipped {}{}; '-' or missing bytes {}, no protocol version {}, out-of-order timestamps {}",
            st.lines,
            st.parsed,
            st.skipped,
            if skipped.is_empty() {
                String::new()
            } else {
                format!(" ({})", skipped.join(", "))
            },
            st.bytes_missing,
            st.no_version,
            st.out_of_order
        ),
        format!(
            "file accesses (GET with status 200/203/206/304): {} of {} hosts and {} URLs; ignored {} not GET, {} other status",
            trace.accesses.len(),
            log.hosts.len(),
            log.urls.len(),
            trace.filtered.method,
            trace.filtered.status
        ),
        format!("split: {}", trace.split_note),
        format!(
            "client cache: {} bytes in {}-byte blocks, LRU per host, empty when simulation starts; the graph keeps learning during simulation (§8)",
            cache.capacity_bytes, cache.block_bytes
        ),
        format!(
            "fetch time: y = {:.4} + {:.4e} x s ({time_source})",
            time.a_s, time.b_s_per_byte
        ),
    ];
    match &fit {
        Ok(f) => header.push(format!(
            "  (fit from this log's gaps <= {DEFAULT_MAX_GAP_S} s: y = {:.3} + {:.3e} x, {} of {} points, R² {:.3})",
            f.model.a_s, f.model.b_s_per_byte, f.used, f.points, f.r2
        )),
        Err(e) => header.push(format!("  (no time model can be fitted from this log: {e})")),
    }
    header.push(format!(
        "sweep: p {:?} × w {:?} × i {} × {} model(s) = {} points on {} threads",
        grid.thresholds,
        grid.windows,
        grid.max_hints
            .iter()
            .map(|i| i.map_or("all".to_string(), |n| n.to_string()))
            .collect::<Vec<_>>()
            .join(","),
        grid.models.len(),
        grid.points(),
        rayon_threads()
    ));
    // Context goes to stderr with --json (stdout carries only records).
    let mut out = io::stdout().lock();
    for l in &header {
        if a.json {
            writeln!(err, "{l}")?;
        } else {
            writeln!(out, "{l}")?;
        }
    }

    let bar = if io::stderr().is_terminal() {
        ProgressBar::with_draw_target(Some(grid.points() as u64), ProgressDrawTarget::stderr())
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
    let sim_started = Instant::now();
    let (base, results) = sweep(&trace, &grid, &opts, &|n| bar.inc(n));
    bar.finish_and_clear();
    let sim_s = sim_started.elapsed().as_secs_f64();

    let timing = format!(
        "time: read+parse {read_s:.2} s, simulate {} points {sim_s:.2} s",
        results.len()
    );
    if a.json {
        for r in &results {
            writeln!(out, "{}", r.to_json())?;
        }
        writeln!(err, "{timing}")?;
    } else {
        writeln!(
            out,
            "no prefetching: miss rate {:.4}, average access time {:.3} s, {} bytes fetched, {} accesses",
            base.block_misses as f64 / base.blocks_accessed.max(1) as f64,
            base.access_time_s / base.accesses.max(1) as f64,
            base.demand_bytes,
            base.accesses
        )?;
        write!(out, "{}", text_tables(&results))?;
        writeln!(out, "\ncomparison with the paper (DEC log, §8.1):")?;
        write!(out, "{}", paper_comparison(&results))?;
        writeln!(out, "{timing}")?;
    }
    out.flush()?;

    if let Some(dir) = &a.out {
        write_outputs(dir, &results, &prov, &header, &base, &log, &trace, &fit)?;
        writeln!(err, "wrote results to {}", dir.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[allow(clippy::too_many_arguments)]
fn write_outputs(
    dir: &Path,
    results: &[pagewire_prefetch::sim::PointResult],
    prov: &Provenance,
    header: &[String],
    base: &pagewire_prefetch::sim::Counters,
    log: &AccessLog,
    trace: &Trace,
    fit: &Result<pagewire_prefetch::fit::TimeFit, String>,
) -> anyhow::Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::write(dir.join("results.csv"), csv(results, prov))?;
    // First line: what made the file; then one record per point, as --json.
    let mut jsonl = pagewire_prefetch::report::provenance_json_line(prov);
    for r in results {
        jsonl.push_str(&r.to_json());
        jsonl.push('\n');
    }
    fs::write(dir.join("results.jsonl"), jsonl)?;
    let plots = write_plots(dir, results, prov)?;
    let summary = serde_json_summary(prov, base, log, trace, fit, &plots);
    fs::write(dir.join("summary.json"), summary)?;
    let mut text = String::new();
    for l in prov.lines() {
        text.push_str(&format!("# {l}\n"));
    }
    text.push('\n');
    for l in header {
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(&text_tables(results));
    text.push_str("\ncomparison with the paper (DEC log, §8.1):\n");
    text.push_str(&paper_comparison(results));
    fs::write(dir.join("tables.txt"), text)?;
    Ok(())
}

fn serde_json_summary(
    prov: &Provenance,
    base: &pagewire_prefetch::sim::Counters,
    log: &AccessLog,
    trace: &Trace,
    fit: &Result<pagewire_prefetch::fit::TimeFit, String>,
    plots: &[String],
) -> String {
    pagewire_prefetch::report::summary_json(
        prov,
        base,
        &log.stats,
        &trace.filtered,
        trace.accesses.len(),
        log.hosts.len(),
        log.urls.len(),
        fit,
        plots,
    )
}

fn synth(a: SynthArgs) -> anyhow::Result<ExitCode> {
    let mut raw = Vec::new();
    File::open(&a.log)
        .with_context(|| format!("opening {}", a.log.display()))?
        .read_to_end(&mut raw)?;
    let source = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        flate2_read(&raw, &mut text)?;
        text
    } else {
        raw
    };
    let header = format!(
        "made by: {} — {}\nsource: {} ({} bytes of text)\ntime-shifted copies of the source, each moved forward by its time span + 1 s{}",
        tool(),
        command_line(),
        a.log.display(),
        source.len(),
        if a.distinct_hosts {
            "; copy K renames host H to H.cK"
        } else {
            "; the same hosts return in every copy"
        }
    );
    let file = File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let gz = a.out.extension().is_some_and(|e| e == "gz");
    let stats = if gz {
        let mut enc = pagewire_prefetch::synth::gzip_writer(BufWriter::new(file));
        let s = synth_log(
            &source,
            SynthOptions {
                lines: a.lines,
                distinct_hosts: a.distinct_hosts,
            },
            &header,
            &mut enc,
        )?;
        enc.finish()?.flush()?;
        s
    } else {
        let mut w = BufWriter::new(file);
        let s = synth_log(
            &source,
            SynthOptions {
                lines: a.lines,
                distinct_hosts: a.distinct_hosts,
            },
            &header,
            &mut w,
        )?;
        w.flush()?;
        s
    };
    eprintln!(
        "wrote {} lines ({} copies, shift {} s) to {}",
        stats.lines,
        stats.copies,
        stats.shift_s,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn flate2_read(raw: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
    pagewire_prefetch::synth::gunzip(raw, out).context("decompressing the source log")
}
