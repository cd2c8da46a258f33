//! The robot's persistent cache: bodies and validators.
//!
//! Paper 001 ("After Initial Tuning Tests") used libwww's persistent cache,
//! whose two files per object (headers, body) on disk became a bottleneck,
//! so they ran it on a memory file system. Here too an entry is two files,
//! named by the URL's hash: `<key>.body` (the body as received, decoded)
//! and `<key>.meta` (a magic line and a one-line JSON header with the
//! validators and the body's length and SHA-256). Each is written under a
//! temporary name in the same directory, then renamed, body first: the
//! meta file is the commit point. A 304 that brings new validators
//! rewrites the meta file only (an all-304 revalidation must not rewrite
//! every body). Every read checks the body against the meta file
//! (length, SHA-256), so whatever a crash or kill -9 leaves — a body
//! without meta, meta without body, a new body under old meta — is
//! discarded or reported, never served.
//!
//! Bodies that are inflated as they arrive can be spooled straight into a
//! temporary file of the cache (`Cache::spool`), so a large or hostile
//! body never sits in memory whole. Other entries are written after the
//! fetch's last response, so disk time never delays a request on the wire.

use std::collections::HashMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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

const MAGIC: &[u8] = b"PAGEWIRE-CACHE 2\n";

/// The header line is at most 64 KiB (validators and URL are short; a
/// longer line means the file is not ours).
const MAX_META_BYTES: usize = 64 * 1024;

/// Cached objects larger than this are not stored from memory (the robot
/// keeps such bodies in memory until the fetch ends). 256 MiB is far above
/// any page object.
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
    /// Bytes written to entry files (meta and body) since `open`.
    written: Arc<AtomicU64>,
}

/// A body being written into a temporary file of the cache as it arrives
/// (`Cache::spool`); becomes an entry's body with `Cache::put_spooled`, or
/// is removed when dropped.
#[derive(Debug)]
pub struct Spool {
    file: BufWriter<tempfile::NamedTempFile>,
    len: u64,
}

