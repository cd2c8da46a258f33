//! Object packages (Fujinoki, Sanjay, Shah, "Web File Transmission by Object
//! Packaging"): a page and every object it embeds in one response, for a
//! client that asks for it with `Accept: application/vnd.pagewire.objpack`.
//!
//! As in the paper, packages are "constructed in advance": every HTML page
//! of the site gets its package when the site is loaded, and a request for
//! it is answered from memory like any other resource. The package is a
//! second representation of the page's URL, chosen by content negotiation
//! (RFC 9110 §12.5.1), so both representations carry `Vary: Accept`; the
//! package has its own strong entity tag (a different representation must
//! have a different tag, RFC 9110 §8.8.3) and answers conditional requests
//! with 304. A `Range` on the package is ignored (RFC 9110 §14.2 allows it):
//! the package is one unit, its own framing tells where each file ends.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pagewire_h1::{write_header, write_header_u64, write_status_line, RequestHead, Version};
use pagewire_objpack::{page_package, Limits, MEDIA_TYPE};
use pagewire_site::store::Site;
use sha2::{Digest, Sha256};

use crate::io::WriteBuf;
use crate::respond::{finish_head, preconditions, Answered, Ctx, Precondition, SERVER};

/// Most memory all packages of a site may take. Packages copy the bodies
/// of the objects they hold; beyond this, later pages get none (and are
/// served as plain HTML), so a large site cannot double its footprint.
pub const MAX_PACKAGES_BYTES: u64 = 1 << 30;

/// One page's package, ready to send.
pub struct Package {
    body: Bytes,
    etag: String,
    last_modified: SystemTime,
    ok: Box<[u8]>,
    not_modified: Box<[u8]>,
    /// Files in the package (page included).
    pub files: usize,
}

/// The packages of a site, by the page's resource index.
#[derive(Default)]
pub struct Packages {
    by_resource: HashMap<usize, Package>,
}

impl Packages {
    /// Builds the package of every HTML page of `site`.
    pub fn build(site: &Site) -> Packages {
        let mut by_resource = HashMap::new();
        let mut total = 0u64;
        for (i, r) in site.resources().iter().enumerate() {
            if !r.media_type.starts_with("text/html") {
                continue;
            }
            let Ok(pkg) = page_package(site, &r.path, &Limits::default()) else {
                continue;
            };
            total += pkg.manifest.package_bytes();
            if total > MAX_PACKAGES_BYTES {
                break;
            }
            let body = Bytes::from(pkg.assemble(site));
            // The table names every file with its own strong tag (and the
            // sizes), so it determines the package's bytes: hashing it is
            // enough for a strong tag of the whole.
            let digest = Sha256::digest(pkg.manifest.head());
            let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
            let etag = format!("\"objp-{hex}\"");
            let last_modified = pkg
                .files
                .iter()
                .map(|&f| site.resources()[f].last_modified)
                .max()
                .unwrap_or(UNIX_EPOCH);
            let lm_http = httpdate::fmt_http_date(last_modified);
            // Through the h1 writers, like every other head: a value the
            // encoder refuses leaves the page without a package, never a
            // split response.
            let mut ok = Vec::with_capacity(256);
            let mut nm = Vec::with_capacity(128);
            let heads_ok = write_status_line(&mut ok, Version::Http11, 200).is_ok()
                && write_header(&mut ok, "Server", SERVER.as_bytes()).is_ok()
                && write_header(&mut ok, "Content-Type", MEDIA_TYPE.as_bytes()).is_ok()
                && write_header(&mut ok, "ETag", etag.as_bytes()).is_ok()
                && write_header(&mut ok, "Last-Modified", lm_http.as_bytes()).is_ok()
                && write_header(&mut ok, "Vary", b"Accept").is_ok()
                && write_header_u64(&mut ok, "Content-Length", body.len() as u64).is_ok()
                && write_status_line(&mut nm, Version::Http11, 304).is_ok()
                && write_header(&mut nm, "Server", SERVER.as_bytes()).is_ok()
                && write_header(&mut nm, "ETag", etag.as_bytes()).is_ok()
                && write_header(&mut nm, "Vary", b"Accept").is_ok();
            if !heads_ok {
                continue;
            }
            by_resource.insert(
                i,
                Package {
                    body,
                    etag,
                    last_modified,
                    ok: ok.into(),
                    not_modified: nm.into(),
                    files: pkg.files.len(),
                },
            );
        }
        Packages { by_resource }
    }

    /// Whether resource `i` has a package (its plain responses then also
    /// vary on Accept).
    pub fn has(&self, i: usize) -> bool {
        self.by_resource.contains_key(&i)
    }

    /// The package of resource `i` if the request asks for packages.
    pub fn wanted(&self, i: usize, req: &RequestHead) -> Option<&Package> {
        let p = self.by_resource.get(&i)?;
        req.headers("accept").any(accepts_package).then_some(p)
    }

    /// Whether a request with these `Accept` values gets resource `i`'s
    /// package ([`Packages::wanted`] on the values alone).
    pub fn wanted_by<'v>(&self, i: usize, mut accept: impl Iterator<Item = &'v [u8]>) -> bool {
        self.has(i) && accept.any(accepts_package)
    }
}

impl Package {
    /// Writes the response for a GET or HEAD of the package.
    pub fn answer(
        &self,
        req: &RequestHead,
        ctx: Ctx<'_>,
        head_only: bool,
        index: usize,
        out: &mut WriteBuf,
    ) -> Answered {
        let mut answered = Answered {
            status: 200,
            body_bytes: 0,
            resource: Some(index),
        };
        match preconditions(req, &self.etag, self.last_modified) {
            Precondition::NotModified => {
                out.put(&self.not_modified);
                finish_head(out, ctx.conn, ctx.extra);
                answered.status = 304;
                return answered;
            }
            Precondition::Failed => {
                let mut a = crate::respond::simple(
                    out,
                    412,
                    ctx.conn,
                    &[],
                    "precondition failed\n",
                    head_only,
                );
                a.resource = Some(index);
                return a;
            }
            Precondition::Proceed => {}
        }
        out.put(&self.ok);
        finish_head(out, ctx.conn, ctx.extra);
        if !head_only {
            out.put_body(&self.body);
            answered.body_bytes = self.body.len() as u64;
        }
        answered
    }
}

/// True when an `Accept` field value lists the package media type with a
/// non-zero weight. Wildcards do not count: a browser's `*/*` means "I take
/// whatever you have", not "send me a package I cannot unpack".
pub fn accepts_package(value: &[u8]) -> bool {
    let Ok(value) = std::str::from_utf8(value) else {
        return false;
    };
    value.split(',').any(|item| {
        let mut parts = item.split(';');
        let ty = parts.next().unwrap_or("").trim();
        if !ty.eq_ignore_ascii_case(MEDIA_TYPE) {
            return false;
        }
        for p in parts {
            let p = p.trim();
            if let Some(q) = p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                return q.trim().parse::<f32>().map(|q| q > 0.0).unwrap_or(false);
            }
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_needs_the_type_by_name_with_nonzero_q() {
        assert!(accepts_package(b"application/vnd.pagewire.objpack"));
        assert!(accepts_package(
            b"text/html;q=0.9, Application/Vnd.Pagewire.Objpack;q=1"
        ));
        assert!(!accepts_package(b"*/*"));
        assert!(!accepts_package(b"application/*"));
        assert!(!accepts_package(b"application/vnd.pagewire.objpack;q=0"));
        assert!(!accepts_package(b"text/html"));
    }
}
