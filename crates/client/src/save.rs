//! `--save DIR`: the fetched objects as files, laid out like `wget -p`
//! (`DIR/host[:port]/path`, `index.html` for a directory URL, the query kept
//! in the file name).

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::error::FetchError;
use crate::report::FetchReport;

/// The file for `url` under `dir`, or `None` if the URL cannot be mapped
/// safely (it would leave `dir`).
pub fn file_for(dir: &Path, url: &str) -> Option<PathBuf> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut rel = PathBuf::from(host.replace(['/', '\\'], "_"));
    let (p, q) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let mut p = p.to_string();
    if p.ends_with('/') {
        p.push_str("index.html");
    }
    if let Some(q) = q {
        p.push('?');
        p.push_str(&q.replace('/', "%2F"));
    }
    for comp in Path::new(p.trim_start_matches('/')).components() {
        match comp {
            Component::Normal(c) => rel.push(c),
            // Dot segments were removed when the URL was resolved; anything
            // else here would escape the directory.
            _ => return None,
        }
    }
    Some(dir.join(rel))
}

/// Writes one object's body under `dir` (temporary name, then rename: a
/// reader never sees half a file).
pub fn write_one(dir: &Path, url: &str, body: &[u8]) -> Result<PathBuf, FetchError> {
    let path = file_for(dir, url).ok_or_else(|| {
        FetchError::Config(format!("{url} cannot be saved under {}", dir.display()))
    })?;
    let io = |source| FetchError::Io {
        what: format!("cannot save {url} to {}", path.display()),
        source,
    };
    let parent = path.parent().unwrap_or(dir);
    fs::create_dir_all(parent).map_err(io)?;
    let mut tmp = tempfile::NamedTempFile::new_in(parent).map_err(io)?;
    std::io::Write::write_all(&mut tmp, body).map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(path)
}

/// What `save` wrote, and what it skipped with the reason.
#[derive(Debug, Default)]
pub struct Saved {
    pub files: Vec<PathBuf>,
    /// One line per object not saved (a name the file system refuses, a
    /// URL that cannot be mapped under the directory).
    pub skipped: Vec<String>,
}

/// Longest file name segment most file systems take (ext4, XFS, btrfs,
/// tmpfs: `NAME_MAX`, bytes).
const NAME_MAX: usize = 255;

/// Writes every object with a body. One object that cannot be saved (its
/// name is too long for the file system, or maps outside `dir`) is skipped
/// with a line in `Saved::skipped`; the others are saved.
/// Local failures that concern the directory itself (read-only, full) stop
/// the save.
pub fn save(report: &FetchReport, dir: &Path) -> Result<Saved, FetchError> {
    let mut saved = Saved::default();
    for o in &report.objects {
        let Some(body) = &o.body else { continue };
        let Some(path) = file_for(dir, &o.url) else {
            saved.skipped.push(format!(
                "{}: not saved: it cannot be mapped under {}",
                o.url,
                dir.display()
            ));
            continue;
        };
        let long = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().len())
            .max()
            .unwrap_or(0);
        if long > NAME_MAX {
            saved.skipped.push(format!(
                "{}: not saved: a name in its path is {long} bytes (the limit is {NAME_MAX})",
                o.url
            ));
            continue;
        }
        let io = |source| FetchError::Io {
            what: format!("cannot save {} to {}", o.url, path.display()),
            source,
        };
        let result = match path.parent() {
            Some(parent) => fs::create_dir_all(parent).and_then(|()| fs::write(&path, body)),
            None => fs::write(&path, body),
        };
        match result {
            Ok(()) => saved.files.push(path),
            // A name this file system refuses (a shorter NAME_MAX, a
            // reserved character): this object only.
            Err(e) if matches!(e.raw_os_error(), Some(36 | 22 | 84)) => saved
                .skipped
                .push(format!("{}: not saved to {}: {e}", o.url, path.display())),
            Err(e) => return Err(io(e)),
        }
    }
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wget_like_paths() {
        let d = Path::new("/out");
        assert_eq!(
            file_for(d, "http://127.0.0.1:8080/").unwrap(),
            Path::new("/out/127.0.0.1:8080/index.html")
        );
        assert_eq!(
            file_for(d, "http://h/images/a.gif?v=1").unwrap(),
            Path::new("/out/h/images/a.gif?v=1")
        );
        assert_eq!(file_for(d, "http://h/a/../../x"), None);
    }
}
