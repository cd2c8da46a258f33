//! End to end, verdicts known by construction: a quick run on an input
//! whose claims verdict follows from how the input was built, asserted by
//! claim id and verdict string in results.json. Each case pairs a set-up
//! where the claim must hold with one where it must fail, so a rule that
//! always confirmed (or never did) fails the test.
//!
//! Every quantity comes from at least 3 kept repetitions (the claims rule decides nothing
//! from fewer) and every effect is far outside the noise of a loaded
//! machine. Needs root (network namespaces).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

mod common;
use common::{run_bounded, PW};

/// The benches below take 10-75 s on a loaded 2-core machine; three
/// minutes before calling one hung.
const TIMEOUT: Duration = Duration::from_secs(180);

/// One bench at a time: two suites over emulated links at once on a
/// 2-core machine make the forwarder late, and the engine leaves late runs
/// out (`link_lateness.flagged`), which can turn a verdict known by
/// construction into "n < 3".
static ONE_BENCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One `pagewire bench`; the caller holds `ONE_BENCH`.
fn bench_unlocked(args: &[&str], out: &Path) -> Value {
    let (o, elapsed, _) = run_bounded(
        Command::new(PW)
            .arg("bench")
            .args(args)
            .args(["--no-progress", "--out"])
            .arg(out),
        TIMEOUT,
        "pagewire bench",
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "bench {args:?} failed: {}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("bench {args:?} took {:.1} s", elapsed.as_secs_f64());
    serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap()
}

/// The verdict of claim `id` ("confirmed", "contradicted", "inconclusive",
/// "not testable here"), with its whole record for messages.
fn verdict<'a>(json: &'a Value, id: &str) -> (&'a str, &'a Value) {
    let claims = json["claims"].as_array().expect("claims in results.json");
    let c = claims
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no claim {id} in {claims:?}"));
    (c["verdict"].as_str().expect("verdict string"), c)
}

/// Whether the link fidelity monitor flagged this run (the engine leaves
/// flagged runs out; same definition as `claims::flagged`).
fn late(run: &Value) -> bool {
    run["link_lateness"]["flagged"].as_bool().unwrap_or(false)
}

/// `results` judged again by `pagewire claims` with every run's link-lateness
/// flag lifted (a copy written under `dir`). For the tests whose construction
/// is a count or a margin of many round trips that a late packet (a few ms
/// on a host whose hypervisor steals CPU) cannot move: they check the rule,
/// and the fidelity guard, which leaves such runs out of real results, would
/// otherwise make them fail on a noisy host for reasons unrelated to the rule.
fn judged_without_lateness(results: &Value, dir: &Path, name: &str) -> Value {
    let mut v = results.clone();
    for key in ["runs", "rows"] {
        if let Some(rs) = v[key].as_array_mut() {
            for r in rs {
                if r["link_lateness"].is_object() {
                    r["link_lateness"]["flagged"] = Value::Bool(false);
                }
            }
        }
    }
    let file = dir.join(name);
    std::fs::write(&file, serde_json::to_string(&v).unwrap()).unwrap();
    let (o, _, _) = run_bounded(
        Command::new(PW).arg("claims").arg(&file).arg("--json"),
        Duration::from_secs(60),
        "pagewire claims",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout).unwrap()
}

/// Benches run for one `bench_until` at most (each a few seconds on `lan`;
/// only a machine that keeps flagging runs pays for more than one).
const ATTEMPTS: usize = 5;

/// A bench whose results satisfy `enough` (which names what is short
/// otherwise). The engine leaves link-lateness-flagged records out, and on
/// a machine busy enough to flag many (a CI runner building beside the
/// test once left fewer than 3; on a quiet one, a stretch of lateness
/// once flagged every `lan` http10 run of three benches in a row) the
/// bench is run again, at most `ATTEMPTS` times, so that the verdict
/// asserted is the construction's and not "n < 3" or "not measured".
fn bench_until(args: &[&str], out: &Path, enough: impl Fn(&Value) -> Option<String>) -> Value {
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    bench_until_unlocked(args, out, enough)
}

