//! A fast, forgiving Common Log Format reader.
//!
//! `host ident authuser [date] "request" status bytes` (plus anything after,
//! e.g. the Combined format's referrer and user agent, which is ignored). Also
//! accepted: the Internet Traffic Archive's compact form
//! `host [DD:HH:MM:SS] "request" status bytes` (ident/authuser missing),
//! `-` or missing byte counts, requests without a protocol version
//! (HTTP/0.9 style), targets containing spaces or quotes, CRLF line ends and
//! unsorted timestamps. A line that cannot be understood is skipped and
//! counted by [`SkipReason`]; reading never stops on a bad line.
//!
//! Speed: lines are found and split with `memchr`; nothing is allocated per
//! line except the first time a URL or host is seen (interned to `u32` ids).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use memchr::{memchr, memchr_iter, memrchr};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// Lines longer than this are skipped as [`SkipReason::TooLong`]. Real CLF
/// lines are under 1 KiB; 64 KiB leaves room for absurd URLs while bounding
/// the carry-over buffer.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Read buffer size: large enough that the per-read overhead vanishes.
const READ_BUF_BYTES: usize = 1 << 20;

/// Why a line was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Blank line.
    Empty,
    /// A `#` comment or directive line (W3C extended logs, pagewire's own
    /// provenance header on synthetic logs).
    Comment,
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// Contains NUL or other control bytes (binary junk).
    Binary,
    /// No `[date]` field.
    MissingDate,
    /// The date is not `DD/Mon/YYYY:HH:MM:SS ±HHMM` nor `DD:HH:MM:SS`.
    BadDate,
    /// The date has the form but cannot be: 31 Feb, a year outside
    /// 1970-2100, a zone beyond -12:00 .. +14:00 or with minutes over 59.
    ImpossibleDate,
    /// No quoted request, or it is not terminated.
    MissingRequest,
    /// The request has no method and target (e.g. `"-"` or `"GET"`).
    BadRequest,
    /// No status code after the request.
    MissingStatus,
    /// The status is not a three-digit number.
    BadStatus,
    /// The byte count is a number too large for one response (over
    /// [`MAX_RESPONSE_BYTES`], e.g. 2^64-1).
    BadSize,
}

/// Largest byte count taken as real: 1 TiB, far above any web response,
/// far below where sums over a log could overflow.
pub const MAX_RESPONSE_BYTES: u64 = 1 << 40;

/// Earliest and latest years a web log's date may carry.
const YEARS: std::ops::RangeInclusive<i64> = 1970..=2100;

impl SkipReason {
    pub const ALL: [SkipReason; 12] = [
        SkipReason::Empty,
        SkipReason::Comment,
        SkipReason::TooLong,
        SkipReason::Binary,
        SkipReason::MissingDate,
        SkipReason::BadDate,
        SkipReason::ImpossibleDate,
        SkipReason::MissingRequest,
        SkipReason::BadRequest,
        SkipReason::MissingStatus,
        SkipReason::BadStatus,
        SkipReason::BadSize,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Empty => "empty",
            SkipReason::Comment => "comment",
            SkipReason::TooLong => "too_long",
            SkipReason::Binary => "binary",
            SkipReason::MissingDate => "missing_date",
            SkipReason::BadDate => "bad_date",
            SkipReason::MissingRequest => "missing_request",
            SkipReason::BadRequest => "bad_request",
            SkipReason::MissingStatus => "missing_status",
            SkipReason::BadStatus => "bad_status",
            SkipReason::ImpossibleDate => "impossible_date",
            SkipReason::BadSize => "bad_size",
        }
    }
}

/// Request methods the simulator distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Method {
    Get,
    Head,
    Post,
    Other,
}

