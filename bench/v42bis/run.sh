#!/usr/bin/env bash
# Paper 001 section 8.3 ("Further Compression Experiments"): the Microscape
# HTML page alone (one GET, no images) over a 28.8k modem, uncompressed and
# deflated, with the modem's own (V.42bis-style) compression off and on.
# Usage (as root): OUT=DIR REPS=5 PAGEWIRE=target/release/pagewire bench/v42bis/run.sh
set -euo pipefail
PAGEWIRE=${PAGEWIRE:-target/release/pagewire}
OUT=${OUT:-bench-v42bis}
REPS=${REPS:-5}
mkdir -p "$OUT"
CSV="$OUT/runs.csv"
echo "rep,link_compress,encoding,packets,ip_bytes,line_bytes,seconds,body_bytes" > "$CSV"
SERVER="$PAGEWIRE serve --site microscape --addr \$PAGEWIRE_SERVER_ADDR:80 > /dev/null"
for rep in $(seq 1 "$REPS"); do
  for comp in none v42bis; do
    for enc in identity deflate; do
      json=$("$PAGEWIRE" link --net ppp --link-compress "$comp" --json --server "$SERVER" -- \
        sh -c "curl -sS -o /dev/null -w '%{size_download}' -H 'Accept-Encoding: $enc' http://\$PAGEWIRE_SERVER_ADDR/index.html >&2")
      echo "$json" | python3 -c '
import json, sys
v = json.load(sys.stdin)
rep, comp, enc = sys.argv[1:4]
line = v["client_to_server"]["line_bytes"] + v["server_to_client"]["line_bytes"]
secs = v["last_packet_s"] - v["first_packet_s"]
pa, ip, body = v["packets_total"], v["bytes_total"], v["server_to_client"]["payload_bytes"]
print(f"{rep},{comp},{enc},{pa},{ip},{line},{secs:.3f},{body}")
' "$rep" "$comp" "$enc" >> "$CSV"
      tail -1 "$CSV"
    done
  done
done
python3 - "$CSV" <<'PY' | tee "$OUT/summary.txt"
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("Paper 001 section 8.3 on pagewire: the Microscape HTML page alone over ppp (28.8 kbit/s, RTT 150 ms)")
print(f"{'modem compression':<18} {'HTML':<9} {'n':>2} {'Pa':>6} {'IP bytes':>9} {'line':>7} {'Sec (mean sd)':>16}")
cells = {}
for r in rows:
    cells.setdefault((r["link_compress"], r["encoding"]), []).append(r)
for (comp, enc), rs in cells.items():
    f = lambda k: [float(r[k]) for r in rs]
    sd = st.stdev(f("seconds")) if len(rs) > 1 else 0.0
    print(f"{comp:<18} {enc:<9} {len(rs):>2} {st.mean(f('packets')):>6.1f} {st.mean(f('ip_bytes')):>9.0f} {st.mean(f('line_bytes')):>7.0f} {st.mean(f('seconds')):>9.2f} {sd:>6.2f}")
print("paper (Apache, standard 28.8 kbit/s modems): uncompressed 67 packets 12.13 s, deflate 4.43 s (64.5% saved)")
PY
