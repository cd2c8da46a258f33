//! The streaming, sans-I/O package reader (the paper's Figure 3).
//!
//! Bytes are pushed in with [`Reader::advance`], which consumes what it can
//! and returns at most one [`Event`]; file data is handed out as slices of
//! the caller's input, never copied. The only buffer is the header plus the
//! object information field (bounded by [`Limits::max_info_bytes`], which the
//! CRC-32 must cover before any name is trusted), so memory does not grow
//! with the package's size.

use crate::writer::check_table;
use crate::{
    check_name, crc32, Attributes, Entry, Error, Limits, ATTR_BYTES, HEADER_BYTES, MAGIC,
    SIZE_BYTES, VERSION,
};

/// What the bytes consumed so far completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// The object package management table is complete and checked; it is
    /// [`Reader::entries`].
    Table,
    /// File `index` begins (also for an empty file).
    FileStart { index: usize },
    /// The next bytes of file `index`; never empty.
    Data { index: usize, bytes: &'a [u8] },
    /// File `index` has all its bytes.
    FileEnd { index: usize },
    /// The last file ended; any further byte is an error.
    End,
}

/// One call's result: how many input bytes were consumed and the event they
/// completed. `event: None` means every byte was consumed and more are needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step<'a> {
    pub consumed: usize,
    pub event: Option<Event<'a>>,
}

#[derive(Debug)]
enum State {
    Header,
    Info {
        len: usize,
        crc: u32,
    },
    /// The file entry pointer (`index`) and local file pointer (`got`).
    File {
        index: usize,
        got: u64,
        started: bool,
    },
    Done {
        ended: bool,
    },
    Failed(Error),
}

/// Decoder for one package.
#[derive(Debug)]
pub struct Reader {
    limits: Limits,
    state: State,
    buf: Vec<u8>,
    entries: Vec<Entry>,
    consumed: u64,
}

impl Reader {
    pub fn new(limits: Limits) -> Reader {
        Reader {
            limits,
            state: State::Header,
            buf: Vec::with_capacity(HEADER_BYTES),
            entries: Vec::new(),
            consumed: 0,
        }
    }

    /// The management table; empty until [`Event::Table`].
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.consumed
    }

    /// True once [`Event::End`] was returned.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::Done { ended: true })
    }

    /// Consumes bytes from `input` up to the next event. Call again with
    /// `&input[step.consumed..]` until `event` is `None` (all consumed). A
    /// returned error is final: every later call returns it again.
    pub fn advance<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, Error> {
        let r = self.step(input);
        match &r {
            Ok(step) => self.consumed += step.consumed as u64,
            Err(e) => self.state = State::Failed(e.clone()),
        }
        r
    }

    /// Call at the end of input: `Ok` only if the package was complete and
    /// every event up to [`Event::End`] was taken (a caller that stopped
    /// calling `advance` early has not seen every file end). Otherwise the
    /// error names the file that was incomplete.
    pub fn finish(&self) -> Result<(), Error> {
        match &self.state {
            State::Done { ended: true } => Ok(()),
            State::Done { ended: false } => Err(Error::Undrained),
            State::Failed(e) => Err(e.clone()),
            State::Header | State::Info { .. } => Err(Error::TruncatedHeader),
            State::File { index, got, .. } => match self.entries.get(*index) {
                // Every byte arrived; events (a FileEnd, the End) not taken.
                None => Err(Error::Undrained),
                Some(e) if *got == e.size => Err(Error::Undrained),
                Some(e) => Err(Error::Truncated {
                    name: e.name.clone(),
                    got: *got,
                    size: e.size,
                }),
            },
        }
    }

    fn step<'a>(&mut self, input: &'a [u8]) -> Result<Step<'a>, Error> {
        let mut pos = 0;
        loop {
            let none = |pos| {
                Ok(Step {
                    consumed: pos,
                    event: None,
                })
            };
            let ev = |pos, e| {
                Ok(Step {
                    consumed: pos,
                    event: Some(e),
                })
            };
            match &mut self.state {
                State::Failed(e) => return Err(e.clone()),
                State::Header => {
                    let n = (HEADER_BYTES - self.buf.len()).min(input.len() - pos);
                    self.buf.extend_from_slice(&input[pos..pos + n]);
                    pos += n;
                    if self.buf.len() < HEADER_BYTES {
                        return none(pos);
                    }
                    let (len, crc) = self.parse_header()?;
                    self.buf.clear();
                    self.buf.reserve_exact(len);
                    self.state = State::Info { len, crc };
                }
                State::Info { len, crc } => {
                    let (len, crc) = (*len, *crc);
                    let n = (len - self.buf.len()).min(input.len() - pos);
                    self.buf.extend_from_slice(&input[pos..pos + n]);
                    pos += n;
                    if self.buf.len() < len {
                        return none(pos);
                    }
                    let computed = crc32(&self.buf);
                    if computed != crc {
                        return Err(Error::BadChecksum {
                            expected: crc,
                            computed,
                        });
                    }
                    self.entries = parse_info(&self.buf, &self.limits)?;
                    self.buf = Vec::new();
                    self.state = State::File {
                        index: 0,
                        got: 0,
                        started: false,
                    };
                    return ev(pos, Event::Table);
                }
                State::File {
                    index,
                    got,
                    started,
                } => {
                    let Some(entry) = self.entries.get(*index) else {
                        self.state = State::Done { ended: false };
                        continue;
                    };
                    let i = *index;
                    if !*started {
                        *started = true;
                        return ev(pos, Event::FileStart { index: i });
                    }
                    if *got == entry.size {
                        *index += 1;
                        *got = 0;
                        *started = false;
                        return ev(pos, Event::FileEnd { index: i });
                    }
                    if pos == input.len() {
                        return none(pos);
                    }
                    let left = entry.size - *got;
                    let n = usize::try_from(left)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - pos);
                    *got += n as u64;
                    return ev(
                        pos + n,
                        Event::Data {
                            index: i,
                            bytes: &input[pos..pos + n],
                        },
                    );
                }
                State::Done { ended } => {
                    if !*ended {
                        *ended = true;
                        return ev(pos, Event::End);
                    }
                    if pos < input.len() {
                        return Err(Error::TrailingData(input.len() - pos));
                    }
                    return none(pos);
                }
            }
        }
    }

    fn parse_header(&self) -> Result<(usize, u32), Error> {
        let h = &self.buf;
        if h[0..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        let be16 = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
        let be32 = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let version = be16(4);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        let flags = be16(6);
        if flags != 0 {
            return Err(Error::UnknownFlags(flags));
        }
        let len = be32(8);
        if len > self.limits.max_info_bytes {
            return Err(Error::InfoTooLarge {
                got: len,
                limit: self.limits.max_info_bytes,
            });
        }
        if len < 4 {
            return Err(Error::BadInfo("shorter than its file count"));
        }
        Ok((len as usize, be32(12)))
    }
}

