//! The paper's programs, one server and one client per method, written the
//! way the paper's were: blocking sockets, one thread, every file read from
//! the disk when it is requested (the package, tar and multipart files too:
//! "constructed in advance", read per request).
//!
//! Measured with the paper's definitions (Section 4.1), with one change:
//! * server response time: from when the first request has arrived (its
//!   read completed) until the last byte of the last file has been
//!   acknowledged by the client (the socket's send queue, `SIOCOUTQ`, is
//!   empty; polled, at least 20 µs apart). The paper's own end point, the last `send`
//!   completed, is kept beside it (`send_done_ms`): on Linux a `send`
//!   completes when the kernel has copied the data into its send buffer
//!   (up to megabytes), while the paper's Windows XP had an 8 KB default
//!   send buffer, so its "send completed" came close to the data being on
//!   the wire;
//! * server CPU from the first request until the last `send` completed;
//! * client response time: from when the first `read` completed until the
//!   `read` that completed the last file;
//! * client CPU from the first request sent until the last file received.
//!
//! CPU is each thread's own accounting (`getrusage(RUSAGE_THREAD)`, user
//! plus system), not a sampler: the paper summed 100 ms utilization
//! readings, which is CPU time in units of 1 ms per 100 %-reading.

#![allow(unsafe_code)] // wait_readable, the send queue and the timer slack: system calls, each with its SAFETY note

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use bytes::BytesMut;
use pagewire_h1::{parse_request, parse_response, Limits as H1Limits, Method as H1Method};
use pagewire_objpack::{Event, Limits, Reader, Step, MEDIA_TYPE};
use serde::Serialize;

use super::files::FileSet;
use super::sys::thread_cpu;

/// Read size of both programs.
const READ_BYTES: usize = 64 << 10;

/// A way to move one set of 100 files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// A connection per file, one after another (the paper's HTTP 1.0 client).
    Http10,
    /// One persistent connection, one request at a time.
    Http11,
    /// The object package of the set, one request.
    Objpack,
    /// One connection, all 100 requests sent at once (the paper's future work).
    Pipeline,
    /// The set as one multipart/related response (MHTML-style).
    Multipart,
    /// The set as one tar stream.
    Tar,
    /// The object package with the paper-sized attribute record: one byte
    /// per file (text, executable, read-only) instead of format version 1's
    /// 128 bytes (flags, Last-Modified, media type, ETag). A variant of the
    /// bench only; `pagewire pack` writes version 1.
    #[serde(rename = "objpack-1b")]
    ObjpackPaper,
}

impl Method {
    pub const ALL: [Method; 7] = [
        Method::Http10,
        Method::Http11,
        Method::Objpack,
        Method::Pipeline,
        Method::Multipart,
        Method::Tar,
        Method::ObjpackPaper,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Http10 => "http10",
            Method::Http11 => "http11",
            Method::Objpack => "objpack",
            Method::Pipeline => "pipeline",
            Method::Multipart => "multipart",
            Method::Tar => "tar",
            Method::ObjpackPaper => "objpack-1b",
        }
    }

    /// Row label in the paper's tables (ours for the methods beyond it).
    pub fn label(self) -> &'static str {
        match self {
            Method::Http10 => "HTTP 1.0",
            Method::Http11 => "HTTP 1.1 Persistent Conn.",
            Method::Objpack => "Object Packaging",
            Method::Pipeline => "HTTP 1.1 Pipelining",
            Method::Multipart => "multipart/related",
            Method::Tar => "tar",
            Method::ObjpackPaper => "OP, 1-byte attributes",
        }
    }

    pub fn in_paper(self) -> bool {
        matches!(self, Method::Http10 | Method::Http11 | Method::Objpack)
    }

    /// Every file of `set` a run of this method reads from the disk.
    pub fn paths(self, set: &FileSet) -> Vec<std::path::PathBuf> {
        match self {
            Method::Objpack => vec![set.objp.clone()],
            Method::ObjpackPaper => vec![set.objp1.clone()],
            Method::Tar => vec![set.tar.clone()],
            Method::Multipart => vec![set.mhtml.clone()],
            _ => set.files.iter().map(|f| set.dir.join(&f.0)).collect(),
        }
    }

    /// Requests the server answers in one run.
    pub fn requests(self, files: usize) -> usize {
        match self {
            Method::Http10 | Method::Http11 | Method::Pipeline => files,
            _ => 1,
        }
    }
}

/// Longest the server waits for a connection or a request: a client that
/// failed must not leave the bench waiting forever.
const SERVER_WAIT: Duration = Duration::from_secs(30);

