//! The writes a fetch's session asks for, applied by the task that owns
//! the session (`crate::drain_writes` after every event): while the fetch runs, an inflated body spooled into its
//! cache file as it arrives and an object package's members handed to the
//! cache and `--save` the moment they are complete ([`Write`]); at its
//! end, the cache entries of [`CacheWrite`] (after the network work, so
//! disk time never delays a request). The session itself touches no file.

use std::collections::HashMap;
use std::path::PathBuf;

use bytes::Bytes;

use crate::cache::{Cache, EntryMeta, Spool};
use crate::error::FetchError;
use crate::report::FetchReport;

/// An object of the fetch: the session's number for it.
type ObjId = usize;

/// A write the session asks for while the fetch runs, to be done at once.
#[derive(Debug, PartialEq, Eq)]
pub enum Write {
    /// Start a cache file for `ObjId`'s body, inflated as it arrives (a
    /// large or hostile body never sits in memory whole).
    Spool(ObjId),
    /// More of that body, for its cache file.
    Append(ObjId, Vec<u8>),
    /// A complete object (an object package's member): the cache entry.
    Put(EntryMeta, Bytes),
    /// ... and its file under `--save` (URL, body).
    Save(String, Bytes),
}

/// A cache entry to write once the network work is over.
#[derive(Debug)]
pub enum CacheWrite {
    /// A body spooled as it arrived ([`Write::Spool`]): its entry.
    Spooled(EntryMeta, ObjId),
    /// New validators for the same body (a 304, or a 200 of the same
    /// bytes): the meta file only.
    Meta(EntryMeta),
    /// A whole entry.
    Put(EntryMeta, Bytes),
}

/// The cache, `--save` and the spool files of one fetch.
pub struct Store {
    cache: Option<Cache>,
    save_dir: Option<PathBuf>,
    spools: HashMap<ObjId, Spool>,
    /// Writes that failed; the fetch stands, the report says so.
    warnings: Vec<String>,
}

impl Store {
    pub fn new(cache: Option<Cache>, save_dir: Option<PathBuf>) -> Store {
        Store {
            cache,
            save_dir,
            spools: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Does `writes` in order (`url_of` names an object in a message). A
    /// spool file that cannot be created leaves its object uncached (a
    /// warning); one that cannot be written fails the fetch.
    pub fn apply_all(
        &mut self,
        writes: Vec<Write>,
        url_of: &dyn Fn(ObjId) -> String,
    ) -> Result<(), FetchError> {
        for w in writes {
            self.apply(w, url_of)?;
        }
        Ok(())
    }

    fn apply(&mut self, w: Write, url_of: &dyn Fn(ObjId) -> String) -> Result<(), FetchError> {
        match w {
            Write::Spool(id) => {
                let Some(cache) = &self.cache else {
                    return Ok(());
                };
                match cache.spool() {
                    Ok(s) => {
                        self.spools.insert(id, s);
                    }
                    // Not cached then, but fetched all the same.
                    Err(e) => self.warnings.push(format!(
                        "{}: cannot create a cache file ({e}); not cached",
                        url_of(id)
                    )),
                }
            }
            Write::Append(id, data) => {
                if let Some(spool) = self.spools.get_mut(&id) {
                    spool.write(&data).map_err(|source| FetchError::Io {
                        what: format!("cannot write the cache file of {}", url_of(id)),
                        source,
                    })?;
                }
            }
            Write::Put(meta, body) => {
                if let Some(cache) = &self.cache {
                    if let Err(e) = cache.put(&meta, &body) {
                        self.warnings.push(e.to_string());
                    }
                }
            }
            Write::Save(url, body) => {
                if let Some(dir) = &self.save_dir {
                    if let Err(e) = crate::save::write_one(dir, &url, &body) {
                        self.warnings.push(e.to_string());
                    }
                }
            }
        }
        Ok(())
    }

    /// The fetch's end: its cache entries written (a failure is a
    /// warning), spool files not used removed, and what the report says
    /// of the cache.
    pub fn finish(mut self, writes: Vec<CacheWrite>, report: &mut FetchReport) {
        report.warnings.append(&mut self.warnings);
        let Some(cache) = &self.cache else {
            return;
        };
        for w in writes {
            let r = match w {
                CacheWrite::Spooled(meta, id) => match self.spools.remove(&id) {
                    Some(spool) => cache.put_spooled(&meta, spool),
                    // Its spool file could not be created (warned).
                    None => Ok(()),
                },
                CacheWrite::Meta(meta) => cache.put_meta(&meta),
                CacheWrite::Put(meta, body) => cache.put(&meta, &body),
            };
            if let Err(e) = r {
                report.warnings.push(e.to_string());
            }
        }
        report.cache_bytes_written = cache.bytes_written();
    }
}

#[cfg(test)]
impl CacheWrite {
    /// Writes an entry that needs no spool file (the scripted tests').
    pub fn apply(self, cache: &Cache) -> Result<(), FetchError> {
        match self {
            CacheWrite::Spooled(..) => panic!("a spooled entry is written by its Store"),
            CacheWrite::Meta(meta) => cache.put_meta(&meta),
            CacheWrite::Put(meta, body) => cache.put(&meta, &body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Strategy;
    use crate::session::tests::{deflate, gif, page_html, session};
    use crate::session::PAGE;
    use pagewire_h1::Method;

    /// An inflated image with a cache: the session asks for a spool file
    /// and hands it the inflated bytes as they come (never keeping the body
    /// itself); at the end its entry names the spool, and the store makes
    /// that file the cache entry.
    #[test]
    fn an_inflated_body_goes_to_its_spool_file() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        // The robot asks for deflate for the page only; an image's deflated
        // body is decoded when told to (`--decode-unasked`).
        let setup = |c: &mut crate::FetchConfig| c.decode_unasked = true;
        let (mut s, t0) = session(Strategy::PipelineDeflate, setup, Some(&cache));
        s.conn_opened(t0);
        let page = page_html();
        let head = |text: String| {
            let mut b = bytes::BytesMut::from(text.as_bytes());
            pagewire_h1::parse_response(&mut b, &pagewire_h1::Limits::default(), &Method::Get)
                .unwrap()
                .unwrap()
        };
        s.request(PAGE, 0, t0).unwrap();
        let h = head(format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            page.len()
        ));
        s.on_head(PAGE, 0, &h, t0).unwrap();
        let found = s.on_body(PAGE, page, t0).unwrap();
        s.on_end(PAGE, t0).unwrap();
        assert!(s.take_writes().is_empty(), "the page is kept in memory");
        let id = found[0];
        s.request(id, 0, t0).unwrap();
        let image = gif(3);
        let z = deflate(&image);
        let h = head(format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Encoding: deflate\r\n\r\n",
            z.len()
        ));
        s.on_head(id, 0, &h, t0).unwrap();
        s.on_body(id, &z, t0).unwrap();
        s.on_end(id, t0).unwrap();
        let writes = s.take_writes();
        assert_eq!(writes[0], Write::Spool(id));
        let spooled: Vec<u8> = writes[1..]
            .iter()
            .flat_map(|w| match w {
                Write::Append(i, d) if *i == id => d.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(spooled, image);
        let mut store = Store::new(Some(cache.clone()), None);
        store.apply_all(writes, &|id| s.url_of(id)).unwrap();
        let (mut report, entries) = s.finish();
        assert!(entries
            .iter()
            .any(|e| matches!(e, CacheWrite::Spooled(_, i) if *i == id)));
        store.finish(entries, &mut report);
        let url = s.url_of(id);
        assert_eq!(&cache.get(&url).unwrap().unwrap().body[..], &image[..]);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    }
}
