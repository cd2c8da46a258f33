//! The README's example, kept true.
use pagewire_discover::{same_server_path, Discoverer};

#[test]
fn readme_example() {
    let mut d = Discoverer::new("http://example.test/index.html");
    let mut refs = d.feed(b"<html><body><img src=\"a.gif\"><img src=\"/img/b.gif\">");
    refs.extend(d.finish());
    let paths: Vec<_> = refs
        .iter()
        .filter_map(|r| same_server_path("http://example.test/index.html", r))
        .collect();
    assert_eq!(paths, ["/a.gif", "/img/b.gif"]);
}
