//! Resource store (owned by the server work).
//!
//! A [`Site`] is an immutable, in-memory set of [`Resource`]s keyed by their
//! decoded URL path ("/images/a.gif"). Everything a server needs to answer a
//! request without touching the disk is computed once, at load:
//!
//! * the media type, from the file name's extension (`mime_guess`);
//! * a strong entity tag from the SHA-256 of the content (RFC 9110 §8.8.3),
//!   with a distinct tag per content coding, because each coding is a
//!   different representation (RFC 9110 §8.8.3.3);
//! * `Last-Modified` from the file's mtime, truncated to whole seconds (the
//!   HTTP-date granularity) and never later than the load time (RFC 9110
//!   §8.8.2.1: an origin must not send a Last-Modified in the future);
//! * precompressed variants — deflate (the zlib format, RFC 1950, which is what
//!   paper 001's "deflate" experiment used), gzip, br and zstd — kept only when
//!   smaller than the identity body, and only built for compressible media
//!   types (GIF, JPEG, PNG ... are already compressed; paper 001 compressed only
//!   the HTML page).
//!
//! Loading compresses files in parallel on all cores (scoped threads, one
//! contiguous chunk of files per thread).

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use sha2::{Digest, Sha256};

/// Most files a directory load accepts. Every file lives in memory with up to
/// four compressed copies; a million files is far beyond any test site
/// (Microscape has 43, SURGE about 2000) and bounds a runaway load.
pub const MAX_FILES: usize = 1_000_000;

/// Most bytes (identity bodies) a directory load accepts: the store is in
/// memory, and the machine this lab runs on has 24 GiB.
pub const MAX_TOTAL_BYTES: u64 = 4 << 30;

/// Deepest directory nesting `from_dir` descends into: bounds the walk's
/// stack even if a file system is pathological.
pub const MAX_DEPTH: usize = 64;

/// Bodies smaller than this are not worth compressing: the coding's framing
/// (zlib 6 bytes, gzip 18 bytes) plus `Content-Encoding` and `Vary` header bytes
/// eat any gain, and paper 001 compressed a 42 KB page, not 100-byte files.
pub const MIN_COMPRESS_BYTES: usize = 256;

/// Most bytes of file bodies `Site::from_dir` reads into memory; files past
/// this bound (and every file of `mapped::MAP_MIN_BYTES` or more) are
/// mapped from disk instead, uncompressed.
pub const IN_MEMORY_MAX_BYTES: u64 = 512 << 20;

/// Compression levels used when the site is loaded.
///
/// Variants are built once per load, so the levels trade load time against
/// bytes on the wire. Measured on this 2-core machine with
/// `cargo run --release -p pagewire-server --example store_load`:
///
/// | zlib / brotli / zstd | Microscape (43 files) | 2000 text files, 47 MB | br bytes of the page |
/// |---|---:|---:|---:|
/// | 6 / q5 / 9 (default) | 16 ms | 8.2 s | 10,679 |
/// | 6 / q5 / 19 | 36 ms | 36.5 s | 10,679 |
/// | 9 / q9 / 19 | 52 ms | 57.4 s | 10,520 |
/// | 6 / q11 / 19 | 240 ms | minutes | 9,286 |
///
/// Brotli q9 saves 1-1.5 % over q5 at twice the time, zstd 19 saves 2-3 %
/// over 9 at four times the time, zlib 9 saves nothing over 6 on HTML; only
/// brotli q10-11 (a slower algorithm) is much smaller, at 8x the time. For a
/// lab that reloads sites often (SURGE's 2000 files) the fast levels win.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressionLevels {
    /// zlib level for both deflate (zlib format) and gzip: 0..=9. Default 6,
    /// zlib's default, which is what paper 001 used ("we used the default
    /// values": 42 KB -> 11 KB).
    pub zlib: u32,
    /// Brotli quality 0..=11. Default 5 (see above).
    pub brotli: u32,
    /// zstd level 1..=22. Default 9 (see above); decompression speed does
    /// not depend on the level.
    pub zstd: i32,
}