/// `bench_until` for a caller that holds `ONE_BENCH`.
fn bench_until_unlocked(
    args: &[&str],
    out: &Path,
    enough: impl Fn(&Value) -> Option<String>,
) -> Value {
    let mut short = String::new();
    for attempt in 1..=ATTEMPTS {
        let dir = out.join(format!("attempt-{attempt}"));
        let json = bench_unlocked(args, &dir);
        match enough(&json) {
            None => return json,
            Some(s) => short = s,
        }
        eprintln!("attempt {attempt}: after link lateness {short}; running again");
    }
    panic!("{ATTEMPTS} benches each left too few unflagged records: {short}");
}

/// Mean packets of every run of `strategy` (one network, one test), flagged
/// late or not.
fn mean_packets(json: &Value, strategy: &str) -> f64 {
    let p: Vec<f64> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["strategy"] == strategy)
        .map(|r| r["packets_total"].as_f64().unwrap())
        .collect();
    assert!(p.len() >= 3, "{strategy}: at least 3 repetitions");
    p.iter().sum::<f64>() / p.len() as f64
}

/// Paper 001: "The savings were at least a factor of two ... in terms of
/// packets" (`pipeline-2x-packets`). Pipelining saves packets by sending
/// 43 requests on one connection instead of 43 connections (a SYN, SYN-ACK,
/// FIN and their ACKs each): against `pagewire serve` the LAN first-time
/// ratio is ~3x, far above 2 (inside the band, the claim left inconclusive
/// only because the other networks are not run). Against the same server told to close every
/// connection after one response (`--max-requests 1`), the pipelined robot
/// must open a connection per object too, and the ratio falls to ~1: the
/// claim must be contradicted.
///
/// The construction is a count of packets, which a packet leaving the
/// emulated link a few ms late (a host whose hypervisor steals CPU) does not
/// move at these margins (~3 against the band's 2, ~1 against 1.5), so the
/// rule is checked on a copy with every run kept (`judged_without_lateness`),
/// as the getall and objpack cases do. With the fidelity guard on, stretches
/// of lateness on CI runners left nearly every `lan` http10 run of 3-5
/// benches in a row out (2 of 4 CI runs on 2026-11-26), and the verdict
/// asserted was "n < 3", not the rule's.
#[test]
fn microscape_pipelining_packet_claim_follows_the_server() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "--net",
        "lan",
        "--strategy",
        "http10,pipeline",
        "--tests",
        "first",
        "--reps",
        "5",
        "--no-initial",
    ];

    // One bench each: the rule is judged below with every run kept.
    let kept = bench_until(&base, &dir.path().join("kept"), |_| None);
    let ratio = mean_packets(&kept, "http10") / mean_packets(&kept, "pipeline");
    assert!(ratio > 2.5, "construction: persistent ratio {ratio:.2}");
    // Only the LAN's first retrieval is run, so the sentence cannot be
    // confirmed (every network and test it covers must be measured) and the
    // largest cell is only a lower bound of "as much as a factor of ten":
    // the rule must leave it inconclusive, with the measured cell inside the
    // "at least a factor of two" band.
    let judged = judged_without_lateness(&kept, dir.path(), "kept-all.json");
    let (v, c) = verdict(&judged, "pipeline-2x-packets");
    assert_eq!(v, "inconclusive", "{c}");
    let lan = c["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["cell"] == "lan/first")
        .unwrap_or_else(|| panic!("no lan/first cell in {c}"));
    assert_eq!(lan["position"], "inside", "{c}");

    let closing =
        format!("exec {PW} serve --root {{root}} --addr {{addr}}:{{port}} --max-requests 1");
    let mut args = base.to_vec();
    args.extend(["--server-cmd", &closing]);
    let closed = bench_until(&args, &dir.path().join("closed"), |_| None);
    let ratio = mean_packets(&closed, "http10") / mean_packets(&closed, "pipeline");
    assert!(
        ratio < 1.5,
        "construction: one response per connection, ratio {ratio:.2}"
    );
    let judged = judged_without_lateness(&closed, dir.path(), "closed-all.json");
    let (v, c) = verdict(&judged, "pipeline-2x-packets");
    assert_eq!(v, "contradicted", "{c}");
}

