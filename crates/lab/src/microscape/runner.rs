//! Runs the matrix: a link per network, the server in its server namespace,
//! the robot in its client namespace, one pcap and one record per run.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pagewire_client::{FetchConfig, FetchReport, ObjectKind, Outcome, Revalidation};
use pagewire_emu::{Link, LinkConfig};
use pagewire_site::microscape::{self, Microscape};
use sha2::{Digest, Sha256};

pub use super::config::{BenchConfig, ServerKind, SERVER_PORT, TLS_PORT};
use super::plan::RunSpec;
use crate::model::{Net, Requests, Revalidating, RobotConfig, RunRecord, Test, Tuning};
use crate::server::ServerGuard;
use crate::surge::servers::{APACHE_BIN, APACHE_MODULES};

/// Longest we wait for a server to start listening.
const SERVER_START_TIMEOUT: Duration = Duration::from_secs(20);

/// What a finished bench hands to the report.
pub struct Outcomes {
    pub site: Microscape,
    pub runs: Vec<RunRecord>,
    pub link_configs: BTreeMap<String, serde_json::Value>,
    pub wall_s: f64,
    /// Set when SIGINT/SIGTERM/SIGHUP stopped the bench between runs; the
    /// runs done so far are still reported.
    pub interrupted_by: Option<i32>,
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn nginx_conf(root: &Path, dir: &Path, addr: &str, nagle: bool) -> String {
    // Generated per network: nginx serves the same files as pagewire.
    // gzip_static serves foo.html.gz to clients that accept gzip; nginx has
    // no way to serve a precompressed *deflate* variant, so the
    // pipeline-deflate robot (Accept-Encoding: deflate) gets identity bodies.
    format!(
        "# made by pagewire {ver} bench (generated nginx configuration)\n\
         daemon off;\n\
         master_process off;\n\
         worker_processes 1;\n\
         user root;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log warn;\n\
         events {{ worker_connections 512; }}\n\
         http {{\n\
         \x20 access_log {dir}/access.log;\n\
         \x20 client_body_temp_path {dir}/tmp_body;\n\
         \x20 proxy_temp_path {dir}/tmp_proxy;\n\
         \x20 fastcgi_temp_path {dir}/tmp_fastcgi;\n\
         \x20 uwsgi_temp_path {dir}/tmp_uwsgi;\n\
         \x20 scgi_temp_path {dir}/tmp_scgi;\n\
         \x20 types {{ text/html html; image/gif gif; text/plain txt; }}\n\
         \x20 default_type application/octet-stream;\n\
         \x20 sendfile on;\n\
         \x20 tcp_nodelay {nodelay};\n\
         \x20 keepalive_requests 10000;\n\
         \x20 keepalive_timeout 60s;\n\
         \x20 gzip_static on;\n\
         \x20 etag on;\n\
         \x20 server {{\n\
         \x20   listen {addr};\n\
         \x20   root {root};\n\
         \x20   index index.html;\n\
         \x20 }}\n\
         }}\n",
        ver = env!("CARGO_PKG_VERSION"),
        dir = dir.display(),
        root = root.display(),
        // bench --nagle server|both: nginx leaves Nagle's algorithm on.
        nodelay = if nagle { "off" } else { "on" },
    )
}

/// Apache httpd 2.4 for paper 001: the prefork MPM (a process per
/// connection, the model of the paper's Apache 1.2b10), persistent
/// connections with Apache 1.2's defaults (KeepAlive On,
/// MaxKeepAliveRequests 100 — more than the page's 43 requests —,
/// KeepAliveTimeout 15 s), entity tags from mtime and size. Apache cannot
/// serve a precompressed deflate variant, so pipeline-deflate gets identity
/// bodies, as from nginx.
fn apache_conf(root: &Path, dir: &Path, addr: &str) -> String {
    format!(
        "# made by pagewire {ver} bench (generated Apache configuration)\n\
         LoadModule mpm_prefork_module {m}/mod_mpm_prefork.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule mime_module {m}/mod_mime.so\n\
         LoadModule dir_module {m}/mod_dir.so\n\
         ServerName microscape.test\n\
         ServerRoot {dir}\n\
         DefaultRuntimeDir {dir}\n\
         PidFile {dir}/httpd.pid\n\
         Mutex file:{dir} default\n\
         ErrorLog {dir}/error.log\n\
         LogLevel warn\n\
         User www-data\n\
         Group www-data\n\
         Listen {addr}\n\
         DocumentRoot {root}\n\
         DirectoryIndex index.html\n\
         <Directory />\n  Require all denied\n  AllowOverride None\n</Directory>\n\
         <Directory {root}>\n  Require all granted\n  AllowOverride None\n</Directory>\n\
         TypesConfig /dev/null\n\
         AddType text/html .html\n\
         AddType image/gif .gif\n\
         AddType image/png .png\n\
         AddType text/css .css\n\
         AddType text/plain .txt\n\
         FileETag MTime Size\n\
         EnableSendfile On\n\
         HostnameLookups Off\n\
         KeepAlive On\n\
         MaxKeepAliveRequests 100\n\
         KeepAliveTimeout 15\n\
         StartServers 5\n\
         MinSpareServers 5\n\
         MaxSpareServers 10\n\
         MaxRequestWorkers 64\n",
        ver = env!("CARGO_PKG_VERSION"),
        m = APACHE_MODULES,
        dir = dir.display(),
        root = root.display(),
    )
}

fn start_server(
    cfg: &BenchConfig,
    link: &Link,
    net: Net,
    lane: &str,
    root: &Path,
) -> Result<ServerGuard> {
    let logs = cfg.out_dir.join("logs");
    fs::create_dir_all(&logs)?;
    let addr = format!("{}:{SERVER_PORT}", link.server_addr());
    let log_path = logs.join(format!("server-{net}{lane}.log"));
    let mut log =
        fs::File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
    // Say what made the log before the server writes to it.
    std::io::Write::write_all(
        &mut log,
        format!(
            "# server log written by pagewire {} bench ({} server, {net} link, seed {})\n",
            env!("CARGO_PKG_VERSION"),
            cfg.server.label(),
            cfg.seed
        )
        .as_bytes(),
    )?;
    let mut cmd = match &cfg.server {
        ServerKind::Pagewire { exe } => {
            let mut c = Command::new(exe);
            c.arg("serve");
            match &cfg.replay {
                Some(r) => c.arg("--replay").arg(&r.archive).arg("--replay-deflate"),
                None => c.arg("--root").arg(root),
            };
            c.arg("--addr").arg(&addr);
            if cfg.nagle.server() {
                c.arg("--nagle");
            }
            if let Some(f) = &cfg.server_flush {
                c.arg("--flush").arg(f);
            }
            c
        }
        ServerKind::Nginx => {
            // nginx reads relative paths against its -p prefix: hand it
            // absolute ones (a relative --out is common).
            let dir = std::path::absolute(cfg.out_dir.join(format!("nginx-{net}{lane}")))?;
            fs::create_dir_all(&dir)?;
            let root = std::path::absolute(root)?;
            let conf = dir.join("nginx.conf");
            fs::write(&conf, nginx_conf(&root, &dir, &addr, cfg.nagle.server()))?;
            let mut c = Command::new("nginx");
            c.arg("-c").arg(&conf).arg("-p").arg(&dir);
            c
        }
        ServerKind::Apache => {
            if !Path::new(APACHE_BIN).exists() {
                bail!("apache2 is not installed ({APACHE_BIN}); run scripts/setup-deps.sh");
            }
            // Apache reads relative paths against its ServerRoot: hand it
            // absolute ones (a relative --out is common).
            let dir = std::path::absolute(cfg.out_dir.join(format!("apache-{net}{lane}")))?;
            fs::create_dir_all(&dir)?;
            let root = std::path::absolute(root)?;
            let conf = dir.join("apache2.conf");
            fs::write(&conf, apache_conf(&root, &dir, &addr))?;
            let mut c = Command::new(APACHE_BIN);
            c.arg("-f").arg(&conf).arg("-DFOREGROUND");
            c
        }
        ServerKind::Command(template) => {
            let line = template
                .replace("{root}", &root.display().to_string())
                .replace("{port}", &SERVER_PORT.to_string())
                .replace("{addr}", &link.server_addr().to_string());
            let mut c = Command::new("sh");
            c.arg("-c").arg(line);
            c
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let child = link.spawn_in_server(cmd).with_context(|| {
        format!(
            "start the {} server in the server namespace",
            cfg.server.label()
        )
    })?;
    let mut guard = ServerGuard(child);
    let up = link.wait_server_listening(SERVER_START_TIMEOUT)?;
    if let Ok(Some(status)) = guard.0.try_wait() {
        bail!(
            "the {} server exited ({status}) before serving; its log {}:\n{}",
            cfg.server.label(),
            log_path.display(),
            tail(&log_path)
        );
    }
    if !up {
        bail!(
            "the {} server did not listen within {:?}; its log {}:\n{}",
            cfg.server.label(),
            SERVER_START_TIMEOUT,
            log_path.display(),
            tail(&log_path)
        );
    }
    Ok(guard)
}

/// `pagewire serve --tls` (HTTP/2 and HTTP/3) on `TLS_PORT` beside the
/// HTTP/1 server, for the `h2` and `h3` runs; always pagewire's own server.
fn start_tls_server(
    cfg: &BenchConfig,
    link: &Link,
    net: Net,
    lane: &str,
    root: &Path,
    files: &pagewire_tls::Files,
) -> Result<ServerGuard> {
    let ServerKind::Pagewire { exe } = &cfg.server else {
        bail!("h2 and h3 runs are served by pagewire's own TLS server (--server pagewire)");
    };
    let logs = cfg.out_dir.join("logs");
    fs::create_dir_all(&logs)?;
    let log_path = logs.join(format!("server-tls-{net}{lane}.log"));
    let log =
        fs::File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
    let dir = files.ca.parent().unwrap_or(Path::new("."));
    let mut c = Command::new(exe);
    c.arg("serve");
    match &cfg.replay {
        // Every recorded origin over TLS (a browser's https origins).
        Some(r) => c.arg("--replay").arg(&r.archive),
        None => c.arg("--root").arg(root),
    };
    c.arg("--addr")
        .arg(format!("{}:{TLS_PORT}", link.server_addr()))
        .arg("--tls")
        .arg(dir);
    if cfg.nagle.server() {
        c.arg("--nagle");
    }
    c.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
    let child = link
        .spawn_in_server(c)
        .context("start the TLS server in the server namespace")?;
    let mut guard = ServerGuard(child);
    // The HTTP/1 server already listens, so wait for this one's own line.
    let until = Instant::now() + SERVER_START_TIMEOUT;
    // Bounded by SERVER_START_TIMEOUT; 5 ms steps.
    loop {
        if fs::read_to_string(&log_path)
            .unwrap_or_default()
            .contains("listening on https://")
        {
            return Ok(guard);
        }
        if let Ok(Some(status)) = guard.0.try_wait() {
            bail!(
                "the TLS server exited ({status}) before serving; its log {}:\n{}",
                log_path.display(),
                tail(&log_path)
            );
        }
        if Instant::now() >= until {
            bail!(
                "the TLS server did not listen within {SERVER_START_TIMEOUT:?}; its log {}:\n{}",
                log_path.display(),
                tail(&log_path)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn tail(p: &Path) -> String {
    let s = fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Objects of `report` that arrived intact (first-time) or were validated
/// (revalidation): each of the 43 expected paths counted once.
fn objects_ok(
    report: &FetchReport,
    test: Test,
    revalidation: Revalidation,
    expected: &BTreeMap<String, String>,
) -> (u64, Vec<String>) {
    let mut ok = std::collections::BTreeSet::new();
    for o in &report.objects {
        let path = match o
            .url
            .find("://")
            .and_then(|i| o.url[i + 3..].find('/').map(|j| i + 3 + j))
        {
            Some(i) => &o.url[i..],
            None => continue,
        };
        let path = if path == "/" && !expected.contains_key("/") {
            microscape::PAGE_PATH
        } else {
            path
        };
        let Some(sha) = expected.get(path) else {
            continue;
        };
        let good = match test {
            Test::First => {
                o.status == 200 && matches!(o.outcome, Outcome::Fetched | Outcome::GetallPart)
            }
            // GET + HEAD revalidation fetches the page again (libwww 4.1D).
            Test::Revalidate => {
                o.outcome == Outcome::NotModified
                    || (o.kind == ObjectKind::Page
                        && o.status == 200
                        && o.outcome == Outcome::Fetched
                        && revalidation == Revalidation::GetHead)
            }
        };
        if good && &o.sha256 == sha {
            ok.insert(path.to_string());
        }
    }
    let missing = expected
        .keys()
        .filter(|p| !ok.contains(*p))
        .cloned()
        .collect();
    (ok.len() as u64, missing)
}

/// Run the whole plan.
pub fn run(cfg: &BenchConfig) -> Result<Outcomes> {
    let started = Instant::now();
    fs::create_dir_all(cfg.out_dir.join("pcaps"))?;
    let options = microscape::Options {
        seed: cfg.seed,
        lowercase: false,
    };
    let site = match cfg.page {
        microscape::Variant::Original => microscape::generate(options),
        microscape::Variant::Css => microscape::css::generate(options)?.0,
    };
    let root = cfg.out_dir.join("site");
    site.write_to_dir(&root)
        .with_context(|| format!("write the Microscape site to {}", root.display()))?;
    let root = root.canonicalize()?;
    let expected: BTreeMap<String, String> = match &cfg.replay {
        Some(r) => r.expected.clone(),
        None => site
            .files()
            .into_iter()
            .map(|(p, b)| (p, sha256_hex(&b)))
            .collect(),
    };
    let robot_expected = match &cfg.replay {
        Some(r) => r.robot_expected.clone(),
        None => expected.clone(),
    };

    // The bar counts the plan's wall-clock estimate in ms (a PPP run shares
    // its time with the other lanes); it ticks every second, and its ETA is
    // the plan's remaining estimate less the time the runs in flight have had.
    let wall_ms = |r: &RunSpec| (r.estimate_s() * 1000.0 / f64::from(cfg.plan.lanes(r.net))) as u64;
    let total_ms: u64 = cfg.plan.runs.iter().map(wall_ms).sum();
    let live = LiveRuns::default();
    let pb = if cfg.progress {
        let pb = ProgressBar::with_draw_target(Some(total_ms), ProgressDrawTarget::stderr());
        let (l1, l2) = (live.clone(), live.clone());
        pb.set_style(
            ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:20.cyan/blue} {percent:>3}% ETA {plan_eta} {run_clock}{wide_msg}",
            )
            .expect("static template")
            .with_key("plan_eta", move |st: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let left_ms = st.len().unwrap_or(0).saturating_sub(st.pos()) as f64;
                let s = (left_ms / 1000.0 - l1.credit_s()).max(0.0).round() as u64;
                let _ = write!(w, "{}:{:02}", s / 60, s % 60);
            })
            .with_key("run_clock", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                if let Some((el, est)) = l2.longest() {
                    let _ = write!(w, "run {el:.0}/~{est:.0} s: ");
                }
            })
            .progress_chars("=> "),
        );
        pb.enable_steady_tick(Duration::from_secs(1));
        pb
    } else {
        ProgressBar::hidden()
    };

    // Ctrl-C cancels the runs in flight (within crate::interrupt::POLL),
    // the link and server are torn down by their guards and the runs done
    // so far are still written.
    crate::interrupt::install();
    let mut interrupted_by = None;
    let mut runs = Vec::with_capacity(cfg.plan.runs.len());
    let mut link_configs = BTreeMap::new();
    let caches = cfg.out_dir.join("cache");
    // The h2 and h3 runs: one throwaway CA for the whole bench, in the
    // results directory (any client can trust `tls/ca.pem`).
    // A replayed site's https origins need it for the browser rows too,
    // with every recorded name in the certificate.
    let replay_tls = cfg.replay.as_ref().is_some_and(|r| r.has_https())
        && cfg.plan.strategies.iter().any(|s| s.is_browser());
    let tls = if replay_tls || cfg.plan.strategies.iter().any(|s| s.needs_tls()) {
        let dir = cfg.out_dir.join("tls");
        let mut names = vec![pagewire_emu::SERVER_ADDR.to_string(), "localhost".into()];
        if let Some(r) = &cfg.replay {
            names.extend(r.hosts());
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Some(pagewire_tls::ensure(&dir, &names)?)
    } else {
        None
    };
    let ctx = LaneCtx {
        cfg,
        root: &root,
        caches: &caches,
        expected: &expected,
        robot_expected: &robot_expected,
        pb: &pb,
        tls: tls.as_ref(),
        live: &live,
    };
    for (net, sweep_us) in cfg.plan.link_groups() {
        // Plan order, so results come back in it whatever the lanes do.
        let specs: Vec<(usize, RunSpec)> = cfg
            .plan
            .runs
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, r)| r.net == net && r.sweep_rtt_us == sweep_us)
            .collect();
        if specs.is_empty() {
            continue;
        }
        let mut lc = (cfg.link_config)(net)?;
        let group = match sweep_us {
            // The RTT sweep: the network's profile (and the user's other
            // overrides) at this RTT.
            Some(us) => {
                lc.rtt = Duration::from_micros(u64::from(us));
                format!(
                    "{}@{}ms",
                    net.name(),
                    crate::claims::spec::fmt_num(f64::from(us) / 1000.0)
                )
            }
            None => net.name().to_string(),
        };
        link_configs.insert(group, serde_json::to_value(&lc)?);
        let lanes = if sweep_us.is_some() {
            1
        } else {
            cfg.plan.lanes(net) as usize
        };
        let mut done: Vec<(usize, RunRecord)> = Vec::new();
        if lanes <= 1 {
            let suffix = sweep_us.map(|us| format!("-rtt{us}us")).unwrap_or_default();
            let (recs, sig) = run_lane(&ctx, net, lc, &suffix, &specs)?;
            done.extend(recs);
            interrupted_by = interrupted_by.or(sig);
        } else {
            // Independent repetitions at once, each lane its own namespace
            // pair, link, server and caches: a rate-bound network (PPP)
            // costs little CPU, so lanes do not disturb each other (the
            // link model runs on emulated time; see docs/bench.md for the
            // check of the counters).
            let mut per_lane: Vec<Vec<(usize, RunSpec)>> = vec![Vec::new(); lanes];
            for &(i, spec) in &specs {
                per_lane[spec.rep as usize % lanes].push((i, spec));
            }
            pb.set_message(format!("{net}: {lanes} lanes at once"));
            let results: Vec<Result<LaneOutcome>> = std::thread::scope(|sc| {
                let handles: Vec<_> = per_lane
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| !l.is_empty())
                    .map(|(k, lane_specs)| {
                        let lc = lc.clone();
                        let ctx = &ctx;
                        sc.spawn(move || run_lane(ctx, net, lc, &format!("-lane{k}"), lane_specs))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(anyhow::anyhow!("a {net} lane panicked")))
                    })
                    .collect()
            });
            for r in results {
                let (recs, sig) = r?;
                done.extend(recs);
                interrupted_by = interrupted_by.or(sig);
            }
        }
        done.sort_by_key(|(i, _)| *i);
        runs.extend(done.into_iter().map(|(_, r)| r));
        if interrupted_by.is_some() {
            break;
        }
    }
    pb.finish_and_clear();
    // The robot's caches only matter between a first-time run and its
    // revalidation; they are ~13 MB for a default run.
    if caches.exists() {
        fs::remove_dir_all(&caches).with_context(|| format!("remove {}", caches.display()))?;
    }
    Ok(Outcomes {
        site,
        runs,
        link_configs,
        wall_s: started.elapsed().as_secs_f64(),
        interrupted_by,
    })
}

/// A lane's records with their plan index, and the signal that stopped it.
type LaneOutcome = (Vec<(usize, RunRecord)>, Option<i32>);

/// What every lane shares.
struct LaneCtx<'a> {
    cfg: &'a BenchConfig,
    root: &'a Path,
    caches: &'a Path,
    expected: &'a BTreeMap<String, String>,
    /// What the robot's runs must bring back (a replayed page: what its
    /// HTML and stylesheets name; else `expected`).
    robot_expected: &'a BTreeMap<String, String>,
    pb: &'a ProgressBar,
    /// The run's certificates when the plan has `h2`/`h3` runs.
    tls: Option<&'a pagewire_tls::Files>,
    live: &'a LiveRuns,
}

