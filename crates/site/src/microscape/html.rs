//! The Microscape HTML page: about 42 KB of 1996 home-page markup.
//!
//! Paper 001 built "Microscape" by combining the Netscape and Microsoft home
//! pages of early 1997 into one page of 42 KB that zlib (default settings)
//! compressed to 11 KB. Those pages are not available, so we write markup of
//! the same kind: nested layout TABLEs, FONT and CENTER, IMG with
//! WIDTH/HEIGHT/ALT/BORDER, an image MAP with AREAs, A HREF link lists,
//! comments, unquoted attribute values, and English-like text from a fixed
//! vocabulary. Tag case is mixed the way such a merged page was: the
//! Netscape half in upper case, the Microsoft half in lower case, and an
//! editor's Capitalised tags here and there. `lowercase` writes every tag and
//! attribute name in lower case (the paper's tag-case compression result,
//! section 8.3).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// An image the page references (each exactly once, so that first-time
/// retrieval is 1 + 42 GETs as in the paper).
#[derive(Clone, Debug)]
pub struct ImageRef {
    /// Relative URL as written in SRC, e.g. "images/solutions.gif".
    pub src: String,
    pub width: u16,
    pub height: u16,
    pub alt: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Upper,
    Lower,
    Capital,
}

struct Page {
    out: String,
    lowercase: bool,
    case: Case,
    rng: ChaCha8Rng,
}

impl Page {
    fn name(&mut self, n: &str) -> String {
        // Drawn even when writing lower case, so that both variants of the
        // page have the same text and differ only in tag case.
        let capitalise = self.rng.random_bool(0.12);
        if self.lowercase {
            return n.to_ascii_lowercase();
        }
        // An HTML editor's capitalised tags turn up now and then in the
        // hand-written upper-case half.
        let case = if self.case == Case::Upper && capitalise {
            Case::Capital
        } else {
            self.case
        };
        match case {
            Case::Upper => n.to_ascii_uppercase(),
            Case::Lower => n.to_ascii_lowercase(),
            Case::Capital => {
                let mut s = n.to_ascii_lowercase();
                if let Some(f) = s.get_mut(0..1) {
                    f.make_ascii_uppercase();
                }
                s
            }
        }
    }

