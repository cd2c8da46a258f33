//! `pagewire bench`: the main job — paper 001's Tables 3-9 on this machine.
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use pagewire_emu::LinkConfig;
use pagewire_lab::claims::PageFacts;
use pagewire_lab::plan::{Plan, Reps};
use pagewire_lab::report::{utc_now, Provenance, Results};
use pagewire_lab::runner::{self, BenchConfig, ServerKind};
use pagewire_lab::{Net, Strategy, Test};
use pagewire_site::microscape::Variant;

#[path = "bench_objpack.rs"]
mod objpack;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    pagewire bench                      # all networks, 5 repetitions (~8 min), results in ./bench-YYYYMMDD-HHMMSS/\n  \
    pagewire bench --quick              # lan and wan, one repetition (< 1 min)\n  \
    pagewire bench --server nginx --net lan,wan\n  \
    pagewire bench --server-cmd 'python3 -m http.server {port} -d {root}' --net lan\n  \
    pagewire bench --tcp 1997 --mss 536")]
pub struct Args {
    /// Experiment suite: `microscape` (paper 001), `objpack` (paper 002:
    /// lan100 and wan; `--reps` sets per group, `--quick` 2 sets on lan100),
    /// `conn-length` or `getall` (Padmanabhan & Mogul, Figures 2-3 and 5-8;
    /// these two take --quick, --reps, --tcp, --out; conn-length runs
    /// `--tcp 1997` unless told `--tcp linux`, and takes `--queue Np` for the
    /// remote links' router queue, e.g. 16p), `surge` (paper 004:
    /// the [surge] options below), `section9` (paper 001 section 9 from two
    /// finished runs: --baseline and --css-results).
    #[arg(long, default_value = "microscape")]
    suite: String,
    /// Networks, comma-separated: lan, wan, ppp.
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
    /// PPP repetitions run at once, each on its own link and server
    /// (1 = one after another). PPP runs are rate-bound, not CPU-bound.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=8))]
    ppp_parallel: u32,
    /// Quick check: lan and wan only, one repetition (under a minute).
    #[arg(long)]
    quick: bool,
    /// Server: pagewire (this binary's `serve`) or nginx (generated config).
    #[arg(long, default_value = "pagewire")]
    server: String,
    /// Any other server, run with `sh -c` in the server namespace; `{root}`
    /// is replaced by the document root, `{port}` by the port (80), `{addr}`
    /// by the server address.
    #[arg(long)]
    server_cmd: Option<String>,
    /// Results directory (default: a fresh ./bench-YYYYMMDD-HHMMSS).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the Microscape page (and of link loss/jitter); with --suite surge, of the SURGE request stream.
    #[arg(long, default_value_t = pagewire_site::microscape::DEFAULT_SEED)]
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
    /// Leave Nagle's algorithm on in the robot and the pagewire server
    /// (`serve --nagle`; paper 001 turned it off in both and looked at the
    /// difference).
    #[arg(long)]
    nagle: bool,
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
    /// `--suite section9`: results.json of a finished `--page css` run, to
    /// compare with --baseline without running anything.
    #[arg(long, value_name = "RESULTS_JSON")]
    css_results: Option<PathBuf>,
    /// Range mode for the pipelining strategies ("poor man's
    /// multiplexing", paper 001): first `Range: bytes=0-(N-1)` of every
    /// image, then the rest of each once all first parts are in; the time
    /// to all metadata is recorded (metadata_s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    range_first: Option<u64>,
    /// Don't draw the progress bar.
    #[arg(long)]
    no_progress: bool,
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
    #[command(flatten)]
    surge: super::bench_surge::SurgeArgs,
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
                .map_err(|e| anyhow::anyhow!("--{what}: {e}"))?,
        );
    }
    if out.is_empty() {
        bail!("--{what}: nothing to run");
    }
    Ok(out)
}

