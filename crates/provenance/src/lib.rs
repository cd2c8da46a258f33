//! What made a result: one [`Provenance`] record, filled by one function
//! ([`Provenance::begin`], then [`Provenance::finish`]) and written by every
//! suite's results writer under `"provenance"`.
//!
//! The git commit and dirty flag are the build's (see `build.rs`): a
//! results file names the source its binary was built from.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The commit the binary was built from (40 hex digits), or "unknown".
pub const GIT_COMMIT: &str = env!("PAGEWIRE_GIT_COMMIT");
/// "true" if tracked files differed from that commit when it was built,
/// "false" if not, "unknown" without git.
pub const GIT_DIRTY: &str = env!("PAGEWIRE_GIT_DIRTY");
/// pagewire's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What made a results directory. Fields added after the first results
/// were written default when an older file is read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    /// `pagewire 0.1.0 bench --suite microscape`.
    pub made_by: String,
    /// The suite: `microscape`, `section9`, `objpack`, `conn-length`,
    /// `getall`, `surge`, `prefetch`.
    pub suite: String,
    pub pagewire_version: String,
    /// The commit the binary was built from, or "unknown".
    pub git_commit: String,
    /// Tracked files differed from `git_commit` at build time; None when
    /// unknown (no git at build time).
    pub git_dirty: Option<bool>,
    /// The full command line (the program by its file name only).
    pub command: Vec<String>,
    /// When the suite started, `YYYY-MM-DD HH:MM:SS UTC`.
    pub date_utc: String,
    /// Host name.
    pub host: String,
    /// `Linux <release>`.
    pub kernel: String,
    /// /proc/cpuinfo's model name (or the architecture if it has none).
    pub cpu_model: String,
    /// Logical CPUs available to the process.
    pub cpus: usize,
    /// /proc/loadavg (1, 5, 15 minutes) when the suite started and ended:
    /// other work on the machine competes with the emulator and the peers.
    pub load_avg_before: Option<[f64; 3]>,
    pub load_avg_after: Option<[f64; 3]>,
    /// Every seed that shaped the results, by what it seeds (e.g. `page`,
    /// `link`, `workload`).
    pub seeds: BTreeMap<String, u64>,
    /// Repetitions (or trials, or file sets) per cell, by network or kind.
    pub repetitions: BTreeMap<String, u32>,
    /// The emulated links, by name, as the emulator was configured.
    pub link_configs: BTreeMap<String, serde_json::Value>,
    /// The robot's request profile (`minimal`, `libwww-1997`), where a
    /// robot fetched.
    pub request_profile: Option<String>,
    /// The page variant fetched (`original`, `css`, a replayed archive...).
    pub page_variant: Option<String>,
    /// The server that answered.
    pub server: String,
    /// When a run's link lateness flags it (see `pagewire_link::lateness`).
    pub link_lateness_rule: Option<String>,
    /// What a reader must know about the results (synthetic page, ...).
    pub note: String,
    /// The outside programs that took part (`nginx`, `apache2`,
    /// `chromium`, ...) and their versions as they report them (see
    /// [`peer_version`]); empty when only pagewire ran.
    pub peers: BTreeMap<String, String>,
}

