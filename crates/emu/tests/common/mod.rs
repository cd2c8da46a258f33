//! Helpers shared by the emulator tests. They need root and a TUN device
//! (CI has both): `can_run` fails the test under PAGEWIRE_REQUIRE_ALL=1
//! and reports it skipped by name otherwise (pagewire-testreq).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pagewire_emu::{Link, LinkConfig};

/// Tests that measure time take this lock so they do not compete for the
/// two cores with each other (they never collide: every link has its own
/// namespaces).
pub static TIMING: Mutex<()> = Mutex::new(());

pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

/// True if the emulator can run here (root, a TUN device); otherwise the
/// test fails or is reported skipped (pagewire-testreq) and returns early.
pub fn can_run() -> bool {
    pagewire_testreq::require_tun()
        && pagewire_testreq::require(
            pagewire_emu::privilege::check().is_ok(),
            &format!(
                "needs what the link emulator needs: {:#}",
                pagewire_emu::privilege::check()
                    .err()
                    .map(|e| format!("{e:#}"))
                    .unwrap_or_default()
            ),
            "run as root with /dev/net/tun (CI does)",
        )
}

pub fn start(cfg: LinkConfig) -> Link {
    Link::start(cfg).expect("start link")
}

pub fn profile(name: &str) -> LinkConfig {
    LinkConfig::profile(name).unwrap()
}

/// A deterministic, non-repeating-looking payload (so a corrupted or
/// misordered byte is caught).
pub fn payload(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// A listener in the server namespace on an ephemeral port.
pub fn listen(link: &Link) -> TcpListener {
    let addr = link.server_addr();
    link.run_in_server(move || TcpListener::bind((addr, 0)))
        .unwrap()
        .unwrap()
}

/// Serves `data` to `conns` connections, one after another, then returns.
pub fn serve(listener: TcpListener, data: Vec<u8>, conns: usize) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for _ in 0..conns {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(&data).unwrap();
        }
    })
}

/// What the client saw of one download.
pub struct Download {
    pub data: Vec<u8>,
    pub connect: Duration,
    /// Time (since connect completed) when the received count first
    /// reached at least `mark` bytes, and that count.
    pub at_mark: (Duration, usize),
    pub total: Duration,
}

/// Connects from the client namespace and reads to EOF.
pub fn download(link: &Link, port: u16, mark: usize) -> Download {
    let addr = link.server_addr();
    link.run_in_client(move || {
        let t0 = Instant::now();
        let mut c = TcpStream::connect((addr, port)).unwrap();
        let connect = t0.elapsed();
        let t1 = Instant::now();
        let mut data = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut at_mark = None;
        // Bounded by the server closing the connection.
        loop {
            let n = c.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n]);
            if at_mark.is_none() && data.len() >= mark {
                at_mark = Some((t1.elapsed(), data.len()));
            }
        }
        Download {
            connect,
            at_mark: at_mark.unwrap_or((t1.elapsed(), data.len())),
            total: t1.elapsed(),
            data,
        }
    })
    .unwrap()
}
