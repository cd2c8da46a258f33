#!/usr/bin/env python3
"""Tables of bench/server/run.sh from its runs.csv.

Usage: report.py RUNS_CSV MEM_PAGEWIRE MEM_NGINX MEM_H2O

Per cell: the median over repetitions of requests/s, CPU seconds per 100k
requests (user + sys) and core-busy percentages; then pagewire against the
better peer, both as a ratio of medians and as the median of the ratios
within each repetition (servers of one repetition ran back to back, so a
drift in the machine's speed cancels in the paired ratio).
"""
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
mem = dict(zip(["pagewire", "nginx", "h2o"], sys.argv[2:5]))
servers = ["pagewire", "nginx", "h2o"]
cells = [("1k", "keepalive", "1 KB keep-alive"), ("1k", "pipelined", "1 KB pipelined"),
         ("microscape", "keepalive", "Microscape keep-alive"), ("microscape", "pipelined", "Microscape pipelined")]
def num(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")
def values(server, fs, mode, key):
    """One measure of one server in one cell, every valid repetition."""
    v = [num(r[key]) for r in rows if (r["server"], r["fileset"], r["mode"]) == (server, fs, mode)]
    return [x for x in v if x == x]
def med(server, fs, mode, key):
    v = values(server, fs, mode, key)
    return statistics.median(v) if v else float("nan")
def spread(server, fs, mode):
    v = values(server, fs, mode, "req_per_s")
    return f"{min(v):,.0f}–{max(v):,.0f}" if v else "n/a"
print("| cell | server | req/s (median) | req/s (min–max) | CPU s / 100k req (user + sys) | server core busy | load core busy |")
print("|---|---|---:|---:|---:|---:|---:|")
for fs, mode, label in cells:
    for s in servers:
        print(f"| {label} | {s} | {med(s, fs, mode, 'req_per_s'):,.0f} | {spread(s, fs, mode)} | "
              f"{med(s, fs, mode, 'cpu_s_per_100k'):.3f} ({med(s, fs, mode, 'user_s_per_100k'):.3f} + {med(s, fs, mode, 'sys_s_per_100k'):.3f}) | {med(s, fs, mode, 'server_core_busy_pct'):.0f}% | "
              f"{med(s, fs, mode, 'load_core_busy_pct'):.0f}% |")
print()
print("| server | bytes / idle keep-alive connection |")
print("|---|---:|")
for s in servers:
    print(f"| {s} | {mem[s]} |")
print()
def paired(fs, mode, key, better):
    """Median over repetitions of pagewire against the better peer of the same repetition."""
    out = []
    for rep in sorted({r["rep"] for r in rows}):
        v = {r["server"]: num(r[key]) for r in rows
             if (r["rep"], r["fileset"], r["mode"]) == (rep, fs, mode)}
        if len(v) == 3 and all(x == x for x in v.values()):
            out.append(better(v))
    return statistics.median(out) if out else float("nan")
print("pagewire against the better peer in each cell:")
print()
print("| cell | req/s ratio (of medians / median per repetition) | CPU-efficiency ratio, peer CPU/100k ÷ pagewire's (of medians / median per repetition) | lowest CPU/100k (median) | load core busy (pagewire / nginx / h2o) |")
print("|---|---:|---:|---|---|")
for fs, mode, label in cells:
    p = med("pagewire", fs, mode, "req_per_s")
    best_rps = max(med(s, fs, mode, "req_per_s") for s in ("nginx", "h2o"))
    cpu = {s: med(s, fs, mode, "cpu_s_per_100k") for s in servers}
    best_cpu = min(cpu["nginx"], cpu["h2o"])
    lowest = min(servers, key=lambda s: cpu[s])
    rps_pair = paired(fs, mode, "req_per_s", lambda v: v["pagewire"] / max(v["nginx"], v["h2o"]))
    cpu_pair = paired(fs, mode, "cpu_s_per_100k", lambda v: min(v["nginx"], v["h2o"]) / v["pagewire"])
    load = " / ".join(f"{med(s, fs, mode, 'load_core_busy_pct'):.0f}%" for s in servers)
    print(f"| {label} | {p / best_rps:.2f}x / {rps_pair:.2f}x | {best_cpu / cpu['pagewire']:.2f}x / {cpu_pair:.2f}x | {lowest} | {load} |")
