//! The access log, in Common Log Format, kept off the hot path: each worker
//! formats lines into its own buffer and hands full batches to a writer
//! thread over a bounded channel; the writer does the file I/O.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
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
    writer: JoinHandle<std::io::Result<()>>,
}

impl AccessLog {
    /// Creates the file and starts the writer thread. The first line, a `#`
    /// comment, says what made the file.
    pub fn create(path: &Path, command_line: &str) -> std::io::Result<AccessLog> {
        let file = File::create(path)?;
        let mut out = BufWriter::new(file);
        writeln!(
            out,
            "# pagewire {} access log (Common Log Format); command: {}",
            env!("CARGO_PKG_VERSION"),
            command_line
        )?;
        out.flush()?;
        let (tx, rx) = sync_channel::<Vec<u8>>(QUEUE_BATCHES);
        let writer = std::thread::Builder::new()
            .name("pagewire-log".into())
            .spawn(move || write_loop(rx, out))?;
        Ok(AccessLog { tx, writer })
    }

    pub fn sender(&self) -> SyncSender<Vec<u8>> {
        self.tx.clone()
    }

    /// Waits for every batch to be written. Workers must have dropped their
    /// senders first.
    pub fn finish(self) -> std::io::Result<()> {
        drop(self.tx);
        self.writer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("access log writer panicked")))
    }
}

fn write_loop(rx: Receiver<Vec<u8>>, mut out: BufWriter<File>) -> std::io::Result<()> {
    while let Ok(batch) = rx.recv() {
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
