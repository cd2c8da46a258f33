//! `--strategy getall` (Padmanabhan & Mogul, "Improving HTTP Latency",
//! section 5) against pagewire's server (which understands it) and nginx
//! (which ignores the `Getall` field): every object byte-exact either way.

use crate::common;

use std::collections::HashSet;

use common::{make_site, pw_config, Nginx, PwServer, SiteDir};
use pagewire_client::{
    fetch_blocking, FetchConfig, FetchReport, ObjectKind, Outcome, RequestMethod, Strategy,
};

const PAGE: &str = "/index.html";

fn fetch(url: &str, cache: Option<&std::path::Path>) -> FetchReport {
    let mut cfg = FetchConfig::new(url, Strategy::Getall);
    cfg.cache_dir = cache.map(|p| p.to_path_buf());
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("getall {url}: {e}"))
}

/// Each of the page's 43 objects once, with the bytes on disk.
fn assert_byte_exact(site: &SiteDir, r: &FetchReport) {
    assert_eq!(r.objects.len(), 43);
    let mut seen = HashSet::new();
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert!(seen.insert(path.clone()), "{path} twice");
        // 304: the cached copy, revalidated (its bytes are checked all the same).
        assert!(o.status == 200 || o.status == 304, "{path}: {}", o.status);
        assert_eq!(o.sha256, site.sha(&path), "{path} not byte-exact");
        assert_eq!(o.size as usize, site.files[&path].len());
    }
    assert_eq!(r.objects[0].kind, ObjectKind::Page);
}

#[test]
fn first_visit_is_one_request_then_only_missing_objects() {
    let site = make_site();
    let server = PwServer::start(site.root(), pw_config());
    let cache = tempfile::tempdir().unwrap();
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 1, "the whole Microscape page in one request");
    assert_eq!(r.connections_opened, 1);
    assert_eq!(r.objects[0].outcome, Outcome::Fetched);
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::GetallPart));

    // Later visit: one GETLIST naming the page, with its entity tag; the
    // page comes back as a 304 part, the images from the cache.
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 1);
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    assert_eq!(r.objects[0].outcome, Outcome::NotModified);
    assert!(r.objects[0]
        .request_head
        .starts_with("GETLIST / HTTP/1.1\r\n"));
    assert!(r.objects[0].request_head.contains("If-None-Match: \""));
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::FromCache));

    // Two images gone from the cache: still one message, the page and both.
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    let gone: Vec<String> = r.objects[5..7].iter().map(|o| o.url.clone()).collect();
    for u in &gone {
        std::fs::remove_file(c.path_of(u)).unwrap();
    }
    let r = fetch(&server.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 1);
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    let parts: Vec<&str> = r
        .objects
        .iter()
        .filter(|o| o.outcome == Outcome::GetallPart)
        .map(|o| o.url.as_str())
        .collect();
    assert_eq!(parts, gone.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.requests_per_connection, vec![1]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn nginx_ignores_the_field_and_the_robot_pipelines_the_rest() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let r = fetch(&nginx.url(PAGE), None);
    assert_byte_exact(&site, &r);
    assert_eq!(r.requests, 43);
    assert_eq!(r.connections_opened, 1);
    assert!(r.connections[0].pipelined);
    assert!(r.objects.iter().all(|o| o.outcome == Outcome::Fetched));
    // The page request did ask for GETALL.
    assert!(r.objects[0].request_head.contains("Getall: 1\r\n"));
    let log = nginx.access_log(43);
    assert_eq!(log.len(), 43, "{log:?}");
}

#[test]
fn nginx_refuses_getlist_and_the_robot_falls_back_to_gets() {
    let site = make_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let first = fetch(&nginx.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &first);
    let c = pagewire_client::Cache::open(cache.path()).unwrap();
    for o in &first.objects[10..13] {
        std::fs::remove_file(c.path_of(&o.url)).unwrap();
    }
    let r = fetch(&nginx.url(PAGE), Some(cache.path()));
    assert_byte_exact(&site, &r);
    // The one-message GETLIST nginx does not know, then the page by a
    // conditional GET (304: it did not change) and the three by GET.
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    assert_eq!(r.requests_by_method.get(&RequestMethod::Get), Some(&4));
    assert_eq!(r.objects[0].outcome, Outcome::NotModified);
    assert_eq!(
        r.objects
            .iter()
            .filter(|o| o.outcome == Outcome::Fetched)
            .count(),
        3
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("GETLIST answered 405")),
        "{:?}",
        r.warnings
    );
}

