//! Helpers shared by the binary's end-to-end tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const PW: &str = env!("CARGO_BIN_EXE_pagewire");

/// `pagewire serve --root ROOT` on a free loopback port, killed on drop (also
/// when an assertion fails).
pub struct Serve {
    child: Child,
    pub url: String,
}

impl Serve {
    /// Starts the server with `extra` flags and waits for its
    /// "listening on http://ADDR" line.
    pub fn start(root: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(PW)
            .args(["serve", "--root"])
            .arg(root)
            .args(["--addr", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn pagewire serve");
        let out = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(out)
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Serve { child, url }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