/// The runs in flight, for the progress bar: per lane, when its run
/// started, the run's estimate in seconds and how many lanes share the
/// network's time.
#[derive(Clone, Default)]
struct LiveRuns(std::sync::Arc<std::sync::Mutex<BTreeMap<String, LiveRun>>>);

/// A run in flight: when it started, its estimate (s), the network's lanes.
type LiveRun = (Instant, f64, f64);

impl LiveRuns {
    fn start(&self, lane: String, est_s: f64, lanes: f64) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(lane, (Instant::now(), est_s, lanes));
        }
    }
    fn end(&self, lane: &str) {
        if let Ok(mut m) = self.0.lock() {
            m.remove(lane);
        }
    }
    /// Seconds of the plan the runs in flight have used (each up to its estimate).
    fn credit_s(&self) -> f64 {
        self.0.lock().map_or(0.0, |m| {
            m.values()
                .map(|(t, est, lanes)| t.elapsed().as_secs_f64().min(*est) / lanes)
                .sum()
        })
    }
    /// The in-flight run that has run longest: (elapsed, estimate), seconds.
    fn longest(&self) -> Option<(f64, f64)> {
        let m = self.0.lock().ok()?;
        m.values()
            .map(|(t, est, _)| (t.elapsed().as_secs_f64(), *est))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }
}

