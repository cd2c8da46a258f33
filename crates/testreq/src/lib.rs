//! What a pagewire test needs from the machine, checked in one place.
//!
//! Every test that needs something the machine may lack (root, a TUN
//! device, a peer program such as nginx or Chromium) starts with one of
//! these calls and returns when it answers `false` / `None`:
//!
//! ```no_run
//! # fn main() {
//! if !pagewire_testreq::require_root() {
//!     return;
//! }
//! let Some(nginx) = pagewire_testreq::require_peer("nginx") else {
//!     return;
//! };
//! # let _ = nginx;
//! # }
//! ```
//!
//! * With `PAGEWIRE_REQUIRE_ALL=1` (set by `scripts/test.sh`, hence by CI) a
//!   missing requirement **fails** the test with one line saying what is
//!   missing and how to get it.
//! * Otherwise the test is reported skipped, by name: a line
//!   `SKIPPED <test>: <what is missing>; <how to get it>` goes straight to
//!   the process's standard error (past the test harness's output capture)
//!   and, when `PAGEWIRE_SKIP_LOG` names a file, is appended to it, so that
//!   `scripts/test.sh` counts skips instead of counting them as passes.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The variable that turns every missing requirement into a failure.
pub const REQUIRE_ALL: &str = "PAGEWIRE_REQUIRE_ALL";
/// A file each skip is appended to (one line per skipped test).
pub const SKIP_LOG: &str = "PAGEWIRE_SKIP_LOG";

/// Whether a missing requirement must fail the test.
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1" || v == "true")
}

/// The running test's name as the harness gives it (libtest names each
/// test's thread after the test); the test binary's name otherwise.
pub fn test_name() -> String {
    let thread = std::thread::current();
    match thread.name() {
        Some(n) if n != "main" => n.to_string(),
        _ => std::env::args()
            .next()
            .map(|a| {
                Path::new(&a)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or(a)
            })
            .unwrap_or_else(|| "unknown test".into()),
    }
}

/// The one place a requirement is decided: `true` when `met`; otherwise a
/// failure (under [`REQUIRE_ALL`]) or a skip reported by name.
///
/// `what` says what is missing ("needs root (network namespaces)"), `how`
/// how to get it ("run the tests as root, as CI does").
#[track_caller]
pub fn require(met: bool, what: &str, how: &str) -> bool {
    if met {
        return true;
    }
    let test = test_name();
    if require_all() {
        panic!("{test} {what}; {how} ({REQUIRE_ALL}=1 makes this a failure)");
    }
    let line = format!("SKIPPED {test}: {what}; {how}\n");
    // Written to the file descriptor itself: `eprintln!` would be captured
    // by the test harness and shown only for failing tests.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
    false
}

/// Whether this process has CAP_SYS_ADMIN and CAP_NET_ADMIN (what creating
/// network namespaces, veth pairs and TUN devices needs; root has them).
pub fn has_net_admin() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let sys_admin = 1u64 << 21;
    let net_admin = 1u64 << 12;
    eff & sys_admin != 0 && eff & net_admin != 0
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// Root, for network namespaces (and, with them, veth pairs and cgroups).
#[track_caller]
pub fn require_root() -> bool {
    require(
        is_root() && has_net_admin(),
        "needs root (network namespaces)",
        "run the tests as root with CAP_SYS_ADMIN and CAP_NET_ADMIN, as CI does (`sudo bash scripts/test.sh`)",
    )
}

/// A TUN device (`/dev/net/tun`, opened read-write) and the rights to
/// create one: the link emulator's forwarder.
#[track_caller]
pub fn require_tun() -> bool {
    if !require_root() {
        return false;
    }
    let tun = Path::new("/dev/net/tun");
    let opened = std::fs::OpenOptions::new().read(true).write(true).open(tun);
    require(
        opened.is_ok(),
        &format!(
            "needs a TUN device (/dev/net/tun: {})",
            opened.err().map(|e| e.to_string()).unwrap_or_default()
        ),
        "load the tun module (`modprobe tun`) or give the container /dev/net/tun (`--device /dev/net/tun`)",
    )
}

