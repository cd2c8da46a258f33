//! A recorded site in place of the Microscape page (`pagewire bench
//! --replay FILE`): the page's URL, the objects a run must bring back
//! (sha256 per request target) and the page's composition for the report.
//!
//! The server is `pagewire serve --replay FILE --replay-deflate` in the
//! server namespace; the robot connects every recorded name to it, so its
//! requests carry the recorded `Host`. The robot fetches the page's
//! same-origin objects, so a run is complete when every recorded `200` GET
//! of the page's origin arrived intact (a `pagewire record` archive is
//! exactly that set).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use pagewire_replay::{split_url, Archive};
use sha2::{Digest, Sha256};

/// What `bench --replay` measures.
#[derive(Debug, Clone)]
pub struct ReplayPage {
    /// The archive (absolute path).
    pub archive: PathBuf,
    /// The page's recorded URL.
    pub url: String,
    /// sha256 (hex) per request target (path and query) of the page's
    /// origin's recorded 200 GET responses, the page included: what a
    /// browser run must bring back.
    pub expected: BTreeMap<String, String>,
    /// The part of `expected` the robot can find: the page and what its
    /// HTML and recorded stylesheets name, transitively (a request a
    /// script made is recorded, by `pagewire record` with Chromium, but no
    /// robot finds it).
    pub robot_expected: BTreeMap<String, String>,
    /// Body bytes per target, for the composition table.
    sizes: BTreeMap<String, (usize, String)>,
    /// Every recorded origin (a browser is pointed at each:
    /// [`crate::webreplay`]).
    pub origins: Vec<crate::webreplay::Origin>,
}

impl ReplayPage {
    /// Whether the page itself is https (the robot's HTTP/1.x strategies
    /// cannot ask for it).
    pub fn page_is_https(&self) -> bool {
        self.url
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    }

    /// The page's URL as the robot's h2 and h3 strategies ask the TLS
    /// listener for it: an http page keeps its authority with the port
    /// written out (`http://a.test/x` is `https://a.test:80/x`), so the
    /// requests carry the recorded `Host` and match the archive.
    pub fn https_url(&self) -> String {
        if self.page_is_https() {
            return self.url.clone();
        }
        let Some((_, authority, target)) = split_url(&self.url) else {
            return self.url.clone();
        };
        let authority = match crate::webreplay::Origin::of_url(&self.url) {
            Ok(o) => format!(
                "{}:{}",
                if o.host.contains(':') {
                    format!("[{}]", o.host)
                } else {
                    o.host
                },
                o.port
            ),
            Err(_) => authority.to_string(),
        };
        format!(
            "https://{authority}{}",
            if target.is_empty() { "/" } else { target }
        )
    }

    /// Whether some recorded origin is https (a browser run needs the TLS
    /// listener then).
    pub fn has_https(&self) -> bool {
        self.origins.iter().any(crate::webreplay::Origin::is_https)
    }

    /// Every recorded host name (for the TLS listener's certificate).
    pub fn hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.origins.iter().map(|o| o.host.clone()).collect();
        v.dedup();
        v
    }
}

