//! `pagewire fetch --strategy getall` end to end against `pagewire serve`,
//! counted by the server: Padmanabhan & Mogul, "Improving HTTP Latency"
//! (section 5). A page whose stylesheet names a background image and
//! `@import`s a sheet with its own image (and a font the text uses, and a
//! `srcset` whose 2x candidate a 1x screen never fetches) is one request on
//! the first visit (GETALL: everything the robot would fetch) and one on a
//! later visit (GETLIST: the page, the list and every cached validator in
//! one message). The requests are counted from the server's access log,
//! which the prefetch simulator's reader reads as it is.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common;
use common::{run_bounded, Serve, PW};

/// The styled site: URL path -> bytes. `/img/logo-2x.gif` is only the 2x
/// candidate of a `srcset`: on the robot's 1x screen it is never fetched.
fn styled_files() -> Vec<(&'static str, Vec<u8>)> {
    let gif = |n: u8| {
        let mut g = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;".to_vec();
        g.push(n);
        g
    };
    vec![
        (
            "/styled.html",
            b"<!DOCTYPE html><html><head><title>styled</title>\n\
              <link rel=\"stylesheet\" href=\"css/site.css\">\n\
              </head><body><h1>Styled</h1>\n\
              <img src=\"img/logo.gif\" srcset=\"img/logo.gif 1x, img/logo-2x.gif 2x\">\n\
              </body></html>\n"
                .to_vec(),
        ),
        (
            "/css/site.css",
            b"@import url(\"more.css\");\n\
              @font-face { font-family: Head; src: url(../fonts/head.woff2) format(\"woff2\"); }\n\
              h1 { font-family: Head, serif; background: url(../img/h1.gif) }\n\
              body { background: url('../img/body.gif') no-repeat }\n"
                .to_vec(),
        ),
        (
            "/css/more.css",
            b"img { border-image: url(../img/border.gif) 30 }\n".to_vec(),
        ),
        ("/img/logo.gif", gif(1)),
        ("/img/logo-2x.gif", gif(2)),
        ("/img/h1.gif", gif(3)),
        ("/img/body.gif", gif(4)),
        ("/img/border.gif", gif(5)),
        ("/fonts/head.woff2", b"wOF2 not really a font".to_vec()),
    ]
}

const NOT_FETCHED: &str = "/img/logo-2x.gif";

fn write_site(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for (p, b) in styled_files() {
        let f = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, &b).unwrap();
        files.insert(p.to_string(), b);
    }
    files
}

/// One `pagewire fetch --strategy getall --json` run (bounded: 60 s).
fn fetch(url: &str, cache: &Path, save: &Path, revalidate: bool) -> serde_json::Value {
    let mut cmd = Command::new(PW);
    cmd.args(["fetch", url, "--strategy", "getall", "--json", "--cache"])
        .arg(cache)
        .arg("--save")
        .arg(save);
    if revalidate {
        cmd.arg("--revalidate");
    }
    let (out, _, _) = run_bounded(&mut cmd, Duration::from_secs(60), "pagewire fetch");
    assert!(
        out.status.success(),
        "fetch failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("fetch --json")
}

/// The report names exactly the page's objects (the 2x candidate not among
/// them), and every saved file is byte-identical to the one served.
fn assert_same_objects(
    r: &serde_json::Value,
    files: &BTreeMap<String, Vec<u8>>,
    save: &Path,
    base: &str,
) {
    let mut got: Vec<String> = r["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| {
            o["url"]
                .as_str()
                .unwrap()
                .strip_prefix(base)
                .unwrap_or_else(|| panic!("{o} not on {base}"))
                .to_string()
        })
        .collect();
    got.sort();
    let want: Vec<String> = files
        .keys()
        .filter(|p| *p != NOT_FETCHED)
        .cloned()
        .collect();
    assert_eq!(got, want, "{r}");
    let host = base.trim_start_matches("http://");
    for p in &want {
        let saved = save.join(host).join(p.trim_start_matches('/'));
        let bytes =
            std::fs::read(&saved).unwrap_or_else(|e| panic!("{} not saved: {e}", saved.display()));
        assert!(bytes == files[p], "{p}: saved bytes differ from the file");
    }
    assert!(!save.join(host).join(&NOT_FETCHED[1..]).exists());
}

#[test]
fn getall_first_and_later_visit_are_one_request_each_in_the_servers_log() {
    let site = tempfile::tempdir().unwrap();
    let files = write_site(site.path());
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("access.log");
    let cache = work.path().join("cache");
    let server = Serve::start(site.path(), &["--access-log", log.to_str().unwrap()]);
    let url = format!("{}/styled.html", server.url);

    // First visit: one GET with `Getall: 1`, answered with the page and
    // everything its stylesheets name.
    let first_save = work.path().join("first");
    let first = fetch(&url, &cache, &first_save, false);
    assert_eq!(first["requests"], 1, "{first}");
    assert_same_objects(&first, &files, &first_save, &server.url);
    let outcomes: Vec<&str> = first["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes[0], "fetched", "{first}");
    assert!(outcomes[1..].iter().all(|o| *o == "getall-part"), "{first}");

    // Later visit, revalidating every object: one GETLIST carrying the
    // page, the list and the cached validators; every part a 304.
    let later_save = work.path().join("later");
    let later = fetch(&url, &cache, &later_save, true);
    assert_eq!(later["requests"], 1, "{later}");
    assert_same_objects(&later, &files, &later_save, &server.url);
    assert!(
        later["objects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["outcome"] == "not-modified"),
        "{later}"
    );

    // The server's count: its access log after it has exited (the writer
    // has flushed every line by then).
    server.stop();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one request per visit:\n{text}");
    // A line is written when its exchange ends, so the first visit's GETALL
    // line may follow the later visit's (the server notices the first
    // connection's close late): one of each, in either order.
    let gets = lines
        .iter()
        .filter(|l| l.contains("] \"GET /styled.html HTTP/1.1\" 200 "))
        .count();
    let getlists = lines
        .iter()
        .filter(|l| l.contains("] \"GETLIST / HTTP/1.1\" 200 "))
        .count();
    assert_eq!((gets, getlists), (1, 1), "{text}");
    // Common Log Format, nothing else: the prefetch simulator reads it as is.
    let parsed = pagewire_prefetch::log::AccessLog::read_path(&log).unwrap();
    assert_eq!(parsed.requests.len(), 2);
    assert_eq!(parsed.stats.skipped, 0, "{:?}", parsed.stats);
}
