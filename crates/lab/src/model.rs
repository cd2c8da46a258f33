//! The run matrix's dimensions and the record of one run: the data every
//! layer of paper 001's suite shares (its runner writes them, its
//! statistics, tables, claims and the expected-time model read them).

use std::fmt;
use std::str::FromStr;

use pagewire_client::{RequestProfile, Revalidation};
use serde::{Deserialize, Serialize};

/// Network profiles: paper 001 Table 1's three (the emulator's profiles of
/// the same names; see docs/architecture.md, "Network profiles") and the
/// emulator's other profiles, which have no paper values to compare with
/// (their runs are reported, and no claim reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Net {
    Lan,
    Wan,
    Ppp,
    /// Papers 002/004's switched 100 Mbit/s LAN (`lan100`).
    Lan100,
    /// Paper 003's remote server over a T1 (`t1`).
    T1,
    /// The forwarder alone: no delay, no rate limit (`none`).
    #[serde(rename = "none")]
    Unlimited,
}

impl Net {
    /// Every profile, paper 001's first.
    pub const ALL: [Net; 6] = [
        Net::Lan,
        Net::Wan,
        Net::Ppp,
        Net::Lan100,
        Net::T1,
        Net::Unlimited,
    ];
    /// Paper 001's networks (Table 1): the only ones with paper values.
    pub const PAPER: [Net; 3] = [Net::Lan, Net::Wan, Net::Ppp];

    pub fn name(self) -> &'static str {
        match self {
            Net::Lan => "lan",
            Net::Wan => "wan",
            Net::Ppp => "ppp",
            Net::Lan100 => "lan100",
            Net::T1 => "t1",
            Net::Unlimited => "none",
        }
    }

    /// Whether paper 001 measured this network.
    pub fn in_paper(self) -> bool {
        Net::PAPER.contains(&self)
    }

    /// The paper network whose timing this one resembles (for estimates,
    /// repetitions and browser timeouts): a fast LAN is a LAN, a T1 a WAN.
    pub fn like(self) -> Net {
        match self {
            Net::Lan | Net::Lan100 | Net::Unlimited => Net::Lan,
            Net::Wan | Net::T1 => Net::Wan,
            Net::Ppp => Net::Ppp,
        }
    }

    /// The emulator profile's bottleneck rate, bits/s (docs/link.md;
    /// infinite for `none`).
    pub fn nominal_rate_bps(self) -> f64 {
        match self {
            Net::Lan => 10e6,
            Net::Wan => 1.5e6,
            Net::Ppp => 28.8e3,
            Net::Lan100 => 100e6,
            Net::T1 => 1.544e6,
            Net::Unlimited => f64::INFINITY,
        }
    }

    pub fn nominal_rate_label(self) -> &'static str {
        match self {
            Net::Lan => "10 Mbit/s",
            Net::Wan => "1.5 Mbit/s",
            Net::Ppp => "28.8 kbit/s",
            Net::Lan100 => "100 Mbit/s",
            Net::T1 => "1.544 Mbit/s",
            Net::Unlimited => "unlimited",
        }
    }

    /// The paper's description (Table 1), or the profile's.
    pub fn describe(self) -> &'static str {
        match self {
            Net::Lan => "High bandwidth, low latency (LAN, 10 Mbit/s, RTT < 1 ms)",
            Net::Wan => "High bandwidth, high latency (WAN, 1.5 Mbit/s, RTT ~90 ms)",
            Net::Ppp => "Low bandwidth, high latency (PPP, 28.8 kbit/s, RTT ~150 ms)",
            Net::Lan100 => "Switched LAN (lan100, 100 Mbit/s, RTT 0.2 ms; not in paper 001)",
            Net::T1 => "T1 (t1, 1.544 Mbit/s, RTT 70 ms; not in paper 001)",
            Net::Unlimited => "No link emulation (none: forwarder only; not in paper 001)",
        }
    }
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no network or test of the run matrix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownName {
    #[error("unknown network {0:?} (expected lan, wan, ppp, lan100, t1 or none)")]
    Net(String),
    #[error("unknown test {0:?} (expected first or revalidate)")]
    Test(String),
}

impl FromStr for Net {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s.trim().to_ascii_lowercase().as_str() {
            "lan" => Ok(Net::Lan),
            "wan" => Ok(Net::Wan),
            "ppp" => Ok(Net::Ppp),
            "lan100" => Ok(Net::Lan100),
            "t1" => Ok(Net::T1),
            "none" => Ok(Net::Unlimited),
            other => Err(UnknownName::Net(other.to_string())),
        }
    }
}