impl ReplayPage {
    /// Loads `archive`; the page is `page` (a recorded URL) or the first
    /// recorded 200 GET whose Content-Type is HTML.
    pub fn load(archive: &Path, page: Option<&str>) -> Result<ReplayPage> {
        let a = Archive::load(archive).map_err(anyhow::Error::new)?;
        let ok = |e: &&pagewire_replay::Exchange| {
            e.status == 200 && e.method.eq_ignore_ascii_case("GET")
        };
        let page_ex = match page {
            Some(u) => a
                .exchanges
                .iter()
                .filter(ok)
                .find(|e| e.url == u)
                .with_context(|| format!("--replay-page {u}: no recorded 200 GET of that URL"))?,
            None => a
                .exchanges
                .iter()
                .filter(ok)
                .find(|e| {
                    e.header("content-type").is_some_and(|v| {
                        String::from_utf8_lossy(v)
                            .to_ascii_lowercase()
                            .contains("html")
                    })
                })
                .context("no recorded 200 GET of an HTML page: name it with --replay-page URL")?,
        };
        let Some((scheme, authority, _)) = split_url(&page_ex.url) else {
            bail!("the page URL {:?} is not absolute", page_ex.url);
        };
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            bail!(
                "the page {} is {scheme}: only http and https pages are replayed",
                page_ex.url
            );
        }
        let origin = pagewire_replay::normalize_authority(scheme, authority);
        let mut expected = BTreeMap::new();
        let mut sizes = BTreeMap::new();
        for e in a.exchanges.iter().filter(ok) {
            let Some(k) = e.key() else { continue };
            if k.authority != origin || expected.contains_key(&k.target) {
                continue;
            }
            let sha: String = Sha256::digest(&e.body)
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect();
            let ct = e
                .header("content-type")
                .map(|v| {
                    String::from_utf8_lossy(v)
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
                .unwrap_or_default();
            expected.insert(k.target.clone(), sha);
            sizes.insert(k.target, (e.body.len(), ct));
        }
        let robot_expected = robot_reachable(&a, &page_ex.url, &expected);
        let origins = crate::webreplay::origins(&a)?;
        Ok(ReplayPage {
            origins,
            robot_expected,
            archive: archive
                .canonicalize()
                .with_context(|| format!("find {}", archive.display()))?,
            url: page_ex.url.clone(),
            expected,
            sizes,
        })
    }

    /// The report's page section: objects and bytes by media type.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let total: usize = self.sizes.values().map(|(n, _)| n).sum();
        let _ = writeln!(
            s,
            "Recorded page (replayed from {}): {} -- {} objects, {} bytes",
            self.archive
                .file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default(),
            self.url,
            self.sizes.len(),
            total
        );
        let mut by_type: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for (n, ct) in self.sizes.values() {
            let e = by_type.entry(ct.as_str()).or_default();
            e.0 += 1;
            e.1 += n;
        }
        let _ = writeln!(s, "  {:<40} {:>8} {:>12}", "media type", "objects", "bytes");
        for (ct, (n, b)) in by_type {
            let ct = if ct.is_empty() { "(none)" } else { ct };
            let _ = writeln!(s, "  {ct:<40} {n:>8} {b:>12}");
        }
        s
    }
}

/// The targets of `expected` the robot can reach from `page`: the page,
/// then what each reached HTML page and stylesheet names (resolved against
/// its own URL) on the page's origin, transitively, as the robot follows
/// them.
fn robot_reachable(
    a: &Archive,
    page: &str,
    expected: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let body_of = |target: &str| {
        a.exchanges.iter().find(|e| {
            e.status == 200
                && e.method.eq_ignore_ascii_case("GET")
                && pagewire_discover::same_server_path(page, &e.url).as_deref() == Some(target)
        })
    };
    let mut reached = std::collections::BTreeSet::new();
    let mut todo = vec![page.to_string()];
    // Bounded: each target of `expected` is queued at most once.
    while let Some(url) = todo.pop() {
        let Some(target) = pagewire_discover::same_server_path(page, &url) else {
            continue;
        };
        if !expected.contains_key(&target) || !reached.insert(target.clone()) {
            continue;
        }
        let Some(e) = body_of(&target) else { continue };
        let ct = e
            .header("content-type")
            .map(|v| String::from_utf8_lossy(v).to_ascii_lowercase())
            .unwrap_or_default();
        if ct.contains("html") {
            todo.extend(pagewire_discover::Discoverer::all(&e.url, &e.body));
        } else if ct.contains("css") {
            let css = String::from_utf8_lossy(&e.body);
            todo.extend(
                pagewire_discover::css_urls(&css)
                    .iter()
                    .filter_map(|r| pagewire_discover::resolve(&e.url, r)),
            );
        }
    }
    expected
        .iter()
        .filter(|(t, _)| reached.contains(*t))
        .map(|(t, s)| (t.clone(), s.clone()))
        .collect()
}
