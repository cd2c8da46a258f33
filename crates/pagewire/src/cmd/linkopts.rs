//! Link options shared by `pagewire link` and `pagewire bench`: one set of
//! flags, parsed once into plain values, then laid over a network profile.
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use pagewire_emu::LinkConfig;
use pagewire_link::config::{
    parse_aqm, parse_loss, parse_queue, parse_rate, parse_reorder, trace_rate,
};

#[derive(clap::Args, Clone, Debug)]
pub struct LinkOptions {
    /// Round-trip time (half each way), e.g. 90ms; overrides the profile's.
    #[arg(long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    rtt: Option<Duration>,
    /// Rate both ways, e.g. 1.5mbit, 28.8kbit, unlimited (counts IP bytes).
    #[arg(long)]
    rate: Option<String>,
    /// Client-to-server rate.
    #[arg(long)]
    up_rate: Option<String>,
    /// Server-to-client rate.
    #[arg(long)]
    down_rate: Option<String>,
    /// Mahimahi trace for the client-to-server rate.
    #[arg(long)]
    trace_up: Option<PathBuf>,
    /// Mahimahi trace for the server-to-client rate.
    #[arg(long)]
    trace_down: Option<PathBuf>,
    /// MTU of both TUN devices.
    #[arg(long)]
    mtu: Option<u32>,
    /// Advertised TCP MSS (route advmss), e.g. 536.
    #[arg(long)]
    mss: Option<u32>,
    /// Hard queue limit per direction: 100p (packets) or 64kb (bytes).
    #[arg(long)]
    queue: Option<String>,
    /// Queue discipline per direction under that limit: droptail (default),
    /// codel, pie or fq-codel, with optional parameters, e.g.
    /// codel:target=5ms,interval=100ms; pie:target=15ms,tupdate=15ms,
    /// alpha=0.125,beta=1.25,burst=150ms; fq-codel:quantum=1514,flows=1024
    /// (docs/link.md).
    #[arg(
        long,
        visible_alias = "queue-discipline",
        value_name = "DISCIPLINE[:K=V,...]"
    )]
    aqm: Option<String>,
    /// Loss per packet, each direction: independent (0.02 or 2%) or bursty
    /// Gilbert-Elliott, ge:p=1%,r=25%[,h=0][,k=1] or ge:1%,25%[,H[,K]]
    /// (p good->bad, r bad->good, h and k delivery probabilities in the bad
    /// and good states).
    #[arg(long, value_name = "P|ge:p=..,r=..")]
    loss: Option<String>,
    /// Reordering per direction: PROBABILITY,DELAY, e.g. 1%,5ms (that share
    /// of packets is held back DELAY so later ones overtake it).
    #[arg(long, value_name = "P,DELAY")]
    reorder: Option<String>,
    /// Extra delay per packet, uniform in [0, JITTER], e.g. 5ms; never
    /// reorders.
    #[arg(long, value_name = "DURATION", value_parser = super::positive_duration, allow_hyphen_values = true)]
    jitter: Option<Duration>,
    /// Link-layer framing bytes per packet added to the serialization time.
    #[arg(long)]
    framing_bytes: Option<u32>,
    /// Modem data compression on the line, both directions: `v42bis`
    /// (LZW as V.42bis: 2048 codewords, strings up to 32 octets) or `none`.
    /// Changes the serialization time (compressed octets) and the counters'
    /// line_bytes; the IP packets and bytes stay the same.
    #[arg(long, value_name = "none|v42bis")]
    link_compress: Option<String>,
    /// TCP flavour: `1997` approximates the papers' TCP (initcwnd 2, Reno,
    /// no SACK/timestamps/window scaling); `linux` leaves the kernel's.
    /// Default: linux; `1997` for `bench --suite conn-length` (the paper's
    /// TCP).
    #[arg(long, value_name = "1997|linux")]
    tcp: Option<String>,
}

/// The flags parsed and checked, ready to lay over any profile.
#[derive(Clone, Debug)]
pub struct LinkOverrides {
    rtt: Option<Duration>,
    up_rate: Option<pagewire_link::config::Rate>,
    down_rate: Option<pagewire_link::config::Rate>,
    mtu: Option<u32>,
    mss: Option<u32>,
    queue: Option<pagewire_link::config::QueueLimit>,
    aqm: Option<pagewire_link::Aqm>,
    loss: Option<pagewire_link::LossModel>,
    reorder: Option<Option<pagewire_link::Reorder>>,
    jitter: Option<Duration>,
    framing_bytes: Option<u32>,
    compression: Option<pagewire_link::config::LinkCompression>,
    tcp1997: bool,
}

