//! `pagewire bench`: the main job — paper 001's Tables 3-9 on this machine.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use pagewire_emu::LinkConfig;
use pagewire_lab::microscape::claims::PageFacts;
use pagewire_lab::microscape::plan::{Plan, Reps};
use pagewire_lab::microscape::report::Results;
use pagewire_lab::microscape::runner::{self, BenchConfig, ServerKind};
use pagewire_lab::model::NagleSides;
use pagewire_lab::results::{utc_now, Provenance, Report};
use pagewire_lab::{Net, Strategy, Test};
use pagewire_site::microscape::Variant;

mod objpack;
mod surge;

/// `pagewire bench [SUITE]`: one subcommand per suite, each with its own
/// flags; `bench` alone runs Microscape (its flags given directly), and
/// `--suite X` is rewritten to `bench X` before parsing (see `main.rs`).
#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_value_name = "SUITE",
    after_help = "Suites: `pagewire bench list` names them and the claims each checks.\n\
    Without a suite, `pagewire bench` runs microscape with the flags above.\n\
    `--suite SUITE` is accepted as an alias of `bench SUITE`.\n\n\
    Exit status: 0 every run succeeded; 1 a run failed (results still written); \
    2 a usage error (nothing run); 130 interrupted (the runs done are written)."
)]
pub struct Args {
    #[command(subcommand)]
    suite: Option<Suite>,
    #[command(flatten)]
    microscape: MicroscapeArgs,
}

#[derive(clap::Subcommand)]
enum Suite {
    /// Paper 001 (Nielsen, Gettys et al., SIGCOMM '97): HTTP/1.0, persistent,
    /// pipelined and pipelined+deflate transfers of the Microscape page over
    /// LAN, WAN and PPP (Tables 3-9). The default suite.
    Microscape(Box<MicroscapeArgs>),
    /// Paper 001 section 9 (CSS and PNG) from two finished microscape runs:
    /// the original page's and a `--page css` run's results.json.
    Section9(Section9Args),
    /// Paper 002 (Fujinoki, Sanjay, Shah, object packaging): Tables 3-7 on
    /// lan100 and wan.
    Objpack(Box<objpack::ObjpackArgs>),
    /// Paper 003 (Padmanabhan & Mogul, "Improving HTTP Latency"): connection
    /// length vs throughput, Figures 2-3.
    #[command(name = "conn-length")]
    ConnLength(ConnLengthArgs),
    /// Paper 003: load time vs number and size of inline images with
    /// GETALL/GETLIST, Figures 5-8.
    #[command(alias = "load-time")]
    Getall(GetallArgs),
    /// Paper 004 (Barford & Crovella, SURGE): load against a memory-limited
    /// server, monitored once a second.
    Surge(surge::SurgeSuiteArgs),
    /// Paper 003 section 8: the prefetching simulator over an access log
    /// (the same as `pagewire prefetch simulate`; no network).
    Prefetch(super::prefetch::SimulateArgs),
    /// List the suites and the claims each one checks.
    List(ListArgs),
}

/// Flags every suite that writes a results directory shares.
#[derive(clap::Args, Clone, Debug)]
pub struct Common {
    /// Results directory (default: a fresh ./bench[-SUITE]-YYYYMMDD-HHMMSS).
    /// An existing non-empty directory is refused unless --force.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write into an --out directory that is not empty (files of an earlier
    /// run with the same names are replaced).
    #[arg(long)]
    pub force: bool,
    /// Print results.json on stdout instead of the text report (the report
    /// is still written to the results directory).
    #[arg(long)]
    pub json: bool,
    /// Don't draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl Common {
    /// The results directory: `--out`, or a fresh `STEM-YYYYMMDD-HHMMSS`;
    /// created; an existing non-empty one is a usage error without --force.
    pub fn out_dir(&self, stem: &str) -> Result<PathBuf> {
        let out = match &self.out {
            Some(p) => p.clone(),
            None => PathBuf::from(format!("{stem}-{}", utc_now().1)),
        };
        if !self.force {
            if let Ok(mut entries) = std::fs::read_dir(&out) {
                if entries.next().is_some() {
                    return Err(super::usage(format!(
                        "--out {}: the directory is not empty{}; choose a new directory or add --force",
                        out.display(),
                        if out.join("results.json").exists() {
                            " (it holds results.json of an earlier run)"
                        } else {
                            ""
                        }
                    )));
                }
            } else if out.exists() {
                return Err(super::usage(format!(
                    "--out {}: not a directory (--out names a results directory)",
                    out.display()
                )));
            }
        }
        std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
        Ok(out)
    }

    /// Prints the text report, or with --json the results.json written to `out`.
    pub fn emit(&self, out: &std::path::Path, text: &str) -> Result<()> {
        use std::io::Write;
        let mut so = std::io::stdout().lock();
        if self.json {
            let j = std::fs::read_to_string(out.join("results.json"))
                .with_context(|| format!("read {}/results.json", out.display()))?;
            so.write_all(j.as_bytes())?;
            if !j.ends_with('\n') {
                so.write_all(b"\n")?;
            }
        } else {
            so.write_all(text.as_bytes())?;
        }
        Ok(())
    }