    /// `<TAG A=v B="v w">`; values with spaces or special characters are
    /// quoted, bare tokens are not (both styles were common in 1996).
    fn open(&mut self, tag: &str, attrs: &[(&str, &str)]) {
        let t = self.name(tag);
        self.out.push('<');
        self.out.push_str(&t);
        for (a, v) in attrs {
            let a = self.name(a);
            self.out.push(' ');
            self.out.push_str(&a);
            if v.is_empty() {
                continue;
            }
            self.out.push('=');
            let bare = v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '%' || c == '#');
            if bare {
                self.out.push_str(v);
            } else {
                self.out.push('"');
                self.out.push_str(v);
                self.out.push('"');
            }
        }
        self.out.push('>');
    }

    fn close(&mut self, tag: &str) {
        let t = self.name(tag);
        self.out.push_str("</");
        self.out.push_str(&t);
        self.out.push('>');
    }

    fn text(&mut self, s: &str) {
        self.out.push_str(s);
    }

    fn nl(&mut self) {
        self.out.push('\n');
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn img(&mut self, im: &ImageRef, extra: &[(&str, &str)]) {
        let (w, h) = (im.width.to_string(), im.height.to_string());
        let mut attrs: Vec<(&str, &str)> = vec![
            ("src", &im.src),
            ("width", &w),
            ("height", &h),
            ("border", "0"),
            ("alt", &im.alt),
        ];
        attrs.extend_from_slice(extra);
        self.open("img", &attrs);
    }

    fn link(&mut self, href: &str, label: &str) {
        self.open("a", &[("href", href)]);
        self.text(label);
        self.close("a");
    }

    fn font_open(&mut self, size: &str) {
        let face = self.pick(FACES);
        self.open("font", &[("face", face), ("size", size)]);
    }

    /// One English-like sentence from the vocabulary below: a subject, a
    /// verb phrase, an object with adjectives, sometimes a modifier.
    fn sentence(&mut self) -> String {
        let mut s = String::new();
        if self.rng.random_bool(NOVELTY) {
            let n = self.coined();
            s.push_str(&n);
        } else {
            s.push_str(self.pick(SUBJECTS));
        }
        s.push(' ');
        s.push_str(self.pick(VERBS));
        s.push(' ');
        for _ in 0..self.rng.random_range(0..3) {
            s.push_str(self.pick(ADJECTIVES));
            s.push(' ');
        }
        s.push_str(self.pick(OBJECTS));
        if self.rng.random_bool(NOVELTY) {
            s.push_str(self.pick(&[" for ", " from ", " with ", " and "]));
            let n = self.coined();
            s.push_str(&n);
            if self.rng.random_bool(0.5) {
                let v = format!(
                    " {}.{}",
                    self.rng.random_range(1..5),
                    self.rng.random_range(0..10)
                );
                s.push_str(&v);
            }
        }
        if self.rng.random_bool(0.7) {
            s.push(' ');
            s.push_str(self.pick(MODIFIERS));
        }
        if self.rng.random_bool(NOVELTY / 2.0) {
            let price = format!(
                " for only ${}.{:02}",
                self.rng.random_range(19..500),
                self.rng.random_range(0..100)
            );
            s.push_str(&price);
        }
        s.push_str(self.pick(&[".", ".", ".", "!"]));
        if self.rng.random_bool(0.45) {
            // Dates and phone numbers: digits a vocabulary can't predict.
            let month = self.pick(MONTHS);
            let extra = match self.rng.random_range(0..3) {
                0 => format!(" ({month} {}, 1997)", self.rng.random_range(1..31)),
                1 => format!(
                    " Call 1-800-{:03}-{:04}.",
                    self.rng.random_range(200..999),
                    self.rng.random_range(0..10000)
                ),
                _ => format!(" Updated {month} {}.", self.rng.random_range(1..31)),
            };
            s.push_str(&extra);
        }
        s
    }

    fn paragraph(&mut self, sentences: usize) -> String {
        let mut p = String::new();
        for i in 0..sentences {
            if i > 0 {
                p.push(' ');
            }
            p.push_str(&self.sentence());
        }
        p
    }

    fn headline(&mut self) -> String {
        let mut h = String::new();
        h.push_str(self.pick(HEADLINE_LEADS));
        h.push(' ');
        h.push_str(self.pick(ADJECTIVES));
        h.push(' ');
        h.push_str(self.pick(OBJECTS));
        h
    }

    fn href(&mut self) -> String {
        if self.rng.random_bool(NOVELTY) {
            // Dated press-release style URLs: unique, like real news links.
            let (m, d) = (self.rng.random_range(1..13), self.rng.random_range(1..29));
            let sec = self.pick(SECTIONS);
            let pg = self.pick(PAGES);
            return format!("/{sec}/97/{m:02}{d:02}{pg}.html");
        }
        format!("/{}/{}.html", self.pick(SECTIONS), self.pick(PAGES))
    }

    /// A coined proper noun (product or company name) from syllables: the
    /// unique words a real page has and a fixed vocabulary lacks.
    fn coined(&mut self) -> String {
        let n = self.rng.random_range(2..4);
        let mut w = String::new();
        for i in 0..n {
            let syl = self.pick(SYLLABLES);
            if i == 0 {
                let mut c = syl.chars();
                if let Some(f) = c.next() {
                    w.push(f.to_ascii_uppercase());
                    w.push_str(c.as_str());
                }
            } else {
                w.push_str(syl);
            }
        }
        w
    }
}

/// Share of sentences, links and names that carry a unique (coined) word:
/// the knob that sets the page's zlib ratio. Tuned so that the mixed-case
/// page compresses like the paper's, 42 KB -> 11 KB (0.26).
const NOVELTY: f64 = 1.0;