impl Spool {
    pub fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.file.write_all(data)?;
        self.len += data.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads the whole spooled body back (for `--save` or a report that
    /// keeps bodies).
    pub fn read_back(&mut self) -> std::io::Result<Vec<u8>> {
        self.file.flush()?;
        fs::read(self.file.get_ref().path())
    }
}

/// Temporary files of `put` start with this (tempfile's default prefix).
const TMP_PREFIX: &str = ".tmp";

/// A temporary file older than this is an interrupted write (a robot killed
/// between create and rename): entries are written in well under a second,
/// so a minute spares only writes of fetches running right now. Bodies
/// without their meta file are removed at the same age.
pub const STALE_TMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

const BODY_EXT: &str = "body";
const META_EXT: &str = "meta";

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
        let stale_removed = remove_stale(dir, STALE_TMP_AGE);
        Ok(Cache {
            dir: dir.to_path_buf(),
            stale_removed,
            written: Arc::new(AtomicU64::new(0)),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Temporary files of interrupted writes (and bodies left without
    /// their meta file) removed when the cache opened.
    pub fn stale_removed(&self) -> usize {
        self.stale_removed
    }

    /// Bytes written to entry files since the cache was opened.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    fn key(url: &str) -> String {
        sha256_hex(url.as_bytes())[..32].to_string()
    }

    /// The body file of `url`'s entry: named by the URL's hash, so any URL
    /// maps to a safe, fixed-length file name.
    pub fn path_of(&self, url: &str) -> PathBuf {
        self.dir.join(format!("{}.{BODY_EXT}", Self::key(url)))
    }

    /// The meta file of `url`'s entry (validators, length and SHA-256 of
    /// the body).
    pub fn meta_path_of(&self, url: &str) -> PathBuf {
        self.dir.join(format!("{}.{META_EXT}", Self::key(url)))
    }

    /// Reads `url`'s entry. `Ok(None)`: not cached (also: a body without
    /// its meta file, or meta whose body is gone — both discarded).
    /// `Err(warning)`: an entry exists but is corrupt (and must be ignored).
    pub fn get(&self, url: &str) -> Result<Option<Entry>, CacheWarning> {
        let body_path = self.path_of(url);
        let checked = check_entry(
            url,
            self.meta_path_of(url),
            read_file(&self.meta_path_of(url)),
            body_path.clone(),
            || read_file(&body_path),
        );
        if let Checked::Orphan = checked {
            // Meta without body: what is left of an entry whose body was
            // removed; useless, so it goes too.
            let _ = fs::remove_file(self.meta_path_of(url));
        }
        checked.into_result()
    }

    /// Every entry file of the cache read into memory, for a fetch whose
    /// session reads no file ([`Snapshot::get`] gives what [`Cache::get`]
    /// would have given when the snapshot was taken). Temporary files are
    /// left out; a meta file without its body is removed, as [`Cache::get`]
    /// does. The driver takes it before the fetch's clock starts, so disk
    /// reads never delay a request. The robot's cache holds the objects of the pages fetched
    /// with it, so this is one page's worth for the papers' runs.
    pub fn snapshot(&self) -> Snapshot {
        let mut files: HashMap<String, Stored> = HashMap::new();
        let Ok(rd) = fs::read_dir(&self.dir) else {
            return Snapshot {
                stale_removed: self.stale_removed,
                ..Snapshot::default()
            };
        };
        // Bounded by the directory's entries.
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(TMP_PREFIX) {
                continue;
            }
            let is_entry_file = name
                .rsplit_once('.')
                .is_some_and(|(_, ext)| ext == BODY_EXT || ext == META_EXT);
            if !is_entry_file {
                continue;
            }
            let stored = match read_file(&e.path()) {
                Read::Missing => continue,
                Read::Data(d) => Stored::Data(d),
                Read::Failed(e) => Stored::Failed(e.kind(), e.to_string()),
            };
            files.insert(name.to_string(), stored);
        }
        // Meta without body: what is left of an entry whose body was
        // removed; useless, so it goes too (as `get` does).
        let orphans: Vec<String> = files
            .keys()
            .filter_map(|n| n.strip_suffix(&format!(".{META_EXT}")))
            .filter(|key| !files.contains_key(&format!("{key}.{BODY_EXT}")))
            .map(|key| format!("{key}.{META_EXT}"))
            .collect();
        for name in orphans {
            files.remove(&name);
            let _ = fs::remove_file(self.dir.join(&name));
        }
        Snapshot {
            dir: self.dir.clone(),
            stale_removed: self.stale_removed,
            files,
        }
    }

    /// Reads and checks `url`'s meta file only.
    pub fn get_meta(&self, url: &str) -> Result<Option<EntryMeta>, CacheWarning> {
        let path = self.meta_path_of(url);
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheWarning::Unreadable { path, source }),
        };
        Self::decode_meta(url, &data)
            .map(Some)
            .map_err(|why| CacheWarning::Corrupt {
                path,
                url: url.to_string(),
                why,
            })
    }

    fn decode_meta(url: &str, data: &[u8]) -> Result<EntryMeta, Corruption> {
        let rest = data.strip_prefix(MAGIC).ok_or(Corruption::BadMagic)?;
        let nl = rest
            .iter()
            .take(MAX_META_BYTES)
            .position(|&b| b == b'\n')
            .ok_or(Corruption::NoHeaderLine)?;
        if nl + 1 != rest.len() {
            return Err(Corruption::NoHeaderLine);
        }
        let meta: EntryMeta = serde_json::from_slice(&rest[..nl])?;
        if meta.url != url {
            return Err(Corruption::OtherUrl(meta.url));
        }
        Ok(meta)
    }

    fn io_err(meta: &EntryMeta, what: &str, source: std::io::Error) -> FetchError {
        FetchError::Io {
            what: format!("{what} cache entry for {}", meta.url),
            source,
        }
    }

    /// Stores an entry: the body file, then the meta file, each written
    /// under a temporary name and renamed (rename(2) within one directory).
    /// A reader sees the old entry, the new one, or a body that does not
    /// match its meta file (reported and ignored), never a wrong body.
    pub fn put(&self, meta: &EntryMeta, body: &[u8]) -> Result<(), FetchError> {
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| Self::io_err(meta, "cannot create", e))?;
        tmp.write_all(body)
            .map_err(|e| Self::io_err(meta, "cannot write", e))?;
        tmp.persist(self.path_of(&meta.url))
            .map_err(|e| Self::io_err(meta, "cannot rename", e.error))?;
        self.written.fetch_add(body.len() as u64, Ordering::Relaxed);
        self.put_meta(meta)
    }

    /// Rewrites the meta file only (a 304 with new validators: the body is
    /// the same, its length and SHA-256 unchanged).
    pub fn put_meta(&self, meta: &EntryMeta) -> Result<(), FetchError> {
        let mut data = MAGIC.to_vec();
        serde_json::to_writer(&mut data, meta).expect("EntryMeta serializes");
        data.push(b'\n');
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| Self::io_err(meta, "cannot create", e))?;
        tmp.write_all(&data)
            .map_err(|e| Self::io_err(meta, "cannot write", e))?;
        tmp.persist(self.meta_path_of(&meta.url))
            .map_err(|e| Self::io_err(meta, "cannot rename", e.error))?;
        self.written.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// A temporary file in the cache for a body written as it arrives.
    pub fn spool(&self) -> std::io::Result<Spool> {
        let f = tempfile::NamedTempFile::new_in(&self.dir)?;
        Ok(Spool {
            file: BufWriter::with_capacity(64 * 1024, f),
            len: 0,
        })
    }

    /// Makes a spooled body `meta`'s entry (rename, then the meta file).
    pub fn put_spooled(&self, meta: &EntryMeta, spool: Spool) -> Result<(), FetchError> {
        let len = spool.len;
        let tmp = spool
            .file
            .into_inner()
            .map_err(|e| Self::io_err(meta, "cannot write", e.into_error()))?;
        tmp.persist(self.path_of(&meta.url))
            .map_err(|e| Self::io_err(meta, "cannot rename", e.error))?;
        self.written.fetch_add(len, Ordering::Relaxed);
        self.put_meta(meta)
    }
}

