#!/usr/bin/env python3
"""The robot's four strategies over pagewire's emulated links, first-time
retrieval and revalidation, beside paper 001's Apache figures (Tables 5 and
7, 9). A quick check of the robot's behaviour; `pagewire bench` has the full
suite with repetitions and statistics.

Usage: bench/client_link.py [--net lan,wan] [--reps N] [--pagewire PATH]
Runs as root (network namespaces). Each run is `pagewire link --net NET
--tcp 1997 --json --server 'pagewire serve ...' -- pagewire fetch ...`;
packets and bytes are the link's counters (both directions, every kind),
Sec is first packet to last packet, %ov the share of TCP/IP header bytes.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Paper 001, Apache 1.2b10: (Pa, Bytes, Sec, %ov).
PAPER = {
    ("lan", "first"): {
        "http10": (489.4, 215536, 0.72, 8.3),
        "http11": (244.2, 189023, 0.81, 4.9),
        "pipeline": (175.8, 189607, 0.49, 3.6),
        "pipeline-deflate": (139.8, 156834, 0.41, 3.4),
    },
    ("lan", "revalidate"): {
        "http10": (365.4, 60605, 0.41, 19.4),
        "http11": (98.4, 14009, 0.40, 21.9),
        "pipeline": (29.2, 14009, 0.23, 7.7),
        "pipeline-deflate": (28.4, 14002, 0.23, 7.5),
    },
    ("wan", "first"): {
        "http10": (559.6, 248655, 4.09, 8.3),
        "http11": (309.4, 191436, 6.14, 6.1),
        "pipeline": (221.4, 191181, 2.23, 4.4),
        "pipeline-deflate": (182.0, 159170, 2.11, 4.4),
    },
    # Table 9 (PPP) has no HTTP/1.0 row.
    ("ppp", "first"): {
        "http11": (308.6, 187869, 65.6, 6.2),
        "pipeline": (281.4, 187918, 53.4, 5.7),
        "pipeline-deflate": (233.0, 157214, 47.2, 5.6),
    },
    ("ppp", "revalidate"): {
        "http11": (89.0, 13843, 11.1, 20.5),
        "pipeline": (26.0, 13912, 3.4, 7.0),
        "pipeline-deflate": (26.0, 13905, 3.4, 7.0),
    },
    ("wan", "revalidate"): {
        "http10": (370.0, 61887, 2.64, 19.3),
        "http11": (104.2, 14255, 4.43, 22.6),
        "pipeline": (29.8, 15352, 0.86, 7.2),
        "pipeline-deflate": (29.0, 15088, 0.83, 7.2),
    },
}
STRATEGIES = ["http10", "http11", "pipeline", "pipeline-deflate"]


def run_once(pw, site, net, strategy, cache, revalidate):
    fetch = f"{pw} fetch http://$PAGEWIRE_SERVER_ADDR/ --strategy {strategy} --request-profile minimal --cache {cache} --json"
    if revalidate:
        fetch += " --revalidate"
    out = os.path.join(cache, "fetch.json")
    cmd = [
        pw, "link", "--net", net, "--tcp", "1997", "--json",
        "--server", f"{pw} serve --root {site} --addr $PAGEWIRE_SERVER_ADDR:80",
        "--", "sh", "-c", f"{fetch} > {out}",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    link = json.loads(p.stdout[p.stdout.index("{"):])
    report = json.loads(open(out).read())
    c2s, s2c = link["client_to_server"], link["server_to_client"]
    packets = c2s["packets"] + s2c["packets"]
    total = c2s["bytes"] + s2c["bytes"]
    header = c2s["header_bytes"] + s2c["header_bytes"]
    secs = max(c2s["last_packet_s"], s2c["last_packet_s"]) - min(c2s["first_packet_s"], s2c["first_packet_s"])
    return {
        "packets": packets,
        "bytes": total,
        "secs": secs,
        "ov": 100.0 * header / total,
        "conns": report["connections_opened"],
        "flushes": report["flush_counts"],
        "statuses": report["statuses"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--net", default="lan,wan")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pagewire", default=os.environ.get("PAGEWIRE", "target/release/pagewire"))
    a = ap.parse_args()
    pw = os.path.abspath(a.pagewire)
    with tempfile.TemporaryDirectory() as work:
        site = os.path.join(work, "site")
        subprocess.run([pw, "site", "microscape", "--out", site], check=True, capture_output=True)
        version = subprocess.run([pw, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"# bench/client_link.py {' '.join(sys.argv[1:])}: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {version}, "
              f"server `pagewire serve`, --tcp 1997, median of {a.reps} runs; paper = Apache 1.2b10 (Tables 5, 7, 9)")
        for net in a.net.split(","):
            for test in ["first", "revalidate"]:
                print(f"\n{net}, {test}:\n")
                print("| strategy | Pa | paper Pa | Bytes | paper Bytes | Sec | paper Sec | %ov | paper %ov | sockets |")
                print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
                for s in STRATEGIES:
                    runs = []
                    for _ in range(a.reps):
                        cache = tempfile.mkdtemp(dir=work)
                        if test == "revalidate":
                            run_once(pw, site, net, s, cache, False)
                        runs.append(run_once(pw, site, net, s, cache, test == "revalidate"))
                    med = {k: statistics.median(r[k] for r in runs) for k in ["packets", "bytes", "secs", "ov", "conns"]}
                    pp = PAPER.get((net, test), {}).get(s)
                    ref = (lambda i, f: f.format(pp[i]) if pp else "-")
                    print(f"| {s} | {med['packets']:.0f} | {ref(0, '{:.1f}')} | {med['bytes']:.0f} | {ref(1, '{:.0f}')} "
                          f"| {med['secs']:.2f} | {ref(2, '{:.2f}')} | {med['ov']:.1f} | {ref(3, '{:.1f}')} | {med['conns']:.0f} |")


if __name__ == "__main__":
    main()