/// One parsed line, borrowing from the line's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLine<'a> {
    pub host: &'a [u8],
    /// Seconds since the Unix epoch (UTC) — or, for the compact `DD:HH:MM:SS`
    /// form, seconds since day 0 of an unknown month.
    pub time_s: i64,
    pub method: Method,
    pub target: &'a [u8],
    /// `None` for a request without a protocol version.
    pub version: Option<&'a [u8]>,
    pub status: u16,
    /// `None` for `-` or a missing/garbled byte count.
    pub bytes: Option<u64>,
}

/// Parse one line (without its `\n`; a trailing `\r` is tolerated).
pub fn parse_line(line: &[u8]) -> Result<LogLine<'_>, SkipReason> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = trim(line);
    if line.is_empty() {
        return Err(SkipReason::Empty);
    }
    if line[0] == b'#' {
        return Err(SkipReason::Comment);
    }
    if line.len() > MAX_LINE_BYTES {
        return Err(SkipReason::TooLong);
    }
    // Control bytes other than tab never occur in a real log line.
    if line.iter().any(|&b| b < 0x20 && b != b'\t') {
        return Err(SkipReason::Binary);
    }
    let host_end = line
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .unwrap_or(line.len());
    let host = &line[..host_end];
    // host cannot be empty after trim().
    let rest = &line[host_end..];
    let open = memchr(b'[', rest).ok_or(SkipReason::MissingDate)?;
    let close = memchr(b']', &rest[open..]).ok_or(SkipReason::MissingDate)? + open;
    let time_s = match parse_date_checked(&rest[open + 1..close]) {
        Ok(t) => t,
        Err(DateError::Form) => return Err(SkipReason::BadDate),
        Err(DateError::Impossible) => return Err(SkipReason::ImpossibleDate),
    };
    let rest = &rest[close + 1..];

    let q_open = memchr(b'"', rest).ok_or(SkipReason::MissingRequest)?;
    let after_open = &rest[q_open + 1..];
    let q_close = closing_quote(after_open).ok_or(SkipReason::MissingRequest)?;
    let request = &after_open[..q_close];
    let tail = &after_open[q_close + 1..];
    let (method, target, version) = parse_request(request).ok_or(SkipReason::BadRequest)?;

    let mut fields = tail
        .split(|&b| b == b' ' || b == b'\t')
        .filter(|f| !f.is_empty());
    let status = fields.next().ok_or(SkipReason::MissingStatus)?;
    let status = parse_status(status).ok_or(SkipReason::BadStatus)?;
    let bytes = match fields.next() {
        Some(f) if !f.is_empty() && f.iter().all(u8::is_ascii_digit) => match parse_u64(f) {
            Some(n) if n <= MAX_RESPONSE_BYTES => Some(n),
            // A number, but no response is that large: not a '-' to be
            // read as "unknown" (it used to become 0 silently).
            _ => return Err(SkipReason::BadSize),
        },
        Some(f) => parse_u64(f),
        None => None,
    };
    Ok(LogLine {
        host,
        time_s,
        method,
        target,
        version,
        status,
        bytes,
    })
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// The request's closing quote: the first `"` followed by a space and a digit
/// (the status) — so quotes inside a garbled target don't cut it short — or
/// else the last `"` on the line.
fn closing_quote(s: &[u8]) -> Option<usize> {
    for i in memchr_iter(b'"', s) {
        let next = &s[i + 1..];
        let next = trim_start(next);
        if next.first().is_some_and(u8::is_ascii_digit) || next.is_empty() {
            return Some(i);
        }
    }
    memrchr(b'"', s)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

/// `METHOD target [HTTP/x.y]`; the target may itself contain spaces.
/// `(method, target, version)` of a request line.
type RequestParts<'a> = (Method, &'a [u8], Option<&'a [u8]>);

fn parse_request(req: &[u8]) -> Option<RequestParts<'_>> {
    let req = trim(req);
    let m_end = req.iter().position(|&b| b == b' ')?;
    let method = match &req[..m_end] {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"POST" => Method::Post,
        b"" => return None,
        _ => Method::Other,
    };
    let rest = trim(&req[m_end + 1..]);
    let (target, version) = match memrchr(b' ', rest) {
        Some(sp) if rest[sp + 1..].starts_with(b"HTTP/") => {
            (trim(&rest[..sp]), Some(&rest[sp + 1..]))
        }
        _ => (rest, None),
    };
    if target.is_empty() {
        return None;
    }
    Some((method, target, version))
}

