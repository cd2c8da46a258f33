//! The writes a fetch's session asks for, applied by the task that owns
//! the session (`crate::drain_writes` after every event): while the fetch
//! runs, an object package's members handed to the cache and `--save` the
//! moment they are complete ([`Write`]); at its end, the cache entries of
//! [`CacheWrite`] (after the network work, so disk time never delays a
//! request). The one file the session writes itself is an inflated body's
//! spool file (`Cache::spool`), as it inflates: as effects drained after
//! each read, one read's inflation (a deflate bomb inflates 1,000-fold)
//! would sit in memory.

use std::path::PathBuf;

use bytes::Bytes;

use crate::cache::{Cache, EntryMeta, Spool};
use crate::error::FetchError;
use crate::report::FetchReport;

/// A write the session asks for while the fetch runs, to be done at once.
#[derive(Debug, PartialEq, Eq)]
pub enum Write {
    /// A complete object (an object package's member): its cache entry.
    Put(EntryMeta, Bytes),
    /// ... and its file under `--save` (URL, body).
    Save(String, Bytes),
}

/// A cache entry to write once the network work is over.
#[derive(Debug)]
pub enum CacheWrite {
    /// A body inflated into a cache file as it arrived: its entry.
    Spooled(EntryMeta, Spool),
    /// New validators for the same body (a 304, or a 200 of the same
    /// bytes): the meta file only.
    Meta(EntryMeta),
    /// A whole entry.
    Put(EntryMeta, Bytes),
}

impl CacheWrite {
    /// Writes the entry.
    pub fn apply(self, cache: &Cache) -> Result<(), FetchError> {
        match self {
            CacheWrite::Spooled(meta, spool) => cache.put_spooled(&meta, spool),
            CacheWrite::Meta(meta) => cache.put_meta(&meta),
            CacheWrite::Put(meta, body) => cache.put(&meta, &body),
        }
    }
}

/// The cache and `--save` of one fetch.
pub struct Store {
    cache: Option<Cache>,
    save_dir: Option<PathBuf>,
    /// Writes that failed; the fetch stands, the report says so.
    warnings: Vec<String>,
}

impl Store {
    pub fn new(cache: Option<Cache>, save_dir: Option<PathBuf>) -> Store {
        Store {
            cache,
            save_dir,
            warnings: Vec::new(),
        }
    }

    /// Does `writes` in order; a failure is a warning (the fetch stands).
    pub fn apply_all(&mut self, writes: Vec<Write>) {
        for w in writes {
            let r = match w {
                Write::Put(meta, body) => match &self.cache {
                    Some(cache) => cache.put(&meta, &body),
                    None => Ok(()),
                },
                Write::Save(url, body) => match &self.save_dir {
                    Some(dir) => crate::save::write_one(dir, &url, &body).map(|_| ()),
                    None => Ok(()),
                },
            };
            if let Err(e) = r {
                self.warnings.push(e.to_string());
            }
        }
    }

    /// The fetch's end: its cache entries written (a failure is a
    /// warning), and what the report says of the cache.
    pub fn finish(mut self, writes: Vec<CacheWrite>, report: &mut FetchReport) {
        report.warnings.append(&mut self.warnings);
        let Some(cache) = &self.cache else {
            return;
        };
        for w in writes {
            if let Err(e) = w.apply(cache) {
                report.warnings.push(e.to_string());
            }
        }
        report.cache_bytes_written = cache.bytes_written();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(url: &str, body: &[u8]) -> EntryMeta {
        EntryMeta {
            url: url.into(),
            status: 200,
            etag: None,
            last_modified: None,
            content_type: None,
            body_len: body.len() as u64,
            body_sha256: crate::cache::sha256_hex(body),
            prefetched: false,
        }
    }

    /// A package member's writes: the cache entry and the `--save` file at
    /// once; one that fails is a warning in the report, not an error.
    #[test]
    fn writes_go_to_the_cache_and_save_dir() {
        let dir = tempfile::tempdir().unwrap();
        let save = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let mut store = Store::new(Some(cache.clone()), Some(save.path().to_path_buf()));
        let url = "http://h/i/a.gif";
        let body = Bytes::from_static(b"GIF89a");
        store.apply_all(vec![
            Write::Put(meta(url, &body), body.clone()),
            Write::Save(url.into(), body.clone()),
        ]);
        assert_eq!(&cache.get(url).unwrap().unwrap().body[..], b"GIF89a");
        let saved = std::fs::read(save.path().join("h/i/a.gif")).unwrap();
        assert_eq!(saved, b"GIF89a");
        assert!(store.warnings.is_empty(), "{:?}", store.warnings);
        assert!(cache.bytes_written() > 0);
        // A cache directory gone during the fetch: a warning.
        let gone = tempfile::tempdir().unwrap();
        let mut store = Store::new(Some(Cache::open(gone.path()).unwrap()), None);
        drop(gone);
        store.apply_all(vec![Write::Put(meta(url, &body), body.clone())]);
        assert_eq!(store.warnings.len(), 1, "{:?}", store.warnings);
        assert!(store.warnings[0].contains(url), "{:?}", store.warnings);
    }
}
