//! What a fetch is asked to do: plain validated values (ripgrep style), turned
//! into work by `fetch`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::error::FetchError;

/// Serializes a `Duration` as milliseconds (f64), for the reports.
pub(crate) mod duration_ms {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }
}

/// The robot's transfer strategies: one type for the robot, the CLI and the
/// lab's run records (paper 001's four are [`Strategy::PAPER_001`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// HTTP/1.0, one request per connection, up to `max_conns` at once
    /// (libwww 4.1D; Netscape's default of 4). Revalidation: GET of the page,
    /// HEAD of each embedded object.
    Http10,
    /// HTTP/1.1 persistent connection, one request at a time.
    Http11,
    /// HTTP/1.1 persistent and pipelined, requests batched in the output
    /// buffer (1024 bytes, 50 ms flush timer, explicit flush after the page).
    Pipeline,
    /// `Pipeline` plus `Accept-Encoding: deflate`, inflating and parsing the
    /// page on the fly.
    PipelineDeflate,
    /// Padmanabhan & Mogul's GETALL (section 5): the page request asks for
    /// the page and all its same-server objects in one response (`Getall:
    /// 1`); later visits fetch the page and, pipelined, only the objects not
    /// in the cache (the paper's GETLIST, implemented as the paper did);
    /// objects a server did not include are fetched by pipelining.
    Getall,
    /// Object packaging (Fujinoki, Sanjay, Shah): one request for the page
    /// with `Accept: application/vnd.pagewire.objpack`; the page and its
    /// objects arrive as one package, each object complete as soon as its
    /// bytes are in. Objects the package lacks, or every object when the
    /// server answers with plain HTML, are pipelined as `Pipeline` does.
    Objpack,
    /// Headless Chromium over HTTP/1.1 (up to 6 connections per host), run
    /// by `pagewire bench`, not by the robot ([`Strategy::BROWSER`]).
    ChromiumH1,
    /// Headless Chromium over HTTP/2 (needs a server offering TLS + h2).
    ChromiumH2,
    /// Headless Chromium over HTTP/3 (needs a server offering QUIC).
    ChromiumH3,
    /// HTTP/2 over TLS 1.3 (ALPN `h2`): one connection, every object its
    /// own stream, requested as soon as streaming discovery finds it;
    /// `Accept-Encoding: deflate` for the page as `PipelineDeflate`.
    H2,
    /// HTTP/3 over QUIC (ALPN `h3`), otherwise as `H2`.
    H3,
}

impl Strategy {
    /// Every strategy the robot has.
    pub const ALL: [Strategy; 8] = [
        Strategy::Http10,
        Strategy::Http11,
        Strategy::Pipeline,
        Strategy::PipelineDeflate,
        Strategy::Getall,
        Strategy::Objpack,
        Strategy::H2,
        Strategy::H3,
    ];

    /// A real browser's loads, driven by `pagewire bench` over the DevTools
    /// protocol; the robot refuses them.
    pub const BROWSER: [Strategy; 3] = [
        Strategy::ChromiumH1,
        Strategy::ChromiumH2,
        Strategy::ChromiumH3,
    ];

    /// Whether this is a browser strategy ([`Strategy::BROWSER`]).
    pub const fn is_browser(self) -> bool {
        matches!(
            self,
            Strategy::ChromiumH1 | Strategy::ChromiumH2 | Strategy::ChromiumH3
        )
    }

    /// Paper 001's four configurations, in the order of its Tables 4-9.
    pub const PAPER_001: [Strategy; 4] = [
        Strategy::Http10,
        Strategy::Http11,
        Strategy::Pipeline,
        Strategy::PipelineDeflate,
    ];

