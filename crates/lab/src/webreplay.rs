//! A recorded site replayed for a real browser, as Mahimahi's
//! `mm-webreplay` does: every recorded origin (`scheme://host:port`) is
//! answered in the server namespace, the browser is told where each one is
//! with `--host-resolver-rules` (nothing else resolves, so no DNS query
//! crosses the link), and HTTPS is served with a throwaway certificate for
//! every recorded name that only this browser profile trusts (its key's
//! SPKI hash in `--ignore-certificate-errors-spki-list`).
//!
//! One address, two listeners: every `http` origin, whatever its recorded
//! port, is mapped to `SERVER:80` (plain HTTP/1.1), every `https` origin to
//! `SERVER:443` (TLS 1.3 with HTTP/2, and HTTP/3 on the same UDP port). The
//! server tells the origins apart by `Host` (`:authority`), which the
//! browser keeps as recorded. A request the archive cannot answer gets a
//! 404 whose body names the reason and whose `X-Pagewire-Replay: miss`
//! field lets the client count it; the servers count them too.

use std::collections::BTreeMap;
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use pagewire_emu::Link;
use pagewire_replay::{split_url, Archive};

/// The plain-HTTP listener every `http` origin is mapped to.
pub const HTTP_PORT: u16 = 80;
/// The TLS listener every `https` origin is mapped to.
pub const HTTPS_PORT: u16 = 443;
/// How long a replay server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// One recorded origin.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// Lower case; an IPv6 literal without brackets.
    pub host: String,
    pub port: u16,
}

impl Origin {
    /// `host:port` as Chromium's host mapping rules match it (an IPv6
    /// literal in brackets).
    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// Parses `scheme://authority...` (http and https only).
    pub fn of_url(url: &str) -> Result<Origin> {
        let (scheme, authority, _) =
            split_url(url).with_context(|| format!("{url:?} is not an absolute URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        let default = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            other => bail!("{url}: scheme {other} (only http and https are replayed)"),
        };
        let a = authority.rsplit('@').next().unwrap_or(authority);
        let a = a.to_ascii_lowercase();
        let (host, port) = if let Some(rest) = a.strip_prefix('[') {
            let (h, tail) = rest
                .split_once(']')
                .with_context(|| format!("{url}: unclosed IPv6 literal"))?;
            (h.to_string(), tail.strip_prefix(':'))
        } else {
            match a.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (a.clone(), None),
            }
        };
        let port = match port {
            Some("") | None => default,
            Some(p) => p
                .parse()
                .with_context(|| format!("{url}: bad port {p:?}"))?,
        };
        if host.is_empty() {
            bail!("{url}: no host");
        }
        Ok(Origin { scheme, host, port })
    }
}

/// Every origin of an archive, each `host:port` with one scheme.
pub fn origins(archive: &Archive) -> Result<Vec<Origin>> {
    let mut by_hp: BTreeMap<String, Origin> = BTreeMap::new();
    for e in &archive.exchanges {
        let Ok(o) = Origin::of_url(&e.url) else {
            continue;
        };
        if let Some(prev) = by_hp.get(&o.host_port()) {
            if prev.scheme != o.scheme {
                bail!(
                    "{} is recorded both as http and as https: one host:port cannot be \
                     mapped to two listeners",
                    o.host_port()
                );
            }
            continue;
        }
        by_hp.insert(o.host_port(), o);
    }
    if by_hp.is_empty() {
        bail!("the archive has no http or https exchange");
    }
    Ok(by_hp.into_values().collect())
}

/// The `--host-resolver-rules` switch mapping every origin to its
/// listener on `server`.
pub fn resolver_rules(origins: &[Origin], server: Ipv4Addr) -> String {
    let maps: Vec<(String, String)> = origins
        .iter()
        .map(|o| {
            let port = if o.is_https() { HTTPS_PORT } else { HTTP_PORT };
            (o.host_port(), format!("{server}:{port}"))
        })
        .collect();
    pagewire_chromium::host_resolver_rules(maps.iter().map(|(f, t)| (f.as_str(), t.clone())))
}

