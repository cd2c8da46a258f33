//! The way out of `pagewire shell`: the server namespace of the link
//! becomes a gateway to the host's network.
//!
//! Every TCP connection the shell opens (to any address) crosses the
//! emulated link to the server namespace, where an nftables rule redirects
//! it to the relay's listener; the relay asks the kernel where the
//! connection was going (`SO_ORIGINAL_DST`) and opens the same connection
//! from the host's own network namespace, then copies bytes both ways. The
//! address of the server side, 198.18.0.2 ([`HOST_ADDR`]), stands for the
//! host itself: a connection to 198.18.0.2:PORT is relayed to the host's
//! 127.0.0.1:PORT, so services bound to the host's loopback are reachable.
//! DNS: the shell's resolv.conf names 198.18.0.2, where the relay forwards
//! each query (UDP and TCP) to the host's resolver.
//!
//! This is what slirp4netns and pasta do for rootless containers, with the
//! kernel's TCP on the shell's side of the link: it needs no route, NAT or
//! forwarding on the host, so it works for a normal user in a user
//! namespace and nests (the host of an inner shell is the outer one's
//! namespace). The TCP connection is split at the gateway: the shell's TCP
//! sees the emulated link alone (its handshake completes at the gateway,
//! one link RTT), and the host leg adds only the host's own path.
//! Other protocols (ICMP, UDP other than DNS, so QUIC) do not cross.

use std::io::{self, Read, Write};
use std::net::{
    Ipv4Addr, Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream, ToSocketAddrs, UdpSocket,
};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::{ns, Link, SERVER_ADDR, TUN_NAME};

/// The host as the shell sees it: the server side of the link.
pub const HOST_ADDR: Ipv4Addr = SERVER_ADDR;

/// Port of the relay's listener in the server namespace (every TCP
/// connection arriving over the link is redirected to it).
pub const RELAY_PORT: u16 = 1;

/// Set in the shell's environment: the address that stands for the host
/// (an inner `pagewire shell` relays its host connections there).
pub const ENV_SHELL_HOST: &str = "PAGEWIRE_SHELL_HOST";
/// Overrides the DNS server queries are forwarded to (IP or IP:PORT;
/// default: the first IPv4 nameserver of /etc/resolv.conf).
pub const ENV_SHELL_DNS: &str = "PAGEWIRE_SHELL_DNS";

/// Longest a relayed connection waits for its upstream connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on connections relayed at once (each takes two threads).
const MAX_CONNECTIONS: usize = 512;
/// Bound on DNS queries in flight.
const MAX_DNS_IN_FLIGHT: usize = 64;
/// How long a DNS query waits for the upstream answer.
const DNS_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the accept and DNS loops look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// Where the gateway sends what the shell asks of the host.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// Connections to [`HOST_ADDR`] go here (127.0.0.1, or the outer
    /// shell's host address when nested).
    pub host_target: Ipv4Addr,
    /// The resolver DNS queries are forwarded to.
    pub dns_upstream: SocketAddr,
}

impl GatewayConfig {
    /// From the environment: nested in a `pagewire shell`, the host is the
    /// outer shell's; DNS from `PAGEWIRE_SHELL_DNS` or /etc/resolv.conf.
    pub fn from_env() -> Result<Self> {
        let host_target = match std::env::var(ENV_SHELL_HOST) {
            Ok(v) => v
                .parse()
                .with_context(|| format!("{ENV_SHELL_HOST}={v:?}: not an IPv4 address"))?,
            Err(_) => Ipv4Addr::LOCALHOST,
        };
        let dns_upstream = match std::env::var(ENV_SHELL_DNS) {
            Ok(v) => parse_dns(&v).with_context(|| format!("{ENV_SHELL_DNS}={v:?}"))?,
            Err(_) => host_resolver()?,
        };
        Ok(Self {
            host_target,
            dns_upstream,
        })
    }
}

fn parse_dns(v: &str) -> Result<SocketAddr> {
    if let Ok(ip) = v.parse::<Ipv4Addr>() {
        return Ok(SocketAddr::from((ip, 53)));
    }
    v.to_socket_addrs()?
        .next()
        .ok_or_else(|| anyhow::anyhow!("no address"))
}

/// The first IPv4 nameserver of /etc/resolv.conf (the host's resolver).
pub fn host_resolver() -> Result<SocketAddr> {
    let text = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|v| v.trim().parse::<Ipv4Addr>().ok())
        .map(|ip| SocketAddr::from((ip, 53)))
        .next()
        .with_context(|| {
            format!("/etc/resolv.conf names no IPv4 nameserver: set {ENV_SHELL_DNS}=IP")
        })
}