impl LinkOptions {
    /// Whether any link flag was given.
    pub fn any(&self) -> bool {
        self.rtt.is_some()
            || self.rate.is_some()
            || self.up_rate.is_some()
            || self.down_rate.is_some()
            || self.trace_up.is_some()
            || self.trace_down.is_some()
            || self.mtu.is_some()
            || self.mss.is_some()
            || self.queue.is_some()
            || self.aqm.is_some()
            || self.loss.is_some()
            || self.reorder.is_some()
            || self.jitter.is_some()
            || self.framing_bytes.is_some()
            || self.link_compress.is_some()
            || self.tcp.is_some()
    }

    /// Parses every flag once (trace files are read here), so a bad value
    /// fails before anything starts; each error names its flag.
    pub fn parse(&self) -> Result<LinkOverrides> {
        let both = self.rate.as_deref().map(parse_rate).transpose()?;
        let mut up_rate = both.clone();
        let mut down_rate = both;
        if let Some(v) = &self.up_rate {
            up_rate = Some(parse_rate(v)?);
        }
        if let Some(v) = &self.down_rate {
            down_rate = Some(parse_rate(v)?);
        }
        if let Some(p) = &self.trace_up {
            up_rate = Some(trace_rate(p)?);
        }
        if let Some(p) = &self.trace_down {
            down_rate = Some(trace_rate(p)?);
        }
        let tcp1997 = match self.tcp.as_deref().unwrap_or("linux") {
            "1997" => true,
            "linux" | "default" => false,
            other => bail!("--tcp {other:?}: expected 1997 or linux"),
        };
        Ok(LinkOverrides {
            rtt: self.rtt,
            up_rate,
            down_rate,
            mtu: self.mtu,
            mss: self.mss,
            queue: self.queue.as_deref().map(parse_queue).transpose()?,
            aqm: self.aqm.as_deref().map(parse_aqm).transpose()?,
            loss: self.loss.as_deref().map(parse_loss).transpose()?,
            reorder: self.reorder.as_deref().map(parse_reorder).transpose()?,
            jitter: self.jitter,
            framing_bytes: self.framing_bytes,
            compression: self.link_compress.as_deref().map(str::parse).transpose()?,
            tcp1997,
        })
    }
}

impl LinkOverrides {
    /// The named profile with these overrides and `seed` (loss, jitter),
    /// validated. A profile whose delay or rate was changed is labelled
    /// `NAME+custom` so reports don't present it as the paper's.
    pub fn config(&self, profile: &str, seed: u64) -> Result<LinkConfig> {
        let mut c = LinkConfig::profile(profile)?;
        if self.rtt.is_some() || self.up_rate.is_some() || self.down_rate.is_some() {
            c.profile = format!("{profile}+custom");
        }
        if let Some(v) = self.rtt {
            c.rtt = v;
        }
        if let Some(v) = &self.up_rate {
            c.up_rate = v.clone();
        }
        if let Some(v) = &self.down_rate {
            c.down_rate = v.clone();
        }
        if let Some(v) = self.mtu {
            c.mtu = v;
        }
        c.mss = self.mss.or(c.mss);
        if let Some(v) = self.queue {
            c.queue = v;
        }
        if let Some(v) = self.aqm {
            c.aqm = v;
            if v != pagewire_link::Aqm::DropTail {
                c.profile = format!("{}+{}", c.profile, v.name());
            }
        }
        if let Some(v) = self.loss {
            c.loss = v;
        }
        if let Some(v) = self.reorder {
            c.reorder = v;
        }
        if let Some(v) = self.jitter {
            c.jitter = v;
        }
        if let Some(v) = self.framing_bytes {
            c.framing_bytes = v;
        }
        if let Some(v) = self.compression {
            c.compression = v;
            if v != pagewire_link::config::LinkCompression::None {
                c.profile = format!("{}+{}", c.profile, v.name());
            }
        }
        c.tcp1997 = self.tcp1997;
        c.seed = seed;
        c.validate()?;
        Ok(c)
    }
}
