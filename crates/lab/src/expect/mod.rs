//! The expected-time model: what a page load over a link should cost for
//! each strategy, from first principles, beside what the bench measured.
//!
//! Given the page (object sizes, where each reference sits in the HTML),
//! the link (RTT, rates, MTU/MSS, TCP era, loss) and the server's time per
//! response, [`predict`] walks the load the way the robot (or a browser)
//! does it: connection set-up, requests as the robot sends them (sizes as
//! recorded), responses with the pagewire server's heads, TCP slow start
//! with delayed ACKs ([`tcp`]), discovery of each image when the bytes of
//! its reference arrive, the pipelining output buffer's flush rules, and
//! connection close. It predicts packets, IP bytes and seconds, and gives
//! a physical lower bound (the bytes at line rate plus the round trips no
//! strategy can avoid) and a "where the time goes" breakdown.
//!
//! Nothing here is fitted to a measurement: every constant is a protocol's
//! or the software's own (they are named where they are used). The server's
//! time per response is an input, 0 unless given. [`eval`] compares the
//! predictions with a results directory's measured cells.

pub mod eval;
pub mod files;
pub mod suites;
pub mod tcp;

use pagewire_client::Revalidation;
use serde::Serialize;

use crate::model::{Strategy, Test};
use tcp::{arrival_of, Arrivals, Conn, Line, TcpEra, Transport, Wire};

/// One object of a page.
#[derive(Clone, Debug)]
pub struct Object {
    pub path: String,
    /// Body bytes (identity).
    pub body: u64,
    /// Bytes of the 200 response's head (status line to blank line), without
    /// a `Connection` field.
    pub ok_head: u64,
    /// Bytes of the 304 response's head.
    pub not_modified_head: u64,
    /// Offset in the page's HTML just past this object's reference (0 for
    /// the page itself).
    pub ref_end: u64,
}

/// A page: its HTML and the objects it embeds, in document order.
#[derive(Clone, Debug)]
pub struct Page {
    pub html: Object,
    /// The HTML's size under `Content-Encoding: deflate` (zlib, default
    /// level, as the server stores it).
    pub html_deflated: u64,
    pub images: Vec<Object>,
}

/// The pagewire server's `Server` field value.
const SERVER: &str = concat!("pagewire/", env!("CARGO_PKG_VERSION"));
/// `Date: Thu, 26 Nov 2026 01:58:59 GMT\r\n`: 37 bytes, every response.
const DATE_FIELD: u64 = 37;
/// `Connection: close\r\n` on HTTP/1.0 responses.
const CONNECTION_CLOSE: u64 = 19;
/// `Content-Encoding: deflate\r\n`.
const CONTENT_ENCODING_DEFLATE: u64 = 27;

impl Page {
    /// The Microscape page of paper 001, generated from `seed` exactly as
    /// the bench serves it, with the pagewire server's response heads.
    pub fn microscape(seed: u64) -> Page {
        use pagewire_site::microscape;
        let m = microscape::generate(microscape::Options {
            seed,
            lowercase: false,
        });
        let images: Vec<(String, Vec<u8>, String)> = m
            .images
            .iter()
            .map(|im| {
                // The page names them relative, `images/x.gif`.
                let rel = im.path.trim_start_matches('/').to_string();
                (im.path.clone(), im.bytes.to_vec(), rel)
            })
            .collect();
        Page::from_site(
            m.site_files(),
            microscape::PAGE_PATH,
            &m.html,
            &images,
            microscape::zlib_default_size(&m.html) as u64,
        )
    }

    /// A page of paper 003's load-time suite (Padmanabhan & Mogul,
    /// "Improving HTTP Latency", section 6, as `bench --suite getall`
    /// writes it): `/s{size}/p{n}.html` with `n` inline images
    /// `/s{size}/i{k}.gif` of `size` bytes each, served by `pagewire serve`.
    pub fn getall(size: usize, n: usize) -> Page {
        use pagewire_site::store::SiteFile;
        let modified = std::time::UNIX_EPOCH + std::time::Duration::from_secs(867_110_400);
        // The page exactly as `loadtime::write_site` writes it.
        let mut html = format!(
            "<!DOCTYPE html>\n<html><head><title>{n} images of {size} bytes</title></head><body>\n<h1>{n} inline images</h1>\n"
        );
        for k in 0..n {
            html.push_str(&format!("<img src=\"i{k}.gif\" alt=\"{k}\">\n"));
        }
        html.push_str("</body></html>\n");
        let html = html.into_bytes();
        let page_path = format!("/s{size}/p{n}.html");
        let images: Vec<(String, Vec<u8>, String)> = (0..n)
            .map(|k| {
                // A GIF89a signature, then incompressible bytes (the
                // content does not matter to the model, only the size).
                let mut b: Vec<u8> = b"GIF89a".iter().copied().take(size).collect();
                b.resize(size, 0x5a);
                (format!("/s{size}/i{k}.gif"), b, format!("\"i{k}.gif\""))
            })
            .collect();
        let mut files = vec![SiteFile {
            path: page_path.clone(),
            body: html.clone().into(),
            modified,
        }];
        files.extend(images.iter().map(|(p, b, _)| SiteFile {
            path: p.clone(),
            body: b.clone().into(),
            modified,
        }));
        let deflated = pagewire_site::microscape::zlib_default_size(&html) as u64;
        Page::from_site(files, &page_path, &html, &images, deflated)
    }