/// One file of the cache as read.
enum Read {
    Missing,
    Data(Bytes),
    Failed(std::io::Error),
}

fn read_file(path: &Path) -> Read {
    match fs::read(path) {
        Ok(d) => Read::Data(Bytes::from(d)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Read::Missing,
        Err(e) => Read::Failed(e),
    }
}

/// What an entry's two files amount to.
enum Checked {
    Entry(Entry),
    Missing,
    /// Meta without body (removed by [`Cache::get`]).
    Orphan,
    Warning(CacheWarning),
}

impl Checked {
    fn into_result(self) -> Result<Option<Entry>, CacheWarning> {
        match self {
            Checked::Entry(e) => Ok(Some(e)),
            Checked::Missing | Checked::Orphan => Ok(None),
            Checked::Warning(w) => Err(w),
        }
    }
}

/// `url`'s entry from its meta file and (read only if the meta file is
/// sound) its body file: the checks of [`Cache::get`], without I/O of
/// their own.
fn check_entry(
    url: &str,
    meta_path: PathBuf,
    meta: Read,
    path: PathBuf,
    body: impl FnOnce() -> Read,
) -> Checked {
    let data = match meta {
        Read::Data(d) => d,
        Read::Missing => return Checked::Missing,
        Read::Failed(source) => {
            return Checked::Warning(CacheWarning::Unreadable {
                path: meta_path,
                source,
            })
        }
    };
    let meta = match Cache::decode_meta(url, &data) {
        Ok(m) => m,
        Err(why) => {
            return Checked::Warning(CacheWarning::Corrupt {
                path: meta_path,
                url: url.to_string(),
                why,
            })
        }
    };
    let body = match body() {
        Read::Data(d) => d,
        Read::Missing => return Checked::Orphan,
        Read::Failed(source) => return Checked::Warning(CacheWarning::Unreadable { path, source }),
    };
    let corrupt = |why| {
        Checked::Warning(CacheWarning::Corrupt {
            path: path.clone(),
            url: url.to_string(),
            why,
        })
    };
    if body.len() as u64 != meta.body_len {
        return corrupt(Corruption::BodyLength {
            got: body.len() as u64,
            header: meta.body_len,
        });
    }
    if sha256_hex(&body) != meta.body_sha256 {
        return corrupt(Corruption::Sha256Mismatch);
    }
    Checked::Entry(Entry { meta, body })
}

/// A file of a [`Snapshot`].
#[derive(Debug, Clone)]
enum Stored {
    Data(Bytes),
    Failed(std::io::ErrorKind, String),
}

impl Stored {
    fn read(&self) -> Read {
        match self {
            Stored::Data(d) => Read::Data(d.clone()),
            Stored::Failed(kind, msg) => Read::Failed(std::io::Error::new(*kind, msg.clone())),
        }
    }
}

/// The cache's entry files as they were when a fetch started, in memory
/// ([`Cache::snapshot`]): what the session looks up, so that it reads no
/// file. Entries written during the fetch are not in it (they are written
/// after its last response, or are the fetch's own objects).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    dir: PathBuf,
    /// [`Cache::stale_removed`] of the cache it was taken from.
    stale_removed: usize,
    /// File name (`<key>.meta`, `<key>.body`) -> content.
    files: HashMap<String, Stored>,
}

