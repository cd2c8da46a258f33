//! Packet classification: what kind of TCP/IP (or QUIC/UDP/IP) packet
//! crossed the link.
//!
//! Paper 001 counts "Pa" = every IP packet on the link, and its discussion
//! separates connection set-up (SYN, SYN-ACK), tear-down (FIN, RST), pure
//! ACKs and data. Retransmissions are recognised by per-flow sequence
//! tracking: a segment that carries data whose end sequence number is not
//! beyond the highest end already seen in that flow direction resends bytes
//! the link already carried (or lost).
//!
//! QUIC (RFC 9000) over UDP is classified by what its invariant header
//! shows (RFC 8999): long-header packets (Initial, 0-RTT, Handshake, Retry:
//! the handshake) and short-header (1-RTT) packets. Everything after the
//! header is encrypted — frame types, stream data, acknowledgements,
//! retransmissions and CONNECTION_CLOSE are invisible on the link — so
//! ACK-only 1-RTT packets can only be guessed by size
//! (`QUIC_SMALL_PAYLOAD_BYTES`), retransmissions are not counted, and
//! connections are counted when they open (a client's first Initial on a
//! new address/port pair) but never seen to close.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::wire::{tcp_flags, Ipv4, Tcp, IPPROTO_TCP, IPPROTO_UDP, UDP_HEADER_LEN};

/// A QUIC short-header packet with at most this many UDP payload bytes is
/// counted as `QuicSmall`, "probably ACK-only": a 1-RTT packet carrying only
/// an ACK frame is 30-42 bytes with quinn's 8-byte connection IDs (1 byte of
/// flags, the connection ID, a 1-4 byte packet number, the ACK frame, the
/// 16-byte AEAD tag), while the smallest HTTP/3 request seen was 54 bytes.
/// A guess by size: encryption hides the frame types.
pub const QUIC_SMALL_PAYLOAD_BYTES: usize = 48;

/// Which way a packet crosses the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Client to server ("uplink").
    Up,
    /// Server to client ("downlink").
    Down,
}

impl Direction {
    pub fn index(self) -> usize {
        match self {
            Direction::Up => 0,
            Direction::Down => 1,
        }
    }
}

/// One kind per packet; the kinds partition the packets, so their counts add
/// up to the total.
///
/// Precedence when flags combine: RST, then SYN / SYN-ACK, then segments
/// carrying data (a FIN piggy-backed on data counts as data, and in
/// `fin_flags`), then a bare FIN, then a pure ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Syn,
    SynAck,
    Fin,
    Rst,
    PureAck,
    Data,
    /// Data whose bytes were already sent once in this flow direction.
    Retransmission,
    /// Not TCP or QUIC over IPv4 (ICMP, other UDP, unparseable): counted,
    /// never dropped.
    Other,
    /// QUIC long-header packet (Initial, 0-RTT, Handshake, Retry, version
    /// negotiation): the handshake.
    QuicHandshake,
    /// QUIC short-header (1-RTT) packet above `QUIC_SMALL_PAYLOAD_BYTES`:
    /// data, and whatever else it carries (invisible).
    QuicData,
    /// QUIC short-header packet of at most `QUIC_SMALL_PAYLOAD_BYTES`:
    /// probably ACK-only (a guess by size).
    QuicSmall,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Syn,
        Kind::SynAck,
        Kind::Fin,
        Kind::Rst,
        Kind::PureAck,
        Kind::Data,
        Kind::Retransmission,
        Kind::Other,
        Kind::QuicHandshake,
        Kind::QuicData,
        Kind::QuicSmall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Syn => "syn",
            Kind::SynAck => "syn_ack",
            Kind::Fin => "fin",
            Kind::Rst => "rst",
            Kind::PureAck => "pure_ack",
            Kind::Data => "data",
            Kind::Retransmission => "retransmission",
            Kind::Other => "other",
            Kind::QuicHandshake => "quic_handshake",
            Kind::QuicData => "quic_data",
            Kind::QuicSmall => "quic_small",
        }
    }
}

