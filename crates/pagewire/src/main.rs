//! `pagewire` — a laboratory for how web pages cross the network.
//!
//! This binary is thin: each command parses its flags into plain values in
//! `cmd::<name>` and hands them to the library crate that does the work.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
                  fetch --strategy objpack, bench objpack); GETALL/GETLIST, the \
                  connection-length and load-time experiments and prefetching of paper 003 \
                  (fetch --strategy getall, bench conn-length|getall, prefetch simulate, \
                  serve --prefetch, fetch --prefetch); the SURGE workload and load generator of \
                  paper 004 and its server experiments (site surge, load, bench surge).\n\n\
                  Papers and design: docs/papers.md, docs/architecture.md.",
    after_help = "Exit status (every command): 0 ok; 1 the run or a check failed; 2 usage error \
                  (nothing was run); 130 interrupted (SIGINT/SIGTERM/SIGHUP; what was done is \
                  written)."
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
    /// The expected-time model beside a results directory's measurement (no new runs).
    Model(cmd::model::Args),
    /// One page three ways: packet-level link, DevTools throttling, and the
    /// model from an unthrottled trace, with each one's error.
    Throttle(cmd::throttle::Args),
    /// Run the origin server.
    Serve(cmd::serve::Args),
    /// Fetch a page and its embedded objects with a transfer strategy (the robot).
    Fetch(cmd::fetch::Args),
    /// Record a page and its objects into a WARC file (for serve/bench --replay).
    Record(cmd::record::Args),
    /// Replay a recorded page with its server think times and score how
    /// closely the replayed waterfall follows the recorded one.
    Replay(cmd::replay::Args),
    /// Run a server and a client on the two sides of an emulated link and count packets.
    Link(cmd::link::Args),
    /// A shell (or any command) whose network crosses an emulated link to the
    /// host and beyond, like Mahimahi's mm-delay / mm-link.
    Shell(cmd::shell::Args),
    /// Load any page in headless Chromium over an emulated link, live or
    /// replayed from an archive: paint and load times, bytes, packets, HAR.
    Browse(cmd::browse::Args),
    /// Generate a test site: the Microscape page (paper 001) or the SURGE
    /// file set (paper 004).
    Site(cmd::site::Args),
    /// Prefetching: the log-driven simulator of paper 003.
    Prefetch(cmd::prefetch::Args),
    /// SURGE load: user equivalents against a server (paper 004), merge, model check.
    Load(cmd::load::Args),
    /// Write a page and the objects it embeds as one object package (paper 002).
    Pack(cmd::pack::Args),
    /// Unpack an object package into a directory as it streams in.
    Unpack(cmd::unpack::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) of pagewire, or of one command.
    Man {
        /// The command (default: the whole program).
        command: Option<String>,
    },
}

fn main() -> ExitCode {
    // A closed stdout (e.g. `pagewire ... | head`) is not an error: Rust ignores
    // SIGPIPE and reports EPIPE, which the commands treat as "stop printing".
    let matches = cli_command().get_matches_from(suite_alias(std::env::args_os().collect()));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Claims(a) => cmd::claims::run(a),
        Command::Model(a) => cmd::model::run(a),
        Command::Throttle(a) => cmd::throttle::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Fetch(a) => cmd::fetch::run(a),
        Command::Record(a) => cmd::record::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Link(a) => cmd::link::run(a),
        Command::Shell(a) => cmd::shell::run(a),
        Command::Browse(a) => cmd::browse::run(a),
        Command::Site(a) => cmd::site::run(a),
        Command::Prefetch(a) => cmd::prefetch::run(a),
        Command::Load(a) => cmd::load::run(a),
        Command::Pack(a) => cmd::pack::run(a),
        Command::Unpack(a) => cmd::unpack::run(a),
        Command::Completions { shell } => completions(shell),
        Command::Man { command } => man(command.as_deref()),
    };
    // Interrupted is never success (nor a plain failure): 130, as a shell
    // reports a process killed by SIGINT.
    let interrupted = pagewire_lab::interrupt::signal().is_some();
    match result {
        Ok(_) if interrupted => ExitCode::from(130),
        Ok(code) => code,
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("pagewire: error: {}", chain_once(&err));
            if interrupted {
                ExitCode::from(130)
            } else if cmd::is_usage(&err) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// `bench --suite X ...` is `bench X ...` (the suites used to share one
/// flag set behind `--suite`; the flag stays as an alias).
fn suite_alias(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).and_then(|a| a.to_str()) != Some("bench") {
        return args;
    }
    let mut i = 2;
    // Bounded by the argument count.
    while i < args.len() {
        let Some(a) = args[i].to_str() else {
            i += 1;
            continue;
        };
        if a == "--" {
            break;
        }
        let suite = if a == "--suite" && i + 1 < args.len() {
            let v = args.remove(i + 1);
            args.remove(i);
            Some(v)
        } else if let Some(v) = a.strip_prefix("--suite=") {
            let v = v.into();
            args.remove(i);
            Some(v)
        } else {
            None
        };
        match suite {
            Some(v) => {
                let name = v.to_string_lossy();
                if !cmd::bench::SUITE_NAMES.contains(&name.as_ref()) {
                    eprintln!(
                        "pagewire: error: --suite {name:?}: expected one of {}",
                        cmd::bench::SUITE_NAMES.join(", ")
                    );
                    std::process::exit(2);
                }
                args.insert(2, v);
                return args;
            }
            None => i += 1,
        }
    }
    args
}

