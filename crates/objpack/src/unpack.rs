//! Unpacking into a directory, file by file as bytes arrive.
//!
//! Each file is written to a hidden temporary name beside its final one and
//! renamed when its last byte is written, so a reader of the directory never
//! sees half a file. Names are checked by the [`Reader`] (no segment may use
//! the temporary-name scheme, [`TEMP_PREFIX`]). Every path is resolved
//! relative to directory descriptors opened once, one component at a time,
//! with `O_NOFOLLOW`, and temporary files are created with `O_CREAT |
//! O_EXCL | O_NOFOLLOW`: a symbolic link planted anywhere under the output
//! directory (`images -> /etc`, or at a temporary name) is refused, never
//! followed, so nothing is written outside it. The temporary
//! name is short and independent of the file's name, so every name a file
//! system allows (255-byte segments) unpacks.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use rustix::fs::{AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::{Entry, Error, Event, Limits, Reader, Step, TEMP_PREFIX};

/// Read size: the reader never holds more than this plus the table.
pub const READ_CHUNK_BYTES: usize = 64 << 10;

/// Temporary names tried before giving up (each taken one was left by
/// something else: a crashed unpack or a planted file).
const TEMP_ATTEMPTS: u32 = 64;

/// Why unpacking stopped.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("{0}")]
    Format(#[from] Error),
    #[error("writing {name:?}: {source}")]
    Write { name: String, source: io::Error },
    #[error("reading the package: {0}")]
    Read(io::Error),
}

impl UnpackError {
    /// The file that was incomplete or could not be written, if any.
    pub fn file(&self) -> Option<&str> {
        match self {
            UnpackError::Format(e) => e.file(),
            UnpackError::Write { name, .. } => Some(name),
            UnpackError::Read(_) => None,
        }
    }

    /// The file left incomplete: the package ended inside it. Errors in
    /// the table (a duplicate, a bad name) leave no file incomplete.
    pub fn incomplete_file(&self) -> Option<&str> {
        match self {
            UnpackError::Format(Error::Truncated { name, .. }) => Some(name),
            _ => None,
        }
    }
}

struct Open {
    file: File,
    /// The directory the file is in.
    dir: OwnedFd,
    tmp: String,
    base: String,
    dest: PathBuf,
}

/// Writes files of a package under one directory as their events arrive.
pub struct DirSink {
    out: PathBuf,
    root: OwnedFd,
    open: Option<Open>,
    seq: u64,
}

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