    /// The CLI name.
    pub const fn name(self) -> &'static str {
        match self {
            Strategy::Http10 => "http10",
            Strategy::Http11 => "http11",
            Strategy::Pipeline => "pipeline",
            Strategy::PipelineDeflate => "pipeline-deflate",
            Strategy::Getall => "getall",
            Strategy::Objpack => "objpack",
            Strategy::ChromiumH1 => "chromium-h1",
            Strategy::ChromiumH2 => "chromium-h2",
            Strategy::ChromiumH3 => "chromium-h3",
            Strategy::H2 => "h2",
            Strategy::H3 => "h3",
        }
    }

    /// The row label of paper 001's tables (Nielsen et al., SIGCOMM '97).
    pub const fn paper_label(self) -> &'static str {
        match self {
            Strategy::Http10 => "HTTP/1.0",
            Strategy::Http11 => "HTTP/1.1",
            Strategy::Pipeline => "HTTP/1.1 Pipelined",
            Strategy::PipelineDeflate => "HTTP/1.1 Pipelined w. compression",
            Strategy::Getall => "GETALL",
            Strategy::Objpack => "Object Packaging",
            Strategy::ChromiumH1 => "Chromium, HTTP/1.1 (6 connections)",
            Strategy::ChromiumH2 => "Chromium, HTTP/2",
            Strategy::ChromiumH3 => "Chromium, HTTP/3",
            Strategy::H2 => "HTTP/2 (TLS 1.3)",
            Strategy::H3 => "HTTP/3 (QUIC)",
        }
    }

    /// Whether the strategy multiplexes streams over TLS 1.3 (needs
    /// `FetchConfig::tls_ca` and an `https` URL).
    pub const fn multiplexed(self) -> bool {
        matches!(self, Strategy::H2 | Strategy::H3)
    }

    /// Whether the strategy needs the server's TLS listener (HTTP/2 and
    /// HTTP/3, the robot's or Chromium's).
    pub const fn needs_tls(self) -> bool {
        matches!(
            self,
            Strategy::H2 | Strategy::H3 | Strategy::ChromiumH2 | Strategy::ChromiumH3
        )
    }

    /// Whether requests may be outstanding ahead of responses.
    pub const fn pipelines(self) -> bool {
        matches!(
            self,
            Strategy::Pipeline | Strategy::PipelineDeflate | Strategy::Getall | Strategy::Objpack
        )
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strategy name that is none of [`Strategy::ALL`] or [`Strategy::BROWSER`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy {0:?} (expected one of: {names}, or a browser: {browsers})",
    names = Strategy::ALL.map(Strategy::name).join(", "),
    browsers = Strategy::BROWSER.map(Strategy::name).join(", "))]
pub struct UnknownStrategy(pub String);

impl FromStr for Strategy {
    type Err = UnknownStrategy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Strategy::ALL
            .into_iter()
            .chain(Strategy::BROWSER)
            .find(|st| st.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownStrategy(s.to_string()))
    }
}

/// How cached objects are revalidated (paper 001 "Revalidate Test").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Revalidation {
    /// libwww 4.1D, which had no persistent cache: "one GET (HTML) and 42
    /// HEAD requests (images)" — the page is fetched again unconditionally
    /// (its whole body crosses the wire), each image is checked with HEAD.
    /// The HTTP/1.0 robot's default, and every strategy's in the paper's
    /// initial tests (Table 3).
    GetHead,
    /// A conditional GET of the page (If-Modified-Since; If-None-Match too
    /// on HTTP/1.1), HEAD of each image: pagewire's first HTTP/1.0 robot
    /// (before it requested as the paper's did), kept as a named option.
    ConditionalGetHead,
    /// libwww 5.1's persistent cache: a conditional GET for every object
    /// (If-None-Match and If-Modified-Since; HTTP/1.0: dates only). The
    /// HTTP/1.1 strategies' default.
    Conditional,
}

impl Revalidation {
    pub const ALL: [Revalidation; 3] = [
        Revalidation::GetHead,
        Revalidation::ConditionalGetHead,
        Revalidation::Conditional,
    ];

    /// The CLI and record name.
    pub const fn name(self) -> &'static str {
        match self {
            Revalidation::GetHead => "get-head",
            Revalidation::ConditionalGetHead => "conditional-get-head",
            Revalidation::Conditional => "conditional",
        }
    }

    /// The paper's robot: HEADs for HTTP/1.0 (libwww 4.1D), conditional
    /// GETs for HTTP/1.1 (libwww 5.1, the final tests).
    pub const fn default_for(strategy: Strategy) -> Revalidation {
        match strategy {
            Strategy::Http10 => Revalidation::GetHead,
            _ => Revalidation::Conditional,
        }
    }
}

