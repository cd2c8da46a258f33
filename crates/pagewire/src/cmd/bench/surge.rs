//! `pagewire bench surge`: paper 004 (Barford & Crovella) — SURGE
//! load against a memory-limited server, monitored once a second.
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use pagewire_emu::LinkConfig;
use pagewire_lab::results::utc_now;
use pagewire_lab::surge::{self, report, Memory, Server, SurgeConfig};
use pagewire_load::run::Mode;

/// `bench surge`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SurgeSuiteArgs {
    /// Server: pagewire, nginx or apache (prefork MPM).
    #[arg(long, default_value = "pagewire")]
    pub server: String,
    /// Quick check: two load levels, 10 s runs.
    #[arg(long)]
    pub quick: bool,
    /// Seed of the SURGE request stream.
    #[arg(long, default_value_t = crate::cmd::DEFAULT_SEED)]
    pub seed: u64,
    /// The link between the load generator and the server: any profile of
    /// `pagewire link --net` (lan, lan100, t1, wan, ppp, none, with
    /// `+codel` etc.). The paper's servers sat on a 100 Mbit/s LAN.
    #[arg(long, default_value = "lan100")]
    pub net: String,
    #[command(flatten)]
    pub surge: SurgeArgs,
    #[command(flatten)]
    pub common: super::Common,
}

/// The surge suite's own options.
#[derive(clap::Args, Debug, Clone)]
pub struct SurgeArgs {
    /// Server memory limits (cgroup), comma-separated: e.g. 32M,64M,none.
    /// Default none,64M,32M (--quick: none,24M; pagewire: none).
    #[arg(long, value_delimiter = ',')]
    pub memory: Vec<String>,
    /// Add a CPU-bound configuration (the paper's section 4.2): unlimited
    /// memory and a CPU quota of this many cores on the server's cgroup
    /// (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`), labelled `cpu`.
    /// E.g. 0.01: a hundredth of one CPU.
    #[arg(long, value_name = "CORES")]
    pub cpu: Option<f64>,
    /// A disk of the paper's era for the memory-limited configurations:
    /// the server's cgroup may read at most this many times a second from
    /// the disk holding the file set (cgroup v1
    /// `blkio.throttle.read_iops_device`, v2 `io.max riops`), so its
    /// page-cache misses queue on the disk (a 1998 disk: about 100).
    #[arg(long, value_name = "READS_PER_S", value_parser = clap::value_parser!(u32).range(1..))]
    pub disk_iops: Option<u32>,
    /// Let the memory-limited server page its own memory out to the
    /// machine's swap, as the paper's server did under its RAM limit
    /// (default: swap held at the limit, so the limit can only take page
    /// cache back, or OOM-kill). The machine must have swap on.
    #[arg(long)]
    pub swap: bool,
    /// Modes of one configuration in place of --modes, as LABEL=MODES
    /// (repeatable): e.g. --modes-of cpu=http10,http11 --modes-of
    /// 64M=http10,http11,early-close.
    #[arg(long, value_name = "LABEL=MODES")]
    pub modes_of: Vec<String>,
    /// Load levels in user equivalents. Default 40,280,520 (--quick: 10,40).
    #[arg(long, value_delimiter = ',')]
    pub ues: Vec<u64>,
    /// Modes: http10, http11, pipeline, early-close.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "http10,http11,pipeline,early-close"
    )]
    pub modes: Vec<String>,
    /// Length of each run (the ramp included). Default 30s (--quick: 10s).
    #[arg(long, value_parser = crate::cmd::positive_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Not measured at the start of each run. Default a tenth of --duration (at most 30 s).
    #[arg(long, value_parser = crate::cmd::positive_duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,
    /// UEs start spread over this much time. Default 5s (--quick: 2s).
    #[arg(long, value_parser = crate::cmd::positive_duration, allow_hyphen_values = true)]
    pub ramp: Option<Duration>,
    /// Files in the SURGE set (paper: 2000, about 50 MB).
    #[arg(long, default_value_t = pagewire_load::fileset::DEFAULT_FILES)]
    pub files: usize,
    /// Runs of every (memory, mode, UEs) cell; the claims read them as the
    /// cell's repetitions (95% interval), so a claim needs at least 3.
    /// Every repetition replays the same request stream (--seed).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Keep the page cache between runs of memory-limited configurations
    /// (default: emptied before each, so the files come from disk).
    #[arg(long)]
    pub warm: bool,
}