    /// A page from its site files, with the pagewire server's response
    /// heads: the HTML at `html_path`, and each image `(path, bytes,
    /// reference)`, where the reference is the text in the HTML whose end
    /// makes the image known.
    fn from_site(
        files: Vec<pagewire_site::store::SiteFile>,
        html_path: &str,
        html: &[u8],
        images: &[(String, Vec<u8>, String)],
        html_deflated: u64,
    ) -> Page {
        use pagewire_site::store::Site;
        let site = Site::from_files(files);
        let head = |path: &str, body: u64, vary: &str| -> (u64, u64) {
            let r = site.get(path).expect("a generated file is in the site");
            let field = |name: &str, value: &str| (name.len() + 2 + value.len() + 2) as u64;
            let server = field("Server", SERVER);
            let etag = field("ETag", &r.etag);
            let vary = if vary.is_empty() {
                0
            } else {
                field("Vary", vary)
            };
            let ok = "HTTP/1.1 200 OK\r\n".len() as u64
                + server
                + field("Content-Type", &r.media_type)
                + etag
                + field("Last-Modified", &r.last_modified_http)
                + field("Accept-Ranges", "bytes")
                + vary
                + field("Content-Length", &body.to_string())
                + DATE_FIELD
                + 2;
            let nm = "HTTP/1.1 304 Not Modified\r\n".len() as u64
                + server
                + etag
                + vary
                + DATE_FIELD
                + 2;
            (ok, nm)
        };
        let html_len = html.len() as u64;
        let (ok, nm) = head(html_path, html_len, "Accept-Encoding, Accept");
        let page = Object {
            path: html_path.to_string(),
            body: html_len,
            ok_head: ok,
            not_modified_head: nm,
            ref_end: 0,
        };
        // The robot learns the images in document order.
        let mut objects: Vec<Object> = images
            .iter()
            .map(|(path, bytes, reference)| {
                let (ok, nm) = head(path, bytes.len() as u64, "");
                let at = memchr::memmem::find(html, reference.as_bytes())
                    .map_or(html.len(), |i| i + reference.len());
                Object {
                    path: path.clone(),
                    body: bytes.len() as u64,
                    ok_head: ok,
                    not_modified_head: nm,
                    ref_end: at as u64,
                }
            })
            .collect();
        objects.sort_by_key(|o| o.ref_end);
        Page {
            html: page,
            html_deflated,
            images: objects,
        }
    }

    pub fn body_bytes(&self) -> u64 {
        self.html.body + self.images.iter().map(|o| o.body).sum::<u64>()
    }
}

/// The link, as results.json's `link_configs` records it.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub rtt_s: f64,
    /// Server to client, bits/s.
    pub down_bps: f64,
    /// Client to server, bits/s.
    pub up_bps: f64,
    pub mtu: u32,
    pub mss: Option<u32>,
    /// Random loss per packet (0-1).
    pub loss: f64,
    pub framing_bytes: u32,
    pub era: TcpEra,
}

impl LinkSpec {
    /// From a link configuration as the emulator records it (`rtt_ms`,
    /// `down_rate`, `up_rate`, `mtu`, `mss`, `loss`, `framing_bytes`,
    /// `tcp1997`).
    pub fn from_config(v: &serde_json::Value) -> anyhow::Result<LinkSpec> {
        let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
        let need = |k: &str| num(k).ok_or_else(|| anyhow::anyhow!("link config lacks {k}"));
        Ok(LinkSpec {
            rtt_s: need("rtt_ms")? / 1e3,
            down_bps: need("down_rate")?,
            up_bps: need("up_rate")?,
            mtu: num("mtu").unwrap_or(1500.0) as u32,
            mss: num("mss").map(|m| m as u32),
            loss: num("loss").unwrap_or(0.0),
            framing_bytes: num("framing_bytes").unwrap_or(0.0) as u32,
            era: if v.get("tcp1997").and_then(serde_json::Value::as_bool) == Some(true) {
                TcpEra::Tcp1997
            } else {
                TcpEra::Linux
            },
        })
    }
}