impl fmt::Display for Revalidation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is none of [`Revalidation::ALL`] or [`RequestProfile::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?} (expected one of: {expected})")]
pub struct UnknownOption {
    pub what: &'static str,
    pub name: String,
    pub expected: String,
}

impl FromStr for Revalidation {
    type Err = UnknownOption;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Revalidation::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownOption {
                what: "revalidation style",
                name: s.to_string(),
                expected: Revalidation::ALL.map(Revalidation::name).join(", "),
            })
    }
}

/// Which headers a request carries besides what the strategy needs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum RequestProfile {
    /// Request line, Host, a short User-Agent (first-time image GETs of the
    /// Microscape page: 86-90 bytes).
    Minimal,
    /// Sized like the requests of paper 001's robot ("an average request
    /// size of around 190 bytes"; section 9.1 assumes 210): the Accept
    /// lines libwww sent from its format converters, Accept-Language and a
    /// libwww User-Agent. The paper does not print its requests; the header
    /// set is libwww's kind, the size is the paper's (first-time GETs of
    /// the Microscape page average ~190 bytes).
    Libwww1997,
}

impl RequestProfile {
    pub const ALL: [RequestProfile; 2] = [RequestProfile::Minimal, RequestProfile::Libwww1997];

    pub const fn name(self) -> &'static str {
        match self {
            RequestProfile::Minimal => "minimal",
            RequestProfile::Libwww1997 => "libwww-1997",
        }
    }

    /// Headers after Host (in order); `None` means the configured
    /// User-Agent alone.
    pub(crate) fn extra_headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            RequestProfile::Minimal => &[],
            RequestProfile::Libwww1997 => &[
                ("Accept", "*/*;q=0.3"),
                ("Accept", "text/html"),
                ("Accept", "image/gif"),
                ("Accept", "image/jpeg"),
                ("Accept-Language", "en"),
            ],
        }
    }

    /// The User-Agent this profile sends (`None`: the configured one).
    pub(crate) fn user_agent(self) -> Option<&'static str> {
        match self {
            RequestProfile::Minimal => None,
            RequestProfile::Libwww1997 => Some("W3CRobot/5.1 libwww/5.1"),
        }
    }
}

impl fmt::Display for RequestProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RequestProfile {
    type Err = UnknownOption;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RequestProfile::ALL
            .into_iter()
            .find(|r| r.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownOption {
                what: "request profile",
                name: s.to_string(),
                expected: RequestProfile::ALL.map(RequestProfile::name).join(", "),
            })
    }
}

/// Time limits. A fetch never waits forever on a silent peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Timeouts {
    /// TCP connect (SYN to established).
    #[serde(with = "duration_ms")]
    pub connect: Duration,
    /// No byte received for this long while a response is awaited.
    #[serde(with = "duration_ms")]
    pub read: Duration,
    /// The whole fetch, all objects and retries.
    #[serde(with = "duration_ms")]
    pub total: Duration,
    /// One response, from when it is the one awaited on its connection (its
    /// request sent and every earlier response on the connection complete)
    /// to its last byte. Bytes that trickle in or endless interim
    /// `100 Continue`s do not extend it.
    #[serde(with = "duration_ms")]
    pub object: Duration,
    /// Least progress while a response is awaited, in bytes per second,
    /// over consecutive windows as long as `read`: a connection that brings
    /// fewer than `min_rate * read` bytes of final responses (interim 1xx
    /// heads do not count) in such a window fails. 0 turns the check off.
    pub min_rate: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        // 10 s / 30 s are far above the PPP profile's worst case (the paper's
        // 28.8k fetches take ~65 s in total, but no single gap approaches 30 s).
        Timeouts {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(30),
            total: Duration::from_secs(600),
            // Paper 001's largest object over PPP (~40 KB at 28.8 kbit/s)
            // takes ~12 s; 120 s leaves room for loss and slow servers.
            object: Duration::from_secs(120),
            // 30 s windows at 100 B/s: 3000 bytes, far below what even the
            // 28.8k profile carries (~3600 B/s) but above a byte-per-second drip.
            min_rate: DEFAULT_MIN_RATE,
        }
    }
}

/// Default least progress while a response is awaited (bytes per second).
pub const DEFAULT_MIN_RATE: u64 = 100;

/// Parses a byte rate: a number, a unit `B`, `kB`, `KiB`, `MB` or `MiB`, and
/// `/s` (`100B/s`, `1.5KiB/s`); `0` (or `0B/s`) turns the check off.
pub fn parse_byte_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t == "0" {
        return Ok(0);
    }
    let err =
        || format!("invalid rate {s:?}: expected e.g. 100B/s, 2KiB/s, 1MB/s (bytes per second)");
    let t = t.strip_suffix("/s").ok_or_else(err)?;
    let units: [(&str, f64); 5] = [
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("kB", 1e3),
        ("MB", 1e6),
        ("B", 1.0),
    ];
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .ok_or_else(err)?;
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    let r = v * mult;
    if !(r.is_finite() && (0.0..=1e12).contains(&r)) {
        return Err(format!("invalid rate {s:?}: must be 0 to 1 TB/s"));
    }
    Ok(r.round() as u64)
}

/// Parses a size: a number and a unit `B`, `kB`, `KiB`, `MB`, `MiB`, `GB`
/// or `GiB` (`32MiB`, `1.5MB`); at least 1 KiB. A bare number is rejected,
/// like a bare duration.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || format!("invalid size {s:?}: expected e.g. 32MiB, 500kB, 1GiB");
    let units: [(&str, f64); 7] = [
        ("KiB", 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("kB", 1e3),
        ("MB", 1e6),
        ("GB", 1e9),
        ("B", 1.0),
    ];
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .ok_or_else(err)?;
    let v: f64 = num.trim().parse().map_err(|_| err())?;
    let b = v * mult;
    if !(b.is_finite() && (1024.0..=1e12).contains(&b)) {
        return Err(format!("invalid size {s:?}: must be 1 KiB to 1 TB"));
    }
    Ok(b.round() as u64)
}

/// Paper 001, "Pipelining": "1024 bytes is a good compromise ... if the MTU
/// is 1460 (Ethernet size) then we can nicely fit into one segment".
pub const DEFAULT_OUT_BUFFER_BYTES: usize = 1024;
/// Paper 001: "Initially we used a 1 second delay ... but used a 50 ms delay
/// in for all later tests."
pub const DEFAULT_FLUSH_AFTER: Duration = Duration::from_millis(50);
/// Paper 001: "We set the maximum number of simultaneous connections to 4,
/// the same as Netscape Navigator's default".
pub const DEFAULT_MAX_CONNS: usize = 4;

/// A fetch of one page and its same-server embedded objects.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// `http://host[:port]/path` (https is not spoken by the robot).
    pub url: String,
    pub strategy: Strategy,
    /// Pipeline output buffer: flushed when it holds this many bytes.
    pub out_buffer_bytes: usize,
    /// Pipeline flush timer: buffered requests leave at most this long
    /// after the first of them was buffered.
    pub flush_after: Duration,
    /// Pipeline: also flush explicitly once the page has been parsed to its
    /// end (no more requests can come from it). Off by default: paper 001's
    /// robot flushed explicitly only after the page request, and the tail of
    /// the image requests waited for the timer. The paper suggests the
    /// application use such knowledge ("Buffer Tuning"); this measures it.
    pub flush_at_page_end: bool,
    /// Pipeline: flush explicitly right after the page request (paper 001
    /// "Buffer Tuning"). On by default; off in the paper's initial tests
    /// (Table 3), where the first batch waited for the timer.
    pub explicit_flush: bool,
    /// How a revalidation asks ([`Revalidation::default_for`] the strategy
    /// unless set).
    pub revalidation: Revalidation,
    /// Request headers: [`RequestProfile::Minimal`] by default; the bench
    /// uses [`RequestProfile::Libwww1997`].
    pub request_profile: RequestProfile,
    /// `http10`: most connections open at once.
    pub max_conns: usize,
    /// Persistent cache directory (bodies and validators).
    pub cache_dir: Option<PathBuf>,
    /// Revalidate cached objects (the paper's second test).
    pub revalidate: bool,
    /// Follow `Link: <url>; rel=prefetch` hints into the cache.
    pub prefetch: bool,
    pub timeouts: Timeouts,
    /// Keep object bodies in the report (for `--save` and tests): in memory,
    /// so an inflated object is then not streamed into the cache.
    pub keep_bodies: bool,
    /// `User-Agent` value; short on purpose (paper 001: requests of ~190 B).
    pub user_agent: String,
    /// Set TCP_NODELAY (paper 001 "Nagle Interaction": buffered pipelining
    /// and Nagle interfere; the robot buffers itself).
    pub nodelay: bool,
    /// Most reconnections after a server closed with requests unanswered,
    /// per fetch; bounds a server that closes every connection early.
    pub max_reconnects: usize,
    /// Write objects that arrive in an object package here (`wget -p`
    /// layout, see `save`) the moment each is complete.
    pub save_dir: Option<PathBuf>,
    /// Redirects of the page (301, 302, 303, 307, 308 with a `Location`)
    /// followed, like curl's `-L --max-redirs N`; 0 (the default) follows
    /// none and reports the 3xx as the page's status.
    pub max_redirects: usize,
    /// A deflate body inflating past this many bytes fails its object
    /// (a "deflate bomb"); see `inflate::DEFAULT_MAX_INFLATED_BYTES`.
    pub max_inflated: u64,
    /// Inflate `Content-Encoding: deflate` also on responses to requests
    /// that did not ask for it (`Accept-Encoding`). Off: such bodies are
    /// kept as sent, with a warning, as curl does without `--compressed`.
    pub decode_unasked: bool,
    /// Where to connect instead of resolving the URL's host (curl's
    /// `--resolve` / `--connect-to`): the first rule that matches the
    /// host and port wins. Requests still carry the URL's `Host`, so a
    /// replay server can tell recorded origins apart.
    pub connect_to: Vec<ConnectTo>,
    /// The window discovery lays the page out for: which `srcset` /
    /// `<picture>` candidate and which `media` match (1280 px at 1x, a
    /// desktop browser's default).
    pub viewport: pagewire_discover::Viewport,
    /// Look for the page's references (off: fetch the URL alone, as for a
    /// cross-origin object).
    pub discover: bool,
    /// Also fetch the references to other origins, each by a fetch of its
    /// own after the page's (`FetchReport::cross_origin_fetches`); off, they
    /// are only listed (`FetchReport::cross_origin`).
    pub cross_origin: bool,
    /// The CA certificate (PEM) trusted for `https` URLs: the run's
    /// throwaway CA (`pagewire-tls`); nothing else is trusted.
    pub tls_ca: Option<PathBuf>,
    /// Fetch one source of every `@font-face`, used or not (the robot
    /// before fonts by use); off, only the faces the page's text uses, as
    /// a browser (docs/discovery.md).
    pub all_fonts: bool,
    /// "Poor man's multiplexing" (paper 001, "Range Requests and
    /// Validation"), strategies `pipeline` and `pipeline-deflate` (others
    /// ignore it): on a first visit, ask for the first N bytes of every
    /// image (`Range: bytes=0-(N-1)`, their metadata), and only once all of
    /// those are in, the rest of each (`Range: bytes=N-`); the parts are
    /// joined and checked (length, Content-Range, digest) before the object
    /// counts as fetched. None: whole objects.
    pub range_first: Option<u64>,
    /// End-host costs the robot imitates (paper 003's 1994 hosts); zero by
    /// default: today's hosts, whatever they cost.
    pub host_cost: HostCost,
}

