//! Per-run accounting at the measuring point (the forwarder), with the
//! definitions of paper 001 (docs/architecture.md, "What is measured"):
//! Pa = IP packets of every kind, both directions; Bytes = IP bytes with
//! headers; %ov = share of those bytes that are IP + TCP headers (options
//! included), or IP + UDP headers for QUIC.
//!
//! Packets are counted when they LEAVE the link (the time written to the
//! pcap), so counters and pcap agree exactly; packets dropped by the link are
//! counted separately (`dropped_*`), never in the totals.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::classify::{Classified, Direction, Kind};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketsBytes {
    pub packets: u64,
    pub bytes: u64,
}

impl PacketsBytes {
    pub fn is_zero(&self) -> bool {
        self.packets == 0 && self.bytes == 0
    }

    fn add(&mut self, bytes: u32) {
        self.packets += 1;
        self.bytes += u64::from(bytes);
    }
}

/// Counts per packet kind; they partition the direction's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    pub syn: PacketsBytes,
    pub syn_ack: PacketsBytes,
    pub fin: PacketsBytes,
    pub rst: PacketsBytes,
    pub pure_ack: PacketsBytes,
    pub data: PacketsBytes,
    pub retransmission: PacketsBytes,
    pub other: PacketsBytes,
    /// QUIC long-header packets (handshake).
    #[serde(default)]
    pub quic_handshake: PacketsBytes,
    /// QUIC short-header packets above the small size (data and more).
    #[serde(default)]
    pub quic_data: PacketsBytes,
    /// QUIC short-header packets of the small size (probably ACK-only).
    #[serde(default)]
    pub quic_small: PacketsBytes,
}

impl KindCounts {
    pub fn get(&self, kind: Kind) -> PacketsBytes {
        match kind {
            Kind::Syn => self.syn,
            Kind::SynAck => self.syn_ack,
            Kind::Fin => self.fin,
            Kind::Rst => self.rst,
            Kind::PureAck => self.pure_ack,
            Kind::Data => self.data,
            Kind::Retransmission => self.retransmission,
            Kind::Other => self.other,
            Kind::QuicHandshake => self.quic_handshake,
            Kind::QuicData => self.quic_data,
            Kind::QuicSmall => self.quic_small,
        }
    }

    fn get_mut(&mut self, kind: Kind) -> &mut PacketsBytes {
        match kind {
            Kind::Syn => &mut self.syn,
            Kind::SynAck => &mut self.syn_ack,
            Kind::Fin => &mut self.fin,
            Kind::Rst => &mut self.rst,
            Kind::PureAck => &mut self.pure_ack,
            Kind::Data => &mut self.data,
            Kind::Retransmission => &mut self.retransmission,
            Kind::Other => &mut self.other,
            Kind::QuicHandshake => &mut self.quic_handshake,
            Kind::QuicData => &mut self.quic_data,
            Kind::QuicSmall => &mut self.quic_small,
        }
    }

    fn merge(&mut self, o: &KindCounts) {
        for k in Kind::ALL {
            let a = self.get_mut(k);
            let b = o.get(k);
            a.packets += b.packets;
            a.bytes += b.bytes;
        }
    }
}

/// One direction's counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionCounters {
    /// IP packets that left the link in this direction.
    pub packets: u64,
    /// Their IP bytes (total length, headers included).
    pub bytes: u64,
    /// IP + TCP header bytes (options included); all bytes of non-TCP packets.
    pub header_bytes: u64,
    /// TCP payload bytes (including retransmitted payload).
    pub payload_bytes: u64,
    pub kinds: KindCounts,
    /// Packets with the FIN flag set (bare FINs and FINs on data).
    pub fin_flags: u64,
    /// SYNs or FINs sent again (their kind stays syn / fin).
    pub control_retransmissions: u64,
    /// First SYNs (connection attempts) in this direction.
    pub connections_opened: u64,
    pub dropped_queue_packets: u64,
    pub dropped_loss_packets: u64,
    /// Packets the queue discipline dropped by its own rule (CoDel, PIE,
    /// FQ-CoDel; `--aqm`); 0 with drop-tail.
    #[serde(default)]
    pub dropped_aqm_packets: u64,
    /// Octets the packets took on the serial line: `bytes` without link
    /// compression, the compressed octets with `--link-compress`.
    #[serde(default)]
    pub line_bytes: u64,
    /// Competing (cross) traffic that left the link in this direction: the
    /// packets of the connections the caller set apart
    /// (`Link::set_cross_traffic_port`, `bench --bulk`). They are in none of
    /// the other counters (nor in the pcap); drops are not split, so the
    /// `dropped_*` counters include the cross traffic's.
    #[serde(default, skip_serializing_if = "PacketsBytes::is_zero")]
    pub cross_traffic: PacketsBytes,
    /// Seconds since the run began when the first / last packet left the link.
    pub first_packet_s: Option<f64>,
    pub last_packet_s: Option<f64>,
}

