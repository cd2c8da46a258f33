//! Which handler answers a request: the static site (files, GETALL and
//! GETLIST, object packages) or a recorded site (`serve --replay`). The one
//! module that knows every handler; it sits above them in the module graph,
//! so the handlers know nothing of each other's callers and the
//! configuration (`policy`) knows none of them.

use std::sync::Arc;

use pagewire_h1::RequestHead;
use pagewire_site::store::Site;

use crate::getall;
use crate::handler::StaticSite;
use crate::io::WriteBuf;
use crate::replay::ReplaySite;
use crate::respond::{Answered, Ctx};

/// What a server answers requests from. `serve` takes anything that
/// converts into one: an `Arc<Site>` (the static handler) or an
/// `Arc<ReplaySite>`.
pub enum Handler {
    /// A site in memory, its response heads rendered once.
    Static {
        site: StaticSite,
        /// GETALL expansions, computed per page and origin on first use.
        getall: getall::Index,
    },
    /// A recorded site, answered by method, Host and target.
    Replay(Arc<ReplaySite>),
}

impl From<Arc<Site>> for Handler {
    /// Renders every resource's heads (the static handler's start-up work).
    fn from(site: Arc<Site>) -> Handler {
        Handler::Static {
            site: StaticSite::new(site),
            getall: getall::Index::new(),
        }
    }
}

impl From<Arc<ReplaySite>> for Handler {
    fn from(site: Arc<ReplaySite>) -> Handler {
        Handler::Replay(site)
    }
}

impl Handler {
    /// Answers one request; the response is appended to `out`.
    pub fn answer(&self, req: &RequestHead, ctx: Ctx<'_>, out: &mut WriteBuf) -> Answered {
        match self {
            Handler::Static { site, getall } => match getall::kind(req) {
                Some(kind) => getall::answer(site, getall, kind, req, ctx, out),
                None => site.answer(req, ctx, out),
            },
            Handler::Replay(replay) => replay.answer(req, ctx, out),
        }
    }

    /// A static resource's plain 200 for HTTP/2 and HTTP/3
    /// ([`StaticSite::plain`]); `None` for a recorded site and for every
    /// other answer.
    pub fn plain<'a, 'v>(
        &'a self,
        target: &str,
        accept: impl Iterator<Item = &'v [u8]>,
        accept_encoding: impl Iterator<Item = &'v [u8]>,
        scratch: &mut String,
    ) -> Option<crate::handler::PlainAnswer<'a>> {
        match self {
            Handler::Static { site, .. } => site.plain(target, accept, accept_encoding, scratch),
            Handler::Replay(_) => None,
        }
    }

    /// How long to wait before the first byte of the answer to `req`: a
    /// recorded site's server think time, when it replays them; zero for
    /// everything else.
    pub fn think_time(&self, req: &RequestHead) -> std::time::Duration {
        match self {
            Handler::Static { .. } => std::time::Duration::ZERO,
            Handler::Replay(replay) => replay.think_time(req),
        }
    }

    /// Whether a decoded path names a resource of a static site (for the
    /// prefetch predictor and its hints; a recorded site has none).
    pub fn contains(&self, path: &str) -> bool {
        match self {
            Handler::Static { site, .. } => site.contains(path),
            Handler::Replay(_) => false,
        }
    }

    /// For a GETALL/GETLIST request to a static site: the decoded paths of
    /// the objects its answer carries (`getall::sent_paths`). `None` for
    /// any other request, and for every request to a recorded site.
    pub fn getall_sent_paths(&self, req: &RequestHead, body: &[u8]) -> Option<Vec<String>> {
        match self {
            Handler::Static { site, getall } => {
                getall::kind(req).map(|kind| getall::sent_paths(site, getall, kind, req, body))
            }
            Handler::Replay(_) => None,
        }
    }
}