/// The robot configurations of Tables 4-9: the robot's own type, one for the
/// robot, the CLI and the run records ([`Strategy::PAPER_001`] are the four).
pub use pagewire_client::Strategy;

/// First-time retrieval (empty cache, 43 GETs) or cache revalidation (43
/// conditional requests; HTTP/1.0: 1 GET + 42 HEADs), paper 001 "Test Setup".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    First,
    Revalidate,
}

impl Test {
    pub const ALL: [Test; 2] = [Test::First, Test::Revalidate];

    pub fn name(self) -> &'static str {
        match self {
            Test::First => "first",
            Test::Revalidate => "revalidate",
        }
    }

    pub fn paper_label(self) -> &'static str {
        match self {
            Test::First => "First Time Retrieval",
            Test::Revalidate => "Cache Validation",
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Test {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        match s.trim().to_ascii_lowercase().as_str() {
            "first" | "first-time" => Ok(Test::First),
            "revalidate" | "reval" | "validation" => Ok(Test::Revalidate),
            other => Err(UnknownName::Test(other.to_string())),
        }
    }
}

/// Which robot configuration a run used: the paper's final, tuned one
/// (Tables 4-9: 50 ms flush timer, explicit flush after the page request,
/// conditional GETs on HTTP/1.1) or its initial, untuned one (Table 3: 1 s
/// flush timer, no explicit flush, HEAD-based revalidation everywhere).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Tuning {
    #[default]
    Tuned,
    Initial,
}

impl Tuning {
    pub fn name(self) -> &'static str {
        match self {
            Tuning::Tuned => "tuned",
            Tuning::Initial => "initial",
        }
    }
}

impl fmt::Display for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where `bench --nagle` leaves Nagle's algorithm on (no TCP_NODELAY):
/// nowhere (the paper's final tests), in the robot, in the server, or both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NagleSides {
    #[default]
    Off,
    Client,
    Server,
    Both,
}

impl NagleSides {
    pub fn client(self) -> bool {
        matches!(self, NagleSides::Client | NagleSides::Both)
    }
    pub fn server(self) -> bool {
        matches!(self, NagleSides::Server | NagleSides::Both)
    }
}

impl std::str::FromStr for NagleSides {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "both" => Ok(NagleSides::Both),
            "client" => Ok(NagleSides::Client),
            "server" => Ok(NagleSides::Server),
            _ => Err(format!("expected client, server or both, got {s:?}")),
        }
    }
}

/// The robot settings that shaped a run (so tuned and untuned runs can be
/// told apart in results.json).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RobotConfig {
    pub tuning: Tuning,
    /// Pipeline flush timer, ms.
    pub flush_after_ms: f64,
    /// Flush after the page request (paper 001 "Buffer Tuning").
    pub explicit_flush: bool,
    pub out_buffer_bytes: usize,
    /// `minimal` or `libwww-1997` (the robot's), or `chromium`.
    pub request_profile: Requests,
    /// `get-head`, `conditional-get-head` or `conditional` (the robot's;
    /// only used by revalidation runs, recorded for all), or how a
    /// browser run revalidated.
    pub revalidation: Revalidating,
    /// Nagle's algorithm left on in the robot (paper 001 "Nagle
    /// Interaction"; off otherwise, as the paper's final tests). In records
    /// without `server_nagle` (before 2026-11-26) it was left on in the
    /// pagewire server too.
    #[serde(default)]
    pub nagle: bool,
    /// Range mode: first bytes of every image, then the rest
    /// (`--range-first N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_first: Option<u64>,
}

/// Which requests a run's client sent: the robot's request profile, or a
/// browser's own. Written as the profile's name (`minimal`,
/// `libwww-1997`) or `chromium`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Requests {
    Robot(RequestProfile),
    Chromium,
}

impl Default for Requests {
    fn default() -> Self {
        Requests::Robot(RequestProfile::Minimal)
    }
}

impl fmt::Display for Requests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requests::Robot(p) => f.write_str(p.name()),
            Requests::Chromium => f.write_str("chromium"),
        }
    }
}

impl From<Requests> for String {
    fn from(r: Requests) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for Requests {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if s == "chromium" {
            return Ok(Requests::Chromium);
        }
        s.parse().map(Requests::Robot).map_err(|e| e.to_string())
    }
}

/// How a run revalidated: the robot's [`Revalidation`], or a browser's
/// visit (a fresh profile on first retrieval; the same profile with
/// `Cache-Control: max-age=0` on every request, or with heuristic
/// freshness). Written as the names results.json has always carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Revalidating {
    Robot(Revalidation),
    BrowserFreshProfile,
    BrowserMaxAge0,
    BrowserHeuristic,
}

