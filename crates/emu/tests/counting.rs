//! Counting: the link's counters equal what tshark counts in the pcap of
//! the same run; loss shows up as retransmissions while the transfer stays
//! byte-exact; MSS and 1997-TCP settings reach the namespaces.

mod common;

use std::process::Command;

use common::*;

/// Runs tshark on `pcap` with a display filter; returns (frames, bytes).
fn tshark_count(pcap: &std::path::Path, filter: &str) -> (u64, u64) {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.len"])
        .output()
        .expect("tshark must be installed (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lens: Vec<u64> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
    (lens.len() as u64, lens.iter().sum())
}

#[test]
fn counts_equal_tshark_on_the_pcap() {
    if !can_run() || pagewire_testreq::require_peer("tshark").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("run.pcap");
    let link = start(profile("lan"));
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let data = payload(60_000);
    let server = serve(listener, data.clone(), 3);
    link.begin_run(Some(&pcap)).unwrap();
    for _ in 0..3 {
        assert!(download(&link, port, 0).data == data);
    }
    server.join().unwrap();
    let c = link.end_run().unwrap();

    assert_eq!(c.tun_write_errors, 0);
    let all = tshark_count(&pcap, "frame");
    assert_eq!(all, (c.packets_total, c.bytes_total), "all packets");
    let up = tshark_count(&pcap, "ip.src == 198.18.0.1");
    assert_eq!(
        up,
        (c.client_to_server.packets, c.client_to_server.bytes),
        "client to server"
    );
    let down = tshark_count(&pcap, "ip.src == 198.18.0.2");
    assert_eq!(
        down,
        (c.server_to_client.packets, c.server_to_client.bytes),
        "server to client"
    );
    let syn = tshark_count(&pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 0");
    assert_eq!(syn, (c.kinds.syn.packets, c.kinds.syn.bytes));
    assert_eq!(c.connections_opened, 3);
    let synack = tshark_count(&pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 1");
    assert_eq!(synack, (c.kinds.syn_ack.packets, c.kinds.syn_ack.bytes));
    let data_pkts = tshark_count(&pcap, "tcp.len > 0");
    assert_eq!(
        data_pkts.0,
        c.kinds.data.packets + c.kinds.retransmission.packets
    );
    let fin = tshark_count(&pcap, "tcp.flags.fin == 1");
    assert_eq!(
        fin.0,
        c.client_to_server.fin_flags + c.server_to_client.fin_flags
    );
    // Every connection's tear-down was counted: FIN from both sides.
    assert_eq!(fin.0, 6);
    // The sidecar says what made the pcap and carries the same counters.
    let side: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(pagewire_link::pcap::sidecar_path(&pcap)).unwrap(),
    )
    .unwrap();
    assert_eq!(side["config"]["profile"], "lan");
    assert_eq!(side["counters"]["packets_total"], c.packets_total);
    assert!(side["made_by"]
        .as_str()
        .unwrap()
        .starts_with("pagewire-emu"));
}

#[test]
fn two_percent_loss_is_byte_exact_with_retransmissions_counted() {
    if !can_run() {
        return;
    }
    let mut cfg = profile("lan");
    cfg.loss = pagewire_link::LossModel::Bernoulli(0.02);
    cfg.seed = 42;
    let link = start(cfg);
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let data = payload(500_000);
    let server = serve(listener, data.clone(), 1);
    link.begin_run(None).unwrap();
    let d = download(&link, port, 0);
    server.join().unwrap();
    let c = link.end_run().unwrap();
    assert!(d.data == data, "transfer not byte-exact under loss");
    let lost = c.client_to_server.dropped_loss_packets + c.server_to_client.dropped_loss_packets;
    eprintln!(
        "2% loss: {} packets, {lost} lost, {} retransmissions",
        c.packets_total, c.retransmissions
    );
    assert!(lost > 0);
    assert!(
        c.retransmissions > 0,
        "retransmissions must show in the counts"
    );
    assert_eq!(c.kinds.retransmission.packets, c.retransmissions);
    let share = lost as f64 / (c.packets_total + lost) as f64;
    assert!((0.005..0.05).contains(&share), "loss share {share}");
}

#[test]
fn mss_536_limits_segment_size() {
    if !can_run() {
        return;
    }
    let mut cfg = profile("lan");
    cfg.mss = Some(536);
    let link = start(cfg);
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let data = payload(50_000);
    let server = serve(listener, data.clone(), 1);
    link.begin_run(None).unwrap();
    assert!(download(&link, port, 0).data == data);
    server.join().unwrap();
    let c = link.end_run().unwrap();
    let per_packet = c.server_to_client.payload_bytes / c.server_to_client.kinds.data.packets;
    // Full segments carry 536 minus TCP options (12 bytes of timestamps).
    assert!(
        (500..=536).contains(&per_packet),
        "mean payload per data packet {per_packet}"
    );
    assert!(c.server_to_client.kinds.data.packets >= 50_000 / 536);
}

#[test]
fn tcp1997_settings_apply_inside_the_namespaces_only() {
    if !can_run() {
        return;
    }
    let host_sack = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_sack").unwrap();
    let mut cfg = profile("wan");
    cfg.tcp1997 = true;
    let link = start(cfg);
    let (sack, cc, routes) = link
        .run_in_client(|| {
            let r = |p: &str| std::fs::read_to_string(p).unwrap().trim().to_string();
            let routes = Command::new(pagewire_emu::ns::ip_binary())
                .args(["route", "show"])
                .output()
                .unwrap();
            (
                r("/proc/sys/net/ipv4/tcp_sack"),
                r("/proc/sys/net/ipv4/tcp_congestion_control"),
                String::from_utf8(routes.stdout).unwrap(),
            )
        })
        .unwrap();
    assert_eq!(sack, "0");
    assert_eq!(cc, "reno");
    assert!(routes.contains("initcwnd 2"), "{routes}");
    assert!(routes.contains("rto_min"), "{routes}");
    // The host's own settings are untouched.
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_sack").unwrap(),
        host_sack
    );
    // Without timestamps the TCP header of a data segment is 20 bytes.
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let server = serve(listener, payload(20_000), 1);
    link.begin_run(None).unwrap();
    download(&link, port, 0);
    server.join().unwrap();
    let c = link.end_run().unwrap();
    let d = &c.server_to_client;
    assert_eq!(
        d.kinds.data.bytes - d.payload_bytes,
        40 * d.kinds.data.packets
    );
}

#[test]
fn codel_and_fq_codel_drop_in_the_forwarder_and_the_transfer_stays_exact() {
    if !can_run() {
        return;
    }
    for aqm in ["codel", "fq-codel"] {
        // 4 Mbit/s, 20 ms RTT, the default 1000-packet queue: a 1 MB
        // download's slow start builds a standing queue far above 5 ms for
        // more than 100 ms, so the discipline must drop.
        let mut cfg = profile("lan");
        cfg.rtt = std::time::Duration::from_millis(20);
        cfg.up_rate = pagewire_link::Rate::Bps(4_000_000);
        cfg.down_rate = pagewire_link::Rate::Bps(4_000_000);
        cfg.aqm = aqm.parse().unwrap();
        let link = start(cfg);
        let listener = listen(&link);
        let port = listener.local_addr().unwrap().port();
        let data = payload(1_000_000);
        let server = serve(listener, data.clone(), 1);
        link.begin_run(None).unwrap();
        let d = download(&link, port, 0);
        server.join().unwrap();
        let c = link.end_run().unwrap();
        assert!(d.data == data, "{aqm}: transfer not byte-exact");
        let aqm_drops = c.server_to_client.dropped_aqm_packets;
        eprintln!(
            "{aqm}: {} packets, {aqm_drops} AQM drops, {} retransmissions",
            c.packets_total, c.retransmissions
        );
        assert!(aqm_drops > 0, "{aqm}: no AQM drop");
        assert_eq!(c.server_to_client.dropped_queue_packets, 0);
        assert!(c.dropped_total >= aqm_drops);
        assert!(c.retransmissions > 0);
    }
}

#[test]
fn cross_traffic_shares_the_link_but_stays_out_of_the_counts_and_pcap() {
    if !can_run() || pagewire_testreq::require_peer("tshark").is_none() {
        return;
    }
    use std::io::{Read, Write};
    // 4 Mbit/s, 20 ms RTT: a bulk flow on the cross port and a counted
    // 200 kB download share the queue.
    let mut cfg = profile("lan");
    cfg.rtt = std::time::Duration::from_millis(20);
    cfg.up_rate = pagewire_link::Rate::Bps(4_000_000);
    cfg.down_rate = pagewire_link::Rate::Bps(4_000_000);
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("run.pcap");
    let link = start(cfg);
    let bulk_listener = listen(&link);
    let bulk_port = bulk_listener.local_addr().unwrap().port();
    link.set_cross_traffic_port(Some(bulk_port)).unwrap();
    // The sender writes until the reader goes (bounded: 4 MB at most).
    let sender = std::thread::spawn(move || {
        let (mut s, _) = bulk_listener.accept().unwrap();
        let buf = vec![0u8; 16 * 1024];
        for _ in 0..256 {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let addr = link.server_addr();
    let mut bulk = link
        .run_in_client(move || std::net::TcpStream::connect((addr, bulk_port)))
        .unwrap()
        .unwrap();
    let mut got = vec![0u8; 64 * 1024];
    // The bulk flow is under way (its first 64 kB arrived) before the run.
    let mut read = 0;
    while read < 64 * 1024 {
        read += bulk.read(&mut got).unwrap();
    }
    let listener = listen(&link);
    let port = listener.local_addr().unwrap().port();
    let data = payload(200_000);
    let server = serve(listener, data.clone(), 1);
    link.begin_run(Some(&pcap)).unwrap();
    let d = download(&link, port, 0);
    server.join().unwrap();
    drop(bulk);
    let c = link.end_run().unwrap();
    sender.join().unwrap();
    assert!(d.data == data, "transfer not byte-exact");
    let cross = c.server_to_client.cross_traffic;
    eprintln!(
        "counted {} packets, cross traffic {} packets / {} bytes down",
        c.packets_total, cross.packets, cross.bytes
    );
    assert!(
        cross.packets > 20,
        "the bulk flow crossed the link: {cross:?}"
    );
    assert!(c.client_to_server.cross_traffic.packets > 0, "its ACKs too");
    // Only the counted connection is in the counters and the pcap.
    assert_eq!(c.connections_opened, 1);
    assert!(c.server_to_client.payload_bytes >= 200_000);
    assert!(c.server_to_client.payload_bytes < 230_000);
    assert_eq!(
        tshark_count(&pcap, "frame"),
        (c.packets_total, c.bytes_total)
    );
    assert_eq!(
        tshark_count(&pcap, &format!("tcp.port == {bulk_port}")).0,
        0
    );
}
