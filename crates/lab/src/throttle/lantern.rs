//! Simulated throttling from one unthrottled trace, as Lighthouse's
//! Lantern does it: the trace gives the requests, which request's bytes
//! started each one (its initiator), the connection each used, the bytes
//! each response carried, the client's own time between a parent's end and
//! its child's start, and the server's time per response (time to the
//! response head less one round trip of the trace's link); the target
//! link's RTT and rates then replay that graph through the expected-time
//! model's TCP ([`crate::expect::tcp`]) with Lantern's constants: initial
//! window 10 segments, MSS 1460 bytes. Nothing is fitted.
//!
//! Lantern's simplifications are kept, since they are what is being
//! measured: a child waits for its parent's whole response (no streaming
//! discovery), HTTP/1.1 requests keep the connection the trace gave them
//! (one at a time on each), h2 and h3 share one connection whose responses
//! leave in request order, and the load event follows the last byte by
//! the trace's own gap between the two.

use serde::{Deserialize, Serialize};

use crate::expect::tcp::{Conn, Line, Transport, Wire, DELAYED_ACK_S};

/// Lantern's TCP constants.
pub const INITIAL_WINDOW: u32 = 10;
pub const MSS: u32 = 1460;

/// One request of the unthrottled trace, times in seconds from the
/// navigation's start.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TraceRequest {
    pub url: String,
    /// Index of the request whose response started this one (`None` for
    /// the navigation).
    pub parent: Option<usize>,
    pub start_s: f64,
    pub first_byte_s: f64,
    pub end_s: f64,
    /// Response bytes as received (heads and body).
    pub bytes: u64,
    /// Request bytes sent.
    pub request_bytes: u64,
    /// The trace's connection (Chromium's id).
    pub connection: u64,
    /// Server time: time to the response head less the trace's RTT, s.
    pub server_s: f64,
}

/// The transport a protocol's connection set-up costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// TCP: one round trip.
    Tcp,
    /// TCP then TLS 1.3: two.
    Tls,
    /// QUIC: one.
    Quic,
}

/// One unthrottled trace, ready to be replayed on another link.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Trace {
    pub requests: Vec<TraceRequest>,
    pub setup: Setup,
    /// Requests share one connection (h2, h3) rather than one at a time.
    pub multiplexed: bool,
    /// The trace's load event minus its last byte, s (client work after
    /// the network is done).
    pub tail_s: f64,
    /// The RTT the trace's link had, as estimated from its handshakes, s.
    pub rtt_s: f64,
}

/// The target link.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Target {
    pub rtt_s: f64,
    pub down_bps: f64,
    pub up_bps: f64,
}

/// Predicted times of one request, s from the navigation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Predicted {
    pub url: String,
    pub start_s: f64,
    pub first_byte_s: f64,
    pub end_s: f64,
}

/// A predicted load.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Prediction {
    pub load_s: f64,
    pub last_byte_s: f64,
    pub requests: Vec<Predicted>,
}

fn transport() -> Transport {
    Transport {
        seg_payload: MSS,
        data_overhead: 40,
        ack_bytes: 40,
        syn_bytes: 60,
        initial_window: INITIAL_WINDOW,
        rwnd: f64::INFINITY,
        delayed_ack_s: DELAYED_ACK_S,
    }
}

struct SimConn {
    trace_id: u64,
    conn: Conn,
    /// When a request may go out on it (set-up done; HTTP/1.1: the last
    /// response ended).
    free_at: f64,
}

/// Replays `trace` on `target`.
pub fn predict(trace: &Trace, target: Target) -> Prediction {
    let tx = transport();
    let delay = target.rtt_s / 2.0;
    let mut wire = Wire {
        down: Line::new(target.down_bps, 0, delay),
        up: Line::new(target.up_bps, 0, delay),
        tx,
    };
    let n = trace.requests.len();
    let mut conns: Vec<SimConn> = Vec::new();
    let mut done: Vec<Option<Predicted>> = vec![None; n];
    // Each step takes the ready request (parent done) that can start
    // first; n steps.
    for _ in 0..n {
        let mut best: Option<(usize, f64)> = None;
        for (i, r) in trace.requests.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            let ready = match r.parent {
                None => 0.0,
                Some(p) => match &done[p] {
                    // Client time between the parent's end and this start,
                    // as the trace had it.
                    Some(pp) => pp.end_s + (r.start_s - trace.requests[p].end_s).max(0.0),
                    None => continue,
                },
            };
            if best.is_none_or(|(_, t)| ready < t) {
                best = Some((i, ready));
            }
        }
        let Some((i, ready)) = best else {
            // A parent cycle cannot come from a trace (parents start
            // earlier); stop rather than loop.
            break;
        };
        let r = &trace.requests[i];
        let key = if trace.multiplexed { 0 } else { r.connection };
        let ci = match conns.iter().position(|c| c.trace_id == key) {
            Some(ci) => ci,
            None => {
                let mut conn = Conn::new(&tx);
                let open = handshake(&mut wire, &mut conn, trace.setup, ready);
                conns.push(SimConn {
                    trace_id: key,
                    conn,
                    free_at: open,
                });
                conns.len() - 1
            }
        };
        let send = ready.max(conns[ci].free_at);
        // The request's segments; the held ACK rides on the first.
        let mut left = r.request_bytes.max(1);
        let mut arrive = send;
        let mut first = None;
        while left > 0 {
            let k = left.min(u64::from(MSS));
            left -= k;
            arrive = wire.up.send(send, wire.segment_bytes(k as u32));
            first.get_or_insert(arrive);
        }
        let c = &mut conns[ci];
        if let Some(a) = first {
            c.conn.client_data_sent(send, a);
        }
        let arrivals = c.conn.send(&mut wire, arrive + r.server_s, r.bytes.max(1));
        let fb = arrivals.first().map_or(arrive, |a| a.1);
        let end = arrivals.last().map_or(arrive, |a| a.1);
        if !trace.multiplexed {
            c.free_at = end;
        }
        done[i] = Some(Predicted {
            url: r.url.clone(),
            start_s: ready,
            first_byte_s: fb,
            end_s: end,
        });
    }
    let requests: Vec<Predicted> = done.into_iter().flatten().collect();
    let last = requests.iter().map(|p| p.end_s).fold(0.0, f64::max);
    Prediction {
        load_s: last + trace.tail_s.max(0.0),
        last_byte_s: last,
        requests,
    }
}

