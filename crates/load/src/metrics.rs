//! What a run measures, in a form that merges exactly: counters add, HDR
//! histograms add, the per-second series adds second by second.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latencies are recorded in microseconds, 1 µs to 1 hour, 3 significant digits.
const HIST_MAX_US: u64 = 3_600_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, 3).expect("valid bounds")
}

/// Why a GET failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The connection was refused (nothing listening, or the backlog full).
    Refused,
    /// The connection was reset or closed before the response was complete.
    Reset,
    /// No complete response within the timeout (connect included).
    Timeout,
    /// A status other than 200.
    BadStatus,
    /// The body ended (connection closed) before its declared length.
    ShortBody,
    /// The body's length differs from the file's size in the manifest.
    WrongSize,
    /// The response could not be parsed.
    Protocol,
    /// Any other local failure (e.g. no free local port, too many open files).
    Other,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::BadStatus,
        ErrorKind::ShortBody,
        ErrorKind::WrongSize,
        ErrorKind::Protocol,
        ErrorKind::Other,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::BadStatus => "bad_status",
            ErrorKind::ShortBody => "short_body",
            ErrorKind::WrongSize => "wrong_size",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Other => "other",
        }
    }
    fn index(self) -> usize {
        ErrorKind::ALL
            .iter()
            .position(|&k| k == self)
            .expect("listed")
    }
}

/// One second of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    pub gets: u64,
    pub objects: u64,
    pub errors: u64,
    pub connections: u64,
    pub body_bytes: u64,
    /// Sum of GET latencies in µs (mean = sum / gets).
    pub latency_sum_us: u64,
    pub latency_max_us: u64,
}

impl Second {
    fn add(&mut self, o: &Second) {
        self.gets += o.gets;
        self.objects += o.objects;
        self.errors += o.errors;
        self.connections += o.connections;
        self.body_bytes += o.body_bytes;
        self.latency_sum_us += o.latency_sum_us;
        self.latency_max_us = self.latency_max_us.max(o.latency_max_us);
    }
}

/// Everything one runtime thread (or one shard, or a merge) measured.
#[derive(Debug, Clone)]
pub struct Metrics {
    pub gets: u64,
    pub objects: u64,
    pub objects_failed: u64,
    pub errors: [u64; 8],
    pub connections: u64,
    /// Requests re-sent on a fresh connection after the server closed a
    /// persistent one before answering them (not errors: RFC 9112 §9.3.1).
    pub retries: u64,
    pub body_bytes: u64,
    /// GETs of the web objects counted in `objects` (files per object =
    /// object_gets / objects, weighted by requests).
    pub object_gets: u64,
    /// Connections closed, and the sum of their lifetimes (µs), for the
    /// connections opened inside the measurement window.
    pub conns_closed: u64,
    pub conn_lifetime_us: u64,
    /// GETs completed outside the measurement window (warm-up, or after
    /// `--duration` ended): not in `gets` nor in any rate.
    pub gets_outside_window: u64,
    /// Connections opened outside the measurement window (not in `connections`).
    pub conns_outside_window: u64,
    /// Responses by status code (every response, also outside the window).
    pub status: BTreeMap<u16, u64>,
    /// Per GET, from the intended send time to the last body byte.
    pub get_latency: Histogram<u64>,
    /// Per web object, from the base page's intended send time to the last
    /// byte of the last file.
    pub object_latency: Histogram<u64>,
    /// How late the generator itself issued requests (actual - intended send time).
    pub send_lag: Histogram<u64>,
    pub series: Vec<Second>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            gets: 0,
            objects: 0,
            objects_failed: 0,
            errors: [0; 8],
            connections: 0,
            retries: 0,
            body_bytes: 0,
            object_gets: 0,
            conns_closed: 0,
            conn_lifetime_us: 0,
            gets_outside_window: 0,
            conns_outside_window: 0,
            status: BTreeMap::new(),
            get_latency: new_histogram(),
            object_latency: new_histogram(),
            send_lag: new_histogram(),
            series: Vec::new(),
        }
    }
}

impl Metrics {
    fn second(&mut self, sec: usize) -> &mut Second {
        // Bounded by the run's duration plus its drain (both bounded).
        if self.series.len() <= sec {
            self.series.resize(sec + 1, Second::default());
        }
        &mut self.series[sec]
    }

    pub fn record_get(&mut self, sec: usize, latency_us: u64, body: u64) {
        let us = latency_us.clamp(1, HIST_MAX_US);
        self.gets += 1;
        self.body_bytes += body;
        self.get_latency.record(us).expect("clamped");
        let s = self.second(sec);
        s.gets += 1;
        s.body_bytes += body;
        s.latency_sum_us += us;
        s.latency_max_us = s.latency_max_us.max(us);
    }