/// A Common Log Format log of `hosts` clients, 10 s apart, each asking for
/// the two paths `pair(host)` returns, 2 s apart.
fn clf_log(path: &Path, hosts: usize, pair: impl Fn(usize) -> (String, String)) {
    let mut s = String::new();
    for h in 0..hosts {
        let (a, b) = pair(h);
        for (k, p) in [a, b].iter().enumerate() {
            let t = h * 10 + k * 2;
            let (hh, mm, ss) = (t / 3600, (t / 60) % 60, t % 60);
            s.push_str(&format!(
                "host{h}.example - - [01/Sep/1995:{hh:02}:{mm:02}:{ss:02} -0400] \"GET {p} HTTP/1.0\" 200 2000\n"
            ));
        }
    }
    std::fs::write(path, s).unwrap();
}

/// (miss rate with prefetching at p = 0.5, miss rate without (p = 1.1: no
/// arc reaches it), prefetches made) for w = 2, i = all, simple model;
/// trained on the first half of the log, simulated on the second.
fn simulate(log: &Path, lines: usize) -> (f64, f64, u64) {
    let (o, _, _) = run_bounded(
        Command::new(PW)
            .args(["prefetch", "simulate", "--log"])
            .arg(log)
            .args([
                "--p", "0.5,1.1", "--w", "2", "--i", "all", "--model", "simple",
            ])
            .args(["--train", &(lines / 2).to_string()])
            .args(["--simulate", &(lines / 2).to_string(), "--json"]),
        Duration::from_secs(60),
        "pagewire prefetch simulate",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records: Vec<Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let at = |p: f64| {
        records
            .iter()
            .find(|r| r["p"].as_f64() == Some(p))
            .unwrap_or_else(|| panic!("no record for p = {p}: {records:?}"))
    };
    (
        at(0.5)["miss_rate"].as_f64().unwrap(),
        at(1.1)["miss_rate"].as_f64().unwrap(),
        at(0.5)["prefetches"].as_u64().unwrap(),
    )
}

/// Paper 003's prefetching, on logs whose answer is known: when every
/// client that reads /a.html reads /b.html next, the dependency graph
/// learns a -> b with probability 1 and prefetching at p = 0.5 removes
/// every /b.html miss (the miss rate halves: each client's first request
/// still misses). When no two clients share a path, nothing is ever
/// predicted: no prefetch, the miss rate unchanged. No root needed.
#[test]
fn prefetching_helps_exactly_when_the_log_is_predictable() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = 400;

    let predictable = dir.path().join("predictable.log");
    clf_log(&predictable, hosts, |_| {
        ("/a.html".into(), "/b.html".into())
    });
    let (with, without, prefetches) = simulate(&predictable, 2 * hosts);
    assert!(prefetches > 0, "nothing prefetched on a -> b");
    // Without prefetching every request is a first request of its client.
    assert!(without > 0.99, "baseline miss rate {without}");
    // Half the requests are /b.html, all predicted: at most the /a.html half
    // (a little slack for the first client's pair if it trains online).
    assert!(
        with < 0.55,
        "miss rate {with} with prefetching (without: {without})"
    );

    let unique = dir.path().join("unique.log");
    clf_log(&unique, hosts, |h| {
        (format!("/u{h}.html"), format!("/v{h}.html"))
    });
    let (with, without, prefetches) = simulate(&unique, 2 * hosts);
    assert_eq!(prefetches, 0, "predicted a path no client shared");
    assert_eq!(
        with, without,
        "prefetching changed the miss rate of an unpredictable log"
    );
}

