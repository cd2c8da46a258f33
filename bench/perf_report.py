#!/usr/bin/env python3
"""bench/perf.sh's report: one table of ratios (pagewire against its peers,
with the server's performance goals), then the per-server figures behind it.

Usage: perf_report.py OUT --commit C --dirty true|false --load-before L
       --load-after L --versions V --machine M --settings S --seconds N
Reads OUT/runs.csv, OUT/idle.csv and OUT/loadgen.csv; writes OUT/perf.json and
prints Markdown (perf.sh saves it as OUT/results.md).
"""
import argparse
import csv
import datetime
import json
import os
import statistics


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def ok(x):
    return x == x  # not NaN


def med(xs):
    xs = [x for x in xs if ok(x)]
    return statistics.median(xs) if xs else float("nan")


def lo(xs):
    xs = [x for x in xs if ok(x)]
    return min(xs) if xs else float("nan")


def hi(xs):
    xs = [x for x in xs if ok(x)]
    return max(xs) if xs else float("nan")


def f(x, fmt="{:,.0f}"):
    return fmt.format(x) if ok(x) else "n/a"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    for k in ("commit", "dirty", "load-before", "load-after", "versions", "machine", "settings", "seconds"):
        ap.add_argument("--" + k, required=True)
    a = ap.parse_args()

    runs = list(csv.DictReader(open(os.path.join(a.out, "runs.csv"))))
    idle = list(csv.DictReader(open(os.path.join(a.out, "idle.csv"))))
    gen = list(csv.DictReader(open(os.path.join(a.out, "loadgen.csv"))))
    servers = ["pagewire", "nginx", "h2o"]
    cells = ["h2-m1", "h2-m10", "h2-m100", "h1-keepalive", "h1-pipelined"]

    def vals(server, cell, key):
        return [num(r[key]) if r["note"] == "ok" else float("nan")
                for r in runs if r["server"] == server and r["cell"] == cell]

    per = {}
    # The floor (bench/server/floor.c) runs in the keep-alive cell only.
    for s, c in [(s, c) for s in servers for c in cells] + [("floor", "h1-keepalive")]:
        rps, cpu = vals(s, c, "req_per_s"), vals(s, c, "cpu_s_per_100k")
        # runs.csv from before the split has no user/sys columns: n/a.
        usr = [num(r.get("user_s_per_100k")) for r in runs if r["server"] == s and r["cell"] == c and r["note"] == "ok"]
        sys_ = [num(r.get("sys_s_per_100k")) for r in runs if r["server"] == s and r["cell"] == c and r["note"] == "ok"]
        per[(s, c)] = {
            "user_s_per_100k_median": med(usr), "sys_s_per_100k_median": med(sys_),
            "runs": len(rps),
            "valid_runs": sum(1 for x in rps if ok(x)),
            "req_per_s_median": med(rps), "req_per_s_min": lo(rps), "req_per_s_max": hi(rps),
            "cpu_s_per_100k_median": med(cpu), "cpu_s_per_100k_min": lo(cpu),
            "cpu_s_per_100k_max": hi(cpu),
        }
    mem = {r["server"]: num(r["bytes_per_conn"]) for r in idle}
    # Busy share of the generator's core: CPU seconds / wall seconds
    # (loadgen.csv from before the sweep has no wall_s: n/a).
    for r in gen:
        r["busy"] = num(r.get("gen_cpu_s")) / num(r.get("wall_s"))
    sweep = [r for r in gen if r["round"] == "sweep"]
    gen = [r for r in gen if r["round"] != "sweep"]
    gens = sorted({r["generator"] for r in gen})

    def offered(g):
        # One offered rate, or the median of a rate that changes from round
        # to round (pagewire-load-matched: the rate wrk-paced achieved).
        os_ = [r.get("offered") or "" for r in gen if r["generator"] == g]
        if len(set(os_)) <= 1:
            return os_[0] if os_ else ""
        return f"{f(med([num(o) for o in os_]))} (median)"

    genfig = {g: {"cpu_us_per_get_median": med([num(r["cpu_us_per_get"]) for r in gen if r["generator"] == g]),
                  "cpu_us_per_get_min": lo([num(r["cpu_us_per_get"]) for r in gen if r["generator"] == g]),
                  "req_per_s_median": med([num(r["req_per_s"]) for r in gen if r["generator"] == g]),
                  "busy_median": med([r["busy"] for r in gen if r["generator"] == g]),
                  "offered": offered(g)}
              for g in gens}
    for g, v in genfig.items():
        # Requests per second one whole core of this generator would carry.
        v["req_per_s_per_core"] = v["req_per_s_median"] / v["busy_median"] if v["busy_median"] > 0 else float("nan")

    def better_peer(cell, key, best):
        vs = {s: per[(s, cell)][key] for s in ("nginx", "h2o")}
        vs = {s: v for s, v in vs.items() if ok(v)}
        if not vs:
            return None, float("nan")
        s = best(vs, key=vs.get)
        return s, vs[s]

    rows = []

    def row(what, value, goal, met, detail):
        rows.append({"measure": what, "value": value, "goal": goal, "met": met, "detail": detail})

    for c in ("h2-m1", "h2-m10", "h2-m100"):
        ps, pv = better_peer(c, "req_per_s_median", max)
        r = per[("pagewire", c)]["req_per_s_median"] / pv if ps else float("nan")
        cs, cv = better_peer(c, "cpu_s_per_100k_median", min)
        rc = per[("pagewire", c)]["cpu_s_per_100k_median"] / cv if cs else float("nan")
        m = c.split("-m")[1]
        row(f"HTTP/2 -m{m}: req/s, pagewire / better peer ({ps})", f(r, "{:.2f}x"),
            ">= 1.00x" if m != "1" else "(reported)",
            ("yes" if (r >= 1.0 or rc <= 1.0) else "no") if m != "1" else "-",
            f"CPU per request, pagewire / lowest peer ({cs}): {f(rc, '{:.2f}x')}")
    # Keep-alive: CPU per request against h2o, ratio of mins and of medians.
    pk, hk = per[("pagewire", "h1-keepalive")], per[("h2o", "h1-keepalive")]
    rmin = pk["cpu_s_per_100k_min"] / hk["cpu_s_per_100k_min"]
    rmed = pk["cpu_s_per_100k_median"] / hk["cpu_s_per_100k_median"]
    row("HTTP/1.1 keep-alive: CPU per request, pagewire / h2o (min; median)",
        f"{f(rmin, '{:.2f}')}; {f(rmed, '{:.2f}')}", "<= 0.85",
        "yes" if rmin <= 0.85 and rmed <= 0.85 else "no",
        f"CPU s per 100k: pagewire {f(pk['cpu_s_per_100k_median'], '{:.3f}')}, h2o {f(hk['cpu_s_per_100k_median'], '{:.3f}')} (medians)")
    # What the kernel alone costs, as a bound on the goal above (reported,
    # no goal): the floor against h2o, pagewire against the floor, and
    # pagewire's system time alone against h2o's whole CPU (with no user
    # time at all pagewire could not go below that).
    fk = per[("floor", "h1-keepalive")]
    if fk["valid_runs"]:
        fmin = fk["cpu_s_per_100k_min"] / hk["cpu_s_per_100k_min"]
        fmed = fk["cpu_s_per_100k_median"] / hk["cpu_s_per_100k_median"]
        row("HTTP/1.1 keep-alive: CPU per request, kernel floor (bench/server/floor.c) / h2o (min; median)",
            f"{f(fmin, '{:.2f}')}; {f(fmed, '{:.2f}')}", "(reported)", "-",
            f"floor {f(fk['cpu_s_per_100k_median'], '{:.3f}')} CPU s per 100k (median): one recv and one send per request, no parsing")
        pf = pk["cpu_s_per_100k_median"] / fk["cpu_s_per_100k_median"]
        ps_ = pk["sys_s_per_100k_median"] / hk["cpu_s_per_100k_median"]
        row("HTTP/1.1 keep-alive: CPU per request, pagewire / kernel floor (medians)", f(pf, "{:.2f}"), "(reported)", "-",
            f"pagewire's system time alone / h2o's CPU: {f(ps_, '{:.2f}')} (user {f(pk['user_s_per_100k_median'], '{:.3f}')}, "
            f"system {f(pk['sys_s_per_100k_median'], '{:.3f}')} s per 100k; floor user {f(fk['user_s_per_100k_median'], '{:.3f}')}, "
            f"system {f(fk['sys_s_per_100k_median'], '{:.3f}')})")
    ps, pv = better_peer("h1-pipelined", "req_per_s_median", max)
    r = per[("pagewire", "h1-pipelined")]["req_per_s_median"] / pv if ps else float("nan")
    row(f"HTTP/1.1 pipelined: req/s, pagewire / better peer ({ps})", f(r, "{:.2f}x"), ">= 3x",
        "yes" if r >= 3 else "no", "")
    pm = mem.get("pagewire", float("nan"))
    row("idle keep-alive connection: bytes, pagewire (nginx; h2o)",
        f"{f(pm)} ({f(mem.get('nginx', float('nan')))}; {f(mem.get('h2o', float('nan')))})",
        "<= 512 and <= nginx's",
        "yes" if pm <= 512 and pm <= mem.get("nginx", float("nan")) else "no", "")
    pl = [g for g in gens if g.startswith("pagewire-load-rate")]
    wv = genfig.get("wrk", {}).get("cpu_us_per_get_median", float("nan"))
    # The like-for-like comparison: the open-loop peer at the same rate.
    for g in pl:
        peer = "h2load-h1-rate" + g[len("pagewire-load-rate"):]
        if peer in genfig:
            v, pv = genfig[g]["cpu_us_per_get_median"], genfig[peer]["cpu_us_per_get_median"]
            row(f"load generator: CPU per GET, {g} / {peer} (same rate)", f(v / pv, "{:.2f}x"), "(reported)", "-",
                f"{f(v, '{:.2f}')} us vs {f(pv, '{:.2f}')} us per GET (medians)")
    # The goal "<= wrk's", like for like: (a) both closed loops at their
    # maximum rate; (b) both at the same rate below saturation, wrk paced by
    # bench/wrk-pace.lua and pagewire load --rate at the rate that wrk run
    # achieved, run right after it (so the pairs' ratios, not the medians of
    # each side, which mix rounds of different rates and machine load).
    if "pagewire-load" in genfig:
        v = genfig["pagewire-load"]["cpu_us_per_get_median"]
        row("load generator: CPU per GET, pagewire-load / wrk", f(v / wv, "{:.2f}x"), "<= 1.00x",
            "yes" if v / wv <= 1.0 else "no",
            f"{f(v, '{:.2f}')} us vs {f(wv, '{:.2f}')} us per GET (medians); both closed loops at their maximum rate")
    if "pagewire-load-matched" in genfig and "wrk-paced" in genfig:
        pairs = []
        for rnd in sorted({r["round"] for r in gen}):
            by = {r["generator"]: r for r in gen if r["round"] == rnd}
            if "pagewire-load-matched" in by and "wrk-paced" in by:
                pairs.append(num(by["pagewire-load-matched"]["cpu_us_per_get"]) / num(by["wrk-paced"]["cpu_us_per_get"]))
        rp = med(pairs)
        pm_, wp = genfig["pagewire-load-matched"], genfig["wrk-paced"]
        row("load generator: CPU per GET, same fixed rate, pagewire-load-matched / wrk-paced", f(rp, "{:.2f}x"), "<= 1.00x",
            "yes" if rp <= 1.0 else "no",
            f"median of {sum(1 for x in pairs if ok(x))} per-round ratios (each pair back to back, pagewire load --rate "
            f"at the rate wrk paced by bench/wrk-pace.lua achieved); medians {f(pm_['cpu_us_per_get_median'], '{:.2f}')} us vs "
            f"{f(wp['cpu_us_per_get_median'], '{:.2f}')} us per GET at {f(pm_['req_per_s_median'])} vs {f(wp['req_per_s_median'])} req/s; "
            "wrk paced is a closed loop with think time (delay()), not wrk2's open -R")
    for g in pl:
        v = genfig[g]["cpu_us_per_get_median"]
        row(f"load generator: CPU per GET, {g} / wrk (closed loop)", f(v / wv, "{:.2f}x"), "(reported)", "-",
            f"{f(v, '{:.2f}')} us vs {f(wv, '{:.2f}')} us per GET (medians); not the goal: unlike work, an open loop "
            "below saturation (the server idles between requests and each one wakes it) against a closed loop at "
            "its maximum rate (which batches those wake-ups away); the goal rows are the closed-loop and same-rate pairs")

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {
        "provenance": {"git_commit": a.commit, "git_dirty": a.dirty == "true", "date_utc": date,
                       "command": ["bench/perf.sh"], "settings": a.settings,
                       "load_average_before": a.load_before, "load_average_after": a.load_after,
                       "machine": a.machine, "versions": a.versions, "seconds": int(a.seconds)},
        "ratios": rows,
        "cells": [{"server": s, "cell": c, **per[(s, c)]} for s in servers for c in cells]
        + [{"server": "floor", "cell": "h1-keepalive", **per[("floor", "h1-keepalive")]}],
        "idle_bytes_per_conn": mem,
        "load_generators": genfig,
        "load_generator_sweep": [{k: r[k] for k in ("generator", "offered", "req_per_s", "cpu_us_per_get", "gen_cpu_s", "wall_s")}
                                 | {"busy": r["busy"]} for r in sweep],
    }
    def clean(v):
        if isinstance(v, float) and not ok(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    with open(os.path.join(a.out, "perf.json"), "w") as fh:
        json.dump(clean(doc), fh, indent=1, allow_nan=False)
        fh.write("\n")

    print("# pagewire performance (bench/perf.sh)\n")
    print(f"Run: {date}, {a.seconds} s; commit {a.commit[:12]}{' (dirty tree)' if a.dirty == 'true' else ''}.")
    print(f"Machine: {a.machine}; load average {a.load_before} before, {a.load_after} after (a shared VM: the averages include other tenants' work).")
    print(f"Versions: {a.versions}.")
    print(f"Settings: {a.settings}. Servers on one core, generators on the other; rounds interleaved.")
    # runs.csv from before the column: no steal line.
    steal = [(num(r["server_core_steal_pct"]), r) for r in runs if r.get("server_core_steal_pct") not in (None, "")]
    if steal:
        worst, wr = max(steal, key=lambda t: t[0])
        print(f"CPU steal on the servers' core during the measured runs (time the hypervisor ran someone else): "
              f"median {med([v for v, _ in steal]):.0f} %, max {worst:.0f} % (round {wr['round']}, {wr['server']}, {wr['cell']}).")
    print()
    print("| measure | value | goal | met | detail |")
    print("|---|---:|---|---|---|")
    for r in rows:
        print(f"| {r['measure']} | {r['value']} | {r['goal']} | {r['met']} | {r['detail']} |")
    print("\nPer server (median of the rounds; min-max in parentheses):\n")
    print("| cell | server | req/s | CPU s / 100k requests |")
    print("|---|---|---:|---:|")
    for c in cells:
        for s in servers + (["floor"] if c == "h1-keepalive" and per[("floor", c)]["valid_runs"] else []):
            p = per[(s, c)]
            print(f"| {c} | {s} | {f(p['req_per_s_median'])} ({f(p['req_per_s_min'])}-{f(p['req_per_s_max'])}) "
                  f"| {f(p['cpu_s_per_100k_median'], '{:.3f}')} ({f(p['cpu_s_per_100k_min'], '{:.3f}')}-{f(p['cpu_s_per_100k_max'], '{:.3f}')}) |")
    print("\nLoad generators against pagewire's HTTP/1.1 server (1 KB file, 50 connections; median of the rounds):\n")
    print("| generator | offered req/s | req/s | CPU us per GET (median) | (min) | core busy | req/s per whole core |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for g in gens:
        v = genfig[g]
        print(f"| {g} | {v['offered']} | {f(v['req_per_s_median'])} | {f(v['cpu_us_per_get_median'], '{:.2f}')} "
              f"| {f(v['cpu_us_per_get_min'], '{:.2f}')} | {f(v['busy_median'] * 100, '{:.0f} %')} | {f(v['req_per_s_per_core'])} |")
    if sweep:
        print("\nWhere each generator saturates its core: fixed rates, one run each (core busy = CPU s / wall s;"
              " a generator is saturated where it falls behind the offered rate with its core near 100 % busy;"
              " behind with its core not busy, the server is the limit):\n")
        print("| generator | offered req/s | req/s | CPU us per GET | core busy |")
        print("|---|---:|---:|---:|---:|")
        for r in sweep:
            print(f"| {r['generator'][len('sweep-'):]} | {r['offered']} | {f(num(r['req_per_s']))} "
                  f"| {f(num(r['cpu_us_per_get']), '{:.2f}')} | {f(r['busy'] * 100, '{:.0f} %')} |")


if __name__ == "__main__":
    main()
