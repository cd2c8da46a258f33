//! The expected-time model for a client that knows every file it wants
//! before it starts: paper 002's programs (Fujinoki, Sanjay, Shah, "Web
//! File Transmission by Object Packaging"; `bench --suite objpack`). A set
//! of 100 files is moved by one of four round-trip structures, on the same
//! lines and TCP as the page model ([`super::tcp`]):
//!
//! - [`Fetch::PerFile`]: a connection per file, one after another (the
//!   paper's HTTP 1.0 client): handshake, request, response, close; the
//!   next connection opens when the last byte is read.
//! - [`Fetch::Serial`]: one persistent connection, the next request sent
//!   when the last response is read (HTTP 1.1 Persistent Connection).
//! - [`Fetch::AllAtOnce`]: one connection, every request in one write
//!   (pipelining); the server reads each request as soon as its segment
//!   is in and answers it with a send of its own, back to back.
//! - [`Fetch::Bundle`]: one request, one response carrying every file (the
//!   object package, multipart/related, tar).
//!
//! A window of five sets (the paper's Experiments 1-3) is five such loads
//! one after another, each set on its own connection(s), as the programs
//! do it.
//!
//! The measured quantities are the suite's: the server response time, from
//! the first request's arrival at the server to the client's ACK of the
//! last byte reaching it, and the client response time, from the first
//! response byte's arrival to the last's. The client reads with a blocking
//! `read`, so a pushed last segment is acknowledged at once (Linux's
//! `tcp_cleanup_rbuf`), not after the delayed-ACK timer.

use serde::Serialize;

use super::tcp::{arrival_of, Transport};
use super::{Breakdown, Carrier, Cost, Knobs, LinkSpec, Sim};

/// How the client asks for one set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fetch {
    PerFile,
    Serial,
    AllAtOnce,
    Bundle,
}

/// One set as it crosses the wire: each request's bytes and each
/// response's bytes (head and body), in order. A bundle has one of each.
#[derive(Clone, Debug, Default)]
pub struct SetLoad {
    pub requests: Vec<u64>,
    pub responses: Vec<u64>,
}

/// One predicted cell of the objpack suite.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FilesPrediction {
    /// Packets, IP bytes, payload and the server response time (seconds).
    pub predicted: Cost,
    /// The client response time, s.
    pub client_s: f64,
    /// Lower bound of the server response time: every response byte at
    /// line rate plus the round trips the method cannot avoid after the
    /// first request has arrived.
    pub lower_bound_s: f64,
    pub lower_bound_round_trips: u32,
    pub breakdown: Breakdown,
}

/// What one walk gives: the cost (seconds: server time) and client time.
struct Walk {
    cost: Cost,
    client_s: f64,
}