/// One link and server, and `specs` run on it one after another. Returns
/// the records with their plan index, and the signal that stopped it.
fn run_lane(
    ctx: &LaneCtx<'_>,
    net: Net,
    lc: LinkConfig,
    lane: &str,
    specs: &[(usize, RunSpec)],
) -> Result<LaneOutcome> {
    let cfg = ctx.cfg;
    let pb = ctx.pb;
    let lc_json = serde_json::to_value(&lc)?;
    pb.set_message(format!("{net}{lane}: starting link and server"));
    let link = Link::start(lc).with_context(|| format!("start the {net}{lane} link"))?;
    let mut server = start_server(cfg, &link, net, lane, ctx.root)?;
    let tls_server = match ctx.tls {
        Some(files) => Some(start_tls_server(cfg, &link, net, lane, ctx.root, files)?),
        None => None,
    };
    let bulk_server = match cfg.bulk {
        Some(_) => Some(super::bulk::BulkServer::start(&link)?),
        None => None,
    };
    let url = match &cfg.replay {
        Some(r) => r.url.clone(),
        None => format!(
            "http://{}:{SERVER_PORT}{}",
            link.server_addr(),
            microscape::PAGE_PATH
        ),
    };
    let tls_url = match &cfg.replay {
        // The robot's h2 and h3 runs ask the TLS listener for the page in
        // its https form (a browser keeps the recorded URL: below).
        Some(r) => r.https_url(),
        None => format!(
            "https://{}:{TLS_PORT}{}",
            link.server_addr(),
            microscape::PAGE_PATH
        ),
    };
    let mut out = Vec::with_capacity(specs.len());
    let mut interrupted_by = None;
    for &(i, spec) in specs {
        if let Some(sig) = pagewire_emu::cli::terminated_by() {
            interrupted_by = Some(sig);
            break;
        }
        pb.set_message(format!(
            "{} {} {} rep {}{}",
            spec.net,
            spec.strategy,
            spec.test,
            spec.rep + 1,
            if spec.tuning == Tuning::Initial {
                " (initial)"
            } else {
                ""
            }
        ));
        let (url, ca) = match ctx.tls {
            // A replayed page keeps its recorded URL for a browser: every
            // recorded origin is mapped to its listener, the https ones to
            // the TLS listener.
            Some(files) if cfg.replay.is_some() && spec.strategy.is_browser() => {
                (&url, Some(files.ca.clone()))
            }
            Some(files) if spec.strategy.needs_tls() => (&tls_url, Some(files.ca.clone())),
            _ => (&url, None),
        };
        let expected = if spec.strategy.is_browser() {
            ctx.expected
        } else {
            ctx.robot_expected
        };
        let in_flight = crate::interrupt::InFlight::cancellable();
        let lanes = f64::from(cfg.plan.lanes(net));
        if !cfg.progress {
            // Without the bar, one line per run says where the bench is.
            eprintln!(
                "run {}/{}: {} {} {} rep {}{} (~{:.0} s)",
                i + 1,
                cfg.plan.runs.len(),
                spec.net,
                spec.strategy,
                spec.test,
                spec.rep + 1,
                if spec.tuning == Tuning::Initial {
                    " (initial)"
                } else {
                    ""
                },
                spec.estimate_s()
            );
        }
        let lane_key = format!("{net}{lane}");
        ctx.live.start(lane_key.clone(), spec.estimate_s(), lanes);
        let rec = one_run(cfg, &link, url, ca, ctx.caches, spec, expected, &lc_json);
        drop(in_flight);
        ctx.live.end(&lane_key);
        let rec = match rec {
            Ok(r) => r,
            // A run cut short by Ctrl-C is no result: keep the runs done.
            Err(_) if crate::interrupt::signalled() => {
                interrupted_by = crate::interrupt::signal();
                break;
            }
            Err(e) => {
                if let Ok(Some(status)) = server.0.try_wait() {
                    bail!(
                        "the {} server exited ({status}) during the {net}{lane} runs; log:\n{}",
                        cfg.server.label(),
                        tail(
                            &cfg.out_dir
                                .join("logs")
                                .join(format!("server-{net}{lane}.log"))
                        )
                    );
                }
                return Err(e.context(format!(
                    "{} {} {} rep {}",
                    spec.net, spec.strategy, spec.test, spec.rep
                )));
            }
        };
        if let Some(e) = &rec.error {
            let line = format!(
                "  run failed: {} {} {} rep {}: {e}",
                spec.net, spec.strategy, spec.test, spec.rep
            );
            // A hidden bar (`--no-progress`) prints nothing: say it plainly.
            if cfg.progress {
                pb.println(line);
            } else {
                eprintln!("{line}");
            }
        }
        out.push((i, rec));
        pb.inc((spec.estimate_s() * 1000.0 / lanes) as u64);
    }
    // Stop the server before the link goes (the link's Drop would kill
    // it anyway; this keeps the order explicit).
    drop(bulk_server);
    drop(tls_server);
    drop(server);
    drop(link);
    Ok((out, interrupted_by))
}