/// What the client does besides the strategy: its request sizes and the
/// pipelining buffer.
#[derive(Clone, Debug)]
pub struct Client {
    /// Mean request head bytes (as the run recorded what the client sent).
    pub request_bytes: f64,
    /// How revalidation asks (the robot's setting; browsers: conditional).
    pub revalidation: Revalidation,
    /// Pipelining output buffer, bytes, and its flush timer, s.
    pub out_buffer: u64,
    pub flush_after_s: f64,
    /// Flush explicitly after the page request.
    pub explicit_flush: bool,
    /// One connection at a time (Mosaic 2.4's HTTP/1.0, the getall
    /// suite's robot: `max_conns` 1); otherwise HTTP/1.0 opens up to 4.
    pub one_at_a_time: bool,
    /// Flush the pipelining buffer once the page is read (the getall
    /// suite's robot: `flush_at_page_end`) rather than on its timer.
    pub flush_at_page_end: bool,
    /// The robot's imitated host costs (`HostCost`, the getall suite's
    /// `--hosts 1994`): seconds after each handshake before the first
    /// request, and after each object before the robot reads or sends on.
    pub per_connection_s: f64,
    pub per_object_s: f64,
}

impl Default for Client {
    fn default() -> Self {
        Client {
            request_bytes: 192.0,
            revalidation: Revalidation::Conditional,
            out_buffer: 1024,
            flush_after_s: 0.050,
            explicit_flush: true,
            one_at_a_time: false,
            flush_at_page_end: false,
            per_connection_s: 0.0,
            per_object_s: 0.0,
        }
    }
}

/// Switches for the breakdown's counterfactual loads.
#[derive(Clone, Copy, Debug, Default)]
struct Knobs {
    infinite_rate: bool,
    zero_rtt: bool,
    unlimited_window: bool,
    no_server: bool,
}

/// Everything a prediction needs.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    pub page: &'a Page,
    pub link: LinkSpec,
    pub client: Client,
    /// The server's time per response, s.
    pub server_s: f64,
}

/// A load's cost: the bench's Pa, IP bytes, payload bytes and Sec.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Cost {
    pub packets: f64,
    pub bytes: f64,
    pub payload: f64,
    pub seconds: f64,
}

/// Where the time goes: how much shorter the predicted load would be
/// without each cost alone (so the parts overlap and need not add up).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Breakdown {
    /// With no propagation delay: the round trips waited.
    pub round_trips_s: f64,
    /// At infinite rate: serialisation on the line.
    pub serialisation_s: f64,
    /// With an unlimited congestion window: slow start.
    pub slow_start_s: f64,
    /// With no server time.
    pub server_s: f64,
    /// Expected time lost to random loss (retransmission timeouts).
    pub loss_s: f64,
}

impl Breakdown {
    /// Where the time goes: `less(knobs)` is the time saved by the walk
    /// with that one cost removed (no round trips, infinite rate, no slow
    /// start, no server time).
    fn from_knobs(less: impl Fn(Knobs) -> f64, loss_s: f64) -> Breakdown {
        Breakdown {
            round_trips_s: less(Knobs {
                zero_rtt: true,
                ..Knobs::default()
            }),
            serialisation_s: less(Knobs {
                infinite_rate: true,
                ..Knobs::default()
            }),
            slow_start_s: less(Knobs {
                unlimited_window: true,
                ..Knobs::default()
            }),
            server_s: less(Knobs {
                no_server: true,
                ..Knobs::default()
            }),
            loss_s,
        }
    }
}

/// Random loss: each lost packet costs at least one retransmission timeout
/// (too few packets follow it for three duplicate ACKs); expected count
/// p·packets.
fn loss_seconds(link: &LinkSpec, packets: f64) -> f64 {
    let rto = link.era.rto_min_s().max(link.rtt_s * 3.0);
    link.loss * packets * rto
}

/// One predicted cell.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Prediction {
    pub predicted: Cost,
    /// Physical lower bound on seconds: the response bytes at line rate
    /// plus the round trips no implementation of the strategy avoids.
    pub lower_bound_s: f64,
    pub breakdown: Breakdown,
    /// Round trips in the lower bound.
    pub lower_bound_round_trips: u32,
}

/// Can the model predict this strategy?
pub fn supported(strategy: Strategy) -> bool {
    // Every strategy the robot or the bench's browser runs has a model.
    let _ = strategy;
    true
}

