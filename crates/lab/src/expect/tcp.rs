//! The transport half of the expected-time model: a bottleneck line in each
//! direction and a sender's window, segment by segment, from the rules of
//! the protocols (RFC 9293 segments, RFC 5681 slow start with RFC 3465
//! byte counting as Linux does it, RFC 1122 delayed ACKs), not from any
//! measurement.
//!
//! Time is in seconds from the client's first packet. A [`Line`] is one
//! direction of the emulated link: a packet occupies it for its
//! serialisation time and arrives one propagation delay (half the RTT)
//! after it left. Packets of several connections share the line; a packet
//! takes the first idle stretch at or after the moment it is ready, so the
//! line is work-conserving (as the emulator's single queue is).

use std::collections::VecDeque;

/// Which TCP the emulated hosts run (the link's `tcp1997` switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpEra {
    /// Linux's defaults: initial window 10 (RFC 6928), timestamps (12 option
    /// bytes on every segment), SACK and window scaling on the SYN.
    Linux,
    /// `--tcp 1997`: Linux with initial window 2, no timestamps, no SACK,
    /// no window scaling, minimum RTO 1 s (docs/link.md).
    Tcp1997,
}

impl TcpEra {
    /// Initial congestion window, segments.
    pub fn initial_window(self) -> u32 {
        match self {
            TcpEra::Linux => 10,
            TcpEra::Tcp1997 => 2,
        }
    }

    /// TCP option bytes on every segment after the SYNs.
    pub fn option_bytes(self) -> u32 {
        match self {
            // Timestamps: 10 bytes plus two NOPs.
            TcpEra::Linux => 12,
            TcpEra::Tcp1997 => 0,
        }
    }

    /// TCP option bytes on a SYN or SYN-ACK.
    pub fn syn_option_bytes(self) -> u32 {
        match self {
            // MSS 4, SACK-permitted 2, timestamps 10, NOP 1, window scale 3.
            TcpEra::Linux => 20,
            // MSS alone.
            TcpEra::Tcp1997 => 4,
        }
    }

    /// Minimum retransmission timeout, s (Linux 200 ms; `rto_min 1000ms`).
    pub fn rto_min_s(self) -> f64 {
        match self {
            TcpEra::Linux => 0.2,
            TcpEra::Tcp1997 => 1.0,
        }
    }
}

/// Linux's delayed-ACK timer at its minimum (TCP_DELACK_MIN, 40 ms): how
/// long a receiver holds the ACK of a lone segment.
pub const DELAYED_ACK_S: f64 = 0.040;

/// IPv4 + TCP headers without options.
pub const IP_TCP_HEADER: u32 = 40;

/// One direction of the bottleneck.
#[derive(Clone, Debug)]
pub struct Line {
    pub bits_per_s: f64,
    /// Bytes the line adds to every packet (PPP/HDLC framing; 0 unless the
    /// link says so).
    pub framing_bytes: u32,
    /// One-way propagation delay, s.
    pub delay_s: f64,
    /// Busy stretches, sorted and disjoint.
    busy: Vec<(f64, f64)>,
    /// Packets and IP bytes sent.
    pub packets: u64,
    pub ip_bytes: u64,
}

impl Line {
    pub fn new(bits_per_s: f64, framing_bytes: u32, delay_s: f64) -> Line {
        Line {
            bits_per_s,
            framing_bytes,
            delay_s,
            busy: Vec::new(),
            packets: 0,
            ip_bytes: 0,
        }
    }

    /// Serialisation time of an IP packet of `ip_bytes`.
    pub fn serialisation_s(&self, ip_bytes: u32) -> f64 {
        if self.bits_per_s.is_infinite() {
            return 0.0;
        }
        f64::from(ip_bytes + self.framing_bytes) * 8.0 / self.bits_per_s
    }

    /// Sends a packet ready at `ready`: returns when its last bit arrives
    /// at the far end.
    pub fn send(&mut self, ready: f64, ip_bytes: u32) -> f64 {
        self.packets += 1;
        self.ip_bytes += u64::from(ip_bytes);
        let dur = self.serialisation_s(ip_bytes);
        let mut t = ready;
        let mut i = self.busy.partition_point(|&(_, end)| end <= t);
        while i < self.busy.len() && self.busy[i].0 < t + dur {
            t = t.max(self.busy[i].1);
            i += 1;
        }
        if dur > 0.0 {
            self.busy.insert(i, (t, t + dur));
        }
        t + dur + self.delay_s
    }

