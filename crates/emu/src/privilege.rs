//! What the emulator needs from the system, and the unprivileged path.
//!
//! As root everything just works. As a normal user, [`enter_user_namespace`]
//! (called while the process is still single-threaded, e.g. first thing in
//! a command) moves the process into a new user namespace where it is root,
//! which lets it create network namespaces and TUN devices owned by that
//! user namespace. Where that is not possible, [`check`] explains exactly
//! what is missing.

use std::io;

use anyhow::{bail, Result};

fn euid() -> u32 {
    // SAFETY: geteuid never fails.
    unsafe { libc::geteuid() }
}

fn threads_in_process() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
}

/// True if this process has CAP_SYS_ADMIN and CAP_NET_ADMIN in its user
/// namespace (what creating namespaces and TUN devices needs).
fn has_admin_caps() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return euid() == 0;
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

/// If not privileged, tries to enter an unprivileged user namespace (mapping
/// the current uid/gid to root inside it). Must be called while the process
/// has one thread: unshare(CLONE_NEWUSER) refuses multi-threaded callers.
/// Returns Ok(true) if it entered one, Ok(false) if not needed.
pub fn enter_user_namespace() -> Result<bool> {
    if has_admin_caps() {
        return Ok(false);
    }
    if threads_in_process() != Some(1) {
        bail!(
            "cannot enter a user namespace: the process already has several threads \
             (call pagewire_emu::enter_user_namespace first thing in main)"
        );
    }
    // SAFETY: getuid/getgid never fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: plain syscall on a single-threaded process.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        let e = io::Error::last_os_error();
        bail!("{}", missing_message(Some(&e)));
    }
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    let _ = OUTSIDE_IDS.set((uid, gid));
    Ok(true)
}

static OUTSIDE_IDS: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();

/// The user and group this process had before `enter_user_namespace` made
/// it root of a new user namespace (None if it did not).
pub fn outside_ids() -> Option<(u32, u32)> {
    OUTSIDE_IDS.get().copied()
}

/// The message for a user who can run neither as root nor in a user
/// namespace: says exactly what is missing on this system.
pub fn missing_message(unshare_err: Option<&io::Error>) -> String {
    let mut why = Vec::new();
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    if let Some(v) = read("/proc/sys/kernel/unprivileged_userns_clone") {
        if v == "0" {
            why.push("kernel.unprivileged_userns_clone = 0 (set it to 1)".to_string());
        }
    }
    if let Some(v) = read("/proc/sys/user/max_user_namespaces") {
        if v == "0" {
            why.push("user.max_user_namespaces = 0 (set it > 0)".to_string());
        }
    }
    if let Some(v) = read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") {
        if v == "1" {
            why.push(
                "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor blocks user namespaces)"
                    .to_string(),
            );
        }
    }
    if let Some(e) = unshare_err {
        why.push(format!("unshare(CLONE_NEWUSER) failed: {e}"));
    }
    format!(
        "the emulated link needs CAP_SYS_ADMIN + CAP_NET_ADMIN (to create network namespaces, \
         TUN devices or veth pairs); pagewire gets them by entering an unprivileged user \
         namespace, which failed: run it as root (sudo), or allow unprivileged user namespaces. \
         On this system: {}",
        if why.is_empty() {
            "no restriction found".to_string()
        } else {
            why.join("; ")
        }
    )
}

/// Checks the preconditions before creating anything; the error says what
/// is missing. The datapath is the one `PAGEWIRE_DATAPATH` asks for (auto:
/// TUN where /dev/net/tun opens, else packet sockets).
pub fn check() -> Result<()> {
    check_for(crate::Datapath::resolve(crate::Datapath::from_env()?))
}

/// `check` for a given datapath.
pub fn check_for(datapath: crate::Datapath) -> Result<()> {
    if !has_admin_caps() {
        bail!("{}", missing_message(None));
    }
    if datapath == crate::Datapath::Tun {
        if let Err(e) = std::fs::metadata("/dev/net/tun") {
            bail!(
                "/dev/net/tun is missing ({e}): load the tun module (modprobe tun), \
                 or use the packet-socket path (PAGEWIRE_DATAPATH=packet)"
            );
        }
        if !crate::ns::tun_openable() {
            bail!(
                "{ENV}=tun, but /dev/net/tun cannot be opened by this user (mode {mode:o}): \
                 `chmod 0666 /dev/net/tun`, run as root, or use {ENV}=packet \
                 (veth pairs and AF_PACKET sockets; the default where TUN is closed)",
                ENV = crate::ENV_DATAPATH,
                mode = tun_mode()
            );
        }
    }
    Ok(())
}

fn tun_mode() -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata("/dev/net/tun")
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0)
}

/// What the process is, for messages and reports: `root`, `user namespace`
/// (a normal user who entered one) or `unprivileged`.
pub fn describe() -> &'static str {
    if euid() == 0 && has_admin_caps() {
        if std::fs::read_to_string("/proc/self/uid_map")
            .map(|m| m.split_whitespace().nth(1) == Some("0"))
            .unwrap_or(true)
        {
            "root"
        } else {
            "user namespace"
        }
    } else {
        "unprivileged"
    }
}