impl Snapshot {
    fn file(&self, name: String) -> Read {
        self.files.get(&name).map_or(Read::Missing, Stored::read)
    }

    /// What [`Cache::get`] gave for `url` when the snapshot was taken
    /// (without removing a meta file whose body is gone).
    pub fn get(&self, url: &str) -> Result<Option<Entry>, CacheWarning> {
        let key = Cache::key(url);
        let (meta, body) = (format!("{key}.{META_EXT}"), format!("{key}.{BODY_EXT}"));
        check_entry(
            url,
            self.dir.join(&meta),
            self.file(meta),
            self.dir.join(&body),
            || self.file(body),
        )
        .into_result()
    }

    /// Temporary files of interrupted writes removed when the cache opened.
    pub fn stale_removed(&self) -> usize {
        self.stale_removed
    }

    /// Entry files in the snapshot.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Removes, from `dir`, `.tmp*` files last modified more than `age` ago
/// (writes cut short by a crash or kill -9), body files as old
/// whose meta file is missing (a put cut between its two renames) and
/// entries of the earlier one-file format (`.entry`). Best effort: a file
/// that cannot be removed stays for the next time.
fn remove_stale(dir: &Path, age: std::time::Duration) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    let now = std::time::SystemTime::now();
    let mut n = 0;
    // Bounded by the directory's entries.
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let orphan_body = path.extension().is_some_and(|x| x == BODY_EXT)
            && !path.with_extension(META_EXT).exists();
        // Stale when old; entries of the one-file format at once.
        let legacy = path.extension().is_some_and(|x| x == "entry");
        if !(name.starts_with(TMP_PREFIX) || orphan_body || legacy) {
            continue;
        }
        let Ok(md) = e.metadata() else { continue };
        let old = md
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .is_some_and(|d| d > age);
        if md.is_file() && (old || legacy) && fs::remove_file(&path).is_ok() {
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
        // No temporary files left behind: one body, one meta file.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// kill -9 between create and rename must not leave `.tmp*` files
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

    /// A snapshot answers as the cache did when it was taken: sound,
    /// corrupt, meta-only and missing entries; later writes are not in it.
    #[test]
    fn snapshot_answers_as_the_cache_did() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        c.put(&meta("http://h/a", b"hello"), b"hello").unwrap();
        c.put(&meta("http://h/bad", b"x"), b"x").unwrap();
        fs::write(c.path_of("http://h/bad"), b"y").unwrap();
        c.put_meta(&meta("http://h/orphan", b"z")).unwrap();
        fs::write(dir.path().join(".tmpAbC"), b"in progress").unwrap();
        let snap = c.snapshot();
        assert_eq!(
            snap.len(),
            4,
            "two entries, no orphan meta, no temporary file"
        );
        assert!(!c.meta_path_of("http://h/orphan").exists(), "removed");
        c.put(&meta("http://h/later", b"l"), b"l").unwrap();
        c.put(&meta("http://h/a", b"new"), b"new").unwrap();
        assert_eq!(&snap.get("http://h/a").unwrap().unwrap().body[..], b"hello");
        let (from_snap, from_cache) = (
            snap.get("http://h/bad").unwrap_err().to_string(),
            c.get("http://h/bad").unwrap_err().to_string(),
        );
        assert_eq!(from_snap, from_cache);
        assert!(snap.get("http://h/orphan").unwrap().is_none());
        assert!(snap.get("http://h/later").unwrap().is_none());
        assert!(snap.get("http://h/none").unwrap().is_none());
        assert!(Snapshot::default().get("http://h/a").unwrap().is_none());
    }

