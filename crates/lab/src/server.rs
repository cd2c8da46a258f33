//! The one server launcher of the suites that run a server process in the
//! emulated link's server namespace (microscape: `pagewire serve`, nginx or
//! any command; getall: `pagewire serve`). The process is stopped (its
//! process group: SIGTERM, then SIGKILL after a grace period) when the
//! guard is dropped, also on error paths; the link's own Drop kills
//! anything left in the namespace.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Result};
use pagewire_emu::Link;

/// A server process in a link's server namespace; stopped when dropped.
pub struct ServerGuard(pub Child);

impl ServerGuard {
    /// Starts `cmd` in `link`'s server namespace.
    pub fn spawn(link: &Link, cmd: Command) -> Result<ServerGuard> {
        Ok(ServerGuard(link.spawn_in_server(cmd)?))
    }
}

impl Drop for ServerGuard {
    fn drop(&mut self) {
        // SIGTERM to its process group, SIGKILL after the grace period
        // (short after a Ctrl-C: the user is waiting).
        let grace = if crate::interrupt::signalled() {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(2)
        };
        pagewire_emu::cli::stop_process_group(&mut self.0, grace);
    }
}

/// `exe serve --root ROOT --addr ADDR` (output discarded) in `link`'s
/// server namespace, once it listens (within 20 s).
pub fn pagewire_serve(link: &Link, exe: &Path, root: &Path, addr: &str) -> Result<ServerGuard> {
    let mut cmd = Command::new(exe);
    cmd.arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--addr")
        .arg(addr)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let server = ServerGuard::spawn(link, cmd)?;
    if !link.wait_server_listening(Duration::from_secs(20))? {
        bail!("pagewire serve did not listen within 20 s");
    }
    Ok(server)
}