/// Time the robot spends, on purpose, where a slower end host spent it
/// (Padmanabhan & Mogul, "Improving HTTP Latency": NCSA httpd 1.3 forked a
/// process per connection; Mosaic 2.4 on a DECstation 3100 handled each
/// object before it read on). Applied on the robot's one timeline, so a
/// cost delays whatever the robot would do next (send the next request,
/// read the next response) as a host that is busy does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCost {
    /// Every new connection: the server's fork and accept (and the
    /// client's socket set-up) before the first request is read. The robot
    /// waits this long after the handshake before it sends.
    pub per_connection: Duration,
    /// Every object received: the server's per-request work (parse, open,
    /// read the file) and the client's per-object handling. After each
    /// response the robot neither reads nor sends for this long; the parts
    /// of a GETALL or a package are handled as they arrive (see
    /// `conn::busy_after`).
    pub per_object: Duration,
}

impl HostCost {
    pub fn is_zero(&self) -> bool {
        self.per_connection.is_zero() && self.per_object.is_zero()
    }
}

/// A connection override: requests for `host:port` (either may be any)
/// go to `addr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectTo {
    /// `None`: every host.
    pub host: Option<String>,
    /// `None`: every port.
    pub port: Option<u16>,
    pub addr: std::net::SocketAddr,
}