impl Revalidating {
    const BROWSER: [(Revalidating, &'static str); 3] = [
        (Revalidating::BrowserFreshProfile, "fresh-profile"),
        (
            Revalidating::BrowserMaxAge0,
            "same-profile, cache-control max-age=0",
        ),
        (Revalidating::BrowserHeuristic, "same-profile, heuristic"),
    ];
}

impl Default for Revalidating {
    fn default() -> Self {
        Revalidating::Robot(Revalidation::GetHead)
    }
}

impl fmt::Display for Revalidating {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Revalidating::Robot(r) => f.write_str(r.name()),
            b => f.write_str(
                Revalidating::BROWSER
                    .iter()
                    .find(|x| x.0 == *b)
                    .map_or("", |x| x.1),
            ),
        }
    }
}

impl From<Revalidating> for String {
    fn from(r: Revalidating) -> String {
        r.to_string()
    }
}

impl TryFrom<String> for Revalidating {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        if let Some((r, _)) = Revalidating::BROWSER.iter().find(|x| x.1 == s) {
            return Ok(*r);
        }
        s.parse()
            .map(Revalidating::Robot)
            .map_err(|e| e.to_string())
    }
}

/// One measured run: a row of results.json / results.csv.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub strategy: Strategy,
    pub test: Test,
    pub net: Net,
    pub rep: u32,
    /// "pagewire", "nginx" or the custom server command.
    pub server: String,
    pub seed: u64,
    /// pagewire version that measured it.
    pub pagewire_version: String,
    /// Pa: IP packets on the link, both directions, every kind.
    pub packets_total: u64,
    pub packets_client_to_server: u64,
    pub packets_server_to_client: u64,
    /// Bytes: IP bytes on the link, both directions, headers included.
    pub bytes_total: u64,
    /// Transport payload on the link, both directions (IP, TCP/UDP headers
    /// and options left out): what paper 001's Bytes column counts (its
    /// %ov is 40·Pa / (Bytes + 40·Pa) in every cell). 0 in results made
    /// before this field.
    #[serde(default)]
    pub payload_bytes_total: u64,
    /// Octets on the serial line, both directions: `bytes_total` unless the
    /// link compresses (`--link-compress v42bis`); 0 in results made before.
    #[serde(default)]
    pub line_bytes_total: u64,
    /// How late packets left the emulated link against their scheduled
    /// departure; `flagged` runs are left out of claims (see
    /// `pagewire_link::lateness`). Zeros in results made before it.
    #[serde(default)]
    pub link_lateness: pagewire_link::LinkLateness,
    /// Sec: from the client's first packet to the last byte of the last
    /// object (the robot's clock). NaN for a failed run, which JSON writes
    /// as null and reads back as NaN.
    #[serde(deserialize_with = "nan_if_null")]
    pub elapsed_s: f64,
    /// Range mode: seconds until the first part of every image was in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_s: Option<f64>,
    /// %ov: share of bytes that are IP and TCP headers.
    pub overhead_pct: f64,
    /// TCP connections opened (SYNs seen on the link).
    pub sockets_total: u64,
    /// Most connections open at once (seen on the link).
    pub sockets_max: u64,
    pub retransmissions: u64,
    /// Objects fetched (first) or validated (revalidate) successfully.
    pub objects_ok: u64,
    /// 43: the page and its 42 images.
    pub objects_expected: u64,
    /// HTTP payload bytes the robot received (bodies).
    pub body_bytes: u64,
    /// Requests the robot sent and their mean size (request line and
    /// headers, bytes).
    #[serde(default)]
    pub requests: u32,
    #[serde(default, deserialize_with = "nan_if_null")]
    pub mean_request_bytes: f64,
    /// The robot configuration of this run (absent in results made before
    /// runs recorded it: those were tuned runs with the minimal request
    /// profile).
    #[serde(default)]
    pub robot: RobotConfig,
    /// Path of the run's pcap, relative to the results directory.
    pub pcap: String,
    /// Path of the run's HAR (the robot's or the browser's), relative to
    /// the results directory; absent in results made before it and for
    /// runs that produced no report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub har: Option<String>,
    /// The link configuration (profile and overrides) as the emulator
    /// recorded it.
    pub link: serde_json::Value,
    /// Set on the runs of a WAN round-trip-time sweep (`bench --rtt-sweep`):
    /// the RTT of this run's link, ms. Sweep runs are extra runs: tables and
    /// every claim but the latency sentence leave them out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_rtt_ms: Option<f64>,
    /// Nagle's algorithm on the server's sockets (`bench --nagle
    /// server|both`: pagewire without TCP_NODELAY, nginx with `tcp_nodelay
    /// off`). Absent in records before 2026-11-26, where `robot.nagle` set
    /// the robot and the pagewire server alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_nagle: Option<bool>,
    /// The pagewire server's flush policy when it is not the default
    /// `when-idle` (`bench --server-flush each-response`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_flush: Option<String>,
    /// The machine's load average (/proc/loadavg: 1, 5, 15 minutes) when
    /// the run began; absent in records before 2026-11-26.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_avg: Option<[f64; 3]>,
    /// Set if the run failed; its numbers are then not used in tables.
    pub error: Option<String>,
    /// A browser run's own numbers (load event, last byte, requests sent,
    /// 304s, cache hits, its HAR); absent for the robot's runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<pagewire_chromium::BrowserSummary>,
    /// Competing bulk traffic during the load (`bench --bulk`); absent
    /// without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_traffic: Option<CrossRecord>,
}

