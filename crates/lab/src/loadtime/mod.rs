//! Load time against the number and size of inline images: Padmanabhan and
//! Mogul, "Improving HTTP Latency", section 6, Figures 5-8. Pages with N
//! inline images of one size are fetched over an emulated local (10 Mbit/s)
//! and remote (T1, 70 ms) link with HTTP/1.0 (a connection per object, one
//! at a time, as Mosaic 2.4), a persistent connection without pipelining,
//! a pipelined one, GETALL, and object packaging (Fujinoki, Sanjay, Shah,
//! "Web File Transmission by Object Packaging": the page and its images as
//! one pre-built package, asked for with `Accept`).
//!
//! [`run`] measures, [`claims`] checks the paper's sentences, [`report`]
//! writes Figures 5-8 as SVG, CSV and results.json.

pub mod claims;
pub mod model;
pub mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use pagewire_client::{FetchConfig, HostCost, Strategy};
use pagewire_emu::{Link, LinkConfig};
use serde::Serialize;

use crate::claims::spec::{ser_estimate, Estimate};

/// The paper's two servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Net {
    /// "a local server, accessed via a 10 Mbit/sec Ethernet with a small RTT".
    Local,
    /// "a remote server, access via a 1.544 Mbit/sec T1 link with a
    /// best-case RTT of about 70 msec".
    Remote,
}

impl std::str::FromStr for Net {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" => Ok(Net::Local),
            "remote" => Ok(Net::Remote),
            o => Err(format!("unknown network {o:?} (local, remote)")),
        }
    }
}

impl Net {
    pub fn name(self) -> &'static str {
        match self {
            Net::Local => "local",
            Net::Remote => "remote",
        }
    }
    pub fn link_config(self, tcp1997: bool) -> Result<LinkConfig> {
        let mut c = LinkConfig::profile(match self {
            Net::Local => "lan",
            Net::Remote => "t1",
        })?;
        c.tcp1997 = tcp1997;
        Ok(c)
    }
}

/// The end hosts the robot imitates (`--hosts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
pub enum Hosts {
    /// Today's hosts as they are: a pure-network emulation.
    #[default]
    #[serde(rename = "none")]
    None,
    /// The paper's 1994 hosts (NCSA httpd 1.3 forking per connection,
    /// Mosaic 2.4 on a DECstation 3100): [`HOSTS_1994_PER_CONNECTION`] and
    /// [`HOSTS_1994_PER_OBJECT`], fitted in docs/getall.md.
    #[serde(rename = "1994")]
    Y1994,
}

/// The 1994 hosts' cost per connection (server fork and accept), fitted to
/// the paper's local persistent-connection gain ("about 5% to 15%", its
/// middle, 10 %) and its local GETALL gain (up to about 40 % in its
/// summary) over this emulation's local 2544-byte cells: see
/// docs/getall.md, "The 1994 host model".
pub const HOSTS_1994_PER_CONNECTION: std::time::Duration = std::time::Duration::from_micros(260);
/// The 1994 hosts' cost per object (server per-request work and client
/// per-object handling), from the same fit.
pub const HOSTS_1994_PER_OBJECT: std::time::Duration = std::time::Duration::from_micros(6400);

impl Hosts {
    pub fn name(self) -> &'static str {
        match self {
            Hosts::None => "none",
            Hosts::Y1994 => "1994",
        }
    }
    pub fn cost(self) -> HostCost {
        match self {
            Hosts::None => HostCost::default(),
            Hosts::Y1994 => HostCost {
                per_connection: HOSTS_1994_PER_CONNECTION,
                per_object: HOSTS_1994_PER_OBJECT,
            },
        }
    }
}

impl std::str::FromStr for Hosts {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" | "today" => Ok(Hosts::None),
            "1994" => Ok(Hosts::Y1994),
            o => Err(format!("--hosts {o:?}: expected 1994 or none")),
        }
    }
}

/// The five ways of loading a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// A connection per object, one at a time (Mosaic 2.4 and NCSA httpd 1.3).
    Http10,
    /// One long-lived connection, one request at a time.
    Persistent,
    /// One long-lived connection, requests pipelined (flushed as soon as the
    /// page has been parsed, so no flush timer is measured).
    Pipelined,
    /// One GETALL request (`Getall: 1`).
    Getall,
    /// One request for the page's object package
    /// (`Accept: application/vnd.pagewire.objpack`).
    Objpack,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown method {s:?} (http10, persistent, pipelined, getall, objpack)")
            })
    }
}

