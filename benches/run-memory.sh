#!/usr/bin/env bash
# The daemon's resident memory with the vector index on, step by step, over a preloaded
# year (docs/benchmarks.md, "Memory with vectors on"): serve a copy of the data dir,
# wait until BM25 and the vector index hold every document, then print VmRSS / VmHWM /
# RssAnon / RssFile after each of
#   1. opening and catching up (idle),
#   2. 500 `teleport.search` and 500 hybrid `search` at concurrency 1 and 8,
#   3. the sample's 570 coding events replayed over NATS and embedded (long texts: what
#      the indexing embedder's batches cost),
#   4. 500 more searches;
# with the largest mappings after step 2 (the allocator's heap, ONNX Runtime's). Each step
# is read after SETTLE_SECS (3) seconds of quiet.
#
# Usage: HYBRID_DATA_DIR=DIR [HYBRID_EVENTS=100000] [MEMORY_DAEMON_BIN=BIN] [SETTLE_SECS=3] benches/run-memory.sh
# DIR is a data dir preloaded by `HYBRID_DATA_DIR=DIR benches/run-load.sh hybrid` (about an
# hour for 100 000 events on 2 cores); it is copied, never changed. MEMORY_DAEMON_BIN runs
# another build (an anchor, in the same run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
source .tools/env
HYBRID_EVENTS=${HYBRID_EVENTS:-100000}
SETTLE_SECS=${SETTLE_SECS:-3}
: "${HYBRID_DATA_DIR:?set HYBRID_DATA_DIR to a data dir preloaded by run-load.sh hybrid}"
if [[ ! -f "$HYBRID_DATA_DIR/.preloaded-$HYBRID_EVENTS" ]]; then
    echo "$HYBRID_DATA_DIR is not a preloaded year of $HYBRID_EVENTS events: run HYBRID_DATA_DIR=$HYBRID_DATA_DIR benches/run-load.sh hybrid first" >&2
    exit 1
fi
if [[ -n "${MEMORY_DAEMON_BIN:-}" ]]; then
    cargo build --release -q -p memory-benches --bin loadgen
else
    cargo build --release -q -p memory-daemon -p memory-benches --bin memory-daemon --bin loadgen
fi
BIN=${MEMORY_DAEMON_BIN:-${CARGO_TARGET_DIR:-target}/release/memory-daemon}
LOADGEN=${CARGO_TARGET_DIR:-target}/release/loadgen
WORK=$(mktemp -d)
cleanup() {
    [[ -n "${DAEMON_PID:-}" ]] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
    [[ -n "${NATS_PID:-}" ]] && kill "$NATS_PID" 2>/dev/null && wait "$NATS_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "== memory with vectors on: $BIN over a copy of $HYBRID_DATA_DIR ($(cat "$HYBRID_DATA_DIR/.preloaded-$HYBRID_EVENTS" | cut -c1-60)…)"
cp -a "$HYBRID_DATA_DIR" "$WORK/data"
PORT=$(free_port)
METRICS=$(free_port)
"$NATS_SERVER_BIN" -a 127.0.0.1 -p "$PORT" -js -sd "$WORK/js" >"$WORK/nats.log" 2>&1 &
NATS_PID=$!
URL="nats://127.0.0.1:$PORT"
AGENT_MEMORY_TELEPORT__VECTOR__ENABLED=true "$BIN" --data-dir "$WORK/data" serve --nats-url "$URL" \
    --metrics-listen "127.0.0.1:$METRICS" >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$METRICS/readyz" >/dev/null 2>&1 && break
    sleep 0.2
done
caught_up() {
    "$BIN" teleport status --nats-url "$URL" --json >"$WORK/status.json" 2>/dev/null &&
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["bm25_cursor"] == r["bm25_log_head"] and r["vector_lag"] == 0 and r["vector_healthy"] else 1)' "$WORK/status.json"
}
wait_caught_up() {
    for _ in $(seq 1 1800); do
        caught_up && break
        sleep 1
    done
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  vector", r["vector_doc_count"], "documents (lag", r["vector_lag"], "), bm25", r["bm25_doc_count"])' "$WORK/status.json"
}
rss() {
    # What the daemon keeps once a step is over, not what its last second still holds.
    sleep "$SETTLE_SECS"
    awk -v step="$1" '/^(VmRSS|VmHWM|RssAnon|RssFile):/ {line = line sprintf("%s %d MiB  ", $1, $2 / 1024)} END {print step ": " line}' "/proc/$DAEMON_PID/status"
    # Whose memory: mimalloc's arenas (Rust: 1 GiB-aligned anonymous mappings), the C
    # heap (ONNX Runtime allocates with glibc: the other anonymous mappings), files. A
    # heuristic: a glibc arena (64 MiB-aligned) may land on a 1 GiB boundary.
    python3 - "/proc/$DAEMON_PID/smaps" <<'PY'
import sys
sums, kind = {"mimalloc": 0, "C heap and other anonymous": 0, "files": 0}, None
for line in open(sys.argv[1]):
    fields = line.split()
    if not fields[0].endswith(':') and '-' in fields[0]:
        start = int(fields[0].split('-')[0], 16)
        named = len(fields) > 5 and fields[5].startswith('/')
        kind = "files" if named else ("mimalloc" if start % (1 << 30) == 0 else "C heap and other anonymous")
    elif fields[0] == "Rss:":
        sums[kind] += int(fields[1])
print("   " + ", ".join(f"{name} {kib // 1024} MiB" for name, kib in sums.items()))
PY
}
searches() {
    "$LOADGEN" teleport --nats-url "$URL" --year-events "$HYBRID_EVENTS" --requests 500 --concurrency "$1" \
        --expect-tier hybrid 2>&1 | grep -E '^(teleport.search|search)' || echo "  loadgen teleport failed"
}
wait_caught_up
sleep 5
rss "1. opened, caught up, idle"
searches 1,8
rss "2. after 500 teleport.search and 500 hybrid search at concurrency 1 and 8"
python3 - "/proc/$DAEMON_PID/smaps" <<'PY'
import sys
maps, current = [], None
for line in open(sys.argv[1]):
    fields = line.split()
    if not fields[0].endswith(':') and '-' in fields[0]:
        current = {"name": fields[5] if len(fields) > 5 else "[anonymous]", "range": fields[0], "rss": 0}
        maps.append(current)
    elif fields[0] == "Rss:":
        current["rss"] = int(fields[1])
maps.sort(key=lambda m: -m["rss"])
print("   largest mappings (mimalloc's heap is the 1 GiB-aligned one; ONNX Runtime allocates with glibc):")
for m in maps[:8]:
    print(f"   {m['rss'] // 1024:5d} MiB  {m['range']}  {m['name']}")
PY
started=$(date +%s)
"$LOADGEN" replay --nats-url "$URL" --file sample/conversations.jsonl --speed 100000 2>&1 | tail -1
sleep 2
wait_caught_up
echo "  the sample embedded in $(($(date +%s) - started)) s"
rss "3. after the sample's 570 coding events embedded"
searches 1
rss "4. after 500 more of each"
curl -s "http://127.0.0.1:$METRICS/metrics" | grep -E '^(memory_)?embedding_batch_latency_seconds_(sum|count)\{use="index"\}' | sed 's/^/  /'
