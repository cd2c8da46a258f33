//! `pagewire bench --strategy h2,h3` over the emulated LAN, first-time and
//! revalidation: the Microscape page byte-exact over HTTP/2 (TLS 1.3) and
//! HTTP/3 (QUIC) from `pagewire serve --tls` in the server namespace; the
//! link's counters equal the pcap (records and bytes read from the format
//! itself, and tshark's count of UDP and QUIC long-header packets when
//! tshark is installed); the extra rows follow the paper's. Needs root;
//! skips otherwise.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;
mod schema;

const TIMEOUT: Duration = Duration::from_secs(180);

/// (records, sum of captured lengths) of a classic pcap, parsed here.
fn pcap_totals(path: &Path) -> (u64, u64) {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert!(b.len() >= 24, "{}: no pcap header", path.display());
    let le = match u32::from_le_bytes(b[0..4].try_into().unwrap()) {
        0xa1b2c3d4 | 0xa1b23c4d => true,
        0xd4c3b2a1 | 0x4d3cb2a1 => false,
        m => panic!("{}: not a pcap (magic {m:#x})", path.display()),
    };
    let u32_at = |i: usize| {
        let a: [u8; 4] = b[i..i + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let (mut off, mut n, mut bytes) = (24usize, 0u64, 0u64);
    while off < b.len() {
        assert!(off + 16 <= b.len(), "{}: truncated", path.display());
        let incl = u32_at(off + 8) as usize;
        let orig = u32_at(off + 12) as u64;
        off += 16 + incl;
        assert!(off <= b.len(), "{}: truncated record", path.display());
        n += 1;
        bytes += orig;
    }
    (n, bytes)
}

/// tshark's (frames, bytes) for a display filter.
fn tshark(pcap: &Path, filter: &str) -> (u64, u64) {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.len"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lens: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    (lens.len() as u64, lens.iter().sum())
}

#[test]
fn h2_and_h3_rows_are_byte_exact_and_counted_like_tcp() {
    if !pagewire_testreq::require_root() || pagewire_testreq::require_peer("tshark").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let (output, elapsed, _) = common::run_bounded(
        Command::new(env!("CARGO_BIN_EXE_pagewire"))
            .args([
                "bench",
                "--net",
                "lan",
                "--strategy",
                "pipeline,h2,h3",
                "--reps",
                "1",
                "--no-initial",
                "--no-progress",
                "--out",
            ])
            .arg(&out),
        TIMEOUT,
        "pagewire bench --strategy pipeline,h2,h3",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    eprintln!("bench took {:.1} s", elapsed.as_secs_f64());
    // The run's CA is in the results for other clients.
    assert!(out.join("tls/ca.pem").is_file());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6, "{stdout}");
    // Every run's HAR (h1, h2 and h3 alike) is valid HAR 1.2.
    assert_eq!(schema::check_hars_in(&out), 6, "one HAR per run");
    let get = |r: &serde_json::Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}"));
    for r in runs {
        let what = format!("{} {}", r["strategy"], r["test"]);
        assert!(r["error"].is_null(), "{what}: {}", r["error"]);
        assert_eq!(
            get(r, "objects_ok"),
            43,
            "{what}: not every object byte-exact"
        );
        let pcap = out.join(r["pcap"].as_str().unwrap());
        assert_eq!(
            (get(r, "packets_total"), get(r, "bytes_total")),
            pcap_totals(&pcap),
            "{what}: counters vs pcap"
        );
        let side: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(pagewire_link::pcap::sidecar_path(&pcap)).unwrap(),
        )
        .unwrap();
        let c = &side["counters"];
        let kind = |k: &str| {
            (
                c["kinds"][k]["packets"].as_u64().unwrap(),
                c["kinds"][k]["bytes"].as_u64().unwrap(),
            )
        };
        assert_eq!(kind("other"), (0, 0), "{what}: unclassified packets");
        let quic = ["quic_handshake", "quic_data", "quic_small"].map(kind);
        let quic_total = quic.iter().fold((0, 0), |a, k| (a.0 + k.0, a.1 + k.1));
        match r["strategy"].as_str().unwrap() {
            "h3" => {
                // Every packet is QUIC; one connection, opened by an Initial.
                assert_eq!(quic_total, (get(r, "packets_total"), get(r, "bytes_total")));
                assert!(quic[0].0 >= 4, "{what}: handshake packets {:?}", quic[0]);
                assert!(quic[1].0 > 0 && quic[2].0 > 0, "{what}: {quic:?}");
                assert_eq!(get(r, "sockets_total"), 1, "{what}");
                // %ov counts IP + UDP headers (28 bytes a packet).
                let ov = r["overhead_pct"].as_f64().unwrap();
                let expect = 2800.0 * get(r, "packets_total") as f64 / get(r, "bytes_total") as f64;
                assert!((ov - expect).abs() < 1e-6, "{what}: %ov {ov} vs {expect}");
                let udp = tshark(&pcap, "udp");
                assert_eq!(udp, quic_total, "{what}: tshark udp");
                let long = tshark(&pcap, "quic.header_form == 1");
                assert_eq!(long, quic[0], "{what}: tshark QUIC long headers");
            }
            _ => {
                assert_eq!(quic_total, (0, 0), "{what}");
                assert_eq!(get(r, "sockets_total"), 1, "{what}");
                let tcp = tshark(&pcap, "tcp");
                assert_eq!(tcp, (get(r, "packets_total"), get(r, "bytes_total")));
            }
        }
    }
    // The extra rows come after the paper's strategy, without paper values.
    let h2 = stdout.find("HTTP/2 (TLS 1.3)").expect("h2 row");
    let h3 = stdout.find("HTTP/3 (QUIC)").expect("h3 row");
    let pipelined = stdout.find("HTTP/1.1 Pipelined\n").expect("pipeline row");
    assert!(pipelined < h2 && h2 < h3, "{stdout}");
    let h2_block = &stdout[h2..h3];
    assert!(!h2_block.contains("paper Apache"), "{h2_block}");
}