    /// The "Wrote ..." line: on stdout with the text report, on stderr with
    /// --json (stdout is the JSON document alone).
    pub fn wrote(&self, line: &str) {
        if self.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    pagewire bench                      # all networks, 5 repetitions (~7 min), results in ./bench-YYYYMMDD-HHMMSS/\n  \
    pagewire bench --quick              # lan and wan, one repetition (< 1 min)\n  \
    pagewire bench --server nginx --net lan,wan\n  \
    pagewire bench --server-cmd 'python3 -m http.server {port} -d {root}' --net lan\n  \
    pagewire bench --tcp 1997 --mss 536")]
pub struct MicroscapeArgs {
    /// Networks, comma-separated: any profile of `pagewire link --net`,
    /// optionally with a queue discipline (`lan100+codel`). Paper 001's
    /// lan, wan and ppp have its values beside ours and feed the claims;
    /// lan100, t1 and none are measured and reported alone.
    #[arg(long, value_delimiter = ',', default_value = "lan,wan,ppp")]
    net: Vec<String>,
    /// Strategies, comma-separated: http10, http11, pipeline, pipeline-deflate;
    /// and a real browser as extra rows: chromium-h1 (headless Chromium,
    /// HTTP/1.1, 6 connections; chromium-h2/-h3 need a TLS server).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "http10,http11,pipeline,pipeline-deflate"
    )]
    strategy: Vec<String>,
    /// Tests, comma-separated: first, revalidate (revalidate runs after
    /// first with the same, warm, cache).
    #[arg(long, value_delimiter = ',', default_value = "first,revalidate")]
    tests: Vec<String>,
    /// Repetitions on every network (default 5; PPP repetitions run
    /// concurrently, see --ppp-parallel).
    #[arg(long)]
    reps: Option<u32>,
    /// Repetitions on the LAN only (overrides --reps there): LAN times of
    /// 60-200 ms vary with the machine's load, so their intervals need more
    /// repetitions than the link-bound WAN and PPP cells.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    lan_reps: Option<u32>,
    /// PPP repetitions run at once, each on its own link and server
    /// (1 = one after another). PPP runs are rate-bound, not CPU-bound.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=8))]
    ppp_parallel: u32,
    /// Quick check: lan and wan only, one repetition (under a minute).
    #[arg(long)]
    quick: bool,
    /// Server: pagewire (this binary's `serve`), nginx or apache (Apache httpd
    /// 2.4, prefork MPM; its workers run as www-data, who must be able to read
    /// the output directory); nginx and Apache get generated configurations.
    #[arg(long, default_value = "pagewire")]
    server: String,
    /// Any other server, run with `sh -c` in the server namespace; `{root}`
    /// is replaced by the document root, `{port}` by the port (80), `{addr}`
    /// by the server address.
    #[arg(long)]
    server_cmd: Option<String>,
    #[command(flatten)]
    common: Common,
    /// Seed of the Microscape page (and of link loss/jitter).
    #[arg(long, default_value_t = crate::cmd::DEFAULT_SEED)]
    seed: u64,
    /// Link options, laid over every network's profile.
    #[command(flatten)]
    link: super::linkopts::LinkOptions,
    /// Request headers of the robot: libwww-1997 (paper-sized, ~190-byte
    /// requests) or minimal (~90 bytes).
    #[arg(long, value_name = "PROFILE", default_value = "libwww-1997")]
    request_profile: String,
    /// HTTP/1.0 revalidation: get-head (unconditional page GET + 42 HEADs,
    /// libwww 4.1D, the default), conditional-get-head, conditional.
    #[arg(long, value_name = "STYLE", default_value = "get-head")]
    http10_revalidation: String,
    /// Skip Table 3's initial-robot runs (1 s flush timer, no explicit
    /// flush, GET + HEAD revalidation), made on the LAN by default.
    #[arg(long)]
    no_initial: bool,
    /// Leave Nagle's algorithm on (no TCP_NODELAY) in the robot and the
    /// server (`--nagle` or `--nagle both`), or on one side only (`client`,
    /// `server`). The server side: pagewire (`serve --nagle`) or nginx
    /// (`tcp_nodelay off`); Apache always sets TCP_NODELAY. Paper 001
    /// turned it off in both and looked at the difference; with
    /// `--baseline RESULTS_JSON` of the same bench without `--nagle`, the
    /// Nagle sentences are judged against it.
    #[arg(long, value_name = "SIDE", num_args = 0..=1, default_missing_value = "both")]
    nagle: Option<String>,
    /// Flush policy of the pagewire server: when-idle (hold pipelined
    /// responses until no request is left, paper 001's buffering; the
    /// default) or each-response (one write per response, as a server
    /// without response buffering).
    #[arg(long, value_name = "POLICY")]
    server_flush: Option<String>,
    /// Revalidation of browser strategies: validate (every object, with
    /// `Cache-Control: max-age=0`, like the robot) or heuristic (a plain
    /// new visit: Chromium's heuristic freshness decides what is sent).
    #[arg(long, value_name = "HOW", default_value = "validate")]
    browser_revalidation: String,
    /// The page: `original` (paper 001's test page) or `css` (the page
    /// after its section 9: 22 images replaced by HTML+CSS, 3 half
    /// replaced, GIFs converted to PNG, animations to APNG).
    #[arg(long, default_value = "original")]
    page: pagewire_site::microscape::Variant,
    /// With `--page css`: results.json of a run of the original page on the
    /// same networks; the section-9 comparison and claims are printed and
    /// written to section9.txt.
    #[arg(long, value_name = "RESULTS_JSON")]
    baseline: Option<PathBuf>,
    /// Range mode for the pipelining strategies ("poor man's
    /// multiplexing", paper 001): first `Range: bytes=0-(N-1)` of every
    /// image, then the rest of each once all first parts are in; the time
    /// to all metadata is recorded (metadata_s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    range_first: Option<u64>,
    /// WAN round-trip-time sweep, e.g. 20ms,50ms,90ms,200ms,400ms: after
    /// the plan, http10 and pipeline (of --strategy) on the WAN profile at
    /// each RTT, --reps repetitions (default 5) of each of --tests. Extra
    /// runs tagged `sweep_rtt_ms`, read only by the claim "the higher the
    /// latency, the better HTTP/1.1 performed" and the sweep table.
    #[arg(long, value_name = "RTTS", value_delimiter = ',', value_parser = super::positive_duration, allow_hyphen_values = true)]
    rtt_sweep: Vec<std::time::Duration>,
    /// Measure a recorded site (WARC or HAR with bodies, e.g. from
    /// `pagewire record`) instead of the Microscape page: served by
    /// `pagewire serve --replay FILE --replay-deflate`, every recorded name
    /// resolved to the server namespace; same tables and report.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// With --replay: the page's recorded URL (default: the first recorded
    /// 200 GET of an HTML page).
    #[arg(long, value_name = "URL", requires = "replay")]
    replay_page: Option<String>,
    /// Competing traffic: N bulk TCP downloads (1-16) through the same link
    /// during every load, opened WARMUP (default 5s) before it so they fill
    /// the queue (the bufferbloat set-up); their packets are left out of the
    /// run's counters and pcap. Robot strategies only.
    #[arg(long, value_name = "N[,WARMUP]")]
    bulk: Option<String>,
}