/// What the classifier learnt about one packet. Small and `Copy`, so the
/// forwarder stores it beside the packet from ingress to delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    pub kind: Kind,
    /// IP total length.
    pub ip_bytes: u32,
    /// IP header + TCP header including options; IP + UDP header for QUIC
    /// (QUIC's own header and AEAD tag are UDP payload, as TLS records are
    /// TCP payload); all of it for other packets.
    pub header_bytes: u32,
    /// TCP or UDP (QUIC) payload bytes (0 for other packets).
    pub payload_bytes: u32,
    /// The FIN flag was set (also on data segments).
    pub fin_flag: bool,
    /// A first SYN (not SYN-ACK, not a retransmitted SYN), or a client's
    /// first QUIC Initial from a new address/port pair: a connection attempt.
    pub opens_connection: bool,
    /// A SYN or FIN sent again (its kind stays Syn / Fin).
    pub control_retransmission: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    src_port: u16,
    dst_port: u16,
}

impl FlowKey {
    /// The same connection seen from either direction maps to one key.
    fn connection(self) -> FlowKey {
        if (self.src, self.src_port) <= (self.dst, self.dst_port) {
            self
        } else {
            FlowKey {
                src: self.dst,
                dst: self.src,
                src_port: self.dst_port,
                dst_port: self.src_port,
            }
        }
    }
}

/// Per flow direction: the highest end sequence number seen so far.
#[derive(Clone, Copy)]
struct FlowState {
    highest_end: u32,
}

/// Open-connection tracking state: which sides have sent a FIN.
#[derive(Clone, Copy, Default)]
struct ConnState {
    fin_seen: [bool; 2],
}

/// Bound on tracked flows. A client opening thousands of connections per run
/// stays far below it; when exceeded the tables are cleared, which can at
/// worst miss a few retransmissions (memory stays bounded on any input).
pub const MAX_TRACKED_FLOWS: usize = 65_536;

/// Stateful classifier. Lives as long as the link (connections may span
/// measurement runs), so it is not reset by a new run.
#[derive(Default)]
pub struct Classifier {
    flows: HashMap<FlowKey, FlowState>,
    conns: HashMap<FlowKey, ConnState>,
    /// QUIC address/port pairs seen (connections counted once each).
    quic: std::collections::HashSet<FlowKey>,
}

/// `a <= b` in 32-bit sequence space (RFC 9293 §3.4).
fn seq_le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

impl Classifier {
    pub fn new() -> Self {
        Self::default()
    }

    /// Connections currently open (SYN seen, neither RST nor both FINs yet).
    pub fn open_connections(&self) -> usize {
        self.conns.len()
    }