impl Method {
    pub const ALL: [Method; 5] = [
        Method::Http10,
        Method::Persistent,
        Method::Pipelined,
        Method::Getall,
        Method::Objpack,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Method::Http10 => "http10",
            Method::Persistent => "persistent",
            Method::Pipelined => "pipelined",
            Method::Getall => "getall",
            Method::Objpack => "objpack",
        }
    }
    fn fetch_config(self, url: &str, hosts: Hosts) -> FetchConfig {
        let strategy = match self {
            Method::Http10 => Strategy::Http10,
            Method::Persistent => Strategy::Http11,
            Method::Pipelined => Strategy::Pipeline,
            Method::Getall => Strategy::Getall,
            Method::Objpack => Strategy::Objpack,
        };
        let mut c = FetchConfig::new(url, strategy);
        // Mosaic 2.4 fetched one object at a time.
        c.max_conns = 1;
        c.flush_at_page_end = true;
        c.host_cost = hosts.cost();
        c
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub nets: Vec<Net>,
    /// Image sizes in bytes.
    pub sizes: Vec<usize>,
    /// Numbers of inline images.
    pub counts: Vec<usize>,
    pub methods: Vec<Method>,
    pub reps: u32,
    /// Repetitions of the local cells, which run alone (one link at a
    /// time, nothing else of the suite beside them): their millisecond load
    /// times need more to get above the noise floor.
    pub local_reps: u32,
    pub tcp1997: bool,
    /// The end hosts imitated (`--hosts`).
    pub hosts: Hosts,
}

/// The sizes the paper's text names (Figures 5 and 6); Figures 7-8 sweep
/// more sizes whose values are not in the text, so 1 KB and 10 KB are ours.
pub const SIZES: [usize; 4] = [1024, 2544, 10240, 45566];

impl Plan {
    pub fn full(tcp1997: bool) -> Plan {
        Plan {
            nets: vec![Net::Local, Net::Remote],
            sizes: SIZES.to_vec(),
            counts: vec![0, 1, 2, 5, 10, 20, 40],
            methods: Method::ALL.to_vec(),
            reps: 3,
            local_reps: 10,
            tcp1997,
            hosts: Hosts::None,
        }
    }
    pub fn quick(tcp1997: bool) -> Plan {
        Plan {
            nets: vec![Net::Local, Net::Remote],
            sizes: vec![2544, 45566],
            counts: vec![0, 10],
            methods: Method::ALL.to_vec(),
            reps: 2,
            local_reps: 3,
            tcp1997,
            hosts: Hosts::None,
        }
    }
}

/// One measured cell.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub net: Net,
    pub size: usize,
    pub images: usize,
    pub method: Method,
    /// Load time, seconds: fetch start to the last byte of the last object.
    #[serde(serialize_with = "ser_estimate")]
    pub load_s: Estimate,
    pub trials_s: Vec<f64>,
    /// Requests the robot sent (GETALL: 1).
    pub requests: u32,
    pub connections: usize,
    /// How late packets left the emulated link over this cell's trials
    /// (see `pagewire_link::lateness`); `flagged` cells are left out of
    /// claims.
    pub link_lateness: pagewire_link::LinkLateness,
}

fn page_path(size: usize, n: usize) -> String {
    format!("/s{size}/p{n}.html")
}

/// The pages and images: `/s{size}/p{n}.html` with n `<img>` of
/// `/s{size}/i{k}.gif`, each exactly `size` bytes (a GIF89a signature, then
/// deterministic pseudo-random bytes, as incompressible as real GIF data).
pub fn write_site(root: &Path, plan: &Plan) -> Result<()> {
    let max_n = plan.counts.iter().copied().max().unwrap_or(0);
    for &size in &plan.sizes {
        let dir = root.join(format!("s{size}"));
        std::fs::create_dir_all(&dir)?;
        for k in 0..max_n {
            let mut x: u64 = (size as u64) << 20 | k as u64 | 1;
            let mut b: Vec<u8> = b"GIF89a".iter().copied().take(size).collect();
            while b.len() < size {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push((x >> 24) as u8);
            }
            std::fs::write(dir.join(format!("i{k}.gif")), b)?;
        }
        for &n in &plan.counts {
            let mut html = format!(
                "<!DOCTYPE html>\n<html><head><title>{n} images of {size} bytes</title></head><body>\n<h1>{n} inline images</h1>\n"
            );
            for k in 0..n {
                html.push_str(&format!("<img src=\"i{k}.gif\" alt=\"{k}\">\n"));
            }
            html.push_str("</body></html>\n");
            std::fs::write(dir.join(format!("p{n}.html")), html)?;
        }
    }
    Ok(())
}