impl Default for CompressionLevels {
    fn default() -> Self {
        CompressionLevels {
            zlib: 6,
            brotli: 5,
            zstd: 9,
        }
    }
}

/// Options for building a [`Site`].
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub levels: CompressionLevels,
    /// Build no compressed variants at all (faster loads for tests that don't
    /// care about content codings).
    pub no_compression: bool,
}

/// A content coding the store can hold a variant for (RFC 9110 §8.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Encoding {
    Identity,
    /// The zlib format (RFC 1950) as registered for "deflate" (RFC 9110 §8.4.1.2).
    Deflate,
    Gzip,
    Br,
    Zstd,
}

impl Encoding {
    /// Every coding, identity first.
    pub const ALL: [Encoding; 5] = [
        Encoding::Identity,
        Encoding::Deflate,
        Encoding::Gzip,
        Encoding::Br,
        Encoding::Zstd,
    ];

    /// The compressed codings, in the order the server prefers them on a tie of
    /// q-values (smallest usual output first).
    pub const COMPRESSED: [Encoding; 4] = [
        Encoding::Br,
        Encoding::Zstd,
        Encoding::Gzip,
        Encoding::Deflate,
    ];

    /// The token used in Accept-Encoding / Content-Encoding.
    pub fn token(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Deflate => "deflate",
            Encoding::Gzip => "gzip",
            Encoding::Br => "br",
            Encoding::Zstd => "zstd",
        }
    }

    /// Parses a coding token, case-insensitively (RFC 9110 §8.4.1).
    /// `x-gzip` is an alias of gzip (RFC 9110 §8.4.1.3).
    pub fn from_token(token: &[u8]) -> Option<Encoding> {
        let eq = |s: &str| token.eq_ignore_ascii_case(s.as_bytes());
        if eq("identity") {
            Some(Encoding::Identity)
        } else if eq("deflate") {
            Some(Encoding::Deflate)
        } else if eq("gzip") || eq("x-gzip") {
            Some(Encoding::Gzip)
        } else if eq("br") {
            Some(Encoding::Br)
        } else if eq("zstd") {
            Some(Encoding::Zstd)
        } else {
            None
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.token())
    }
}

/// A file handed to [`Site::from_files`].
#[derive(Debug, Clone)]
pub struct SiteFile {
    /// Decoded absolute URL path, e.g. "/images/a.gif".
    pub path: String,
    pub body: Bytes,
    pub modified: SystemTime,
}

/// One stored representation of a resource (identity or a content coding).
#[derive(Debug, Clone)]
pub struct Variant {
    pub encoding: Encoding,
    pub body: Bytes,
    /// Strong entity tag including the quotes, e.g. `"abc...-br"`.
    pub etag: String,
}

/// A resource: its identity body, validators and precompressed variants.
#[derive(Debug, Clone)]
pub struct Resource {
    /// Decoded absolute URL path.
    pub path: String,
    /// The identity body.
    pub body: Bytes,
    /// Media type for Content-Type, with a charset for UTF-8 text.
    pub media_type: String,
    /// Strong entity tag of the identity body, including the quotes.
    pub etag: String,
    /// Last modification, whole seconds, never after load time.
    pub last_modified: SystemTime,
    /// `last_modified` formatted as an IMF-fixdate (RFC 9110 §5.6.7).
    pub last_modified_http: String,
    /// Indexed by `Encoding as usize`; `[0]` (identity) is always present.
    variants: [Option<Variant>; 5],
}

impl Resource {
    /// The body of the variant with this coding, if the store kept one.
    pub fn variant(&self, encoding: Encoding) -> Option<&Bytes> {
        self.variants[encoding.index()].as_ref().map(|v| &v.body)
    }

    /// The full variant with this coding (body and entity tag).
    pub fn variant_full(&self, encoding: Encoding) -> Option<&Variant> {
        self.variants[encoding.index()].as_ref()
    }