    /// Seconds the line was busy.
    pub fn busy_s(&self) -> f64 {
        self.busy.iter().map(|(a, b)| b - a).sum()
    }
}

/// What a transport puts around the bytes it carries and how its sender
/// starts: TCP of either era, or QUIC (RFC 9000/9002).
#[derive(Clone, Copy, Debug)]
pub struct Transport {
    /// Payload bytes per full data packet.
    pub seg_payload: u32,
    /// IP bytes of a data packet beyond its payload.
    pub data_overhead: u32,
    /// IP bytes of a pure ACK.
    pub ack_bytes: u32,
    /// IP bytes of a SYN or SYN-ACK (TCP).
    pub syn_bytes: u32,
    /// Initial window, packets.
    pub initial_window: u32,
    /// Receiver's window, packets.
    pub rwnd: f64,
    /// How long a receiver holds the ACK of a lone packet, s.
    pub delayed_ack_s: f64,
}

impl Transport {
    /// TCP of `era` over an MTU (and an advertised MSS, if set).
    pub fn tcp(era: TcpEra, mtu: u32, advmss: Option<u32>) -> Transport {
        let mss = advmss
            .unwrap_or(mtu - IP_TCP_HEADER)
            .min(mtu - IP_TCP_HEADER);
        let seg_payload = mss - era.option_bytes();
        Transport {
            seg_payload,
            data_overhead: IP_TCP_HEADER + era.option_bytes(),
            ack_bytes: IP_TCP_HEADER + era.option_bytes(),
            syn_bytes: IP_TCP_HEADER + era.syn_option_bytes(),
            initial_window: era.initial_window(),
            rwnd: match era {
                // 64 KB without window scaling.
                TcpEra::Tcp1997 => (65_535 / seg_payload) as f64,
                TcpEra::Linux => f64::INFINITY,
            },
            delayed_ack_s: DELAYED_ACK_S,
        }
    }

    /// QUIC (RFC 9000/9002) in 1200-byte UDP payloads (the size every
    /// path must carry, where quinn starts): IPv4 20 + UDP 8 + a short
    /// header with an 8-byte connection ID and a 2-byte packet number
    /// (11) + a STREAM frame header (~8) + the AEAD tag (16); initial
    /// window 14,720 bytes (RFC 9002 §7.2: 12 such packets); ACK every
    /// second packet or after max_ack_delay 25 ms.
    pub fn quic() -> Transport {
        let udp_payload = 1200;
        let per_packet = 11 + 8 + 16;
        Transport {
            seg_payload: udp_payload - per_packet,
            data_overhead: 20 + 8 + per_packet,
            // Short header, an ACK frame (~6) and the tag.
            ack_bytes: 20 + 8 + 11 + 6 + 16,
            syn_bytes: 20 + 8 + 1200,
            initial_window: 14_720 / udp_payload,
            rwnd: f64::INFINITY,
            delayed_ack_s: 0.025,
        }
    }
}

/// The two directions of the link and the transport over it.
#[derive(Clone, Debug)]
pub struct Wire {
    /// Server to client.
    pub down: Line,
    /// Client to server.
    pub up: Line,
    pub tx: Transport,
}

impl Wire {
    /// IP bytes of a packet carrying `payload` bytes.
    pub fn segment_bytes(&self, payload: u32) -> u32 {
        self.tx.data_overhead + payload
    }
}

/// The server side of one TCP connection (its congestion window) and the
/// client's ACKs of what it sends.
#[derive(Clone, Debug)]
pub struct Conn {
    /// Congestion window, segments (slow start only: no loss leaves it).
    cwnd: f64,
    /// The receiver's window, segments (64 KB without window scaling).
    rwnd: f64,
    delayed_ack_s: f64,
    /// Segments sent and not yet acknowledged at the server.
    in_flight: u32,
    /// ACKs on their way to the server: (arrival at the server, segments).
    acks: VecDeque<(f64, u32)>,
    /// A segment the client holds its ACK for (delayed ACK): its arrival.
    pending: Option<f64>,
    /// When the server last started sending a segment (segments of one
    /// connection leave in order).
    last_start: f64,
    /// When the last segment of this connection reached the client.
    pub last_arrival: f64,
    /// Pure ACK packets the client sent.
    pub client_acks: u64,
    /// Data segments the server sent.
    pub segments: u64,
}