/// Predicts one cell.
pub fn predict(inp: &Inputs<'_>, strategy: Strategy, test: Test) -> Prediction {
    let base = simulate(inp, strategy, test, Knobs::default());
    let t = base.seconds;
    let less = |k: Knobs| (t - simulate(inp, strategy, test, k).seconds).max(0.0);
    let loss_s = loss_seconds(&inp.link, base.packets);
    let breakdown = Breakdown::from_knobs(less, loss_s);
    let (lower_bound_s, rtts) = lower_bound(inp, strategy, test);
    Prediction {
        predicted: Cost {
            seconds: t + loss_s,
            ..base
        },
        lower_bound_s,
        breakdown,
        lower_bound_round_trips: rtts,
    }
}

/// Which protocol carries a strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Carrier {
    Tcp,
    /// TCP + TLS 1.3 (h2): one more round trip before the first request.
    Tls,
    /// QUIC (h3): the handshake takes the TCP handshake's one round trip.
    Quic,
}

fn carrier(s: Strategy) -> Carrier {
    match s {
        Strategy::H2 | Strategy::ChromiumH2 => Carrier::Tls,
        Strategy::H3 | Strategy::ChromiumH3 => Carrier::Quic,
        _ => Carrier::Tcp,
    }
}

/// Response bytes of every object of one load (heads and bodies), the
/// page's first, and whether the later ones must wait for the page.
fn response_sizes(inp: &Inputs<'_>, strategy: Strategy, test: Test) -> (u64, Vec<u64>) {
    let p = inp.page;
    let conn_field = if strategy == Strategy::Http10 {
        CONNECTION_CLOSE
    } else {
        0
    };
    let frame = framing(strategy);
    let deflate = matches!(
        strategy,
        Strategy::PipelineDeflate | Strategy::H2 | Strategy::H3
    );
    let page = match (test, inp.client.revalidation) {
        (Test::Revalidate, Revalidation::Conditional)
        | (Test::Revalidate, Revalidation::ConditionalGetHead) => {
            frame.head(p.html.not_modified_head + conn_field)
        }
        _ if deflate => {
            frame.head(p.html.ok_head + conn_field + CONTENT_ENCODING_DEFLATE)
                + frame.body(p.html_deflated)
        }
        _ => frame.head(p.html.ok_head + conn_field) + frame.body(p.html.body),
    };
    let images = p
        .images
        .iter()
        .map(|o| match (test, inp.client.revalidation) {
            (Test::First, _) => frame.head(o.ok_head + conn_field) + frame.body(o.body),
            // HEAD: the 200 head without a body.
            (Test::Revalidate, Revalidation::GetHead | Revalidation::ConditionalGetHead) => {
                frame.head(o.ok_head + conn_field)
            }
            (Test::Revalidate, Revalidation::Conditional) => {
                frame.head(o.not_modified_head + conn_field)
            }
        })
        .collect();
    (page, images)
}

/// How a protocol frames heads and bodies on the wire.
#[derive(Clone, Copy, Debug)]
struct Framing {
    /// Head bytes kept (HPACK/QPACK compress repeated fields): fraction.
    head_factor: f64,
    /// Per-message frame header bytes (HEADERS frame).
    per_head: u64,
    /// Per body frame (DATA, at most `frame_max` bytes) header bytes.
    per_data_frame: u64,
    frame_max: u64,
}

impl Framing {
    fn head(&self, h: u64) -> u64 {
        (h as f64 * self.head_factor).round() as u64 + self.per_head
    }
    fn body(&self, b: u64) -> u64 {
        if self.per_data_frame == 0 {
            return b;
        }
        b + b.div_ceil(self.frame_max).max(1) * self.per_data_frame
    }
}

fn framing(s: Strategy) -> Framing {
    match carrier(s) {
        Carrier::Tcp => Framing {
            head_factor: 1.0,
            per_head: 0,
            per_data_frame: 0,
            frame_max: 1,
        },
        // RFC 9113: 9-byte frame headers, 16 KB frames; HPACK with a
        // dynamic table sends a repeated head as index bytes plus its
        // changing values (about a third); TLS 1.3 adds 22 bytes per
        // record (5 header, 1 type, 16 tag), one record per frame here.
        Carrier::Tls => Framing {
            head_factor: 0.35,
            per_head: 9 + 22,
            per_data_frame: 9 + 22,
            frame_max: 16_384,
        },
        // RFC 9114: 2-3 byte frame headers; QPACK as HPACK; the QUIC
        // packet overhead is in the transport.
        Carrier::Quic => Framing {
            head_factor: 0.35,
            per_head: 3,
            per_data_frame: 3,
            frame_max: 16_384,
        },
    }
}