/// Paper 003, Figure 6: "using 45566-byte images and the remote server, the
/// new protocol improves latency by about 22%" (`getall-fig6-22pct`, band
/// [16.5%, 27.5%]). On the emulated remote link (T1: 1.544 Mbit/s, 70 ms
/// round trip) the quick run's 10-image page is, by construction, far
/// outside that band: both methods move the same ~456 KB (at least 2.36 s
/// at 1.544 Mbit/s, GETALL little more: one connection, and the link's
/// bandwidth-delay product, ~13 KB, fits in Linux's first window), while
/// HTTP/1.0 pays at least two more round trips per image (a connection and
/// a request: 10 x 140 ms = 1.4 s). The improvement is then at least
/// 1.4 / (2.4 + 1.4) + a little ~ 0.35 > 0.275: the claim must be
/// contradicted (the paper's 1994 TCP and hosts made per-image costs
/// relatively smaller). In the same run, Figure 5's "cuts the latency by more
/// than half" (`getall-fig5-half`) with 2544-byte images is true by the
/// same arithmetic (22 round trips against ~2 plus 25 KB): confirmed, so a
/// rule that never confirmed fails too. Pipelining's share of the gain
/// needs a host model the quick run does not have: "not testable here".
#[test]
fn getall_round_trips_decide_the_figure_claims() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The rules read every remote cell of HTTP/1.0 and GETALL (each a
    // method's repetitions at one size and image count, flagged as a whole
    // when its link was late): all must be kept. Only those are run: the
    // local network and the other three methods feed other claims (left
    // "not measured" here), and would more than double the run.
    let json = bench_until(
        &[
            "getall",
            "--quick",
            "--reps",
            "3",
            "--nets",
            "remote",
            "--methods",
            "http10,getall",
        ],
        &dir.path().join("getall"),
        |json| {
            let late: Vec<String> = json["cells"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| {
                    c["net"] == "remote"
                        && (c["method"] == "http10" || c["method"] == "getall")
                        && late(c)
                })
                .map(|c| format!("{} x {} {}", c["size"], c["images"], c["method"]))
                .collect();
            (!late.is_empty()).then(|| format!("remote cells flagged: {late:?}"))
        },
    );
    let load = |size: u64, method: &str| {
        json["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["net"] == "remote"
                    && c["size"] == size
                    && c["images"] == 10
                    && c["method"] == method
            })
            .unwrap_or_else(|| panic!("no remote {size} x 10 {method} cell"))["load_s"]["mean"]
            .as_f64()
            .unwrap()
    };
    // Construction: HTTP/1.0's extra 20 round trips of 70 ms are there.
    let extra = load(45566, "http10") - load(45566, "getall");
    assert!(
        extra > 1.3,
        "construction: HTTP/1.0 only {extra:.2} s slower"
    );

    let (v, c) = verdict(&json, "getall-fig6-22pct");
    assert_eq!(v, "contradicted", "{c}");
    // "More than half" is read with the paper's summary as its upper
    // bound (at most about 50% remote: [0.5, 0.625]); with 2544-byte images
    // a pure-network emulation's saving is the round trips alone, far above
    // it (about 0.83 at 10 images): contradicted by construction.
    let (v, c) = verdict(&json, "getall-fig5-half");
    assert_eq!(v, "contradicted", "{c}");
    let (v, c) = verdict(&json, "getall-fig5-pipelining-share");
    assert_eq!(v, "not testable here", "{c}");
}

