//! A whole `pagewire prefetch simulate` job: read and hash the log, build the
//! trace, choose the time model, run the sweep, print the tables or the JSON
//! records, write the results directory. The CLI only parses flags into a
//! [`SimulateJob`] and draws the progress bar.
//!
//! ```no_run
//! use pagewire_prefetch::run::{SimulateJob, TimeModelChoice};
//! use pagewire_prefetch::sim::{CacheConfig, Grid, Split};
//!
//! let job = SimulateJob {
//!     log: "data/logs/epa-http.log.gz".into(),
//!     grid: Grid::paper(),
//!     split: Split::default(),
//!     cache: CacheConfig::default(),
//!     time_model: TimeModelChoice::Paper,
//!     variant: Default::default(),
//! };
//! let loaded = job.load("pagewire 0.1.0".into(), "pagewire prefetch simulate ...".into())?;
//! let mut out = std::io::stdout().lock();
//! loaded.write_header(&mut out)?;
//! let done = loaded.run(&|_points| {});
//! done.write_text(&mut out)?;
//! done.write_dir("results".as_ref())?;
//! # Ok::<(), pagewire_prefetch::run::RunError>(())
//! ```

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::fit::{fit_time_model, TimeFit, DEFAULT_MAX_GAP_S};
use crate::log::{AccessLog, SkipReason};
use crate::report::{
    csv, paper_comparison, provenance_json_line, summary_json, text_tables, write_plots,
    HashingReader, Provenance,
};
use crate::sim::{
    sweep, CacheConfig, Counters, Grid, PointResult, SimOptions, Split, TimeModel, Trace,
};
use crate::variant::{Entries, Variant};

/// Where the fetch-time model `y = a + b·x` of the realistic model comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeModelChoice {
    /// Paper 003's Fig. 14 regression ([`TimeModel::PAPER`]).
    Paper,
    /// Fitted from this log's inter-request gaps.
    Fit,
    /// Given: `A,B` (seconds, seconds per byte), both >= 0.
    Given(TimeModel),
}

/// Why a `--time-model` value was rejected.
#[derive(Debug, thiserror::Error)]
pub enum TimeModelError {
    #[error("use paper, fit or A,B (seconds, seconds per byte)")]
    Syntax,
    #[error("A is not a number")]
    A(#[source] std::num::ParseFloatError),
    #[error("B is not a number")]
    B(#[source] std::num::ParseFloatError),
    #[error("A and B must be >= 0")]
    Negative,
}

impl FromStr for TimeModelChoice {
    type Err = TimeModelError;

    /// `paper`, `fit` or `A,B`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "paper" => Ok(TimeModelChoice::Paper),
            "fit" => Ok(TimeModelChoice::Fit),
            other => {
                let (x, y) = other.split_once(',').ok_or(TimeModelError::Syntax)?;
                let tm = TimeModel {
                    a_s: x.trim().parse().map_err(TimeModelError::A)?,
                    b_s_per_byte: y.trim().parse().map_err(TimeModelError::B)?,
                };
                if !(tm.a_s >= 0.0 && tm.b_s_per_byte >= 0.0) {
                    return Err(TimeModelError::Negative);
                }
                Ok(TimeModelChoice::Given(tm))
            }
        }
    }
}

/// Why a job failed. Each message names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("opening {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The log holds no access to simulate (the message says what it holds).
    #[error("{0}")]
    NothingToSimulate(String),
    #[error("--time-model fit: cannot fit this log: {0}")]
    CannotFit(String),
    #[error("creating {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What to simulate: plain, validated values (the CLI's flags).
#[derive(Clone, Debug)]
pub struct SimulateJob {
    /// Common Log Format, plain or gzip (detected by content).
    pub log: PathBuf,
    pub grid: Grid,
    pub split: Split,
    pub cache: CacheConfig,
    pub time_model: TimeModelChoice,
    /// Readings of the paper's open points (defaults: those of
    /// `docs/prefetch/`).
    pub variant: Variant,
}

/// A job with its log read: ready to print its header and run.
pub struct Loaded {
    job: SimulateJob,
    log: AccessLog,
    trace: Trace,
    fit: Result<TimeFit, String>,
    opts: SimOptions,
    prov: Provenance,
    header: Vec<String>,
    read_s: f64,
}

/// A finished sweep.
pub struct Finished {
    loaded: Loaded,
    base: Counters,
    results: Vec<PointResult>,
    sim_s: f64,
}