const SYLLABLES: &[&str] = &[
    "net", "ax", "cor", "va", "lin", "tek", "ro", "qu", "zen", "mo", "sa", "vi", "dex", "pro",
    "ta", "lo", "gix", "an", "tri", "on", "ver", "sys", "ka", "mi", "plex", "or", "du", "fi",
    "nex", "ul", "tra", "cy", "bo", "el", "wave", "sun", "mar", "ix", "lum", "ge", "har", "pen",
    "sto", "rik", "dal", "ny", "bri", "ko", "mer", "zu", "ast", "gra", "ion", "cel", "phi", "ost",
    "ur", "ven", "tus", "cad", "lex", "mun", "rho", "sel", "tam", "wyn",
];

const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const FACES: &[&str] = &[
    "Arial,Helvetica",
    "Verdana,Arial,Helvetica",
    "Times New Roman",
    "Arial",
];
const SECTIONS: &[&str] = &[
    "products",
    "support",
    "news",
    "developer",
    "download",
    "intranet",
    "company",
    "search",
    "partners",
    "events",
];
const PAGES: &[&str] = &[
    "index", "overview", "whatsnew", "faq", "pricing", "release", "contact", "features", "press",
    "beta", "register", "jobs",
];
const SUBJECTS: &[&str] = &[
    "Developers everywhere",
    "Our engineering group",
    "Analysts",
    "Schools and universities",
    "Banks and retailers",
    "The Communicator suite",
    "The Office team",
    "Game designers",
    "Home users",
    "System integrators",
    "Our support engineers",
    "The press",
    "Hospitals",
    "Newspapers and magazines",
    "Government agencies",
    "Graphic artists",
    "Students",
    "Microscape",
    "The new release",
    "Our developers",
    "Internet users",
    "Corporate customers",
    "The Navigator browser",
    "Webmasters",
    "Small businesses",
    "The Internet Explorer team",
    "Windows 95 users",
    "The SuiteSpot servers",
    "Our partners",
    "The online store",
    "Independent software vendors",
    "Network administrators",
    "The Java platform",
    "Web publishers",
    "The company",
    "Millions of people",
    "Visitors to this site",
];
const VERBS: &[&str] = &[
    "are switching to",
    "depend on",
    "recommend",
    "are building",
    "compare",
    "rely on",
    "have downloaded",
    "will license",
    "expect",
    "praised",
    "reviewed",
    "are testing",
    "chose",
    "bundle",
    "demonstrated",
    "rolled out",
    "can now download",
    "will see",
    "announced",
    "delivers",
    "brings",
    "makes it easy to build",
    "lets you explore",
    "now supports",
    "is shipping",
    "offers",
    "introduces",
    "has released",
    "can preview",
    "will integrate",
    "provides",
    "helps you manage",
    "unveiled",
    "is previewing",
];
const ADJECTIVES: &[&str] = &[
    "scalable",
    "reliable",
    "affordable",
    "graphical",
    "visual",
    "wireless",
    "distributed",
    "object-oriented",
    "high-performance",
    "next-generation",
    "professional",
    "portable",
    "customizable",
    "real-time",
    "encrypted",
    "compact",
    "new",
    "free",
    "powerful",
    "secure",
    "open",
    "cross-platform",
    "interactive",
    "faster",
    "award-winning",
    "enterprise",
    "personal",
    "complete",
    "online",
    "dynamic",
    "integrated",
    "multimedia",
    "standards-based",
    "easy-to-use",
];
const OBJECTS: &[&str] = &[
    "database connectivity",
    "mail servers",
    "news readers",
    "calendar software",
    "firewalls",
    "proxy servers",
    "chat rooms",
    "virtual worlds",
    "spreadsheets",
    "electronic forms",
    "video conferencing",
    "certificate servers",
    "catalog servers",
    "network computers",
    "smart cards",
    "web sites",
    "scripting languages",
    "fonts",
    "web browser",
    "intranet solutions",
    "server software",
    "Java applets",
    "ActiveX controls",
    "developer tools",
    "security features",
    "push channels",
    "electronic commerce",
    "messaging and groupware",
    "plug-ins",
    "HTML authoring tools",
    "search services",
    "technical support",
    "beta software",
    "Internet standards",
    "desktop applications",
    "collaboration software",
    "directory services",
    "home pages",
    "style sheets",
    "streaming audio and video",
    "online services",
    "software updates",
];
const MODIFIERS: &[&str] = &[
    "in record time",
    "without rebooting",
    "at trade shows",
    "in the classroom",
    "over a 28.8 modem",
    "behind the firewall",
    "at half the cost",
    "in Europe and Asia",
    "by next quarter",
    "at the Internet World conference",
    "from any browser",
    "on the Internet",
    "for Windows 95 and Windows NT",
    "at no charge",
    "today",
    "with a single click",
    "for Macintosh and UNIX",
    "across the enterprise",
    "this fall",
    "in more than 20 languages",
    "from our download site",
    "for your corporate intranet",
    "on every desktop",
    "worldwide",
    "before the end of the year",
    "in the online store",
    "for a limited time",
    "with full source code",
    "on this page",
];
const HEADLINE_LEADS: &[&str] = &[
    "Announcing",
    "Introducing",
    "Download the",
    "Preview the",
    "Try the",
    "Get the",
    "Now Shipping:",
    "Coming Soon:",
    "Free Trial:",
    "What's New:",
];
const NAV: &[&str] = &[
    "Products",
    "Support",
    "Downloads",
    "Developers",
    "News",
    "Search",
    "Company",
    "Partners",
    "Events",
    "Store",
    "Intranet",
    "Site Map",
];