/// Paper 002: "Object Packaging resulted in less client response time ...
/// than HTTP 1.1 Persistent Connection by up to 48.6%"
/// (`client-time-vs-http11`: the largest group's saving in [36.45%,
/// 60.75%]). On the 100 Mbit/s LAN given a 2 ms round trip, the saving is
/// far above that band by construction: the HTTP/1.1 client asks for the
/// set's 100 files one at a time, so it waits 99 more request round trips
/// (>= 198 ms) than the package's one request, while both move the same
/// bytes (the 4 KB group's ~410 KB: ~33 ms at 100 Mbit/s). The 4 KB
/// group's saving is then >= 198 / (198 + 33 + a few ms) ~ 0.85 > 0.6075:
/// contradicted. In the same run "reduces the response time at the server
/// by up to 92.0% ... from HTTP 1.0" (`server-time-vs-http10`, band
/// [69%, 100%], every group's saving above zero) holds by the same
/// arithmetic (100 connections of >= 2 round trips each against one):
/// confirmed, so a rule that never confirmed fails too.
#[test]
fn objpack_round_trips_decide_the_http11_claims() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Only what the two claims read: the three methods they compare (the
    // other four would more than double the run; their claims are left
    // "not measured") and the warm runs (the cold ones, as many again, feed
    // the cache table only): 36 runs instead of 168, about 30 s instead of
    // 80-95 s, with the same 99 round trips per set. 4 sets per group; the
    // rule is judged on all of them (link lateness lifted: a late packet
    // costs ms against the 150+ ms the construction puts between methods).
    let json = bench_until(
        &[
            "objpack",
            "--net",
            "lan100",
            "--reps",
            "4",
            "--rtt",
            "2ms",
            "--methods",
            "http10,http11,objpack",
            "--caches",
            "warm",
        ],
        &dir.path().join("objpack"),
        // One bench: the rule is checked below on a copy with every run
        // kept (`judged_without_lateness`).
        |_| None,
    );
    // Construction: the 99 request round trips are there (mean client
    // response time, 4 KB group, warm cache).
    let client_ms = |method: &str| {
        let xs: Vec<f64> = json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["method"] == method && r["group_kb"] == 4)
            .map(|r| r["client"]["response_ms"].as_f64().unwrap())
            .collect();
        assert!(xs.len() >= 3, "{method}: at least 3 sets");
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let extra = client_ms("http11") - client_ms("objpack");
    assert!(
        extra > 150.0,
        "construction: HTTP/1.1 only {extra:.0} ms slower"
    );

    let judged = judged_without_lateness(&json, dir.path(), "objpack-all.json");
    let (v, c) = verdict(&judged, "client-time-vs-http11");
    assert_eq!(v, "contradicted", "{c}");
    let (v, c) = verdict(&judged, "server-time-vs-http10");
    assert_eq!(v, "confirmed", "{c}");
}

/// The conn-length points of the remote configuration at `length` bytes,
/// by buffer label, that the engine keeps (not flagged late).
fn remote_point<'a>(json: &'a Value, buffer: &str, length: u64) -> Option<&'a Value> {
    json["points"].as_array().unwrap().iter().find(|p| {
        p["config"] == "remote" && p["buffer"] == buffer && p["length"] == length && !late(p)
    })
}

/// A conn-length `--quick` bench over `buffers` (the first a fixed size),
/// run again (bounded) until the points the small-window rule reads are
/// all kept: the smallest buffer's and the default buffer's at 128 KB, the
/// longest length. (Every point is one link's trials: the lateness monitor
/// flags a point as a whole.) The router queue is the `t1` profile's
/// (1000 packets): the construction is about windows, and an era queue's
/// losses would make the default buffer's rate a matter of chance. Only
/// what the rule reads is run: the remote configuration at the longest
/// length (the local one and the shorter lengths feed other claims).
/// The caller holds `ONE_BENCH`.
fn conn_length(buffers: &str, out: &Path) -> Value {
    let longest = format!("{}K", LONGEST / 1024);
    let args = [
        "conn-length",
        "--quick",
        "--reps",
        "3",
        "--queue",
        "1000p",
        "--configs",
        "remote",
        "--lengths",
        &longest,
        "--buffers",
        buffers,
    ];
    let small = buffers.split(',').next().unwrap().to_string();
    bench_until_unlocked(&args, out, |json| {
        let missing: Vec<&str> = [small.as_str(), "default"]
            .into_iter()
            .filter(|b| remote_point(json, b, LONGEST).is_none())
            .collect();
        (!missing.is_empty()).then(|| format!("remote 128 KB points of {missing:?} flagged"))
    })
}

/// `--quick`'s longest transfer.
const LONGEST: u64 = 128 * 1024;

/// Mean throughput (bytes/s) over the trials of a kept remote point.
fn remote_tput(json: &Value, buffer: &str) -> f64 {
    let p = remote_point(json, buffer, LONGEST).unwrap();
    assert_eq!(p["throughput_trials"]["n"], 3, "{p}");
    p["throughput_trials"]["mean"].as_f64().unwrap()
}