/// Blocks until `listener` has a connection to accept (poll(2), so the
/// accept happens the moment a connection is there, unlike a sleep loop).
fn wait_readable(listener: &TcpListener, timeout: Duration) -> Result<()> {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for a listener we own.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
    match rc {
        1.. => Ok(()),
        0 => bail!("no connection within {} s", timeout.as_secs()),
        _ => Err(std::io::Error::last_os_error()).context("poll"),
    }
}

/// What the server measured in one run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ServerMeasure {
    /// First request arrived to the last byte acknowledged by the client.
    pub response_ms: f64,
    /// First request arrived to the last `send` completed (the paper's
    /// literal end point; see the module note).
    pub send_done_ms: f64,
    /// Thread CPU from the first request to the last `send` completed.
    pub cpu_ms: f64,
    /// Thread CPU from the start of the run to the last `send` completed
    /// (the first accept and request read included; the polling for the
    /// acknowledgement left out: after the last `send` the server has no
    /// work, the kernel's ACK processing runs in softirq context).
    pub cpu_run_ms: f64,
    pub body_bytes: u64,
}

/// The shortest pause between two looks at the send queue after the last
/// `send`; longer while much is queued (half its drain time at 100 Mbit/s),
/// so the polling neither spins nor misses the end by more than this.
pub const ACK_POLL: Duration = Duration::from_micros(20);

/// Bytes sent on `s` and not yet acknowledged (SIOCOUTQ).
fn unacked(s: &TcpStream) -> Result<i32> {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (= SIOCOUTQ for TCP) writes one int; the socket is ours.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("ioctl(SIOCOUTQ)");
    }
    Ok(n)
}

/// Waits until every byte sent on `s` is acknowledged by the peer.
fn wait_acked(s: &TcpStream) -> Result<Instant> {
    let t0 = Instant::now();
    loop {
        if unacked(s)? == 0 {
            return Ok(Instant::now());
        }
        if t0.elapsed() > SERVER_WAIT {
            bail!(
                "send queue not acknowledged within {} s",
                SERVER_WAIT.as_secs()
            );
        }
        let queued = unacked(s)?.max(0) as u64;
        // 100 Mbit/s drains 12.5 bytes per µs: sleep half of that time.
        let pause = Duration::from_micros(queued / 25).clamp(ACK_POLL, Duration::from_millis(50));
        std::thread::sleep(pause);
    }
}

/// Timer slack of 1 ns for the calling thread, so a 20 µs sleep is one.
fn precise_sleeps() {
    // SAFETY: prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Server side of one run: answers `method`'s requests for every set of
/// `sets`, one after another (one set, or the paper's window of five), on
/// `listener`, and returns when the last byte is acknowledged.
pub fn serve(listener: &TcpListener, method: Method, sets: &[FileSet]) -> Result<ServerMeasure> {
    precise_sleeps();
    let cpu_start = thread_cpu();
    let mut first: Option<(Instant, Duration)> = None;
    let mut sent: Option<(Instant, Duration)> = None;
    let mut acked: Option<Instant> = None;
    let mut body_bytes = 0u64;
    let limits = H1Limits::default();
    let mut buf = BytesMut::with_capacity(READ_BYTES);
    for (si, set) in sets.iter().enumerate() {
        let n = method.requests(set.files.len());
        let mut served = 0;
        let mut conn: Option<TcpStream> = None;
        while served < n {
            if conn.is_none() {
                wait_readable(listener, SERVER_WAIT)?;
                let (s, _) = listener.accept().context("accept")?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(SERVER_WAIT))?;
                buf.clear();
                conn = Some(s);
            }
            let s = conn.as_mut().expect("connected");
            // Read until a whole request head is buffered.
            let head = loop {
                if let Some(h) =
                    parse_request(&mut buf, &limits).map_err(|e| anyhow::anyhow!("{e}"))?
                {
                    break h;
                }
                let mut chunk = [0u8; 8192];
                let k = s.read(&mut chunk)?;
                if k == 0 {
                    bail!("client closed before request {served}");
                }
                buf.extend_from_slice(&chunk[..k]);
            };
            if first.is_none() {
                first = Some((Instant::now(), thread_cpu()));
            }
            let target = head.target().trim_start_matches('/');
            let (path, ctype) = match method {
                Method::Objpack => (set.objp.clone(), MEDIA_TYPE.to_string()),
                Method::ObjpackPaper => (set.objp1.clone(), MEDIA_TYPE.to_string()),
                Method::Tar => (set.tar.clone(), "application/x-tar".to_string()),
                Method::Multipart => (
                    set.mhtml.clone(),
                    format!("multipart/related; boundary=\"{}\"", set.boundary),
                ),
                _ => {
                    ensure!(
                        target.starts_with('f') && !target.contains('/') && !target.contains(".."),
                        "bad target {target}"
                    );
                    (set.dir.join(target), "text/plain".to_string())
                }
            };
            // Read from the disk per request, like the paper's servers.
            let body = fs::read(&path).with_context(|| format!("read {}", path.display()))?;
            let version = if method == Method::Http10 {
                "1.0"
            } else {
                "1.1"
            };
            let head = format!(
                "HTTP/{version} 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            // Head and body in one send, as a server with a response buffer does.
            let mut out = Vec::with_capacity(head.len() + body.len());
            out.extend_from_slice(head.as_bytes());
            out.extend_from_slice(&body);
            s.write_all(&out)?;
            sent = Some((Instant::now(), thread_cpu()));
            body_bytes += body.len() as u64;
            served += 1;
            if si + 1 == sets.len() && served == n {
                acked = Some(wait_acked(s)?);
            }
            if method == Method::Http10 {
                let _ = s.shutdown(Shutdown::Write);
                conn = None;
            }
        }
        if let Some(s) = conn {
            let _ = s.shutdown(Shutdown::Write);
        }
    }
    let (t0, c0) = first.context("no request served")?;
    let (t1, c1) = sent.context("nothing sent")?;
    let t2 = acked.context("last response not acknowledged")?;
    Ok(ServerMeasure {
        response_ms: ms(t2 - t0),
        send_done_ms: ms(t1 - t0),
        cpu_ms: ms(c1.saturating_sub(c0)),
        cpu_run_ms: ms(c1.saturating_sub(cpu_start)),
        body_bytes,
    })
}

/// What the client measured in one run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ClientMeasure {
    pub response_ms: f64,
    pub cpu_ms: f64,
    /// First file complete, from the first request sent.
    pub first_file_ms: f64,
    pub files_ok: usize,
}