/// The base64 SHA-256 of the server certificate's public key in `dir`
/// (what `--ignore-certificate-errors-spki-list` takes).
pub fn spki_of(dir: &Path) -> Result<String> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let der = pagewire_tls::server_spki_der(&pagewire_tls::Files::in_dir(dir))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&der)))
}

/// What the replay servers counted, read from their logs when they stop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReplayTotals {
    /// Requests answered 404 because nothing recorded matched.
    pub misses: u64,
    /// Requests answered by a recorded exchange with another query.
    pub fuzzy_matches: u64,
}

/// The running replay servers of one link (killed on drop).
pub struct ReplayServers {
    children: Vec<Child>,
    logs: Vec<PathBuf>,
    /// The certificate directory (`ca.pem`, ...) when an origin is https.
    pub tls_dir: Option<PathBuf>,
    /// The browser's `--ignore-certificate-errors-spki-list` value.
    pub spki: Option<String>,
}

impl Drop for ReplayServers {
    fn drop(&mut self) {
        for c in &mut self.children {
            pagewire_emu::cli::stop_process_group(c, Duration::from_secs(3));
        }
    }
}

/// How the replay servers are started.
pub struct ServeOptions<'a> {
    /// The `pagewire` binary.
    pub exe: &'a Path,
    pub archive: &'a Path,
    /// Logs (`replay-http.log`, `replay-https.log`) and the certificate
    /// directory (`tls/`) go here.
    pub dir: &'a Path,
    /// Offer HTTP/3 on the TLS listener's UDP port.
    pub h3: bool,
    /// `--replay-server-time`.
    pub server_time: bool,
}

impl ReplayServers {
    /// Starts `pagewire serve --replay` in `link`'s server namespace on
    /// the listeners `origins` need, and waits until each listens.
    pub fn start(link: &Link, origins: &[Origin], o: &ServeOptions) -> Result<ReplayServers> {
        fs::create_dir_all(o.dir)?;
        let mut s = ReplayServers {
            children: Vec::new(),
            logs: Vec::new(),
            tls_dir: None,
            spki: None,
        };
        let server = link.server_addr();
        if origins.iter().any(|x| !x.is_https()) {
            s.spawn(link, o, "http", HTTP_PORT, &[])?;
        }
        if origins.iter().any(Origin::is_https) {
            let dir = o.dir.join("tls");
            let mut names: Vec<String> = origins.iter().map(|x| x.host.clone()).collect();
            names.push(server.to_string());
            names.sort();
            names.dedup();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let issued = pagewire_tls::issue(&refs)
                .with_context(|| format!("a certificate for {}", names.join(" ")))?;
            pagewire_tls::write(&dir, &issued)?;
            s.spki = Some(spki_of(&dir)?);
            let mut extra = vec!["--tls".to_string(), dir.display().to_string()];
            if !o.h3 {
                extra.push("--no-h3".into());
            }
            s.tls_dir = Some(dir);
            s.spawn(link, o, "https", HTTPS_PORT, &extra)?;
        }
        Ok(s)
    }