/// Paper 003 section 3.2: "for this 70 msec RTT, use of too small a window
/// size limits the throughput no matter how many bytes are transferred"
/// (`conn-small-window`: the smallest fixed buffer's throughput at the
/// longest transfer over the best-case buffer's, band below 0.9). On the
/// emulated remote link (T1: 1.544 Mbit/s = 193 KB/s, 70 ms round trip,
/// the paper's TCP: no window scaling) a 4 KB buffer advertises at most two
/// 1460-byte segments, so at most 2920 B per round trip: <= 41.7 KB/s
/// whatever the length, while the default buffer's 128 KB transfer is
/// bound by the T1 and slow start (~130 KB/s: ~0.7 s of serialisation and
/// a few round trips): a ratio near 0.3, far below 0.9. Confirmed. With
/// 32 KB the smallest buffer, its window (22 segments, 32120 B) is 2.4
/// times the link's bandwidth-delay product (193 KB/s x 70 ms = 13.5 KB):
/// it never limits, both buffers move the 128 KB alike and the ratio is ~1,
/// outside the band: contradicted, so a rule that always confirmed fails.
/// (32 KB rather than 64 KB: the window calibration transfers 16 windows
/// per round, and 1 MB rounds over the T1 would cost up to 27 s.)
#[test]
fn conn_length_small_window_claim_follows_the_window() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The two benches side by side (and nothing else beside them): a T1
    // moves ~193 KB/s, so two such links keep the forwarder far from late,
    // and each waits on its link's round trips, not on a core.
    let _one = ONE_BENCH.lock().unwrap_or_else(|e| e.into_inner());
    let (small, large) = std::thread::scope(|s| {
        let small = s.spawn(|| conn_length("4K,default", &dir.path().join("small")));
        let large = s.spawn(|| conn_length("32K,default", &dir.path().join("large")));
        (small.join().unwrap(), large.join().unwrap())
    });

    let ratio = remote_tput(&small, "4K") / remote_tput(&small, "default");
    // Construction: 41.7 KB/s at most against the T1's ~130 KB/s.
    assert!(
        remote_tput(&small, "4K") < 2920.0 / 0.070 * 1.05 && ratio < 0.5,
        "construction: the 4 KB window at {ratio:.2} of the default buffer"
    );
    let (v, c) = verdict(&small, "conn-small-window");
    assert_eq!(v, "confirmed", "{c}");

    let ratio = remote_tput(&large, "32K") / remote_tput(&large, "default");
    assert!(
        ratio > 0.95,
        "construction: a 32 KB window does not limit a T1, ratio {ratio:.2}"
    );
    let (v, c) = verdict(&large, "conn-small-window");
    assert_eq!(v, "contradicted", "{c}");
}