#[derive(clap::Args)]
pub struct Section9Args {
    /// results.json of a run of the original page.
    #[arg(long, value_name = "RESULTS_JSON")]
    baseline: PathBuf,
    /// results.json of a `bench --page css` run on the same networks.
    #[arg(long, value_name = "RESULTS_JSON")]
    css_results: PathBuf,
    /// Seed of the Microscape page both runs used.
    #[arg(long, default_value_t = crate::cmd::DEFAULT_SEED)]
    seed: u64,
    /// Directory to write section9.txt into (default: print only).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ConnLengthArgs {
    /// Quick check: local and remote, two buffer sizes, five lengths, three
    /// trials (about a minute).
    #[arg(long)]
    quick: bool,
    /// Trials per point (default: ten, the paper's number; --quick: three).
    #[arg(long)]
    reps: Option<u32>,
    /// TCP flavour: `1997` (the default for this suite: the paper's TCP,
    /// approximated: initcwnd 2, Reno, no SACK/timestamps/window scaling);
    /// `linux` leaves the kernel's.
    #[arg(long, default_value = "1997")]
    tcp: String,
    /// The remote links' drop-tail router queue, e.g. `16p` (packets) or
    /// `64kb`; the local link keeps its own. Default: the era's router
    /// queue (see docs/conn-length.md); `1000p` is the t1 profile's.
    #[arg(long)]
    queue: Option<String>,
    /// Connection lengths, comma-separated, e.g. `128K,1M,4M` (K/M binary).
    /// Default: the plan's (256 B to 4 MB, doubling, and 20 KB).
    #[arg(long, value_delimiter = ',', value_name = "LENGTHS")]
    lengths: Vec<String>,
    /// Configurations, comma-separated: local, remote, remote-536.
    /// Default: all three (--quick: local and remote).
    #[arg(long, value_delimiter = ',', value_name = "CONFIGS")]
    configs: Vec<String>,
    /// Socket buffer (maximum window) sizes, comma-separated, e.g.
    /// `4K,64K,default` (1K..64M or `default`, the kernel's autotuned
    /// buffer). Default: the plan's (4K-64K and default; --quick: 4K and
    /// default).
    #[arg(long, value_delimiter = ',', value_name = "SIZES")]
    buffers: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
pub struct GetallArgs {
    /// Quick check (about a minute).
    #[arg(long)]
    quick: bool,
    /// Repetitions per cell.
    #[arg(long)]
    reps: Option<u32>,
    /// TCP flavour: `1997` approximates the paper's TCP; `linux` leaves the
    /// kernel's.
    #[arg(long, default_value = "linux")]
    tcp: String,
    /// End hosts the robot imitates: `none` (today's, as they are) or
    /// `1994` (the paper's: a cost per connection and per object, fitted
    /// in docs/getall.md).
    #[arg(long, default_value = "none")]
    hosts: String,
    /// Repetitions of the local cells, which run alone (default: 10;
    /// --quick: 3).
    #[arg(long)]
    local_reps: Option<u32>,
    /// Networks, comma-separated: local, remote (default: both).
    #[arg(long, value_delimiter = ',', value_name = "NETS")]
    nets: Vec<String>,
    /// Methods, comma-separated: http10, persistent, pipelined, getall,
    /// objpack (default: all five; the claims of a method left out are
    /// "not measured").
    #[arg(long, value_delimiter = ',', value_name = "METHODS")]
    methods: Vec<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Args)]
