//! Which link explains paper 001's WAN tables (6 and 7)? The paper gives
//! the WAN's RTT (~90 ms, Table 1) but no rate. This reads the rate and RTT
//! back from the paper's own numbers, LAN (Tables 4-5) against WAN (6-7),
//! server by server, with simple and stated models:
//!
//! - **RTT** from plain HTTP/1.1 revalidation: 43 requests one after another
//!   on one connection, each small (~330 bytes both ways), so each costs one
//!   round trip plus the hosts' time per request, which the same run on the
//!   LAN measures (its RTT < 1 ms). `rtt = (T_wan - T_lan) / 43 - wire`.
//! - **Per-connection rate** from plain HTTP/1.1 first retrieval: the same
//!   43 exchanges, now carrying the bodies; what the revalidation's per-
//!   request time does not explain is the time to move the extra bytes.
//! - **Pipelined first retrieval** as rounds of a fixed window: with a
//!   window of `w` bytes per RTT the 191 KB take `bytes / w` round trips.
//! - **Losses**: bytes the WAN runs moved beyond the LAN runs' bytes.
//!
//! `cargo test -p pagewire-lab wan_fit -- --nocapture` prints the analysis;
//! docs/bench.md quotes it.

use std::fmt::Write as _;

use super::reference::{lookup, Reference, Server};
use crate::model::{Net, Strategy, Test};

fn cell(server: Server, net: Net, st: Strategy, t: Test) -> &'static Reference {
    lookup(server, net, st, t).expect("Tables 4-7 are complete")
}

/// Requests of a page fetch (the page and 42 images).
const REQUESTS: f64 = 43.0;

/// The fit for one server.
#[derive(Clone, Copy, Debug)]
pub struct WanFit {
    pub server: Server,
    /// Hosts' time per serial request (LAN revalidation / 43), s.
    pub host_per_request_s: f64,
    /// RTT read from the serial revalidation, s (wire time at `rate_bps`
    /// removed).
    pub rtt_s: f64,
    /// Effective per-connection rate of serial first retrieval, bit/s.
    pub serial_rate_bps: f64,
    /// Window per round trip that explains the pipelined first retrieval
    /// (bytes), after the connection's and the page request's round trips
    /// and the LAN run's host time.
    pub pipeline_window_bytes: f64,
    /// WAN minus LAN bytes: HTTP/1.0 and pipelining, first retrieval.
    pub extra_bytes_http10: f64,
    pub extra_bytes_pipeline: f64,
    pub extra_packets_http10: f64,
    pub extra_packets_pipeline: f64,
}

/// The fit from Tables 4-7 for one server; `rate_bps` only removes the
/// (small) wire time of the revalidation's bytes from the RTT.
pub fn fit(server: Server, rate_bps: f64) -> WanFit {
    use Strategy::*;
    use Test::*;
    let (lan, wan) = (Net::Lan, Net::Wan);
    let lr = cell(server, lan, Http11, Revalidate);
    let wr = cell(server, wan, Http11, Revalidate);
    let host = lr.seconds / REQUESTS;
    let wire = wr.bytes * 8.0 / rate_bps / REQUESTS;
    let rtt = (wr.seconds - lr.seconds) / REQUESTS - wire;
    let wf = cell(server, wan, Http11, First);
    let lf = cell(server, lan, Http11, First);
    // First retrieval = revalidation's per-request cost (RTT + hosts, from
    // the WAN revalidation) + the LAN's extra host time for bodies + the
    // time to move the extra bytes.
    let lan_body_host = (lf.seconds - lf.bytes * 8.0 / 10e6) - lr.seconds;
    let body_s = wf.seconds - wr.seconds - lan_body_host.max(0.0);
    let serial_rate = (wf.bytes - wr.bytes) * 8.0 / body_s;
    let wp = cell(server, wan, Pipeline, First);
    let lp = cell(server, lan, Pipeline, First);
    let lan_host = lp.seconds - lp.bytes * 8.0 / 10e6;
    // Connect and page request: two round trips before the bulk.
    let rounds = (wp.seconds - lan_host) / rtt - 2.0;
    let w10 = cell(server, wan, Http10, First);
    let l10 = cell(server, lan, Http10, First);
    WanFit {
        server,
        host_per_request_s: host,
        rtt_s: rtt,
        serial_rate_bps: serial_rate,
        pipeline_window_bytes: wp.bytes / rounds,
        extra_bytes_http10: w10.bytes - l10.bytes,
        extra_bytes_pipeline: wp.bytes - lp.bytes,
        extra_packets_http10: w10.packets - l10.packets,
        extra_packets_pipeline: wp.packets - lp.packets,
    }
}

/// The analysis as text, for both servers.
pub fn render() -> String {
    let mut s = String::from(
        "What link explains paper 001's WAN tables (6 Jigsaw, 7 Apache), from the paper's own numbers:\n",
    );
    for server in [Server::Jigsaw, Server::Apache] {
        let f = fit(server, 1.5e6);
        let _ = writeln!(
            s,
            "  {:<6} hosts {:.1} ms/request (LAN serial revalidation); RTT {:.1} ms (WAN serial revalidation); \
             serial first retrieval moves its bodies at {:.2} Mbit/s; pipelined first retrieval = {:.0} bytes per RTT; \
             WAN-LAN extra: HTTP/1.0 {:+.0} bytes / {:+.0} packets, pipelining {:+.0} bytes / {:+.0} packets",
            server.name(),
            f.host_per_request_s * 1e3,
            f.rtt_s * 1e3,
            f.serial_rate_bps / 1e6,
            f.pipeline_window_bytes,
            f.extra_bytes_http10,
            f.extra_packets_http10,
            f.extra_bytes_pipeline,
            f.extra_packets_pipeline,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both servers give the same RTT within a few ms, and a per-connection
    /// rate well under 1.5 Mbit/s; HTTP/1.0 lost data on the WAN (tens of
    /// KB more than on the LAN), pipelining hardly any.
    #[test]
    fn wan_fit_from_the_papers_tables() {
        let j = fit(Server::Jigsaw, 1.5e6);
        let a = fit(Server::Apache, 1.5e6);
        eprintln!("{}", render());
        assert!((j.rtt_s - a.rtt_s).abs() < 0.005, "{j:?} {a:?}");
        assert!((0.085..0.100).contains(&a.rtt_s), "{a:?}");
        for f in [j, a] {
            assert!(f.serial_rate_bps < 1.2e6, "{f:?}");
            assert!(f.extra_bytes_http10 > 25_000.0, "{f:?}");
            assert!(f.extra_bytes_pipeline < 3_000.0, "{f:?}");
        }
    }
}
