# What the cluster benchmarks share (sourced by run-cluster.sh and run-snapshot.sh): the
# release build, three nats-servers clustered on loopback (JetStream, sync_interval:
# always, the query mapping), `cluster init` (R3, 64 partitions), one group g1 owning
# every partition, replica a started; helpers to start replicas and wait for them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
source .tools/env
EVENTS=${EVENTS:-100000}
export AGENT_MEMORY_TELEPORT__VECTOR__ENABLED=${VECTORS:-false}

cargo build --release -q -p memory-daemon -p memory-benches --bin memory-daemon --bin loadgen
BIN=target/release/memory-daemon
LOADGEN=target/release/loadgen
WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
applied() { curl -s "http://$1/metrics" | awk '/^memory_cluster_applied_stream_seq / {print $2}'; }
wait_applied() { # metrics address, sequence
    for _ in $(seq 1 36000); do
        [[ "$(applied "$1")" == "$2" ]] && return 0
        sleep 0.05
    done
    echo "replica at $1 never reached $2"; return 1
}
last_seq() { "$BIN" cluster status --json --nats-url "$URLS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["last_seq"])'; }
start_replica() { # node, data dir, extra serve arguments…; sets METRICS
    METRICS=127.0.0.1:$(free_port)
    "$BIN" --data-dir "$2" serve --cluster --node-id "$1" --group g1 --nats-url "$URLS" \
        --metrics-listen "$METRICS" "${@:3}" >"$WORK/$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 600); do curl -sf "http://$METRICS/readyz" >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "replica $1 not ready"; tail -5 "$WORK/$1.log"; return 1
}

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(date -u +%F), nats-server $("$NATS_SERVER_BIN" --version | awk '{print $2}')"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

declare -a PORT CPORT
for i in 0 1 2; do PORT[$i]=$(free_port); CPORT[$i]=$(free_port); done
ROUTES="nats-route://127.0.0.1:${CPORT[0]}, nats-route://127.0.0.1:${CPORT[1]}, nats-route://127.0.0.1:${CPORT[2]}"
for i in 0 1 2; do
    cat >"$WORK/n$i.conf" <<EOF
server_name: n$i
listen: 127.0.0.1:${PORT[$i]}
jetstream { store_dir: "$WORK/js$i", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:${CPORT[$i]}, routes: [$ROUTES] }
mappings = { "memory.query.*.>": "memory.q.{{partition(64,1)}}.{{wildcard(1)}}.>" }
EOF
    "$NATS_SERVER_BIN" -c "$WORK/n$i.conf" >"$WORK/n$i.log" 2>&1 &
    PIDS+=($!)
done
URLS="nats://127.0.0.1:${PORT[0]},nats://127.0.0.1:${PORT[1]},nats://127.0.0.1:${PORT[2]}"
URL="nats://127.0.0.1:${PORT[0]}"
for _ in $(seq 1 200); do
    "$BIN" cluster init --nats-url "$URLS" >"$WORK/init.out" 2>&1 && break
    sleep 0.3
done
head -1 "$WORK/init.out"
"$BIN" cluster assign --group g1 --partitions 0-63 --nats-url "$URLS"
start_replica a "$WORK/a"
METRICS_A=$METRICS