pub fn run(a: &SurgeSuiteArgs) -> Result<ExitCode> {
    let s = &a.surge;
    let quick = a.quick;
    let progress = !a.common.no_progress;
    let seed = a.seed;
    let server = match a.server.as_str() {
        "pagewire" => Server::Pagewire {
            exe: std::env::current_exe().context("find this pagewire binary")?,
        },
        "nginx" => Server::Nginx,
        "apache" => Server::Apache,
        other => {
            crate::usage_bail!(
                "--server: the surge suite runs pagewire, nginx or apache, got {other:?}"
            )
        }
    };
    let mem_specs: Vec<String> = if !s.memory.is_empty() {
        s.memory.clone()
    } else if matches!(server, Server::Pagewire { .. }) {
        // pagewire's server holds the file set in its own memory: only unlimited runs.
        vec!["none".into()]
    } else if quick {
        vec!["none".into(), "24M".into()]
    } else {
        vec!["none".into(), "64M".into(), "32M".into()]
    };
    let mut memories = mem_specs
        .iter()
        .map(|m| Memory::parse(m).map_err(|e| crate::cmd::usage(format!("--memory: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    if let Some(n) = s.disk_iops {
        let mut any = false;
        for m in memories.iter_mut().filter(|m| m.limit_bytes.is_some()) {
            m.disk_iops = Some(n);
            any = true;
        }
        if !any {
            crate::usage_bail!(
                "--disk-iops: no memory-limited configuration to give the slow disk (add e.g. --memory none,96M)"
            );
        }
    }
    if s.swap {
        let mut any = false;
        for m in memories.iter_mut().filter(|m| m.limit_bytes.is_some()) {
            m.swap = true;
            any = true;
        }
        if !any {
            crate::usage_bail!(
                "--swap: no memory-limited configuration to page (add e.g. --memory none,32M)"
            );
        }
    }
    if let Some(c) = s.cpu {
        memories.push(Memory::cpu(c).map_err(|e| crate::cmd::usage(format!("--cpu: {e}")))?);
    }
    let ues = if !s.ues.is_empty() {
        s.ues.clone()
    } else if quick {
        vec![10, 40]
    } else {
        vec![40, 280, 520]
    };
    if ues.contains(&0) {
        crate::usage_bail!("--ues: every load level needs at least 1 UE");
    }
    let modes = s
        .modes
        .iter()
        .map(|m| {
            m.trim()
                .parse::<Mode>()
                .map_err(|e| crate::cmd::usage(format!("--modes: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    if modes.is_empty() {
        crate::usage_bail!("--modes: nothing to run");
    }
    let mut modes_of = Vec::new();
    for spec in &s.modes_of {
        let Some((label, list)) = spec.split_once('=') else {
            crate::usage_bail!(
                "--modes-of: expected LABEL=MODES (e.g. cpu=http10,http11), got {spec:?}"
            );
        };
        let label = label.trim();
        if !memories.iter().any(|m| m.label.eq_ignore_ascii_case(label)) {
            crate::usage_bail!(
                "--modes-of: no configuration {label:?} (configurations: {})",
                memories
                    .iter()
                    .map(|m| m.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let ms = list
            .split(',')
            .map(|m| {
                m.trim()
                    .parse::<Mode>()
                    .map_err(|e| crate::cmd::usage(format!("--modes-of {label}: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        modes_of.push((label.to_string(), ms));
    }
    let duration = s
        .duration
        .unwrap_or(Duration::from_secs(if quick { 10 } else { 30 }));
    let ramp = s
        .ramp
        .unwrap_or(Duration::from_secs(if quick { 2 } else { 5 }));
    if duration < Duration::from_secs(2) || ramp >= duration {
        crate::usage_bail!("--duration must be at least 2 s and longer than --ramp");
    }
    let warmup = s
        .warmup
        .unwrap_or_else(|| crate::cmd::load::default_warmup(duration));
    if warmup >= duration {
        crate::usage_bail!("--warmup must be shorter than --duration");
    }
    let link = LinkConfig::profile(&a.net).map_err(|e| crate::cmd::usage(format!("--net: {e}")))?;
    let link_label = format!(
        "{} ({}, RTT {} ms)",
        a.net,
        rate_label(&link.down_rate),
        link.rtt.as_secs_f64() * 1000.0
    );
    let (date, _) = utc_now();
    let out = a.common.out_dir("bench-surge")?;
    let command = pagewire_emu::command_line();
    let cfg = SurgeConfig {
        server: server.clone(),
        memories,
        ues,
        modes,
        modes_of,
        duration,
        warmup,
        ramp,
        reps: s.reps,
        files: s.files,
        fileset_seed: pagewire_load::fileset::DEFAULT_SEED,
        seed,
        out_dir: out.clone(),
        link: link.clone(),
        cold_cache: !s.warm,
        progress,
        command: command.clone(),
    };
    let runs = cfg
        .memories
        .iter()
        .map(|m| cfg.modes_for(m).len())
        .sum::<usize>()
        * cfg.ues.len()
        * cfg.reps as usize;
    eprintln!(
        "surge suite: {} server, {runs} runs of {} s on {} (~{:.0} min); results: {}",
        server.label(),
        duration.as_secs(),
        a.net,
        runs as f64 * (duration.as_secs_f64() + 2.0) / 60.0,
        out.display()
    );
    let o = surge::run(&cfg)?;
    let fits = report::fits(&o.runs);
    let claims = report::check(&o.runs, &fits);
    let calibration = surge::suite_calibration(&o.runs);
    let header = format!(
        "pagewire {} bench --suite surge — {date}\ncommand: {}\n{}\n{}; load average at the end {:.2}\n\
         server: {}; file set: {} files, {:.1} MB; link: {link_label}; {} runs in {:.0} s\n",
        env!("CARGO_PKG_VERSION"),
        command.join(" "),
        o.provenance.line(),
        o.cgroup,
        surge::loadavg(),
        server.label(),
        o.manifest_files,
        o.manifest_bytes as f64 / 1048576.0,
        o.runs.len(),
        o.wall_s
    );
    let mut text = report::render_text(&o, &fits, &claims, &header);
    text += "\n";
    text += &calibration.text();
    if !calibration.within_bands {
        text += "The load is off calibration: paper 004's claims are not testable on these runs.\n";
    }
    let res = report::Results {
        schema_version: pagewire_lab::results::SCHEMA_VERSION,
        made_by: &o.provenance.made_by,
        provenance: &o.provenance,
        cgroup: &o.cgroup,
        link: serde_json::to_value(&link)?,
        file_set: serde_json::json!({"files": o.manifest_files, "bytes": o.manifest_bytes, "seed": cfg.fileset_seed, "stream_seed": cfg.seed, "warmup_s": cfg.warmup.as_secs_f64()}),
        wall_s: o.wall_s,
        runs: &o.runs,
        per_connection_memory: &fits,
        calibration: &calibration,
        claims: &claims,
        text: &text,
    };
    pagewire_lab::results::Report::write(&res, &out)?;
    a.common.emit(&out, &text)?;
    a.common.wrote(&format!(
        "Wrote {0}/results.json, results.csv, report.txt, report.html and the monitor CSVs in {0}/monitor/.",
        out.display()
    ));
    if let Some(sig) = o.interrupted_by {
        eprintln!(
            "pagewire bench: interrupted by signal {sig}; the results above cover the runs done"
        );
        return Ok(ExitCode::from(130));
    }
    let failed = o.runs.iter().filter(|r| !r.ok()).count();
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("{failed} run(s) failed");
        ExitCode::from(1)
    })
}

/// `100 Mbit/s`, `28.8 kbit/s`, `unlimited`.
fn rate_label(r: &pagewire_link::config::Rate) -> String {
    use pagewire_link::config::Rate;
    match r {
        Rate::Unlimited => "unlimited".into(),
        Rate::Bps(b) if *b >= 1_000_000 => format!("{} Mbit/s", *b as f64 / 1e6),
        Rate::Bps(b) => format!("{} kbit/s", *b as f64 / 1e3),
        Rate::Trace(_) => "trace".into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rate_labels() {
        use pagewire_link::config::Rate;
        assert_eq!(super::rate_label(&Rate::Bps(100_000_000)), "100 Mbit/s");
        assert_eq!(super::rate_label(&Rate::Bps(1_544_000)), "1.544 Mbit/s");
        assert_eq!(super::rate_label(&Rate::Bps(28_800)), "28.8 kbit/s");
        assert_eq!(super::rate_label(&Rate::Unlimited), "unlimited");
    }
}
