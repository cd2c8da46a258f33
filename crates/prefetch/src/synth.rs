//! Large synthetic logs for speed tests: time-shifted copies of a real log.
//!
//! Copy k of the source is the source with every timestamp moved forward by
//! k × (span + 1 s), where span is the source's last minus first time, so the
//! copies follow each other like consecutive days of the same server. Lines
//! the reader cannot parse are copied unchanged (they stay bad, and counted).
//! With `distinct_hosts`, copy k>0 renames host `h` to `h.cK` (a new client
//! population each "day"); by default the same hosts come back.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use memchr::memchr;

use crate::log::{date_zone_offset_s, format_date, parse_date, parse_line};

#[derive(Clone, Copy, Debug)]
pub struct SynthOptions {
    /// Total lines to write (the last copy is cut short).
    pub lines: u64,
    pub distinct_hosts: bool,
}

/// What was written.
#[derive(Clone, Copy, Debug, Default)]
pub struct SynthStats {
    pub lines: u64,
    pub copies: u64,
    pub shift_s: i64,
}

/// Write `opts.lines` lines made of time-shifted copies of `source` (the
/// whole text of a log) to `out`. `header` is written first as `#` comment
/// lines (the reader skips them as comments).
pub fn synth_log(
    source: &[u8],
    opts: SynthOptions,
    header: &str,
    out: &mut dyn Write,
) -> io::Result<SynthStats> {
    let lines: Vec<&[u8]> = source
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let times: Vec<i64> = lines
        .iter()
        .filter_map(|l| parse_line(l).ok().map(|p| p.time_s))
        .collect();
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "source log is empty",
        ));
    }
    let (min, max) = times
        .iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let shift_s = if times.is_empty() { 0 } else { max - min + 1 };
    for h in header.lines() {
        writeln!(out, "# {h}")?;
    }
    let mut stats = SynthStats {
        shift_s,
        ..SynthStats::default()
    };
    let mut copy = 0u64;
    'outer: loop {
        for line in &lines {
            if stats.lines >= opts.lines {
                break 'outer;
            }
            write_shifted(line, copy, shift_s, opts.distinct_hosts, out)?;
            stats.lines += 1;
        }
        copy += 1;
    }
    stats.copies = copy + u64::from(stats.lines % lines.len() as u64 != 0);
    Ok(stats)
}

fn write_shifted(
    line: &[u8],
    copy: u64,
    shift_s: i64,
    distinct_hosts: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let (Some(open), Some(close)) = (memchr(b'[', line), memchr(b']', line)) else {
        return writeln_bytes(out, line);
    };
    if close < open || copy == 0 && !distinct_hosts {
        return writeln_bytes(out, line);
    }
    let date = &line[open + 1..close];
    let Some(t) = parse_date(date).filter(|_| date.contains(&b'/')) else {
        return writeln_bytes(out, line);
    };
    let host_end = memchr(b' ', line).unwrap_or(0).min(open);
    out.write_all(&line[..host_end])?;
    if distinct_hosts && copy > 0 {
        write!(out, ".c{copy}")?;
    }
    out.write_all(&line[host_end..open + 1])?;
    let new_date = format_date(t + copy as i64 * shift_s, date_zone_offset_s(date));
    out.write_all(new_date.as_bytes())?;
    writeln_bytes(out, &line[close..])
}

fn writeln_bytes(out: &mut dyn Write, b: &[u8]) -> io::Result<()> {
    out.write_all(b)?;
    out.write_all(b"\n")
}

/// A gzip writer for synthetic logs (fast compression: these files are
/// scratch data for benchmarks).
pub fn gzip_writer<W: Write>(w: W) -> flate2::write::GzEncoder<W> {
    flate2::write::GzEncoder::new(w, flate2::Compression::fast())
}

/// Why [`synth_file`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("opening {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("decompressing the source log")]
    Decompress(#[source] io::Error),
    #[error("creating {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// `pagewire prefetch synth-log`: reads the log at `source` (plain or gzip,
/// by magic bytes), writes `opts.lines` lines to `out` (gzip when its name
/// ends in `.gz`) after a `#` header that says what made it (`made_by`: tool
/// and command line) and how.
pub fn synth_file(
    source: &Path,
    out: &Path,
    opts: SynthOptions,
    made_by: &str,
) -> Result<SynthStats, SynthError> {
    let mut raw = Vec::new();
    File::open(source)
        .map_err(|e| SynthError::Open {
            path: source.to_path_buf(),
            source: e,
        })?
        .read_to_end(&mut raw)?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut text = Vec::new();
        gunzip(&raw, &mut text).map_err(SynthError::Decompress)?;
        text
    } else {
        raw
    };
    let header = format!(
        "made by: {made_by}\nsource: {} ({} bytes of text)\ntime-shifted copies of the source, each moved forward by its time span + 1 s{}",
        source.display(),
        text.len(),
        if opts.distinct_hosts {
            "; copy K renames host H to H.cK"
        } else {
            "; the same hosts return in every copy"
        }
    );
    let file = File::create(out).map_err(|e| SynthError::Create {
        path: out.to_path_buf(),
        source: e,
    })?;
    let stats = if out.extension().is_some_and(|e| e == "gz") {
        let mut enc = gzip_writer(BufWriter::new(file));
        let s = synth_log(&text, opts, &header, &mut enc)?;
        enc.finish()?.flush()?;
        s
    } else {
        let mut w = BufWriter::new(file);
        let s = synth_log(&text, opts, &header, &mut w)?;
        w.flush()?;
        s
    };
    Ok(stats)
}

/// Decompress a whole gzip stream (all members) into `out`.
pub fn gunzip(raw: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
    flate2::read::MultiGzDecoder::new(raw).read_to_end(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::AccessLog;

    #[test]
    fn copies_are_shifted_and_reparse() {
        let src = b"a - - [29/Aug/1995:23:53:25 -0400] \"GET /x HTTP/1.0\" 200 10\n\
junk line\n\
b - - [30/Aug/1995:23:53:25 -0400] \"GET /y HTTP/1.0\" 200 10\n";
        let mut out = Vec::new();
        let st = synth_log(
            src,
            SynthOptions {
                lines: 7,
                distinct_hosts: true,
            },
            "made by a test",
            &mut out,
        )
        .unwrap();
        assert_eq!(st.lines, 7);
        assert_eq!(st.shift_s, 86_401);
        assert_eq!(st.copies, 3);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("# made by a test\n"));
        assert!(text.contains("a.c1 - - [30/Aug/1995:23:53:26 -0400]"));
        let log = AccessLog::from_bytes(&out);
        assert_eq!(log.stats.lines, 8);
        assert_eq!(log.stats.parsed, 5);
        assert_eq!(log.stats.skipped, 3); // header + 2 junk copies
        assert_eq!(log.stats.out_of_order, 0);
        assert_eq!(log.hosts.len(), 5);
    }
}