    /// The codings stored for this resource, identity first.
    pub fn encodings(&self) -> impl Iterator<Item = Encoding> + '_ {
        self.variants.iter().flatten().map(|v| v.encoding)
    }

    /// True when some compressed variant exists, i.e. the response depends
    /// on Accept-Encoding and must say `Vary: Accept-Encoding`.
    pub fn has_compressed(&self) -> bool {
        self.variants[1..].iter().any(Option::is_some)
    }

    fn build(file: SiteFile, options: &LoadOptions, load_time: SystemTime) -> Resource {
        let SiteFile {
            path,
            body,
            modified,
        } = file;
        // A mapped (large) file is not read at load: its tag comes from
        // its size and modification time (as nginx's does), its type from
        // its name and first bytes, and it gets no compressed variants.
        let mapped = crate::mapped::is_mapped(&body);
        let hash = if mapped {
            let mtime = modified
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            let mut h = Sha256::new();
            h.update(b"mapped\0");
            h.update(path.as_bytes());
            h.update((body.len() as u64).to_be_bytes());
            h.update(mtime.to_be_bytes());
            h.finalize()
        } else {
            Sha256::digest(&body)
        };
        // 128 bits of SHA-256 are plenty to tell versions of one resource
        // apart; base64url keeps the header short.
        let tag = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&hash[..16]);
        let etag = format!("\"{tag}\"");
        let media_type = if mapped {
            media_type_for(&path, &body[..body.len().min(4096)])
        } else {
            media_type_for(&path, &body)
        };
        let last_modified = whole_seconds(modified.min(load_time));
        let last_modified_http = httpdate::fmt_http_date(last_modified);

        let mut variants: [Option<Variant>; 5] = Default::default();
        if !mapped
            && !options.no_compression
            && body.len() >= MIN_COMPRESS_BYTES
            && compressible(&media_type)
        {
            for encoding in Encoding::COMPRESSED {
                if let Some(compressed) = compress(encoding, &body, &options.levels) {
                    // Only keep a variant that actually saves bytes.
                    if compressed.len() < body.len() {
                        variants[encoding.index()] = Some(Variant {
                            encoding,
                            body: Bytes::from(compressed),
                            etag: format!("\"{tag}-{}\"", encoding.token()),
                        });
                    }
                }
            }
        }
        variants[0] = Some(Variant {
            encoding: Encoding::Identity,
            body: body.clone(),
            etag: etag.clone(),
        });
        Resource {
            path,
            body,
            media_type,
            etag,
            last_modified,
            last_modified_http,
            variants,
        }
    }
}

/// Errors loading a site from disk.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("site root {path}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("site root {0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("reading {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("site has more than {MAX_FILES} files")]
    TooManyFiles,
    #[error("site is larger than {MAX_TOTAL_BYTES} bytes")]
    TooLarge,
}

/// Files `from_dir` left out, and why (reported, not fatal).
#[derive(Debug, Clone, Default)]
pub struct Skipped {
    /// Symlinks whose target is outside the root, dangling, or a directory.
    pub symlinks: Vec<PathBuf>,
    /// Names that are not UTF-8 or start with a dot.
    pub names: Vec<PathBuf>,
    /// Directories deeper than [`MAX_DEPTH`], sockets, devices, FIFOs.
    pub other: Vec<PathBuf>,
}

/// An immutable set of resources.
#[derive(Debug, Clone, Default)]
pub struct Site {
    resources: Vec<Resource>,
    by_path: HashMap<String, usize>,
    skipped: Skipped,
}

impl Site {
    /// Builds a site from in-memory files with the default options.
    /// A later file with the same path replaces an earlier one.
    pub fn from_files(files: Vec<SiteFile>) -> Site {
        Site::from_files_with(files, &LoadOptions::default())
    }