/// When a sent block's bytes reached the client: `(bytes up to and
/// including this segment, arrival)`, in order.
pub type Arrivals = Vec<(u64, f64)>;

impl Conn {
    pub fn new(tx: &Transport) -> Conn {
        Conn {
            cwnd: f64::from(tx.initial_window),
            rwnd: tx.rwnd,
            delayed_ack_s: tx.delayed_ack_s,
            in_flight: 0,
            acks: VecDeque::new(),
            pending: None,
            last_start: 0.0,
            last_arrival: 0.0,
            client_acks: 0,
            segments: 0,
        }
    }

    /// A connection whose window never limits (for the "no slow start"
    /// counterfactual).
    pub fn unlimited(tx: &Transport) -> Conn {
        let mut c = Conn::new(tx);
        c.cwnd = f64::INFINITY;
        c.rwnd = f64::INFINITY;
        c
    }

    /// Takes in every ACK that reached the server by `t` (slow start:
    /// the window grows by the segments each ACK covers, RFC 3465).
    fn take_acks(&mut self, t: f64) {
        while let Some(&(at, segs)) = self.acks.front() {
            if at > t {
                break;
            }
            self.acks.pop_front();
            self.in_flight = self.in_flight.saturating_sub(segs);
            self.cwnd += f64::from(segs);
        }
    }

    /// The client ACKs the held segment after the delayed-ACK timer.
    fn flush_pending(&mut self, wire: &mut Wire, until: f64) {
        if let Some(a) = self.pending {
            if a + self.delayed_ack_s <= until {
                self.pending = None;
                self.client_ack(wire, a + self.delayed_ack_s, 1);
            }
        }
    }

