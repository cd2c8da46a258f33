//! The robot's discovery against a real browser: headless
//! Chromium and `pagewire fetch` each load a page from their own `pagewire
//! serve` on loopback, and the servers' access logs say what each fetched.
//! The robot must fetch every object Chromium fetched (the favicon aside)
//! and not many more bytes.
//!
//! Fixtures: `tests/data/discovery` (hand-made: every rule of
//! docs/discovery.md once, with things a browser must not fetch) and a real
//! Sphinx site from Debian's `python-webvtt-doc` (the Read the Docs theme:
//! two stylesheets, five scripts, seven web fonts). Skipped, saying so, only
//! when Chromium or the package is missing outside CI; in CI (`CI=true`) a
//! missing one fails the test (`scripts/setup-deps.sh` installs both).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{run_bounded, Serve, PW};

const SPHINX_DOC: &str = "/usr/share/doc/python-webvtt-doc/html";

/// A browser in its own process group, killed with every process it
/// started when dropped (also when an assertion fails).
struct Browser {
    child: Child,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let pgid = self.child.id();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

/// Paths (with query) of the GETs in the Common Log Format access log of
/// `serve`, read once the server has exited: workers hand their lines to a
/// writer thread off the hot path, and a graceful stop (SIGTERM) writes and
/// flushes every line before the process exits.
fn logged_paths(serve: Serve, log: &Path) -> Vec<String> {
    serve.stop();
    let last = std::fs::read_to_string(log).expect("read the access log");
    last.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            // host - - [date] "GET /path HTTP/1.1" status bytes
            let req = l.split('"').nth(1)?;
            let mut parts = req.split(' ');
            let method = parts.next()?;
            (method == "GET").then(|| parts.next().map(str::to_string))?
        })
        .collect()
}

/// What headless Chromium fetched for `page` of `root`.
fn chromium_fetches(chromium: &Path, root: &Path, page: &str, scratch: &Path) -> Vec<String> {
    let log = scratch.join("chromium-access.log");
    let serve = Serve::start(root, &["--access-log", log.to_str().unwrap()]);
    let url = format!("{}{page}", serve.url);
    let profile = scratch.join("chromium-profile");
    let child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--window-size=1280,800",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let mut browser = Browser { child };
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match browser.child.try_wait().expect("wait for chromium") {
            Some(_) => break,
            None if Instant::now() > deadline => panic!("chromium did not finish in 90 s"),
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    drop(browser);
    logged_paths(serve, &log)
}

/// What `pagewire fetch` fetched for `page` of `root`, and its JSON report.
fn robot_fetches(
    root: &Path,
    page: &str,
    scratch: &Path,
    extra_args: &[&str],
) -> (Vec<String>, serde_json::Value) {
    let log = scratch.join("robot-access.log");
    let serve = Serve::start(root, &["--access-log", log.to_str().unwrap()]);
    let url = format!("{}{page}", serve.url);
    let (out, _, _) = run_bounded(
        Command::new(PW)
            .args(["fetch", &url, "--json"])
            .args(extra_args),
        Duration::from_secs(60),
        "pagewire fetch",
    );
    assert!(
        out.status.success(),
        "pagewire fetch failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fetch --json");
    (logged_paths(serve, &log), report)
}

/// Size of the file a path names (query removed).
fn size_of(root: &Path, path: &str) -> u64 {
    let p = path.split('?').next().unwrap_or(path);
    std::fs::metadata(root.join(p.trim_start_matches('/')))
        .map(|m| m.len())
        .unwrap_or(0)
}

struct Comparison {
    /// Everything each side fetched (the favicon aside).
    browser: BTreeSet<String>,
    robot: BTreeSet<String>,
    missing: Vec<String>,
    extra: Vec<String>,
    browser_bytes: u64,
    extra_bytes: u64,
    report: serde_json::Value,
}

fn compare(chromium: &Path, root: &Path, page: &str) -> Comparison {
    let scratch = tempfile::tempdir().expect("tempdir");
    let browser: BTreeSet<String> = chromium_fetches(chromium, root, page, scratch.path())
        .into_iter()
        .filter(|p| p != "/favicon.ico")
        .collect();
    assert!(
        browser.len() > 1,
        "chromium fetched only {browser:?}: did the page load?"
    );
    let (robot, report) = robot_fetches(root, page, scratch.path(), &[]);
    let robot: BTreeSet<String> = robot.into_iter().collect();
    let missing: Vec<String> = browser.difference(&robot).cloned().collect();
    let extra: Vec<String> = robot.difference(&browser).cloned().collect();
    let browser_bytes = browser.iter().map(|p| size_of(root, p)).sum();
    let extra_bytes = extra.iter().map(|p| size_of(root, p)).sum();
    eprintln!(
        "{page}: chromium fetched {} objects ({browser_bytes} B), the robot {} ({} extra: {extra_bytes} B = {:.1}%){}",
        browser.len(),
        robot.len(),
        extra.len(),
        100.0 * extra_bytes as f64 / browser_bytes as f64,
        if extra.is_empty() {
            String::new()
        } else {
            format!(": {extra:?}")
        }
    );
    Comparison {
        browser,
        robot,
        missing,
        extra,
        browser_bytes,
        extra_bytes,
        report,
    }
}

/// The rule that found each fetched path (from the robot's `--json`).
fn rules(report: &serde_json::Value) -> BTreeMap<String, String> {
    report["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter_map(|o| {
            let url = o["url"].as_str()?;
            let path = &url[url.find("://")? + 3..];
            let path = &path[path.find('/')?..];
            Some((
                path.to_string(),
                o["found_by"].as_str().unwrap_or("page").to_string(),
            ))
        })
        .collect()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/discovery")
}