pub struct RunOptions {
    pub exe: PathBuf,
    pub root: PathBuf,
    pub progress: bool,
    pub parallel: usize,
}

/// Runs the plan: a link and a `pagewire serve` per (network, size); within
/// it, repetitions outermost so a slow spell of the machine is spread over
/// every cell.
pub fn run(plan: &Plan, o: &RunOptions) -> Result<Vec<Cell>> {
    let jobs = |net: Net| -> Vec<(Net, usize)> {
        if plan.nets.contains(&net) {
            plan.sizes.iter().rev().map(|&size| (net, size)).collect()
        } else {
            Vec::new()
        }
    };
    let t0 = Instant::now();
    let each = |(net, size): (Net, usize)| {
        let got = run_one(plan, o, net, size)?;
        if o.progress {
            eprintln!(
                "getall: {}, {size} B images done ({:.0} s)",
                net.name(),
                t0.elapsed().as_secs_f64()
            );
        }
        Ok(got)
    };
    // Remote links side by side; then the local ones alone, one at a time.
    let mut cells = crate::pool::run(jobs(Net::Remote), o.parallel, each)?;
    cells.extend(crate::pool::run(jobs(Net::Local), 1, each)?);
    cells.sort_by_key(|c| (c.net, c.size, c.images, c.method));
    Ok(cells)
}

fn run_one(plan: &Plan, o: &RunOptions, net: Net, size: usize) -> Result<Vec<Cell>> {
    let link = Link::start(net.link_config(plan.tcp1997)?)
        .with_context(|| format!("start the {} link", net.name()))?;
    let addr = format!("{}:80", link.server_addr());
    let _server = crate::server::pagewire_serve(&link, &o.exe, &o.root, &addr)?;
    let mut trials: Vec<Vec<(f64, u32, usize)>> =
        vec![Vec::new(); plan.counts.len() * plan.methods.len()];
    let mut late =
        vec![pagewire_link::LatenessRecorder::new(); plan.counts.len() * plan.methods.len()];
    // Start the lateness count here (not with the server's start).
    link.take_lateness()?;
    let reps = match net {
        Net::Local => plan.local_reps,
        Net::Remote => plan.reps,
    };
    'reps: for _rep in 0..reps {
        for (ci, &n) in plan.counts.iter().enumerate() {
            for (mi, &m) in plan.methods.iter().enumerate() {
                let url = format!("http://{addr}{}", page_path(size, n));
                let fc = m.fetch_config(&url, plan.hosts);
                // Cancelled within crate::interrupt::POLL of a Ctrl-C.
                let Some(r) = link.run_in_client(move || {
                    crate::interrupt::block_on(pagewire_client::fetch(fc))
                })??
                else {
                    break 'reps;
                };
                let r = r.with_context(|| format!("{} {} {url}", net.name(), m.name()))?;
                late[ci * plan.methods.len() + mi].merge(&link.take_lateness()?);
                let ok = r.objects.iter().filter(|x| x.status == 200).count();
                if ok != n + 1 || r.objects.iter().skip(1).any(|x| x.size != size as u64) {
                    bail!(
                        "{} {} {url}: {ok} of {} objects ok",
                        net.name(),
                        m.name(),
                        n + 1
                    );
                }
                // GETALL and the package are one request; a robot that fell
                // back to pipelining (the server sent plain HTML) would
                // measure the wrong method.
                if matches!(m, Method::Getall | Method::Objpack) && r.requests != 1 {
                    bail!(
                        "{} {} {url}: {} requests, not one (did the server answer with plain HTML?)",
                        net.name(),
                        m.name(),
                        r.requests
                    );
                }
                trials[ci * plan.methods.len() + mi].push((
                    r.total_ms / 1000.0,
                    r.requests,
                    r.connections_opened,
                ));
            }
        }
    }
    let mut cells = Vec::new();
    for (ci, &n) in plan.counts.iter().enumerate() {
        for (mi, &m) in plan.methods.iter().enumerate() {
            let t = &trials[ci * plan.methods.len() + mi];
            if t.is_empty() {
                // Interrupted before this cell's first trial.
                continue;
            }
            let secs: Vec<f64> = t.iter().map(|x| x.0).collect();
            cells.push(Cell {
                net,
                size,
                images: n,
                method: m,
                load_s: Estimate::of(&secs),
                trials_s: secs,
                requests: t.last().map_or(0, |x| x.1),
                connections: t.last().map_or(0, |x| x.2),
                link_lateness: late[ci * plan.methods.len() + mi].summary(link.one_way_delay()),
            });
        }
    }
    Ok(cells)
}