/// The client's clock: first read, last read, CPU from the first request.
struct Clock {
    start: Instant,
    cpu0: Duration,
    first_read: Option<Instant>,
    first_file: Option<Instant>,
}

impl Clock {
    fn read(&mut self) {
        if self.first_read.is_none() {
            self.first_read = Some(Instant::now());
        }
    }
    fn file(&mut self) {
        if self.first_file.is_none() {
            self.first_file = Some(Instant::now());
        }
    }
}

struct Conn {
    s: TcpStream,
    buf: BytesMut,
}

impl Conn {
    fn open(addr: SocketAddr) -> Result<Conn> {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .with_context(|| format!("connect {addr}"))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            s,
            buf: BytesMut::with_capacity(READ_BYTES),
        })
    }

    fn fill(&mut self, clock: &mut Clock) -> Result<usize> {
        let mut chunk = vec![0u8; READ_BYTES];
        let k = self.s.read(&mut chunk)?;
        if k > 0 {
            clock.read();
            self.buf.extend_from_slice(&chunk[..k]);
        }
        Ok(k)
    }

    /// One response with a Content-Length body, read whole.
    fn response(&mut self, clock: &mut Clock) -> Result<(String, Vec<u8>)> {
        let limits = H1Limits::default();
        let head = loop {
            if let Some(h) = parse_response(&mut self.buf, &limits, &H1Method::Get)
                .map_err(|e| anyhow::anyhow!("{e}"))?
            {
                break h;
            }
            if self.fill(clock)? == 0 {
                bail!("server closed before a response head");
            }
        };
        ensure!(head.status() == 200, "status {}", head.status());
        let len: usize = head
            .header("content-length")
            .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse().ok())
            .context("no Content-Length")?;
        let ctype = head
            .header("content-type")
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default();
        while self.buf.len() < len {
            if self.fill(clock)? == 0 {
                bail!("server closed in a body");
            }
        }
        let body = self.buf.split_to(len).to_vec();
        Ok((ctype, body))
    }
}

fn request(path: &str, version: &str, extra: &str) -> String {
    format!("GET /{path} HTTP/{version}\r\nHost: server\r\n{extra}\r\n")
}

