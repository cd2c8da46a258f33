//! pcap capture of everything that left the link.
//!
//! Format: classic pcap (not pcapng), LINKTYPE_RAW (101: each record is a raw
//! IPv4 packet), microsecond timestamps, because every tool since tcpdump
//! 3.x reads it. Timestamps are the EMULATED times the packets left the link
//! (link epoch in wall-clock time + link time), not when the forwarder
//! happened to write them, so inter-packet gaps show the model exactly.
//!
//! Classic pcap has no place for a comment, so what made the file (command,
//! configuration, seed, version) is written to a sidecar `<file>.json` next
//! to it (pcapng could hold a comment, but fewer tools read pcapng comments
//! than JSON, and the sidecar also carries the counters for the run).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// Snap length: the largest IPv4 packet, so nothing is truncated.
pub const SNAPLEN: u32 = 65_535;

/// The sidecar path for a pcap path: `run.pcap` -> `run.pcap.json`.
pub fn sidecar_path(pcap: &Path) -> PathBuf {
    let mut s = pcap.as_os_str().to_owned();
    s.push(".json");
    PathBuf::from(s)
}

/// Writes packets to a pcap file.
pub struct PcapSink {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
    /// Wall-clock time (since the Unix epoch) of link time zero.
    epoch_unix: Duration,
    packets: u64,
}

impl PcapSink {
    /// Creates `path` (truncating it). `epoch_unix` maps link time to wall
    /// time for the record timestamps.
    pub fn create(path: &Path, epoch_unix: Duration) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::MicroSecond,
            endianness: Endianness::native(),
        };
        // 256 KiB: a few hundred full packets per write(2) at gigabit rates.
        let writer = PcapWriter::with_header(BufWriter::with_capacity(256 * 1024, file), header)
            .map_err(std::io::Error::other)?;
        Ok(Self {
            path: path.to_path_buf(),
            writer,
            epoch_unix,
            packets: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Records a packet that left the link at link time `t`.
    pub fn write(&mut self, t: Duration, packet: &[u8]) -> std::io::Result<()> {
        let data = &packet[..packet.len().min(SNAPLEN as usize)];
        let rec = PcapPacket::new(self.epoch_unix + t, packet.len() as u32, data);
        self.writer
            .write_packet(&rec)
            .map_err(std::io::Error::other)?;
        self.packets += 1;
        Ok(())
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> std::io::Result<PathBuf> {
        let mut w = self.writer.into_writer();
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(self.path)
    }
}

/// Writes the sidecar describing a pcap (what made it).
pub fn write_sidecar(pcap: &Path, meta: &serde_json::Value) -> std::io::Result<PathBuf> {
    let p = sidecar_path(pcap);
    let text = serde_json::to_string_pretty(meta).map_err(std::io::Error::other)?;
    std::fs::write(&p, text + "\n")?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn roundtrip_raw_ipv4_with_emulated_times() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pcap");
        let mut s = PcapSink::create(&path, Duration::from_secs(1_000_000)).unwrap();
        let pkt = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        s.write(Duration::from_micros(1500), &pkt).unwrap();
        s.write(Duration::from_micros(2500), &pkt).unwrap();
        assert_eq!(s.packets(), 2);
        s.finish().unwrap();
        let mut r = PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(r.header().datalink, DataLink::RAW);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::from_micros(1_000_000_001_500));
        assert_eq!(&p.data[..], &pkt[..]);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::from_micros(1_000_000_002_500));
        assert!(r.next_packet().is_none());
        let side = write_sidecar(&path, &serde_json::json!({"made_by": "test"})).unwrap();
        assert!(side.ends_with("x.pcap.json"));
    }
}