pub struct ListArgs {
    /// As JSON: an array of {suite, paper, claims: [{id, source, quote}]}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    // The suites over links take Ctrl-C their way (see
    // pagewire_lab::interrupt); list, section9 and prefetch keep the default.
    if !matches!(
        a.suite,
        Some(Suite::List(_) | Suite::Section9(_) | Suite::Prefetch(_))
    ) {
        // A normal user runs the links in a user namespace, entered while
        // the process is still single-threaded; what is missing is said
        // before anything (the results directory) is written.
        pagewire_emu::privilege::enter_user_namespace()?;
        pagewire_emu::privilege::check()?;
        pagewire_lab::interrupt::install();
    }
    match a.suite {
        None => microscape(a.microscape),
        Some(Suite::Microscape(m)) => microscape(*m),
        Some(Suite::Section9(s)) => section9(&s),
        Some(Suite::Objpack(o)) => objpack::run(&o),
        Some(Suite::ConnLength(c)) => conn_length(&c),
        Some(Suite::Getall(g)) => getall(&g),
        Some(Suite::Surge(s)) => surge::run(&s),
        Some(Suite::Prefetch(p)) => super::prefetch::simulate(p),
        Some(Suite::List(l)) => list(&l),
    }
}

/// What `--suite` (the alias of `bench SUITE`) accepts.
pub const SUITE_NAMES: &[&str] = &[
    "microscape",
    "section9",
    "objpack",
    "conn-length",
    "getall",
    "load-time",
    "surge",
    "prefetch",
    "list",
];

