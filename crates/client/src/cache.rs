//! The robot's persistent cache: bodies and validators.
//!
//! Paper 001 ("After Initial Tuning Tests") used libwww's persistent cache,
//! whose two files per object (headers, body) on disk became a bottleneck,
//! so they ran it on a memory file system. Here an entry is one file holding
//! a one-line JSON header and the body, written atomically (temporary file in
//! the same directory, then rename) and checked when read (magic, length,
//! SHA-256): a torn or edited entry is reported and ignored, never served.
//! The fetch writes entries after its last response, so disk time never
//! delays a request on the wire.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::error::FetchError;

/// A cache entry that cannot be used; the fetch goes on without it and
/// reports this as a warning.
#[derive(Debug, thiserror::Error)]
pub enum CacheWarning {
    #[error("cache entry {} unreadable: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ignoring corrupt cache entry {} for {url}: {why}", .path.display())]
    Corrupt {
        path: PathBuf,
        url: String,
        why: Corruption,
    },
}

/// What is wrong with a corrupt entry.
#[derive(Debug, thiserror::Error)]
pub enum Corruption {
    #[error("bad magic")]
    BadMagic,
    #[error("no header line")]
    NoHeaderLine,
    #[error("bad header: {0}")]
    BadHeader(#[from] serde_json::Error),
    #[error("entry is for {0}")]
    OtherUrl(String),
    #[error("body is {got} bytes, header says {header}")]
    BodyLength { got: u64, header: u64 },
    #[error("body SHA-256 mismatch")]
    Sha256Mismatch,
}

const MAGIC: &[u8] = b"PAGEWIRE-CACHE 1\n";

/// The header line is at most 64 KiB (validators and URL are short; a
/// longer line means the file is not ours).
const MAX_META_BYTES: usize = 64 * 1024;

/// Cached objects larger than this are not stored (the robot keeps bodies in
/// memory until the fetch ends). 256 MiB is far above any page object.
pub const MAX_ENTRY_BODY_BYTES: usize = 256 << 20;

/// What is known about a cached object besides its body.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntryMeta {
    pub url: String,
    pub status: u16,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub content_type: Option<String>,
    pub body_len: u64,
    pub body_sha256: String,
    /// Stored because of a prefetch hint, not because a page needed it yet.
    #[serde(default)]
    pub prefetched: bool,
}

/// A verified cache entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub meta: EntryMeta,
    pub body: Bytes,
}

/// A cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
    stale_removed: usize,
}

/// Temporary files of `put` start with this (tempfile's default prefix).
const TMP_PREFIX: &str = ".tmp";

/// A temporary file older than this is an interrupted write (a robot killed
/// between create and rename): entries are written in well under a second,
/// so a minute spares only writes of fetches running right now.
pub const STALE_TMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// SHA-256 of `data` in lower-case hex.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

