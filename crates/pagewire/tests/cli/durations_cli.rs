//! One duration syntax across the command line: every duration flag takes
//! a unit (`50ms`, `1.5s`, `2m`), and a bare number is an error that names
//! the flag (flags used to read bare numbers as milliseconds or as seconds).

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pagewire"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn every_duration_flag_rejects_a_bare_number_naming_the_flag() {
    let url = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (&["fetch", url, "--flush-after", "50"], "--flush-after"),
        (
            &["fetch", url, "--connect-timeout", "10"],
            "--connect-timeout",
        ),
        (&["fetch", url, "--read-timeout", "30"], "--read-timeout"),
        (
            &["serve", "--root", ".", "--idle-timeout", "60"],
            "--idle-timeout",
        ),
        (
            &["serve", "--root", ".", "--header-timeout", "10"],
            "--header-timeout",
        ),
        (&["link", "--rtt", "90", "--", "true"], "--rtt"),
        (&["link", "--jitter", "5", "--", "true"], "--jitter"),
        (
            &["link", "--server-wait", "5", "--", "true"],
            "--server-wait",
        ),
        (&["bench", "--rtt", "90"], "--rtt"),
        (&["bench", "--jitter", "5"], "--jitter"),
    ];
    for (args, flag) in cases {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(err.contains("needs a unit"), "{args:?}: {err}");
    }
    let (code, err) = run(&["fetch", url, "--read-timeout", "5 fortnights"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--read-timeout") && err.contains("unit"),
        "{err}"
    );
}

#[test]
fn units_are_accepted() {
    // Nothing listens on port 9 of loopback: the fetch itself fails (exit
    // 1 with a connect error), after every flag parsed.
    let (code, err) = run(&[
        "fetch",
        "http://127.0.0.1:9/",
        "--flush-after",
        "1.5s",
        "--connect-timeout",
        "250ms",
        "--read-timeout",
        "2m",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("127.0.0.1:9"), "{err}");
    assert!(!err.contains("unit"), "{err}");
}

/// A duration with a minus sign is "must be positive" (exit 2), not a flag
/// that clap would suggest escaping with `--`.
#[test]
fn negative_durations_must_be_positive() {
    let url = "http://127.0.0.1:9/";
    let cases: &[&[&str]] = &[
        &["bench", "--rtt", "-5ms"],
        &["bench", "--jitter", "-1ms"],
        &["bench", "surge", "--duration", "-30s"],
        &["link", "--rtt", "-5ms", "--", "true"],
        &["fetch", url, "--read-timeout", "-1s"],
        &["serve", "--root", ".", "--idle-timeout", "-60s"],
    ];
    for args in cases {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("must be positive"), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "{args:?}: {err}");
    }
}
