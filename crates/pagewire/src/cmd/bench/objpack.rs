//! `pagewire bench objpack`: paper 002 (Fujinoki, Sanjay, Shah,
//! object packaging), Tables 3-7 and its claims; see docs/objpack.md.
use std::process::ExitCode;

use anyhow::Result;
use pagewire_lab::objpack::methods::Method;
use pagewire_lab::objpack::run::{NetPlan, WINDOW_SETS};
use pagewire_lab::objpack::sys::Cache;
use pagewire_lab::objpack::{self as suite, ObjpackConfig};
use pagewire_lab::results::utc_now;

/// `bench objpack`'s flags.
#[derive(clap::Args)]
pub struct ObjpackArgs {
    /// Networks, comma-separated: any profile of `pagewire link --net`
    /// (default: lan100 with 10 sets per group and wan with 3).
    #[arg(long, value_delimiter = ',')]
    net: Vec<String>,
    /// File sets per group (1..=10; the paper: 10).
    #[arg(long)]
    reps: Option<u32>,
    /// Methods, comma-separated (default all): http10, http11, objpack,
    /// pipeline, multipart, tar, objpack-1b. A claim whose methods are not
    /// run is left inconclusive (not measured).
    #[arg(long, value_delimiter = ',', value_name = "METHODS")]
    methods: Vec<String>,
    /// Cache states of the runs on the LANs, comma-separated: warm, cold
    /// (default both: the cold runs give the disk's share; the other
    /// networks are link-bound and run warm only). The claims read the
    /// warm runs.
    #[arg(long, value_delimiter = ',', value_name = "STATES")]
    caches: Vec<String>,
    /// Quick check: two sets on lan100 only (under a minute).
    #[arg(long)]
    quick: bool,
    /// Seed of the file sets (and of link loss/jitter).
    #[arg(long, default_value_t = crate::cmd::DEFAULT_SEED)]
    seed: u64,
    /// Link options, laid over every network's profile.
    #[command(flatten)]
    link: super::super::linkopts::LinkOptions,
    #[command(flatten)]
    common: super::Common,
}

/// Sets per network when `--reps` is not given: the paper's 10 on the LAN;
/// 3 on the WAN, where one set of 32 KB files takes ~20 s per method.
const DEFAULT_SETS: [(&str, usize); 2] = [("lan100", 10), ("wan", 3)];
/// `--quick`: one set per group on the LAN only, warm and cold (42 runs,
/// about half a minute).
const QUICK_SETS: usize = 1;

/// The plan of one network: cold runs and the windows of five sets where
/// the link is fast enough for the disk to matter (the LANs), warm only on
/// the others (link-bound).
fn plan(name: &str, sets: usize, lan_caches: &[Cache]) -> NetPlan {
    let lan = name.starts_with("lan");
    NetPlan {
        name: name.to_string(),
        sets,
        caches: if lan {
            lan_caches.to_vec()
        } else {
            vec![Cache::Warm]
        },
        windows: lan && sets >= WINDOW_SETS,
    }
}

pub fn run(a: &ObjpackArgs) -> Result<ExitCode> {
    let defaulted = a.net.is_empty();
    let mut nets: Vec<(String, usize)> = if a.quick {
        vec![("lan100".to_string(), QUICK_SETS)]
    } else if defaulted {
        DEFAULT_SETS
            .iter()
            .map(|(n, s)| (n.to_string(), *s))
            .collect()
    } else {
        a.net.iter().map(|n| (n.trim().to_string(), 10)).collect()
    };
    if let Some(r) = a.reps {
        if r == 0 || r > 10 {
            crate::usage_bail!("--reps (sets per group) must be 1..=10 for the objpack suite");
        }
        for n in &mut nets {
            n.1 = r as usize;
        }
    }
    let mut methods = Vec::new();
    for m in &a.methods {
        let m = m.trim();
        let Some(me) = Method::ALL.into_iter().find(|x| x.name() == m) else {
            crate::usage_bail!(
                "--methods: unknown method {m:?} (http10, http11, objpack, pipeline, multipart, tar, objpack-1b)"
            );
        };
        if !methods.contains(&me) {
            methods.push(me);
        }
    }
    if methods.is_empty() {
        methods = Method::ALL.to_vec();
    }
    let mut caches = Vec::new();
    for c in &a.caches {
        let c = match c.trim() {
            "warm" => Cache::Warm,
            "cold" => Cache::Cold,
            other => crate::usage_bail!("--caches: unknown cache state {other:?} (warm, cold)"),
        };
        if !caches.contains(&c) {
            caches.push(c);
        }
    }
    if caches.is_empty() {
        caches = vec![Cache::Warm, Cache::Cold];
    }
    let overrides = a.link.parse().map_err(crate::cmd::usage_from)?;
    let seed = a.seed;
    for (n, _) in &nets {
        overrides
            .config(n, seed)
            .map_err(|e| crate::cmd::usage(format!("--net {n}: {e:#}")))?;
    }
    let (date, _) = utc_now();
    let out = a.common.out_dir("bench-objpack")?;
    eprintln!(
        "objpack suite: {} methods x 3 groups x sets {:?}; results: {}",
        methods.len(),
        nets,
        out.display()
    );
    let cfg = ObjpackConfig {
        nets: nets.iter().map(|(n, s)| plan(n, *s, &caches)).collect(),
        methods,
        seed,
        out_dir: out.clone(),
        link_config: Box::new(move |n| overrides.config(n, seed)),
        progress: !a.common.no_progress,
    };
    let loadavg = || {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let load_start = loadavg();
    let outcome = suite::run(&cfg)?;
    let command: Vec<String> = pagewire_provenance::command_line();
    let load = format!("{load_start} at the start, {} at the end", loadavg());
    let text = suite::report::write(&out, &outcome, &cfg.methods, &command, &date, seed, &load)?;
    a.common.emit(&out, &text)?;
    a.common.wrote(&format!(
        "Wrote {0}/results.json, results.csv, report.txt and report.html.",
        out.display()
    ));
    // The generated files are inputs, not results.
    let _ = std::fs::remove_dir_all(out.join("files"));
    Ok(ExitCode::SUCCESS)
}