    /// Builds a site from in-memory files.
    pub fn from_files_with(files: Vec<SiteFile>, options: &LoadOptions) -> Site {
        let load_time = SystemTime::now();
        let resources = build_parallel(files, options, load_time);
        let mut by_path = HashMap::with_capacity(resources.len());
        let mut kept: Vec<Resource> = Vec::with_capacity(resources.len());
        for r in resources {
            match by_path.get(&r.path) {
                Some(&i) => kept[i] = r,
                None => {
                    by_path.insert(r.path.clone(), kept.len());
                    kept.push(r);
                }
            }
        }
        Site {
            resources: kept,
            by_path,
            skipped: Skipped::default(),
        }
    }

    /// Loads every regular file under `root` with the default options.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Site, StoreError> {
        Site::from_dir_with(root, &LoadOptions::default())
    }

    /// Loads every regular file under `root`.
    ///
    /// Never escapes the root: a symlink is followed only when its canonical
    /// target lies inside the canonical root and is a regular file (symlinked
    /// directories are not followed, which also rules out loops); names that
    /// are not UTF-8 or that start with "." (".git", ".htaccess", and of course
    /// "." and "..") are skipped. What was skipped is in [`Site::skipped`].
    pub fn from_dir_with(
        root: impl AsRef<Path>,
        options: &LoadOptions,
    ) -> Result<Site, StoreError> {
        let root = root.as_ref();
        let canonical_root = root.canonicalize().map_err(|source| StoreError::Root {
            path: root.to_owned(),
            source,
        })?;
        if !canonical_root.is_dir() {
            return Err(StoreError::NotADirectory(root.to_owned()));
        }
        let mut files = Vec::new();
        let mut skipped = Skipped::default();
        let mut total_bytes = 0u64;
        let mut in_memory = 0u64;
        // Explicit stack instead of recursion; depth bounded by MAX_DEPTH.
        let mut stack = vec![(canonical_root.clone(), String::new(), 0usize)];
        while let Some((dir, url_prefix, depth)) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|source| StoreError::Io {
                path: dir.clone(),
                source,
            })?;
            for entry in entries {
                let entry = entry.map_err(|source| StoreError::Io {
                    path: dir.clone(),
                    source,
                })?;
                let fs_path = entry.path();
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    skipped.names.push(fs_path);
                    continue;
                };
                if name.starts_with('.') || name.contains('/') || name.contains('\\') {
                    skipped.names.push(fs_path);
                    continue;
                }
                let file_type = entry.file_type().map_err(|source| StoreError::Io {
                    path: fs_path.clone(),
                    source,
                })?;
                let url_path = format!("{url_prefix}/{name}");
                let real = if file_type.is_symlink() {
                    match fs_path.canonicalize() {
                        Ok(target) if target.starts_with(&canonical_root) && target.is_file() => {
                            target
                        }
                        _ => {
                            skipped.symlinks.push(fs_path);
                            continue;
                        }
                    }
                } else if file_type.is_dir() {
                    if depth + 1 > MAX_DEPTH {
                        skipped.other.push(fs_path);
                    } else {
                        stack.push((fs_path, url_path, depth + 1));
                    }
                    continue;
                } else if file_type.is_file() {
                    fs_path.clone()
                } else {
                    skipped.other.push(fs_path);
                    continue;
                };
                if files.len() >= MAX_FILES {
                    return Err(StoreError::TooManyFiles);
                }
                let meta = std::fs::metadata(&real).map_err(|source| StoreError::Io {
                    path: real.clone(),
                    source,
                })?;
                total_bytes += meta.len();
                if total_bytes > MAX_TOTAL_BYTES {
                    return Err(StoreError::TooLarge);
                }
                let io_err = |source| StoreError::Io {
                    path: real.clone(),
                    source,
                };
                // Small files are read (the in-memory store the experiments
                // use, bounded by IN_MEMORY_MAX_BYTES); large ones, and any
                // beyond that bound, are mapped: loading reads none of
                // their bytes.
                let body = if meta.len() >= crate::mapped::MAP_MIN_BYTES
                    || in_memory + meta.len() > IN_MEMORY_MAX_BYTES
                {
                    let f = std::fs::File::open(&real).map_err(io_err)?;
                    crate::mapped::map(&f, meta.len()).map_err(io_err)?
                } else {
                    in_memory += meta.len();
                    Bytes::from(std::fs::read(&real).map_err(io_err)?)
                };
                let modified = meta.modified().unwrap_or(UNIX_EPOCH);
                files.push(SiteFile {
                    path: url_path,
                    body,
                    modified,
                });
            }
        }
        let mut site = Site::from_files_with(files, options);
        site.skipped = skipped;
        Ok(site)
    }

    /// The resource at this decoded path. A path ending in "/" maps to its
    /// directory index, "index.html" (the root "/" included).
    pub fn get(&self, path: &str) -> Option<&Resource> {
        if path.ends_with('/') {
            let mut index = String::with_capacity(path.len() + 10);
            index.push_str(path);
            index.push_str("index.html");
            return self.by_path.get(&index).map(|&i| &self.resources[i]);
        }
        self.by_path.get(path).map(|&i| &self.resources[i])
    }

    /// The index into [`Site::resources`] of the resource at this path, with
    /// the same directory-index rule as [`Site::get`]; lets a server keep
    /// per-resource tables (e.g. pre-rendered response heads) in a `Vec`.
    pub fn position(&self, path: &str) -> Option<usize> {
        if let Some(dir) = path.strip_suffix('/') {
            // Avoid allocating on the common non-directory path only; a
            // directory lookup builds the index path once.
            let index = format!("{dir}/index.html");
            return self.by_path.get(&index).copied();
        }
        self.by_path.get(path).copied()
    }

    /// True when `path` (without a trailing slash) names a directory that has
    /// an index, so a server can redirect "/dir" to "/dir/".
    pub fn is_dir_with_index(&self, path: &str) -> bool {
        !path.ends_with('/') && self.by_path.contains_key(&format!("{path}/index.html"))
    }

    /// All resources, in load order.
    pub fn iter(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter()
    }

    /// All resources as a slice (positions match [`Site::position`]).
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    pub fn len(&self) -> usize {
        self.resources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.resources.is_empty()
    }

    /// What `from_dir` left out.
    pub fn skipped(&self) -> &Skipped {
        &self.skipped
    }
}