    pub fn record_object(&mut self, sec: usize, latency_us: u64, files: u64) {
        self.objects += 1;
        self.object_gets += files;
        self.object_latency
            .record(latency_us.clamp(1, HIST_MAX_US))
            .expect("clamped");
        self.second(sec).objects += 1;
    }

    pub fn record_error(&mut self, sec: usize, kind: ErrorKind) {
        self.errors[kind.index()] += 1;
        self.second(sec).errors += 1;
    }

    pub fn record_connection(&mut self, sec: usize) {
        self.connections += 1;
        self.second(sec).connections += 1;
    }

    pub fn record_close(&mut self, lifetime_us: u64) {
        self.conns_closed += 1;
        self.conn_lifetime_us += lifetime_us;
    }

    pub fn record_status(&mut self, code: u16) {
        *self.status.entry(code).or_insert(0) += 1;
    }

    pub fn record_send_lag(&mut self, lag_us: u64) {
        self.send_lag
            .record(lag_us.clamp(1, HIST_MAX_US))
            .expect("clamped");
    }

    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds `o` into `self` (exact: counts add, histograms add, seconds add).
    pub fn merge(&mut self, o: &Metrics) {
        self.gets += o.gets;
        self.objects += o.objects;
        self.objects_failed += o.objects_failed;
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        self.connections += o.connections;
        self.retries += o.retries;
        self.body_bytes += o.body_bytes;
        self.object_gets += o.object_gets;
        self.conns_closed += o.conns_closed;
        self.conn_lifetime_us += o.conn_lifetime_us;
        self.gets_outside_window += o.gets_outside_window;
        self.conns_outside_window += o.conns_outside_window;
        for (k, v) in &o.status {
            *self.status.entry(*k).or_insert(0) += v;
        }
        self.get_latency.add(&o.get_latency).expect("same bounds");
        self.object_latency
            .add(&o.object_latency)
            .expect("same bounds");
        self.send_lag.add(&o.send_lag).expect("same bounds");
        for (i, s) in o.series.iter().enumerate() {
            self.second(i).add(s);
        }
    }
}

/// Percentiles of one histogram, in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p999: f64,
    pub max: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        let ms = |us: u64| us as f64 / 1000.0;
        if h.is_empty() {
            return Percentiles {
                count: 0,
                mean: 0.0,
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
            };
        }
        Percentiles {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// What the run was (recorded in summary.json; merged runs must agree on
/// everything but the shard).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub tool: String,
    pub version: String,
    pub command_line: String,
    pub started_utc: String,
    pub target: String,
    pub mode: String,
    /// closed (the paper's UEs), or open / partly-open with the session rate.
    #[serde(default = "closed")]
    pub model: String,
    pub conns_per_ue: usize,
    /// UEs of the whole run (all shards).
    pub ues_total: u64,
    /// UEs this summary covers.
    pub ues: u64,
    /// `K/N` shards covered, e.g. "0/4" or "0,1,2,3/4" after a merge.
    pub shards: String,
    pub seed: u64,
    pub duration_s: f64,
    /// Wall-clock start of the run (Unix seconds): the measurement window
    /// is `[start_unix + warmup_s, start_unix + duration_s)`.
    #[serde(default)]
    pub start_unix: f64,
    /// The first `warmup_s` seconds are not measured.
    #[serde(default)]
    pub warmup_s: f64,
    pub ramp_s: f64,
    pub threads: usize,
    pub site_files: usize,
    pub site_bytes: u64,
    /// URL mode: the engine that ran, "tick" (the open model's own loop)
    /// or "tokio" (closed mode, or `--engine tokio`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub engine: String,
}

fn closed() -> String {
    "closed".into()
}

/// The summary's JSON shape (`summary.json`, `--json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub run: RunInfo,
    /// GETs completed (2xx with the whole body).
    pub gets: u64,
    /// Failed GETs, all kinds.
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// TCP connections opened by the generator.
    pub connections: u64,
    pub objects: u64,
    pub objects_failed: u64,
    pub retries: u64,
    pub body_bytes: u64,
    /// GETs of the counted web objects (see `Metrics::object_gets`).
    #[serde(default)]
    pub object_gets: u64,
    #[serde(default)]
    pub conns_closed: u64,
    #[serde(default)]
    pub conn_lifetime_us: u64,
    #[serde(default)]
    pub gets_outside_window: u64,
    #[serde(default)]
    pub conns_outside_window: u64,
    /// Responses by status code, all of them (also outside the window).
    #[serde(default)]
    pub status_codes: BTreeMap<String, u64>,
    /// Length of the measurement window: `duration_s - warmup_s`.
    #[serde(default)]
    pub window_s: f64,
    /// GETs completed inside the measurement window per second of it
    /// (`gets / window_s`).
    pub gets_per_second: f64,
    pub get_latency_ms: Percentiles,
    pub object_latency_ms: Percentiles,
    pub send_lag_ms: Percentiles,
    /// The generator's own CPU (user + system seconds) and wall time.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub wall_s: f64,
}

