//! A stylesheet's references leave while the stylesheet is still arriving
//! (as a browser streams them): a scripted server sends the first part
//! of `/a.css`, which `@import`s `/b.css`, and holds the rest back until the
//! robot has asked for `/b.css` (or 5 s passed).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pagewire_client::{fetch, FetchConfig, Strategy};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The text in font F: its face is fetched (fonts by use), once a.css and
/// b.css are complete.
const PAGE: &str =
    "<!doctype html><link rel=stylesheet href=/a.css><img src=/i.png><p style='font-family: F'>text</p>";
const CSS_HEAD: &str = "@import \"b.css\";\n.x { background: url(x.png) }\n";
const CSS_TAIL: &str = "@font-face { font-family: F; src: url(f.woff2) format(\"woff2\"), url(f.ttf) format(\"truetype\") }\n";

#[derive(Default)]
struct Seen {
    /// (when, path) of every request line.
    requests: Vec<(Instant, String)>,
    /// When the last byte of /a.css was written.
    css_done: Option<Instant>,
}

fn response(ctype: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

async fn server(page: String) -> (String, Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s2 = Arc::clone(&seen);
    let task = tokio::spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let seen = Arc::clone(&s2);
            let page = page.clone();
            tokio::spawn(async move {
                let (rd, mut wr) = sock.into_split();
                let (tx, mut rx) = mpsc::unbounded_channel::<String>();
                let seen_r = Arc::clone(&seen);
                // Reader: request lines as they come (pipelined or not).
                tokio::spawn(async move {
                    let mut lines = BufReader::new(rd).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        if let Some(path) = line.strip_prefix("GET ") {
                            let path = path.split(' ').next().unwrap_or("").to_string();
                            seen_r
                                .lock()
                                .unwrap()
                                .requests
                                .push((Instant::now(), path.clone()));
                            if tx.send(path).is_err() {
                                return;
                            }
                        }
                    }
                });
                // Writer: answers in order.
                while let Some(path) = rx.recv().await {
                    let ok = match path.as_str() {
                        "/" => wr.write_all(&response("text/html", page.as_bytes())).await,
                        "/a.css" => {
                            let body = format!("{CSS_HEAD}{CSS_TAIL}");
                            let whole = response("text/css", body.as_bytes());
                            let cut = whole.len() - CSS_TAIL.len();
                            let first = wr.write_all(&whole[..cut]).await;
                            let wait_until = Instant::now() + Duration::from_secs(5);
                            while Instant::now() < wait_until
                                && !seen
                                    .lock()
                                    .unwrap()
                                    .requests
                                    .iter()
                                    .any(|(_, p)| p == "/b.css")
                            {
                                tokio::time::sleep(Duration::from_millis(5)).await;
                            }
                            let rest = wr.write_all(&whole[cut..]).await;
                            seen.lock().unwrap().css_done = Some(Instant::now());
                            first.and(rest)
                        }
                        "/b.css" => {
                            wr.write_all(&response("text/css", b".b { background: url(b.png) }"))
                                .await
                        }
                        _ => wr.write_all(&response("image/png", b"png")).await,
                    };
                    if ok.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen, task)
}

#[tokio::test]
async fn stylesheet_references_leave_before_the_stylesheet_ends() {
    for strategy in [Strategy::Pipeline, Strategy::Http10] {
        let (url, seen, task) = server(PAGE.to_string()).await;
        let r = fetch(FetchConfig::new(url.clone(), strategy))
            .await
            .unwrap();
        task.abort();
        let seen = seen.lock().unwrap();
        let css_done = seen.css_done.expect("a.css sent");
        let asked = |p: &str| seen.requests.iter().find(|(_, q)| q == p).map(|(t, _)| *t);
        // (http11 is absent: one request at a time, so nothing can be asked
        // for before a.css ends.)
        let b = asked("/b.css").expect("b.css requested");
        assert!(
            b < css_done,
            "{strategy}: b.css asked for after a.css ended"
        );
        let mut paths: Vec<&str> = seen.requests.iter().map(|(_, p)| p.as_str()).collect();
        paths.sort();
        assert_eq!(
            paths,
            ["/", "/a.css", "/b.css", "/b.png", "/f.woff2", "/i.png", "/x.png"],
            "{strategy}"
        );
        let found: Vec<(String, String, String)> = r
            .objects
            .iter()
            .skip(1)
            .map(|o| {
                (
                    o.url
                        .trim_start_matches(url.trim_end_matches('/'))
                        .to_string(),
                    o.found_in
                        .clone()
                        .unwrap_or_default()
                        .trim_start_matches(url.trim_end_matches('/'))
                        .to_string(),
                    o.found_by.unwrap_or_default().to_string(),
                )
            })
            .collect();
        let has =
            |u: &str, i: &str, by: &str| found.iter().any(|(a, b, c)| a == u && b == i && c == by);
        assert!(has("/a.css", "/", "link stylesheet"), "{found:?}");
        assert!(has("/b.css", "/a.css", "@import"), "{found:?}");
        assert!(has("/x.png", "/a.css", "url()"), "{found:?}");
        assert!(has("/f.woff2", "/a.css", "@font-face src"), "{found:?}");
        assert!(has("/b.png", "/b.css", "url()"), "{found:?}");
        assert!(has("/i.png", "/", "img src"), "{found:?}");
    }
}

#[tokio::test]
async fn other_origins_are_named_and_fetched_only_when_asked() {
    let (other, other_seen, other_task) = server(String::new()).await;
    let page = format!(
        "<img src=/i.png><img src={other}x.png><link rel=stylesheet href={other}s.css><img src=https://127.0.0.1:1/y.png>"
    );
    let (url, _, task) = server(page).await;
    let r = fetch(FetchConfig::new(url.clone(), Strategy::Pipeline))
        .await
        .unwrap();
    assert_eq!(r.objects.len(), 2);
    assert_eq!(r.cross_origin.len(), 3, "{:?}", r.cross_origin);
    assert_eq!(r.cross_origin[0].origin, other.trim_end_matches('/'));
    assert_eq!(r.cross_origin[0].found_by, "img src");
    assert_eq!(r.cross_origin[1].found_by, "link stylesheet");
    assert_eq!(r.cross_origin[0].found_in, url);
    assert!(r.cross_origin_fetches.is_empty());
    assert!(other_seen.lock().unwrap().requests.is_empty());

    let mut cfg = FetchConfig::new(url.clone(), Strategy::Pipeline);
    cfg.cross_origin = true;
    let r = fetch(cfg).await.unwrap();
    task.abort();
    other_task.abort();
    // Both http references fetched, alone; the https one is a warning.
    assert_eq!(r.cross_origin_fetches.len(), 2);
    assert!(r
        .cross_origin_fetches
        .iter()
        .all(|f| f.objects.len() == 1 && f.objects[0].status == 200));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("https://127.0.0.1:1/y.png")),
        "{:?}",
        r.warnings
    );
    let mut asked: Vec<String> = other_seen
        .lock()
        .unwrap()
        .requests
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    asked.sort();
    assert_eq!(asked, ["/s.css", "/x.png"]);
}