#[test]
fn robot_fetches_what_chromium_fetches_on_the_hand_made_fixture() {
    let Some(chromium) = pagewire_testreq::require_peer("chromium") else {
        return;
    };
    let root = fixture();
    let c = compare(&chromium, &root, "/index.html");
    assert!(
        c.missing.is_empty(),
        "the robot missed what chromium fetched: {:?}",
        c.missing
    );
    // The one difference: a <style> background the element's own style
    // attribute overrides (a cascade the robot does not compute).
    assert!(
        c.extra_bytes * 100 <= c.browser_bytes * 3,
        "more than 3% extra bytes: {:?} ({} of {} B)",
        c.extra,
        c.extra_bytes,
        c.browser_bytes
    );
    // What must not be fetched, by browser and robot alike.
    for never in [
        "/css/late.css",
        "/img/alt.png",
        "/img/unused.png",
        "/js/legacy.js",
        "/js/template.html",
        "/img/pic.webp",
        "/img/pic.png",
        "/fonts/fixture.woff",
        "/fonts/fixture.ttf",
        "/fonts/fixture-head.ttf",
        // Declared, but no text is light: font matching never picks it.
        "/fonts/fixture-light.woff2",
        "/img/photo-1600.png",
        "/img/logo-2x.png",
        "/img/set-2x.png",
        "/img/print-only.png",
        "/img/print-bg.png",
    ] {
        // Checked on both sides: `extra` alone (robot minus browser) would
        // hide a path both fetched, and a browser that fetches one of these
        // means the fixture no longer tests what it says.
        assert!(!c.browser.contains(never), "chromium fetched {never}");
        assert!(!c.robot.contains(never), "the robot fetched {never}");
    }
    // Where each was found (--json).
    let by = rules(&c.report);
    assert_eq!(by["/css/deep/fonts.css"], "@import");
    assert_eq!(by["/fonts/fixture.woff2"], "@font-face src");
    // The italic face, for <em> text only.
    assert_eq!(by["/fonts/fixture-italic.woff2"], "@font-face src");
    assert_eq!(by["/img/photo-800.png"], "img srcset");
    assert_eq!(by["/img/pic.jxl"], "picture source");
    assert_eq!(by["/css/print.css"], "link stylesheet, media not matching");
    let cross = c.report["cross_origin"].as_array().expect("cross_origin");
    assert_eq!(cross.len(), 1, "{cross:?}");
    assert_eq!(cross[0]["origin"], "http://127.0.0.2:9");
}

#[test]
fn robot_fetches_what_chromium_fetches_on_a_sphinx_site() {
    let Some(chromium) = pagewire_testreq::require_peer("chromium") else {
        return;
    };
    if !pagewire_testreq::require_file(Path::new(SPHINX_DOC), "Debian's python-webvtt-doc") {
        return;
    }
    // The package links its theme files from other packages: copy with the
    // links followed, so the server sees one plain tree.
    let tree = tempfile::tempdir().expect("tempdir");
    let root = tree.path().join("html");
    let (out, _, _) = run_bounded(
        Command::new("cp").arg("-rL").arg(SPHINX_DOC).arg(&root),
        Duration::from_secs(60),
        "cp -rL",
    );
    assert!(out.status.success(), "copy the Sphinx site");
    let c = compare(&chromium, &root, "/index.html");
    assert!(
        c.missing.is_empty(),
        "the robot missed what chromium fetched: {:?}",
        c.missing
    );
    // Fonts by use: a face is fetched only when rendered text
    // needs it, as Chromium does; at most a few percent extra bytes.
    assert!(
        c.extra_bytes * 100 <= c.browser_bytes * 5,
        "more than 5% extra bytes: {:?} ({} of {} B)",
        c.extra,
        c.extra_bytes,
        c.browser_bytes
    );
    // `--fonts all` restores one source of every @font-face: the theme's
    // faces no text of this page uses come on top, and nothing else.
    let scratch = tempfile::tempdir().expect("tempdir");
    let (all, report) = robot_fetches(&root, "/index.html", scratch.path(), &["--fonts", "all"]);
    let used: BTreeSet<String> = rules(&c.report).into_keys().collect();
    let all: BTreeSet<String> = all.into_iter().collect();
    assert!(all.is_superset(&used), "--fonts all lost objects");
    let more: Vec<&String> = all.difference(&used).collect();
    assert!(!more.is_empty(), "--fonts all fetched no more fonts");
    let by = rules(&report);
    for p in &more {
        assert_eq!(
            by.get(*p).map(String::as_str),
            Some("@font-face src"),
            "--fonts all: {p} is not a font face"
        );
    }
    eprintln!(
        "--fonts all: {} more objects, {} B: {more:?}",
        more.len(),
        more.iter().map(|p| size_of(&root, p)).sum::<u64>()
    );
}
