//! A throwaway certificate authority per run, and the rustls configurations
//! of pagewire's server and robot.
//!
//! The lab makes a new CA for every run and writes it into the run
//! directory, so any client (the robot, curl, a browser) can be told to
//! trust exactly it and nothing else:
//!
//! | file             | what                                                      |
//! |------------------|-----------------------------------------------------------|
//! | `ca.pem`         | the CA certificate (trust anchor)                         |
//! | `server.pem`     | the server's certificate, then the CA's (chain)           |
//! | `server-key.pem` | the server's private key (PKCS#8), mode 0600              |
//!
//! The CA's key is never written: once the server certificate is issued it
//! is dropped, so the CA cannot sign anything else. Keys are ECDSA P-256
//! (small handshakes); the crypto provider is `ring`.
//!
//! ```no_run
//! let dir = std::path::Path::new("run-1/tls");
//! let files = pagewire_tls::ensure(dir, &["localhost", "127.0.0.1"])?;
//! let server = pagewire_tls::server_config(&files, &[pagewire_tls::ALPN_H2])?;
//! let robot = pagewire_tls::client_config(&files.ca, &[pagewire_tls::ALPN_H2])?;
//! # let _ = (server, robot);
//! # Ok::<(), pagewire_tls::TlsError>(())
//! ```
#![forbid(unsafe_code)]

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType, PKCS_ECDSA_P256_SHA256,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// ALPN protocol id of HTTP/2 over TLS (RFC 9113 §3.2).
pub const ALPN_H2: &[u8] = b"h2";
/// ALPN protocol id of HTTP/1.1 (RFC 7301 §6).
pub const ALPN_HTTP11: &[u8] = b"http/1.1";
/// ALPN protocol id of HTTP/3 (RFC 9114 §3.1).
pub const ALPN_H3: &[u8] = b"h3";

/// What went wrong making or loading the lab's certificates.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("making the certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("{path}: {what}")]
    Pem { path: PathBuf, what: String },
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("{0} is not a usable server name (a DNS name or an IP address)")]
    BadName(String),
}

/// Paths of one run's certificate files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    pub ca: PathBuf,
    pub chain: PathBuf,
    pub key: PathBuf,
}

impl Files {
    /// Where the files of `dir` are (whether or not they exist).
    pub fn in_dir(dir: &Path) -> Files {
        Files {
            ca: dir.join("ca.pem"),
            chain: dir.join("server.pem"),
            key: dir.join("server-key.pem"),
        }
    }

    fn all_exist(&self) -> bool {
        self.ca.is_file() && self.chain.is_file() && self.key.is_file()
    }
}

/// A CA and one server certificate for `names` (DNS names or IP addresses),
/// as PEM text.
#[derive(Debug, Clone)]
pub struct Issued {
    pub ca_pem: String,
    /// Server certificate then CA certificate.
    pub chain_pem: String,
    pub key_pem: String,
}

/// Makes a new CA, issues one server certificate for `names` and forgets the
/// CA's key.
pub fn issue(names: &[&str]) -> Result<Issued, TlsError> {
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "pagewire throwaway lab CA");
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "pagewire lab server");
    leaf.distinguished_name = dn;
    leaf.subject_alt_names = names
        .iter()
        .map(|n| san(n))
        .collect::<Result<Vec<_>, _>>()?;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;
    Ok(Issued {
        ca_pem: ca_cert.pem(),
        chain_pem: format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        key_pem: leaf_key.serialize_pem(),
    })
}

fn san(name: &str) -> Result<SanType, TlsError> {
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Ok(SanType::IpAddress(ip));
    }
    let dns = name
        .to_string()
        .try_into()
        .map_err(|_| TlsError::BadName(name.to_string()))?;
    Ok(SanType::DnsName(dns))
}

/// The files in `dir`: loaded when all three exist, otherwise a new CA and
/// server certificate for `names` are written there (the key with mode
/// 0600), each through a temporary name then renamed.
pub fn ensure(dir: &Path, names: &[&str]) -> Result<Files, TlsError> {
    let files = Files::in_dir(dir);
    if files.all_exist() {
        return Ok(files);
    }
    write(dir, &issue(names)?)
}