/// Parses a CRC-checked object information field into the table.
fn parse_info(info: &[u8], limits: &Limits) -> Result<Vec<Entry>, Error> {
    let count = u32::from_be_bytes(info[0..4].try_into().expect("length checked"));
    if count > limits.max_files {
        return Err(Error::TooManyFiles {
            got: count,
            limit: limits.max_files,
        });
    }
    let n = count as usize;
    // Each file needs at least a 1-byte name, its NUL, a size and a record:
    // refuse an impossible count before allocating for it.
    let fixed = n * (SIZE_BYTES + ATTR_BYTES);
    if info.len() < 4 + n * 2 + fixed {
        return Err(Error::BadInfo("too short for its file count"));
    }
    let mut at = 4;
    let names_end = info.len() - fixed;
    let mut names = Vec::with_capacity(n);
    for index in 0..n {
        let rest = &info[at..names_end];
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(Error::BadInfo("a file name has no NUL terminator"))?;
        let name =
            check_name(&rest[..len], limits.max_name_bytes).map_err(|reason| Error::BadName {
                index: index as u32,
                reason,
            })?;
        names.push(name.to_string());
        at += len + 1;
    }
    if at != names_end {
        return Err(Error::BadInfo("bytes between the names and the sizes"));
    }
    let mut entries = Vec::with_capacity(n);
    for (i, name) in names.into_iter().enumerate() {
        let s = names_end + i * SIZE_BYTES;
        let size = u64::from_be_bytes(info[s..s + SIZE_BYTES].try_into().expect("8 bytes"));
        let a = names_end + n * SIZE_BYTES + i * ATTR_BYTES;
        let attrs = Attributes::decode(&info[a..a + ATTR_BYTES]).map_err(|reason| {
            Error::BadAttributes {
                name: name.clone(),
                reason,
            }
        })?;
        entries.push(Entry { name, size, attrs });
    }
    check_table(&entries, limits)?;
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Manifest;

    fn package(files: &[(&str, &[u8])]) -> Vec<u8> {
        let entries = files
            .iter()
            .map(|(n, b)| Entry {
                name: n.to_string(),
                size: b.len() as u64,
                attrs: Attributes::default(),
            })
            .collect();
        let m = Manifest::new(entries, &Limits::default()).unwrap();
        m.assemble(files.iter().map(|(_, b)| *b))
    }

    /// Every event of `pkg` fed in `piece`-byte reads, data joined per file.
    fn events(pkg: &[u8], piece: usize) -> (Vec<String>, Result<(), Error>) {
        let mut r = Reader::new(Limits::default());
        let mut log: Vec<String> = Vec::new();
        for chunk in pkg.chunks(piece.max(1)) {
            let mut input = chunk;
            loop {
                match r.advance(input) {
                    Ok(Step { event: None, .. }) => break,
                    Ok(Step {
                        consumed,
                        event: Some(e),
                    }) => {
                        input = &input[consumed..];
                        match e {
                            Event::Data { index, bytes } => match log.last_mut() {
                                Some(s) if s.starts_with(&format!("data {index} ")) => {
                                    s.push_str(&String::from_utf8_lossy(bytes))
                                }
                                _ => log.push(format!(
                                    "data {index} {}",
                                    String::from_utf8_lossy(bytes)
                                )),
                            },
                            e => log.push(format!("{e:?}")),
                        }
                    }
                    Err(e) => return (log, Err(e)),
                }
            }
        }
        // Events that need no bytes (the end) come out on an empty call.
        while let Ok(Step { event: Some(e), .. }) = r.advance(&[]) {
            log.push(format!("{e:?}"));
        }
        (log, r.finish())
    }

    #[test]
    fn events_in_order_with_empty_files() {
        let pkg = package(&[("a.html", b"<p>"), ("e", b""), ("d/b.gif", b"GIF")]);
        for piece in [1, 2, 7, 1000] {
            let (log, end) = events(&pkg, piece);
            assert_eq!(end, Ok(()));
            assert_eq!(
                log,
                [
                    "Table",
                    "FileStart { index: 0 }",
                    "data 0 <p>",
                    "FileEnd { index: 0 }",
                    "FileStart { index: 1 }",
                    "FileEnd { index: 1 }",
                    "FileStart { index: 2 }",
                    "data 2 GIF",
                    "FileEnd { index: 2 }",
                    "End"
                ],
                "piece {piece}"
            );
        }
    }

    #[test]
    fn truncation_names_the_incomplete_file() {
        let pkg = package(&[("a", b"12345"), ("b/c", b"67890")]);
        let (_, end) = events(&pkg[..pkg.len() - 2], 3);
        assert_eq!(
            end,
            Err(Error::Truncated {
                name: "b/c".into(),
                got: 3,
                size: 5
            })
        );
        // Cut exactly between files: the second is named, with 0 bytes.
        let (_, end) = events(&pkg[..pkg.len() - 5], 4);
        assert_eq!(end.unwrap_err().file(), Some("b/c"));
        let (_, end) = events(&pkg[..10], 4);
        assert_eq!(end, Err(Error::TruncatedHeader));
    }

    #[test]
    fn corrupt_headers_and_tables_are_refused() {
        let pkg = package(&[("a", b"x")]);
        let mut bad = pkg.clone();
        bad[0] = b'X';
        assert_eq!(events(&bad, 100).1, Err(Error::BadMagic));
        let mut bad = pkg.clone();
        bad[5] = 2;
        assert_eq!(events(&bad, 100).1, Err(Error::UnsupportedVersion(2)));
        let mut bad = pkg.clone();
        bad[HEADER_BYTES + 4] = b'.'; // name "a" -> "." changes the CRC
        assert!(matches!(
            events(&bad, 100).1,
            Err(Error::BadChecksum { .. })
        ));
        let mut trailing = pkg.clone();
        trailing.push(0);
        assert_eq!(events(&trailing, 100).1, Err(Error::TrailingData(1)));
    }

    /// A forged table with a valid CRC still cannot name `../x`.
    #[test]
    fn forged_escaping_name_with_valid_crc_is_refused() {
        let mut pkg = package(&[("ab/x", b"1")]);
        let at = HEADER_BYTES + 4;
        pkg[at..at + 3].copy_from_slice(b"../");
        let info_len = u32::from_be_bytes(pkg[8..12].try_into().unwrap()) as usize;
        let crc = crc32(&pkg[HEADER_BYTES..HEADER_BYTES + info_len]);
        pkg[12..16].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            events(&pkg, 100).1,
            Err(Error::BadName { index: 0, .. })
        ));
    }

    #[test]
    fn huge_declared_sizes_and_counts_are_refused_before_allocating() {
        let limits = Limits::default();
        let mut h = Vec::new();
        h.extend_from_slice(&MAGIC);
        h.extend_from_slice(&VERSION.to_be_bytes());
        h.extend_from_slice(&[0, 0]);
        h.extend_from_slice(&u32::MAX.to_be_bytes());
        h.extend_from_slice(&[0; 4]);
        assert!(matches!(events(&h, 100).1, Err(Error::InfoTooLarge { .. })));
        // count 9999 in a 4-byte table.
        let info = 9999u32.to_be_bytes();
        let mut h = h[..8].to_vec();
        h.extend_from_slice(&4u32.to_be_bytes());
        h.extend_from_slice(&crc32(&info).to_be_bytes());
        h.extend_from_slice(&info);
        assert!(matches!(events(&h, 100).1, Err(Error::BadInfo(_))));
        let e = Entry {
            name: "big".into(),
            size: limits.max_file_bytes + 1,
            attrs: Attributes::default(),
        };
        assert!(matches!(
            Manifest::new(vec![e], &limits),
            Err(Error::FileTooLarge { .. })
        ));
    }

    #[test]
    fn duplicate_and_conflicting_names_are_refused() {
        let e = |n: &str| Entry {
            name: n.into(),
            size: 0,
            attrs: Attributes::default(),
        };
        let l = Limits::default();
        assert!(matches!(
            Manifest::new(vec![e("a"), e("a")], &l),
            Err(Error::DuplicateName { .. })
        ));
        assert!(matches!(
            Manifest::new(vec![e("a/b/c"), e("a/b")], &l),
            Err(Error::NameConflict { .. })
        ));
    }
}
