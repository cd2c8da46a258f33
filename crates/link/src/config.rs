//! Link configuration: profiles (docs/architecture.md, "Network profiles";
//! paper 001 Table 1), explicit overrides, and the parsers behind the CLI flags.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::loss::LossModel;
use crate::qdisc::Aqm;
use crate::reorder::Reorder;

/// Errors in a configuration value or a trace file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown profile {0:?} (known: lan, lan100, t1, wan, ppp, none; +codel, +pie or +fq-codel adds a queue discipline)")]
    UnknownProfile(String),
    #[error("invalid {what} {value:?}: {why}")]
    Invalid {
        what: &'static str,
        value: String,
        why: &'static str,
    },
    #[error("trace {path}: line {line}: {why}")]
    Trace {
        path: String,
        line: usize,
        why: String,
    },
    #[error("trace {path}")]
    TraceIo {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn invalid(what: &'static str, value: &str, why: &'static str) -> ConfigError {
    ConfigError::Invalid {
        what,
        value: value.to_string(),
        why,
    }
}

/// Mahimahi's delivery opportunity: each trace line lets this many bytes
/// leave the queue (Mahimahi uses 1504 = 1500 + its 4-byte TUN header; we
/// count IP bytes, so 1500).
pub const TRACE_OPPORTUNITY_BYTES: usize = 1500;

/// Upper bound on trace lines read (a 24 h trace at 100 Mbit/s is ~720 M
/// lines; real cellular traces are 10^4-10^6). Keeps memory bounded.
pub const MAX_TRACE_LINES: usize = 50_000_000;

/// A Mahimahi packet-delivery trace: one line per 1500-byte delivery
/// opportunity, the time in integer milliseconds since the start, lines
/// non-decreasing; the schedule loops with a period equal to the last time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Where it came from (for the record).
    pub source: String,
    pub opportunities_ms: Vec<u64>,
}

impl Trace {
    pub fn parse(source: &str, text: &str) -> Result<Self, ConfigError> {
        let err = |line: usize, why: String| ConfigError::Trace {
            path: source.to_string(),
            line,
            why,
        };
        let mut ops = Vec::new();
        let mut last = 0u64;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() {
                continue;
            }
            if ops.len() >= MAX_TRACE_LINES {
                return Err(err(i + 1, format!("more than {MAX_TRACE_LINES} lines")));
            }
            let ms: u64 = line
                .parse()
                .map_err(|_| err(i + 1, format!("{line:?} is not a whole number of ms")))?;
            if ms < last {
                return Err(err(
                    i + 1,
                    format!("{ms} ms is before the previous line ({last} ms)"),
                ));
            }
            last = ms;
            ops.push(ms);
        }
        if ops.is_empty() {
            return Err(err(0, "no delivery opportunities".into()));
        }
        if last == 0 {
            return Err(err(
                ops.len(),
                "the last time must be > 0 ms (it is the loop period)".into(),
            ));
        }
        Ok(Self {
            source: source.to_string(),
            opportunities_ms: ops,
        })
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::TraceIo {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Loop period.
    pub fn period_ms(&self) -> u64 {
        *self
            .opportunities_ms
            .last()
            .expect("non-empty by construction")
    }

    /// Average rate over one period, in bits per second of IP bytes.
    pub fn mean_rate_bps(&self) -> f64 {
        (self.opportunities_ms.len() * TRACE_OPPORTUNITY_BYTES * 8) as f64
            / (self.period_ms() as f64 / 1000.0)
    }
}

/// How fast one direction serializes packets.
#[derive(Clone, Debug, PartialEq)]
pub enum Rate {
    /// No serialization delay (only the forwarder's own speed limits).
    Unlimited,
    /// Constant rate in bits per second, counting IP bytes (+ framing).
    Bps(u64),
    /// Trace-driven (Mahimahi format).
    Trace(Arc<Trace>),
}

impl Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Rate::Unlimited => s.serialize_str("unlimited"),
            Rate::Bps(b) => s.serialize_u64(*b),
            Rate::Trace(t) => s.serialize_str(&format!("trace:{}", t.source)),
        }
    }
}

/// Drop-tail queue bound for packets waiting to be serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    Packets(usize),
    Bytes(usize),
}