impl SimulateJob {
    /// Reads (and hashes) the log, builds the trace, settles the time model
    /// and the provenance. `tool` (`pagewire 0.1.0`) and `command` (the
    /// command line) are recorded in every output.
    pub fn load(self, tool: String, command: String) -> Result<Loaded, RunError> {
        let started = Instant::now();
        let file = File::open(&self.log).map_err(|source| RunError::Open {
            path: self.log.clone(),
            source,
        })?;
        let mut reader = HashingReader::new(file);
        let log = AccessLog::read(&mut reader).map_err(|source| RunError::Read {
            path: self.log.clone(),
            source,
        })?;
        let (log_bytes, log_sha256) = reader.finish();
        let read_s = started.elapsed().as_secs_f64();
        let trace = Trace::with_entries(&log, self.split, self.variant.entries);
        let st = &log.stats;
        let skipped: Vec<String> = SkipReason::ALL
            .iter()
            .filter_map(|&r| {
                let n = st.skipped_for(r);
                (n > 0).then(|| format!("{} {n}", r.as_str()))
            })
            .collect();
        if trace.simulate == 0 {
            return Err(RunError::NothingToSimulate(format!(
                "{}: nothing to simulate: {} lines, {} parsed, {} skipped ({}), {} file accesses; {}",
                self.log.display(),
                st.lines,
                st.parsed,
                st.skipped,
                skipped.join(", "),
                trace.accesses.len(),
                trace.split_note
            )));
        }

        if let Some(w) = st.order_warning() {
            eprintln!("warning: {}: {w}", self.log.display());
        }
        let fit = fit_time_model(&log, DEFAULT_MAX_GAP_S);
        let (time, time_source) = match self.time_model {
            TimeModelChoice::Paper => (TimeModel::PAPER, "paper 003 Fig. 14 regression".to_string()),
            TimeModelChoice::Fit => match &fit {
                Ok(f) => (
                    f.model,
                    format!(
                        "fitted from this log's inter-request gaps <= {DEFAULT_MAX_GAP_S} s ({} of {} points, R² {:.3})",
                        f.used, f.points, f.r2
                    ),
                ),
                Err(e) => return Err(RunError::CannotFit(e.to_string())),
            },
            TimeModelChoice::Given(tm) => (tm, "given on the command line".to_string()),
        };
        let cache = self.cache;
        let opts = SimOptions {
            cache,
            time,
            variant: self.variant,
            ..SimOptions::default()
        };
        let prov = Provenance {
            tool: tool.clone(),
            command,
            log_path: self.log.display().to_string(),
            log_bytes,
            log_sha256,
            log_lines: st.lines,
            split: trace.split_note.clone(),
            cache,
            time_model: time,
            time_model_source: time_source.clone(),
            readings: self.variant.describe(),
            created_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            run: {
                let mut p = pagewire_provenance::Provenance::begin(
                    "prefetch",
                    pagewire_provenance::command_line(),
                );
                p.made_by = format!("{tool} prefetch simulate");
                p.note = "a trace-driven simulation: no emulated link, no link lateness".into();
                p
            },
        };

        let grid = &self.grid;
        let mut header = vec![
            format!("{tool} prefetch simulate (paper 003 §8)"),
            format!(
                "log: {} ({} bytes{}, sha256 {})",
                self.log.display(),
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
                "file accesses ({}): {} of {} hosts and {} URLs; ignored {} not GET, {} other status",
                match self.variant.entries {
                    Entries::Files => "GET with status 200/203/206/304",
                    Entries::Get => "every GET",
                    Entries::All => "every request",
                },
                trace.accesses.len(),
                log.hosts.len(),
                log.urls.len(),
                trace.filtered.method,
                trace.filtered.status
            ),
            format!("split: {}", trace.split_note),
            format!("readings: {}", self.variant.describe()),
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
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            grid.models.len(),
            grid.points(),
            rayon_threads()
        ));
        let fit = fit.map_err(|e| e.to_string());
        Ok(Loaded {
            job: self,
            log,
            trace,
            fit,
            opts,
            prov,
            header,
            read_s,
        })
    }
}

/// Threads the sweep runs on (rayon's rule: `RAYON_NUM_THREADS`, else every
/// core).
fn rayon_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl Loaded {
    /// What was read and what will run, one line each.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Writes [`Loaded::header`], one line each.
    pub fn write_header(&self, out: &mut dyn Write) -> io::Result<()> {
        for l in &self.header {
            writeln!(out, "{l}")?;
        }
        Ok(())
    }

    /// Parameter points the sweep will simulate.
    pub fn points(&self) -> usize {
        self.job.grid.points()
    }

    /// Runs the sweep in parallel; `progress` is told how many points each
    /// finished task completed.
    pub fn run(mut self, progress: &(dyn Fn(u64) + Sync)) -> Finished {
        let started = Instant::now();
        let (base, results) = sweep(&self.trace, &self.job.grid, &self.opts, progress);
        self.prov.run.finish();
        Finished {
            loaded: self,
            base,
            results,
            sim_s: started.elapsed().as_secs_f64(),
        }
    }
}

impl Finished {
    /// One result per parameter point, ordered by model, w, i, p.
    pub fn results(&self) -> &[PointResult] {
        &self.results
    }

    /// The no-prefetching reference run.
    pub fn baseline(&self) -> &Counters {
        &self.base
    }

