#!/usr/bin/env bash
# Reproducible load run: a private nats-server (JetStream) and the release daemon on
# loopback, then the load generator, side by side with the raw NATS ceiling in the same
# run. Usage: benches/run-load.sh [EVENTS_FOR_FILE_INGEST]
# Prints the lines recorded in docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
source .tools/env
FILE_EVENTS=${1:-200000}

cargo build --release -q -p memory-daemon -p memory-benches --bin memory-daemon --bin loadgen
BIN=target/release/memory-daemon
LOADGEN=target/release/loadgen
WORK=$(mktemp -d)
cleanup() {
    [[ -n "${DAEMON_PID:-}" ]] && kill "$DAEMON_PID" 2>/dev/null || true
    [[ -n "${NATS_PID:-}" ]] && kill "$NATS_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(date -u +%F)"

echo "== embedded ingest --file ($FILE_EVENTS events)"
"$LOADGEN" gen-file --events "$FILE_EVENTS" --out "$WORK/events.jsonl" >/dev/null
for durability in sync_all buffer; do
    rm -rf "$WORK/embedded"
    start=$(date +%s.%N)
    AGENT_MEMORY_STORE__DURABILITY=$durability "$BIN" --data-dir "$WORK/embedded" ingest --file "$WORK/events.jsonl" >"$WORK/ingest.out"
    end=$(date +%s.%N)
    python3 - "$start" "$end" "$FILE_EVENTS" "$durability" "$(cat "$WORK/ingest.out")" <<'PY'
import sys
start, end, n, durability, out = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
print(f"embedded ingest ({durability}): {n} events in {end-start:.2f} s wall (process start to exit) = {n/(end-start):.0f} events/s; {out}")
PY
done

PORT=$(free_port)
METRICS=$(free_port)
mkdir -p "$WORK/js"
"$NATS_SERVER_BIN" -a 127.0.0.1 -p "$PORT" -js -sd "$WORK/js" >"$WORK/nats.log" 2>&1 &
NATS_PID=$!
URL="nats://127.0.0.1:$PORT"
"$BIN" --data-dir "$WORK/daemon" serve --nats-url "$URL" --metrics-listen "127.0.0.1:$METRICS" >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 1 200); do
    if curl -sf "http://127.0.0.1:$METRICS/readyz" >/dev/null 2>&1; then break; fi
    sleep 0.05
done

# Let the kernel write back what the embedded runs left dirty, so their writeback does
# not land inside the fresh daemon's fsyncs.
sync
sleep 2
echo "== ack latency at offered load, fresh daemon (one event per request)"
"$LOADGEN" latency --url "$URL" --rate 5000 --seconds 10

echo "== request/reply, batch 100, same payloads (raw NATS ceiling vs durable ingest)"
"$LOADGEN" raw --url "$URL" --requests 2000 --batch 100 --concurrency 32
"$LOADGEN" ingest --url "$URL" --requests 2000 --batch 100 --concurrency 32
"$LOADGEN" raw --url "$URL" --requests 2000 --batch 100 --concurrency 32
"$LOADGEN" ingest --url "$URL" --requests 2000 --batch 100 --concurrency 32 --project loadgen2

echo "== ack latency at offered load, right after 400 000 events (flushes and compaction running)"
"$LOADGEN" latency --url "$URL" --rate 5000 --seconds 10

echo "== jetstream publish then consume"
start=$(date +%s.%N)
"$LOADGEN" jetstream --url "$URL" --events 20000 --project jsload
for _ in $(seq 1 600); do
    n=$("$BIN" status --nats-url "$URL" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["projects"].get("jsload",{}).get("events",0))' || echo 0)
    [[ "$n" == "20000" ]] && break
    sleep 0.1
done
end=$(date +%s.%N)
python3 -c "print(f'jetstream: 20000 events published and durably stored in {$end-$start:.2f} s = {20000/($end-$start):.0f} events/s (stored count: $n)')"
RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON_PID/status)
echo "daemon peak RSS: $((RSS / 1024)) MiB"
