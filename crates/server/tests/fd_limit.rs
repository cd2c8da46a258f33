//! At the file-descriptor limit (`--max-conns` once defaulted to 100,000
//! whatever the process may open). Its own test binary, one test: it lowers
//! RLIMIT_NOFILE for the whole process.
//!
//! A child process (python3) holds hundreds of idle connections, far more
//! than the server may open. With the cap derived from the limit, the
//! server evicts the oldest idle connection at the cap and a fresh client is
//! served; with a cap above the limit, `accept` fails with EMFILE and the
//! server evicts for a descriptor instead (never spinning). Before: the cap
//! was 100,000, nothing was evicted, and the fresh client waited forever.
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use pagewire_h1::Method;
use pagewire_server::ServerConfig;

const LIMIT: u64 = 256;
const IDLE_CONNS: usize = 400;

/// Holds IDLE_CONNS connections to the port it reads on stdin; says
/// "ready N" once they are open (connected; the kernel completes them even
/// when the server has not accepted), exits when stdin closes. Bounded: 60 s.
const HOLDER: &str = r#"
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port = int(sys.stdin.readline())
n = int(sys.argv[1])
socks = []
for _ in range(n):
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    socks.append(s)
    time.sleep(0.002)
print("ready", len(socks), flush=True)
sys.stdin.readline()
"#;

struct Holder(Child);

impl Holder {
    fn start() -> Holder {
        Holder(
            Command::new(
                pagewire_testreq::require_peer("python3")
                    .expect("python3 (scripts/setup-deps.sh installs it)"),
            )
            .args(["-c", HOLDER, &IDLE_CONNS.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 (scripts/setup-deps.sh installs it)"),
        )
    }

    fn connect_all(&mut self, port: u16) -> usize {
        let stdin = self.0.stdin.as_mut().unwrap();
        writeln!(stdin, "{port}").unwrap();
        let mut line = String::new();
        BufReader::new(self.0.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        line.trim()
            .strip_prefix("ready ")
            .expect("holder ready")
            .parse()
            .unwrap()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A socket made before the process runs out of descriptors (the server
/// shares this process's limit).
fn spare_socket() -> socket2::Socket {
    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap()
}

/// A fresh client's request, answered within `within`.
fn fresh_client_is_served(server: &TestServer, sock: socket2::Socket, within: Duration) {
    let t = Instant::now();
    sock.connect(&server.addr.into()).unwrap();
    let s: std::net::TcpStream = sock.into();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(within)).unwrap();
    let mut r = Reader::new(s);
    r.stream
        .write_all(b"GET /b.gif HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let resp = r
        .response(Method::Get)
        .unwrap_or_else(|e| panic!("fresh client not served within {within:?}: {e}"));
    assert_eq!(resp.status, 200);
    assert!(t.elapsed() < within);
}

#[test]
fn at_the_descriptor_limit_idle_connections_make_room() {
    // Children are started before the limit is lowered (they raise their
    // own soft limit to their hard one).
    let mut derived = Holder::start();
    let mut explicit = Holder::start();
    // Lowers this process's limit (soft and hard).
    let lim = rustix::process::Rlimit {
        current: Some(LIMIT),
        maximum: Some(LIMIT),
    };
    rustix::process::setrlimit(rustix::process::Resource::Nofile, lim).expect("setrlimit");

    let budget = pagewire_server::fd_budget();
    assert_eq!(budget.soft, LIMIT);
    assert_eq!(budget.max_conns, (LIMIT as usize) - 64);

    // 1. Default cap, derived from the limit: eviction at the cap.
    // Deadlines far beyond the test: only eviction can make room.
    let patient = ServerConfig {
        header_timeout: Duration::from_secs(120),
        idle_timeout: Duration::from_secs(120),
        ..config()
    };
    let server = TestServer::start(small_site(), patient.clone());
    let spare = spare_socket();
    let held = derived.connect_all(server.addr.port());
    assert_eq!(held, IDLE_CONNS);
    fresh_client_is_served(&server, spare, Duration::from_secs(5));
    drop(derived);
    let stats = server.stop();
    assert_eq!(stats.peak_connections, budget.max_conns as u64, "{stats}");
    assert!(stats.evictions > 0, "{stats}");

    // 2. A cap above what the process may open: accept fails with EMFILE,
    // and the server evicts an idle connection for the descriptor.
    let server = TestServer::start(
        small_site(),
        ServerConfig {
            max_conns: Some(100_000),
            ..patient
        },
    );
    let spare = spare_socket();
    explicit.connect_all(server.addr.port());
    fresh_client_is_served(&server, spare, Duration::from_secs(5));
    drop(explicit);
    let stats = server.stop();
    assert!(stats.evictions_for_fds > 0, "{stats}");
    // Backed off, not spun: a few errors per eviction, not thousands.
    assert!(
        stats.accept_errors < 20 * stats.evictions_for_fds.max(1) + 100,
        "{stats}"
    );
}
