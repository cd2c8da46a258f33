//! The link model: pure, time passed in.
//!
//! `pagewire-link` is what the emulator (`pagewire-emu`) runs between the
//! client and server namespaces, with no clock and no system calls so that
//! every behaviour can be tested in virtual time:
//!
//! - [`wire`]: typed views of IPv4 / TCP headers;
//! - [`classify`]: packet kinds (SYN, SYN-ACK, FIN, RST, pure ACK, data,
//!   retransmission) with per-flow sequence tracking;
//! - [`pipe`]: one direction of the link: loss, queue, serialization at a
//!   constant or trace-driven rate, delay, jitter and reordering;
//! - [`qdisc`]: the queue disciplines behind one contract, one file each:
//!   drop-tail, CoDel, PIE, FQ-CoDel;
//! - [`loss`]: Bernoulli and Gilbert-Elliott loss; [`reorder`]: reordering;
//! - [`counters`]: per-run accounting (paper 001's Pa, Bytes, %ov);
//! - [`lateness`]: link fidelity, how late packets left against their
//!   scheduled departure (the per-run `link_lateness` record);
//! - [`pcap`]: capture with emulated timestamps;
//! - [`config`]: profiles (paper 001 Table 1; docs/architecture.md) and flag
//!   parsers.

// The README's examples are compiled and run with the doctests.
#![cfg_attr(doctest, doc = include_str!("../README.md"))]
#![forbid(unsafe_code)]

pub mod classify;
pub mod config;
pub mod counters;
pub mod lateness;
pub mod loss;
pub mod pcap;
pub mod pipe;
pub mod qdisc;
pub mod reorder;
pub mod v42bis;
pub mod wire;

pub use classify::{Classified, Classifier, Direction, Kind};
pub use config::{ConfigError, LinkCompression, LinkConfig, PipeConfig, QueueLimit, Rate, Trace};
pub use counters::{DirectionCounters, KindCounts, LinkCounters, Meter, PacketsBytes};
pub use lateness::{lateness_threshold, LatenessRecorder, LinkLateness};
pub use loss::{GilbertElliott, LossModel};
pub use pcap::PcapSink;
pub use pipe::{Pipe, PipeStats, Verdict};
pub use qdisc::Aqm;
pub use reorder::Reorder;