/// Everything the link model needs for one direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipeConfig {
    /// One-way propagation delay.
    #[serde(serialize_with = "ser_duration_ms")]
    pub delay: Duration,
    pub rate: Rate,
    pub queue: QueueLimit,
    /// The queue discipline under that limit (drop-tail by default).
    pub aqm: Aqm,
    /// How packets entering the link are lost (Bernoulli with probability
    /// 0 by default).
    pub loss: LossModel,
    /// Packets held back on purpose so later ones overtake them.
    pub reorder: Option<Reorder>,
    /// Extra delay drawn uniformly from [0, jitter] per packet; never
    /// reorders (a packet never leaves before the one ahead of it).
    #[serde(serialize_with = "ser_duration_ms")]
    pub jitter: Duration,
    /// Link-layer framing bytes added per packet when computing the
    /// serialization time (0 = the rate counts IP bytes only).
    pub framing_bytes: u32,
    /// Data compression on the serial line (a modem's V.42bis): the
    /// serialization time counts the compressed octets.
    pub compression: LinkCompression,
}

/// Data compression a link applies to each direction's byte stream
/// (`--link-compress`). Only the serialization time and the counters'
/// `line_bytes` change; the IP packets (Pa, Bytes) are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkCompression {
    #[default]
    None,
    /// ITU-T V.42bis-style LZW, 2048 codewords, strings up to 32 octets
    /// (see [`crate::v42bis`]).
    V42bis,
}

impl LinkCompression {
    pub const fn name(self) -> &'static str {
        match self {
            LinkCompression::None => "none",
            LinkCompression::V42bis => "v42bis",
        }
    }
}

impl std::str::FromStr for LinkCompression {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "off" => Ok(LinkCompression::None),
            "v42bis" | "v.42bis" => Ok(LinkCompression::V42bis),
            _ => Err(invalid("link-compress", s, "expected none or v42bis")),
        }
    }
}

pub(crate) fn ser_duration_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// A whole link: both directions plus the per-namespace TCP settings the
/// emulator applies.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkConfig {
    /// Profile the values started from ("custom" if none).
    pub profile: String,
    /// Round-trip propagation delay; each direction gets half.
    #[serde(rename = "rtt_ms", serialize_with = "ser_duration_ms")]
    pub rtt: Duration,
    /// Client to server.
    pub up_rate: Rate,
    /// Server to client.
    pub down_rate: Rate,
    /// MTU of both TUN devices.
    pub mtu: u32,
    /// Advertised MSS (route `advmss`); None = kernel default from the MTU.
    pub mss: Option<u32>,
    pub queue: QueueLimit,
    /// Queue discipline of both directions (`--aqm`).
    pub aqm: Aqm,
    /// Loss model of both directions (`--loss`).
    pub loss: LossModel,
    /// Reordering in both directions (`--reorder`).
    pub reorder: Option<Reorder>,
    #[serde(rename = "jitter_ms", serialize_with = "ser_duration_ms")]
    pub jitter: Duration,
    pub framing_bytes: u32,
    /// Modem data compression on both directions (`--link-compress`).
    pub compression: LinkCompression,
    /// Approximate the papers' 1997 TCP (see docs/link.md).
    pub tcp1997: bool,
    /// Seed for loss and jitter.
    pub seed: u64,
}

/// Default queue: 1000 packets, Linux's default `txqueuelen`. Deep enough
/// that the papers' page fetches see no drops (paper 001 reports none), and
/// bounded so memory is (1000 x MTU per direction).
pub const DEFAULT_QUEUE: QueueLimit = QueueLimit::Packets(1000);