/// Write the page. `images` are placed through the page in order; the page
/// grows section by section until it reaches `target_bytes`.
pub fn page(images: &[ImageRef], seed: u64, lowercase: bool, target_bytes: usize) -> String {
    let mut p = Page {
        out: String::with_capacity(target_bytes + 4096),
        lowercase,
        case: Case::Upper,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6d69_6372_6f73_6370),
    };
    let mut imgs = images.iter();

    p.text("<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2//EN\">");
    p.nl();
    p.open("html", &[]);
    p.nl();
    p.open("head", &[]);
    p.open("title", &[]);
    p.text("Welcome to Microscape");
    p.close("title");
    p.nl();
    p.open(
        "meta",
        &[
            ("name", "keywords"),
            (
                "content",
                "Microscape, browser, intranet, software, Internet, download",
            ),
        ],
    );
    p.nl();
    p.open(
        "meta",
        &[
            ("name", "description"),
            (
                "content",
                "Microscape: software for the Internet and your intranet.",
            ),
        ],
    );
    p.nl();
    p.close("head");
    p.nl();
    p.text("<!-- Microscape home page. This page is synthetic: pagewire generates it from a seed to match the\n     composition of the test page in Nielsen et al., SIGCOMM '97 (42 KB of HTML, 42 inline GIFs). -->\n");
    p.open(
        "body",
        &[
            ("bgcolor", "#FFFFFF"),
            ("text", "#000000"),
            ("link", "#0000CC"),
            ("vlink", "#660099"),
            ("alink", "#FF0000"),
        ],
    );
    p.nl();

    // Masthead: the navigation image map and the animated banner.
    p.open("center", &[]);
    p.nl();
    if let Some(im) = imgs.next() {
        p.img(im, &[("usemap", "#navmap"), ("ismap", "")]);
    }
    p.nl();
    p.open("map", &[("name", "navmap")]);
    p.nl();
    for (i, n) in NAV.iter().enumerate() {
        let coords = format!("{},0,{},24", i * 50, i * 50 + 48);
        let href = format!("/{}/index.html", n.to_ascii_lowercase().replace(' ', ""));
        p.open(
            "area",
            &[
                ("shape", "rect"),
                ("coords", &coords),
                ("href", &href),
                ("alt", n),
            ],
        );
        p.nl();
    }
    p.close("map");
    p.nl();
    p.open("br", &[]);
    if let Some(im) = imgs.next() {
        p.open("a", &[("href", "/ads/click.html")]);
        p.img(im, &[]);
        p.close("a");
    }
    p.nl();
    p.close("center");
    p.nl();

    // Body sections: alternate the Netscape half (upper case) and the
    // Microsoft half (lower case) until the page reaches its size.
    let footer_reserve = 2100;
    let mut section = 0usize;
    while p.out.len() + footer_reserve < target_bytes {
        p.case = if section % 2 == 0 {
            Case::Upper
        } else {
            Case::Lower
        };
        let kind = section % 4;
        let n = p.rng.random_range(0..1000);
        p.text(&format!(
            "<!-- section {section}: {} {n} -->\n",
            ["news", "products", "promo", "links"][kind]
        ));
        p.open(
            "table",
            &[
                ("width", "600"),
                ("border", "0"),
                ("cellpadding", "2"),
                ("cellspacing", "0"),
            ],
        );
        p.nl();
        p.open("tr", &[]);
        // Left column: a navigation link list with bullet images.
        p.open(
            "td",
            &[("valign", "top"), ("width", "150"), ("bgcolor", "#FFFFCC")],
        );
        p.nl();
        p.font_open("2");
        let links = p.rng.random_range(4..9);
        for _ in 0..links {
            let href = p.href();
            let label = p.pick(NAV).to_string();
            p.link(&href, &label);
            p.open("br", &[]);
            p.nl();
        }
        p.close("font");
        p.close("td");
        p.nl();
        // Main column: headlines and stories, with images.
        p.open("td", &[("valign", "top"), ("width", "450")]);
        p.nl();
        let stories = p.rng.random_range(2..5);
        for s in 0..stories {
            // Stop at a story boundary once the page is full, so the page
            // lands within a few hundred bytes of its target.
            if s > 0 && p.out.len() + footer_reserve >= target_bytes {
                break;
            }
            if s == 0 || p.rng.random_bool(0.4) {
                if let Some(im) = imgs.next() {
                    let align = p.pick(&["left", "right", "top"]).to_string();
                    p.img(im, &[("align", &align), ("hspace", "4")]);
                    p.nl();
                }
            }
            p.open("b", &[]);
            p.font_open("3");
            let h = p.headline();
            let href = p.href();
            p.link(&href, &h);
            p.close("font");
            p.close("b");
            p.open("br", &[]);
            p.nl();
            p.font_open("2");
            let sentences = p.rng.random_range(3..7);
            let para = p.paragraph(sentences);
            p.text(&para);
            p.text(" ");
            let href = p.href();
            p.link(&href, "More...");
            p.close("font");
            p.open("p", &[]);
            p.nl();
        }
        p.close("td");
        p.close("tr");
        p.nl();
        p.close("table");
        p.nl();
        if kind == 3 {
            p.open("hr", &[("size", "1"), ("noshade", "")]);
            p.nl();
        }
        section += 1;
    }

    // Any images not yet placed go into a promo strip.
    p.case = Case::Upper;
    p.open("center", &[]);
    p.nl();
    for im in imgs {
        p.img(im, &[("hspace", "2")]);
        p.nl();
    }
    p.close("center");
    p.nl();

    // Footer: text links and the copyright notice.
    p.open("center", &[]);
    p.font_open("1");
    for (i, n) in NAV.iter().enumerate() {
        if i > 0 {
            p.text(" | ");
        }
        let href = format!("/{}/", n.to_ascii_lowercase().replace(' ', ""));
        p.link(&href, n);
    }
    p.open("br", &[]);
    p.nl();
    p.text("Copyright &copy; 1997 Microscape Communications Corporation. All rights reserved. ");
    p.link("/company/legal.html", "Legal notices");
    p.close("font");
    p.close("center");
    p.nl();
    p.close("body");
    p.nl();
    p.close("html");
    p.nl();
    p.out
}