    /// The meta file is checked too: garbage, another URL, a header line
    /// with trailing bytes.
    #[test]
    fn corrupt_meta_files_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        c.put(&meta("http://h/a", b"hello"), b"hello").unwrap();
        let p = c.meta_path_of("http://h/a");
        let good = fs::read(&p).unwrap();
        let other = String::from_utf8(good.clone())
            .unwrap()
            .replace("http://h/a", "http://h/b");
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"more");
        for bad in [
            b"garbage".to_vec(),
            other.into_bytes(),
            trailing,
            Vec::new(),
        ] {
            fs::write(&p, &bad).unwrap();
            let err = c.get("http://h/a").unwrap_err();
            assert!(matches!(err, CacheWarning::Corrupt { .. }), "{err}");
        }
    }

    /// What a kill -9 can leave between or during the renames of `put`:
    /// a body without meta (not cached; removed once stale), meta without
    /// body (not cached; removed), a new body under the old meta (corrupt,
    /// ignored). None is ever served.
    #[test]
    fn torn_puts_are_never_served() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        // Body renamed, meta never written.
        fs::write(c.path_of("http://h/a"), b"orphan").unwrap();
        assert!(c.get("http://h/a").unwrap().is_none());
        // Meta written, body gone.
        c.put(&meta("http://h/b", b"bee"), b"bee").unwrap();
        fs::remove_file(c.path_of("http://h/b")).unwrap();
        assert!(c.get("http://h/b").unwrap().is_none());
        assert!(!c.meta_path_of("http://h/b").exists());
        // New body renamed over the old one, meta still the old one's.
        c.put(&meta("http://h/c", b"old"), b"old").unwrap();
        fs::write(c.path_of("http://h/c"), b"new!").unwrap();
        assert!(matches!(
            c.get("http://h/c"),
            Err(CacheWarning::Corrupt { .. })
        ));
        // The orphan body goes when the cache opens, once stale.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(c.path_of("http://h/a"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let c = Cache::open(dir.path()).unwrap();
        assert_eq!(c.stale_removed(), 1);
        assert!(!c.path_of("http://h/a").exists());
    }

    /// New validators on a 304 rewrite the meta file only.
    #[test]
    fn put_meta_leaves_the_body_alone() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let body = vec![7u8; 100_000];
        let mut m = meta("http://h/a", &body);
        c.put(&m, &body).unwrap();
        assert!(c.bytes_written() > 100_000);
        let before = fs::metadata(c.path_of("http://h/a")).unwrap();
        let c = Cache::open(dir.path()).unwrap();
        m.etag = Some("\"v2\"".into());
        c.put_meta(&m).unwrap();
        let after = fs::metadata(c.path_of("http://h/a")).unwrap();
        assert_eq!(
            (before.ino(), before.mtime(), before.mtime_nsec()),
            (after.ino(), after.mtime(), after.mtime_nsec())
        );
        assert!(c.bytes_written() < 1000, "{}", c.bytes_written());
        let e = c.get("http://h/a").unwrap().unwrap();
        assert_eq!(e.meta.etag.as_deref(), Some("\"v2\""));
        assert_eq!(&e.body[..], &body[..]);
    }

    /// A spooled body becomes the entry; a dropped spool leaves nothing.
    #[test]
    fn spooled_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path()).unwrap();
        let mut s = c.spool().unwrap();
        s.write(b"hel").unwrap();
        s.write(b"lo").unwrap();
        assert_eq!(s.read_back().unwrap(), b"hello");
        c.put_spooled(&meta("http://h/a", b"hello"), s).unwrap();
        assert_eq!(&c.get("http://h/a").unwrap().unwrap().body[..], b"hello");
        let mut s = c.spool().unwrap();
        s.write(b"abandoned").unwrap();
        drop(s);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