/// A page whose stylesheet names images (`url()`, `@import` of a sheet
/// with its own image) and a font the text uses: GETALL must carry what a browser fetches.
fn styled_site() -> SiteDir {
    let dir = tempfile::tempdir().unwrap();
    // Apache's children run as www-data: the document root must be readable.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let gif = |n: u8| {
        let mut g = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;".to_vec();
        g.push(n);
        g
    };
    let files: Vec<(&str, Vec<u8>)> = vec![
        (
            "/styled.html",
            b"<!DOCTYPE html><html><head><title>s</title>\n<link rel=\"stylesheet\" href=\"css/site.css\">\n</head><body><h1>Styled</h1><img src=\"img/logo.gif\"></body></html>\n".to_vec(),
        ),
        (
            "/css/site.css",
            b"@import url(\"more.css\");\n@font-face { font-family: Head; src: url(../fonts/head.woff2) format(\"woff2\"); }\nh1 { font-family: Head, serif; background: url(../img/h1.gif) }\nbody { background: url(../img/body.gif) }\n".to_vec(),
        ),
        ("/css/more.css", b"img { border-image: url(../img/border.gif) }\n".to_vec()),
        ("/img/logo.gif", gif(1)),
        ("/img/h1.gif", gif(2)),
        ("/img/body.gif", gif(3)),
        ("/img/border.gif", gif(4)),
        ("/fonts/head.woff2", b"wOF2 not really a font".to_vec()),
    ];
    let mut map = std::collections::HashMap::new();
    for (p, b) in files {
        let f = dir.path().join(p.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, &b).unwrap();
        std::fs::set_permissions(f.parent().unwrap(), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        map.insert(p.to_string(), b);
    }
    SiteDir { dir, files: map }
}

const STYLED: &str = "/styled.html";

/// Every file of the styled site once, byte-exact.
fn assert_styled(site: &SiteDir, r: &FetchReport) {
    let mut got: Vec<String> = Vec::new();
    for o in &r.objects {
        let path = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
        assert!(o.status == 200 || o.status == 304, "{path}: {}", o.status);
        assert_eq!(o.sha256, site.sha(&path), "{path} not byte-exact");
        // The bytes themselves, against the file served (`keep_bodies`).
        let body = o
            .body
            .as_ref()
            .unwrap_or_else(|| panic!("{path}: no body kept"));
        assert!(body[..] == site.files[&path][..], "{path}: bytes differ");
        got.push(path);
    }
    got.sort();
    let mut want: Vec<String> = site.files.keys().cloned().collect();
    want.sort();
    assert_eq!(got, want);
    assert!(
        r.warnings.iter().all(|w| !w.contains("not fetched")),
        "{:?}",
        r.warnings
    );
}

fn fetch_with(url: &str, cache: &std::path::Path, revalidate: bool) -> FetchReport {
    let mut cfg = FetchConfig::new(url, Strategy::Getall);
    cfg.cache_dir = Some(cache.to_path_buf());
    cfg.revalidate = revalidate;
    cfg.keep_bodies = true;
    fetch_blocking(cfg).unwrap_or_else(|e| panic!("getall {url}: {e}"))
}

