//! Competing bulk traffic for `bench --bulk N[,WARMUP]`: the classic
//! bufferbloat set-up. N TCP downloads from the server namespace to the
//! client namespace (the kernels' own TCP, default buffers: a modern bulk
//! flow) start before each page load, run for WARMUP so they fill the
//! link's queue, keep running while the page loads and are closed when the
//! robot is done. They share the link's queue, discipline and rate with the
//! page; their packets are set apart from the run's counters and pcap
//! (`Link::set_cross_traffic_port`), so packets, bytes and retransmissions
//! stay the page's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use pagewire_emu::Link;
use serde::{Deserialize, Serialize};

/// Port of the bulk sender in the server namespace (iperf3's).
pub const BULK_PORT: u16 = 5201;

/// How often blocked reads, writes and accepts look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The `--bulk` option: how many flows, and how long they run before the
/// page load starts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BulkSpec {
    pub flows: u32,
    pub warmup_s: f64,
}

impl BulkSpec {
    /// Parses `N` or `N,WARMUP` (e.g. `1`, `2,5s`, `1,500ms`); the warm-up
    /// defaults to 5 s.
    pub fn parse(s: &str) -> Result<BulkSpec> {
        let (n, w) = match s.split_once(',') {
            Some((n, w)) => (n.trim(), Some(w.trim())),
            None => (s.trim(), None),
        };
        let flows: u32 = n
            .parse()
            .ok()
            .filter(|n| (1..=16).contains(n))
            .with_context(|| format!("invalid --bulk {s:?}: the number of flows must be 1-16"))?;
        let warmup = match w {
            Some(w) => pagewire_link::units::parse_duration(w)
                .map_err(|e| anyhow::anyhow!("invalid --bulk {s:?}: {e}"))?,
            None => Duration::from_secs(5),
        };
        if warmup > Duration::from_secs(600) {
            bail!("invalid --bulk {s:?}: the warm-up must be at most 600 s");
        }
        Ok(BulkSpec {
            flows,
            warmup_s: warmup.as_secs_f64(),
        })
    }
}

/// The sender: a listener in the server namespace that writes zeros to
/// every connection until the peer closes it or the sender is dropped.
pub struct BulkServer {
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<Result<()>>>,
}

impl BulkServer {
    pub fn start(link: &Link) -> Result<BulkServer> {
        let addr = SocketAddr::new(link.server_addr().into(), BULK_PORT);
        let listener = link
            .run_in_server(move || TcpListener::bind(addr))?
            .with_context(|| format!("bind the bulk sender on {addr}"))?;
        listener.set_nonblocking(true)?;
        link.set_cross_traffic_port(Some(BULK_PORT))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::Builder::new()
            .name("pw-bulk-accept".into())
            .spawn(move || -> Result<()> {
                let mut writers = Vec::new();
                while !flag.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((s, _)) => {
                            let flag = flag.clone();
                            writers.push(std::thread::spawn(move || send_until_closed(s, &flag)));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(POLL / 4)
                        }
                        Err(e) => return Err(e.into()),
                    }
                    writers.retain(|w: &JoinHandle<()>| !w.is_finished());
                }
                for w in writers {
                    let _ = w.join();
                }
                Ok(())
            })?;
        Ok(BulkServer {
            stop,
            accept: Some(accept),
        })
    }
}

impl Drop for BulkServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn send_until_closed(mut s: TcpStream, stop: &AtomicBool) {
    let _ = s.set_nodelay(true);
    let _ = s.set_write_timeout(Some(POLL));
    let buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match s.write(&buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break, // the reader closed (RST, EPIPE)
        }
    }
}

/// The receivers of one run: `flows` connections from the client
/// namespace, each read (and discarded) by its own thread.
pub struct BulkFlows {
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    readers: Vec<JoinHandle<()>>,
}

impl BulkFlows {
    /// Opens the flows (they start sending at once).
    pub fn start(link: &Link, flows: u32) -> Result<BulkFlows> {
        let addr = SocketAddr::new(link.server_addr().into(), BULK_PORT);
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let mut readers = Vec::new();
        for _ in 0..flows {
            // A socket made in the client namespace stays in it.
            let s = link
                .run_in_client(move || TcpStream::connect_timeout(&addr, Duration::from_secs(10)))?
                .with_context(|| format!("connect a bulk flow to {addr}"))?;
            s.set_read_timeout(Some(POLL))?;
            let (stop, received) = (stop.clone(), received.clone());
            readers.push(
                std::thread::Builder::new()
                    .name("pw-bulk-read".into())
                    .spawn(move || read_until_stopped(s, &stop, &received))?,
            );
        }
        Ok(BulkFlows {
            stop,
            received,
            readers,
        })
    }

    /// Payload bytes received so far, all flows.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Closes the flows (with unread data: a reset) and returns the bytes
    /// received.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.received()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for BulkFlows {
    fn drop(&mut self) {
        self.halt();
    }
}

fn read_until_stopped(mut s: TcpStream, stop: &AtomicBool, received: &AtomicU64) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse() {
        assert_eq!(
            BulkSpec::parse("1").unwrap(),
            BulkSpec {
                flows: 1,
                warmup_s: 5.0
            }
        );
        assert_eq!(
            BulkSpec::parse("2,500ms").unwrap(),
            BulkSpec {
                flows: 2,
                warmup_s: 0.5
            }
        );
        for bad in ["0", "17", "x", "1,5", "1,fast", "1,700s", ""] {
            let e = BulkSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--bulk"), "{bad}: {e}");
        }
    }
}
