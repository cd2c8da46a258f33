//! The package of one page: the page and every object on its own server that
//! it embeds, in document order, built from a loaded [`Site`].
//!
//! Embedded objects are what `pagewire-discover` finds in the HTML (images,
//! scripts, stylesheets, `url()` in inline CSS); a stylesheet's own `url()`
//! and `@import` references follow it, depth first. Each object appears once
//! (at its first reference). References to other servers, and to paths the
//! site does not have, are listed in [`PagePackage::missing`] and left out.

use std::collections::HashSet;
use std::time::UNIX_EPOCH;

use pagewire_discover::{css_urls, resolve, same_server_path, Discoverer};
use pagewire_site::store::{Resource, Site};

use crate::{Attributes, Entry, Error, Limits, Manifest, ETAG_FIELD_BYTES, MEDIA_TYPE_FIELD_BYTES};

/// Stylesheets importing stylesheets: deeper than this is a loop or abuse.
const MAX_CSS_DEPTH: usize = 8;

/// A page's package, ready to send: the table and the positions (in
/// [`Site::resources`]) of the files in package order.
#[derive(Debug, Clone)]
pub struct PagePackage {
    pub manifest: Manifest,
    /// Site positions of the files, page first.
    pub files: Vec<usize>,
    /// References found but not packed: other servers, or not in the site.
    pub missing: Vec<String>,
}

impl PagePackage {
    /// The whole package in memory (the site's bodies are in memory).
    pub fn assemble(&self, site: &Site) -> Vec<u8> {
        let r = site.resources();
        self.manifest
            .assemble(self.files.iter().map(|&i| r[i].body.as_ref()))
    }
}

/// What a package says about a site resource: its media type, strong ETag
/// and Last-Modified (a value too long for its field is left out, never cut).
pub fn attributes_of(r: &Resource) -> Attributes {
    let lm = r
        .last_modified
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let media_type = if r.media_type.len() <= MEDIA_TYPE_FIELD_BYTES {
        r.media_type.clone()
    } else {
        String::new()
    };
    let a = Attributes {
        text: r.media_type.starts_with("text/") || r.media_type.contains("charset="),
        executable: false,
        read_only: true,
        media_type,
        etag: if r.etag.len() <= ETAG_FIELD_BYTES {
            r.etag.clone()
        } else {
            String::new()
        },
        last_modified: (lm != 0).then_some(lm),
    };
    if a.check().is_ok() {
        a
    } else {
        Attributes {
            read_only: true,
            ..Attributes::default()
        }
    }
}

/// Percent-decodes a URL path; `None` if an escape is malformed or the
/// result is not UTF-8.
fn percent_decode(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Errors building a page's package.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("the site has no page {0:?}")]
    NoPage(String),
    #[error(transparent)]
    Format(#[from] Error),
}

struct Walk<'s> {
    site: &'s Site,
    page: String,
    seen: HashSet<usize>,
    files: Vec<usize>,
    missing: Vec<String>,
}

impl Walk<'_> {
    /// Adds the object `url` refers to, then (for a stylesheet) its
    /// references.
    fn add(&mut self, url: &str, depth: usize) {
        let Some(target) = same_server_path(&self.page, url) else {
            self.missing.push(url.to_string());
            return;
        };
        let path = target.split('?').next().unwrap_or("");
        let Some(pos) = percent_decode(path).and_then(|p| self.site.position(&p)) else {
            self.missing.push(url.to_string());
            return;
        };
        if !self.seen.insert(pos) {
            return;
        }
        self.files.push(pos);
        let r = &self.site.resources()[pos];
        if r.media_type.starts_with("text/css") && depth < MAX_CSS_DEPTH {
            let css = String::from_utf8_lossy(&r.body);
            for reference in css_urls(&css) {
                let reference = pagewire_discover::decode_entities(reference.trim());
                if let Some(u) = resolve(&r.path, &reference) {
                    self.add(&u, depth + 1);
                }
            }
        }
    }
}

/// The package of `page` (a decoded path such as `/` or `/a/index.html`).
pub fn page_package(site: &Site, page: &str, limits: &Limits) -> Result<PagePackage, PageError> {
    let pos = site
        .position(page)
        .ok_or_else(|| PageError::NoPage(page.to_string()))?;
    let html = &site.resources()[pos];
    let mut walk = Walk {
        site,
        page: html.path.clone(),
        seen: HashSet::from([pos]),
        files: vec![pos],
        missing: Vec::new(),
    };
    if html.media_type.starts_with("text/html") {
        for url in Discoverer::all(&html.path, &html.body) {
            walk.add(&url, 0);
        }
    }
    let entries = walk
        .files
        .iter()
        .map(|&i| {
            let r = &site.resources()[i];
            Entry {
                name: r.path.trim_start_matches('/').to_string(),
                size: r.body.len() as u64,
                attrs: attributes_of(r),
            }
        })
        .collect();
    Ok(PagePackage {
        manifest: Manifest::new(entries, limits)?,
        files: walk.files,
        missing: walk.missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use pagewire_site::store::SiteFile;
    use std::time::SystemTime;

    fn site(files: &[(&str, &str)]) -> Site {
        Site::from_files(
            files
                .iter()
                .map(|(p, b)| SiteFile {
                    path: p.to_string(),
                    body: Bytes::from(b.to_string()),
                    modified: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000),
                })
                .collect(),
        )
    }

    #[test]
    fn page_then_objects_in_document_order_with_css_urls() {
        let s = site(&[
            ("/d/index.html", "<link rel=stylesheet href=s.css><img src='../i/a%20b.gif'><img src=/i/c.gif><img src=http://other/x.gif><img src=nope.gif><img src=/i/c.gif>"),
            // (`@import` first: browsers ignore one after a rule.)
            ("/d/s.css", "@import 'more.css'; body{background:url(bg.png)}"),
            ("/d/bg.png", "PNG"),
            ("/d/more.css", "p{background:url(\"/i/c.gif\")}"),
            ("/i/a b.gif", "GIF1"),
            ("/i/c.gif", "GIF2"),
            ("/unused", "x"),
        ]);
        let p = page_package(&s, "/d/", &Limits::default()).unwrap();
        let names: Vec<_> = p
            .manifest
            .entries()
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "d/index.html",
                "d/s.css",
                "d/more.css",
                "i/c.gif",
                "d/bg.png",
                "i/a b.gif"
            ]
        );
        assert_eq!(p.missing, ["http://other/x.gif", "/d/nope.gif"]);
        let e = &p.manifest.entries()[0];
        assert!(e.attrs.media_type.starts_with("text/html"));
        assert_eq!(e.attrs.etag, s.get("/d/index.html").unwrap().etag);
        assert_eq!(e.attrs.last_modified, Some(1_000_000));
        assert_eq!(p.assemble(&s).len() as u64, p.manifest.package_bytes());
    }

    #[test]
    fn unknown_page_is_an_error() {
        let s = site(&[("/a.html", "x")]);
        assert!(matches!(
            page_package(&s, "/b.html", &Limits::default()),
            Err(PageError::NoPage(_))
        ));
    }
}
