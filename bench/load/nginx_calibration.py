#!/usr/bin/env python3
"""The calibration table from nginx's own access log (bench/load/calibrate.sh).

For every mode: the requests nginx logged inside the generator's measurement
window ([start + warm-up, start + duration), by $msec, the time nginx logged
the response), the connections whose first request falls in it, and for the
persistent modes the web objects, rebuilt per connection: a request for an
embedded file /oN/eK.bin that follows /oN.html or another file of /oN on the
same connection continues that object; any other request starts one.
"""
import json
import re
import sys

BANDS = {
    "GETs/s per UE": (0.30, 0.70, "0.454-0.499"),
    "bytes per GET (KB)": (7.0, 16.0, "10.5-11.8"),
    "files per web object": (1.2, 2.5, "1.38-1.58"),
    "web objects per connection": (2.3, 5.0, "3.46-3.66"),
}
EMB = re.compile(r"^/o(\d+)/e\d+\.bin$")
BASE = re.compile(r"^/o(\d+)\.html$")


def analyse(work, mode):
    s = json.load(open(f"{work}/out-{mode}/summary.json"))
    run = s["run"]
    lo = run["start_unix"] + run["warmup_s"]
    hi = run["start_unix"] + run["duration_s"]
    gets = conns = body = objects = non200 = 0
    current = {}  # connection -> object number being fetched
    for line in open(f"{work}/nginx-{mode}/logs/access.log"):
        t, conn, nreq, status, size, uri = line.split()[:6]
        t = float(t)
        m = EMB.match(uri)
        b = BASE.match(uri)
        cont = m is not None and current.get(conn) == m.group(1)
        current[conn] = b.group(1) if b else (m.group(1) if m else None)
        if not (lo <= t < hi):
            continue
        if status != "200":
            non200 += 1
            continue
        gets += 1
        body += int(size)
        if nreq == "1":
            conns += 1
        if not cont:
            objects += 1
    window = hi - lo
    return {
        "mode": mode,
        "ues": run["ues"],
        "window_s": window,
        "gets": gets,
        "connections": conns,
        "non200": non200,
        "generator_gets": s["gets"],
        "generator_connections": s["connections"],
        "GETs/s per UE": gets / window / run["ues"],
        "bytes per GET (KB)": body / max(gets, 1) / 1000,
        "files per web object": gets / max(objects, 1) if mode != "http10" else None,
        "web objects per connection": objects / max(conns, 1)
        if mode in ("http11", "pipeline")
        else None,
    }


def main():
    work, modes = sys.argv[1], sys.argv[2:]
    rows = [analyse(work, m) for m in modes]
    print("calibration from nginx's access log (measurement window only)")
    print(f"{'mode':<12} {'GETs':>7} {'conns':>7} {'gen GETs':>8} {'gen conns':>9} {'non-200':>7}")
    for r in rows:
        print(f"{r['mode']:<12} {r['gets']:>7} {r['connections']:>7} {r['generator_gets']:>8} "
              f"{r['generator_connections']:>9} {r['non200']:>7}")
    ok = True
    print(f"{'quantity':<28} {'mode':<12} {'nginx':>8}  {'paper':<12} {'band':<10} verdict")
    for q, (blo, bhi, paper) in BANDS.items():
        for r in rows:
            v = r[q]
            if v is None:
                continue
            inside = blo <= v <= bhi
            ok &= inside
            print(f"{q:<28} {r['mode']:<12} {v:>8.3f}  {paper:<12} {blo}-{bhi:<6} "
                  f"{'within' if inside else 'OUTSIDE'}")
    by = {r["mode"]: r for r in rows}
    if "http10" in by and "http11" in by:
        ratio = by["http10"]["connections"] / max(by["http11"]["connections"], 1)
        inside = 3.5 <= ratio <= 8
        ok &= inside
        print(f"{'HTTP/1.0 : HTTP/1.1 conns':<28} {'':<12} {ratio:>8.3f}  {'4.79-5.79':<12} "
              f"{'3.5-8':<10} {'within' if inside else 'OUTSIDE'}")
        base = by["http10"]["GETs/s per UE"]
        for m in ("http11", "pipeline", "early-close"):
            if m in by:
                rel = by[m]["GETs/s per UE"] / base - 1
                inside = abs(rel) <= 0.15
                ok &= inside
                print(f"{'GETs/s per UE vs http10':<28} {m:<12} {rel * 100:>7.1f}%  {'(same UEs)':<12} "
                      f"{'+-15 %':<10} {'within' if inside else 'OUTSIDE'}")
    print("every row within its band" if ok else "SOME ROW OUTSIDE ITS BAND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
