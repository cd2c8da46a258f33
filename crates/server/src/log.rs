//! The access log, in Common Log Format (one request per line, nothing
//! else: no comment or header line, so log tools and `pagewire prefetch`
//! read it as it is), kept off the hot path: each worker formats lines into
//! its own buffer and hands full batches to a writer thread over a bounded
//! channel; the writer does the file I/O.
//!
//! The file is opened with `O_APPEND` (created if missing, never
//! truncated), so every write lands at the current end of the file: after
//! a truncation by log rotation (`logrotate`'s `copytruncate`, or
//! `: > access.log`) the next line starts at byte 0 instead of at the old
//! offset, which left a hole of NUL bytes. On `SIGUSR1` the file is closed
//! and opened again by name, as nginx does, so rotation by rename works:
//! `mv access.log access.log.1; kill -USR1 <pid>`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::time::with_clf_date;

/// A worker hands its batch over once it holds this many bytes (~300 lines).
pub const BATCH_BYTES: usize = 32 * 1024;
/// Batches queued for the writer thread. If the disk cannot keep up, lines
/// are dropped (and counted) rather than blocking the server: 64 x 32 KiB =
/// 2 MiB of backlog.
pub const QUEUE_BATCHES: usize = 64;

pub struct AccessLog {
    tx: SyncSender<Vec<u8>>,
    reopen: Arc<AtomicBool>,
    writer: JoinHandle<std::io::Result<()>>,
}

/// Opens `path` for appending (`O_APPEND`), creating it (mode 0644 before
/// the umask) if missing.
fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl AccessLog {
    /// Opens the file for appending and starts the writer thread.
    pub fn create(path: &Path) -> std::io::Result<AccessLog> {
        let file = open_append(path)?;
        let (tx, rx) = sync_channel::<Vec<u8>>(QUEUE_BATCHES);
        let reopen = Arc::new(AtomicBool::new(false));
        let flag = reopen.clone();
        let path = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("pagewire-log".into())
            .spawn(move || write_loop(rx, BufWriter::new(file), &path, &flag))?;
        Ok(AccessLog { tx, reopen, writer })
    }

    pub fn sender(&self) -> SyncSender<Vec<u8>> {
        self.tx.clone()
    }

    /// A handle that asks the writer to reopen the file by name (what
    /// `SIGUSR1` does).
    pub fn reopener(&self) -> Reopener {
        Reopener {
            tx: self.tx.clone(),
            flag: self.reopen.clone(),
        }
    }

    /// Waits for every batch to be written. Workers (and reopeners) must
    /// have dropped their senders first.
    pub fn finish(self) -> std::io::Result<()> {
        drop(self.tx);
        self.writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("access log writer panicked")))
    }
}

/// Asks the writer thread to reopen the log file.
#[derive(Clone)]
pub struct Reopener {
    tx: SyncSender<Vec<u8>>,
    flag: Arc<AtomicBool>,
}

impl Reopener {
    pub fn reopen(&self) {
        self.flag.store(true, Ordering::Release);
        // An empty batch wakes the writer; if the queue is full the writer
        // is busy and sees the flag after its next batch.
        let _ = self.tx.try_send(Vec::new());
    }
}

fn write_loop(
    rx: Receiver<Vec<u8>>,
    mut out: BufWriter<File>,
    path: &Path,
    reopen: &AtomicBool,
) -> std::io::Result<()> {
    while let Ok(batch) = rx.recv() {
        if reopen.swap(false, Ordering::AcqRel) {
            // Lines already written stay in the old (renamed) file.
            out.flush()?;
            match open_append(path) {
                Ok(f) => out = BufWriter::new(f),
                // Keep writing to the old file rather than lose lines.
                Err(e) => eprintln!(
                    "pagewire: cannot reopen the access log {}: {e}; still writing to the old file",
                    path.display()
                ),
            }
        }
        if batch.is_empty() {
            continue;
        }
        out.write_all(&batch)?;
        // Flush per batch so the log is readable while the server runs.
        out.flush()?;
    }
    out.flush()
}

/// A worker's pending lines.
pub struct LogBuffer {
    tx: SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl LogBuffer {
    pub fn new(tx: SyncSender<Vec<u8>>) -> LogBuffer {
        LogBuffer {
            tx,
            buf: Vec::with_capacity(BATCH_BYTES + 1024),
        }
    }

    /// Appends one CLF line: `host - - [date] "request-line" status bytes`.
    /// Returns the number of lines dropped because the writer fell behind.
    pub fn line(&mut self, peer: IpAddr, request_line: &[u8], status: u16, bytes: u64) -> u64 {
        let b = &mut self.buf;
        let _ = write!(b, "{peer} - - [");
        with_clf_date(|d| b.extend_from_slice(d));
        b.extend_from_slice(b"] \"");
        for &c in request_line {
            // The request line was validated by the parser; still, never let
            // a quote or control byte break the format.
            if c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c) {
                let _ = write!(b, "\\x{c:02x}");
            } else {
                b.push(c);
            }
        }
        if bytes == 0 {
            let _ = writeln!(b, "\" {status} -");
        } else {
            let _ = writeln!(b, "\" {status} {bytes}");
        }
        if self.buf.len() >= BATCH_BYTES {
            self.hand_over()
        } else {
            0
        }
    }

    /// Sends the pending lines to the writer; returns lines dropped.
    pub fn hand_over(&mut self) -> u64 {
        if self.buf.is_empty() {
            return 0;
        }
        let batch = std::mem::replace(&mut self.buf, Vec::with_capacity(BATCH_BYTES + 1024));
        match self.tx.try_send(batch) {
            Ok(()) => 0,
            Err(TrySendError::Full(b)) | Err(TrySendError::Disconnected(b)) => {
                b.iter().filter(|&&c| c == b'\n').count() as u64
            }
        }
    }

    /// Final hand-over, waiting for room (at shutdown).
    pub fn finish(mut self) {
        if !self.buf.is_empty() {
            let _ = self.tx.send(std::mem::take(&mut self.buf));
        }
    }
}