/// The resolv.conf the shell sees: the gateway as its only nameserver, the
/// host's search and options lines kept.
pub fn shell_resolv_conf() -> String {
    let host = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    let mut out = format!(
        "# pagewire shell: DNS crosses the emulated link to {HOST_ADDR}, which forwards \
         it to the host's resolver\nnameserver {HOST_ADDR}\n"
    );
    for l in host.lines() {
        let t = l.trim_start();
        if t.starts_with("search") || t.starts_with("domain") || t.starts_with("options") {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// What the gateway did, for the summary printed on exit.
#[derive(Debug, Default)]
pub struct GatewayStats {
    pub tcp_relayed: AtomicU64,
    pub tcp_failed: AtomicU64,
    pub dns_queries: AtomicU64,
    pub dns_failed: AtomicU64,
}

impl GatewayStats {
    pub fn summary(&self) -> String {
        format!(
            "gateway: {} TCP connections relayed ({} could not reach their destination), \
             {} DNS queries forwarded ({} unanswered)",
            self.tcp_relayed.load(Ordering::SeqCst),
            self.tcp_failed.load(Ordering::SeqCst),
            self.dns_queries.load(Ordering::SeqCst),
            self.dns_failed.load(Ordering::SeqCst)
        )
    }
}

/// A running gateway; dropping it stops its loops (relayed connections end
/// with the link's namespaces).
pub struct Gateway {
    stop: Arc<AtomicBool>,
    stats: Arc<GatewayStats>,
    threads: Vec<JoinHandle<()>>,
}

impl Gateway {
    /// Sets the server namespace up as the gateway (nftables redirect, the
    /// relay's TCP listener and DNS socket) and starts the relay threads.
    /// The threads themselves run in the caller's namespace: that is where
    /// the relayed connections are opened.
    pub fn start(link: &Link, cfg: GatewayConfig) -> Result<Gateway> {
        let (listener, dns) = link.run_in_server(|| -> Result<(TcpListener, UdpSocket)> {
            ns::nft_batch(&format!(
                "table ip pagewire {{\n\
                 \x20 chain prerouting {{\n\
                 \x20   type nat hook prerouting priority dstnat; policy accept;\n\
                 \x20   iifname \"{TUN_NAME}\" meta l4proto tcp redirect to :{RELAY_PORT}\n\
                 \x20 }}\n\
                 }}\n"
            ))
            .context("nftables redirect in the gateway namespace")?;
            let l = TcpListener::bind((HOST_ADDR, RELAY_PORT))
                .context("bind the relay listener in the gateway namespace")?;
            let u = UdpSocket::bind((HOST_ADDR, 53))
                .context("bind the DNS forwarder in the gateway namespace")?;
            Ok((l, u))
        })??;
        listener.set_nonblocking(true)?;
        dns.set_read_timeout(Some(POLL))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(GatewayStats::default());
        let mut threads = Vec::new();
        {
            let (stop, stats, cfg) = (stop.clone(), stats.clone(), cfg.clone());
            threads.push(
                std::thread::Builder::new()
                    .name("pw-gw-tcp".into())
                    .spawn(move || accept_loop(listener, cfg, stop, stats))?,
            );
        }
        {
            let (stop, stats) = (stop.clone(), stats.clone());
            let upstream = cfg.dns_upstream;
            threads.push(
                std::thread::Builder::new()
                    .name("pw-gw-dns".into())
                    .spawn(move || dns_loop(dns, upstream, stop, stats))?,
            );
        }
        Ok(Gateway {
            stop,
            stats,
            threads,
        })
    }

    pub fn stats(&self) -> &GatewayStats {
        &self.stats
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Where a connection redirected to the relay was going.
fn original_dst(s: &TcpStream) -> io::Result<SocketAddrV4> {
    // SAFETY: sockaddr_in is plain old data; all-zero is valid.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `sa`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_IP,
            libc::SO_ORIGINAL_DST,
            (&mut sa as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)),
        u16::from_be(sa.sin_port),
    ))
}

/// Where the relay connects for a connection that was going to `dst`.
fn upstream_for(dst: SocketAddrV4, cfg: &GatewayConfig) -> SocketAddr {
    if *dst.ip() == HOST_ADDR {
        if dst.port() == 53 {
            return cfg.dns_upstream;
        }
        return SocketAddr::from((cfg.host_target, dst.port()));
    }
    SocketAddr::V4(dst)
}

fn accept_loop(
    listener: TcpListener,
    cfg: GatewayConfig,
    stop: Arc<AtomicBool>,
    stats: Arc<GatewayStats>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    // Bounded by the stop flag, checked every POLL.
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                let _ = client.set_nonblocking(false);
                if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                    reset(client);
                    stats.tcp_failed.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                active.fetch_add(1, Ordering::SeqCst);
                let (cfg, st, act) = (cfg.clone(), stats.clone(), active.clone());
                let spawned =
                    std::thread::Builder::new()
                        .name("pw-gw-conn".into())
                        .spawn(move || {
                            relay(client, &cfg, &st);
                            act.fetch_sub(1, Ordering::SeqCst);
                        });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::SeqCst);
                    stats.tcp_failed.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_readable(&listener, POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

fn wait_readable(l: &TcpListener, timeout: Duration) {
    let mut fd = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd that lives across the call.
    unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
}

/// Closes with a reset (SO_LINGER 0), as a refused connection would look.
fn reset(s: TcpStream) {
    let lg = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt with a linger that lives across the call.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lg as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    drop(s);
}

fn relay(client: TcpStream, cfg: &GatewayConfig, stats: &GatewayStats) {
    let Ok(dst) = original_dst(&client) else {
        stats.tcp_failed.fetch_add(1, Ordering::SeqCst);
        return reset(client);
    };
    let to = upstream_for(dst, cfg);
    let upstream = match TcpStream::connect_timeout(&to, CONNECT_TIMEOUT) {
        Ok(u) => u,
        Err(_) => {
            stats.tcp_failed.fetch_add(1, Ordering::SeqCst);
            return reset(client);
        }
    };
    stats.tcp_relayed.fetch_add(1, Ordering::SeqCst);
    let _ = upstream.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new()
        .name("pw-gw-up".into())
        .spawn(move || pipe(c2, u2));
    pipe(upstream, client);
    if let Ok(h) = up {
        let _ = h.join();
    }
}

/// Copies `from` to `to` until EOF or an error, then passes the EOF on.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 64 * 1024];
    // Bounded by the connection's lifetime.
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    let _ = from.shutdown(Shutdown::Read);
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn dns_loop(
    sock: UdpSocket,
    upstream: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<GatewayStats>,
) {
    let sock = Arc::new(sock);
    let in_flight = Arc::new(AtomicUsize::new(0));
    let mut buf = vec![0u8; 65_536];
    // Bounded by the stop flag (the socket's read timeout is POLL).
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        stats.dns_queries.fetch_add(1, Ordering::SeqCst);
        if in_flight.load(Ordering::SeqCst) >= MAX_DNS_IN_FLIGHT {
            stats.dns_failed.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        in_flight.fetch_add(1, Ordering::SeqCst);
        let query = buf[..n].to_vec();
        let (sock, stats, in_flight) = (sock.clone(), stats.clone(), in_flight.clone());
        let _ = std::thread::Builder::new()
            .name("pw-gw-dnsq".into())
            .spawn(move || {
                match forward_dns(&query, upstream) {
                    Ok(answer) => {
                        let _ = sock.send_to(&answer, from);
                    }
                    Err(_) => {
                        stats.dns_failed.fetch_add(1, Ordering::SeqCst);
                    }
                }
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
    }
}

/// One query to the upstream resolver from the caller's namespace.
fn forward_dns(query: &[u8], upstream: SocketAddr) -> Result<Vec<u8>> {
    let bind: SocketAddr = if upstream.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let s = UdpSocket::bind(bind)?;
    s.connect(upstream)?;
    s.set_read_timeout(Some(DNS_TIMEOUT))?;
    s.send(query)?;
    let mut buf = vec![0u8; 65_536];
    let n = s.recv(&mut buf)?;
    if n < 2 || query.len() < 2 || buf[..2] != query[..2] {
        bail!("DNS answer does not match the query id");
    }
    buf.truncate(n);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_address_maps_to_the_host_and_dns_to_the_resolver() {
        let cfg = GatewayConfig {
            host_target: Ipv4Addr::LOCALHOST,
            dns_upstream: "10.0.0.53:53".parse().unwrap(),
        };
        assert_eq!(
            upstream_for(SocketAddrV4::new(HOST_ADDR, 8080), &cfg),
            "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            upstream_for(SocketAddrV4::new(HOST_ADDR, 53), &cfg),
            cfg.dns_upstream
        );
        let far = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 7), 443);
        assert_eq!(upstream_for(far, &cfg), SocketAddr::V4(far));
    }

    #[test]
    fn dns_upstream_parses_with_and_without_port() {
        assert_eq!(
            parse_dns("10.1.2.3").unwrap(),
            "10.1.2.3:53".parse().unwrap()
        );
        assert_eq!(
            parse_dns("127.0.0.1:5353").unwrap(),
            "127.0.0.1:5353".parse().unwrap()
        );
        assert!(parse_dns("not an address").is_err());
    }
}
