//! Helpers shared by the binary's end-to-end tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const PW: &str = env!("CARGO_BIN_EXE_pagewire");

/// `pagewire serve --root ROOT` on a free loopback port, killed on drop (also
/// when an assertion fails).
pub struct Serve {
    child: Child,
    pub url: String,
}

impl Serve {
    /// Starts the server with `extra` flags and waits for its
    /// "listening on http://ADDR" line.
    pub fn start(root: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(PW)
            .args(["serve", "--root"])
            .arg(root)
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pagewire serve");
        let out = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Serve { child, url }
    }

    /// The server's process id (for /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A graceful stop: SIGTERM, then wait (at most 15 s) for the server to
    /// exit, which it does only after its access-log writer has written and
    /// flushed every line handed to it. Read the access log after this, not
    /// after some time: the exit is the event.
    pub fn stop(mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid");
        // SAFETY: kill(2) on our own child, which has not been waited for.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            match self.child.try_wait().expect("wait for pagewire serve") {
                Some(_) => return,
                None if std::time::Instant::now() > deadline => {
                    panic!("pagewire serve did not exit within 15 s of SIGTERM")
                }
                // Polling for the exit (the event), not sleeping in its place.
                None => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to the end with its output captured, and kills it after
/// `timeout` so that a hang fails the test instead of blocking CI. Output is
/// read while the command runs (no pipe can fill up and stall it). Returns
/// the output, the time `cmd` took and its process id (names it made may
/// carry it).
pub fn run_bounded(
    cmd: &mut Command,
    timeout: std::time::Duration,
    what: &str,
) -> (std::process::Output, std::time::Duration, u32) {
    let started = std::time::Instant::now();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(out) => (
            out.unwrap_or_else(|e| panic!("wait for {what}: {e}")),
            started.elapsed(),
            pid,
        ),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{what} did not finish within {timeout:?}");
        }
    }
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// The link type and the packets of a classic pcap file, read from the
/// format itself (24-byte global header, then 16-byte record headers each
/// followed by incl_len bytes) so the checks do not share code with what
/// they check.
fn pcap_packets(path: &Path) -> (u32, Vec<Vec<u8>>) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(b.len() >= 24, "{}: no pcap header", path.display());
    let magic = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let le = match magic {
        0xa1b2c3d4 | 0xa1b23c4d => true,
        0xd4c3b2a1 | 0x4d3cb2a1 => false,
        m => panic!("{}: not a pcap (magic {m:#x})", path.display()),
    };
    let u32_at = |i: usize| {
        let a: [u8; 4] = b[i..i + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut packets = Vec::new();
    let mut off = 24usize;
    while off < b.len() {
        assert!(
            off + 16 <= b.len(),
            "{}: truncated record header",
            path.display()
        );
        let incl = u32_at(off + 8) as usize;
        assert!(
            off + 16 + incl <= b.len(),
            "{}: truncated record",
            path.display()
        );
        packets.push(b[off + 16..off + 16 + incl].to_vec());
        off += 16 + incl;
    }
    (u32_at(20), packets)
}

/// Packet records in a classic pcap file.
pub fn pcap_records(path: &Path) -> u64 {
    pcap_packets(path).1.len() as u64
}
pub mod tls_site;

/// TCP connections in a LINKTYPE_RAW IPv4 pcap: how many were opened (a
/// SYN without ACK) and the most open at once, a connection counting as
/// open from its SYN to the first FIN or RST either way. Parsed from the
/// formats themselves, like `pcap_records`.
pub fn pcap_tcp_connections(path: &Path) -> (u64, u64) {
    let (linktype, packets) = pcap_packets(path);
    assert_eq!(linktype, 101, "{}: not LINKTYPE_RAW", path.display());
    let mut open = std::collections::HashSet::new();
    let (mut opened, mut most) = (0u64, 0u64);
    for p in &packets {
        if p.len() < 20 || p[0] >> 4 != 4 || p[9] != 6 {
            continue;
        }
        let ihl = usize::from(p[0] & 0x0f) * 4;
        if p.len() < ihl + 14 {
            continue;
        }
        let t = &p[ihl..];
        let (src, dst) = (&p[12..16], &p[16..20]);
        let (sport, dport) = (&t[0..2], &t[2..4]);
        // One key for both directions: the lower endpoint first.
        let a = [src, sport].concat();
        let z = [dst, dport].concat();
        let key = if a <= z { (a, z) } else { (z, a) };
        let flags = t[13];
        let (fin, syn, rst, ack) = (
            flags & 1 != 0,
            flags & 2 != 0,
            flags & 4 != 0,
            flags & 16 != 0,
        );
        if syn && !ack {
            if open.insert(key) {
                opened += 1;
                most = most.max(open.len() as u64);
            }
        } else if fin || rst {
            open.remove(&key);
        }
    }
    (opened, most)
}