/// Writes `issued` into `dir` (created if missing).
pub fn write(dir: &Path, issued: &Issued) -> Result<Files, TlsError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TlsError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let files = Files::in_dir(dir);
    write_file(&files.key, issued.key_pem.as_bytes(), true).map_err(io(&files.key))?;
    write_file(&files.chain, issued.chain_pem.as_bytes(), false).map_err(io(&files.chain))?;
    write_file(&files.ca, issued.ca_pem.as_bytes(), false).map_err(io(&files.ca))?;
    Ok(files)
}

fn write_file(path: &Path, bytes: &[u8], secret: bool) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if secret {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = secret;
        let mut f = opts.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The certificates of a PEM file (at least one).
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(path)?;
    let certs = rustls_pemfile::certs(&mut bytes.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_path_buf(),
            what: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            what: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(path)?;
    rustls_pemfile::private_key(&mut bytes.as_slice())
        .map_err(|e| TlsError::Pem {
            path: path.to_path_buf(),
            what: e.to_string(),
        })?
        .ok_or_else(|| TlsError::Pem {
            path: path.to_path_buf(),
            what: "no PRIVATE KEY block".into(),
        })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
/// The DER SubjectPublicKeyInfo of the server key in `files`: what a
/// browser pins (Chromium's `--ignore-certificate-errors-spki-list` takes
/// its SHA-256, base64), so the throwaway CA need not be installed.
pub fn server_spki_der(files: &Files) -> Result<Vec<u8>, TlsError> {
    use rcgen::PublicKeyData as _;
    let pem = std::fs::read_to_string(&files.key).map_err(|source| TlsError::Io {
        path: files.key.clone(),
        source,
    })?;
    let key = KeyPair::from_pem(&pem).map_err(|e| TlsError::Pem {
        path: files.key.clone(),
        what: e.to_string(),
    })?;
    Ok(key.subject_public_key_info())
}

/// A TLS 1.3-only server configuration offering `alpn` (in preference
/// order). QUIC needs TLS 1.3 anyway; TCP gets the same so that HTTP/2 and
/// HTTP/3 handshakes are compared on equal terms.
pub fn server_config(files: &Files, alpn: &[&[u8]]) -> Result<rustls::ServerConfig, TlsError> {
    let chain = load_certs(&files.chain)?;
    let key = load_key(&files.key)?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    // One handshake per run: no session tickets or 0-RTT, every run pays
    // the same full handshake.
    config.send_tls13_tickets = 0;
    Ok(config)
}

/// A TLS 1.3-only client configuration that trusts the CA in `ca` and
/// nothing else, offering `alpn`.
pub fn client_config(ca: &Path, alpn: &[&[u8]]) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_certs(ca)? {
        roots.add(cert)?;
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    Ok(config)
}

/// A certificate authority that issues a server certificate per host on
/// demand, as a recording proxy needs (`pagewire record`): every host the
/// browser connects to gets a leaf for its name, signed by this CA and
/// cached. The CA lives in memory for one recording and its key is never
/// written. All leaves share one key pair, so a browser can be told to trust
/// exactly them by one SPKI hash ([`MintingCa::spki_sha256_base64`]).
pub struct MintingCa {
    issuer: rcgen::Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    ca_pem: String,
    ca_spki: Vec<u8>,
    leaf_key: KeyPair,
    alpn: Vec<Vec<u8>>,
    cache: std::sync::Mutex<std::collections::HashMap<String, Arc<rustls::ServerConfig>>>,
    serial: std::sync::atomic::AtomicU64,
}

/// Most hosts a [`MintingCa`] issues certificates for (bounds its cache).
pub const MAX_MINTED_HOSTS: usize = 4096;

impl MintingCa {
    /// A new CA and leaf key; the leaves' TLS configurations offer `alpn`.
    pub fn new(alpn: &[&[u8]]) -> Result<MintingCa, TlsError> {
        use rcgen::PublicKeyData as _;
        let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut ca = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "pagewire recording proxy CA");
        ca.distinguished_name = dn;
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key)?;
        let ca_spki = ca_key.subject_public_key_info();
        Ok(MintingCa {
            issuer: rcgen::Issuer::new(ca, ca_key),
            ca_der: ca_cert.der().clone(),
            ca_pem: ca_cert.pem(),
            ca_spki,
            leaf_key: KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?,
            alpn: alpn.iter().map(|p| p.to_vec()).collect(),
            cache: Default::default(),
            serial: std::sync::atomic::AtomicU64::new(1),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// `--ignore-certificate-errors-spki-list`'s value for Chromium: the
    /// base64 SHA-256 of the leaves' SubjectPublicKeyInfo, then the CA's.
    pub fn spki_sha256_base64(&self) -> String {
        use base64::Engine as _;
        use rcgen::PublicKeyData as _;
        let b64 = |der: &[u8]| {
            base64::engine::general_purpose::STANDARD
                .encode(ring::digest::digest(&ring::digest::SHA256, der))
        };
        format!(
            "{},{}",
            b64(&self.leaf_key.subject_public_key_info()),
            b64(&self.ca_spki)
        )
    }

    /// The server configuration for `host` (a DNS name or an IP address):
    /// a leaf certificate for it, issued on the first call and cached.
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        // Only a DNS name or an IP address gets a certificate.
        server_name(&host)?;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cache.get(&host) {
            return Ok(c.clone());
        }
        if cache.len() >= MAX_MINTED_HOSTS {
            return Err(TlsError::BadName(format!(
                "{host}: more than {MAX_MINTED_HOSTS} hosts in one recording"
            )));
        }
        let mut leaf = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host.clone());
        leaf.distinguished_name = dn;
        leaf.subject_alt_names = vec![san(&host)?];
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        // A distinct serial per leaf: the leaves share one issuer and key.
        let serial = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        leaf.serial_number = Some(rcgen::SerialNumber::from(serial));
        let cert = leaf.signed_by(&self.leaf_key, &self.issuer)?;
        let key = PrivateKeyDer::Pkcs8(self.leaf_key.serialize_der().into());
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.ca_der.clone()], key)?;
        config.alpn_protocols = self.alpn.clone();
        let config = Arc::new(config);
        cache.insert(host, config.clone());
        Ok(config)
    }

    /// How many hosts have a certificate so far.
    pub fn hosts(&self) -> usize {
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A client configuration for real origins (a recording proxy's upstream):
/// TLS 1.2 and 1.3, the system's trust anchors (`/etc/ssl/certs` and the
/// like, as `rustls-native-certs` finds them) plus the CA certificates of
/// `extra_ca` when given, offering `alpn`.
pub fn upstream_client_config(
    extra_ca: Option<&Path>,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    // Unreadable system certificates are skipped, as every client does;
    // with none at all only `extra_ca` is trusted.
    roots.add_parsable_certificates(native.certs);
    if let Some(ca) = extra_ca {
        for cert in load_certs(ca)? {
            roots.add(cert)?;
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// The rustls server name for a URL host (DNS name or IP address).
pub fn server_name(host: &str) -> Result<rustls::pki_types::ServerName<'static>, TlsError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|_| TlsError::BadName(host.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_once_and_load() {
        let dir = tempfile::tempdir().unwrap();
        let files = ensure(dir.path(), &["localhost", "127.0.0.1", "198.18.0.1"]).unwrap();
        let ca_before = std::fs::read(&files.ca).unwrap();
        // A second call loads what is there instead of making a new CA.
        let again = ensure(dir.path(), &["other"]).unwrap();
        assert_eq!(files, again);
        assert_eq!(std::fs::read(&files.ca).unwrap(), ca_before);
        assert_eq!(load_certs(&files.chain).unwrap().len(), 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&files.key).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        server_config(&files, &[ALPN_H2, ALPN_HTTP11]).unwrap();
        client_config(&files.ca, &[ALPN_H2]).unwrap();
    }

    #[test]
    fn bad_inputs_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = client_config(&dir.path().join("missing.pem"), &[]).unwrap_err();
        assert!(err.to_string().contains("missing.pem"), "{err}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not pem").unwrap();
        let err = client_config(&junk, &[]).unwrap_err();
        assert!(err.to_string().contains("no CERTIFICATE"), "{err}");
        assert!(server_name("bad name with spaces").is_err());
    }

    /// A real handshake in memory: the robot's config trusts the lab CA and
    /// agrees on h2 by ALPN; another run's CA is refused.
    #[test]
    fn handshake_trusts_only_the_run_ca() {
        let dir = tempfile::tempdir().unwrap();
        let files = ensure(&dir.path().join("a"), &["127.0.0.1"]).unwrap();
        let other = ensure(&dir.path().join("b"), &["127.0.0.1"]).unwrap();
        let server = Arc::new(server_config(&files, &[ALPN_H2, ALPN_HTTP11]).unwrap());
        let ok = handshake(
            server.clone(),
            Arc::new(client_config(&files.ca, &[ALPN_H2]).unwrap()),
        );
        assert_eq!(ok.unwrap().as_deref(), Some(ALPN_H2));
        let bad = handshake(
            server,
            Arc::new(client_config(&other.ca, &[ALPN_H2]).unwrap()),
        );
        assert!(bad.is_err());
    }

    /// The minting CA issues a leaf per host that a client trusting only
    /// its CA accepts for that host and refuses for another; the leaves
    /// share one key, named first in the SPKI list.
    #[test]
    fn minted_leaves_verify_per_host() {
        let dir = tempfile::tempdir().unwrap();
        let ca = MintingCa::new(&[ALPN_HTTP11]).unwrap();
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca.ca_pem()).unwrap();
        let a = ca.server_config("a.test").unwrap();
        assert!(Arc::ptr_eq(&a, &ca.server_config("A.test").unwrap()));
        let ip = ca.server_config("127.0.0.1").unwrap();
        assert_eq!(ca.hosts(), 2);
        let client = Arc::new(upstream_client_config(Some(&ca_file), &[ALPN_HTTP11]).unwrap());
        let hs = |server: Arc<rustls::ServerConfig>, name: &str| {
            let mut c =
                rustls::ClientConnection::new(client.clone(), server_name(name).unwrap()).unwrap();
            let mut s = rustls::ServerConnection::new(server).unwrap();
            drive(&mut c, &mut s)
        };
        assert!(hs(a.clone(), "a.test").is_ok());
        assert!(hs(ip, "127.0.0.1").is_ok());
        assert!(
            hs(a, "b.test").is_err(),
            "a leaf for a.test must not pass for b.test"
        );
        let spki = ca.spki_sha256_base64();
        let parts: Vec<&str> = spki.split(',').collect();
        assert_eq!(parts.len(), 2);
        assert!(
            parts.iter().all(|p| p.len() == 44 && p.ends_with('=')),
            "{spki}"
        );
        assert!(ca.server_config("bad name").is_err());
    }

    fn drive(
        c: &mut rustls::ClientConnection,
        s: &mut rustls::ServerConnection,
    ) -> Result<(), rustls::Error> {
        for _ in 0..10 {
            let mut buf = Vec::new();
            while c.wants_write() {
                c.write_tls(&mut buf).unwrap();
            }
            s.read_tls(&mut buf.as_slice()).unwrap();
            s.process_new_packets()?;
            let mut buf = Vec::new();
            while s.wants_write() {
                s.write_tls(&mut buf).unwrap();
            }
            c.read_tls(&mut buf.as_slice()).unwrap();
            c.process_new_packets()?;
            if !c.is_handshaking() && !s.is_handshaking() {
                return Ok(());
            }
        }
        panic!("handshake did not finish");
    }

    fn handshake(
        server: Arc<rustls::ServerConfig>,
        client: Arc<rustls::ClientConfig>,
    ) -> Result<Option<Vec<u8>>, rustls::Error> {
        let mut c =
            rustls::ClientConnection::new(client, server_name("127.0.0.1").unwrap()).unwrap();
        let mut s = rustls::ServerConnection::new(server).unwrap();
        drive(&mut c, &mut s)?;
        Ok(c.alpn_protocol().map(|p| p.to_vec()))
    }
}
