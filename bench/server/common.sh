# bench/server/common.sh — helpers shared by the bench scripts (sourced, not run).

# write_1k FILE: the 1 KB test file, 1024 deterministic incompressible bytes
# (no server may compress it).
write_1k() {
    python3 -c 'import random,sys; random.seed(1); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(1024)))' > "$1"
}

# write_h2o_conf FILE PORT ROOT: h2o with one thread, no compression, serving
# ROOT on 127.0.0.1:PORT.
write_h2o_conf() {
    cat > "$1" <<H2O
listen:
  host: 127.0.0.1
  port: $2
num-threads: 1
max-connections: 20000
http1-request-timeout: 60
file.send-compressed: OFF
hosts:
  default:
    paths:
      /:
        file.dir: $3
H2O
}

# proc_ticks PID...: "USER SYS" clock ticks used so far by these processes
# (fields 14 and 15 of /proc/PID/stat, after the ")" of the command name).
proc_ticks() {
    local user=0 sys=0 p
    for p in "$@"; do
        [ -r "/proc/$p/stat" ] || continue
        set -- $(sed 's/.*) //' "/proc/$p/stat")
        user=$((user + ${12})); sys=$((sys + ${13}))
    done
    echo "$user $sys"
}

# cpu_per_100k "U0 S0" "U1 S1" REQUESTS: from two proc_ticks samples, prints
# "CPU_S PER_100K USER_PER_100K SYS_PER_100K" (seconds; nan without requests).
cpu_per_100k() {
    awk -v a="$1" -v b="$2" -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {
        split(a, x, " "); split(b, y, " "); u = (y[1] - x[1]) / hz; s = (y[2] - x[2]) / hz
        if (n > 0) printf "%.3f %.3f %.3f %.3f\n", u + s, (u + s) / n * 1e5, u / n * 1e5, s / n * 1e5
        else printf "%.3f nan nan nan\n", u + s }'
}

# port_unused PORT: no TCP or UDP socket of this machine uses PORT, listening
# or not (an idle-memory run leaves thousands of client sockets behind, and
# a listener cannot bind a port one of them holds; HTTP/3 binds UDP).
port_unused() { ! ss -Htuan "sport = :$1" | grep -q .; }
# next_port: sets PORT to the first unused port after PORT (callers start
# PORT below the kernel's ephemeral range, 32768 on).
next_port() {
    PORT=$((PORT + 1))
    while ! port_unused "$PORT"; do PORT=$((PORT + 1)); done
}