/// Request bytes on the wire for one request.
fn request_size(inp: &Inputs<'_>, strategy: Strategy) -> u64 {
    let q = inp.client.request_bytes.max(1.0);
    let f = framing(strategy);
    (q * f.head_factor).round() as u64 + f.per_head
}

/// How many requests can be in flight, and on how many connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One request per connection, `n` connections at once (HTTP/1.0).
    PerRequest(usize),
    /// Persistent connections, one request at a time on each.
    Serial(usize),
    /// One connection, requests buffered as the robot pipelines them.
    Pipelined,
    /// One connection, every request sent as soon as it is known (h2, h3).
    Multiplexed,
    /// One request brings every object (GETALL, objpack) on first
    /// retrieval.
    Bundle,
}

fn shape(s: Strategy, test: Test, c: &Client) -> Shape {
    match s {
        Strategy::Http10 if c.one_at_a_time => Shape::PerRequest(1),
        Strategy::Http10 => Shape::PerRequest(4),
        Strategy::Http11 => Shape::Serial(1),
        // Chromium: 6 connections per host over HTTP/1.1.
        Strategy::ChromiumH1 => Shape::Serial(6),
        Strategy::Pipeline | Strategy::PipelineDeflate => Shape::Pipelined,
        Strategy::Getall | Strategy::Objpack if test == Test::First => Shape::Bundle,
        Strategy::Getall | Strategy::Objpack => Shape::Pipelined,
        Strategy::H2 | Strategy::H3 | Strategy::ChromiumH2 | Strategy::ChromiumH3 => {
            Shape::Multiplexed
        }
    }
}

/// The simulated load.
struct Sim {
    knobs: Knobs,
    wire: Wire,
    server_s: f64,
    payload: u64,
    conns: Vec<Conn>,
    carrier: Carrier,
    /// The robot's imitated per-connection host cost, s (after the
    /// handshake, before the first request).
    per_connection_s: f64,
}

impl Sim {
    fn new(inp: &Inputs<'_>, strategy: Strategy, knobs: Knobs) -> Sim {
        let mut sim = Sim::on(&inp.link, inp.server_s, carrier(strategy), knobs);
        if !knobs.no_server {
            sim.per_connection_s = inp.client.per_connection_s;
        }
        sim
    }

    /// A load over `l` by `c`, the server taking `server_s` per response.
    fn on(l: &LinkSpec, server_s: f64, c: Carrier, knobs: Knobs) -> Sim {
        let delay = if knobs.zero_rtt { 0.0 } else { l.rtt_s / 2.0 };
        let rate = |r: f64| {
            if knobs.infinite_rate {
                f64::INFINITY
            } else {
                r
            }
        };
        let tx = match c {
            Carrier::Quic => Transport::quic(),
            _ => Transport::tcp(l.era, l.mtu, l.mss),
        };
        Sim {
            knobs,
            wire: Wire {
                down: Line::new(rate(l.down_bps), l.framing_bytes, delay),
                up: Line::new(rate(l.up_bps), l.framing_bytes, delay),
                tx,
            },
            server_s: if knobs.no_server { 0.0 } else { server_s },
            payload: 0,
            conns: Vec::new(),
            carrier: c,
            per_connection_s: 0.0,
        }
    }

    /// Opens a connection at `t`; returns its index and when the client
    /// may send its first request.
    fn open(&mut self, t: f64) -> (usize, f64) {
        let tx = self.wire.tx;
        let conn = if self.knobs.unlimited_window {
            Conn::unlimited(&tx)
        } else {
            Conn::new(&tx)
        };
        self.conns.push(conn);
        let i = self.conns.len() - 1;
        let ready = match self.carrier {
            Carrier::Tcp => {
                // SYN, SYN-ACK, and the ACK sent as the request follows.
                let a = self.wire.up.send(t, tx.syn_bytes);
                let b = self.wire.down.send(a, tx.syn_bytes);
                self.wire.up.send(b, tx.ack_bytes);
                b
            }
            Carrier::Tls => {
                let a = self.wire.up.send(t, tx.syn_bytes);
                let b = self.wire.down.send(a, tx.syn_bytes);
                self.wire.up.send(b, tx.ack_bytes);
                // TLS 1.3: ClientHello (~300 bytes from rustls), the
                // server's flight (ServerHello, EncryptedExtensions, a
                // self-signed certificate, CertificateVerify, Finished:
                // ~1,300 bytes), then the client's Finished (~74) goes
                // with the first request. h2's preface and SETTINGS
                // (~60 bytes each way) ride along.
                let ch = self.client_send(i, b, 300);
                let sf = self.server_send(i, ch, 1_300 + 60);
                self.payload += 74 + 60;
                arrival_of(&sf, u64::MAX)
            }
            Carrier::Quic => {
                // Client Initial (padded to 1200 bytes), the server's
                // Initial + Handshake (~1,400 bytes: two datagrams), the
                // client's Handshake Finished with the first request.
                let a = self.wire.up.send(t, tx.syn_bytes);
                self.payload += 1200;
                let sf = self.server_send(i, a, 1_400);
                arrival_of(&sf, u64::MAX)
            }
        };
        (i, ready + self.per_connection_s)
    }