/// What `pagewire bench --suite getall` was asked for.
pub struct SuiteOptions {
    pub quick: bool,
    pub tcp1997: bool,
    pub reps: Option<u32>,
    /// Repetitions of the local cells (default: the plan's).
    pub local_reps: Option<u32>,
    pub hosts: Hosts,
    /// Override of the plan's networks.
    pub nets: Option<Vec<Net>>,
    /// Override of the plan's methods (all five by default).
    pub methods: Option<Vec<Method>>,
    pub out: PathBuf,
    pub command: Vec<String>,
    pub progress: bool,
    pub exe: PathBuf,
}

pub fn suite(o: &SuiteOptions) -> Result<report::Results> {
    let mut plan = if o.quick {
        Plan::quick(o.tcp1997)
    } else {
        Plan::full(o.tcp1997)
    };
    if let Some(r) = o.reps {
        if r == 0 {
            bail!("--reps must be at least 1");
        }
        plan.reps = r;
    }
    if let Some(r) = o.local_reps {
        if r == 0 {
            bail!("--local-reps must be at least 1");
        }
        plan.local_reps = r;
    }
    plan.hosts = o.hosts;
    if let Some(n) = &o.nets {
        if n.is_empty() {
            bail!("--nets: nothing to run");
        }
        plan.nets = n.clone();
    }
    if let Some(m) = &o.methods {
        if m.is_empty() {
            bail!("--methods: nothing to run");
        }
        plan.methods = m.clone();
    }
    std::fs::create_dir_all(&o.out).with_context(|| format!("create {}", o.out.display()))?;
    let root = o.out.join("site");
    write_site(&root, &plan)?;
    let root = root.canonicalize()?;
    eprintln!(
        "getall: {} networks x {} sizes x {} image counts x {} methods x {} repetitions = {} fetches",
        plan.nets.len(),
        plan.sizes.len(),
        plan.counts.len(),
        plan.methods.len(),
        plan.reps,
        plan.nets.len() * plan.sizes.len() * plan.counts.len() * plan.methods.len() * plan.reps as usize
    );
    let mut provenance = crate::results::Provenance::begin("getall", o.command.clone());
    let t0 = Instant::now();
    let cells = run(
        &plan,
        &RunOptions {
            exe: o.exe.clone(),
            root,
            progress: o.progress,
            parallel: crate::connlen::DEFAULT_PARALLEL,
        },
    )?;
    crate::results::finish(&mut provenance);
    provenance.server = "pagewire serve".into();
    provenance.repetitions = [
        ("reps".to_string(), plan.reps),
        ("local_reps".to_string(), plan.local_reps),
    ]
    .into();
    provenance.link_configs = plan
        .nets
        .iter()
        .map(|n| -> Result<(String, serde_json::Value)> {
            Ok((
                n.name().to_string(),
                serde_json::to_value(n.link_config(plan.tcp1997)?)?,
            ))
        })
        .collect::<Result<_>>()?;
    provenance.page_variant = Some("getall synthetic pages (N images of one size)".into());
    provenance.request_profile = plan.methods.first().map(|m| {
        m.fetch_config("http://robot/", plan.hosts)
            .request_profile
            .name()
            .to_string()
    });
    provenance.note =
        "Synthetic pages: N <img> of one size (GIF89a signature + pseudo-random bytes). \
               Load time = robot start to the last byte of the last object."
            .into();
    let results = report::Results::new(provenance, plan, t0.elapsed().as_secs_f64(), cells);
    crate::results::Report::write(&results, &o.out)?;
    Ok(results)
}

/// The GETALL/GETLIST load-time suite.
pub struct Getall;

impl crate::suite::Suite for Getall {
    const KIND: crate::claims::Suite = crate::claims::Suite::Getall;
    const RUNS: &'static str =
        "Padmanabhan & Mogul: GETALL/GETLIST load time, Figures 5-8 (alias load-time)";
    type Ctx = claims::Ctx;
    fn claims() -> &'static [crate::claims::spec::ClaimSpec<Self::Ctx>] {
        claims::CLAIMS
    }
    fn judge(
        results: &serde_json::Value,
        _dir: Option<&std::path::Path>,
    ) -> anyhow::Result<crate::claims::Judged> {
        let j = claims::judge_value(results)?;
        Ok(crate::claims::Judged {
            model: model::model_notes(results, &j.claims),
            ..j
        })
    }
}