    /// Classifies one raw IP packet as it enters the link.
    pub fn classify(&mut self, packet: &[u8]) -> Classified {
        let other = |ip_bytes: usize| Classified {
            kind: Kind::Other,
            ip_bytes: ip_bytes as u32,
            header_bytes: ip_bytes as u32,
            payload_bytes: 0,
            fin_flag: false,
            opens_connection: false,
            control_retransmission: false,
        };
        let ip = match Ipv4::new_checked(packet) {
            Ok(ip) => ip,
            Err(_) => return other(packet.len()),
        };
        if ip.protocol() == IPPROTO_UDP && !ip.is_later_fragment() {
            return self
                .classify_quic(&ip)
                .unwrap_or_else(|| other(ip.total_len()));
        }
        if ip.protocol() != IPPROTO_TCP || ip.is_later_fragment() {
            return other(ip.total_len());
        }
        let tcp = match Tcp::new_checked(ip.payload()) {
            Ok(tcp) => tcp,
            Err(_) => return other(ip.total_len()),
        };
        if self.flows.len() >= MAX_TRACKED_FLOWS || self.conns.len() >= MAX_TRACKED_FLOWS {
            self.flows.clear();
            self.conns.clear();
        }
        let key = FlowKey {
            src: ip.src(),
            dst: ip.dst(),
            src_port: tcp.src_port(),
            dst_port: tcp.dst_port(),
        };
        let flags = tcp.flags();
        let payload = tcp.payload_len() as u32;
        let syn = flags & tcp_flags::SYN != 0;
        let fin = flags & tcp_flags::FIN != 0;
        let rst = flags & tcp_flags::RST != 0;
        let ack = flags & tcp_flags::ACK != 0;
        // Sequence space consumed: data, plus one each for SYN and FIN.
        let seq = tcp.seq();
        let end = seq
            .wrapping_add(payload)
            .wrapping_add(u32::from(syn))
            .wrapping_add(u32::from(fin));

        let mut resent = false;
        if syn {
            match self.flows.get(&key) {
                // Same initial sequence number again: a retransmitted SYN.
                Some(f) if f.highest_end == end => resent = true,
                // A new connection (possibly reusing the 4-tuple).
                _ => {
                    self.flows.insert(key, FlowState { highest_end: end });
                }
            }
        } else if end != seq {
            match self.flows.get_mut(&key) {
                Some(f) => {
                    if seq_le(end, f.highest_end) {
                        resent = true;
                    } else {
                        f.highest_end = end;
                    }
                }
                // Mid-connection start of tracking (e.g. after a table clear).
                None => {
                    self.flows.insert(key, FlowState { highest_end: end });
                }
            }
        }

        let conn = key.connection();
        let side = usize::from(conn != key);
        let opens_connection = syn && !ack && !resent;
        if opens_connection {
            self.conns.insert(conn, ConnState::default());
        } else if rst {
            self.conns.remove(&conn);
            self.flows.remove(&key);
        } else if fin {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.fin_seen[side] = true;
                if c.fin_seen == [true, true] {
                    self.conns.remove(&conn);
                }
            }
        }

        let kind = if rst {
            Kind::Rst
        } else if syn && ack {
            Kind::SynAck
        } else if syn {
            Kind::Syn
        } else if payload > 0 {
            if resent {
                Kind::Retransmission
            } else {
                Kind::Data
            }
        } else if fin {
            Kind::Fin
        } else {
            Kind::PureAck
        };
        let header_bytes = (ip.header_len() + tcp.header_len()) as u32;
        Classified {
            kind,
            ip_bytes: ip.total_len() as u32,
            header_bytes,
            payload_bytes: payload,
            fin_flag: fin,
            opens_connection,
            control_retransmission: resent && (syn || (fin && payload == 0)),
        }
    }
}