/// Where a peer program is installed: an environment override
/// (`PAGEWIRE_<NAME>`, e.g. `PAGEWIRE_CHROMIUM`), then `PATH`, then the
/// system directories Debian installs daemons into.
pub fn find_program(name: &str) -> Option<PathBuf> {
    let var = format!(
        "PAGEWIRE_{}",
        name.to_ascii_uppercase().replace(['-', '.'], "_")
    );
    if let Some(p) = std::env::var_os(&var) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in [
        "/usr/local/sbin",
        "/usr/sbin",
        "/sbin",
        "/usr/local/bin",
        "/usr/bin",
        "/bin",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A peer program (nginx, apache2, curl, tshark, chromium, git, ...); its
/// path when installed.
#[track_caller]
pub fn require_peer(name: &str) -> Option<PathBuf> {
    require_any_peer(&[name])
}

/// The first installed of several names of one peer (e.g. `chromium`,
/// `chromium-browser`).
#[track_caller]
pub fn require_any_peer(names: &[&str]) -> Option<PathBuf> {
    let found = names.iter().find_map(|n| find_program(n));
    if require(
        found.is_some(),
        &format!("needs {} (not installed)", names.join(" or ")),
        "scripts/setup-deps.sh installs it",
    ) {
        found
    } else {
        None
    }
}

/// A file a test reads from a system package (a fixture such as Debian's
/// documentation of a Python module).
#[track_caller]
pub fn require_file(path: &Path, what: &str) -> bool {
    require(
        path.exists(),
        &format!("needs {what} ({} is missing)", path.display()),
        "scripts/setup-deps.sh installs it",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_met_requirement_is_true_and_silent() {
        assert!(require(true, "needs nothing", "nothing to do"));
    }

    #[test]
    fn a_program_on_every_machine_is_found_and_a_made_up_one_is_not() {
        // `sh` is on every POSIX system the tests run on.
        assert!(find_program("sh").is_some());
        assert!(find_program("pagewire-no-such-program-8d1f").is_none());
    }

    /// Both sides of the rule, in child processes so the variable set for
    /// one does not leak into other tests.
    #[test]
    fn missing_fails_under_require_all_and_is_skipped_by_name_otherwise() {
        if std::env::var_os("PAGEWIRE_TESTREQ_CHILD").is_some() {
            // The child: a requirement that is never met.
            if require(false, "needs a unicorn", "none exist") {
                panic!("an unmet requirement answered true");
            }
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let run = |all: &str, log: &Path| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "tests::missing_fails_under_require_all_and_is_skipped_by_name_otherwise",
                    "--test-threads=2",
                ])
                .env("PAGEWIRE_TESTREQ_CHILD", "1")
                .env(REQUIRE_ALL, all)
                .env(SKIP_LOG, log)
                .output()
                .unwrap()
        };
        let dir = std::env::temp_dir().join(format!("pw-testreq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips");
        let failing = run("1", &log);
        let out = String::from_utf8_lossy(&failing.stdout).into_owned()
            + &String::from_utf8_lossy(&failing.stderr);
        assert!(!failing.status.success(), "{out}");
        assert!(out.contains("needs a unicorn; none exist"), "{out}");
        assert!(!log.exists(), "a failure is not a skip");

        let skipping = run("0", &log);
        let err = String::from_utf8_lossy(&skipping.stderr);
        assert!(skipping.status.success(), "{err}");
        let want = "SKIPPED tests::missing_fails_under_require_all_and_is_skipped_by_name_otherwise: needs a unicorn; none exist";
        assert!(err.contains(want), "{err}");
        assert_eq!(std::fs::read_to_string(&log).unwrap().trim(), want);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