fn walk(link: &LinkSpec, fetch: Fetch, sets: &[SetLoad], server_s: f64, knobs: Knobs) -> Walk {
    let mut sim = Sim::on(link, server_s, Carrier::Tcp, knobs);
    let srv = sim.server_s;
    let mut t = 0.0f64;
    let mut first_request: Option<f64> = None;
    let mut first_byte: Option<f64> = None;
    let mut last_byte = 0.0f64;
    let mut last_ack = 0.0f64;
    for set in sets {
        let pairs: Vec<(u64, u64)> = set
            .requests
            .iter()
            .copied()
            .zip(set.responses.iter().copied())
            .collect();
        if pairs.is_empty() {
            continue;
        }
        match fetch {
            Fetch::PerFile => {
                for (q, r) in pairs {
                    let (c, ready) = sim.open(t);
                    let at = sim.client_send(c, ready, q);
                    first_request.get_or_insert(at);
                    let a = sim.server_send(c, at + srv, r);
                    first_byte.get_or_insert(arrival_of(&a, 1));
                    let done = arrival_of(&a, u64::MAX);
                    last_ack = sim.ack_read(c, done);
                    sim.close(c, done);
                    last_byte = done;
                    t = done;
                }
            }
            Fetch::Serial => {
                let (c, ready) = sim.open(t);
                t = ready;
                for (q, r) in pairs {
                    let at = sim.client_send(c, t, q);
                    first_request.get_or_insert(at);
                    let a = sim.server_send(c, at + srv, r);
                    first_byte.get_or_insert(arrival_of(&a, 1));
                    t = arrival_of(&a, u64::MAX);
                }
                last_ack = sim.ack_read(c, t);
                sim.close(c, t);
                last_byte = t;
            }
            Fetch::AllAtOnce => {
                // One write of every request; the server reads each one
                // as soon as its last byte is in (the first ones before
                // the batch's later segments arrive) and writes its
                // response on its own, as the suite's server does (one
                // send per response, TCP_NODELAY): each response ends in
                // its own partial segment.
                let (c, ready) = sim.open(t);
                let q: u64 = pairs.iter().map(|p| p.0).sum();
                let segs = sim.client_send_segments(c, ready, q);
                let mut asked = 0u64;
                let mut free = 0.0f64;
                for (request, r) in pairs {
                    asked += request;
                    let at = arrival_of(&segs, asked);
                    first_request.get_or_insert(at);
                    free = free.max(at) + srv;
                    let a = sim.server_send(c, free, r);
                    first_byte.get_or_insert(arrival_of(&a, 1));
                    t = arrival_of(&a, u64::MAX);
                }
                last_ack = sim.ack_read(c, t);
                sim.close(c, t);
                last_byte = t;
            }
            Fetch::Bundle => {
                let (c, ready) = sim.open(t);
                let q: u64 = pairs.iter().map(|p| p.0).sum();
                let r: u64 = pairs.iter().map(|p| p.1).sum();
                let at = sim.client_send(c, ready, q);
                first_request.get_or_insert(at);
                let a = sim.server_send(c, at + srv * pairs.len() as f64, r);
                first_byte.get_or_insert(arrival_of(&a, 1));
                t = arrival_of(&a, u64::MAX);
                last_ack = sim.ack_read(c, t);
                sim.close(c, t);
                last_byte = t;
            }
        }
    }
    sim.finish_acks();
    let first_request = first_request.unwrap_or(0.0);
    Walk {
        cost: sim.cost((last_ack - first_request).max(0.0)),
        client_s: (last_byte - first_byte.unwrap_or(0.0)).max(0.0),
    }
}

/// Predicts one cell: `sets` moved one after another by `fetch` over
/// `link`, the server taking `server_s` per response.
pub fn predict(link: &LinkSpec, fetch: Fetch, sets: &[SetLoad], server_s: f64) -> FilesPrediction {
    let base = walk(link, fetch, sets, server_s, Knobs::default());
    let t = base.cost.seconds;
    let less = |k: Knobs| (t - walk(link, fetch, sets, server_s, k).cost.seconds).max(0.0);
    let packets = base.cost.packets;
    let loss_s = super::loss_seconds(link, packets);
    let breakdown = Breakdown::from_knobs(less, loss_s);
    let (lower_bound_s, rounds) = lower_bound(link, fetch, sets);
    FilesPrediction {
        predicted: Cost {
            seconds: t + loss_s,
            ..base.cost
        },
        client_s: base.client_s + loss_s,
        lower_bound_s,
        lower_bound_round_trips: rounds,
        breakdown,
    }
}