impl Classifier {
    /// A UDP datagram of a QUIC connection: a long-header packet (RFC 8999:
    /// header-form bit set, non-zero version), or any datagram on an
    /// address/port pair that carried one before (short headers have no
    /// version, and peers may grease the fixed bit, RFC 9287). `None` for
    /// other UDP.
    fn classify_quic(&mut self, ip: &Ipv4<'_>) -> Option<Classified> {
        let udp = ip.payload();
        if udp.len() < UDP_HEADER_LEN + 1 {
            return None;
        }
        let src_port = u16::from_be_bytes([udp[0], udp[1]]);
        let dst_port = u16::from_be_bytes([udp[2], udp[3]]);
        let quic = &udp[UDP_HEADER_LEN..];
        let first = quic[0];
        let long = first & 0x80 != 0 && quic.len() >= 5;
        let key = FlowKey {
            src: ip.src(),
            dst: ip.dst(),
            src_port,
            dst_port,
        }
        .connection();
        if self.quic.len() >= MAX_TRACKED_FLOWS {
            self.quic.clear();
        }
        let mut opens_connection = false;
        if long {
            // QUIC v1 Initial: long header, type bits 00, non-zero version.
            let initial = (first & 0x30) == 0 && quic[1..5] != [0, 0, 0, 0];
            let new = self.quic.insert(key);
            opens_connection = initial && new;
        } else if !self.quic.contains(&key) {
            return None;
        }
        let kind = if long {
            Kind::QuicHandshake
        } else if quic.len() <= QUIC_SMALL_PAYLOAD_BYTES {
            Kind::QuicSmall
        } else {
            Kind::QuicData
        };
        let header_bytes = (ip.header_len() + UDP_HEADER_LEN) as u32;
        Some(Classified {
            kind,
            ip_bytes: ip.total_len() as u32,
            header_bytes,
            payload_bytes: quic.len() as u32,
            fin_flag: false,
            opens_connection,
            control_retransmission: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    const C: [u8; 4] = [198, 18, 0, 1];
    const S: [u8; 4] = [198, 18, 0, 2];

    fn tcp(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        f: impl FnOnce(
            etherparse::PacketBuilderStep<etherparse::TcpHeader>,
        ) -> etherparse::PacketBuilderStep<etherparse::TcpHeader>,
        payload: &[u8],
    ) -> Vec<u8> {
        let b = f(PacketBuilder::ipv4(src, dst, 64).tcp(sport, dport, seq, 65535));
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn handshake_data_retransmission_teardown() {
        let mut c = Classifier::new();
        let syn = tcp(C, S, 40000, 80, 100, |b| b.syn(), &[]);
        let k = c.classify(&syn);
        assert_eq!(k.kind, Kind::Syn);
        assert!(k.opens_connection);
        assert_eq!(k.header_bytes, 40);
        assert_eq!(c.open_connections(), 1);
        // The same SYN again is a retransmitted SYN, not a new connection.
        let k = c.classify(&syn);
        assert_eq!(k.kind, Kind::Syn);
        assert!(!k.opens_connection && k.control_retransmission);

        let synack = tcp(S, C, 80, 40000, 5000, |b| b.syn().ack(101), &[]);
        assert_eq!(c.classify(&synack).kind, Kind::SynAck);
        let ack = tcp(C, S, 40000, 80, 101, |b| b.ack(5001), &[]);
        assert_eq!(c.classify(&ack).kind, Kind::PureAck);

        let req = tcp(
            C,
            S,
            40000,
            80,
            101,
            |b| b.ack(5001).psh(),
            b"GET / HTTP/1.1\r\n\r\n",
        );
        let k = c.classify(&req);
        assert_eq!(k.kind, Kind::Data);
        assert_eq!(k.payload_bytes, 18);
        assert_eq!(k.ip_bytes, 58);
        // Resent request bytes: a retransmission.
        assert_eq!(c.classify(&req).kind, Kind::Retransmission);
        // A partial overlap that extends beyond the highest end is new data.
        let more = tcp(C, S, 40000, 80, 110, |b| b.ack(5001), &[b'x'; 20]);
        assert_eq!(c.classify(&more).kind, Kind::Data);

        let fin_c = tcp(C, S, 40000, 80, 130, |b| b.ack(5001).fin(), &[]);
        let k = c.classify(&fin_c);
        assert_eq!(k.kind, Kind::Fin);
        assert!(k.fin_flag);
        assert_eq!(c.open_connections(), 1);
        // FIN piggy-backed on data counts as data, with the FIN flag noted.
        let fin_s = tcp(S, C, 80, 40000, 5001, |b| b.ack(131).fin(), b"bye");
        let k = c.classify(&fin_s);
        assert_eq!(k.kind, Kind::Data);
        assert!(k.fin_flag);
        assert_eq!(c.open_connections(), 0);
    }

    #[test]
    fn rst_and_other_and_garbage() {
        let mut c = Classifier::new();
        let rst = tcp(S, C, 80, 40001, 1, |b| b.rst(), &[]);
        assert_eq!(c.classify(&rst).kind, Kind::Rst);
        let mut udp = Vec::new();
        PacketBuilder::ipv4(C, S, 64)
            .udp(1, 2)
            .write(&mut udp, b"\x01hi")
            .unwrap();
        // UDP that is not QUIC (neither header-form nor fixed bit).
        let k = c.classify(&udp);
        assert_eq!(k.kind, Kind::Other);
        assert_eq!(k.ip_bytes as usize, udp.len());
        for junk in [&[][..], &[0x45][..], &[0x60; 40][..], &[0x4f; 20][..]] {
            assert_eq!(c.classify(junk).kind, Kind::Other);
        }
    }

    fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ipv4(src, dst, 64)
            .udp(sport, dport)
            .write(&mut v, payload)
            .unwrap();
        v
    }

    #[test]
    fn quic_by_its_invariant_header() {
        let mut c = Classifier::new();
        // Client Initial: long header, type 00, version 1, padded to 1200.
        let mut initial = vec![0xc3, 0, 0, 0, 1];
        initial.resize(1200, 0);
        let k = c.classify(&udp(C, S, 50000, 443, &initial));
        assert_eq!(k.kind, Kind::QuicHandshake);
        assert!(k.opens_connection);
        assert_eq!(k.header_bytes, 28);
        assert_eq!(k.payload_bytes, 1200);
        assert_eq!(k.ip_bytes, 1228);
        // A second Initial on the same pair (a retransmission, or the
        // server's reply) opens nothing.
        assert!(
            !c.classify(&udp(C, S, 50000, 443, &initial))
                .opens_connection
        );
        assert!(
            !c.classify(&udp(S, C, 443, 50000, &initial))
                .opens_connection
        );
        // Handshake packet (type 10).
        let mut hs = vec![0xe3, 0, 0, 0, 1];
        hs.resize(300, 0);
        assert_eq!(
            c.classify(&udp(S, C, 443, 50000, &hs)).kind,
            Kind::QuicHandshake
        );
        // 1-RTT: small is "probably ACK-only", larger is data (short
        // headers count only on a pair that had a long header).
        let ack = [0x41u8; QUIC_SMALL_PAYLOAD_BYTES];
        assert_eq!(
            c.classify(&udp(C, S, 50000, 443, &ack)).kind,
            Kind::QuicSmall
        );
        let data = [0x41u8; QUIC_SMALL_PAYLOAD_BYTES + 1];
        let k = c.classify(&udp(S, C, 443, 50000, &data));
        assert_eq!(k.kind, Kind::QuicData);
        assert!(!k.opens_connection);
        // QUIC never counts as an open TCP connection.
        assert_eq!(c.open_connections(), 0);
        // A greased fixed bit (RFC 9287) on a known pair is still QUIC; on
        // an unknown pair it is other UDP.
        let greased = [0x01u8; 100];
        assert_eq!(
            c.classify(&udp(S, C, 443, 50000, &greased)).kind,
            Kind::QuicData
        );
        assert_eq!(
            c.classify(&udp(S, C, 443, 50002, &greased)).kind,
            Kind::Other
        );
        // A new client port is a new connection.
        assert!(
            c.classify(&udp(C, S, 50001, 443, &initial))
                .opens_connection
        );
    }

    #[test]
    fn sequence_wraparound() {
        let mut c = Classifier::new();
        let syn = tcp(C, S, 1, 2, u32::MAX - 10, |b| b.syn(), &[]);
        c.classify(&syn);
        let d1 = tcp(C, S, 1, 2, u32::MAX - 9, |b| b.ack(1), &[0; 100]);
        assert_eq!(c.classify(&d1).kind, Kind::Data);
        let d2 = tcp(
            C,
            S,
            1,
            2,
            (u32::MAX - 9).wrapping_add(100),
            |b| b.ack(1),
            &[0; 100],
        );
        assert_eq!(c.classify(&d2).kind, Kind::Data);
        assert_eq!(c.classify(&d1).kind, Kind::Retransmission);
    }
}