impl LinkConfig {
    /// The named profiles. Which numbers come from the papers and which are
    /// assumptions is in docs/architecture.md ("Network profiles").
    ///
    /// A profile name may carry queue disciplines after `+`:
    /// `ppp+fq-codel`, `wan+codel:target=10ms,interval=200ms` (the label a
    /// run with `--aqm` records, so it can be given back as a profile).
    pub fn profile(name: &str) -> Result<Self, ConfigError> {
        if let Some((base, mods)) = name.split_once('+') {
            let mut c = Self::profile(base)?;
            for m in mods.split('+') {
                c.aqm = m.parse().map_err(|e| match e {
                    ConfigError::Invalid { why, .. } => ConfigError::Invalid {
                        what: "profile",
                        value: name.to_string(),
                        why,
                    },
                    e => e,
                })?;
            }
            c.profile = name.to_string();
            return Ok(c);
        }
        let (rtt_us, rate) = match name {
            // Paper 001 Table 1: 10 Mbit Ethernet, RTT "< 1 ms".
            "lan" => (500, Rate::Bps(10_000_000)),
            // Papers 002/004: switched 100 Mbit LAN; 0.2 ms is assumed.
            "lan100" => (200, Rate::Bps(100_000_000)),
            // Paper 003: remote server, best-case RTT 70 ms; the T1 rate is
            // from its 20 KB-over-a-T1 example (the bottleneck is assumed).
            "t1" => (70_000, Rate::Bps(1_544_000)),
            // Paper 001 Table 1: MIT to LBL, RTT ~90 ms; rate assumed.
            "wan" => (90_000, Rate::Bps(1_500_000)),
            // Paper 001 Table 1: 28.8k modem, RTT ~150 ms.
            "ppp" => (150_000, Rate::Bps(28_800)),
            // Forwarder only: no delay, no rate limit (counting still works).
            "none" => (0, Rate::Unlimited),
            other => return Err(ConfigError::UnknownProfile(other.to_string())),
        };
        Ok(Self {
            profile: name.to_string(),
            rtt: Duration::from_micros(rtt_us),
            up_rate: rate.clone(),
            down_rate: rate,
            mtu: 1500,
            mss: None,
            queue: DEFAULT_QUEUE,
            aqm: Aqm::DropTail,
            loss: LossModel::default(),
            reorder: None,
            jitter: Duration::ZERO,
            framing_bytes: 0,
            compression: LinkCompression::None,
            tcp1997: false,
            seed: 1,
        })
    }

    /// Checks ranges the parsers cannot see.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.loss.validate()?;
        self.aqm.validate()?;
        if let Some(r) = &self.reorder {
            r.validate()?;
        }
        // 68: the IPv4 minimum MTU (RFC 791); 65535: the IPv4 maximum.
        if !(68..=65_535).contains(&self.mtu) {
            return Err(invalid("mtu", &self.mtu.to_string(), "must be 68..=65535"));
        }
        if let Some(mss) = self.mss {
            // Linux clamps the MSS to >= 88 (TCP_MIN_MSS) anyway.
            if mss < 88 || mss + 40 > self.mtu {
                return Err(invalid("mss", &mss.to_string(), "must be 88..=MTU-40"));
            }
        }
        for r in [&self.up_rate, &self.down_rate] {
            if *r == Rate::Bps(0) {
                return Err(invalid("rate", "0", "must be > 0"));
            }
        }
        match self.queue {
            QueueLimit::Packets(0) | QueueLimit::Bytes(0) => {
                return Err(invalid("queue", "0", "must be > 0"))
            }
            _ => {}
        }
        if self.rtt > Duration::from_secs(60) || self.jitter > Duration::from_secs(60) {
            return Err(invalid("rtt/jitter", "", "must be at most 60 s"));
        }
        Ok(())
    }

    fn pipe(&self, rate: &Rate) -> PipeConfig {
        PipeConfig {
            delay: self.rtt / 2,
            rate: rate.clone(),
            queue: self.queue,
            aqm: self.aqm,
            loss: self.loss,
            reorder: self.reorder,
            jitter: self.jitter,
            framing_bytes: self.framing_bytes,
            compression: self.compression,
        }
    }

    /// The one-way propagation delay of either direction (half the RTT),
    /// against which link lateness is judged.
    pub fn one_way_delay(&self) -> Duration {
        self.up_pipe().delay.min(self.down_pipe().delay)
    }

    pub fn up_pipe(&self) -> PipeConfig {
        self.pipe(&self.up_rate)
    }

    pub fn down_pipe(&self) -> PipeConfig {
        self.pipe(&self.down_rate)
    }
}

