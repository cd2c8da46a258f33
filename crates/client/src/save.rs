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

/// Writes every object with a body; returns the files written.
pub fn save(report: &FetchReport, dir: &Path) -> Result<Vec<PathBuf>, FetchError> {
    let mut written = Vec::new();
    for o in &report.objects {
        let Some(body) = &o.body else { continue };
        let Some(path) = file_for(dir, &o.url) else {
            continue;
        };
        let io = |source| FetchError::Io {
            what: format!("cannot save {} to {}", o.url, path.display()),
            source,
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io)?;
        }
        fs::write(&path, body).map_err(io)?;
        written.push(path);
    }
    Ok(written)
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