#[test]
fn styled_page_is_one_request_on_the_first_and_on_later_visits() {
    let site = styled_site();
    let server = PwServer::start(site.root(), pw_config());
    let cache = tempfile::tempdir().unwrap();
    let url = server.url(STYLED);
    // First visit: the stylesheets' images and the font came in the answer.
    let r = fetch_with(&url, cache.path(), false);
    assert_styled(&site, &r);
    assert_eq!(r.requests, 1, "{:?}", r.requests_by_method);
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::GetallPart));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // Later visit, revalidating everything: one GETLIST with the page, the
    // list and every cached entity tag; all 304 parts.
    let r = fetch_with(&url, cache.path(), true);
    assert_styled(&site, &r);
    assert_eq!(r.requests, 1, "{:?}", r.requests_by_method);
    assert_eq!(r.requests_by_method.get(&RequestMethod::Getlist), Some(&1));
    assert!(r.objects.iter().all(|o| o.outcome == Outcome::NotModified));
    let head = &r.objects[0].request_head;
    assert!(head.starts_with("GETLIST / HTTP/1.1\r\n"), "{head}");
    assert_eq!(
        head.matches("\", \"").count(),
        site.files.len() - 1,
        "{head}"
    );
    // An image changed on the server: still one request; that image whole.
    std::fs::write(site.root().join("img/h1.gif"), b"GIF89a changed").unwrap();
    let mut site = site;
    site.files
        .insert("/img/h1.gif".into(), b"GIF89a changed".to_vec());
    let port = server.addr.port();
    drop(server);
    let server = PwServer::start_on(site.root(), pw_config(), port);
    let url = server.url(STYLED);
    let r = fetch_with(&url, cache.path(), true);
    assert_styled(&site, &r);
    assert_eq!(r.requests, 1);
    let changed: Vec<&str> = r
        .objects
        .iter()
        .filter(|o| o.outcome == Outcome::GetallPart)
        .map(|o| o.url.as_str())
        .collect();
    assert_eq!(changed, vec![server.url("/img/h1.gif")]);
    // Not revalidating: the page in one GETLIST; the rest from the cache.
    let r = fetch_with(&url, cache.path(), false);
    assert_styled(&site, &r);
    assert_eq!(r.requests, 1);
    assert!(r.objects[1..]
        .iter()
        .all(|o| o.outcome == Outcome::FromCache));
}

/// The same two visits against servers that know neither GETALL nor
/// GETLIST: the objects are the same bytes, fetched the traditional way.
fn styled_fallback(url: &str) -> (FetchReport, FetchReport) {
    let cache = tempfile::tempdir().unwrap();
    let first = fetch_with(url, cache.path(), false);
    let later = fetch_with(url, cache.path(), true);
    (first, later)
}

#[test]
fn styled_page_falls_back_on_nginx_byte_identical() {
    let site = styled_site();
    let Some(nginx) = Nginx::start(site.root(), "") else {
        return;
    };
    let (first, later) = styled_fallback(&nginx.url(STYLED));
    assert_styled(&site, &first);
    assert_eq!(first.requests as usize, site.files.len());
    assert_styled(&site, &later);
    assert!(later
        .warnings
        .iter()
        .any(|w| w.contains("GETLIST answered 405")));
    // The refused GETLIST, then every object by conditional GET: all 304.
    assert_eq!(later.requests as usize, site.files.len() + 1);
    assert!(later
        .objects
        .iter()
        .all(|o| o.outcome == Outcome::NotModified));
    // nginx's own count: every object once per visit, and the refused
    // GETLIST in between.
    let n = site.files.len();
    let log = nginx.access_log(2 * n + 1);
    assert_eq!(log.len(), 2 * n + 1, "{log:?}");
    assert!(log[0].starts_with("GET /styled.html 200 "), "{}", log[0]);
    assert!(log[n].starts_with("GETLIST / 405 "), "{}", log[n]);
    assert_eq!(log.iter().filter(|l| l.contains(" 304 ")).count(), n);
}

#[test]
fn styled_page_falls_back_on_apache_byte_identical() {
    let site = styled_site();
    let Some(apache) = Apache::start(site.root()) else {
        return;
    };
    let (first, later) = styled_fallback(&apache.url(STYLED));
    assert_styled(&site, &first);
    assert_eq!(first.requests as usize, site.files.len());
    assert_styled(&site, &later);
    assert!(
        later
            .warnings
            .iter()
            .any(|w| w.contains("GETLIST answered")),
        "{:?}",
        later.warnings
    );
    assert!(later
        .objects
        .iter()
        .all(|o| o.outcome == Outcome::NotModified));
}