/// Paper 004: "the network demands of HTTP/1.1 are somewhat lower than
/// those of HTTP/1.0" (`p004-network`: link packets per GET, HTTP/1.1 over
/// HTTP/1.0, band [0.67, 0.98]). By construction HTTP/1.0 opens a
/// connection per GET (a SYN, SYN-ACK, FIN and their ACKs each: about 7
/// packets more per GET than a persistent connection carrying ~5 GETs),
/// while both move the same files: HTTP/1.1 opens far fewer connections
/// and sends fewer packets per GET in every repetition.
///
/// What this suite cannot do in a short test: reach paper 004's
/// calibration. A persistent connection must last 8.5-21 s on average (the
/// paper's 13.0-15.6 s); the UE model with a 15 s idle timeout gives about
/// 9.1-9.2 s in 150 s runs (docs/load.md, "Calibration"), but a 12 s run
/// ends its connections after a few seconds. So the suite's verdict is
/// "not testable here" for every claim, asserted below. The rule itself is then
/// exercised on the same measured runs through `pagewire claims` on copies
/// of results.json with the calibration gate lifted (the suite never
/// reports those verdicts): with the 3 repetitions of every cell it
/// confirms, and with one cell cut to 2 runs it must say "n < 3", so a
/// rule that always confirmed fails here.
#[test]
fn surge_network_claim_needs_three_reps_and_the_calibration() {
    if !pagewire_testreq::require_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 40 UEs make about 16 GETs/s: a 10 s window holds ~160 GETs per run
    // (10 s runs, a 9 s window, once left the HTTP/1.1 / HTTP/1.0 interval
    // straddling the band's edge: 12 s stays), and the forwarder stays light enough on a loaded 2-core machine that
    // link lateness does not flag most runs (at 100 UEs beside other tests
    // it flagged 5 of 6 runs three times over).
    let args = [
        "surge",
        "--server",
        "pagewire",
        "--modes",
        "http10,http11",
        "--ues",
        "40",
        "--reps",
        "3",
        "--duration",
        "12s",
        "--ramp",
        "2s",
        "--files",
        "400",
    ];
    // One bench: the rule is checked below on copies with every run kept
    // (link-lateness flags lifted, as the calibration gate is).
    let json = bench_until(&args, &dir.path().join("surge"), |_| None);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6, "2 modes x 3 repetitions");
    let per_get = |r: &Value, what: &str| {
        r["packets"][what].as_f64().unwrap() / r["gets"].as_f64().unwrap().max(1.0)
    };
    for rep in 0..3u64 {
        let run = |mode: &str| {
            runs.iter()
                .find(|r| r["mode"] == mode && r["rep"] == rep)
                .unwrap_or_else(|| panic!("no {mode} rep {rep}"))
        };
        let (a, b) = (run("http10"), run("http11"));
        assert!(a["error"].is_null() && b["error"].is_null(), "{a}\n{b}");
        // Every repetition replays the same request stream.
        assert_eq!(a["seed"], runs[0]["seed"]);
        assert_eq!(b["seed"], runs[0]["seed"]);
        // Construction: a connection per GET against a persistent one.
        assert!(per_get(a, "connections") > 0.9, "{a}");
        assert!(per_get(b, "connections") < 0.5, "{b}");
        assert!(per_get(b, "total") < per_get(a, "total"), "{a}\n{b}");
    }

    // The suite's verdict: off calibration (the persistent connections'
    // duration), so no claim is testable.
    assert_eq!(json["calibration"]["within_bands"], false);
    let off: Vec<&Value> = json["calibration"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["within"] == false)
        .collect();
    assert!(
        off.iter().any(|r| r["quantity"]
            .as_str()
            .unwrap()
            .contains("connection duration")),
        "{off:?}"
    );
    let (v, c) = verdict(&json, "p004-network");
    assert_eq!(v, "not testable here", "{c}");
    assert!(c["reason"].as_str().unwrap().contains("calibration"), "{c}");

    // The rule on the same runs, calibration gate lifted in a copy.
    let rejudge = |name: &str, keep: &dyn Fn(&Value) -> bool| {
        let mut v = json.clone();
        v["calibration"]["within_bands"] = Value::Bool(true);
        let kept: Vec<Value> = runs
            .iter()
            .filter(|r| keep(r))
            .cloned()
            .map(|mut r| {
                r["link_lateness"]["flagged"] = Value::Bool(false);
                r
            })
            .collect();
        v["runs"] = Value::Array(kept);
        let file = dir.path().join(name);
        std::fs::write(&file, serde_json::to_string(&v).unwrap()).unwrap();
        let (o, _, _) = run_bounded(
            Command::new(PW).arg("claims").arg(&file).arg("--json"),
            Duration::from_secs(60),
            "pagewire claims",
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let all = rejudge("all.json", &|_| true);
    let (v, c) = verdict(&all, "p004-network");
    assert_eq!(v, "confirmed", "{c}");
    assert_eq!(c["cells"][0]["n"], 3, "{c}");
    let cut = rejudge("cut.json", &|r| !(r["mode"] == "http11" && r["rep"] == 2));
    let (v, c) = verdict(&cut, "p004-network");
    assert_eq!(v, "inconclusive", "{c}");
    assert!(c["reason"].as_str().unwrap().starts_with("n < 3"), "{c}");
}