fn list(l: &ListArgs) -> Result<ExitCode> {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    if l.json {
        let v: Vec<serde_json::Value> = pagewire_lab::registry::catalogue()
            .iter()
            .map(|e| {
                serde_json::json!({
                    "suite": e.suite,
                    "paper": e.paper,
                    "runs": e.runs,
                    "claims": e.claims
                        .iter()
                        .map(|c| serde_json::json!({"id": c.id, "source": c.source, "quote": c.quote}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(so, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for e in pagewire_lab::registry::catalogue() {
        writeln!(so, "{:<12} paper {}: {}", e.suite, e.paper, e.runs)?;
        if e.claims.is_empty() {
            writeln!(so, "    (no claim table of its own)")?;
        }
        for c in e.claims {
            let (id, source, quote) = (c.id, c.source, c.quote);
            let q: String = quote.split_whitespace().collect::<Vec<_>>().join(" ");
            let q = if q.chars().count() > 100 {
                format!("{}...", q.chars().take(97).collect::<String>())
            } else {
                q
            };
            writeln!(so, "    {id:<32} {source}: \"{q}\"")?;
        }
    }
    writeln!(
        so,
        "\nRun one with `pagewire bench SUITE` (`pagewire bench SUITE --help` for its flags)."
    )?;
    Ok(ExitCode::SUCCESS)
}

fn parse_list<T>(what: &str, xs: &[String]) -> Result<Vec<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    let mut out = Vec::new();
    for x in xs.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        out.push(
            x.parse::<T>()
                .map_err(|e| super::usage(format!("--{what}: {e}")))?,
        );
    }
    if out.is_empty() {
        crate::usage_bail!("--{what}: nothing to run");
    }
    Ok(out)
}

/// `bench section9 --baseline ORIGINAL/results.json --css-results
/// CSS/results.json`: the section-9 comparison of two finished runs.
fn section9(a: &Section9Args) -> Result<ExitCode> {
    let base = load_runs(&a.baseline)?;
    let css_runs = load_runs(&a.css_results)?;
    let options = pagewire_site::microscape::Options {
        seed: a.seed,
        lowercase: false,
    };
    let (_, c) = pagewire_site::microscape::css::generate(options)?;
    let original = pagewire_site::microscape::generate(options);
    let s9 = pagewire_lab::microscape::section9::Section9 {
        original: &base,
        css: &css_runs,
        composition: &c,
        html_bytes: original.html.len(),
        html_deflate_bytes: pagewire_site::microscape::zlib_default_size(&original.html),
    };
    let text = s9.render();
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out)?;
        std::fs::write(out.join("section9.txt"), &text)
            .with_context(|| format!("write {}/section9.txt", out.display()))?;
    }
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The runs of an earlier bench's results.json.
fn load_runs(path: &std::path::Path) -> Result<Vec<pagewire_lab::model::RunRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--baseline {}", path.display()))?;
    let mut v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--baseline {}: not JSON", path.display()))?;
    serde_json::from_value(v["runs"].take())
        .with_context(|| format!("--baseline {}: not a bench results.json", path.display()))
}

/// Link configuration per network: the profile (with the queue discipline
/// `--net` named, e.g. `lan100+codel`) plus the user's overrides.
fn link_factory(
    a: &MicroscapeArgs,
    profiles: &std::collections::BTreeMap<Net, String>,
) -> Result<Box<dyn Fn(Net) -> Result<LinkConfig> + Send + Sync>> {
    let overrides = a.link.parse().map_err(super::usage_from)?;
    let seed = a.seed;
    let profiles = profiles.clone();
    let make = move |net: Net| {
        let profile = profiles.get(&net).map_or(net.name(), String::as_str);
        overrides.config(profile, seed)
    };
    // Validate once up front so a bad flag fails before anything starts.
    for net in Net::ALL {
        make(net).map_err(super::usage_from)?;
    }
    Ok(Box::new(make))
}

/// `--net`: every profile of `pagewire link --net` (paper 001's lan, wan
/// and ppp, and lan100, t1, none), each optionally with a queue discipline
/// (`lan100+codel`); a network at most once. Returns the networks and the
/// full profile name of each.
fn parse_nets(xs: &[String]) -> Result<(Vec<Net>, std::collections::BTreeMap<Net, String>)> {
    let mut nets = Vec::new();
    let mut profiles = std::collections::BTreeMap::new();
    for x in xs.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let base = x.split_once('+').map_or(x, |(b, _)| b);
        let net: Net = base
            .parse()
            .map_err(|e| super::usage(format!("--net: {e}")))?;
        pagewire_link::LinkConfig::profile(x)
            .map_err(|e| super::usage(format!("--net {x}: {e}")))?;
        if profiles.insert(net, x.to_string()).is_some() {
            crate::usage_bail!("--net names {base} twice (one queue discipline per network)");
        }
        nets.push(net);
    }
    if nets.is_empty() {
        crate::usage_bail!("--net: nothing to run");
    }
    Ok((nets, profiles))
}

/// `bench` / `bench microscape`: paper 001's Tables 3-9.
fn microscape(a: MicroscapeArgs) -> Result<ExitCode> {
    let (mut nets, profiles) = parse_nets(&a.net)?;
    if a.quick {
        nets.retain(|n| *n != Net::Ppp);
        if nets.is_empty() {
            crate::usage_bail!("--quick leaves out ppp; --net left nothing");
        }
    }
    let strategies: Vec<Strategy> = parse_list("strategy", &a.strategy)?;
    pagewire_lab::microscape::chromium::preflight(&strategies)?;
    let tests: Vec<Test> = parse_list("tests", &a.tests)?;
    if tests.contains(&Test::Revalidate) && !tests.contains(&Test::First) {
        crate::usage_bail!("--tests revalidate needs first as well: revalidation runs on the cache the first-time run filled");
    }
    let mut reps = match (a.reps, a.quick) {
        (Some(0), _) => crate::usage_bail!("--reps must be at least 1"),
        (Some(n), _) => Reps::uniform(n),
        (None, true) => Reps::QUICK,
        (None, false) => Reps::DEFAULT,
    };
    if let Some(n) = a.lan_reps {
        reps.lan = n;
    }
    let server = match (&a.server_cmd, a.server.as_str()) {
        (Some(cmd), _) => ServerKind::Command(cmd.clone()),
        (None, "pagewire") => ServerKind::Pagewire {
            exe: std::env::current_exe().context("find this pagewire binary")?,
        },
        (None, "nginx") => ServerKind::Nginx,
        (None, "apache") => ServerKind::Apache,
        (None, other) => {
            crate::usage_bail!(
                "--server: expected pagewire, nginx or apache (or --server-cmd), got {other:?}"
            )
        }
    };
    let bulk = match &a.bulk {
        Some(s) => {
            if strategies.iter().any(|s| s.is_browser()) {
                crate::usage_bail!(
                    "--bulk runs beside the robot's loads; drop the chromium strategies"
                );
            }
            Some(
                pagewire_lab::microscape::bulk::BulkSpec::parse(s)
                    .map_err(|e| super::usage(e.to_string()))?,
            )
        }
        None => None,
    };
    let link_config = link_factory(&a, &profiles)?;
    let request_profile: pagewire_client::RequestProfile = a
        .request_profile
        .parse()
        .map_err(|e| super::usage(format!("--request-profile: {e}")))?;
    let http10_revalidation: pagewire_client::Revalidation = a
        .http10_revalidation
        .parse()
        .map_err(|e| super::usage(format!("--http10-revalidation: {e}")))?;
    let nagle: NagleSides = match &a.nagle {
        None => NagleSides::Off,
        Some(s) => s
            .parse()
            .map_err(|e| super::usage(format!("--nagle: {e}")))?,
    };
    if nagle.server() && !matches!(server, ServerKind::Pagewire { .. } | ServerKind::Nginx) {
        crate::usage_bail!(
            "--nagle {} sets the pagewire or nginx server's sockets; it cannot change {} \
             (Apache always sets TCP_NODELAY); use --nagle client",
            a.nagle.as_deref().unwrap_or("both"),
            server.label()
        );
    }
    let server_flush = match a.server_flush.as_deref() {
        None | Some("when-idle") => None,
        Some("each-response") if matches!(server, ServerKind::Pagewire { .. }) => {
            Some("each-response".to_string())
        }
        Some("each-response") => crate::usage_bail!(
            "--server-flush sets the pagewire server's flush policy; it cannot change {}",
            server.label()
        ),
        Some(other) => {
            crate::usage_bail!("--server-flush: expected when-idle or each-response, got {other:?}")
        }
    };
    let replay = match &a.replay {
        Some(file) => {
            if !matches!(server, ServerKind::Pagewire { .. }) {
                crate::usage_bail!("--replay serves the archive with pagewire serve --replay; drop --server/--server-cmd");
            }
            let page =
                pagewire_lab::microscape::replay::ReplayPage::load(file, a.replay_page.as_deref())
                    .with_context(|| format!("--replay {}", file.display()))?;
            if page.page_is_https() {
                let plain: Vec<String> = strategies
                    .iter()
                    .filter(|s| !s.is_browser() && !s.needs_tls())
                    .map(|s| s.to_string())
                    .collect();
                if !plain.is_empty() {
                    crate::usage_bail!(
                        "--replay: the page {} is https, and the robot speaks HTTP/1.x only in \
                         plain text: --strategy {} cannot ask for it (use h2, h3 or chromium-*)",
                        page.url,
                        plain.join(",")
                    );
                }
            }
            eprintln!(
                "replaying {}: page {}, {} objects of its origin ({} of them named by its HTML \
                 and stylesheets, which the robot fetches)",
                file.display(),
                page.url,
                page.expected.len(),
                page.robot_expected.len()
            );
            Some(page)
        }
        None => None,
    };
    let browser_revalidation = a
        .browser_revalidation
        .parse()
        .map_err(|e| super::usage(format!("--browser-revalidation: {e}")))?;
    let baseline = match &a.baseline {
        Some(p) if a.page == Variant::Css => Some(load_runs(p)?),
        Some(p) if nagle != NagleSides::Off => {
            // Read now, so a wrong file fails before the runs; the claims
            // read it again from the command line.
            load_runs(p)?;
            None
        }
        Some(_) => {
            crate::usage_bail!("--baseline compares a --page css run with an original-page run, or a --nagle run with the same bench without --nagle")
        }
        None => None,
    };
    let mut sweep_us = Vec::new();
    if !a.rtt_sweep.is_empty() {
        if !strategies
            .iter()
            .any(|s| pagewire_lab::microscape::plan::SWEEP_STRATEGIES.contains(s))
        {
            crate::usage_bail!("--rtt-sweep runs http10 and pipeline: --strategy has neither");
        }
        if a.replay.is_some() {
            crate::usage_bail!("--rtt-sweep measures the Microscape page; drop --replay");
        }
        for d in &a.rtt_sweep {
            let x = d.as_micros();
            if x == 0 || x > 10_000_000 {
                crate::usage_bail!("--rtt-sweep {d:?}: each RTT must be above 0 and at most 10 s");
            }
            sweep_us.push(x as u32);
        }
    }
    let out = a.common.out_dir("bench")?;
    let mut plan = Plan::new(&nets, &strategies, &tests, reps).with_ppp_parallel(a.ppp_parallel);
    if !a.no_initial && nets.contains(&Net::Lan) {
        plan = plan.with_initial(&[Net::Lan]);
    }
    if !sweep_us.is_empty() {
        plan = plan.with_rtt_sweep(&sweep_us, reps.wan);
    }
    eprint!("{}", plan.describe());
    eprintln!("results: {}", out.display());
    if matches!(server, ServerKind::Nginx) && strategies.contains(&Strategy::PipelineDeflate) {
        eprintln!(
            "note: nginx cannot serve a precompressed deflate variant (gzip_static serves .gz only), \
             so pipeline-deflate gets identity bodies from nginx"
        );
    }
    if matches!(server, ServerKind::Apache) && strategies.contains(&Strategy::PipelineDeflate) {
        eprintln!(
            "note: Apache cannot serve a precompressed deflate variant (mod_deflate makes gzip only), \
             so pipeline-deflate gets identity bodies from Apache"
        );
    }
    let command: Vec<String> = pagewire_emu::command_line();
    let cfg = BenchConfig {
        plan: plan.clone(),
        server: server.clone(),
        out_dir: out.clone(),
        seed: a.seed,
        command: command.clone(),
        link_config,
        progress: !a.common.no_progress,
        request_profile,
        http10_revalidation,
        nagle,
        server_flush,
        browser_revalidation,
        replay: replay.clone(),
        page: a.page,
        range_first: a.range_first,
        bulk,
    };
    let mut provenance = Provenance::begin("microscape", command);
    let outcomes = runner::run(&cfg)?;
    provenance.finish();
    let interrupted_by = outcomes.interrupted_by;
    let comp = outcomes.site.composition();
    let css = match a.page {
        Variant::Css => Some(pagewire_site::microscape::css::generate(
            pagewire_site::microscape::Options {
                seed: a.seed,
                lowercase: false,
            },
        )?),
        Variant::Original => None,
    };
    let mut note = String::from(
        "The Microscape page is SYNTHETIC (generated from the seed to match the composition \
         published in paper 001; the original was never published).",
    );
    if css.is_some() {
        note.push_str(
            " This run fetched the section-9 CSS+PNG page (20 images): the paper's Tables 4-9 \
             and claims below are for the original page and are printed for reference only; \
             section9.txt (with --baseline) compares the two pages.",
        );
    }
    if matches!(server, ServerKind::Nginx) {
        note.push_str(
            " nginx has no precompressed deflate: pipeline-deflate received identity bodies.",
        );
    }
    if matches!(server, ServerKind::Apache) {
        note.push_str(
            " Apache has no precompressed deflate: pipeline-deflate received identity bodies.",
        );
    }
    let (page_table, page_facts) = match &replay {
        Some(r) => {
            note = format!(
                "A RECORDED site replayed from {} (page {}), not the Microscape page: the paper's \
                 columns are its Microscape figures, printed for scale; the claims are read on this page.",
                a.replay.as_deref().unwrap_or(&r.archive).display(),
                r.url
            );
            (r.table(), None)
        }
        None => match &css {
            Some((_, c)) => (
                c.table(),
                Some(PageFacts {
                    html_bytes: c.html_bytes,
                    html_deflate_bytes: c.html_deflate_bytes,
                    ratio_mixed_case: c.html_deflate_bytes as f64 / c.html_bytes as f64,
                    ratio_lower_case: comp.ratio_lower_case,
                }),
            ),
            None => (
                comp.table(),
                Some(PageFacts {
                    html_bytes: comp.html_bytes,
                    html_deflate_bytes: comp.html_deflate_bytes,
                    ratio_mixed_case: comp.ratio_mixed_case,
                    ratio_lower_case: comp.ratio_lower_case,
                }),
            ),
        },
    };
    if replay.is_some() {
        provenance.made_by.push_str(" --replay");
    }
    provenance.seeds = [("page".to_string(), a.seed), ("link".to_string(), a.seed)].into();
    provenance.repetitions = plan
        .nets
        .iter()
        .map(|n| (n.name().to_string(), plan.reps.get(*n)))
        .collect();
    provenance.link_configs = outcomes.link_configs.clone();
    provenance.request_profile = Some(request_profile.name().to_string());
    provenance.page_variant = Some(match &replay {
        Some(r) => format!("replay of {}", r.url),
        None => a.page.name().to_string(),
    });
    provenance.server = server.label();
    match &server {
        ServerKind::Nginx => provenance.add_peer("nginx", "nginx", &["-v"]),
        ServerKind::Apache => {
            provenance.add_peer("apache2", pagewire_lab::surge::servers::APACHE_BIN, &["-v"])
        }
        ServerKind::Pagewire { .. } | ServerKind::Command(_) => {}
    }
    if plan.strategies.iter().any(|s| s.is_browser()) {
        if let Some(exe) = pagewire_lab::microscape::chromium::find_chromium() {
            provenance.add_peer("chromium", exe, &["--version"]);
        }
    }
    provenance.link_lateness_rule = Some(pagewire_lab::results::lateness_rule());
    if let Some(b) = bulk {
        note.push_str(&format!(
            " COMPETING TRAFFIC (--bulk): every load shared the link with {} bulk TCP download(s) \
             opened {} s before it (each run's cross_traffic); packets, bytes and retransmissions \
             are the page's, times are not the paper's set-up, so the claims below are not \
             comparable with the paper's.",
            b.flows, b.warmup_s
        ));
    }
    provenance.note = note;
    let results = Results::new(
        provenance,
        page_table,
        page_facts,
        plan,
        outcomes.link_configs,
        outcomes.wall_s,
        outcomes.runs,
    );
    results.write(&out)?;
    let mut report = results.render_text();
    if let Some(n) = a.range_first {
        let text = pagewire_lab::microscape::extras::range_table(&results.runs, n);
        std::fs::write(out.join("range.txt"), &text)
            .with_context(|| format!("write {}/range.txt", out.display()))?;
        report.push('\n');
        report.push_str(&text);
    }
    let compression = link_factory(&a, &profiles)?(Net::Ppp)?.compression;
    if compression != pagewire_link::LinkCompression::None {
        let text = pagewire_lab::microscape::extras::line_table(&results.runs, compression.name());
        std::fs::write(out.join("line.txt"), &text)
            .with_context(|| format!("write {}/line.txt", out.display()))?;
        report.push('\n');
        report.push_str(&text);
    }
    if let (Some((_, c)), Some(base)) = (&css, &baseline) {
        let original = pagewire_site::microscape::generate(pagewire_site::microscape::Options {
            seed: a.seed,
            lowercase: false,
        });
        let s9 = pagewire_lab::microscape::section9::Section9 {
            original: base,
            css: &results.runs,
            composition: c,
            html_bytes: original.html.len(),
            html_deflate_bytes: pagewire_site::microscape::zlib_default_size(&original.html),
        };
        let text = s9.render();
        std::fs::write(out.join("section9.txt"), &text)
            .with_context(|| format!("write {}/section9.txt", out.display()))?;
        report.push('\n');
        report.push_str(&text);
    }
    a.common.emit(&out, &report)?;
    a.common.wrote(&format!(
        "Wrote {0}/results.json, results.csv, report.txt, report.html and {1} pcaps in {0}/pcaps/.",
        out.display(),
        results.runs.len()
    ));
    if let Some(sig) = interrupted_by.or(pagewire_lab::interrupt::signal()) {
        eprintln!(
            "pagewire bench: interrupted by signal {sig} after {} of {} runs; the results above cover those runs only",
            results.runs.len(),
            results.plan.runs.len()
        );
        return Ok(ExitCode::from(130));
    }
    let failed = results.runs.iter().filter(|r| !r.ok()).count();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `bench conn-length`: its own configurations (local, remote,
/// remote-536); `--tcp` defaults to 1997 here (the paper's TCP) and
/// `--queue` sets the remote links' drop-tail router queue.
fn conn_length(a: &ConnLengthArgs) -> Result<ExitCode> {
    let tcp1997 = parse_tcp(&a.tcp)?;
    if a.reps == Some(0) {
        crate::usage_bail!("--reps must be at least 1");
    }
    let router_queue = a
        .queue
        .as_deref()
        .map(pagewire_link::config::parse_queue)
        .transpose()
        .map_err(|e| crate::cmd::usage(format!("--queue: {e}")))?;
    let mut buffers = Vec::new();
    for b in &a.buffers {
        let b: pagewire_lab::connlen::Buffer = b
            .trim()
            .parse()
            .map_err(|e: String| crate::cmd::usage(format!("--buffers: {e}")))?;
        if !buffers.contains(&b) {
            buffers.push(b);
        }
    }
    buffers.sort();
    let mut lengths = Vec::new();
    for l in &a.lengths {
        lengths.push(parse_length(l).map_err(|e| crate::cmd::usage(format!("--lengths: {e}")))?);
    }
    let mut configs = Vec::new();
    for c in &a.configs {
        let c: pagewire_lab::connlen::Config = c
            .trim()
            .parse()
            .map_err(|e: String| crate::cmd::usage(format!("--configs: {e}")))?;
        configs.push(c);
    }
    let out = a.common.out_dir("bench-conn-length")?;
    let r = pagewire_lab::connlen::suite(&pagewire_lab::connlen::SuiteOptions {
        quick: a.quick,
        tcp1997,
        router_queue,
        trials: a.reps,
        buffers: (!buffers.is_empty()).then_some(buffers),
        lengths: (!lengths.is_empty()).then_some(lengths),
        configs: (!configs.is_empty()).then_some(configs),
        out: out.clone(),
        command: pagewire_emu::command_line(),
        progress: !a.common.no_progress,
        parallel: pagewire_lab::connlen::DEFAULT_PARALLEL,
    })?;
    a.common.emit(&out, &r.render_text())?;
    a.common.wrote(&format!(
        "Wrote results.json, results.csv, report.txt and the figures in {}.",
        out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// A length as `--lengths` takes it: bytes, or K/M (binary: 1K = 1024).
fn parse_length(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.strip_suffix(['K', 'k']) {
        Some(n) => (n, 1u64 << 10),
        None => match t.strip_suffix(['M', 'm']) {
            Some(n) => (n, 1u64 << 20),
            None => (t, 1),
        },
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("bad length {s:?} (e.g. 20K, 4M, 65536)"))
}

/// `bench getall`: load time vs number and size of inline images.
fn getall(a: &GetallArgs) -> Result<ExitCode> {
    let tcp1997 = parse_tcp(&a.tcp)?;
    if a.reps == Some(0) {
        crate::usage_bail!("--reps must be at least 1");
    }
    if a.local_reps == Some(0) {
        crate::usage_bail!("--local-reps must be at least 1");
    }
    let hosts: pagewire_lab::loadtime::Hosts = a.hosts.parse().map_err(crate::cmd::usage)?;
    let mut nets = Vec::new();
    for n in &a.nets {
        let n: pagewire_lab::loadtime::Net = n
            .trim()
            .parse()
            .map_err(|e: String| crate::cmd::usage(format!("--nets: {e}")))?;
        if !nets.contains(&n) {
            nets.push(n);
        }
    }
    let mut methods = Vec::new();
    for m in &a.methods {
        let m: pagewire_lab::loadtime::Method = m
            .trim()
            .parse()
            .map_err(|e: String| crate::cmd::usage(format!("--methods: {e}")))?;
        if !methods.contains(&m) {
            methods.push(m);
        }
    }
    let out = a.common.out_dir("bench-getall")?;
    let r = pagewire_lab::loadtime::suite(&pagewire_lab::loadtime::SuiteOptions {
        quick: a.quick,
        tcp1997,
        reps: a.reps,
        local_reps: a.local_reps,
        hosts,
        nets: (!nets.is_empty()).then_some(nets),
        methods: (!methods.is_empty()).then_some(methods),
        out: out.clone(),
        command: pagewire_emu::command_line(),
        progress: !a.common.no_progress,
        exe: std::env::current_exe().context("find this pagewire binary")?,
    })?;
    a.common.emit(&out, &r.render_text())?;
    a.common.wrote(&format!(
        "Wrote results.json, results.csv, report.txt and the figures in {}.",
        out.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// `--tcp`: 1997 (the papers' TCP, approximated) or linux.
fn parse_tcp(s: &str) -> Result<bool> {
    match s {
        "1997" => Ok(true),
        "linux" | "default" => Ok(false),
        other => crate::usage_bail!("--tcp {other:?}: expected 1997 or linux"),
    }
}
