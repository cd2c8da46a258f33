//! Reading the emulator's pcaps back: packet counts (to check the counters)
//! and TCP time-sequence data (the xplot graphs paper 001 used, "Tools").

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{Context, Result};
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapReader;

/// Most packets read from one pcap: a Microscape run is a few hundred; a
/// million bounds memory if a file is not what we think.
pub const MAX_PACKETS: usize = 1_000_000;

/// Number of packet records in a pcap file.
pub fn count_packets(path: &Path) -> Result<u64> {
    let f = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = PcapReader::new(BufReader::new(f))
        .with_context(|| format!("read pcap header of {}", path.display()))?;
    let mut n = 0u64;
    while let Some(p) = r.next_raw_packet() {
        p.with_context(|| format!("pcap record {} of {}", n + 1, path.display()))?;
        n += 1;
        if n as usize > MAX_PACKETS {
            anyhow::bail!("{} has more than {MAX_PACKETS} packets", path.display());
        }
    }
    Ok(n)
}

/// One TCP segment for a time-sequence plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Seconds since the first packet of the capture.
    pub t_s: f64,
    /// Connection number, in the order of their first SYN (0-based).
    pub conn: usize,
    /// true: server to client (data of responses); false: client to server.
    pub from_server: bool,
    /// Sequence number relative to the connection's ISN in that direction,
    /// plus the bytes the server sent on earlier connections (so that many
    /// HTTP/1.0 connections draw one rising staircase, like one stream).
    pub seq: u64,
    pub len: u32,
    /// Acknowledgment number in the same coordinates as the other
    /// direction's `seq` (for the ACK line), if the ACK flag is set.
    pub ack: Option<u64>,
    pub syn: bool,
    pub fin: bool,
}