impl ConnectTo {
    /// Whether this rule applies to `host:port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        self.host
            .as_deref()
            .is_none_or(|h| h.eq_ignore_ascii_case(host))
            && self.port.is_none_or(|p| p == port)
    }

    /// curl's `--resolve HOST:PORT:ADDR` (`*` for any host): connect to
    /// ADDR on the same port.
    pub fn parse_resolve(s: &str) -> Result<ConnectTo, String> {
        let err = || {
            format!(
                "invalid --resolve {s:?}: expected HOST:PORT:ADDR, e.g. example.test:80:198.18.0.1"
            )
        };
        let (host, rest) = split_host(s).ok_or_else(err)?;
        let (port, addr) = rest.split_once(':').ok_or_else(err)?;
        let port: u16 = port.parse().map_err(|_| err())?;
        let ip = parse_ip(addr).ok_or_else(err)?;
        Ok(ConnectTo {
            host: (host != "*").then(|| host.to_string()),
            port: Some(port),
            addr: std::net::SocketAddr::new(ip, port),
        })
    }

    /// curl's `--connect-to HOST1:PORT1:ADDR:PORT2` (HOST1 or PORT1 empty:
    /// any): connect to ADDR:PORT2.
    pub fn parse_connect_to(s: &str) -> Result<ConnectTo, String> {
        let err = || {
            format!("invalid --connect-to {s:?}: expected HOST1:PORT1:ADDR:PORT2 (HOST1, PORT1 may be empty), e.g. ::127.0.0.2:8080")
        };
        let (host, rest) = split_host(s).ok_or_else(err)?;
        let (port, rest) = rest.split_once(':').ok_or_else(err)?;
        let (addr, port2) = rest.rsplit_once(':').ok_or_else(err)?;
        let ip = parse_ip(addr).ok_or_else(err)?;
        Ok(ConnectTo {
            host: (!host.is_empty() && host != "*").then(|| host.to_string()),
            port: if port.is_empty() {
                None
            } else {
                Some(port.parse().map_err(|_| err())?)
            },
            addr: std::net::SocketAddr::new(ip, port2.parse().map_err(|_| err())?),
        })
    }
}