/// Every response byte at line rate, in the fewest packets the method
/// allows (see below), plus one round trip per request after the first
/// request has arrived and one per connection opened after it (the first
/// handshake is before the clock starts; the last round trip is the last
/// byte out and its ACK back). Pipelining needs one round trip per set
/// however its requests are written: the first request's response goes
/// out as soon as it has arrived.
fn lower_bound(link: &LinkSpec, fetch: Fetch, sets: &[SetLoad]) -> (f64, u32) {
    let tx = Transport::tcp(link.era, link.mtu, link.mss);
    let seg = u64::from(tx.seg_payload);
    let bytes: u64 = sets.iter().flat_map(|s| s.responses.iter()).sum();
    // The fewest packets that can carry them: a response that must be
    // complete before anything else is sent on its connection (a
    // connection per file; the next request waits for it) ends in its own
    // segment; a set's pipelined responses may leave back to back in full
    // segments (a server that writes them together does), and a bundle is
    // one response.
    let packets = sets
        .iter()
        .map(|s| match fetch {
            Fetch::PerFile | Fetch::Serial => s.responses.iter().map(|b| b.div_ceil(seg)).sum(),
            Fetch::AllAtOnce | Fetch::Bundle => s.responses.iter().sum::<u64>().div_ceil(seg),
        })
        .sum::<u64>();
    let ip = bytes + packets * u64::from(tx.data_overhead + link.framing_bytes);
    let line = ip as f64 * 8.0 / link.down_bps;
    let rounds: u32 = sets
        .iter()
        .filter(|s| !s.requests.is_empty())
        .map(|s| {
            let n = s.requests.len() as u32;
            match fetch {
                Fetch::PerFile => 2 * n,
                Fetch::Serial => 1 + n,
                Fetch::AllAtOnce | Fetch::Bundle => 2,
            }
        })
        .sum::<u32>()
        .saturating_sub(1);
    (line + f64::from(rounds) * link.rtt_s, rounds)
}

#[cfg(test)]
mod tests {
    use super::super::tcp::TcpEra;
    use super::*;

    fn link(rtt_s: f64, bps: f64) -> LinkSpec {
        LinkSpec {
            rtt_s,
            down_bps: bps,
            up_bps: bps,
            mtu: 1500,
            mss: None,
            loss: 0.0,
            framing_bytes: 0,
            era: TcpEra::Tcp1997,
        }
    }

    fn set(n: usize, each: u64) -> SetLoad {
        SetLoad {
            requests: vec![40; n],
            responses: vec![each; n],
        }
    }

    /// At infinite rate only round trips count: ten one-segment files
    /// (10,000 bytes: 7 segments in a bundle, 10 pipelined, inside Linux's
    /// initial window of 10)
    /// take 1 RTT from the first request's arrival in a bundle or
    /// pipelined, 10 on a persistent connection and 19 with a connection
    /// per file (each later file waits for its handshake and its request).
    #[test]
    fn round_trips_by_hand() {
        let mut l = link(0.1, f64::INFINITY);
        l.era = TcpEra::Linux;
        let s = [set(10, 1000)];
        let rt = |f| predict(&l, f, &s, 0.0).predicted.seconds;
        assert!(
            (rt(Fetch::Bundle) - 0.1).abs() < 1e-9,
            "{}",
            rt(Fetch::Bundle)
        );
        assert!((rt(Fetch::AllAtOnce) - 0.1).abs() < 1e-9);
        assert!(
            (rt(Fetch::Serial) - 1.0).abs() < 1e-9,
            "{}",
            rt(Fetch::Serial)
        );
        assert!(
            (rt(Fetch::PerFile) - 1.9).abs() < 1e-9,
            "{}",
            rt(Fetch::PerFile)
        );
        // The bound's round trips are the same.
        for f in [
            Fetch::PerFile,
            Fetch::Serial,
            Fetch::AllAtOnce,
            Fetch::Bundle,
        ] {
            let p = predict(&l, f, &s, 0.0);
            assert!(
                (p.lower_bound_s - p.predicted.seconds).abs() < 1e-9,
                "{f:?}"
            );
        }
        // The client's clock starts at the first byte: half a round trip
        // after the first request arrived, and ends at the last byte, half
        // a round trip before its ACK is back.
        let p = predict(&l, Fetch::Serial, &s, 0.0);
        assert!((p.client_s - 0.9).abs() < 1e-9, "{p:?}");
        // From a window of 2 (`--tcp 1997`) the 7 segments of the bundle
        // take 3 flights: 2, 4, 1.
        l.era = TcpEra::Tcp1997;
        let p = predict(&l, Fetch::Bundle, &s, 0.0);
        assert!((p.predicted.seconds - 0.3).abs() < 1e-9, "{p:?}");
        assert!(p.breakdown.slow_start_s > 0.19, "{p:?}");
    }