    /// The client sends `bytes` on connection `i` at `t`; returns when
    /// the last of them reached the server.
    fn client_send(&mut self, i: usize, t: f64, bytes: u64) -> f64 {
        self.client_send_segments(i, t, bytes)
            .last()
            .map_or(t, |&(_, a)| a)
    }

    /// The client writes `bytes` on connection `i` at `t`; returns when
    /// each of its segments reached the server (bytes up to and including
    /// it, arrival), so the server can read a request as soon as its last
    /// byte is in.
    fn client_send_segments(&mut self, i: usize, t: f64, bytes: u64) -> Arrivals {
        self.payload += bytes;
        let mss = u64::from(self.wire.tx.seg_payload);
        let mut out = Arrivals::new();
        let mut sent = 0u64;
        while sent < bytes {
            let n = (bytes - sent).min(mss);
            sent += n;
            out.push((
                sent,
                self.wire.up.send(t, self.wire.segment_bytes(n as u32)),
            ));
        }
        if let Some(&(_, a)) = out.first() {
            self.conns[i].client_data_sent(t, a);
        }
        out
    }

    /// The server writes `bytes` on connection `i` at `ready`.
    fn server_send(&mut self, i: usize, ready: f64, bytes: u64) -> Arrivals {
        self.payload += bytes;
        let Sim { wire, conns, .. } = self;
        conns[i].send(wire, ready, bytes)
    }

    /// Ends connection `i` at `t`: FIN, FIN-ACK (carrying the held ACK),
    /// ACK — three packets whichever side closes first.
    fn close(&mut self, i: usize, t: f64) {
        let b = self.wire.tx.ack_bytes;
        if self.carrier == Carrier::Quic {
            // CONNECTION_CLOSE in one packet.
            self.wire.up.send(t, b);
            return;
        }
        let a = self.wire.up.send(t, b);
        let c = self.wire.down.send(a, b);
        self.wire.up.send(c, b);
        // The held ACK rode on the FIN.
        self.conns[i].drop_held_ack();
    }

    /// The client read the last byte of what connection `i` carried at
    /// `at`; returns when the server has its ACK (see [`Conn::ack_read`]).
    fn ack_read(&mut self, i: usize, at: f64) -> f64 {
        let Sim { wire, conns, .. } = self;
        conns[i].ack_read(wire, at)
    }

    fn finish_acks(&mut self) {
        let Sim { wire, conns, .. } = self;
        for c in conns.iter_mut() {
            c.finish(wire);
        }
    }

    fn cost(&self, seconds: f64) -> Cost {
        Cost {
            packets: (self.wire.down.packets + self.wire.up.packets) as f64,
            bytes: (self.wire.down.ip_bytes + self.wire.up.ip_bytes) as f64,
            payload: self.payload as f64,
            seconds,
        }
    }
}

/// Where the page's bytes (response head included) reveal image `k`:
/// the byte count of the response at which its reference is complete.
fn reveal_at(inp: &Inputs<'_>, strategy: Strategy, k: usize, page_resp: u64) -> u64 {
    let p = inp.page;
    let html_body = if matches!(
        strategy,
        Strategy::PipelineDeflate | Strategy::H2 | Strategy::H3
    ) {
        p.html_deflated
    } else {
        p.html.body
    };
    let head = page_resp.saturating_sub(html_body);
    // In compressed bodies, offsets scale with the compression ratio.
    let scaled = (p.images[k].ref_end as f64 * html_body as f64 / p.html.body.max(1) as f64) as u64;
    head + scaled.min(html_body)
}