/// `host:rest` where host may be `[v6]`.
fn split_host(s: &str) -> Option<(&str, &str)> {
    if let Some(v6) = s.strip_prefix('[') {
        let (h, rest) = v6.split_once(']')?;
        Some((h, rest.strip_prefix(':')?))
    } else {
        s.split_once(':')
    }
}

fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    s.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// Most redirects `max_redirects` may allow (browsers stop at about 20).
pub const MAX_REDIRECTS: usize = 20;

impl FetchConfig {
    /// The paper's defaults for `url` and `strategy`.
    pub fn new(url: impl Into<String>, strategy: Strategy) -> Self {
        FetchConfig {
            url: url.into(),
            strategy,
            out_buffer_bytes: DEFAULT_OUT_BUFFER_BYTES,
            flush_after: DEFAULT_FLUSH_AFTER,
            flush_at_page_end: false,
            explicit_flush: true,
            revalidation: Revalidation::default_for(strategy),
            request_profile: RequestProfile::Minimal,
            max_conns: DEFAULT_MAX_CONNS,
            cache_dir: None,
            revalidate: false,
            prefetch: false,
            timeouts: Timeouts::default(),
            keep_bodies: false,
            user_agent: format!("pagewire/{}", env!("CARGO_PKG_VERSION")),
            nodelay: true,
            max_reconnects: 64,
            save_dir: None,
            max_redirects: 0,
            max_inflated: crate::inflate::DEFAULT_MAX_INFLATED_BYTES,
            decode_unasked: false,
            connect_to: Vec::new(),
            viewport: pagewire_discover::Viewport::default(),
            discover: true,
            all_fonts: false,
            cross_origin: false,
            tls_ca: None,
            range_first: None,
            host_cost: HostCost::default(),
        }
    }