fn build_parallel(
    files: Vec<SiteFile>,
    options: &LoadOptions,
    load_time: SystemTime,
) -> Vec<Resource> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    // Below a few files threads cost more than they save.
    if threads <= 1 || files.len() < 4 {
        return files
            .into_iter()
            .map(|f| Resource::build(f, options, load_time))
            .collect();
    }
    // Hand out files one at a time from a shared queue so a few large files
    // don't leave other threads idle; results keep input order.
    let n = files.len();
    let queue = std::sync::Mutex::new(files.into_iter().enumerate());
    let mut out: Vec<Option<Resource>> = (0..n).map(|_| None).collect();
    let results = std::sync::Mutex::new(&mut out);
    std::thread::scope(|s| {
        for _ in 0..threads.min(n) {
            s.spawn(|| loop {
                let next = queue.lock().expect("queue lock").next();
                let Some((i, file)) = next else { break };
                let r = Resource::build(file, options, load_time);
                results.lock().expect("results lock")[i] = Some(r);
            });
        }
    });
    out.into_iter()
        .map(|r| r.expect("every file built"))
        .collect()
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => UNIX_EPOCH,
    }
}

/// Content-Type for a path: by extension, with `charset=utf-8` added to text
/// types whose body is valid UTF-8 (RFC 9110 §8.3.2; without a charset,
/// recipients guess).
pub fn media_type_for(path: &str, body: &[u8]) -> String {
    let guess = mime_guess::from_path(path).first_raw();
    let base = guess.unwrap_or("application/octet-stream");
    let textual = base.starts_with("text/")
        || base == "application/javascript"
        || base == "application/json"
        || base == "image/svg+xml"
        || base == "application/xml";
    if textual && std::str::from_utf8(body).is_ok() {
        format!("{base}; charset=utf-8")
    } else {
        base.to_owned()
    }
}

