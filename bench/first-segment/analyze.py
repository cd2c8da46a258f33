#!/usr/bin/env python3
"""Paper 001, section 8.1 ("Why Compression is Important"): what follows the
first segment of the page on a pipelined connection? The client either
sends its next batch of requests at once (the HTML in that segment named
enough images to fill the robot's output buffer) or acknowledges it alone,
possibly after the delayed-ACK timer, while the server (in slow start)
waits. Reads the pcaps of `pagewire bench` runs with tshark.

    bench/first-segment/analyze.py RESULTS_DIR [RESULTS_DIR ...]

For every first-retrieval pcap of pipeline and pipeline-deflate: the time
from the server's first data segment to the client's next packet, whether
that packet carried requests or was a pure ACK, and the time to the
server's next data segment. Prints one line per (directory, net,
strategy): means over the runs.
"""
import glob
import json
import os
import statistics
import subprocess
import sys


def packets(pcap):
    out = subprocess.run(
        ["tshark", "-r", pcap, "-T", "fields", "-e", "frame.time_relative",
         "-e", "ip.src", "-e", "tcp.len", "-e", "tcp.srcport"],
        check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        t, src, n, sport = line.split("\t")
        yield float(t), src, int(n or 0), int(sport or 0)


def one(pcap):
    ps = list(packets(pcap))
    # The server answers from port 80; its first data segment is the page.
    first = next((i for i, p in enumerate(ps) if p[3] == 80 and p[2] > 0), None)
    if first is None:
        return None
    t0 = ps[first][0]
    nxt = next((p for p in ps[first + 1:] if p[3] != 80), None)
    srv = next((p for p in ps[first + 1:] if p[3] == 80 and p[2] > 0), None)
    if nxt is None or srv is None:
        return None
    return (nxt[0] - t0, nxt[2] > 0, srv[0] - t0, ps[first][2])


def main():
    print("%-44s %-4s %-17s %3s %12s %10s %12s %9s" % (
        "directory", "net", "strategy", "n", "client next", "requests", "server next", "seg B"))
    for d in sys.argv[1:]:
        runs = json.load(open(os.path.join(d, "results.json")))["runs"]
        cells = {}
        for r in runs:
            if r["test"] != "first" or r["strategy"] not in ("pipeline", "pipeline-deflate"):
                continue
            if r.get("error") or r.get("sweep_rtt_ms") is not None:
                continue
            if (r.get("robot") or {}).get("tuning", "tuned") != "tuned":
                continue
            res = one(os.path.join(d, r["pcap"]))
            if res:
                cells.setdefault((r["net"], r["strategy"]), []).append(res)
        for (net, st), xs in sorted(cells.items(), key=lambda k: (["lan", "wan", "ppp"].index(k[0][0]), k[0][1])):
            print("%-44s %-4s %-17s %3d %9.1f ms %9.0f%% %9.1f ms %9.0f" % (
                d[-44:], net, st, len(xs),
                1000 * statistics.mean(x[0] for x in xs),
                100 * sum(1 for x in xs if x[1]) / len(xs),
                1000 * statistics.mean(x[2] for x in xs),
                statistics.mean(x[3] for x in xs)))


if __name__ == "__main__":
    main()