    fn client_ack(&mut self, wire: &mut Wire, at: f64, segs: u32) {
        self.client_acks += 1;
        let arrive = wire.up.send(at, wire.tx.ack_bytes);
        self.acks.push_back((arrive, segs));
        self.acks
            .make_contiguous()
            .sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    /// The client sends data at `t` (a request): a held ACK rides on it
    /// (reaching the server at `arrive`).
    pub fn client_data_sent(&mut self, t: f64, arrive: f64) {
        if let Some(a) = self.pending {
            if t <= a + self.delayed_ack_s {
                self.pending = None;
                self.acks.push_back((arrive, 1));
                self.acks
                    .make_contiguous()
                    .sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
    }

    /// The server writes `bytes` at `ready`: they leave as full segments
    /// (the last one partial) as the window allows. Returns when each
    /// segment reached the client.
    pub fn send(&mut self, wire: &mut Wire, ready: f64, bytes: u64) -> Arrivals {
        let mut out = Vec::new();
        let mut sent = 0u64;
        let mss = u64::from(wire.tx.seg_payload);
        while sent < bytes {
            let payload = (bytes - sent).min(mss) as u32;
            let mut t = ready.max(self.last_start);
            self.take_acks(t);
            while f64::from(self.in_flight) >= self.cwnd.min(self.rwnd) {
                // Wait for the next ACK; if none is on its way, the client
                // is holding one (delayed ACK) and sends it on its timer.
                if self.acks.is_empty() {
                    match self.pending.take() {
                        Some(a) => self.client_ack(wire, a + self.delayed_ack_s, 1),
                        // Nothing in flight can be waiting: cannot happen
                        // with a window of at least one packet.
                        None => break,
                    }
                }
                if let Some(&(at, _)) = self.acks.front() {
                    t = t.max(at);
                }
                self.take_acks(t);
            }
            self.last_start = t;
            let arrival = wire.down.send(t, wire.segment_bytes(payload));
            self.in_flight += 1;
            self.segments += 1;
            sent += u64::from(payload);
            out.push((sent, arrival));
            self.last_arrival = self.last_arrival.max(arrival);
            // The client: ACK every second segment at once, hold a lone one.
            self.flush_pending(wire, arrival);
            match self.pending.take() {
                Some(_) => self.client_ack(wire, arrival, 2),
                None => self.pending = Some(arrival),
            }
        }
        out
    }

    /// The client's reader took in a pushed segment that arrived at `at`
    /// and emptied its receive queue: Linux acknowledges it at once
    /// (`tcp_cleanup_rbuf`, `ICSK_ACK_PUSHED`) instead of holding it for
    /// the delayed-ACK timer. Returns when the ACK of everything sent so
    /// far reaches the server.
    pub fn ack_read(&mut self, wire: &mut Wire, at: f64) -> f64 {
        if self.pending.take().is_some() {
            self.client_ack(wire, at, 1);
        }
        self.acks.iter().map(|a| a.0).fold(at, f64::max)
    }

    /// A held ACK left on another packet (a FIN): no packet of its own.
    pub fn drop_held_ack(&mut self) {
        self.pending = None;
    }

    /// The connection's last held ACK goes out on its timer (counted).
    pub fn finish(&mut self, wire: &mut Wire) {
        if let Some(a) = self.pending.take() {
            self.client_ack(wire, a + self.delayed_ack_s, 1);
        }
    }
}

/// The arrival of byte `at` (1-based count) of a block, from its segment
/// arrivals.
pub fn arrival_of(arrivals: &Arrivals, at: u64) -> f64 {
    let i = arrivals.partition_point(|&(end, _)| end < at);
    arrivals.get(i).or(arrivals.last()).map_or(0.0, |&(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(rate: f64, rtt: f64, era: TcpEra) -> Wire {
        // MSS 1000 without options: 1000 payload bytes, 40 header bytes.
        Wire {
            down: Line::new(rate, 0, rtt / 2.0),
            up: Line::new(rate, 0, rtt / 2.0),
            tx: Transport {
                ack_bytes: 40,
                ..Transport::tcp(era, 1040 + era.option_bytes(), None)
            },
        }
    }

    #[test]
    fn one_segment_is_its_serialisation_plus_the_delay() {
        // 1000 payload + 40 headers at 8 kbit/s = 1.04 s, plus 0.05 s.
        let mut w = wire(8000.0, 0.1, TcpEra::Tcp1997);
        let mut c = Conn::new(&w.tx);
        let a = c.send(&mut w, 0.0, 1000);
        assert_eq!(a.len(), 1);
        assert!((a[0].1 - 1.09).abs() < 1e-9, "{a:?}");
    }

    #[test]
    fn slow_start_waits_one_round_trip_per_window() {
        // Infinite rate: only the round trips count. Window 2: 2 segments,
        // then (one ACK for both) 4, then 8: 14 segments take 3 flights,
        // i.e. the last arrives 2 RTT after the first.
        let mut w = wire(f64::INFINITY, 0.1, TcpEra::Tcp1997);
        let mut c = Conn::new(&w.tx);
        let a = c.send(&mut w, 0.0, 14_000);
        assert_eq!(a.len(), 14);
        assert!((a[1].1 - 0.05).abs() < 1e-9);
        assert!((a[2].1 - 0.15).abs() < 1e-9, "{a:?}");
        assert!((a[13].1 - 0.25).abs() < 1e-9, "{a:?}");
        // Linux's window of 10 sends 14 segments in 2 flights.
        let mut w = wire(f64::INFINITY, 0.1, TcpEra::Linux);
        let mut c = Conn::new(&w.tx);
        let a = c.send(&mut w, 0.0, 14_000);
        assert!((a[13].1 - 0.15).abs() < 1e-9, "{a:?}");
    }

    #[test]
    fn a_lone_segment_beyond_the_window_waits_for_the_delayed_ack() {
        // Window 2, 3 segments: after 2 the window doubles at once (both
        // acked together), so no timer. With an odd window the lone
        // segment is held: window 1 is not a setting, so check the timer
        // path through `finish`: one held ACK is one more packet.
        let mut w = wire(f64::INFINITY, 0.1, TcpEra::Tcp1997);
        let mut c = Conn::new(&w.tx);
        c.send(&mut w, 0.0, 3000);
        assert_eq!(c.client_acks, 1);
        c.finish(&mut w);
        assert_eq!(c.client_acks, 2);
    }

    #[test]
    fn a_shared_line_serves_two_senders_one_after_the_other() {
        let mut l = Line::new(8000.0, 0, 0.0);
        // Each 1000-byte packet takes 1 s.
        assert!((l.send(0.0, 1000) - 1.0).abs() < 1e-9);
        assert!((l.send(0.0, 1000) - 2.0).abs() < 1e-9);
        // A gap before 5 s is used by a packet ready at 3 s.
        assert!((l.send(5.0, 1000) - 6.0).abs() < 1e-9);
        assert!((l.send(3.0, 1000) - 4.0).abs() < 1e-9);
        assert!((l.busy_s() - 4.0).abs() < 1e-9);
    }
}