    pub(crate) fn validate(&self) -> Result<Target, FetchError> {
        if self.strategy.is_browser() {
            return Err(FetchError::Config(format!(
                "{} is a browser, not a robot strategy: `pagewire bench --strategy {}` runs it",
                self.strategy, self.strategy
            )));
        }
        if self.out_buffer_bytes == 0 || self.out_buffer_bytes > 1 << 20 {
            return Err(FetchError::Config(format!(
                "out-buffer must be 1..=1048576 bytes, got {}",
                self.out_buffer_bytes
            )));
        }
        if self.max_conns == 0 || self.max_conns > 256 {
            return Err(FetchError::Config(format!(
                "max-conns must be 1..=256, got {}",
                self.max_conns
            )));
        }
        if self.max_redirects > MAX_REDIRECTS {
            return Err(FetchError::Config(format!(
                "max-redirects must be 0..={MAX_REDIRECTS}, got {}",
                self.max_redirects
            )));
        }
        if self.revalidate && self.cache_dir.is_none() {
            return Err(FetchError::Config(
                "--revalidate needs a cache (--cache DIR)".into(),
            ));
        }
        if self.prefetch && self.cache_dir.is_none() {
            return Err(FetchError::Config(
                "--prefetch stores hinted objects in the cache: give --cache DIR".into(),
            ));
        }
        let v = self.viewport;
        if !((1..=100_000).contains(&v.width) && v.dpr > 0.0 && v.dpr <= 16.0) {
            return Err(FetchError::Config(format!(
                "viewport must be 1..=100000 CSS pixels at a DPR in (0, 16], got {} at {}",
                v.width, v.dpr
            )));
        }
        if self.user_agent.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err(FetchError::Config("user agent has control bytes".into()));
        }
        let target = Target::parse(&self.url)?;
        match (self.strategy.multiplexed(), target.tls) {
            (true, false) => {
                return Err(FetchError::Config(format!(
                    "strategy {} speaks TLS: give an https:// URL",
                    self.strategy
                )))
            }
            (false, true) => {
                return Err(FetchError::Config(format!(
                    "strategy {} speaks plain HTTP/1.x; https:// is for h2 and h3 (HTTP/1.1 over TLS is not built)",
                    self.strategy
                )))
            }
            _ => {}
        }
        if target.tls && self.tls_ca.is_none() {
            return Err(FetchError::Config(
                "an https:// URL needs the CA certificate to trust (--ca FILE)".into(),
            ));
        }
        Ok(target)
    }
}

/// The parsed page URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Host as written (without brackets for IPv6).
    pub host: String,
    pub port: u16,
    /// `Host` header value (RFC 9110 §7.2): host, and port unless 80.
    pub authority: String,
    /// Request target of the page: path and query.
    pub path: String,
    /// `https`: TLS 1.3 (the `h2` and `h3` strategies).
    pub tls: bool,
}