#[tokio::test]
async fn a_preloaded_stylesheet_is_parsed_once_linked() {
    let page =
        "<link rel=preload as=style href=/a.css><img src=/i.png><link rel=stylesheet href=/a.css><p style='font-family: F'>text</p>";
    let (url, seen, task) = server(page.to_string()).await;
    let r = fetch(FetchConfig::new(url.clone(), Strategy::Pipeline))
        .await
        .unwrap();
    task.abort();
    let mut paths: Vec<String> = seen
        .lock()
        .unwrap()
        .requests
        .iter()
        .map(|(_, p)| p.clone())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        ["/", "/a.css", "/b.css", "/b.png", "/f.woff2", "/i.png", "/x.png"]
    );
    let a = r
        .objects
        .iter()
        .find(|o| o.url.ends_with("/a.css"))
        .unwrap();
    assert_eq!(a.found_by, Some("link stylesheet"));
}

#[tokio::test]
async fn a_face_no_text_uses_is_fetched_only_with_all_fonts() {
    let page = "<!doctype html><link rel=stylesheet href=/a.css><p>text</p>";
    for all_fonts in [false, true] {
        let (url, seen, task) = server(page.to_string()).await;
        let mut cfg = FetchConfig::new(url.clone(), Strategy::Pipeline);
        cfg.all_fonts = all_fonts;
        fetch(cfg).await.unwrap();
        task.abort();
        let asked = seen
            .lock()
            .unwrap()
            .requests
            .iter()
            .any(|(_, p)| p == "/f.woff2");
        assert_eq!(asked, all_fonts, "all_fonts {all_fonts}");
    }
}