/// `--suite section9 --baseline ORIGINAL/results.json --css-results
/// CSS/results.json`: the section-9 comparison of two finished runs.
fn section9(a: &Args) -> Result<ExitCode> {
    let (Some(base), Some(css_runs)) = (&a.baseline, &a.css_results) else {
        bail!(
            "--suite section9 needs --baseline (original page) and --css-results (--page css run)"
        );
    };
    let base = load_runs(base)?;
    let css_runs = load_runs(css_runs)?;
    let options = pagewire_site::microscape::Options {
        seed: a.seed,
        lowercase: false,
    };
    let (_, c) = pagewire_site::microscape::css::generate(options)?;
    let original = pagewire_site::microscape::generate(options);
    let s9 = pagewire_lab::section9::Section9 {
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

/// Link configuration per network: the profile plus the user's overrides.
fn link_factory(a: &Args) -> Result<Box<dyn Fn(Net) -> Result<LinkConfig> + Send + Sync>> {
    let overrides = a.link.parse()?;
    let seed = a.seed;
    let make = move |net: Net| overrides.config(net.name(), seed);
    // Validate once up front so a bad flag fails before anything starts.
    make(Net::Lan)?;
    Ok(Box::new(make))
}

pub fn run(a: Args) -> Result<ExitCode> {
    if a.suite == "surge" {
        return super::bench_surge::run(
            &a.surge,
            &a.server,
            a.quick,
            a.out,
            !a.no_progress,
            a.seed,
        );
    }
    if a.suite == "conn-length" {
        return conn_length(&a);
    }
    if a.suite == "getall" {
        return getall(&a);
    }
    if a.suite == "objpack" {
        return objpack::run(&a);
    }
    if a.suite == "section9" {
        return section9(&a);
    }
    if a.suite != "microscape" {
        bail!(
            "--suite: `microscape` (paper 001), `section9` (paper 001, from two runs), `objpack` (paper 002), `conn-length`, `getall` or `surge` (paper 004), got {:?}",
            a.suite
        );
    }
    let mut nets: Vec<Net> = parse_list("net", &a.net)?;
    if a.quick {
        nets.retain(|n| *n != Net::Ppp);
        if nets.is_empty() {
            bail!("--quick runs lan and wan only; --net left nothing");
        }
    }
    let strategies: Vec<Strategy> = parse_list("strategy", &a.strategy)?;
    pagewire_lab::chromium::run::preflight(&strategies)?;
    let tests: Vec<Test> = parse_list("tests", &a.tests)?;
    if tests.contains(&Test::Revalidate) && !tests.contains(&Test::First) {
        bail!("--tests revalidate needs first as well: revalidation runs on the cache the first-time run filled");
    }
    let reps = match (a.reps, a.quick) {
        (Some(0), _) => bail!("--reps must be at least 1"),
        (Some(n), _) => Reps::uniform(n),
        (None, true) => Reps::QUICK,
        (None, false) => Reps::DEFAULT,
    };
    let server = match (&a.server_cmd, a.server.as_str()) {
        (Some(cmd), _) => ServerKind::Command(cmd.clone()),
        (None, "pagewire") => ServerKind::Pagewire {
            exe: std::env::current_exe().context("find this pagewire binary")?,
        },
        (None, "nginx") => ServerKind::Nginx,
        (None, other) => {
            bail!("--server: expected pagewire or nginx (or --server-cmd), got {other:?}")
        }
    };
    let link_config = link_factory(&a)?;
    let (date, stamp) = utc_now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench-{stamp}")));
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let request_profile: pagewire_client::RequestProfile = a
        .request_profile
        .parse()
        .map_err(|e| anyhow::anyhow!("--request-profile: {e}"))?;
    let http10_revalidation: pagewire_client::Revalidation = a
        .http10_revalidation
        .parse()
        .map_err(|e| anyhow::anyhow!("--http10-revalidation: {e}"))?;
    if a.nagle && !matches!(server, ServerKind::Pagewire { .. }) {
        bail!(
            "--nagle sets the pagewire server's sockets; it cannot change {}",
            server.label()
        );
    }
    let replay = match &a.replay {
        Some(file) => {
            if !matches!(server, ServerKind::Pagewire { .. }) {
                bail!("--replay serves the archive with pagewire serve --replay; drop --server/--server-cmd");
            }
            let page = pagewire_lab::replay::ReplayPage::load(file, a.replay_page.as_deref())
                .with_context(|| format!("--replay {}", file.display()))?;
            eprintln!(
                "replaying {}: page {}, {} objects of its origin",
                file.display(),
                page.url,
                page.expected.len()
            );
            Some(page)
        }
        None => None,
    };
    let mut plan = Plan::new(&nets, &strategies, &tests, reps).with_ppp_parallel(a.ppp_parallel);
    if !a.no_initial && nets.contains(&Net::Lan) {
        plan = plan.with_initial(&[Net::Lan]);
    }
    eprint!("{}", plan.describe());
    eprintln!("results: {}", out.display());
    if matches!(server, ServerKind::Nginx) && strategies.contains(&Strategy::PipelineDeflate) {
        eprintln!(
            "note: nginx cannot serve a precompressed deflate variant (gzip_static serves .gz only), \
             so pipeline-deflate gets identity bodies from nginx"
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
        progress: !a.no_progress,
        request_profile,
        http10_revalidation,
        nagle: a.nagle,
        browser_revalidation: a
            .browser_revalidation
            .parse()
            .map_err(|e| anyhow::anyhow!("--browser-revalidation: {e}"))?,
        replay: replay.clone(),
        page: a.page,
        range_first: a.range_first,
    };
    let baseline = match &a.baseline {
        Some(p) if a.page == Variant::Css => Some(load_runs(p)?),
        Some(_) => bail!("--baseline compares a --page css run with an original-page run"),
        None => None,
    };
    let outcomes = runner::run(&cfg)?;
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
    let provenance = Provenance {
        made_by: format!(
            "pagewire {} bench --suite microscape{}",
            env!("CARGO_PKG_VERSION"),
            if replay.is_some() { " --replay" } else { "" }
        ),
        command,
        date_utc: date,
        pagewire_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: a.seed,
        server: server.label(),
        host: host_description(),
        note,
    };
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
    print!("{}", results.render_text());
    if let Some(n) = a.range_first {
        let text = pagewire_lab::extras::range_table(&results.runs, n);
        std::fs::write(out.join("range.txt"), &text)
            .with_context(|| format!("write {}/range.txt", out.display()))?;
        print!("\n{text}");
    }
    let compression = link_factory(&a)?(Net::Ppp)?.compression;
    if compression != pagewire_link::LinkCompression::None {
        let text = pagewire_lab::extras::line_table(&results.runs, compression.name());
        std::fs::write(out.join("line.txt"), &text)
            .with_context(|| format!("write {}/line.txt", out.display()))?;
        print!("\n{text}");
    }
    if let (Some((_, c)), Some(base)) = (&css, &baseline) {
        let original = pagewire_site::microscape::generate(pagewire_site::microscape::Options {
            seed: a.seed,
            lowercase: false,
        });
        let s9 = pagewire_lab::section9::Section9 {
            original: base,
            css: &results.runs,
            composition: c,
            html_bytes: original.html.len(),
            html_deflate_bytes: pagewire_site::microscape::zlib_default_size(&original.html),
        };
        let text = s9.render();
        std::fs::write(out.join("section9.txt"), &text)
            .with_context(|| format!("write {}/section9.txt", out.display()))?;
        print!("\n{text}");
    }
    println!(
        "Wrote {0}/results.json, results.csv, report.txt, report.html and {1} pcaps in {0}/pcaps/.",
        out.display(),
        results.runs.len()
    );
    if let Some(sig) = interrupted_by {
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

/// `--suite conn-length`: its own configurations (local, remote,
/// remote-536); of the link options `--tcp` (default 1997 here, the paper's
/// TCP) and `--queue` (the remote links' drop-tail router queue) apply.
fn conn_length(a: &Args) -> Result<ExitCode> {
    let over = a.link.parse()?;
    let tcp1997 = !a.link.tcp_given() || over.config("lan", a.seed)?.tcp1997;
    let t1 = over.config("t1", a.seed)?;
    let router_queue = a.link.queue_given().then_some(t1.queue);
    let (_, stamp) = utc_now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench-conn-length-{stamp}")));
    let r = pagewire_lab::connlen::suite(&pagewire_lab::connlen::SuiteOptions {
        quick: a.quick,
        tcp1997,
        router_queue,
        trials: a.reps,
        out: out.clone(),
        command: pagewire_emu::command_line(),
        progress: !a.no_progress,
        host: host_description(),
        parallel: pagewire_lab::connlen::DEFAULT_PARALLEL,
    })?;
    print!("{}", r.render_text());
    println!(
        "Wrote results.json, results.csv, report.txt and the figures in {}.",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `--suite getall`: load time vs number and size of inline images.
fn getall(a: &Args) -> Result<ExitCode> {
    let tcp1997 = a.link.parse()?.config("lan", a.seed)?.tcp1997;
    let (_, stamp) = utc_now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench-getall-{stamp}")));
    let r = pagewire_lab::loadtime::suite(&pagewire_lab::loadtime::SuiteOptions {
        quick: a.quick,
        tcp1997,
        reps: a.reps,
        out: out.clone(),
        command: pagewire_emu::command_line(),
        progress: !a.no_progress,
        host: host_description(),
        exe: std::env::current_exe().context("find this pagewire binary")?,
    })?;
    print!("{}", r.render_text());
    println!(
        "Wrote results.json, results.csv, report.txt and the figures in {}.",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn host_description() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("Linux {}, {cpus} CPUs", kernel.trim())
}