/// What every command's help ends with when it says nothing more precise.
const EXIT_STATUS: &str = "Exit status: 0 ok; 1 the run or a check failed; 2 usage error \
                           (nothing was run); 130 interrupted (what was done is written).";

/// The command line: every command (and subcommand) that does not document
/// its own exit status gets the common one after its own text, in --help
/// and the man pages.
fn cli_command() -> clap::Command {
    fn with_exit(c: clap::Command) -> clap::Command {
        let c = c.mut_subcommands(with_exit);
        if c.get_name() == "help" {
            return c;
        }
        match c.get_after_help().map(|h| h.to_string()) {
            Some(h) if h.contains("Exit status") => c,
            Some(h) => c.after_help(format!("{h}\n\n{EXIT_STATUS}")),
            None => c.after_help(EXIT_STATUS),
        }
    }
    Cli::command().mut_subcommands(with_exit)
}

fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut cmd = cli_command();
    clap_complete::generate(shell, &mut cmd, "pagewire", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

fn man(command: Option<&str>) -> anyhow::Result<ExitCode> {
    let mut root = cli_command();
    root.build();
    let page = match command {
        None => root,
        Some(name) => {
            let Some(sub) = root.find_subcommand(name) else {
                return Err(cmd::usage(format!("man: no command {name:?}")));
            };
            let sub = sub.clone();
            // One short-lived process: the page's name may live forever.
            let name: &'static str =
                Box::leak(format!("pagewire-{}", sub.get_name()).into_boxed_str());
            sub.name(name)
        }
    };
    clap_mangen::Man::new(page).render(&mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
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

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;

    /// Every duration flag of every command: a minus sign is "must be
    /// positive" (not clap's "to pass '-5' as a value, use '-- -5'", which
    /// would run something else). A duration flag is one whose parser
    /// takes `5ms` and refuses a word.
    #[test]
    fn every_duration_flag_says_must_be_positive() {
        fn walk(path: &[String], c: &clap::Command, seen: &mut Vec<String>) {
            for a in c.get_arguments() {
                let Some(long) = a.get_long() else { continue };
                if !a.get_action().takes_values() {
                    continue;
                }
                let try_value = |v: &str| {
                    let mut argv = path.to_vec();
                    argv.push(format!("--{long}"));
                    argv.push(v.to_string());
                    super::cli_command().try_get_matches_from(argv)
                };
                let refused = |r: &Result<clap::ArgMatches, clap::Error>| matches!(r, Err(e) if matches!(e.kind(), ErrorKind::ValueValidation | ErrorKind::InvalidValue));
                if refused(&try_value("5ms")) || !refused(&try_value("sometimes")) {
                    continue;
                }
                let name = format!("{} --{long}", path.join(" "));
                let err = try_value("-5ms").expect_err(&name);
                assert!(
                    err.to_string().contains("must be positive"),
                    "{name} -5ms: {err}"
                );
                seen.push(name);
            }
            for s in c.get_subcommands() {
                let mut p = path.to_vec();
                p.push(s.get_name().to_string());
                walk(&p, s, seen);
            }
        }
        let mut seen = Vec::new();
        walk(&["pagewire".to_string()], &super::cli_command(), &mut seen);
        for want in [
            "pagewire fetch --read-timeout",
            "pagewire load --ramp",
            "pagewire load --warmup",
            "pagewire replay --timeout",
            "pagewire link --rtt",
            "pagewire bench surge --duration",
        ] {
            assert!(
                seen.iter().any(|s| s == want),
                "{want} not found in {seen:?}"
            );
        }
    }
}