/// Client side of one run: fetches every file of every set of `sets`
/// (one set, or the paper's window of five, one after another) from `addr`
/// with `method`, checks every byte (CRC-32, after the clock stopped).
pub fn fetch(addr: SocketAddr, method: Method, sets: &[FileSet]) -> Result<ClientMeasure> {
    let mut clock = Clock {
        start: Instant::now(),
        cpu0: thread_cpu(),
        first_read: None,
        first_file: None,
    };
    let mut all: Vec<Vec<(String, Vec<u8>)>> = Vec::with_capacity(sets.len());
    for set in sets {
        all.push(fetch_set(addr, method, set, &mut clock)?);
    }
    let end = Instant::now();
    let cpu = thread_cpu().saturating_sub(clock.cpu0);
    // Verify outside the measured interval.
    let mut ok = 0;
    for (got, set) in all.iter().zip(sets) {
        ensure!(
            got.len() == set.files.len(),
            "{} of {} files",
            got.len(),
            set.files.len()
        );
        for ((name, body), (want_name, size, crc)) in got.iter().zip(&set.files) {
            ensure!(
                name == want_name && body.len() == *size && crc32fast::hash(body) == *crc,
                "{method:?}: {name} is not byte-exact"
            );
            ok += 1;
        }
    }
    let first_read = clock.first_read.context("nothing read")?;
    Ok(ClientMeasure {
        response_ms: ms(end - first_read),
        cpu_ms: ms(cpu),
        first_file_ms: ms(clock.first_file.unwrap_or(end) - clock.start),
        files_ok: ok,
    })
}

fn fetch_set(
    addr: SocketAddr,
    method: Method,
    set: &FileSet,
    clock: &mut Clock,
) -> Result<Vec<(String, Vec<u8>)>> {
    let names: Vec<&str> = set.files.iter().map(|f| f.0.as_str()).collect();
    let mut got: Vec<(String, Vec<u8>)> = Vec::with_capacity(names.len());
    match method {
        Method::Http10 => {
            for name in &names {
                let mut c = Conn::open(addr)?;
                c.s.write_all(request(name, "1.0", "").as_bytes())?;
                let (_, body) = c.response(clock)?;
                clock.file();
                got.push((name.to_string(), body));
            }
        }
        Method::Http11 => {
            let mut c = Conn::open(addr)?;
            for name in &names {
                c.s.write_all(request(name, "1.1", "").as_bytes())?;
                let (_, body) = c.response(clock)?;
                clock.file();
                got.push((name.to_string(), body));
            }
        }
        Method::Pipeline => {
            let mut c = Conn::open(addr)?;
            let all: String = names.iter().map(|n| request(n, "1.1", "")).collect();
            c.s.write_all(all.as_bytes())?;
            for name in &names {
                let (_, body) = c.response(clock)?;
                clock.file();
                got.push((name.to_string(), body));
            }
        }
        Method::Objpack => {
            let mut c = Conn::open(addr)?;
            let accept = format!("Accept: {MEDIA_TYPE}\r\n");
            c.s.write_all(request("set.objp", "1.1", &accept).as_bytes())?;
            got = objpack_body(&mut c, clock)?;
        }
        Method::ObjpackPaper => {
            let mut c = Conn::open(addr)?;
            let accept = format!("Accept: {MEDIA_TYPE}\r\n");
            c.s.write_all(request("set.objp1", "1.1", &accept).as_bytes())?;
            got = paper_package_body(&mut c, clock)?;
        }
        Method::Multipart => {
            let mut c = Conn::open(addr)?;
            c.s.write_all(request("set.mhtml", "1.1", "").as_bytes())?;
            let (ctype, body) = c.response(clock)?;
            got = multipart_parts(&ctype, &body)?;
            clock.file();
        }
        Method::Tar => {
            let mut c = Conn::open(addr)?;
            c.s.write_all(request("set.tar", "1.1", "").as_bytes())?;
            let (_, body) = c.response(clock)?;
            got = tar_members(&body)?;
            clock.file();
        }
    }
    Ok(got)
}

/// The response head of a package, checked for 200 and a Content-Length.
fn package_head(c: &mut Conn, clock: &mut Clock) -> Result<()> {
    let limits = H1Limits::default();
    let head = loop {
        if let Some(h) = parse_response(&mut c.buf, &limits, &H1Method::Get)
            .map_err(|e| anyhow::anyhow!("{e}"))?
        {
            break h;
        }
        if c.fill(clock)? == 0 {
            bail!("server closed before a response head");
        }
    };
    ensure!(head.status() == 200, "status {}", head.status());
    Ok(())
}

