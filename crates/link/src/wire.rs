//! Typed read-only views over raw IPv4 and TCP headers, in the manner of
//! smoltcp's `wire` module: field offsets are data, the length is checked
//! once in `new_checked`, and the accessors cannot panic afterwards.
//!
//! Only what the link needs to classify and count packets is exposed.

use std::net::Ipv4Addr;

/// Byte offsets of the IPv4 header fields (RFC 791 §3.1).
mod ipv4_field {
    pub const VER_IHL: usize = 0;
    pub const TOTAL_LEN: usize = 2;
    pub const FLAGS_FRAG: usize = 6;
    pub const PROTOCOL: usize = 9;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
    pub const MIN_HEADER_LEN: usize = 20;
}

/// Byte offsets of the TCP header fields (RFC 9293 §3.1).
mod tcp_field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const MIN_HEADER_LEN: usize = 20;
}

/// IP protocol number of TCP.
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
/// UDP header length (RFC 768).
pub const UDP_HEADER_LEN: usize = 8;

/// A checked view of an IPv4 packet.
#[derive(Clone, Copy, Debug)]
pub struct Ipv4<'a> {
    buf: &'a [u8],
    header_len: usize,
    total_len: usize,
}

/// Why a buffer is not a packet we can classify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("shorter than its header")]
    Truncated,
    #[error("not IPv4 (version {0})")]
    NotIpv4(u8),
    #[error("header length field is invalid")]
    BadHeaderLen,
}

impl<'a> Ipv4<'a> {
    /// Checks version, header length and total length against the buffer.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        if buf.len() < ipv4_field::MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let version = buf[ipv4_field::VER_IHL] >> 4;
        if version != 4 {
            return Err(WireError::NotIpv4(version));
        }
        let header_len = usize::from(buf[ipv4_field::VER_IHL] & 0x0f) * 4;
        let total_len = usize::from(u16::from_be_bytes([
            buf[ipv4_field::TOTAL_LEN],
            buf[ipv4_field::TOTAL_LEN + 1],
        ]));
        if header_len < ipv4_field::MIN_HEADER_LEN || header_len > total_len {
            return Err(WireError::BadHeaderLen);
        }
        if total_len > buf.len() {
            return Err(WireError::Truncated);
        }
        Ok(Self {
            buf,
            header_len,
            total_len,
        })
    }

    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// The IP total length: what "IP bytes" counts everywhere in pagewire.
    pub fn total_len(&self) -> usize {
        self.total_len
    }

    pub fn protocol(&self) -> u8 {
        self.buf[ipv4_field::PROTOCOL]
    }

    pub fn src(&self) -> Ipv4Addr {
        let b = &self.buf[ipv4_field::SRC..ipv4_field::SRC + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    pub fn dst(&self) -> Ipv4Addr {
        let b = &self.buf[ipv4_field::DST..ipv4_field::DST + 4];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// True for a non-first fragment (offset > 0): it carries no TCP header.
    pub fn is_later_fragment(&self) -> bool {
        let v = u16::from_be_bytes([
            self.buf[ipv4_field::FLAGS_FRAG],
            self.buf[ipv4_field::FLAGS_FRAG + 1],
        ]);
        v & 0x1fff != 0
    }

    /// The bytes after the IP header, up to the total length.
    pub fn payload(&self) -> &'a [u8] {
        &self.buf[self.header_len..self.total_len]
    }
}

/// TCP header flags (RFC 9293 §3.1).
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const ACK: u8 = 0x10;
}

/// A checked view of a TCP segment (header + payload).
#[derive(Clone, Copy, Debug)]
pub struct Tcp<'a> {
    buf: &'a [u8],
    header_len: usize,
}

impl<'a> Tcp<'a> {
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        if buf.len() < tcp_field::MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let header_len = usize::from(buf[tcp_field::DATA_OFF] >> 4) * 4;
        if header_len < tcp_field::MIN_HEADER_LEN {
            return Err(WireError::BadHeaderLen);
        }
        if header_len > buf.len() {
            return Err(WireError::Truncated);
        }
        Ok(Self { buf, header_len })
    }

    /// Header length including options.
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([
            self.buf[tcp_field::SRC_PORT],
            self.buf[tcp_field::SRC_PORT + 1],
        ])
    }

    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([
            self.buf[tcp_field::DST_PORT],
            self.buf[tcp_field::DST_PORT + 1],
        ])
    }

    pub fn seq(&self) -> u32 {
        let b = &self.buf[tcp_field::SEQ..tcp_field::SEQ + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn ack(&self) -> u32 {
        let b = &self.buf[tcp_field::ACK..tcp_field::ACK + 4];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    pub fn flags(&self) -> u8 {
        self.buf[tcp_field::FLAGS]
    }

    pub fn payload_len(&self) -> usize {
        self.buf.len() - self.header_len
    }
}

/// The TCP ports (source, destination) of an IPv4 packet's first fragment;
/// `None` for anything else or a packet too short to hold them.
pub fn tcp_ports(buf: &[u8]) -> Option<(u16, u16)> {
    let ip = Ipv4::new_checked(buf).ok()?;
    if ip.protocol() != IPPROTO_TCP || ip.is_later_fragment() {
        return None;
    }
    let p = ip.payload();
    (p.len() >= 4).then(|| {
        (
            u16::from_be_bytes([p[0], p[1]]),
            u16::from_be_bytes([p[2], p[3]]),
        )
    })
}

/// A packet's flow identity for FQ-CoDel: its 5-tuple (addresses, protocol
/// and, for TCP/UDP first fragments, ports) packed into 64 bits (the queue
/// discipline hashes it with its own seeded perturbation). Unparsable
/// packets share flow 0; later fragments share their addresses' flow.
pub fn flow_hash(buf: &[u8]) -> u64 {
    let Ok(ip) = Ipv4::new_checked(buf) else {
        return 0;
    };
    let proto = ip.protocol();
    let ports = match proto {
        IPPROTO_TCP | IPPROTO_UDP if !ip.is_later_fragment() => {
            let p = ip.payload();
            if p.len() >= 4 {
                u32::from_be_bytes([p[0], p[1], p[2], p[3]])
            } else {
                0
            }
        }
        _ => 0,
    };
    let src = u64::from(u32::from(ip.src()));
    let dst = u64::from(u32::from(ip.dst()));
    // FNV-1a over the fields: cheap, deterministic, good enough before the
    // discipline's own mixing.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in [src, dst, u64::from(proto), u64::from(ports)] {
        for b in v.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