impl DirectionCounters {
    /// Adds counts of the same run taken elsewhere (e.g. by another thread).
    pub fn absorb(&mut self, o: &DirectionCounters) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.header_bytes += o.header_bytes;
        self.payload_bytes += o.payload_bytes;
        self.kinds.merge(&o.kinds);
        self.fin_flags += o.fin_flags;
        self.control_retransmissions += o.control_retransmissions;
        self.connections_opened += o.connections_opened;
        self.dropped_queue_packets += o.dropped_queue_packets;
        self.dropped_loss_packets += o.dropped_loss_packets;
        self.dropped_aqm_packets += o.dropped_aqm_packets;
        self.line_bytes += o.line_bytes;
        self.cross_traffic.packets += o.cross_traffic.packets;
        self.cross_traffic.bytes += o.cross_traffic.bytes;
        self.first_packet_s = match (self.first_packet_s, o.first_packet_s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_packet_s = match (self.last_packet_s, o.last_packet_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

/// Counters of one measurement run (`begin_run` .. `end_run`), both directions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCounters {
    /// Pa: IP packets on the link, both directions, every kind.
    pub packets_total: u64,
    /// Bytes: IP bytes on the link, both directions, headers included.
    pub bytes_total: u64,
    pub header_bytes_total: u64,
    pub payload_bytes_total: u64,
    /// %ov: 100 * header_bytes_total / bytes_total.
    pub overhead_pct: f64,
    /// TCP connections opened (first SYNs, either direction).
    pub connections_opened: u64,
    /// Most connections open at once during the run.
    pub max_open_connections: u64,
    /// Data retransmissions, both directions.
    pub retransmissions: u64,
    /// Per kind, both directions.
    pub kinds: KindCounts,
    pub client_to_server: DirectionCounters,
    pub server_to_client: DirectionCounters,
    pub dropped_total: u64,
    /// First / last packet leaving the link, seconds since the run began.
    pub first_packet_s: Option<f64>,
    pub last_packet_s: Option<f64>,
    /// Wall-clock time the run began (Unix seconds), to place the pcap.
    pub run_started_unix_s: f64,
    /// Duration of the run as measured by the link (begin to end), seconds.
    pub run_duration_s: f64,
    /// Packets the forwarder could not write to the receiving TUN device
    /// (counted as delivered above; should stay 0).
    #[serde(default)]
    pub tun_write_errors: u64,
    /// How late packets left the link against their scheduled departure
    /// (see [`crate::lateness`]); set by the forwarder, zeros in results
    /// made before it.
    #[serde(default)]
    pub link_lateness: crate::lateness::LinkLateness,
}

/// Accumulates one run. `run_start` is the link time the run began at.
pub struct Meter {
    run_start: Duration,
    run_started_unix_s: f64,
    dirs: [DirectionCounters; 2],
    max_open: u64,
}

impl Meter {
    pub fn new(run_start: Duration, run_started_unix_s: f64) -> Self {
        Self {
            run_start,
            run_started_unix_s,
            dirs: Default::default(),
            max_open: 0,
        }
    }

    /// Run-relative seconds of a link time.
    pub fn rel_s(&self, t: Duration) -> f64 {
        t.saturating_sub(self.run_start).as_secs_f64()
    }

    /// A packet left the link at `t`.
    pub fn record(&mut self, dir: Direction, t: Duration, c: &Classified) {
        let s = self.rel_s(t);
        let d = &mut self.dirs[dir.index()];
        d.packets += 1;
        d.bytes += u64::from(c.ip_bytes);
        d.header_bytes += u64::from(c.header_bytes);
        d.payload_bytes += u64::from(c.payload_bytes);
        d.kinds.get_mut(c.kind).add(c.ip_bytes);
        d.fin_flags += u64::from(c.fin_flag);
        d.control_retransmissions += u64::from(c.control_retransmission);
        d.connections_opened += u64::from(c.opens_connection);
        d.first_packet_s.get_or_insert(s);
        d.last_packet_s = Some(s);
    }

    /// A packet of the cross traffic (set apart from the run's counts) left
    /// the link.
    pub fn record_cross(&mut self, dir: Direction, ip_bytes: usize) {
        self.dirs[dir.index()].cross_traffic.add(ip_bytes as u32);
    }

    /// The classifier's count of open connections after a packet entered.
    pub fn observe_open(&mut self, open: usize) {
        self.max_open = self.max_open.max(open as u64);
    }

    /// Octets a packet that left the link took on the line (compressed).
    pub fn record_line_bytes(&mut self, dir: Direction, octets: u64) {
        self.dirs[dir.index()].line_bytes += octets;
    }

    pub fn record_drop_queue(&mut self, dir: Direction) {
        self.dirs[dir.index()].dropped_queue_packets += 1;
    }

    pub fn record_drop_loss(&mut self, dir: Direction) {
        self.dirs[dir.index()].dropped_loss_packets += 1;
    }

    /// `n` packets the queue discipline dropped (AQM).
    pub fn record_drop_aqm(&mut self, dir: Direction, n: u64) {
        self.dirs[dir.index()].dropped_aqm_packets += n;
    }

    /// Adds what another meter of the same run counted (the forwarder runs
    /// one per direction).
    pub fn absorb(&mut self, o: &Meter) {
        for (a, b) in self.dirs.iter_mut().zip(o.dirs.iter()) {
            a.absorb(b);
        }
        self.max_open = self.max_open.max(o.max_open);
    }

    /// Totals of the run that ends at link time `now`.
    pub fn finish(&self, now: Duration) -> LinkCounters {
        let [up, down] = &self.dirs;
        let mut kinds = up.kinds;
        kinds.merge(&down.kinds);
        let bytes_total = up.bytes + down.bytes;
        let header_bytes_total = up.header_bytes + down.header_bytes;
        let min_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let max_opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        LinkCounters {
            packets_total: up.packets + down.packets,
            bytes_total,
            header_bytes_total,
            payload_bytes_total: up.payload_bytes + down.payload_bytes,
            overhead_pct: if bytes_total == 0 {
                0.0
            } else {
                100.0 * header_bytes_total as f64 / bytes_total as f64
            },
            connections_opened: up.connections_opened + down.connections_opened,
            max_open_connections: self.max_open,
            retransmissions: kinds.retransmission.packets,
            kinds,
            dropped_total: up.dropped_queue_packets
                + up.dropped_loss_packets
                + up.dropped_aqm_packets
                + down.dropped_queue_packets
                + down.dropped_loss_packets
                + down.dropped_aqm_packets,
            first_packet_s: min_opt(up.first_packet_s, down.first_packet_s),
            last_packet_s: max_opt(up.last_packet_s, down.last_packet_s),
            client_to_server: up.clone(),
            server_to_client: down.clone(),
            run_started_unix_s: self.run_started_unix_s,
            run_duration_s: self.rel_s(now),
            tun_write_errors: 0,
            link_lateness: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Classifier;
    use etherparse::PacketBuilder;

    #[test]
    fn totals_partition_and_overhead() {
        let mut cl = Classifier::new();
        let mut m = Meter::new(Duration::from_secs(10), 0.0);
        let mut syn = Vec::new();
        PacketBuilder::ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
            .tcp(1000, 80, 1, 1000)
            .syn()
            .write(&mut syn, &[])
            .unwrap();
        let mut data = Vec::new();
        PacketBuilder::ipv4([198, 18, 0, 2], [198, 18, 0, 1], 64)
            .tcp(80, 1000, 9, 1000)
            .ack(2)
            .write(&mut data, &[7; 960])
            .unwrap();
        let c = cl.classify(&syn);
        m.observe_open(cl.open_connections());
        m.record(Direction::Up, Duration::from_millis(10_100), &c);
        let c = cl.classify(&data);
        m.record(Direction::Down, Duration::from_millis(10_200), &c);
        m.record_drop_loss(Direction::Down);
        let r = m.finish(Duration::from_secs(11));
        assert_eq!(r.packets_total, 2);
        assert_eq!(r.bytes_total, 40 + 1000);
        assert_eq!(r.header_bytes_total, 80);
        assert!((r.overhead_pct - 8.0 / 1.04).abs() < 1e-9);
        assert_eq!(r.connections_opened, 1);
        assert_eq!(r.max_open_connections, 1);
        assert_eq!(r.kinds.syn.packets, 1);
        assert_eq!(r.kinds.data.bytes, 1000);
        assert_eq!(r.dropped_total, 1);
        assert_eq!(r.first_packet_s, Some(0.1));
        assert!((r.last_packet_s.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(r.run_duration_s, 1.0);
        // Two meters of the same run combine to the same totals.
        let mut a = Meter::new(Duration::from_secs(10), 0.0);
        let mut b = Meter::new(Duration::from_secs(10), 0.0);
        let syn_c = Classifier::new().classify(&syn);
        a.record(Direction::Up, Duration::from_millis(10_100), &syn_c);
        a.observe_open(1);
        b.record(Direction::Down, Duration::from_millis(10_200), &c);
        b.record_drop_loss(Direction::Down);
        a.absorb(&b);
        assert_eq!(a.finish(Duration::from_secs(11)), r);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["packets_total"], 2);
        assert_eq!(json["server_to_client"]["kinds"]["data"]["packets"], 1);
    }
}
