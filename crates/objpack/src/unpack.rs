//! Unpacking into a directory, file by file as bytes arrive.
//!
//! Each file is written to a hidden temporary name beside its final one and
//! renamed when its last byte is written, so a reader of the directory never
//! sees half a file. Names are checked by the [`Reader`]; on top of that no
//! path component under the output directory may be a symbolic link (a
//! planted `images -> /etc` cannot redirect a write).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use crate::{Entry, Error, Event, Limits, Reader, Step};

/// Read size: the reader never holds more than this plus the table.
pub const READ_CHUNK_BYTES: usize = 64 << 10;

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
}

struct Open {
    file: File,
    tmp: PathBuf,
    dest: PathBuf,
}

/// Writes files of a package under one directory as their events arrive.
pub struct DirSink {
    out: PathBuf,
    open: Option<Open>,
}

impl DirSink {
    /// Creates `out` if needed.
    pub fn new(out: &Path) -> io::Result<DirSink> {
        fs::create_dir_all(out)?;
        Ok(DirSink {
            out: out.to_path_buf(),
            open: None,
        })
    }

    /// Creates the parent directories of `name` (refusing symlinks on the
    /// way) and opens its temporary file.
    pub fn start(&mut self, name: &str) -> io::Result<()> {
        self.abort();
        let mut dir = self.out.clone();
        let mut parts: Vec<&str> = name.split('/').collect();
        let base = parts.pop().unwrap_or(name);
        for part in parts {
            dir.push(part);
            match fs::symlink_metadata(&dir) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(io::Error::other(format!(
                        "{} is a symbolic link",
                        dir.display()
                    )))
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(io::Error::other(format!(
                        "{} is not a directory",
                        dir.display()
                    )))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&dir)?,
                Err(e) => return Err(e),
            }
        }
        let tmp = dir.join(format!(".{base}.objp-part"));
        let file = File::create(&tmp)?;
        self.open = Some(Open {
            file,
            tmp,
            dest: dir.join(base),
        });
        Ok(())
    }

    pub fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match &mut self.open {
            Some(o) => o.file.write_all(bytes),
            None => Err(io::Error::other("no file open")),
        }
    }

    /// Closes the current file, sets its mtime to the package's
    /// Last-Modified, and renames it to its final name.
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
        if let Err(e) = fs::rename(&o.tmp, &o.dest) {
            let _ = fs::remove_file(&o.tmp);
            return Err(e);
        }
        Ok(o.dest)
    }

    /// Removes the temporary file of an incomplete file, if one is open.
    pub fn abort(&mut self) {
        if let Some(o) = self.open.take() {
            drop(o.file);
            let _ = fs::remove_file(&o.tmp);
        }
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
