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
    let mut r = PcapReader::new(BufReader::new(f)).with_context(|| format!("read pcap header of {}", path.display()))?;
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
    let mut r = PcapReader::new(BufReader::new(f)).with_context(|| format!("read pcap header of {}", path.display()))?;
    // Per connection (keyed by client port): index, ISNs, offset.
    struct Conn {
        index: usize,
        isn_server: Option<u32>,
        isn_client: Option<u32>,
        offset: u64,
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
        let (Some(NetSlice::Ipv4(ip)), Some(TransportSlice::Tcp(tcp))) = (sp.net, sp.transport) else {
            continue;
        };
        let from_server = ip.header().source_addr() == server;
        let client_port = if from_server { tcp.destination_port() } else { tcp.source_port() };
        if !conns.contains_key(&client_port) {
            // Offset: everything the server sent on earlier connections.
            let offset = order
                .iter()
                .filter_map(|p| conns.get(p))
                .map(|c| c.max_server_seq)
                .sum();
            conns.insert(
                client_port,
                Conn {
                    index: order.len(),
                    isn_server: None,
                    isn_client: None,
                    offset,
                    max_server_seq: 0,
                },
            );
            order.push(client_port);
        }
        let c = conns.get_mut(&client_port).expect("inserted above");
        let seq_raw = tcp.sequence_number();
        let isn = if from_server { &mut c.isn_server } else { &mut c.isn_client };
        if tcp.syn() || isn.is_none() {
            isn.get_or_insert(seq_raw);
        }
        let own_isn = isn.unwrap_or(seq_raw);
        let rel = seq_raw.wrapping_sub(own_isn) as u64;
        let len = tcp.payload().len() as u32;
        let ack = if tcp.ack() {
            let other = if from_server { c.isn_client } else { c.isn_server };
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
            // Client-side sequence numbers keep their own coordinates
            // (requests are small); server data is stacked across connections.
            seq: if from_server { c.offset + rel } else { rel },
            len,
            ack: ack.map(|a| if from_server { a } else { c.offset + a }),
            syn: tcp.syn(),
            fin: tcp.fin(),
        });
    }
    Ok(out)
}