/// Parses a rate: `1.5mbit`, `28.8kbit`, `1544000` (bit/s), `10Mbit/s`,
/// `2gbit`, `unlimited`/`none`.
pub fn parse_rate(s: &str) -> Result<Rate, ConfigError> {
    let t = s.trim().to_ascii_lowercase();
    if t == "unlimited" || t == "none" || t == "inf" {
        return Ok(Rate::Unlimited);
    }
    // Units: `bit`, `bit/s`, `bps`, `b/s` with an optional k/m/g prefix.
    let t = t.strip_suffix("/s").unwrap_or(&t);
    let t = t
        .strip_suffix("bps")
        .or(t.strip_suffix("bit"))
        .or(t.strip_suffix('b'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| invalid("rate", s, "expected e.g. 1.5mbit, 28.8kbit, 1544000"))?;
    let bps = v * mult;
    if !(bps.is_finite() && (1.0..=1e12).contains(&bps)) {
        return Err(invalid("rate", s, "must be between 1 bit/s and 1 Tbit/s"));
    }
    Ok(Rate::Bps(bps.round() as u64))
}

/// Longest duration any flag takes.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// The one duration syntax of every command-line flag: a decimal number and
/// a unit, `us`, `ms`, `s`, `m` or `h` (`250us`, `50ms`, `1.5s`, `2m`), from 0
/// to 24 h. A bare number is rejected: flags used to read it as milliseconds
/// or as seconds, and a wrong guess would be off by 1000.
pub fn parse_duration(s: &str) -> Result<Duration, ConfigError> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let scale = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => {
            return Err(invalid(
                "duration",
                s,
                "needs a unit: us, ms, s, m or h (e.g. 50ms, 1.5s, 2m)",
            ))
        }
        _ => {
            return Err(invalid(
                "duration",
                s,
                "unknown unit (us, ms, s, m or h; e.g. 50ms, 1.5s, 2m)",
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| invalid("duration", s, "expected e.g. 50ms, 1.5s, 2m"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs <= MAX_DURATION.as_secs_f64()) {
        return Err(invalid("duration", s, "must be between 0 and 24 h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a queue bound: `100p` / `100pkt` / `100packets` (packets) or
/// `64kb`, `64kib`, `1mb`, `3000b`, `3000bytes` (bytes; k = 1024).
pub fn parse_queue(s: &str) -> Result<QueueLimit, ConfigError> {
    let t = s.trim().to_ascii_lowercase();
    let bad = || invalid("queue", s, "expected e.g. 100p or 64kb");
    for suffix in ["packets", "pkts", "pkt", "p"] {
        if let Some(n) = t.strip_suffix(suffix) {
            let n: usize = n.trim().parse().map_err(|_| bad())?;
            return Ok(QueueLimit::Packets(n));
        }
    }
    let (num, mult) = if let Some(n) = t.strip_suffix("kib").or(t.strip_suffix("kb")) {
        (n, 1024)
    } else if let Some(n) = t.strip_suffix("mib").or(t.strip_suffix("mb")) {
        (n, 1024 * 1024)
    } else if let Some(n) = t.strip_suffix("bytes").or(t.strip_suffix('b')) {
        (n, 1)
    } else {
        return Err(bad());
    };
    let n: usize = num.trim().parse().map_err(|_| bad())?;
    Ok(QueueLimit::Bytes(n.saturating_mul(mult)))
}

/// Parses a loss model: `0.02` or `2%` (independent loss) or
/// `ge:p=..,r=..[,h=..][,k=..]` (Gilbert-Elliott, [`crate::loss`]).
pub fn parse_loss(s: &str) -> Result<LossModel, ConfigError> {
    LossModel::parse(s)
}

/// Parses a queue discipline: `droptail`, `codel`, `pie`, `fq-codel`, each
/// with optional `:key=value,...` parameters ([`crate::qdisc`]).
pub fn parse_aqm(s: &str) -> Result<Aqm, ConfigError> {
    s.parse()
}

/// Parses reordering: `1%,5ms` (probability, hold-back delay) or `none`.
pub fn parse_reorder(s: &str) -> Result<Option<Reorder>, ConfigError> {
    Reorder::parse(s)
}

/// Loads a trace file as a rate.
pub fn trace_rate(path: &Path) -> Result<Rate, ConfigError> {
    Ok(Rate::Trace(Arc::new(Trace::load(path)?)))
}

/// For records: a path rendered for JSON.
pub fn path_string(p: &Option<PathBuf>) -> Option<String> {
    p.as_ref().map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers() {
        assert_eq!(parse_rate("1.5mbit").unwrap(), Rate::Bps(1_500_000));
        assert_eq!(parse_rate("28.8kbit").unwrap(), Rate::Bps(28_800));
        assert_eq!(parse_rate("10Mbit/s").unwrap(), Rate::Bps(10_000_000));
        assert_eq!(parse_rate("10mbps").unwrap(), Rate::Bps(10_000_000));
        assert_eq!(parse_rate("2gbps").unwrap(), Rate::Bps(2_000_000_000));
        assert_eq!(parse_rate("64kb/s").unwrap(), Rate::Bps(64_000));
        assert_eq!(parse_rate("1544000").unwrap(), Rate::Bps(1_544_000));
        assert_eq!(parse_rate("unlimited").unwrap(), Rate::Unlimited);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0").is_err());
        assert_eq!(parse_duration("90ms").unwrap(), Duration::from_millis(90));
        assert_eq!(parse_duration("0.5ms").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("0ms").unwrap(), Duration::ZERO);
        let bare = parse_duration("90").unwrap_err().to_string();
        assert!(bare.contains("needs a unit"), "{bare}");
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("25h").is_err());
        assert_eq!(parse_queue("100p").unwrap(), QueueLimit::Packets(100));
        assert_eq!(parse_queue("64KB").unwrap(), QueueLimit::Bytes(65536));
        assert_eq!(parse_queue("3000b").unwrap(), QueueLimit::Bytes(3000));
        assert!(parse_queue("lots").is_err());
        assert_eq!(parse_loss("2%").unwrap(), LossModel::Bernoulli(0.02));
        assert_eq!(parse_loss("0.02").unwrap(), LossModel::Bernoulli(0.02));
        assert!(parse_loss("1").is_err());
    }

    #[test]
    fn profiles_and_validation() {
        let wan = LinkConfig::profile("wan").unwrap();
        assert_eq!(wan.rtt, Duration::from_millis(90));
        assert_eq!(wan.up_pipe().delay, Duration::from_millis(45));
        assert_eq!(wan.down_rate, Rate::Bps(1_500_000));
        wan.validate().unwrap();
        assert!(LinkConfig::profile("isdn").is_err());
        // Profiles with a queue discipline.
        let p = LinkConfig::profile("ppp+fq-codel").unwrap();
        assert_eq!(p.profile, "ppp+fq-codel");
        assert_eq!(p.down_rate, Rate::Bps(28_800));
        assert_eq!(p.up_pipe().aqm, Aqm::FqCodel(Default::default()));
        let p = LinkConfig::profile("wan+codel:target=10ms,interval=200ms").unwrap();
        assert_eq!(
            p.aqm,
            Aqm::Codel(crate::qdisc::codel::CodelParams {
                target: Duration::from_millis(10),
                interval: Duration::from_millis(200),
            })
        );
        let e = LinkConfig::profile("wan+red").unwrap_err().to_string();
        assert!(e.contains("profile \"wan+red\""), "{e}");
        assert!(LinkConfig::profile("isdn+codel").is_err());
        let mut bad = wan.clone();
        bad.mss = Some(1500);
        assert!(bad.validate().is_err());
        bad.mss = Some(536);
        bad.validate().unwrap();
        bad.loss = LossModel::Bernoulli(1.0);
        assert!(bad.validate().is_err());
        bad.loss = LossModel::default();
        bad.aqm = Aqm::Codel(crate::qdisc::codel::CodelParams {
            target: Duration::ZERO,
            interval: Duration::from_millis(100),
        });
        assert!(bad.validate().is_err());
    }

    #[test]
    fn trace_parse() {
        let t = Trace::parse("t", "0\n0\n5\n\n10\n").unwrap();
        assert_eq!(t.opportunities_ms, vec![0, 0, 5, 10]);
        assert_eq!(t.period_ms(), 10);
        assert!((t.mean_rate_bps() - 4.0 * 12000.0 / 0.01).abs() < 1e-6);
        assert!(Trace::parse("t", "").is_err());
        assert!(Trace::parse("t", "0\n").is_err());
        assert!(Trace::parse("t", "5\n3\n").is_err());
        assert!(Trace::parse("t", "1.5\n").is_err());
    }
}