    fn spawn(
        &mut self,
        link: &Link,
        o: &ServeOptions,
        what: &str,
        port: u16,
        extra: &[String],
    ) -> Result<()> {
        let log_path = o.dir.join(format!("replay-{what}.log"));
        let log = fs::File::create(&log_path)
            .with_context(|| format!("create {}", log_path.display()))?;
        let mut c = Command::new(o.exe);
        c.arg("serve")
            .arg("--replay")
            .arg(o.archive)
            .arg("--addr")
            .arg(format!("{}:{port}", link.server_addr()))
            .arg("--threads")
            .arg("2")
            .args(extra);
        if o.server_time {
            c.arg("--replay-server-time");
        }
        c.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        let mut child = link
            .spawn_in_server(c)
            .with_context(|| format!("start the {what} replay server"))?;
        let until = Instant::now() + START_TIMEOUT;
        // Bounded by START_TIMEOUT; 10 ms steps.
        loop {
            let text = fs::read_to_string(&log_path).unwrap_or_default();
            if text.contains("listening on ") {
                break;
            }
            if let Ok(Some(st)) = child.try_wait() {
                bail!(
                    "the {what} replay server exited ({st}) before listening; its log {}:\n{}",
                    log_path.display(),
                    tail(&text)
                );
            }
            if Instant::now() >= until {
                pagewire_emu::cli::stop_process_group(&mut child, Duration::from_millis(500));
                bail!(
                    "the {what} replay server did not listen within {START_TIMEOUT:?}; its log {}:\n{}",
                    log_path.display(),
                    tail(&text)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.children.push(child);
        self.logs.push(log_path);
        Ok(())
    }

    /// Stops the servers (SIGTERM: they print their counters) and adds up
    /// what they counted.
    pub fn stop(mut self) -> ReplayTotals {
        for c in &mut self.children {
            pagewire_emu::cli::stop_process_group(c, Duration::from_secs(5));
        }
        self.children.clear();
        let mut t = ReplayTotals::default();
        for log in &self.logs {
            let text = fs::read_to_string(log).unwrap_or_default();
            let (m, f) = parse_totals(&text);
            t.misses += m;
            t.fuzzy_matches += f;
        }
        t
    }
}

/// The counters of `pagewire serve --replay`'s last summary line.
fn parse_totals(log: &str) -> (u64, u64) {
    let Some(line) = log
        .lines()
        .rev()
        .find(|l| l.contains("replay misses (404, no recorded answer):"))
    else {
        return (0, 0);
    };
    let num_after = |key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .and_then(|r| {
                r.trim_start()
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse().ok())
            })
            .unwrap_or(0)
    };
    (
        num_after("no recorded answer):"),
        num_after("fuzzy query matches:"),
    )
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_ports_and_ipv6() {
        let o = Origin::of_url("https://B.Test/x?y").unwrap();
        assert_eq!(
            (o.host.as_str(), o.port, o.is_https()),
            ("b.test", 443, true)
        );
        let o = Origin::of_url("http://127.0.0.1:8080/").unwrap();
        assert_eq!(o.host_port(), "127.0.0.1:8080");
        let o = Origin::of_url("http://[::1]:81/a").unwrap();
        assert_eq!(o.host_port(), "[::1]:81");
        assert!(Origin::of_url("ftp://x/").is_err());
        assert!(Origin::of_url("http://x:notaport/").is_err());
    }

    #[test]
    fn rules_map_each_origin_to_its_listener_and_nothing_else() {
        let os = vec![
            Origin::of_url("http://a.test:8000/").unwrap(),
            Origin::of_url("https://b.test/").unwrap(),
        ];
        let r = resolver_rules(&os, Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!(
            r,
            "--host-resolver-rules=MAP a.test:8000 198.18.0.2:80, \
             MAP b.test:443 198.18.0.2:443, MAP * ~NOTFOUND"
        );
    }

    #[test]
    fn one_host_port_with_two_schemes_is_refused() {
        let ex = |url: &str| pagewire_replay::Exchange {
            method: "GET".into(),
            url: url.into(),
            request_head: None,
            status: 200,
            reason: "OK".into(),
            headers: vec![],
            body: Default::default(),
            timing: None,
        };
        let a = Archive {
            exchanges: vec![ex("http://a.test:8443/"), ex("https://a.test:8443/x")],
            ..Default::default()
        };
        let e = origins(&a).unwrap_err().to_string();
        assert!(e.contains("both as http and as https"), "{e}");
    }

    #[test]
    fn totals_come_from_the_last_summary_line() {
        let log = "pagewire serve: replay misses (404, no recorded answer): 0; fuzzy query matches: 0\n\
                   pagewire serve: replay misses (404, no recorded answer): 3; fuzzy query matches: 1\n\
                   pagewire serve: stopped\n";
        assert_eq!(parse_totals(log), (3, 1));
        assert_eq!(parse_totals("nothing"), (0, 0));
    }
}
