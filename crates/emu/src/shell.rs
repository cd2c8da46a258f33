//! The process side of `pagewire shell`: the command's own mount namespace
//! (the gateway as its resolver), its identity (a normal user stays that
//! user inside), and the terminal handed to its process group.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Makes `cmd`, when spawned:
/// - enter a new mount namespace where `resolv_conf` is bind-mounted over
///   /etc/resolv.conf (the rest of the file system is the caller's);
/// - if `map_back` is `Some((uid, gid))` (the caller entered a user
///   namespace as a normal user), enter one more user namespace where it is
///   that user again, so files it creates and `id` look as outside;
/// - if `terminal`, take the terminal on fd 0 for its own process group
///   (tcsetpgrp), so an interactive shell is not stopped by SIGTTIN.
pub fn prepare(
    cmd: &mut Command,
    resolv_conf: &Path,
    map_back: Option<(u32, u32)>,
    terminal: bool,
) -> Result<()> {
    let src = CString::new(resolv_conf.as_os_str().as_bytes()).context("resolv.conf path")?;
    let dst = CString::new("/etc/resolv.conf").expect("no NUL");
    let root = CString::new("/").expect("no NUL");
    // Everything the child writes is prepared here: after fork only
    // async-signal-safe calls, no allocation.
    let maps = map_back.map(|(uid, gid)| {
        (
            format!("{uid} 0 1"),
            format!("{gid} 0 1"),
            CString::new("/proc/self/setgroups").expect("no NUL"),
            CString::new("/proc/self/uid_map").expect("no NUL"),
            CString::new("/proc/self/gid_map").expect("no NUL"),
        )
    });
    cmd.process_group(0);
    // SAFETY: only async-signal-safe system calls on data prepared above.
    unsafe {
        cmd.pre_exec(move || {
            cvt(libc::unshare(libc::CLONE_NEWNS))?;
            // Our mounts stay ours: nothing propagates back to the host.
            cvt(libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ))?;
            cvt(libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ))?;
            if let Some((uid_map, gid_map, setgroups, uid_path, gid_path)) = &maps {
                cvt(libc::unshare(libc::CLONE_NEWUSER))?;
                write_file(setgroups, b"deny")?;
                write_file(uid_path, uid_map.as_bytes())?;
                write_file(gid_path, gid_map.as_bytes())?;
            }
            if terminal {
                // The process group is set before this closure runs; set it
                // again to be independent of that order.
                cvt(libc::setpgid(0, 0))?;
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    Ok(())
}

/// write(2) of a whole small buffer to a file (async-signal-safe).
fn write_file(path: &CString, data: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a valid C string and buffer.
    unsafe {
        let fd = cvt(libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC))?;
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n != data.len() as isize {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The controlling terminal on fd 0, while this process owns its
/// foreground: handed to a child's process group and taken back.
pub struct Terminal {
    own_pgrp: libc::pid_t,
}

impl Terminal {
    /// Some if fd 0 is a terminal whose foreground group is ours.
    pub fn foreground() -> Option<Terminal> {
        // SAFETY: plain queries on fd 0.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let own = libc::getpgrp();
            (libc::tcgetpgrp(0) == own).then_some(Terminal { own_pgrp: own })
        }
    }

    /// Makes `pgid` the foreground process group.
    pub fn hand_to(&self, pgid: u32) {
        set_foreground(pgid as libc::pid_t);
    }

    /// Makes our own process group the foreground again.
    pub fn take_back(&self) {
        set_foreground(self.own_pgrp);
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.take_back();
    }
}

fn set_foreground(pgid: libc::pid_t) {
    // A background process calling tcsetpgrp gets SIGTTOU: ignore it for
    // the call (as shells do).
    // SAFETY: signal dispositions and tcsetpgrp on fd 0.
    unsafe {
        let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::tcsetpgrp(0, pgid);
        libc::signal(libc::SIGTTOU, old);
    }
}