impl Provenance {
    /// Everything known when a suite starts: build, command line, date,
    /// host, kernel, CPU and the load average. The suite fills in seeds,
    /// repetitions, links, robot, page, server and note, and calls
    /// [`Provenance::finish`] when its runs are done.
    pub fn begin(suite: &str, command: Vec<String>) -> Provenance {
        Provenance {
            made_by: format!("pagewire {VERSION} bench --suite {suite}"),
            suite: suite.to_string(),
            pagewire_version: VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            git_dirty: match GIT_DIRTY {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            command,
            date_utc: utc_now().0,
            host: read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            kernel: read_trim("/proc/sys/kernel/osrelease").map_or_else(
                || std::env::consts::OS.to_string(),
                |r| format!("Linux {r}"),
            ),
            cpu_model: cpu_model(),
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            load_avg_before: load_avg(),
            ..Provenance::default()
        }
    }

    /// The suite's runs are done: the load average at the end.
    pub fn finish(&mut self) {
        self.load_avg_after = load_avg();
    }

    /// Records the version of peer program `name` (run as `program args`,
    /// e.g. `nginx -v`), "unknown" when it does not run or names no version.
    pub fn add_peer(&mut self, name: &str, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) {
        let v = peer_version(program.as_ref(), args).unwrap_or_else(|| "unknown".to_string());
        self.peers.insert(name.to_string(), v);
    }

    /// The short commit with `+dirty` / `?` as it applies.
    pub fn commit_label(&self) -> String {
        let short = match self.git_commit.as_str() {
            "" => "unknown",
            c if c.len() >= 12 && c.is_ascii() => &c[..12],
            c => c,
        };
        match self.git_dirty {
            Some(true) => format!("{short}+dirty"),
            Some(false) => short.to_string(),
            None => format!("{short} (dirty unknown)"),
        }
    }

    /// The one provenance line of a terminal report.
    pub fn line(&self) -> String {
        let load = |l: Option<[f64; 3]>| l.map_or("?".to_string(), |l| format!("{:.2}", l[0]));
        let seeds = if self.seeds.is_empty() {
            String::new()
        } else {
            let s: Vec<String> = self.seeds.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("; seeds {}", s.join(","))
        };
        let reps = if self.repetitions.is_empty() {
            String::new()
        } else {
            let s: Vec<String> = self
                .repetitions
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("; reps {}", s.join(","))
        };
        let peers = if self.peers.is_empty() {
            String::new()
        } else {
            let s: Vec<String> = self.peers.iter().map(|(k, v)| format!("{k} {v}")).collect();
            format!("; peers {}", s.join(", "))
        };
        format!(
            "provenance: pagewire {} (git {}), {}; host {} ({}, {}, {} CPUs); load {} -> {}{seeds}{reps}{peers}",
            self.pagewire_version,
            self.commit_label(),
            self.date_utc,
            self.host,
            self.kernel,
            self.cpu_model,
            self.cpus,
            load(self.load_avg_before),
            load(self.load_avg_after),
        )
    }
}

/// This process's command line as results record it: the program by its
/// file name only, so that no file records a path of the machine.
pub fn command_line() -> Vec<String> {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                std::path::Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            } else {
                a
            }
        })
        .collect()
}

/// A peer program's version: the first line of `program args`' output
/// (stdout, then stderr) that carries a version number (`1.22.1`), at most
/// 120 characters; None if the program does not run, names no version or
/// takes more than 10 s. Each (program, args) runs once per process: a
/// suite asks for every run at no cost.
pub fn peer_version(program: &std::ffi::OsStr, args: &[&str]) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (std::ffi::OsString, Vec<String>);
    static CACHE: OnceLock<Mutex<HashMap<Key, Option<String>>>> = OnceLock::new();
    let key: Key = (
        program.to_os_string(),
        args.iter().map(|a| a.to_string()).collect(),
    );
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return v.clone();
    }
    let v = run_version(program, args);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, v.clone());
    v
}

fn run_version(program: &std::ffi::OsStr, args: &[&str]) -> Option<String> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    // Debian puts nginx and apache2 in /usr/sbin, not always on PATH.
    let mut exe = std::path::PathBuf::from(program);
    if exe.components().count() == 1 && !on_path(&exe) {
        for dir in ["/usr/sbin", "/sbin"] {
            if std::path::Path::new(dir).join(&exe).is_file() {
                exe = std::path::Path::new(dir).join(&exe);
                break;
            }
        }
    }
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // Readers on their own threads: a chatty program never blocks on a
    // full pipe while we wait.
    let read = |r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.take(64 * 1024).read_to_string(&mut s);
            s
        })
    };
    let out = read(Box::new(child.stdout.take()?));
    let err = read(Box::new(child.stderr.take()?));
    let until = Instant::now() + Duration::from_secs(10);
    // Bounded by 10 s; 5 ms steps.
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let text = format!("{}\n{}", out.join().ok()?, err.join().ok()?);
    version_line(&text)
}