/// Opens a connection at `t`; returns when the first request may leave.
fn handshake(wire: &mut Wire, conn: &mut Conn, setup: Setup, t: f64) -> f64 {
    let syn = wire.tx.syn_bytes;
    match setup {
        Setup::Tcp | Setup::Tls => {
            let a = wire.up.send(t, syn);
            let b = wire.down.send(a, syn);
            wire.up.send(b, wire.tx.ack_bytes);
            if setup == Setup::Tcp {
                return b;
            }
            // ClientHello, the server's flight (certificate included).
            let ch = wire.up.send(b, wire.segment_bytes(300));
            let sf = conn.send(wire, ch, 1_400);
            sf.last().map_or(ch, |x| x.1)
        }
        Setup::Quic => {
            // The padded Initial, the server's Initial and Handshake.
            let a = wire.up.send(t, 1_228);
            let sf = conn.send(wire, a, 1_400);
            sf.last().map_or(a, |x| x.1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, parent: Option<usize>, start: f64, end: f64, bytes: u64) -> TraceRequest {
        TraceRequest {
            url: url.into(),
            parent,
            start_s: start,
            first_byte_s: start,
            end_s: end,
            bytes,
            request_bytes: 300,
            connection: 1,
            server_s: 0.0,
        }
    }

    fn trace(requests: Vec<TraceRequest>, multiplexed: bool) -> Trace {
        Trace {
            requests,
            setup: Setup::Tcp,
            multiplexed,
            tail_s: 0.0,
            rtt_s: 0.0,
        }
    }

    /// One small object on an infinitely fast link: handshake plus one
    /// round trip for the request and its response.
    #[test]
    fn a_single_small_object_costs_two_round_trips() {
        let t = trace(vec![req("/", None, 0.0, 0.001, 1000)], false);
        let p = predict(
            &t,
            Target {
                rtt_s: 0.1,
                down_bps: f64::INFINITY,
                up_bps: f64::INFINITY,
            },
        );
        assert!((p.last_byte_s - 0.2).abs() < 1e-9, "{p:?}");
        // TLS adds a round trip.
        let mut tls = t.clone();
        tls.setup = Setup::Tls;
        let p = predict(
            &tls,
            Target {
                rtt_s: 0.1,
                down_bps: f64::INFINITY,
                up_bps: f64::INFINITY,
            },
        );
        assert!((p.last_byte_s - 0.3).abs() < 1e-9, "{p:?}");
    }

    /// Children wait for the parent's whole response and, on one
    /// HTTP/1.1 connection, for each other; multiplexed they overlap.
    #[test]
    fn serial_children_wait_for_each_other_multiplexed_ones_do_not() {
        let reqs = vec![
            req("/", None, 0.0, 0.01, 1000),
            req("/a", Some(0), 0.01, 0.02, 1000),
            req("/b", Some(0), 0.01, 0.02, 1000),
        ];
        let target = Target {
            rtt_s: 0.1,
            down_bps: f64::INFINITY,
            up_bps: f64::INFINITY,
        };
        let serial = predict(&trace(reqs.clone(), false), target);
        let mux = predict(&trace(reqs, true), target);
        // handshake 0.1, page 0.1, then /a 0.1 and /b 0.1 after it.
        assert!((serial.last_byte_s - 0.4).abs() < 1e-9, "{serial:?}");
        assert!((mux.last_byte_s - 0.3).abs() < 1e-9, "{mux:?}");
        assert!(serial.requests.iter().all(|r| r.end_s >= r.first_byte_s));
    }

    /// At a finite rate the bytes take their line time.
    #[test]
    fn bytes_take_their_line_time() {
        let t = trace(vec![req("/", None, 0.0, 0.0, 100 * 1460)], false);
        let fast = predict(
            &t,
            Target {
                rtt_s: 0.0,
                down_bps: 1e6,
                up_bps: 1e6,
            },
        );
        // 100 segments of 1500 IP bytes at 1 Mbit/s: 1.2 s.
        assert!(fast.last_byte_s > 1.2 && fast.last_byte_s < 1.3, "{fast:?}");
    }
}