impl Target {
    /// Parses `http://host[:port][/path][?query]` (or `https://`, port 443
    /// by default).
    pub fn parse(url: &str) -> Result<Target, FetchError> {
        let bad = |why: &str| FetchError::Config(format!("bad URL {url:?}: {why}"));
        let (rest, tls) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (rest, false),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (rest, true),
            Some((scheme, _)) => {
                return Err(bad(&format!(
                "scheme {scheme:?} not supported (the robot speaks http, and https with h2 and h3)"
            )))
            }
            None => return Err(bad("expected http://host[:port]/path")),
        };
        let default_port = if tls { 443 } else { 80 };
        let rest = rest.split('#').next().unwrap_or(rest);
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (auth, path) = rest.split_at(end);
        if auth.contains('@') {
            return Err(bad("user info is not supported"));
        }
        let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad("bad port"))?,
                None if after.is_empty() => default_port,
                None => return Err(bad("junk after ]")),
            };
            (h.to_string(), port)
        } else {
            match auth.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p.parse().map_err(|_| bad("bad port"))?),
                None => (auth.to_string(), default_port),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        if path.bytes().any(|b| b <= 0x20 || b == 0x7f) {
            return Err(bad("spaces or control bytes in the path"));
        }
        let path = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        let authority = if port == default_port {
            auth.split(':').next().unwrap_or(auth).to_string()
        } else {
            auth.to_string()
        };
        let authority = if auth.starts_with('[') && port == default_port {
            format!("[{host}]")
        } else {
            authority
        };
        Ok(Target {
            host,
            port,
            authority,
            path,
            tls,
        })
    }

    /// Absolute URL of a request target on this server.
    pub fn url_of(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_names_round_trip() {
        for s in Strategy::ALL.into_iter().chain(Strategy::BROWSER) {
            assert_eq!(s.name().parse::<Strategy>().unwrap(), s);
            assert_eq!(s.to_string(), s.name());
            assert_eq!(s.is_browser(), Strategy::BROWSER.contains(&s));
        }
        assert!("http2".parse::<Strategy>().is_err());
        assert_eq!(Strategy::PAPER_001.len(), 4);
        // The robot refuses a browser strategy with a pointer to the bench.
        let e = FetchConfig::new("http://127.0.0.1/", Strategy::ChromiumH1)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("pagewire bench --strategy chromium-h1"), "{e}");
    }

    #[test]
    fn parses_connect_to() {
        let r = ConnectTo::parse_resolve("a.test:80:198.18.0.1").unwrap();
        assert!(r.matches("A.test", 80) && !r.matches("a.test", 81) && !r.matches("b.test", 80));
        assert_eq!(r.addr.to_string(), "198.18.0.1:80");
        let r = ConnectTo::parse_resolve("*:8080:[::1]").unwrap();
        assert!(r.matches("x", 8080));
        assert_eq!(r.addr.to_string(), "[::1]:8080");
        let c = ConnectTo::parse_connect_to("::127.0.0.2:9000").unwrap();
        assert!(c.matches("anything", 1));
        assert_eq!(c.addr.to_string(), "127.0.0.2:9000");
        let c = ConnectTo::parse_connect_to("a.test:80:[::1]:81").unwrap();
        assert_eq!((c.host.as_deref(), c.port), (Some("a.test"), Some(80)));
        assert_eq!(c.addr.to_string(), "[::1]:81");
        assert!(ConnectTo::parse_resolve("a.test:80:not-an-ip").is_err());
        assert!(ConnectTo::parse_connect_to("a:b").is_err());
    }

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b.html?x=1#frag").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("127.0.0.1", 8080));
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b.html?x=1");
        let t = Target::parse("http://example.test").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.authority.as_str()),
            (80, "/", "example.test")
        );
        let t = Target::parse("http://[::1]:81/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.authority.as_str()),
            ("::1", 81, "[::1]:81")
        );
        // https (the h2 and h3 strategies): port 443 by default, https URLs.
        let t = Target::parse("https://x/p").unwrap();
        assert_eq!((t.port, t.tls, t.authority.as_str()), (443, true, "x"));
        assert_eq!(t.url_of("/q"), "https://x/q");
        let t = Target::parse("https://x:8443/").unwrap();
        assert_eq!((t.port, t.authority.as_str()), (8443, "x:8443"));
        assert!(!Target::parse("http://x/").unwrap().tls);
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("x/").is_err());
        assert!(Target::parse("http://:80/").is_err());
        assert!(Target::parse("http://h:99999/").is_err());
        assert!(Target::parse("http://h/a b").is_err());
    }

    #[test]
    fn parses_byte_rates() {
        assert_eq!(parse_byte_rate("100B/s"), Ok(100));
        assert_eq!(parse_byte_rate("2KiB/s"), Ok(2048));
        assert_eq!(parse_byte_rate("1.5kB/s"), Ok(1500));
        assert_eq!(parse_byte_rate("1MiB/s"), Ok(1 << 20));
        assert_eq!(parse_byte_rate("0"), Ok(0));
        assert!(parse_byte_rate("100").is_err());
        assert!(parse_byte_rate("100B").is_err());
        assert!(parse_byte_rate("-1B/s").is_err());
        assert!(parse_byte_rate("fastB/s").is_err());
        assert_eq!(parse_size("32MiB"), Ok(32 << 20));
        assert_eq!(parse_size("1.5MB"), Ok(1_500_000));
        assert!(parse_size("32").is_err());
        assert!(parse_size("10B").is_err());
    }
}