/// The paper-sized package (see `files::paper_package`), unpacked as it
/// streams in: the table once whole and its CRC checked, then each file
/// complete the moment its last byte is in.
fn paper_package_body(c: &mut Conn, clock: &mut Clock) -> Result<Vec<(String, Vec<u8>)>> {
    package_head(c, clock)?;
    while c.buf.len() < 16 {
        ensure!(c.fill(clock)? > 0, "package ended in its header");
    }
    let h = c.buf.split_to(16);
    ensure!(
        &h[..4] == b"OBJP" && h[4..6] == super::files::PAPER_VERSION.to_be_bytes(),
        "not a paper-sized package"
    );
    let info_len = u32::from_be_bytes(h[8..12].try_into().expect("4")) as usize;
    let crc = u32::from_be_bytes(h[12..16].try_into().expect("4"));
    ensure!(info_len <= 4 << 20, "table of {info_len} bytes");
    while c.buf.len() < info_len {
        ensure!(c.fill(clock)? > 0, "package ended in its table");
    }
    let info = c.buf.split_to(info_len);
    ensure!(crc32fast::hash(&info) == crc, "table CRC mismatch");
    let table = super::files::parse_paper_table(&info)?;
    let mut files = Vec::with_capacity(table.len());
    for (name, size) in table {
        let size = size as usize;
        while c.buf.len() < size {
            ensure!(c.fill(clock)? > 0, "package ended in {name}");
        }
        files.push((name, c.buf.split_to(size).to_vec()));
        clock.file();
    }
    ensure!(c.buf.is_empty(), "bytes after the last file");
    Ok(files)
}

/// The package response, unpacked as it streams in (the paper's Figure 3).
fn objpack_body(c: &mut Conn, clock: &mut Clock) -> Result<Vec<(String, Vec<u8>)>> {
    let limits = H1Limits::default();
    let head = loop {
        if let Some(h) = parse_response(&mut c.buf, &limits, &H1Method::Get)
            .map_err(|e| anyhow::anyhow!("{e}"))?
        {
            break h;
        }
        if c.fill(clock)? == 0 {
            bail!("server closed before a response head");
        }
    };
    ensure!(head.status() == 200, "status {}", head.status());
    let mut reader = Reader::new(Limits::default());
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    loop {
        let mut input: &[u8] = &c.buf;
        let mut consumed_total = 0;
        loop {
            let Step { consumed, event } = reader.advance(input)?;
            input = &input[consumed..];
            consumed_total += consumed;
            match event {
                None => break,
                Some(Event::FileStart { index }) => {
                    let e = &reader.entries()[index];
                    files.push((e.name.clone(), Vec::with_capacity(e.size as usize)));
                }
                Some(Event::Data { bytes, .. }) => files
                    .last_mut()
                    .expect("started")
                    .1
                    .extend_from_slice(bytes),
                Some(Event::FileEnd { .. }) => clock.file(),
                Some(Event::Table) => {}
                Some(Event::End) => {
                    let _ = c.buf.split_to(consumed_total);
                    return Ok(files);
                }
            }
        }
        let _ = c.buf.split_to(consumed_total);
        if c.fill(clock)? == 0 {
            reader.finish()?;
            bail!("package ended early");
        }
    }
}

/// The parts of a multipart/related body (RFC 2046 §5.1.1), by scanning for
/// the boundary delimiter, as a generic client must.
fn multipart_parts(ctype: &str, body: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let boundary = ctype
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))
        .context("no boundary")?
        .trim_matches('"');
    let delim = format!("--{boundary}");
    let finder = memchr::memmem::Finder::new(delim.as_bytes());
    let mut out = Vec::new();
    let mut at = finder.find(body).context("no first delimiter")?;
    loop {
        let after = at + delim.len();
        if body[after..].starts_with(b"--") {
            return Ok(out);
        }
        let head_end = memchr::memmem::find(&body[after..], b"\r\n\r\n").context("part head")?;
        let head = std::str::from_utf8(&body[after..after + head_end])?;
        let name = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Location: "))
            .context("no Content-Location")?
            .to_string();
        let start = after + head_end + 4;
        let next = finder
            .find(&body[start..])
            .context("no closing delimiter")?
            + start;
        // The CRLF before a delimiter belongs to the delimiter.
        out.push((name, body[start..next - 2].to_vec()));
        at = next;
    }
}

/// The members of a ustar stream.
fn tar_members(body: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 512 <= body.len() {
        let h = &body[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            return Ok(out);
        }
        let name_len = h[..100].iter().position(|&b| b == 0).unwrap_or(100);
        let name = String::from_utf8(h[..name_len].to_vec())?;
        let size_text = std::str::from_utf8(&h[124..135])?.trim_matches(|c| c == '\0' || c == ' ');
        let size = usize::from_str_radix(size_text, 8)?;
        let start = at + 512;
        ensure!(start + size <= body.len(), "tar member {name} truncated");
        out.push((name, body[start..start + size].to_vec()));
        at = start + size.div_ceil(512) * 512;
    }
    bail!("tar stream without its end blocks")
}