/// The TCP segments of a capture (raw IPv4, LINKTYPE_RAW). `server` tells
/// the directions apart.
pub fn time_sequence(path: &Path, server: Ipv4Addr) -> Result<Vec<Segment>> {
    let f = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = PcapReader::new(BufReader::new(f))
        .with_context(|| format!("read pcap header of {}", path.display()))?;
    // Per connection (keyed by client port): index, ISNs, offset.
    struct Conn {
        index: usize,
        isn_server: Option<u32>,
        isn_client: Option<u32>,
        max_server_seq: u64,
    }
    let mut conns: HashMap<u16, Conn> = HashMap::new();
    let mut order: Vec<u16> = Vec::new();
    let mut out = Vec::new();
    let mut t0: Option<f64> = None;
    let mut n = 0usize;
    while let Some(p) = r.next_packet() {
        let p = p.with_context(|| format!("pcap record of {}", path.display()))?;
        n += 1;
        if n > MAX_PACKETS {
            anyhow::bail!("{} has more than {MAX_PACKETS} packets", path.display());
        }
        let t = p.timestamp.as_secs_f64();
        let t0 = *t0.get_or_insert(t);
        let Ok(sp) = SlicedPacket::from_ip(&p.data) else {
            continue;
        };
        let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Tcp(tcp))) = (sp.net, sp.transport)
        else {
            continue;
        };
        let from_server = ip.header().source_addr() == server;
        let client_port = if from_server {
            tcp.destination_port()
        } else {
            tcp.source_port()
        };
        let next_index = order.len();
        let c = conns.entry(client_port).or_insert_with(|| {
            order.push(client_port);
            Conn {
                index: next_index,
                isn_server: None,
                isn_client: None,
                max_server_seq: 0,
            }
        });
        let seq_raw = tcp.sequence_number();
        let isn = if from_server {
            &mut c.isn_server
        } else {
            &mut c.isn_client
        };
        if tcp.syn() || isn.is_none() {
            isn.get_or_insert(seq_raw);
        }
        let own_isn = isn.unwrap_or(seq_raw);
        let rel = seq_raw.wrapping_sub(own_isn) as u64;
        let len = tcp.payload().len() as u32;
        let ack = if tcp.ack() {
            let other = if from_server {
                c.isn_client
            } else {
                c.isn_server
            };
            other.map(|i| tcp.acknowledgment_number().wrapping_sub(i) as u64)
        } else {
            None
        };
        if from_server {
            c.max_server_seq = c.max_server_seq.max(rel + len as u64);
        }
        out.push(Segment {
            t_s: t - t0,
            conn: c.index,
            from_server,
            seq: rel,
            len,
            ack,
            syn: tcp.syn(),
            fin: tcp.fin(),
        });
    }
    // Second pass: stack the server's data of each connection on top of
    // everything the server sent on connections opened before it.
    let mut sizes = vec![0u64; order.len()];
    for p in &order {
        let c = &conns[p];
        sizes[c.index] = c.max_server_seq;
    }
    let mut offsets = vec![0u64; order.len()];
    for i in 1..order.len() {
        offsets[i] = offsets[i - 1] + sizes[i - 1];
    }
    for s in &mut out {
        let off = offsets[s.conn];
        if s.from_server {
            s.seq += off;
        } else if let Some(a) = s.ack.as_mut() {
            // The client's ACKs acknowledge server data: same coordinates.
            *a += off;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::DataLink;
    use std::time::Duration;

    const C: [u8; 4] = [198, 18, 0, 1];
    const S: [u8; 4] = [198, 18, 0, 2];

    fn pkt(
        from_server: bool,
        port: u16,
        seq: u32,
        ack: Option<u32>,
        syn: bool,
        payload: usize,
    ) -> Vec<u8> {
        let (src, dst, sp, dp) = if from_server {
            (S, C, 80, port)
        } else {
            (C, S, port, 80)
        };
        let mut b = PacketBuilder::ipv4(src, dst, 64).tcp(sp, dp, seq, 65535);
        if syn {
            b = b.syn();
        }
        if let Some(a) = ack {
            b = b.ack(a);
        }
        let mut v = Vec::new();
        b.write(&mut v, &vec![b'x'; payload]).unwrap();
        v
    }

    #[test]
    fn counts_and_stacks_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.pcap");
        let packets = [
            pkt(false, 1000, 100, None, true, 0),
            pkt(true, 1000, 5000, Some(101), true, 0),
            pkt(false, 1001, 300, None, true, 0),
            pkt(true, 1000, 5001, Some(101), false, 1000),
            pkt(true, 1001, 9000, Some(301), true, 0),
            pkt(false, 1000, 101, Some(6001), false, 0),
            pkt(true, 1001, 9001, Some(301), false, 500),
        ];
        {
            let header = PcapHeader {
                datalink: DataLink::RAW,
                ..Default::default()
            };
            let mut w =
                PcapWriter::with_header(std::fs::File::create(&path).unwrap(), header).unwrap();
            for (i, p) in packets.iter().enumerate() {
                w.write_packet(&PcapPacket::new(
                    Duration::from_millis(10 * i as u64),
                    p.len() as u32,
                    p,
                ))
                .unwrap();
            }
        }
        assert_eq!(count_packets(&path).unwrap(), 7);
        let segs = time_sequence(&path, S.into()).unwrap();
        assert_eq!(segs.len(), 7);
        let data: Vec<&Segment> = segs.iter().filter(|s| s.from_server && s.len > 0).collect();
        // Connection 0's data starts at relative sequence 1; connection 1's
        // is stacked on the 1001 bytes (SYN + 1000) of connection 0.
        assert_eq!((data[0].conn, data[0].seq, data[0].len), (0, 1, 1000));
        assert_eq!((data[1].conn, data[1].seq, data[1].len), (1, 1002, 500));
        // The client's ACK of connection 0's data is in the same coordinates.
        let ack = segs
            .iter()
            .find(|s| !s.from_server && s.ack.is_some())
            .unwrap();
        assert_eq!(ack.ack, Some(1001));
        assert!((segs[6].t_s - 0.06).abs() < 1e-9);
    }
}