fn on_path(name: &std::path::Path) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// The first line carrying `digit.digit`, trimmed, whitespace runs
/// squeezed, at most 120 characters.
fn version_line(text: &str) -> Option<String> {
    let line = text.lines().find(|l| {
        let b = l.as_bytes();
        b.windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit())
    })?;
    let squeezed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(squeezed.chars().take(120).collect())
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// /proc/loadavg's first three fields.
pub fn load_avg() -> Option<[f64; 3]> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>());
    Some([it.next()?.ok()?, it.next()?.ok()?, it.next()?.ok()?])
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| parse_cpu_model(&t))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "model name" | "Model" | "cpu model")
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// The current UTC date and time twice: `YYYY-MM-DD HH:MM:SS UTC` for
/// people and `YYYYMMDD-HHMMSS` for directory names.
pub fn utc_now() -> (String, String) {
    // "2026-11-21T06:54:00Z"
    let iso = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let (date, time) = (&iso[..10], &iso[11..19]);
    (
        format!("{date} {time} UTC"),
        format!("{}-{}", date.replace('-', ""), time.replace(':', "")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_time_commit_is_a_hash_or_unknown() {
        assert!(
            GIT_COMMIT == "unknown"
                || (GIT_COMMIT.len() == 40 && GIT_COMMIT.bytes().all(|b| b.is_ascii_hexdigit())),
            "{GIT_COMMIT:?}"
        );
        assert!(["true", "false", "unknown"].contains(&GIT_DIRTY));
    }

    #[test]
    fn begin_fills_the_machine_and_finish_the_load() {
        let mut p = Provenance::begin("microscape", vec!["pagewire".into(), "bench".into()]);
        assert_eq!(
            p.made_by,
            format!("pagewire {VERSION} bench --suite microscape")
        );
        assert!(p.date_utc.ends_with(" UTC") && p.date_utc.len() == 23);
        assert!(p.kernel.starts_with("Linux "), "{}", p.kernel);
        assert!(!p.cpu_model.is_empty() && p.cpus > 0);
        assert!(p.load_avg_before.is_some() && p.load_avg_after.is_none());
        p.finish();
        assert!(p.load_avg_after.is_some());
        let line = p.line();
        assert!(line.starts_with("provenance: pagewire "), "{line}");
        assert!(line.contains(&p.commit_label()));
    }

    #[test]
    fn parsers() {
        assert_eq!(
            parse_loadavg("0.52 1.10 2.00 3/456 7890\n"),
            Some([0.52, 1.10, 2.00])
        );
        assert_eq!(parse_loadavg("garbage"), None);
        assert_eq!(
            parse_cpu_model("processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz\n"),
            Some("Some CPU @ 2.0GHz".into())
        );
        assert_eq!(parse_cpu_model("processor\t: 0\n"), None);
    }

    #[test]
    fn older_results_without_new_fields_still_read() {
        let old = serde_json::json!({
            "made_by": "pagewire 0.1.0 bench --suite microscape",
            "command": ["pagewire", "bench"],
            "date_utc": "2026-11-22 10:00:00 UTC",
            "pagewire_version": "0.1.0",
            "seed": 1,
            "server": "pagewire",
            "host": "Linux 6.1, 2 CPUs",
            "note": "",
        });
        let p: Provenance = serde_json::from_value(old).unwrap();
        assert_eq!(p.git_commit, "");
        assert_eq!(p.server, "pagewire");
        assert_eq!(p.commit_label(), "unknown (dirty unknown)");
    }

    #[test]
    fn version_lines() {
        // Chromium's Debian wrapper prints a shell warning first.
        assert_eq!(
            version_line("/usr/bin/chromium: 9: [: 25276514304: unexpected operator\nChromium 156.0.8078.108 built on Debian\n"),
            Some("Chromium 156.0.8078.108 built on Debian".into())
        );
        assert_eq!(
            version_line("\nnginx version: nginx/1.22.1\n"),
            Some("nginx version: nginx/1.22.1".into())
        );
        assert_eq!(version_line("usage: foo [-v]\n"), None);
    }

    #[test]
    fn peer_versions_come_from_the_programs_output() {
        // The shell exists everywhere the lab runs; it prints what we ask.
        let v = peer_version("sh".as_ref(), &["-c", "echo noise; echo tool 2.5.1"]);
        assert_eq!(v.as_deref(), Some("tool 2.5.1"));
        assert_eq!(
            peer_version("pagewire-no-such-program".as_ref(), &["--version"]),
            None
        );
        let mut p = Provenance::default();
        p.add_peer("shell", "sh", &["-c", "echo tool 2.5.1 >&2"]);
        p.add_peer("missing", "pagewire-no-such-program", &["-v"]);
        assert_eq!(p.peers["shell"], "tool 2.5.1");
        assert_eq!(p.peers["missing"], "unknown");
        assert!(
            p.line()
                .ends_with("; peers missing unknown, shell tool 2.5.1"),
            "{}",
            p.line()
        );
    }

    #[test]
    fn commit_label_forms() {
        let mut p = Provenance {
            git_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            git_dirty: Some(true),
            ..Provenance::default()
        };
        assert_eq!(p.commit_label(), "0123456789ab+dirty");
        p.git_dirty = Some(false);
        assert_eq!(p.commit_label(), "0123456789ab");
        p.git_commit = "unknown".into();
        p.git_dirty = None;
        assert_eq!(p.commit_label(), "unknown (dirty unknown)");
    }
}