/// A real Apache 2.4 (prefork, foreground) on a free loopback port, stopped
/// on `Drop`.
struct Apache {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

impl Apache {
    /// None when apache2 is not installed: the test fails under
    /// PAGEWIRE_REQUIRE_ALL=1 and is reported skipped otherwise.
    fn start(root: &std::path::Path) -> Option<Apache> {
        let bin = pagewire_testreq::require_peer("apache2")?;
        let m = "/usr/lib/apache2/modules";
        let dir = tempfile::tempdir().unwrap();
        let port = common::free_port();
        let d = dir.path().display();
        let conf = format!(
            "LoadModule mpm_prefork_module {m}/mod_mpm_prefork.so\n\
             LoadModule authz_core_module {m}/mod_authz_core.so\n\
             LoadModule mime_module {m}/mod_mime.so\n\
             ServerName getall.test\n\
             ServerRoot {d}\n\
             DefaultRuntimeDir {d}\n\
             PidFile {d}/httpd.pid\n\
             Mutex file:{d} default\n\
             ErrorLog {d}/error.log\n\
             LogLevel warn\n\
             User www-data\n\
             Group www-data\n\
             Listen 127.0.0.1:{port}\n\
             DocumentRoot {root}\n\
             <Directory />\n  Require all denied\n</Directory>\n\
             <Directory {root}>\n  Require all granted\n</Directory>\n\
             TypesConfig /dev/null\n\
             AddType text/html .html\n\
             AddType text/css .css\n\
             AddType image/gif .gif\n\
             AddType font/woff2 .woff2\n\
             KeepAlive On\n\
             MaxKeepAliveRequests 150\n\
             StartServers 1\n\
             MinSpareServers 1\n\
             MaxSpareServers 2\n",
            root = root.display()
        );
        let conf_path = dir.path().join("apache2.conf");
        std::fs::write(&conf_path, conf).unwrap();
        use std::os::unix::process::CommandExt;
        // Its own process group: prefork stops its children with killpg(2),
        // which would otherwise reach this test process too.
        let mut child = std::process::Command::new(&bin)
            .process_group(0)
            .arg("-f")
            .arg(&conf_path)
            .arg("-DFOREGROUND")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn apache2");
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200))
                .is_ok()
            {
                break;
            }
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "apache2 exited ({st}): {}",
                    std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "apache2 did not listen within 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(Apache {
            child,
            addr,
            _dir: dir,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        // SIGTERM to the parent: Apache stops its children itself.
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A page with most kinds of reference a browser follows: stylesheets
/// (one for print only), an `@import` in a `<style>` block and one with a
/// media query in a sheet, `image-set()`, `srcset` (1x and 2x), `<picture>`,
/// a preload, an icon, a script, `input type=image`, `body background`, a
/// `style` attribute, `@media` blocks that match and that do not, and a
/// `@font-face` with two sources that the text uses.
fn rich_site() -> SiteDir {
    let dir = tempfile::tempdir().unwrap();
    let mut map = std::collections::HashMap::new();
    for (p, b) in rich_files() {
        let f = dir.path().join(p.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, &b).unwrap();
        map.insert(p, b);
    }
    SiteDir { dir, files: map }
}

/// The files of [`rich_site`]: (path, content).
fn rich_files() -> Vec<(String, Vec<u8>)> {
    let gif = |n: u8| {
        let mut g = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;".to_vec();
        g.push(n);
        g
    };
    let mut files: Vec<(String, Vec<u8>)> = vec![
        (
            "/rich.html".into(),
            br#"<!DOCTYPE html><html><head><title>rich</title>
<link rel="stylesheet" href="r/a.css">
<link rel="stylesheet" href="r/print.css" media="print">
<link rel="icon" href="r/favicon.ico">
<link rel="preload" as="image" href="r/pre.gif">
<script src="r/app.js"></script>
<style>@import "r/inl.css"; .x { background-image: image-set(url(r/s1.gif) 1x, url(r/s2.gif) 2x) }</style>
</head><body background="r/bodybg.gif">
<h1 class="x">Rich</h1>
<img src="r/a.gif" srcset="r/a.gif 1x, r/a2.gif 2x">
<picture><source srcset="r/pic.gif" type="image/gif"><img src="r/picfallback.gif"></picture>
<form><input type="image" src="r/go.gif"></form>
<div style="background: url(r/div.gif)">d</div>
<p class="f">text</p>
</body></html>
"#
            .to_vec(),
        ),
        (
            "/r/a.css".into(),
            b"@import url(b.css) screen;\n\
              @font-face { font-family: F; src: url(f.woff2) format(\"woff2\"), url(f.woff) format(\"woff\") }\n\
              .f { font-family: F, serif }\n\
              @media print { body { background: url(printbg.gif) } }\n\
              @media (min-width: 100px) { h1 { border-image: url(wide.gif) 30 } }\n"
                .to_vec(),
        ),
        (
            "/r/b.css".into(),
            b"p { background: url(../r/deep.gif) }\n".to_vec(),
        ),
        (
            "/r/inl.css".into(),
            b"div { outline: 1px solid; background: url('inl.gif') }\n".to_vec(),
        ),
        (
            "/r/print.css".into(),
            b"body { background: url(printsheet.gif) }\n".to_vec(),
        ),
        ("/r/app.js".into(), b"void 0;\n".to_vec()),
        ("/r/f.woff2".into(), b"wOF2 font".to_vec()),
        ("/r/f.woff".into(), b"wOFF font".to_vec()),
    ];
    for (i, g) in [
        "favicon.ico",
        "pre.gif",
        "s1.gif",
        "s2.gif",
        "bodybg.gif",
        "a.gif",
        "a2.gif",
        "pic.gif",
        "picfallback.gif",
        "go.gif",
        "div.gif",
        "printbg.gif",
        "wide.gif",
        "deep.gif",
        "inl.gif",
        "printsheet.gif",
    ]
    .iter()
    .enumerate()
    {
        files.push((format!("/r/{g}"), gif(i as u8)));
    }
    files
}

/// GETALL answers with what the robot fetches: the set of objects a first
/// visit by `pipeline` (one GET per object the robot's discovery finds)
/// and by `getall` (one request, the server's expansion with the same
/// discovery) is the same, byte for byte, and the server logged one request.
#[test]
fn getall_carries_exactly_what_the_robot_fetches() {
    let site = rich_site();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let server = PwServer::start(
        site.root(),
        pagewire_server::ServerConfig {
            access_log: Some(log.clone()),
            ..pw_config()
        },
    );
    let url = server.url("/rich.html");
    let paths = |r: &FetchReport| -> Vec<String> {
        let mut v: Vec<String> = r
            .objects
            .iter()
            .map(|o| {
                let p = format!("/{}", o.url.splitn(4, '/').nth(3).unwrap());
                assert_eq!(o.status, 200, "{p}");
                let body = o.body.as_ref().expect("kept body");
                assert!(body[..] == site.files[&p][..], "{p}: bytes differ");
                p
            })
            .collect();
        v.sort();
        v
    };
    let run = |strategy| {
        let mut cfg = FetchConfig::new(&url, strategy);
        cfg.keep_bodies = true;
        fetch_blocking(cfg).unwrap_or_else(|e| panic!("{url}: {e}"))
    };
    let pipelined = run(Strategy::Pipeline);
    let by_pipeline = paths(&pipelined);
    // Not a trivial agreement: the references that only a browser-grade
    // discovery finds are among them, what a 1x screen does not fetch is not.
    for p in [
        "/r/deep.gif",
        "/r/wide.gif",
        "/r/inl.gif",
        "/r/s1.gif",
        "/r/a.gif",
        "/r/f.woff2",
        "/r/print.css",
    ] {
        assert!(by_pipeline.contains(&p.to_string()), "{p}: {by_pipeline:?}");
    }
    for p in ["/r/a2.gif", "/r/s2.gif", "/r/printbg.gif", "/r/f.woff"] {
        assert!(
            !by_pipeline.contains(&p.to_string()),
            "{p}: {by_pipeline:?}"
        );
    }
    assert_eq!(pipelined.requests as usize, by_pipeline.len());
    let getall = run(Strategy::Getall);
    assert_eq!(paths(&getall), by_pipeline);
    assert_eq!(getall.requests, 1, "{:?}", getall.requests_by_method);
    assert!(getall.warnings.is_empty(), "{:?}", getall.warnings);
    drop(server);
    // The server's count, from its access log (complete once it stopped):
    // one GET per object, then the one GETALL.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), by_pipeline.len() + 1, "{text}");
    assert!(
        lines
            .last()
            .unwrap()
            .contains("\"GET /rich.html HTTP/1.1\" 200 "),
        "{text}"
    );
}