/// One run. Infrastructure failures (the link) are errors; a failed fetch
/// is a record with `error` set.
#[allow(clippy::too_many_arguments)]
fn one_run(
    cfg: &BenchConfig,
    link: &Link,
    url: &str,
    tls_ca: Option<PathBuf>,
    caches: &Path,
    spec: RunSpec,
    expected: &BTreeMap<String, String>,
    link_json: &serde_json::Value,
) -> Result<RunRecord> {
    if spec.strategy.is_browser() {
        return super::chromium::one_run(cfg, link, url, tls_ca, caches, spec, expected, link_json);
    }
    // Initial (Table 3) runs have their own caches and pcaps.
    let mut tag = match spec.tuning {
        Tuning::Tuned => String::new(),
        Tuning::Initial => "-initial".to_string(),
    };
    // So have the RTT sweep's runs.
    if let Some(us) = spec.sweep_rtt_us {
        tag.push_str(&format!("-rtt{}us", us));
    }
    let cache = caches.join(format!("{}-{}{tag}-r{}", spec.net, spec.strategy, spec.rep));
    if spec.test == Test::First {
        // First-time retrieval starts from an empty cache.
        if cache.exists() {
            fs::remove_dir_all(&cache).with_context(|| format!("clear {}", cache.display()))?;
        }
    }
    fs::create_dir_all(&cache)?;
    let pcap_rel = format!(
        "pcaps/{}-{}{tag}-{}-r{}.pcap",
        spec.net, spec.strategy, spec.test, spec.rep
    );
    let pcap = cfg.out_dir.join(&pcap_rel);
    let mut fc = FetchConfig::new(url, spec.strategy);
    fc.cache_dir = Some(cache);
    fc.revalidate = spec.test == Test::Revalidate;
    fc.request_profile = cfg.request_profile;
    fc.nodelay = !cfg.nagle.client();
    if cfg.replay.is_some() {
        // Every recorded name is the server namespace (Mahimahi's replay):
        // its TLS listener for h2 and h3 (QUIC on the same port), else the
        // plain one.
        let port = if spec.strategy.needs_tls() {
            TLS_PORT
        } else {
            SERVER_PORT
        };
        fc.connect_to = vec![pagewire_client::ConnectTo {
            host: None,
            port: None,
            addr: std::net::SocketAddr::new(link.server_addr().into(), port),
        }];
    }
    fc.tls_ca = tls_ca;
    if matches!(
        spec.strategy,
        pagewire_client::Strategy::Pipeline | pagewire_client::Strategy::PipelineDeflate
    ) {
        fc.range_first = cfg.range_first;
    }
    if spec.strategy == pagewire_client::Strategy::Http10 {
        fc.revalidation = cfg.http10_revalidation;
    }
    if spec.tuning == Tuning::Initial {
        // Paper 001, Table 3: "Initially we used a 1 second delay", no
        // explicit flush yet ("Buffer Tuning" came after), and HEAD-based
        // revalidation on HTTP/1.1 too (conditional GETs came for "our
        // final round of tests").
        fc.flush_after = std::time::Duration::from_secs(1);
        fc.explicit_flush = false;
        fc.revalidation = Revalidation::GetHead;
    }
    let revalidation = fc.revalidation;
    let robot = RobotConfig {
        tuning: spec.tuning,
        flush_after_ms: fc.flush_after.as_secs_f64() * 1e3,
        explicit_flush: fc.explicit_flush,
        out_buffer_bytes: fc.out_buffer_bytes,
        request_profile: Requests::Robot(fc.request_profile),
        revalidation: Revalidating::Robot(fc.revalidation),
        nagle: cfg.nagle.client(),
        range_first: fc.range_first,
    };
    let extra = serde_json::json!({
        "made_by": format!("pagewire {} bench", env!("CARGO_PKG_VERSION")),
        "strategy": spec.strategy, "test": spec.test, "net": spec.net, "rep": spec.rep,
        "server": cfg.server.label(), "seed": cfg.seed, "robot": &robot,
    });
    // Competing bulk flows: opened, given their warm-up to fill the queue,
    // then the run's counters start.
    let bulk = match cfg.bulk {
        Some(b) => {
            let flows = super::bulk::BulkFlows::start(link, b.flows)?;
            std::thread::sleep(std::time::Duration::from_secs_f64(b.warmup_s));
            Some((b, flows))
        }
        None => None,
    };
    let load_avg = pagewire_provenance::load_avg();
    link.begin_run_with(Some(&pcap), extra)?;
    let bulk_start = bulk.as_ref().map(|(_, f)| (f.received(), Instant::now()));
    // Cancelled (None) within crate::interrupt::POLL of a Ctrl-C.
    let fetched =
        link.run_in_client(move || crate::interrupt::block_on(pagewire_client::fetch(fc)))?;
    // Closed before the run ends: the end waits for the queue to drain.
    let bulk = bulk.zip(bulk_start).map(|((b, flows), (before, t0))| {
        let secs = t0.elapsed().as_secs_f64();
        let got = flows.stop().saturating_sub(before);
        (b, got, secs)
    });
    let Some(fetched) = fetched.context("build the robot's runtime")? else {
        // Not waiting for the link to drain (a full PPP queue takes tens
        // of seconds); half a run's packets are no record of anything.
        let _ = link.end_run_now();
        let _ = fs::remove_file(&pcap);
        let mut sidecar = pcap.clone().into_os_string();
        sidecar.push(".json");
        let _ = fs::remove_file(sidecar);
        bail!("interrupted");
    };
    let c = link.end_run()?;
    let cross_traffic = bulk.map(|(b, got, secs)| crate::model::CrossRecord {
        flows: b.flows,
        warmup_s: b.warmup_s,
        bytes_during_load: got,
        goodput_bps: if secs > 0.0 {
            got as f64 * 8.0 / secs
        } else {
            0.0
        },
        link_packets: c.client_to_server.cross_traffic.packets
            + c.server_to_client.cross_traffic.packets,
        link_bytes: c.client_to_server.cross_traffic.bytes + c.server_to_client.cross_traffic.bytes,
    });
    // The robot's HAR beside the pcap: the report draws its waterfall.
    let har = match &fetched {
        Ok(r) => {
            let rel = pcap_rel
                .replacen("pcaps/", "har/", 1)
                .replace(".pcap", ".har");
            fs::create_dir_all(cfg.out_dir.join("har"))?;
            fs::write(
                cfg.out_dir.join(&rel),
                pagewire_client::har::to_har_string(r),
            )
            .with_context(|| format!("write {rel}"))?;
            Some(rel)
        }
        Err(_) => None,
    };
    let (requests, mean_request_bytes) = match &fetched {
        Ok(r) if r.requests > 0 => (
            r.requests,
            r.bytes.header_bytes_sent as f64 / f64::from(r.requests),
        ),
        _ => (0, f64::NAN),
    };
    let metadata_s = match &fetched {
        Ok(r) => r.metadata_ms.map(|m| m / 1000.0),
        Err(_) => None,
    };
    let (elapsed_s, objects, body, error) = match &fetched {
        Ok(r) => {
            let (ok, missing) = objects_ok(r, spec.test, revalidation, expected);
            let err = if ok as usize != expected.len() {
                // Name what went wrong: the robot's count and the first
                // objects that are missing or arrived wrong.
                Some(format!(
                    "{} of {} objects ok ({} in the robot's report); not ok: {}{}",
                    ok,
                    expected.len(),
                    r.objects.len(),
                    missing
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" "),
                    if missing.len() > 5 { " ..." } else { "" }
                ))
            } else {
                None
            };
            (r.total_ms / 1000.0, ok, r.bytes.payload_bytes_received, err)
        }
        Err(e) => (f64::NAN, 0, 0, Some(e.to_string())),
    };
    Ok(RunRecord {
        strategy: spec.strategy,
        test: spec.test,
        net: spec.net,
        rep: spec.rep,
        server: cfg.server.label(),
        seed: cfg.seed,
        pagewire_version: env!("CARGO_PKG_VERSION").to_string(),
        packets_total: c.packets_total,
        packets_client_to_server: c.client_to_server.packets,
        packets_server_to_client: c.server_to_client.packets,
        bytes_total: c.bytes_total,
        payload_bytes_total: c.payload_bytes_total,
        line_bytes_total: c.client_to_server.line_bytes + c.server_to_client.line_bytes,
        link_lateness: c.link_lateness,
        elapsed_s,
        metadata_s,
        overhead_pct: c.overhead_pct,
        sockets_total: c.connections_opened,
        sockets_max: c.max_open_connections,
        retransmissions: c.retransmissions,
        objects_ok: objects,
        objects_expected: expected.len() as u64,
        body_bytes: body,
        requests,
        mean_request_bytes,
        robot,
        pcap: pcap_rel,
        har,
        link: link_json.clone(),
        sweep_rtt_ms: spec.sweep_rtt_us.map(|us| f64::from(us) / 1000.0),
        server_nagle: Some(cfg.nagle.server()),
        server_flush: cfg.server_flush.clone(),
        load_avg,
        error,
        browser: None,
        cross_traffic,
    })
}
