//! A small, synchronous Chrome DevTools Protocol client over the browser's
//! `--remote-debugging-pipe`: the browser reads commands from its fd 3 and
//! writes replies and events to its fd 4, each message one JSON text ended
//! by a NUL byte. No WebSocket, no port to discover, nothing on a socket
//! (so nothing that could cross the measured link).
//!
//! Every wait is bounded by a deadline; a browser that dies closes its pipe
//! and every pending call fails at once with what its log said.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

/// Largest message we accept from the browser (a response body of the
/// Microscape page's largest object, base64, is well under this).
const MAX_MESSAGE: usize = 64 << 20;

/// The parent's ends of the two pipes, and the child's ends until the
/// browser has been spawned.
pub struct PipeFds {
    /// Parent writes commands here (the child's fd 3 reads them).
    to_browser: OwnedFd,
    /// Parent reads replies here (the child's fd 4 writes them).
    from_browser: OwnedFd,
    child_read: OwnedFd,
    child_write: OwnedFd,
}

fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the array on success.
    #[allow(unsafe_code)]
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(std::io::Error::last_os_error()).context("pipe2");
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    #[allow(unsafe_code)]
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl PipeFds {
    pub fn new() -> Result<PipeFds> {
        let (child_read, to_browser) = pipe()?;
        let (from_browser, child_write) = pipe()?;
        Ok(PipeFds {
            to_browser,
            from_browser,
            child_read,
            child_write,
        })
    }

    /// Makes `cmd` hand the child its ends as fds 3 (commands) and 4
    /// (replies), which is what `--remote-debugging-pipe` expects.
    pub fn attach(&self, cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        let (r, w): (RawFd, RawFd) = (self.child_read.as_raw_fd(), self.child_write.as_raw_fd());
        // SAFETY: only fcntl and dup2 (async-signal-safe) run between fork
        // and exec. The fds are first copied above 10 so that neither
        // dup2 can overwrite the other's source; dup2 clears FD_CLOEXEC on
        // the targets, so exactly fds 3 and 4 survive the exec.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                let r2 = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let w2 = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// After the spawn: closes the child's ends here (so the browser's
    /// death is seen as end of file) and starts the reader thread.
    pub fn into_client(self, log_hint: String) -> Result<Cdp> {
        let PipeFds {
            to_browser,
            from_browser,
            child_read,
            child_write,
        } = self;
        drop((child_read, child_write));
        let (tx, rx) = mpsc::channel();
        let reader = File::from(from_browser);
        std::thread::Builder::new()
            .name("pw-cdp-reader".into())
            .spawn(move || read_loop(reader, tx))
            .context("start the DevTools reader thread")?;
        Ok(Cdp {
            writer: File::from(to_browser),
            rx,
            next_id: 1,
            events: VecDeque::new(),
            closed: None,
            log_hint,
        })
    }
}

enum Incoming {
    Msg(Value),
    Closed(String),
}

/// Ends when the browser closes its end of the pipe (exit or crash).
fn read_loop(reader: File, tx: mpsc::Sender<Incoming>) {
    let mut r = BufReader::with_capacity(1 << 16, reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match (&mut r)
            .take(MAX_MESSAGE as u64 + 1)
            .read_until(0, &mut buf)
        {
            Ok(0) => {
                let _ = tx.send(Incoming::Closed("the browser closed its pipe".into()));
                return;
            }
            Ok(_) => {
                if buf.last() == Some(&0) {
                    buf.pop();
                } else if buf.len() > MAX_MESSAGE {
                    let _ = tx.send(Incoming::Closed(format!(
                        "a DevTools message exceeded {MAX_MESSAGE} bytes"
                    )));
                    return;
                } else {
                    let _ = tx.send(Incoming::Closed(
                        "the browser closed its pipe mid-message".into(),
                    ));
                    return;
                }
                let msg = match serde_json::from_slice::<Value>(&buf) {
                    Ok(v) => Incoming::Msg(v),
                    Err(e) => Incoming::Closed(format!("unparsable DevTools message: {e}")),
                };
                let stop = matches!(msg, Incoming::Closed(_));
                if tx.send(msg).is_err() || stop {
                    return;
                }
            }
            Err(e) => {
                let _ = tx.send(Incoming::Closed(format!("reading the DevTools pipe: {e}")));
                return;
            }
        }
    }
}

use std::io::Read as _;

/// The client: commands by id, events kept in arrival order until taken.
pub struct Cdp {
    writer: File,
    rx: mpsc::Receiver<Incoming>,
    next_id: u64,
    events: VecDeque<Value>,
    closed: Option<String>,
    /// Where the browser's own log is (named in errors).
    log_hint: String,
}

impl Cdp {
    fn receive(&mut self, deadline: Instant) -> Result<Option<Value>> {
        if let Some(why) = &self.closed {
            bail!("{why} (browser log: {})", self.log_hint);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(Incoming::Msg(v)) => Ok(Some(v)),
            Ok(Incoming::Closed(why)) => {
                self.closed = Some(why.clone());
                bail!("{why} (browser log: {})", self.log_hint)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.closed = Some("the DevTools reader stopped".into());
                bail!(
                    "the DevTools reader stopped (browser log: {})",
                    self.log_hint
                )
            }
        }
    }

    /// Sends a command (to a target's session if given) and waits for its
    /// reply, at most `timeout`; events arriving meanwhile are kept.
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg)?;
        bytes.push(0);
        if let Err(e) = self.writer.write_all(&bytes) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                bail!(
                    "the browser closed its pipe before {method} (browser log: {})",
                    self.log_hint
                );
            }
            bail!(
                "send {method} to the browser: {e} (browser log: {})",
                self.log_hint
            );
        }
        let deadline = Instant::now() + timeout;
        loop {
            let Some(v) = self.receive(deadline)? else {
                bail!("no reply to {method} within {timeout:?}");
            };
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = v.get("error") {
                    bail!("{method} failed: {e}");
                }
                return Ok(v.get("result").cloned().unwrap_or(Value::Null));
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    /// Waits until an event satisfying `pred` has arrived (kept events
    /// first), at most until `deadline`; returns it without removing the
    /// other events. `None` on timeout.
    pub fn wait_event(
        &mut self,
        deadline: Instant,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Result<Option<Value>> {
        if let Some(e) = self.events.iter().find(|e| pred(e)) {
            return Ok(Some(e.clone()));
        }
        loop {
            let Some(v) = self.receive(deadline)? else {
                return Ok(None);
            };
            if v.get("method").is_some() {
                let hit = pred(&v);
                self.events.push_back(v.clone());
                if hit {
                    return Ok(Some(v));
                }
            }
        }
    }

    /// Every event received so far, in order (they stay kept).
    pub fn events(&self) -> impl Iterator<Item = &Value> {
        self.events.iter()
    }

    /// Forgets the kept events.
    pub fn clear_events(&mut self) {
        self.events.clear();
    }

    /// Collects whatever arrives within `quiet` (events only).
    pub fn drain_for(&mut self, quiet: Duration) -> Result<()> {
        let deadline = Instant::now() + quiet;
        while let Some(v) = self.receive(deadline)? {
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
        Ok(())
    }

    /// Whether the pipe has closed (the browser has gone).
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// Error out if the browser reported anything on the pipe we did not
    /// expect (used by tests).
    pub fn ensure_open(&self) -> Result<()> {
        match &self.closed {
            Some(w) => Err(anyhow!("{w}")),
            None => Ok(()),
        }
    }
}