impl Cache {
    /// Opens (creating if needed) a cache directory.
    pub fn open(dir: &Path) -> Result<Cache, FetchError> {
        fs::create_dir_all(dir).map_err(|source| FetchError::Io {
            what: format!("cannot create cache directory {}", dir.display()),
            source,
        })?;
        let stale_removed = remove_stale_tmp(dir, STALE_TMP_AGE);
        Ok(Cache {
            dir: dir.to_path_buf(),
            stale_removed,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Temporary files of interrupted writes removed when the cache opened.
    pub fn stale_removed(&self) -> usize {
        self.stale_removed
    }

    /// The file of `url`'s entry: named by the URL's hash, so any URL maps
    /// to a safe, fixed-length file name.
    pub fn path_of(&self, url: &str) -> PathBuf {
        self.dir
            .join(format!("{}.entry", &sha256_hex(url.as_bytes())[..32]))
    }

    /// Reads `url`'s entry. `Ok(None)`: not cached. `Err(warning)`: an entry
    /// exists but is corrupt (and must be ignored).
    pub fn get(&self, url: &str) -> Result<Option<Entry>, CacheWarning> {
        let path = self.path_of(url);
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheWarning::Unreadable { path, source }),
        };
        Self::decode(url, &data)
            .map(Some)
            .map_err(|why| CacheWarning::Corrupt {
                path,
                url: url.to_string(),
                why,
            })
    }

    fn decode(url: &str, data: &[u8]) -> Result<Entry, Corruption> {
        let rest = data.strip_prefix(MAGIC).ok_or(Corruption::BadMagic)?;
        let nl = rest
            .iter()
            .take(MAX_META_BYTES)
            .position(|&b| b == b'\n')
            .ok_or(Corruption::NoHeaderLine)?;
        let meta: EntryMeta = serde_json::from_slice(&rest[..nl])?;
        let body = &rest[nl + 1..];
        if meta.url != url {
            return Err(Corruption::OtherUrl(meta.url));
        }
        if body.len() as u64 != meta.body_len {
            return Err(Corruption::BodyLength {
                got: body.len() as u64,
                header: meta.body_len,
            });
        }
        if sha256_hex(body) != meta.body_sha256 {
            return Err(Corruption::Sha256Mismatch);
        }
        Ok(Entry {
            meta,
            body: Bytes::copy_from_slice(body),
        })
    }

    /// Stores an entry atomically: readers see the old entry or the new one,
    /// never a mixture (rename(2) within one directory).
    pub fn put(&self, meta: &EntryMeta, body: &[u8]) -> Result<(), FetchError> {
        let io = |what: &str, source| FetchError::Io {
            what: format!("{what} cache entry for {}", meta.url),
            source,
        };
        let mut header = serde_json::to_vec(meta).expect("EntryMeta serializes");
        header.push(b'\n');
        let mut tmp =
            tempfile::NamedTempFile::new_in(&self.dir).map_err(|e| io("cannot create", e))?;
        tmp.write_all(MAGIC)
            .and_then(|_| tmp.write_all(&header))
            .and_then(|_| tmp.write_all(body))
            .map_err(|e| io("cannot write", e))?;
        tmp.persist(self.path_of(&meta.url))
            .map_err(|e| io("cannot rename", e.error))?;
        Ok(())
    }
}

/// Removes `.tmp*` files in `dir` last modified more than `age` ago (writes
/// cut short by a crash or kill -9; issue 18). Best effort: a file that
/// cannot be removed stays for the next time.
fn remove_stale_tmp(dir: &Path, age: std::time::Duration) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    let now = std::time::SystemTime::now();
    let mut n = 0;
    // Bounded by the directory's entries.
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            continue;
        }
        let Ok(md) = e.metadata() else { continue };
        let old = md
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d > age);
        if md.is_file() && old && fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(url: &str, body: &[u8]) -> EntryMeta {
        EntryMeta {
            url: url.into(),
            status: 200,
            etag: Some("\"abc\"".into()),
            last_modified: Some("Sat, 21 Nov 2026 05:00:00 GMT".into()),
            content_type: Some("image/gif".into()),
            body_len: body.len() as u64,
            body_sha256: sha256_hex(body),
            prefetched: false,
        }
    }

    #[test]
    fn round_trip_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        assert!(c.get("http://h/a").unwrap().is_none());
        c.put(&meta("http://h/a", b"one"), b"one").unwrap();
        let e = c.get("http://h/a").unwrap().unwrap();
        assert_eq!(&e.body[..], b"one");
        assert_eq!(e.meta.etag.as_deref(), Some("\"abc\""));
        c.put(&meta("http://h/a", b"two!"), b"two!").unwrap();
        assert_eq!(&c.get("http://h/a").unwrap().unwrap().body[..], b"two!");
        // No temporary files left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Issue 18: kill -9 between create and rename left `.tmp*` files
    /// forever. Stale ones go when the cache opens; fresh ones (a write in
    /// progress) and entries stay.
    #[test]
    fn stale_temporary_files_are_removed_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        c.put(&meta("http://h/a", b"one"), b"one").unwrap();
        let stale = dir.path().join(".tmpAbC123");
        let fresh = dir.path().join(".tmpXyZ789");
        fs::write(&stale, vec![0u8; 300_000]).unwrap();
        fs::write(&fresh, b"in progress").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let c = Cache::open(dir.path()).unwrap();
        assert_eq!(c.stale_removed(), 1);
        assert!(!stale.exists());
        assert!(fresh.exists());
        assert_eq!(&c.get("http://h/a").unwrap().unwrap().body[..], b"one");
    }

    #[test]
    fn corrupt_entries_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        c.put(&meta("http://h/a", b"hello"), b"hello").unwrap();
        let p = c.path_of("http://h/a");
        let good = fs::read(&p).unwrap();
        // Flipped body byte, truncated body, garbage, empty file.
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let cases: Vec<Vec<u8>> = vec![
            flipped,
            good[..good.len() - 2].to_vec(),
            b"garbage".to_vec(),
            Vec::new(),
        ];
        for bad in cases {
            fs::write(&p, &bad).unwrap();
            let err = c.get("http://h/a").unwrap_err();
            assert!(matches!(err, CacheWarning::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains("http://h/a"), "{err}");
        }
    }
}