impl Summary {
    pub fn new(
        run: RunInfo,
        m: &Metrics,
        cpu_user_s: f64,
        cpu_system_s: f64,
        wall_s: f64,
    ) -> Summary {
        let window_s = (run.duration_s - run.warmup_s).max(0.0);
        Summary {
            gets_per_second: if window_s > 0.0 {
                m.gets as f64 / window_s
            } else {
                0.0
            },
            window_s,
            object_gets: m.object_gets,
            conns_closed: m.conns_closed,
            conn_lifetime_us: m.conn_lifetime_us,
            gets_outside_window: m.gets_outside_window,
            conns_outside_window: m.conns_outside_window,
            status_codes: m.status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            run,
            gets: m.gets,
            errors: m.error_total(),
            errors_by_kind: ErrorKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), m.errors[k.index()]))
                .collect(),
            connections: m.connections,
            objects: m.objects,
            objects_failed: m.objects_failed,
            retries: m.retries,
            body_bytes: m.body_bytes,
            get_latency_ms: Percentiles::of(&m.get_latency),
            object_latency_ms: Percentiles::of(&m.object_latency),
            send_lag_ms: Percentiles::of(&m.send_lag),
            cpu_user_s,
            cpu_system_s,
            wall_s,
        }
    }

    /// A short human-readable report.
    pub fn text(&self) -> String {
        let r = &self.run;
        let mut s = if r.site_files == 0 {
            format!(
                "pagewire load: {} connections, {}, {} s against {}, measured {} s after a {} s warm-up\n",
                r.ues, r.model, r.duration_s, r.target, self.window_s, r.warmup_s
            )
        } else {
            format!(
                "pagewire load: {} UEs ({} of {} total, shards {}), mode {}, model {}, {} s against {}, measured {} s after a {} s warm-up\n",
                r.ues, r.ues, r.ues_total, r.shards, r.mode, r.model, r.duration_s, r.target, self.window_s, r.warmup_s
            )
        };
        s += &format!(
            "GETs          {} ({:.1}/s; {} more outside the window), objects {} ({} failed), connections {}, retries {}, body {:.1} MB\n",
            self.gets,
            self.gets_per_second,
            self.gets_outside_window,
            self.objects,
            self.objects_failed,
            self.connections,
            self.retries,
            self.body_bytes as f64 / 1e6
        );
        let kinds: Vec<String> = self
            .errors_by_kind
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let codes: Vec<String> = self
            .status_codes
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        s += &format!(
            "status codes  {}\n",
            if codes.is_empty() {
                "none (no response)".to_string()
            } else {
                codes.join(", ")
            }
        );
        s += &format!(
            "errors        {}{}\n",
            self.errors,
            if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            }
        );
        for (name, p) in [
            ("GET ms", &self.get_latency_ms),
            ("object ms", &self.object_latency_ms),
            ("send lag ms", &self.send_lag_ms),
        ] {
            s += &format!(
                "{name:<13} p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}  mean {:.2}\n",
                p.p50, p.p90, p.p99, p.p999, p.max, p.mean
            );
        }
        if self.objects > 0 {
            s += "              (object: from the base page's intended send time to the last byte of its last file,\n               the active OFF think times between its files included, as a SURGE user experiences it)\n";
        }
        s += &format!(
            "generator CPU {:.2} s user + {:.2} s system in {:.1} s wall ({} runtime thread{})\n",
            self.cpu_user_s,
            self.cpu_system_s,
            self.wall_s,
            r.threads,
            if r.threads == 1 { "" } else { "s" }
        );
        s
    }
}

const HISTOGRAMS: [&str; 3] = [
    "get_latency_us.hdr",
    "object_latency_us.hdr",
    "send_lag_us.hdr",
];

/// Writes summary.json, timeseries.csv and the three histograms (HDR V2
/// serialization: mergeable by any HdrHistogram implementation).
pub fn write_dir(dir: &Path, summary: &Summary, m: &Metrics) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(summary)? + "\n",
    )?;
    let mut csv = format!(
        "# {}\nsecond,gets,objects,errors,connections,body_bytes,latency_mean_ms,latency_max_ms\n",
        summary.run.command_line.replace('\n', " ")
    );
    for (i, s) in m.series.iter().enumerate() {
        csv += &format!(
            "{i},{},{},{},{},{},{:.3},{:.3}\n",
            s.gets,
            s.objects,
            s.errors,
            s.connections,
            s.body_bytes,
            if s.gets > 0 {
                s.latency_sum_us as f64 / s.gets as f64 / 1000.0
            } else {
                0.0
            },
            s.latency_max_us as f64 / 1000.0
        );
    }
    std::fs::write(dir.join("timeseries.csv"), csv)?;
    // Exact per-second sums for merging (the CSV's means are rounded).
    std::fs::write(
        dir.join("timeseries.json"),
        serde_json::to_string(&m.series)? + "\n",
    )?;
    for (name, h) in HISTOGRAMS
        .iter()
        .zip([&m.get_latency, &m.object_latency, &m.send_lag])
    {
        let mut buf = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut buf)
            .map_err(|e| anyhow::anyhow!("serializing {name}: {e:?}"))?;
        std::fs::write(dir.join(name), buf)?;
    }
    Ok(())
}

