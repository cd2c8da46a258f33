#!/usr/bin/env python3
"""Summarises bench result directories of the bufferbloat run (docs/link.md).

Usage: summarize.py DIR...  (each DIR a `pagewire bench --out` directory with
results.json, pcaps/*.pcap.json and har/*.har). Prints one Markdown table row
per (directory, strategy): good runs, mean load time, retransmissions, AQM
drops and the HAR `wait` (request sent -> first response byte) over every
object of the good runs; for runs with competing traffic (`bench --bulk`),
the label says `+bulk N` and the last column is the bulk flows' mean goodput
while the page loaded (Mbit/s).
"""
import glob
import json
import os
import statistics
import sys


def main(dirs):
    print("| link + queue | strategy | good runs | load s (mean) | retransmissions | AQM drops | wait median s | wait p90 s | wait max s | bulk Mbit/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in dirs:
        r = json.load(open(os.path.join(d, "results.json")))
        cfg = next(iter(r["provenance"]["link_configs"].values()))
        label = cfg["profile"]
        aqm = cfg["aqm"]
        if aqm["kind"] in ("codel",):
            label += f" (target {aqm['target_ms']:g} ms, interval {aqm['interval_ms']:g} ms)"
        cross = [x["cross_traffic"] for x in r["runs"] if x.get("cross_traffic")]
        if cross:
            label += f" +bulk {cross[0]['flows']}"
        by = {}
        for x in r["runs"]:
            by.setdefault(x["strategy"], []).append(x)
        for s, xs in by.items():
            good = [x for x in xs if not x["error"]]
            secs = [x["elapsed_s"] for x in good]
            retx = [x["retransmissions"] for x in xs]
            drops = []
            waits = []
            for x in xs:
                side = os.path.join(d, "pcaps", f"{x['net']}-{s}-{x['test']}-r{x['rep']}.pcap.json")
                if os.path.exists(side):
                    c = json.load(open(side))["counters"]
                    drops.append(sum(c[k].get("dropped_aqm_packets", 0) for k in ("client_to_server", "server_to_client")))
                if x["error"]:
                    continue
                for f in glob.glob(os.path.join(d, "har", f"{x['net']}-{s}-{x['test']}-r{x['rep']}.har")):
                    for e in json.load(open(f))["log"]["entries"]:
                        w = e["timings"].get("wait", -1)
                        if w is not None and w >= 0:
                            waits.append(w / 1000)
            waits.sort()
            wait = (
                f"{statistics.median(waits):.2f} | {waits[len(waits) * 9 // 10]:.2f} | {waits[-1]:.2f}"
                if waits
                else "- | - | -"
            )
            bulk = [x["cross_traffic"]["goodput_bps"] / 1e6 for x in good if x.get("cross_traffic")]
            bulk = f"{statistics.mean(bulk):.2f}" if bulk else "-"
            print(
                f"| {label} | {s} | {len(good)}/{len(xs)} | "
                f"{statistics.mean(secs) if secs else float('nan'):.2f} | {'/'.join(map(str, retx))} | "
                f"{'/'.join(map(str, drops))} | {wait} | {bulk} |"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