fn parse_status(s: &[u8]) -> Option<u16> {
    if s.len() != 3 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = s
        .iter()
        .fold(0u16, |acc, &d| acc * 10 + u16::from(d - b'0'));
    (100..=599).contains(&v).then_some(v)
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        s.iter()
            .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0')),
    )
}

fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 4 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        s.iter()
            .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0')),
    )
}

/// `29/Aug/1995:23:53:25 -0400` -> Unix seconds; `30:14:05:59` (the ITA
/// compact form) -> seconds from day 0. `None` for a malformed or an
/// impossible date ([`parse_date_checked`] tells which).
pub fn parse_date(s: &[u8]) -> Option<i64> {
    parse_date_checked(s).ok()
}

/// Why a date was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateError {
    /// Not the form of a CLF date.
    Form,
    /// The form, but no such moment: 31 Feb, year 0000 or 9999, zone +9999.
    Impossible,
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// [`parse_date`] with the reason for a refusal.
pub fn parse_date_checked(s: &[u8]) -> Result<i64, DateError> {
    use DateError::{Form, Impossible};
    let s = trim(s);
    if s.len() == 11 && s[2] == b':' && s[5] == b':' && s[8] == b':' {
        let (d, h, m, sec) = (
            digits(&s[0..2]).ok_or(Form)?,
            digits(&s[3..5]).ok_or(Form)?,
            digits(&s[6..8]).ok_or(Form)?,
            digits(&s[9..11]).ok_or(Form)?,
        );
        if h > 23 || m > 59 || sec > 60 {
            return Err(Impossible);
        }
        return Ok(((d * 24 + h) * 60 + m) * 60 + sec);
    }
    // DD/Mon/YYYY:HH:MM:SS [+-]HHMM  (the zone is optional)
    if s.len() < 20 || s[2] != b'/' || s[6] != b'/' || s[11] != b':' {
        return Err(Form);
    }
    let day = digits(&s[0..2]).ok_or(Form)?;
    let month = match &s[3..6] {
        b"Jan" => 1,
        b"Feb" => 2,
        b"Mar" => 3,
        b"Apr" => 4,
        b"May" => 5,
        b"Jun" => 6,
        b"Jul" => 7,
        b"Aug" => 8,
        b"Sep" => 9,
        b"Oct" => 10,
        b"Nov" => 11,
        b"Dec" => 12,
        _ => return Err(Form),
    };
    let year = digits(&s[7..11]).ok_or(Form)?;
    if s[14] != b':' || s[17] != b':' {
        return Err(Form);
    }
    let (h, m, sec) = (
        digits(&s[12..14]).ok_or(Form)?,
        digits(&s[15..17]).ok_or(Form)?,
        digits(&s[18..20]).ok_or(Form)?,
    );
    if !YEARS.contains(&year)
        || !(1..=days_in_month(year, month)).contains(&day)
        || h > 23
        || m > 59
        || sec > 60
    {
        return Err(Impossible);
    }
    let zone = trim(&s[20..]);
    let offset_s = match zone {
        [] => 0,
        [sign @ (b'+' | b'-'), rest @ ..] if rest.len() == 4 => {
            let hh = digits(&rest[0..2]).ok_or(Form)?;
            let mm = digits(&rest[2..4]).ok_or(Form)?;
            // Real zones run from -12:00 to +14:00.
            let max_h = if *sign == b'-' { 12 } else { 14 };
            if mm > 59 || hh > max_h || (hh == max_h && mm > 0) {
                return Err(Impossible);
            }
            let v = (hh * 60 + mm) * 60;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return Err(Form),
    };
    let days = days_from_civil(year, month, day);
    Ok(days * 86_400 + (h * 60 + m) * 60 + sec - offset_s)
}

/// The zone offset of a CLF date in seconds east of UTC (`-0400` -> -14400);
/// 0 when absent or unreadable.
pub fn date_zone_offset_s(s: &[u8]) -> i64 {
    let s = trim(s);
    match s.len().checked_sub(5).map(|i| &s[i..]) {
        Some([sign @ (b'+' | b'-'), rest @ ..]) => {
            let v = digits(&rest[0..2]).unwrap_or(0) * 3600 + digits(&rest[2..4]).unwrap_or(0) * 60;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => 0,
    }
}

/// Format Unix seconds as a CLF date in the zone `offset_s` east of UTC:
/// `29/Aug/1995:23:53:25 -0400`.
pub fn format_date(unix_s: i64, offset_s: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let local = unix_s + offset_s;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let sign = if offset_s < 0 { '-' } else { '+' };
    let off = offset_s.abs();
    format!(
        "{d:02}/{}/{y:04}:{:02}:{:02}:{:02} {sign}{:02}{:02}",
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        off / 3600,
        off / 60 % 60
    )
}

/// Inverse of `days_from_civil` (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Strings interned to dense `u32` ids.
#[derive(Default, Debug, Clone)]
pub struct Interner {
    ids: FxHashMap<Box<[u8]>, u32>,
    names: Vec<Box<[u8]>>,
}

impl Interner {
    pub fn intern(&mut self, s: &[u8]) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    pub fn get(&self, s: &[u8]) -> Option<u32> {
        self.ids.get(s).copied()
    }

    pub fn name(&self, id: u32) -> &[u8] {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// One request from the log, with interned host and URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub time_s: i64,
    pub host: u32,
    pub url: u32,
    pub method: Method,
    pub status: u16,
    /// `None` when the log says `-` or nothing.
    pub bytes: Option<u64>,
}

/// What the reader saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadStats {
    pub lines: u64,
    pub parsed: u64,
    pub skipped: u64,
    /// Skipped lines by reason (every reason listed, zeros included).
    pub skipped_by_reason: Vec<(SkipReason, u64)>,
    /// Parsed lines whose byte count was `-` or missing.
    pub bytes_missing: u64,
    /// Parsed lines whose request had no protocol version.
    pub no_version: u64,
    /// Parsed lines whose time is earlier than the previous parsed line's.
    pub out_of_order: u64,
    /// Of those, the most seconds one line went back in time.
    pub max_backstep_s: i64,
    pub gzip: bool,
    /// Bytes of (decompressed) log text read.
    pub text_bytes: u64,
}

impl ReadStats {
    fn count_skip(&mut self, reason: SkipReason) {
        self.skipped += 1;
        if let Some(slot) = self
            .skipped_by_reason
            .iter_mut()
            .find(|(r, _)| *r == reason)
        {
            slot.1 += 1;
        } else {
            self.skipped_by_reason.push((reason, 1));
        }
    }

    /// A warning for a log whose lines are not in time order (shuffled,
    /// reversed, or several logs concatenated): the simulator replays lines
    /// in file order, so inter-request times and sessions are then wrong.
    /// A few steps back of a second or two are normal (requests are logged
    /// when they end) and are not warned about.
    pub fn order_warning(&self) -> Option<String> {
        if self.out_of_order == 0
            || (self.max_backstep_s <= 60 && self.out_of_order * 100 < self.parsed)
        {
            return None;
        }
        Some(format!(
            "{} of {} lines go back in time (by up to {} s): the log looks shuffled or time-reversed; lines are replayed in file order",
            self.out_of_order, self.parsed, self.max_backstep_s
        ))
    }

    /// Skip count for one reason.
    pub fn skipped_for(&self, reason: SkipReason) -> u64 {
        self.skipped_by_reason
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |x| x.1)
    }
}

/// A whole log, parsed and interned.
#[derive(Clone, Debug, Default)]
pub struct AccessLog {
    pub requests: Vec<Request>,
    pub urls: Interner,
    pub hosts: Interner,
    pub stats: ReadStats,
}

impl AccessLog {
    /// Read a log file, plain or gzip (detected by its magic bytes, not its name).
    pub fn read_path(path: &Path) -> io::Result<AccessLog> {
        let file = File::open(path)?;
        Self::read(file)
    }

    /// Read a log from any reader, plain or gzip (detected by magic bytes).
    pub fn read<R: Read>(mut reader: R) -> io::Result<AccessLog> {
        let mut magic = [0u8; 2];
        let mut got = 0;
        while got < 2 {
            match reader.read(&mut magic[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let head = io::Cursor::new(magic[..got].to_vec());
        let chained = head.chain(reader);
        let mut log = AccessLog::default();
        if got == 2 && magic == [0x1f, 0x8b] {
            log.stats.gzip = true;
            let gz = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, chained));
            log.read_lines(gz)?;
        } else {
            log.read_lines(chained)?;
        }
        Ok(log)
    }

    /// Parse an in-memory log (tests, fuzzing).
    ///
    /// ```
    /// use pagewire_prefetch::log::AccessLog;
    ///
    /// let log = AccessLog::from_bytes(
    ///     b"a - - [30/Aug/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 100\nnot a log line\n",
    /// );
    /// assert_eq!((log.stats.parsed, log.stats.skipped), (1, 1));
    /// ```
    pub fn from_bytes(text: &[u8]) -> AccessLog {
        Self::read(text).expect("reading from memory cannot fail")
    }

    fn read_lines<R: Read>(&mut self, mut reader: R) -> io::Result<()> {
        let mut buf = vec![0u8; READ_BUF_BYTES];
        // Bytes [0, filled) hold unprocessed text; a partial last line is
        // moved to the front before the next read.
        let mut filled = 0;
        // True while discarding the rest of an over-long line.
        let mut discarding = false;
        let mut last_time = i64::MIN;
        loop {
            let n = match reader.read(&mut buf[filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.stats.text_bytes += n as u64;
            let end = filled + n;
            let eof = n == 0;
            let mut start = 0;
            while let Some(nl) = memchr(b'\n', &buf[start..end]) {
                let line = &buf[start..start + nl];
                if discarding {
                    discarding = false;
                } else {
                    self.take_line(line, &mut last_time);
                }
                start += nl + 1;
            }
            if eof {
                if start < end && !discarding {
                    let line = buf[start..end].to_vec();
                    self.take_line(&line, &mut last_time);
                }
                return Ok(());
            }
            let rest = end - start;
            if rest > MAX_LINE_BYTES {
                // An over-long line: count it once and drop bytes until its
                // newline, keeping the buffer bounded.
                if !discarding {
                    self.stats.lines += 1;
                    self.stats.count_skip(SkipReason::TooLong);
                }
                discarding = true;
                filled = 0;
            } else {
                buf.copy_within(start..end, 0);
                filled = rest;
            }
        }
    }

    fn take_line(&mut self, line: &[u8], last_time: &mut i64) {
        self.stats.lines += 1;
        match parse_line(line) {
            Ok(l) => {
                self.stats.parsed += 1;
                if l.bytes.is_none() {
                    self.stats.bytes_missing += 1;
                }
                if l.version.is_none() {
                    self.stats.no_version += 1;
                }
                if l.time_s < *last_time {
                    self.stats.out_of_order += 1;
                    self.stats.max_backstep_s =
                        self.stats.max_backstep_s.max(*last_time - l.time_s);
                }
                *last_time = l.time_s;
                let host = self.hosts.intern(l.host);
                let url = self.urls.intern(l.target);
                self.requests.push(Request {
                    time_s: l.time_s,
                    host,
                    url,
                    method: l.method,
                    status: l.status,
                    bytes: l.bytes,
                });
            }
            Err(reason) => self.stats.count_skip(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_epa_line() {
        let l = parse_line(
            b"141.243.1.172 - - [29/Aug/1995:23:53:25 -0400] \"GET /Software.html HTTP/1.0\" 200 1497",
        )
        .unwrap();
        assert_eq!(l.host, b"141.243.1.172");
        // 1995-08-30 03:53:25 UTC
        assert_eq!(l.time_s, 809_754_805);
        assert_eq!(l.method, Method::Get);
        assert_eq!(l.target, b"/Software.html");
        assert_eq!(l.version, Some(&b"HTTP/1.0"[..]));
        assert_eq!(l.status, 200);
        assert_eq!(l.bytes, Some(1497));
    }

    #[test]
    fn forgiving_forms() {
        // '-' bytes, no version, CRLF.
        let l = parse_line(b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /x\" 404 -\r").unwrap();
        assert_eq!((l.version, l.bytes, l.status), (None, None, 404));
        // Missing bytes field entirely.
        let l = parse_line(b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 304").unwrap();
        assert_eq!(l.bytes, None);
        // ITA compact form without ident/authuser.
        let l = parse_line(b"h [30:00:00:01] \"GET / HTTP/1.0\" 200 10").unwrap();
        assert_eq!(l.time_s, 30 * 86_400 + 1);
        // Garbled target with spaces and a quote (seen in the EPA log).
        let l = parse_line(
            b"h - - [30/Aug/1995:09:36:49 -0400] \"GET /a/HTTP/1.0/s1.html>N\"x</a> HTTP/0.2\" 404 -",
        )
        .unwrap();
        assert_eq!(l.target, b"/a/HTTP/1.0/s1.html>N\"x</a>");
        // Combined format extras are ignored.
        let l = parse_line(b"h - - [01/Jan/2020:00:00:00 +0000] \"GET /a HTTP/1.1\" 200 5 \"http://r/\" \"UA 1.0\"").unwrap();
        assert_eq!((l.status, l.bytes), (200, Some(5)));
        assert_eq!(l.time_s, 1_577_836_800);
    }

    #[test]
    fn date_round_trip() {
        let text = b"29/Aug/1995:23:53:25 -0400";
        let t = parse_date(text).unwrap();
        assert_eq!(date_zone_offset_s(text), -14_400);
        assert_eq!(format_date(t, -14_400).as_bytes(), text);
        let later = format_date(t + 86_400 * 3, -14_400);
        assert_eq!(later, "01/Sep/1995:23:53:25 -0400");
        assert_eq!(format_date(0, 0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(format_date(951_782_400, 0), "29/Feb/2000:00:00:00 +0000");
    }

    #[test]
    fn skip_reasons() {
        let cases: &[(&[u8], SkipReason)] = &[
            (b"", SkipReason::Empty),
            (b"   ", SkipReason::Empty),
            (b"#Fields: date time", SkipReason::Comment),
            (b"h - - \"GET / HTTP/1.0\" 200 1", SkipReason::MissingDate),
            (
                b"h - - [32/Aug/1995:23:53:25 -0400] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] 200 1",
                SkipReason::MissingRequest,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] \"-\" 400 -",
                SkipReason::BadRequest,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /\"",
                SkipReason::MissingStatus,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /\" OK 1",
                SkipReason::BadStatus,
            ),
            (
                b"h\0 - - [29/Aug/1995:23:53:25 -0400] \"GET /\" 200 1",
                SkipReason::Binary,
            ),
            // The form of a date, but no such moment (a hostile log line).
            (
                b"h - - [31/Feb/1995:23:53:25 -0400] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [01/Jan/0000:00:00:00 +0000] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [01/Jan/9999:00:00:00 +0000] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 +9999] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0460] \"GET /\" 200 1",
                SkipReason::ImpossibleDate,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /\" 200 18446744073709551615",
                SkipReason::BadSize,
            ),
            (
                b"h - - [29/Aug/1995:23:53:25 -0400] \"GET /\" 200 123456789012345678901234",
                SkipReason::BadSize,
            ),
        ];
        // Leap days exist; sizes up to the bound are kept.
        assert!(parse_line(b"h - - [29/Feb/1996:00:00:00 +1400] \"GET /\" 200 1").is_ok());
        assert_eq!(
            parse_line(b"h - - [29/Aug/1995:23:53:25 -1200] \"GET /\" 200 1099511627776")
                .unwrap()
                .bytes,
            Some(MAX_RESPONSE_BYTES)
        );
        for (line, reason) in cases {
            assert_eq!(
                parse_line(line).unwrap_err(),
                *reason,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn shuffled_and_reversed_logs_are_warned_about() {
        let line = |t: u32| {
            format!(
                "h - - [29/Aug/1995:{:02}:{:02}:00 -0400] \"GET /\" 200 1\n",
                t / 60,
                t % 60
            )
        };
        let forward: String = (0..200).map(line).collect();
        let log = AccessLog::from_bytes(forward.as_bytes());
        assert_eq!(log.stats.order_warning(), None);
        let reversed: String = (0..200).rev().map(line).collect();
        let log = AccessLog::from_bytes(reversed.as_bytes());
        let w = log
            .stats
            .order_warning()
            .expect("a reversed log is warned about");
        assert!(w.contains("199 of 200"), "{w}");
        // One late line a few seconds back (logged at its end): no warning.
        let mut nearly = forward.clone();
        nearly.push_str("h - - [29/Aug/1995:03:18:55 -0400] \"GET /\" 200 1\n");
        assert_eq!(
            AccessLog::from_bytes(nearly.as_bytes())
                .stats
                .order_warning(),
            None
        );
    }

    #[test]
    fn reader_counts_and_interns() {
        let text = b"a - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 200 10\n\
junk\n\
b - - [29/Aug/1995:23:53:20 -0400] \"GET /x HTTP/1.0\" 304 0\n\
a - - [29/Aug/1995:23:53:30 -0400] \"GET /y\" 200 -";
        let log = AccessLog::from_bytes(text);
        assert_eq!(log.stats.lines, 4);
        assert_eq!(log.stats.parsed, 3);
        assert_eq!(log.stats.skipped, 1);
        assert_eq!(log.stats.skipped_for(SkipReason::MissingDate), 1);
        assert_eq!(log.stats.out_of_order, 1);
        assert_eq!(log.stats.bytes_missing, 1);
        assert_eq!(log.stats.no_version, 1);
        assert_eq!(log.urls.len(), 2);
        assert_eq!(log.hosts.len(), 2);
        assert_eq!(log.requests[0].url, log.requests[1].url);
    }

    #[test]
    fn reads_gzip_by_magic() {
        use flate2::{write::GzEncoder, Compression};
        use std::io::Write;
        let text = b"a - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 200 10\n".repeat(3);
        let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
        enc.write_all(&text).unwrap();
        let gz = enc.finish().unwrap();
        let log = AccessLog::from_bytes(&gz);
        assert!(log.stats.gzip);
        assert_eq!(log.stats.parsed, 3);
    }

    #[test]
    fn over_long_line_is_skipped_and_bounded() {
        let mut text = b"a - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 200 10\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', 3 * READ_BUF_BYTES));
        text.extend_from_slice(
            b"\na - - [29/Aug/1995:23:53:25 -0400] \"GET /y HTTP/1.0\" 200 10\n",
        );
        let log = AccessLog::from_bytes(&text);
        assert_eq!(log.stats.parsed, 2);
        assert_eq!(log.stats.skipped_for(SkipReason::TooLong), 1);
        assert_eq!(log.stats.lines, 3);
    }
}