fn simulate(inp: &Inputs<'_>, strategy: Strategy, test: Test, knobs: Knobs) -> Cost {
    let mut sim = Sim::new(inp, strategy, knobs);
    let (page_resp, image_resp) = response_sizes(inp, strategy, test);
    let q = request_size(inp, strategy);
    let n = image_resp.len();
    let revalidating_from_cache =
        test == Test::Revalidate && inp.client.revalidation != Revalidation::GetHead;
    let mut last = 0.0f64;
    // The robot's imitated host: busy this long after each object (0
    // unless the run imitated one).
    let po = if knobs.no_server {
        0.0
    } else {
        inp.client.per_object_s
    };
    // When each image becomes known to the client.
    let known = |sim_page: &Arrivals, k: usize| -> f64 {
        arrival_of(sim_page, reveal_at(inp, strategy, k, page_resp))
    };
    match shape(strategy, test, &inp.client) {
        Shape::PerRequest(max) => {
            let (c0, r0) = sim.open(0.0);
            let at = sim.client_send(c0, r0, q);
            let page = sim.server_send(c0, at + sim.server_s, page_resp);
            let page_done = arrival_of(&page, u64::MAX);
            sim.close(c0, page_done);
            last = last.max(page_done);
            // Slots: the page's connection counts until it is done.
            let mut slots = vec![0.0f64; max];
            slots[0] = page_done + po;
            for (k, &resp) in image_resp.iter().enumerate() {
                let known_at = if revalidating_from_cache {
                    page_done
                } else {
                    known(&page, k)
                };
                let (si, free) = slots
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                let start = known_at.max(free);
                let (c, r) = sim.open(start);
                let at = sim.client_send(c, r, q);
                let a = sim.server_send(c, at + sim.server_s, resp);
                let done = arrival_of(&a, u64::MAX);
                sim.close(c, done);
                slots[si] = done + po;
                last = last.max(done);
            }
        }
        Shape::Serial(max) => {
            let (c0, r0) = sim.open(0.0);
            let at = sim.client_send(c0, r0, q);
            let page = sim.server_send(c0, at + sim.server_s, page_resp);
            let page_done = arrival_of(&page, u64::MAX);
            last = last.max(page_done);
            // Connections: (index, free at); more open as requests wait.
            let mut conns: Vec<(usize, f64)> = vec![(c0, page_done + po)];
            for (k, &resp) in image_resp.iter().enumerate() {
                let known_at = if revalidating_from_cache || max == 1 {
                    page_done + po
                } else {
                    known(&page, k)
                };
                let best = conns
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1));
                let (ci, start) = match best {
                    Some((j, (c, free))) if free <= known_at || conns.len() >= max => {
                        (j, (c, known_at.max(free)))
                    }
                    _ => {
                        let (c, r) = sim.open(known_at);
                        conns.push((c, r));
                        (conns.len() - 1, (c, r))
                    }
                };
                let at = sim.client_send(start.0, start.1, q);
                let a = sim.server_send(start.0, at + sim.server_s, resp);
                let done = arrival_of(&a, u64::MAX);
                conns[ci].1 = done + po;
                last = last.max(done);
            }
            for (c, free) in conns {
                sim.close(c, free);
            }
        }
        Shape::Pipelined | Shape::Multiplexed => {
            let pipelined = shape(strategy, test, &inp.client) == Shape::Pipelined;
            let (c0, r0) = sim.open(0.0);
            let at = sim.client_send(c0, r0, q);
            let page = sim.server_send(c0, at + sim.server_s, page_resp);
            let page_done = arrival_of(&page, u64::MAX);
            last = last.max(page_done);
            // Requests: when each is known.
            let known_at: Vec<f64> = (0..n)
                .map(|k| {
                    if revalidating_from_cache {
                        page_done
                    } else {
                        known(&page, k)
                    }
                })
                .collect();
            // Batches of request bytes: (sent at, requests completed by it).
            let batches = if pipelined && inp.client.flush_at_page_end {
                // Every request leaves together once the page is read
                // (and the robot's host is done with it).
                let t = known_at.iter().copied().fold(page_done + po, f64::max);
                vec![(t, n, q * n as u64)]
            } else if pipelined {
                pipeline_batches(&known_at, q, &inp.client)
            } else {
                group_same_time(&known_at, q)
            };
            let mut done_reqs = 0usize;
            // The robot reads on only when its host is free.
            let mut busy = page_done + po;
            for (t, count, bytes) in batches {
                let arrive = sim.client_send(c0, t, bytes);
                if count == 0 {
                    continue;
                }
                let sizes = &image_resp[done_reqs..done_reqs + count];
                let resp: u64 = sizes.iter().sum();
                done_reqs += count;
                let ready = arrive + sim.server_s * count as f64;
                let a = sim.server_send(c0, ready, resp);
                if po > 0.0 {
                    let mut end = 0u64;
                    for &b in sizes {
                        end += b;
                        let done = arrival_of(&a, end).max(busy);
                        busy = done + po;
                        last = last.max(done);
                    }
                } else {
                    last = last.max(arrival_of(&a, u64::MAX));
                }
            }
            sim.close(c0, last);
        }
        Shape::Bundle => {
            let (c0, r0) = sim.open(0.0);
            let at = sim.client_send(c0, r0, q);
            let total = page_resp + image_resp.iter().sum::<u64>();
            let a = sim.server_send(c0, at + sim.server_s * (n + 1) as f64, total);
            last = arrival_of(&a, u64::MAX);
            sim.close(c0, last);
            if po > 0.0 {
                // The robot handles the n + 1 parts as they arrive, spread
                // evenly from the head to the end (`conn::busy_after`), and
                // its load ends when it is done with the last.
                let head = arrival_of(&a, 1);
                let parts = n + 1;
                let spacing = (last - head) / parts as f64;
                let mut t = head;
                for k in 1..=parts {
                    let arrived = if k == parts {
                        last
                    } else {
                        head + spacing * k as f64
                    };
                    t = t.max(arrived) + po;
                }
                last = t;
            }
        }
    }
    // The robot's load ends when its host is done with the last object.
    if po > 0.0 && shape(strategy, test, &inp.client) != Shape::Bundle {
        last += po;
    }
    sim.finish_acks();
    sim.cost(last)
}

