#!/usr/bin/env bash
# pagewire load at fixed rates, tick vs tokio engine, server core 0, generator core 1.
set -u
PW=${PW:?the pagewire binary}; WORK=${WORK:?a directory with www/1k.bin}
PORT=31997
taskset -c 0 $PW serve --root $WORK/www --addr 127.0.0.1:$PORT --threads 1 > $WORK/lt-srv2.out 2>&1 &
SRV=$!
sleep 1
for round in 1 2; do
for rate in 20000 40000 60000 80000; do
for eng in tick tokio; do
  /usr/bin/time -f "%U %S %e" -o $WORK/lt-time.out timeout 40 taskset -c 1 $PW load http://127.0.0.1:$PORT/1k.bin -c 50 -d 5s --rate $rate --engine $eng --json > $WORK/lt-gen.json 2>/dev/null
  python3 - "$round" "$rate" "$eng" "$WORK" <<'PY'
import json,sys
j=json.load(open(sys.argv[4] + '/lt-gen.json')); u,s,e=map(float,open(sys.argv[4] + '/lt-time.out').read().split()[-3:])
n=j['gets']+j['gets_outside_window']
print(f"{sys.argv[1]},{sys.argv[2]},{j['run']['engine']},{n},{j['gets_per_second']:.0f},{u+s:.2f},{e:.2f},{(u+s)/n*1e6:.2f},{(u+s)/e:.3f},lat_p50={j['get_latency_ms']['p50']},p99={j['get_latency_ms']['p99']},lag_p99={j['send_lag_ms']['p99']},err={j['errors']}")
PY
done; done; done
kill $SRV