fn open_dir(at: impl AsFd, name: &str) -> Result<OwnedFd, Errno> {
    rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

impl DirSink {
    /// Creates `out` if needed and opens it.
    pub fn new(out: &Path) -> io::Result<DirSink> {
        fs::create_dir_all(out)?;
        // `out` itself is the caller's choice and may be a link.
        let root = rustix::fs::openat(
            CWD,
            out,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno_io)?;
        Ok(DirSink {
            out: out.to_path_buf(),
            root,
            open: None,
            seq: 0,
        })
    }

    /// Creates the parent directories of `name` (refusing symlinks on the
    /// way) and creates its temporary file (never through a link).
    pub fn start(&mut self, name: &str) -> io::Result<()> {
        self.abort();
        let mut path = self.out.clone();
        let mut parts: Vec<&str> = name.split('/').collect();
        let base = parts.pop().unwrap_or(name);
        let mut dir = self.root.try_clone()?;
        for part in parts {
            path.push(part);
            let next = match open_dir(&dir, part) {
                Ok(d) => d,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(errno_io(e)),
                    }
                    open_dir(&dir, part).map_err(|e| refused(&dir, part, &path, e))?
                }
                Err(e) => return Err(refused(&dir, part, &path, e)),
            };
            dir = next;
        }
        let pid = std::process::id();
        // Bounded: TEMP_ATTEMPTS names.
        for _ in 0..TEMP_ATTEMPTS {
            self.seq += 1;
            let tmp = format!("{TEMP_PREFIX}.{pid}.{}", self.seq);
            match rustix::fs::openat(
                &dir,
                tmp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                // The umask applies, as for any file a program creates.
                Mode::from_raw_mode(0o666),
            ) {
                Ok(fd) => {
                    self.open = Some(Open {
                        file: File::from(fd),
                        dir,
                        tmp,
                        base: base.to_string(),
                        dest: path.join(base),
                    });
                    return Ok(());
                }
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(errno_io(e)),
            }
        }
        Err(io::Error::other(format!(
            "{TEMP_ATTEMPTS} temporary names in {} are taken",
            path.display()
        )))
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.open {
            Some(o) => o.file.write_all(bytes),
            None => Err(io::Error::other("no file open")),
        }
    }

    /// Closes the current file, sets its mtime to the package's
    /// Last-Modified, and renames it to its final name (a link already at
    /// that name is replaced, not followed).
    pub fn finish(&mut self, entry: &Entry) -> io::Result<PathBuf> {
        let o = self
            .open
            .take()
            .ok_or_else(|| io::Error::other("no file open"))?;
        if let Some(lm) = entry.attrs.last_modified {
            // Best effort: a file system without mtimes loses nothing else.
            let _ = o
                .file
                .set_modified(UNIX_EPOCH + Duration::from_secs(lm.min(1 << 40)));
        }
        drop(o.file);
        if let Err(e) = rustix::fs::renameat(&o.dir, o.tmp.as_str(), &o.dir, o.base.as_str()) {
            let _ = rustix::fs::unlinkat(&o.dir, o.tmp.as_str(), AtFlags::empty());
            return Err(errno_io(e));
        }
        Ok(o.dest)
    }

    /// Removes the temporary file of an incomplete file, if one is open.
    pub fn abort(&mut self) {
        if let Some(o) = self.open.take() {
            drop(o.file);
            let _ = rustix::fs::unlinkat(&o.dir, o.tmp.as_str(), AtFlags::empty());
        }
    }
}

/// A path component that could not be opened as a directory.
fn refused(dir: &OwnedFd, part: &str, path: &Path, e: Errno) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR => {
            let link = rustix::fs::statat(dir, part, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
            });
            let what = if link {
                "is a symbolic link"
            } else {
                "is not a directory"
            };
            io::Error::other(format!("{} {what}", path.display()))
        }
        e => io::Error::new(
            errno_io(e).kind(),
            format!("{}: {}", path.display(), errno_io(e)),
        ),
    }
}

impl Drop for DirSink {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Unpacks the package read from `input` into `out`; `on_file` is called
/// as each file is complete under its final name. Files completed before an
/// error stay; the incomplete one's temporary file is removed.
pub fn unpack_to_dir(
    mut input: impl Read,
    out: &Path,
    limits: Limits,
    mut on_file: impl FnMut(&Entry, &Path),
) -> Result<usize, UnpackError> {
    let mut sink = DirSink::new(out).map_err(|source| UnpackError::Write {
        name: out.display().to_string(),
        source,
    })?;
    let mut reader = Reader::new(limits);
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut done = 0;
    loop {
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(UnpackError::Read(e)),
        };
        let mut rest = &buf[..n];
        loop {
            let Step { consumed, event } = reader.advance(rest)?;
            rest = &rest[consumed..];
            let Some(event) = event else { break };
            let name = |i: usize| reader.entries()[i].name.clone();
            let werr = |i: usize, source| UnpackError::Write {
                name: name(i),
                source,
            };
            match event {
                Event::Table | Event::End => {}
                Event::FileStart { index } => {
                    sink.start(&reader.entries()[index].name)
                        .map_err(|e| werr(index, e))?;
                }
                Event::Data { index, bytes } => sink.write(bytes).map_err(|e| werr(index, e))?,
                Event::FileEnd { index } => {
                    let entry = &reader.entries()[index];
                    let path = sink.finish(entry).map_err(|e| werr(index, e))?;
                    on_file(entry, &path);
                    done += 1;
                }
            }
        }
        if n == 0 {
            reader.finish()?;
            return Ok(done);
        }
    }
}