    /// Pipelined requests are read as they arrive: two requests of one
    /// full segment each (1448 bytes) on a 1 Mbit/s uplink arrive 12 ms
    /// apart (1500 IP bytes each), so the server answers the first 12 ms
    /// before the second; at an infinite downlink rate the client reads
    /// the two responses 12 ms apart, and the server's clock starts at the
    /// first request. (Answering both once the whole write was in put
    /// both responses in one segment, 0 s apart.)
    #[test]
    fn pipelined_requests_are_answered_as_they_arrive() {
        let mut l = link(0.1, f64::INFINITY);
        l.up_bps = 1e6;
        l.era = TcpEra::Linux;
        let s = [SetLoad {
            requests: vec![1448, 1448],
            responses: vec![100, 100],
        }];
        let p = predict(&l, Fetch::AllAtOnce, &s, 0.0);
        assert!((p.client_s - 0.012).abs() < 1e-9, "{p:?}");
        // From the first request's arrival: 12 ms to the second, then its
        // response's half round trip and the ACK's (behind the uplink's
        // 0.416 ms for the ACK itself).
        assert!(p.predicted.seconds > 0.112 - 1e-9, "{p:?}");
        assert!(p.predicted.seconds >= p.lower_bound_s, "{p:?}");
    }

    /// On lan100 (100 Mbit/s, 0.2 ms) the transfer is mostly bytes at line
    /// rate, so the packing decides: the suite's server writes each
    /// pipelined response on its own (a partial last segment each), and
    /// the bound counts the fewest packets that can carry the set (back to
    /// back in full segments). A set, or a window of five, of 100 files of
    /// 4,000 bytes is never predicted below its bound (it was, by 0.1 ms,
    /// when the walk packed the responses together and the bound did not).
    #[test]
    fn pipelined_sets_are_not_below_their_bound() {
        let mut l = link(0.0002, 100e6);
        l.era = TcpEra::Linux;
        for each in [1000, 4000, 4096, 16_000] {
            for n in [1, 5] {
                let sets = vec![set(100, each); n];
                for f in [
                    Fetch::PerFile,
                    Fetch::Serial,
                    Fetch::AllAtOnce,
                    Fetch::Bundle,
                ] {
                    let p = predict(&l, f, &sets, 0.0);
                    assert!(
                        p.predicted.seconds >= p.lower_bound_s,
                        "{f:?} {n} x 100 x {each}: {} < {}",
                        p.predicted.seconds,
                        p.lower_bound_s
                    );
                }
            }
        }
    }

    /// On a slow line the bytes dominate: one 10,000-byte bundle at
    /// 80 kbit/s is 7 segments (1460 payload + 40 headers), 10,280 IP
    /// bytes, 1.028 s, plus the round trip.
    #[test]
    fn a_bundle_on_a_slow_line_is_its_bytes_at_line_rate() {
        let l = link(0.1, 80_000.0);
        let p = predict(&l, Fetch::Bundle, &[set(1, 10_000)], 0.0);
        assert!((p.lower_bound_s - 1.128).abs() < 1e-9, "{p:?}");
        assert!(p.predicted.seconds >= p.lower_bound_s - 1e-9, "{p:?}");
        // A window of five sets costs five times the bytes and a
        // handshake per later set.
        let five = vec![set(1, 10_000); 5];
        let w = predict(&l, Fetch::Bundle, &five, 0.0);
        assert_eq!(w.lower_bound_round_trips, 9);
        assert!(w.predicted.seconds > 5.0 * 1.028, "{w:?}");
    }
}