/// What a run records of its competing traffic (`bench --bulk`:
/// `microscape::bulk`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossRecord {
    pub flows: u32,
    pub warmup_s: f64,
    /// Payload bytes the bulk readers received while the page loaded
    /// (from the start of the run's counters to the robot's end).
    pub bytes_during_load: u64,
    /// Their rate over the load, bit/s.
    pub goodput_bps: f64,
    /// The bulk packets that left the link during the run, both directions
    /// (`cross_traffic` of the link counters; includes the queue's drain
    /// after the flows were closed).
    pub link_packets: u64,
    pub link_bytes: u64,
}

impl RunRecord {
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.objects_ok == self.objects_expected
    }

    /// A run of the WAN RTT sweep (`bench --rtt-sweep`): outside the
    /// tables and every claim but the latency sentence's.
    pub fn is_sweep(&self) -> bool {
        self.sweep_rtt_ms.is_some()
    }

    /// Nagle's algorithm on the server's side of this run (records before
    /// `server_nagle` set it with `robot.nagle`).
    pub fn server_nagle(&self) -> bool {
        self.server_nagle.unwrap_or(self.robot.nagle)
    }

    /// Nagle's algorithm on either side.
    pub fn nagle_on(&self) -> bool {
        self.robot.nagle || self.server_nagle()
    }

    /// Whether the server held pipelined responses in a buffer until no
    /// request was left (paper 001 "Nagle Interaction": "a response buffer
    /// that it flushes either when full, or when there is no more requests
    /// coming in"): pagewire with its default flush policy and Apache 2.4
    /// do, nginx (each response written as it is ready, head and `sendfile`
    /// body apart) and pagewire with `--server-flush each-response` do not;
    /// a `--server-cmd` server is unknown.
    pub fn server_buffers(&self) -> Option<bool> {
        match self.server.as_str() {
            "pagewire" => Some(self.server_flush.as_deref() != Some("each-response")),
            "apache" => Some(true),
            "nginx" => Some(false),
            _ => None,
        }
    }
}

/// A number that serde_json wrote as `null` (it writes NaN, e.g. the time
/// of a run that failed, as null) reads back as NaN, so a results
/// directory with a failed run can be re-judged.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robot_settings_keep_their_names_in_json() {
        for (name, r) in [
            ("minimal", Requests::Robot(RequestProfile::Minimal)),
            ("libwww-1997", Requests::Robot(RequestProfile::Libwww1997)),
            ("chromium", Requests::Chromium),
        ] {
            let j = serde_json::to_string(&r).unwrap();
            assert_eq!(j, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Requests>(&j).unwrap(), r);
        }
        for (name, r) in [
            ("get-head", Revalidating::Robot(Revalidation::GetHead)),
            (
                "conditional",
                Revalidating::Robot(Revalidation::Conditional),
            ),
            ("fresh-profile", Revalidating::BrowserFreshProfile),
            (
                "same-profile, cache-control max-age=0",
                Revalidating::BrowserMaxAge0,
            ),
            ("same-profile, heuristic", Revalidating::BrowserHeuristic),
        ] {
            let j = serde_json::to_string(&r).unwrap();
            assert_eq!(j, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Revalidating>(&j).unwrap(), r);
        }
        let e = serde_json::from_str::<Revalidating>("\"sometimes\"").unwrap_err();
        assert!(e.to_string().contains("sometimes"), "{e}");
    }
}
