//! `pagewire` — a laboratory for how web pages cross the network.
//!
//! This binary is thin: each command parses its flags into plain values in
//! `cmd::<name>` and hands them to the library crate that does the work.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "pagewire",
    version,
    about = "A laboratory for how web pages cross the network",
    long_about = "pagewire implements the transfer techniques of classic web-performance papers \
                  and measures them the way those papers did: packets, bytes and seconds on an \
                  emulated link between a real server and a real client.\n\n\
                  Built: HTTP/1.0 vs persistent vs pipelined (+deflate) transfers of paper 001 \
                  (bench, serve, fetch, link, site); object packaging of paper 002 (pack, unpack, \
                  fetch --strategy objpack, bench --suite objpack); GETALL/GETLIST, the \
                  connection-length and load-time experiments and prefetching of paper 003 \
                  (fetch --strategy getall, bench --suite conn-length|getall, prefetch simulate, \
                  serve --prefetch, fetch --prefetch); the SURGE workload and load generator of \
                  paper 004 and its server experiments (site surge, load, bench --suite surge).\n\n\
                  Papers and design: docs/papers.md, docs/architecture.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run an experiment suite over emulated links and report (the main job).
    Bench(Box<cmd::bench::Args>),
    /// Re-judge a results directory of any suite from its run records (the claims table).
    Claims(cmd::claims::Args),
    /// Run the origin server.
    Serve(cmd::serve::Args),
    /// Fetch a page and its embedded objects with a transfer strategy (the robot).
    Fetch(cmd::fetch::Args),
    /// Record a page and its objects into a WARC file (for serve/bench --replay).
    Record(cmd::record::Args),
    /// Run a server and a client on the two sides of an emulated link and count packets.
    Link(cmd::link::Args),
    /// Generate a test site (the Microscape page).
    Site(cmd::site::Args),
    /// Prefetching: the log-driven simulator of paper 003.
    Prefetch(cmd::prefetch::Args),
    /// SURGE load: user equivalents against a server (paper 004), merge, model check.
    Load(cmd::load::Args),
    /// Write a page and the objects it embeds as one object package (paper 002).
    Pack(cmd::pack::Args),
    /// Unpack an object package into a directory as it streams in.
    Unpack(cmd::unpack::Args),
}

fn main() -> ExitCode {
    // A closed stdout (e.g. `pagewire ... | head`) is not an error: Rust ignores
    // SIGPIPE and reports EPIPE, which the commands treat as "stop printing".
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Claims(a) => cmd::claims::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Fetch(a) => cmd::fetch::run(a),
        Command::Record(a) => cmd::record::run(a),
        Command::Link(a) => cmd::link::run(a),
        Command::Site(a) => cmd::site::run(a),
        Command::Prefetch(a) => cmd::prefetch::run(a),
        Command::Load(a) => cmd::load::run(a),
        Command::Pack(a) => cmd::pack::run(a),
        Command::Unpack(a) => cmd::unpack::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("pagewire: error: {}", chain_once(&err));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes joined by ": ", each cause printed once: many
/// errors already include their source in their own message (an OS error
/// would otherwise read "Read-only file system (os error 30): Read-only
/// file system (os error 30)").
fn chain_once(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !text.is_empty() && !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}