/// Whether a media type is worth compressing: text-like formats are; image,
/// audio, video and archive formats are already compressed.
fn compressible(media_type: &str) -> bool {
    let base = media_type.split(';').next().unwrap_or("").trim();
    base.starts_with("text/")
        || base.ends_with("+xml")
        || base.ends_with("+json")
        || matches!(
            base,
            "application/javascript"
                | "application/json"
                | "application/xml"
                | "application/wasm"
                | "application/octet-stream"
                | "image/bmp"
                | "image/x-icon"
                | "image/vnd.microsoft.icon"
                | "application/postscript"
                | "application/rtf"
        )
}

fn compress(encoding: Encoding, body: &[u8], levels: &CompressionLevels) -> Option<Vec<u8>> {
    use flate2::write::{GzEncoder, ZlibEncoder};
    use flate2::Compression;
    // Writes into a Vec cannot fail; a `None` would only come from a codec bug.
    match encoding {
        Encoding::Identity => None,
        Encoding::Deflate => {
            let mut e = ZlibEncoder::new(
                Vec::with_capacity(body.len() / 2),
                Compression::new(levels.zlib.min(9)),
            );
            e.write_all(body).ok()?;
            e.finish().ok()
        }
        Encoding::Gzip => {
            let mut e = GzEncoder::new(
                Vec::with_capacity(body.len() / 2),
                Compression::new(levels.zlib.min(9)),
            );
            e.write_all(body).ok()?;
            e.finish().ok()
        }
        Encoding::Br => {
            let mut out = Vec::with_capacity(body.len() / 2);
            {
                // 4 KiB internal buffer; lgwin 22 (4 MiB window) is brotli's
                // default and what browsers accept.
                let mut w =
                    brotli::CompressorWriter::new(&mut out, 4096, levels.brotli.min(11), 22);
                w.write_all(body).ok()?;
                w.flush().ok()?;
            }
            Some(out)
        }
        Encoding::Zstd => zstd::bulk::compress(body, levels.zstd.clamp(1, 22)).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn html(n: usize) -> Bytes {
        let mut s = String::from("<html><body>\n");
        for i in 0..n {
            s.push_str(&format!(
                "<p class=\"x\">paragraph {i} <img src=\"/i{i}.gif\"></p>\n"
            ));
        }
        s.push_str("</body></html>\n");
        Bytes::from(s)
    }

    fn file(path: &str, body: Bytes) -> SiteFile {
        SiteFile {
            path: path.into(),
            body,
            modified: UNIX_EPOCH + Duration::from_millis(1_000_000_500),
        }
    }

    #[test]
    fn variants_decode_back_to_identity_and_have_distinct_etags() {
        let body = html(500);
        let site = Site::from_files(vec![file("/index.html", body.clone())]);
        let r = site.get("/").expect("directory index");
        assert_eq!(r.media_type, "text/html; charset=utf-8");
        assert_eq!(r.last_modified_http, "Mon, 12 Jan 1970 13:46:40 GMT");
        let mut tags = vec![r.etag.clone()];
        for enc in Encoding::COMPRESSED {
            let v = r.variant_full(enc).expect("html compresses");
            assert!(v.body.len() < body.len());
            tags.push(v.etag.clone());
            let decoded = match enc {
                Encoding::Deflate => {
                    let mut out = Vec::new();
                    flate2::read::ZlibDecoder::new(&v.body[..])
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                }
                Encoding::Gzip => {
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(&v.body[..])
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                }
                Encoding::Br => {
                    let mut out = Vec::new();
                    brotli::Decompressor::new(&v.body[..], 4096)
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                }
                Encoding::Zstd => zstd::stream::decode_all(&v.body[..]).unwrap(),
                Encoding::Identity => unreachable!(),
            };
            assert_eq!(decoded, body, "{enc}");
        }
        tags.sort();
        tags.dedup();
        assert_eq!(tags.len(), 5, "each representation has its own ETag");
        assert!(r.etag.starts_with('"') && r.etag.ends_with('"'));
    }

    #[test]
    fn incompressible_and_tiny_files_have_only_identity() {
        let gif = Bytes::from_static(b"GIF89a\x01\x00\x01\x00\x00\x00\x00;");
        let site = Site::from_files(vec![
            file("/a.gif", gif),
            file("/small.txt", Bytes::from_static(b"hello")),
        ]);
        let a = site.get("/a.gif").unwrap();
        assert_eq!(a.media_type, "image/gif");
        assert!(!a.has_compressed());
        assert!(!site.get("/small.txt").unwrap().has_compressed());
        assert!(site.get("/missing").is_none());
    }

    /// A large file is mapped, not read at load (no compressed
    /// variants, a size-and-mtime tag), and serves the file's bytes; small
    /// files stay in memory exactly as before.
    #[test]
    fn large_files_are_mapped_small_ones_read() {
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..(crate::mapped::MAP_MIN_BYTES as usize + 12_345))
            .map(|i| (i % 7) as u8 + b'a')
            .collect();
        std::fs::write(dir.path().join("big.txt"), &big).unwrap();
        std::fs::write(dir.path().join("small.txt"), "small text ".repeat(100)).unwrap();
        let site = Site::from_dir(dir.path()).unwrap();
        let b = site.get("/big.txt").unwrap();
        assert!(crate::mapped::is_mapped(&b.body));
        assert_eq!(&b.body[..], &big[..]);
        assert!(!b.has_compressed());
        assert!(b.media_type.starts_with("text/plain"));
        let again = Site::from_dir(dir.path()).unwrap();
        assert_eq!(again.get("/big.txt").unwrap().etag, b.etag);
        let s = site.get("/small.txt").unwrap();
        assert!(!crate::mapped::is_mapped(&s.body));
        assert!(s.has_compressed());
    }

    #[test]
    fn same_content_same_etag_and_future_mtime_clamped() {
        let body = Bytes::from_static(b"same");
        let mut f = file("/b", body.clone());
        f.modified = SystemTime::now() + Duration::from_secs(86_400);
        let site = Site::from_files(vec![file("/a", body), f]);
        assert_eq!(site.get("/a").unwrap().etag, site.get("/b").unwrap().etag);
        assert!(site.get("/b").unwrap().last_modified <= SystemTime::now());
        assert_eq!(
            site.get("/b").unwrap().media_type,
            "application/octet-stream"
        );
    }

    #[test]
    fn from_dir_loads_tree_and_never_escapes_root() {
        let tmp = std::env::temp_dir().join(format!("pagewire-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let root = tmp.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("index.html"), "<html>hi</html>").unwrap();
        std::fs::write(root.join("sub/a.css"), "body{}").unwrap();
        std::fs::write(root.join(".secret"), "no").unwrap();
        std::fs::write(tmp.join("outside.txt"), "outside").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(tmp.join("outside.txt"), root.join("leak.txt")).unwrap();
            std::os::unix::fs::symlink(root.join("sub/a.css"), root.join("alias.css")).unwrap();
            std::os::unix::fs::symlink(&tmp, root.join("updir")).unwrap();
        }
        let site = Site::from_dir(&root).unwrap();
        assert!(site.get("/").is_some());
        assert!(site.get("/sub/a.css").is_some());
        assert!(site.get("/.secret").is_none());
        #[cfg(unix)]
        {
            assert!(site.get("/leak.txt").is_none());
            assert!(site.get("/alias.css").is_some(), "in-root symlink followed");
            assert!(site.get("/updir/outside.txt").is_none());
            assert_eq!(site.skipped().symlinks.len(), 2);
        }
        // "" is the root, whose index.html was written above; /sub has
        // only a.css, so a server must not redirect "/sub" to "/sub/".
        assert!(site.is_dir_with_index(""));
        assert!(!site.is_dir_with_index("/sub"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