/// The robot's pipelining buffer (paper 001 "Buffer Tuning";
/// `pagewire_client::outbuf`): requests enter as they become known; the
/// buffer leaves when it holds `out_buffer` bytes (exactly that many; the
/// rest waits), or `flush_after_s` after its oldest byte entered. Returns
/// (time, requests completed by this batch, bytes).
fn pipeline_batches(known_at: &[f64], q: u64, c: &Client) -> Vec<(f64, usize, u64)> {
    let mut out = Vec::new();
    let mut buf = 0u64;
    let mut armed: Option<f64> = None;
    let mut complete_in_buf = 0usize;
    for &t in known_at {
        if let Some(a) = armed {
            if a + c.flush_after_s <= t && buf > 0 {
                out.push((a + c.flush_after_s, complete_in_buf, buf));
                buf = 0;
                complete_in_buf = 0;
                armed = None;
            }
        }
        if buf == 0 {
            armed = Some(t);
        }
        buf += q;
        complete_in_buf += 1;
        while buf >= c.out_buffer {
            // The batch completes every request but a partial last one.
            let rest = buf - c.out_buffer;
            let partial = usize::from(rest > 0);
            let completed = complete_in_buf - partial;
            out.push((t, completed, c.out_buffer));
            buf = rest;
            complete_in_buf = partial;
            armed = if buf > 0 { Some(t) } else { None };
        }
    }
    if buf > 0 {
        let a = armed.unwrap_or(0.0);
        out.push((a + c.flush_after_s, complete_in_buf, buf));
    }
    out
}

/// Multiplexed requests leave as soon as known; requests known at the same
/// moment leave together.
fn group_same_time(known_at: &[f64], q: u64) -> Vec<(f64, usize, u64)> {
    let mut out: Vec<(f64, usize, u64)> = Vec::new();
    for &t in known_at {
        match out.last_mut() {
            Some(last) if last.0 == t => {
                last.1 += 1;
                last.2 += q;
            }
            _ => out.push((t, 1, q)),
        }
    }
    out
}

/// The physical lower bound: connection set-up round trips, the page
/// request's round trip, and either all response bytes at line rate or
/// (for strategies that learn the images from the page) the image
/// requests' round trip and the image bytes at line rate, whichever is
/// longer. Server time is left out (a host cost, not physics).
fn lower_bound(inp: &Inputs<'_>, strategy: Strategy, test: Test) -> (f64, u32) {
    let (page_resp, image_resp) = response_sizes(inp, strategy, test);
    let tx = match carrier(strategy) {
        Carrier::Quic => Transport::quic(),
        _ => Transport::tcp(inp.link.era, inp.link.mtu, inp.link.mss),
    };
    let line = |bytes: u64| -> f64 {
        let packets = bytes.div_ceil(u64::from(tx.seg_payload));
        let ip = bytes + packets * u64::from(tx.data_overhead + inp.link.framing_bytes);
        ip as f64 * 8.0 / inp.link.down_bps
    };
    let images: u64 = image_resp.iter().sum();
    let setup = match carrier(strategy) {
        Carrier::Tls => 2,
        _ => 1,
    };
    let rtt = inp.link.rtt_s;
    let one_round = shape(strategy, test, &inp.client) == Shape::Bundle || image_resp.is_empty();
    if one_round {
        let t = f64::from(setup + 1) * rtt + line(page_resp + images);
        return (t, setup + 1);
    }
    let t = f64::from(setup + 1) * rtt + line(page_resp + images).max(rtt + line(images));
    (t, setup + 2)
}

#[cfg(test)]
mod tests;