    /// `time: read+parse ... s, simulate N points ... s`.
    pub fn timing(&self) -> String {
        format!(
            "time: read+parse {:.2} s, simulate {} points {:.2} s",
            self.loaded.read_s,
            self.results.len(),
            self.sim_s
        )
    }

    /// One JSON record per point (the `--json` output).
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        for r in &self.results {
            writeln!(out, "{}", r.to_json())?;
        }
        Ok(())
    }

    /// The baseline, the tables, the comparison with the paper and the
    /// timing, as the terminal shows them.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let base = &self.base;
        writeln!(
            out,
            "no prefetching: miss rate {:.4}, average access time {:.3} s, {} bytes fetched, {} accesses",
            base.block_misses as f64 / base.blocks_accessed.max(1) as f64,
            base.access_time_s / base.accesses.max(1) as f64,
            base.demand_bytes,
            base.accesses
        )?;
        write!(out, "{}", text_tables(&self.results))?;
        writeln!(out, "\ncomparison with the paper (DEC log, §8.1):")?;
        write!(out, "{}", paper_comparison(&self.results))?;
        writeln!(out, "{}", self.timing())
    }

    /// Writes results.csv, results.jsonl, summary.json, tables.txt and the
    /// SVG plots into `dir` (created if missing).
    pub fn write_dir(&self, dir: &Path) -> Result<(), RunError> {
        let Loaded {
            log,
            trace,
            fit,
            prov,
            header,
            ..
        } = &self.loaded;
        let results = &self.results;
        fs::create_dir_all(dir).map_err(|source| RunError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        fs::write(dir.join("results.csv"), csv(results))?;
        // First line: what made the file; then one record per point, as --json.
        let mut jsonl = provenance_json_line(prov);
        for r in results {
            jsonl.push_str(&r.to_json());
            jsonl.push('\n');
        }
        fs::write(dir.join("results.jsonl"), jsonl)?;
        let plots = write_plots(dir, results, prov)?;
        let summary = summary_json(
            prov,
            &self.base,
            &log.stats,
            &trace.filtered,
            trace.accesses.len(),
            log.hosts.len(),
            log.urls.len(),
            fit,
            &plots,
        );
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_model_choices() {
        assert_eq!(
            "paper".parse::<TimeModelChoice>().unwrap(),
            TimeModelChoice::Paper
        );
        assert_eq!(
            "fit".parse::<TimeModelChoice>().unwrap(),
            TimeModelChoice::Fit
        );
        assert_eq!(
            "1, 0.5".parse::<TimeModelChoice>().unwrap(),
            TimeModelChoice::Given(TimeModel {
                a_s: 1.0,
                b_s_per_byte: 0.5
            })
        );
        assert!(matches!(
            "x".parse::<TimeModelChoice>(),
            Err(TimeModelError::Syntax)
        ));
        assert!(matches!(
            "x,1".parse::<TimeModelChoice>(),
            Err(TimeModelError::A(_))
        ));
        assert!(matches!(
            "1,y".parse::<TimeModelChoice>(),
            Err(TimeModelError::B(_))
        ));
        assert!(matches!(
            "-1,1".parse::<TimeModelChoice>(),
            Err(TimeModelError::Negative)
        ));
        assert!(matches!(
            "nan,1".parse::<TimeModelChoice>(),
            Err(TimeModelError::Negative)
        ));
    }

    #[test]
    fn a_job_over_the_sample_log_writes_every_file() {
        let job = SimulateJob {
            log: concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sample.log").into(),
            grid: Grid {
                thresholds: vec![0.3, 1.1],
                windows: vec![2, 4],
                max_hints: vec![crate::MaxCandidates::ONE, crate::MaxCandidates::All],
                models: vec![crate::sim::Model::Simple],
            },
            split: Split::default(),
            cache: CacheConfig::default(),
            time_model: TimeModelChoice::Paper,
            variant: Variant::default(),
        };
        let loaded = job.load("pagewire test".into(), "test".into()).unwrap();
        assert_eq!(loaded.points(), 8);
        assert!(loaded.header()[1].contains("sample.log"));
        let done = loaded.run(&|_| {});
        assert_eq!(done.results().len(), 8);
        let mut text = Vec::new();
        done.write_text(&mut text).unwrap();
        assert!(String::from_utf8(text)
            .unwrap()
            .starts_with("no prefetching: miss rate"));
        let dir = std::env::temp_dir().join(format!("pagewire-run-test-{}", std::process::id()));
        done.write_dir(&dir).unwrap();
        for f in ["results.csv", "results.jsonl", "summary.json", "tables.txt"] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_log_names_the_file() {
        let job = SimulateJob {
            log: "/nonexistent/pagewire.log".into(),
            grid: Grid::paper(),
            split: Split::default(),
            cache: CacheConfig::default(),
            time_model: TimeModelChoice::Paper,
            variant: Variant::default(),
        };
        let err = job.load("t".into(), "t".into()).err().unwrap();
        assert!(matches!(err, RunError::Open { .. }));
        assert!(err.to_string().contains("pagewire.log"));
    }
}