/// Reads what `write_dir` wrote.
pub fn read_dir(dir: &Path) -> anyhow::Result<(Summary, Metrics)> {
    let text = std::fs::read_to_string(dir.join("summary.json"))
        .with_context(|| format!("reading {}/summary.json", dir.display()))?;
    let summary: Summary = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}/summary.json", dir.display()))?;
    let series: Vec<Second> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("timeseries.json"))
            .with_context(|| format!("reading {}/timeseries.json", dir.display()))?,
    )
    .with_context(|| format!("parsing {}/timeseries.json", dir.display()))?;
    let mut hs = Vec::new();
    for name in HISTOGRAMS {
        let bytes = std::fs::read(dir.join(name))
            .with_context(|| format!("reading {}/{name}", dir.display()))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &bytes[..])
            .map_err(|e| {
                anyhow::anyhow!("{}/{name}: not an HDR histogram: {e:?}", dir.display())
            })?;
        let mut fixed = new_histogram();
        fixed
            .add(&h)
            .map_err(|e| anyhow::anyhow!("{}/{name}: {e:?}", dir.display()))?;
        hs.push(fixed);
    }
    let mut errors = [0u64; 8];
    for k in ErrorKind::ALL {
        errors[k.index()] = summary.errors_by_kind.get(k.name()).copied().unwrap_or(0);
    }
    let send_lag = hs.pop().expect("3");
    let object_latency = hs.pop().expect("3");
    let get_latency = hs.pop().expect("3");
    let m = Metrics {
        gets: summary.gets,
        objects: summary.objects,
        objects_failed: summary.objects_failed,
        errors,
        connections: summary.connections,
        retries: summary.retries,
        body_bytes: summary.body_bytes,
        object_gets: summary.object_gets,
        conns_closed: summary.conns_closed,
        conn_lifetime_us: summary.conn_lifetime_us,
        gets_outside_window: summary.gets_outside_window,
        conns_outside_window: summary.conns_outside_window,
        status: summary
            .status_codes
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, *v)))
            .collect(),
        get_latency,
        object_latency,
        send_lag,
        series,
    };
    if m.get_latency.len() != m.gets {
        bail!(
            "{}: the GET histogram holds {} values but the summary says {} GETs",
            dir.display(),
            m.get_latency.len(),
            m.gets
        );
    }
    Ok((summary, m))
}

/// Merges shard directories: they must describe the same run (target,
/// mode, seed, UEs, duration) with disjoint shards.
pub fn merge_dirs(dirs: &[impl AsRef<Path>]) -> anyhow::Result<(Summary, Metrics)> {
    let mut it = dirs.iter();
    let first = it.next().context("give at least one directory")?;
    let (mut s0, mut m) = read_dir(first.as_ref())?;
    let mut shards: Vec<String> = vec![s0.run.shards.clone()];
    let (mut user, mut sys, mut wall) = (s0.cpu_user_s, s0.cpu_system_s, s0.wall_s);
    for d in it {
        let (s, mi) = read_dir(d.as_ref())?;
        let a = &s0.run;
        let b = &s.run;
        if (
            a.target.as_str(),
            a.mode.as_str(),
            a.seed,
            a.ues_total,
            a.conns_per_ue,
        ) != (
            b.target.as_str(),
            b.mode.as_str(),
            b.seed,
            b.ues_total,
            b.conns_per_ue,
        ) || a.duration_s != b.duration_s
            || a.warmup_s != b.warmup_s
        {
            bail!(
                "{} is a different run (target, mode, seed, UEs or duration differ)",
                d.as_ref().display()
            );
        }
        if shards.contains(&b.shards) {
            bail!("shard {} given twice", b.shards);
        }
        shards.push(b.shards.clone());
        m.merge(&mi);
        s0.run.ues += b.ues;
        user += s.cpu_user_s;
        sys += s.cpu_system_s;
        wall = wall.max(s.wall_s);
    }
    s0.run.shards = shards.join(",");
    let run = s0.run.clone();
    let summary = Summary::new(run, &m, user, sys, wall);
    Ok((summary, m))
}
