#!/usr/bin/env bash
# Reproducible load run: a private nats-server (JetStream) and the release daemon on
# loopback, then the load generator, side by side with the raw NATS ceiling in the same
# run. Prints the lines recorded in docs/benchmarks.md.
#
# Usage: benches/run-load.sh [all|ingest|toc|bm25|hybrid] [EVENTS_FOR_FILE_INGEST]
#   ingest  embedded and NATS ingest, ack latency against its floors, JetStream (issue 2)
#   toc     time table of contents: a year of data preloaded with `ingest --file --wait`,
#           then `loadgen query` (the TOC query mix over NATS) and `loadgen navigable`
#           (ingest-to-navigable delay of a live session)
#   bm25    BM25 teleport through the daemon: the same year preloaded, the daemon's index
#           caught up (`teleport.status`), then `loadgen teleport` (`teleport.search` and
#           `search` over NATS), `loadgen searchable` (ingest-to-searchable delay) and
#           `loadgen admin-rebuild` (`memory.admin.rebuild {"index_type": "bm25"}`)
#   hybrid  hybrid search through the daemon: the same year preloaded with the vector
#           index on (the preload embeds every document: about an hour for 100 000
#           events on 2 cores), both indexes caught up, then `loadgen teleport
#           --expect-tier hybrid` (`search` over NATS, query embedding included)
#   forget  `admin forget` on a year of data (FORGET_EVENTS, default TOC_EVENTS, plus 20
#           events carrying a unique token): the whole offline run (plan, rewrite,
#           compaction, rebuild of the TOC, ideas and BM25), against the same data's
#           `ingest --file --wait` from nothing in the same run
#   overload `search` at OVERLOAD_FACTOR (default 4) times the daemon's measured capacity, open
#           loop, on a year of OVERLOAD_EVENTS (default 20000) events: once with the
#           default load shedding ([nats] query_max_*), once without it (64 in flight,
#           an unbounded queue: the daemon before shedding), OVERLOAD_SECONDS (default 15)
#           per phase
#   all     ingest, toc and bm25 (default; hybrid, forget and overload only when named); a bare number is
#           EVENTS_FOR_FILE_INGEST of the ingest section
# Environment: TOC_EVENTS (default 100000), TOC_REQUESTS per call kind (default 500);
# BM25_EVENTS (default TOC_EVENTS), BM25_REQUESTS per call kind and concurrency (default
# 1000), BM25_CONCURRENCY (default 1,8), SEARCHABLE_EVENTS (default 200) at
# SEARCHABLE_RATE per second (default 5), REBUILD_RUNS (default 3); HYBRID_EVENTS (default
# BM25_EVENTS), HYBRID_REQUESTS (default BM25_REQUESTS), HYBRID_CONCURRENCY (default 1,8),
# HYBRID_DATA_DIR (keep the preloaded data dir there and reuse it on the next run).
# The vector index is off in every section but hybrid (embedding is measured there).
# MEMORY_DAEMON_BIN runs another build of the daemon (an anchor, in the same run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
source .tools/env
SECTION=all
if [[ "${1:-}" =~ ^(all|ingest|toc|bm25|hybrid|forget|overload)$ ]]; then
    SECTION=$1
    shift
fi
FILE_EVENTS=${1:-200000}
TOC_EVENTS=${TOC_EVENTS:-100000}
TOC_REQUESTS=${TOC_REQUESTS:-500}
BM25_EVENTS=${BM25_EVENTS:-$TOC_EVENTS}
BM25_REQUESTS=${BM25_REQUESTS:-1000}
BM25_CONCURRENCY=${BM25_CONCURRENCY:-1,8}
SEARCHABLE_EVENTS=${SEARCHABLE_EVENTS:-200}
SEARCHABLE_RATE=${SEARCHABLE_RATE:-5}
REBUILD_RUNS=${REBUILD_RUNS:-3}
HYBRID_EVENTS=${HYBRID_EVENTS:-$BM25_EVENTS}
HYBRID_REQUESTS=${HYBRID_REQUESTS:-$BM25_REQUESTS}
HYBRID_CONCURRENCY=${HYBRID_CONCURRENCY:-1,8}
FORGET_EVENTS=${FORGET_EVENTS:-$TOC_EVENTS}
OVERLOAD_EVENTS=${OVERLOAD_EVENTS:-20000}
OVERLOAD_SECONDS=${OVERLOAD_SECONDS:-15}
OVERLOAD_FACTOR=${OVERLOAD_FACTOR:-4}
export AGENT_MEMORY_TELEPORT__VECTOR__ENABLED=false

cargo build --release -q -p memory-daemon -p memory-benches --bin memory-daemon --bin loadgen
BIN=${MEMORY_DAEMON_BIN:-${CARGO_TARGET_DIR:-target}/release/memory-daemon}
LOADGEN=${CARGO_TARGET_DIR:-target}/release/loadgen
WORK=$(mktemp -d)
stop_stack() {
    [[ -n "${DAEMON_PID:-}" ]] && kill "$DAEMON_PID" 2>/dev/null || true
    [[ -n "${DAEMON_PID:-}" ]] && wait "$DAEMON_PID" 2>/dev/null || true
    [[ -n "${NATS_PID:-}" ]] && kill "$NATS_PID" 2>/dev/null || true
    [[ -n "${NATS_PID:-}" ]] && wait "$NATS_PID" 2>/dev/null || true
    DAEMON_PID=
    NATS_PID=
}
cleanup() {
    stop_stack
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A private nats-server with JetStream and the daemon serving DATA_DIR; sets URL and METRICS.
start_stack() {
    local data_dir=$1 port
    port=$(free_port)
    METRICS=$(free_port)
    mkdir -p "$WORK/js-$port"
    "$NATS_SERVER_BIN" -a 127.0.0.1 -p "$port" -js -sd "$WORK/js-$port" >"$WORK/nats-$port.log" 2>&1 &
    NATS_PID=$!
    URL="nats://127.0.0.1:$port"
    "$BIN" --data-dir "$data_dir" serve --nats-url "$URL" --metrics-listen "127.0.0.1:$METRICS" >"$WORK/daemon-$port.log" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 1 200); do
        if curl -sf "http://127.0.0.1:$METRICS/readyz" >/dev/null 2>&1; then break; fi
        sleep 0.05
    done
}

# The daemon's own means since it started: QueryService::call per method, and the BM25
# index's searches and commits.
daemon_means() {
    curl -s "http://127.0.0.1:$METRICS/metrics" >"$WORK/metrics.txt"
    python3 - "$WORK/metrics.txt" <<'PY'
import re, sys
sums, counts = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'memory_query_latency_seconds_(sum|count)\{method="([^"]+)"\} (\S+)', line)
    if m:
        (sums if m.group(1) == "sum" else counts)[m.group(2)] = float(m.group(3))
        continue
    m = re.match(r'(?:memory_)?(bm25_(?:search|commit)_latency_seconds|vector_search_latency_seconds)_(sum|count)(?:\{\})? (\S+)', line)
    if m:
        (sums if m.group(2) == "sum" else counts)[m.group(1)] = float(m.group(3))
        continue
    m = re.match(r'(?:memory_)?embedding_batch_latency_seconds_(sum|count)\{use="query"\} (\S+)', line)
    if m:
        (sums if m.group(1) == "sum" else counts)["query embedding"] = float(m.group(2))
where_of = {"bm25_search_latency_seconds": "one tantivy call", "bm25_commit_latency_seconds": "one tantivy call",
            "vector_search_latency_seconds": "one VectorIndex search", "query embedding": "one embed call"}
for method in sorted(counts):
    where = where_of.get(method, "QueryService::call")
    print(f"  {method:<30} {int(counts[method]):>6} calls, mean {1000 * sums[method] / max(counts[method], 1):8.3f} ms in {where}")
PY
}

echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(date -u +%F)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

if [[ "$SECTION" == all || "$SECTION" == ingest ]]; then

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

start_stack "$WORK/daemon"

# Let the kernel write back what the embedded runs left dirty, so their writeback does
# not land inside the fresh daemon's fsyncs.
sync
sleep 2
echo "== the floors at the same offered load, on the same server, the daemon idle: loadgen's"
echo "   own responders, one answering at once, one after a group sync_all to this disk"
mkdir -p "$WORK/floor"
"$LOADGEN" latency --url "$URL" --rate 5000 --seconds 10 --against echo
"$LOADGEN" latency --url "$URL" --rate 5000 --seconds 10 --against fsync-echo --dir "$WORK/floor"
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
echo "== the fsync floor right after it, the daemon's background work still running"
"$LOADGEN" latency --url "$URL" --rate 5000 --seconds 10 --against fsync-echo --dir "$WORK/floor"

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
stop_stack
fi

if [[ "$SECTION" == all || "$SECTION" == toc ]]; then
echo "== time table of contents: a year of data"
"$LOADGEN" gen-file --dataset year --events "$TOC_EVENTS" --out "$WORK/year.jsonl"
sync
start=$(date +%s.%N)
"$BIN" --data-dir "$WORK/toc" ingest --file "$WORK/year.jsonl" --wait >"$WORK/toc-ingest.out"
end=$(date +%s.%N)
python3 - "$start" "$end" "$(cat "$WORK/toc-ingest.out")" <<'PY'
import sys, re
start, end, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
n = int(re.search(r"(\d+) accepted", out).group(1))
print(f"ingest --file --wait (events durable and the whole TOC built): {n} events in {end-start:.2f} s wall = {n/(end-start):.0f} events/s; {out}")
PY
"$BIN" --data-dir "$WORK/toc" status --json >"$WORK/toc-status.json"
python3 - "$WORK/toc-status.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
projects = ", ".join(f"{p} {v.get('events', 0)} events" for p, v in sorted(r["projects"].items()))
print(f"store after preload: {projects}; outbox head {r['outbox_head']}; disk {r.get('disk_bytes', 0) / 1048576:.0f} MiB")
PY
sync
start_stack "$WORK/toc"
echo "== TOC query mix over NATS, one client (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" query --nats-url "$URL" --project webapp --requests "$TOC_REQUESTS" --concurrency 1
echo "== TOC query mix over NATS, 4 clients (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" query --nats-url "$URL" --project webapp --requests "$TOC_REQUESTS" --concurrency 4
echo "== daemon-side query latency (memory_query_latency_seconds, both runs)"
daemon_means
echo "== ingest-to-navigable, idle daemon (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" navigable --nats-url "$URL" --project webapp --rate 20 --seconds 30
echo "== ingest-to-navigable while 2 clients run the query mix"
"$LOADGEN" query --nats-url "$URL" --project webapp --requests 200 --concurrency 2 >"$WORK/background-query.out" &
BACKGROUND=$!
"$LOADGEN" navigable --nats-url "$URL" --project mobile-app --rate 20 --seconds 30
wait "$BACKGROUND" && echo "background query mix: done" || echo "background query mix failed: $(tail -3 "$WORK/background-query.out")"
RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON_PID/status)
echo "daemon peak RSS: $((RSS / 1024)) MiB"
stop_stack
fi
if [[ "$SECTION" == all || "$SECTION" == bm25 ]]; then
echo "== BM25 teleport through the daemon: a year of data"
"$LOADGEN" gen-file --dataset year --events "$BM25_EVENTS" --out "$WORK/year.jsonl"
sync
start=$(date +%s.%N)
"$BIN" --data-dir "$WORK/bm25" ingest --file "$WORK/year.jsonl" --wait >"$WORK/bm25-ingest.out"
end=$(date +%s.%N)
python3 - "$start" "$end" "$(cat "$WORK/bm25-ingest.out")" <<'PY'
import sys, re
start, end, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
n = int(re.search(r"(\d+) accepted", out).group(1))
print(f"ingest --file --wait (events durable, TOC built): {n} events in {end-start:.2f} s wall = {n/(end-start):.0f} events/s; {out}")
PY
sync
start_stack "$WORK/bm25"
# `search` needs the index current; wait until its committed cursor is the log's head.
teleport_status() { "$BIN" teleport status --nats-url "$URL" --json >"$WORK/teleport-status.json"; }
start=$(date +%s.%N)
for _ in $(seq 1 1200); do
    if teleport_status 2>/dev/null && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["bm25_cursor"] == r["bm25_log_head"] and r["bm25_rebuild"] is None else 1)' "$WORK/teleport-status.json"; then
        break
    fi
    sleep 0.5
done
end=$(date +%s.%N)
print_teleport_status() {
    teleport_status
    python3 - "$WORK/teleport-status.json" "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
label = sys.argv[2]
counts = ", ".join(f"{k} {v}" for k, v in sorted(r["bm25_doc_counts"].items()))
print(f"teleport.status {label}: {r['bm25_doc_count']} docs ({counts}); index {r['bm25_index_size_bytes'] / 1048576:.1f} MiB; "
      f"cursor {r['bm25_cursor']} / log head {r['bm25_log_head']}; healthy {r['bm25_healthy']}, stale {r['bm25_stale']}; {r['message']}")
PY
}
print_teleport_status "$(python3 -c "print(f'after the preload (index caught up {$end-$start:.1f} s after the daemon started)')")"
"$BIN" status --nats-url "$URL" --json >"$WORK/bm25-status.json"
python3 - "$WORK/bm25-status.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
projects = ", ".join(f"{p} {v.get('events', 0)} events" for p, v in sorted(r["projects"].items()))
print(f"store: {projects}; outbox head {r['outbox_head']}; disk {r.get('disk_bytes', 0) / 1048576:.0f} MiB")
PY
echo "== teleport.search and search over NATS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" teleport --nats-url "$URL" --year-events "$BM25_EVENTS" --requests "$BM25_REQUESTS" --concurrency "$BM25_CONCURRENCY" --show-questions 8 \
    || echo "loadgen teleport failed"
echo "== daemon-side means (teleport and search runs)"
daemon_means
echo "== ingest-to-searchable, idle daemon (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" searchable --nats-url "$URL" --project webapp --rate "$SEARCHABLE_RATE" --events "$SEARCHABLE_EVENTS" \
    || echo "loadgen searchable failed"
echo "== bm25 commits (the searchable run included)"
daemon_means | grep commit || true
echo "== rebuild over NATS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" admin-rebuild --nats-url "$URL" --index-type bm25 --runs "$REBUILD_RUNS" || echo "loadgen admin-rebuild failed"
print_teleport_status "after the rebuild"
RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON_PID/status)
echo "daemon peak RSS: $((RSS / 1024)) MiB"
stop_stack
fi
if [[ "$SECTION" == overload ]]; then
echo "== query overload: search at ${OVERLOAD_FACTOR}x the measured capacity ($OVERLOAD_EVENTS events of the year)"
"$LOADGEN" gen-file --dataset year --events "$OVERLOAD_EVENTS" --out "$WORK/year.jsonl"
"$BIN" --data-dir "$WORK/overload" ingest --file "$WORK/year.jsonl" --wait >"$WORK/overload-ingest.out"
echo "preload: $(cat "$WORK/overload-ingest.out")"
for mode in shedding unbounded; do
    if [[ $mode == unbounded ]]; then
        # The daemon before load shedding: 64 queries at once, every other one waiting.
        export AGENT_MEMORY_NATS__QUERY_MAX_IN_FLIGHT=64 AGENT_MEMORY_NATS__QUERY_MAX_QUEUED=100000000 AGENT_MEMORY_NATS__QUERY_MAX_WAIT_MS=3600000
    fi
    start_stack "$WORK/overload"
    for _ in $(seq 1 1200); do
        if "$BIN" teleport status --nats-url "$URL" --json >"$WORK/teleport-status.json" 2>/dev/null \
            && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["bm25_cursor"] == r["bm25_log_head"] and r["bm25_rebuild"] is None else 1)' "$WORK/teleport-status.json"; then
            break
        fi
        sleep 0.5
    done
    echo "-- $mode ($(if [[ $mode == shedding ]]; then echo 'defaults: [nats] query_max_in_flight four per core, query_max_queued 512, query_max_wait_ms 1000'; else echo '64 in flight, unbounded queue'; fi)); load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$LOADGEN" overload --nats-url "$URL" --year-events "$OVERLOAD_EVENTS" --seconds "$OVERLOAD_SECONDS" --factor "$OVERLOAD_FACTOR" \
        || echo "loadgen overload failed"
    curl -s "http://127.0.0.1:$METRICS/metrics" | grep -E '^memory_query_shed_total' || echo "no query shed"
    RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON_PID/status)
    echo "daemon peak RSS: $((RSS / 1024)) MiB; still running: $(kill -0 "$DAEMON_PID" 2>/dev/null && echo yes || echo no)"
    stop_stack
done
unset AGENT_MEMORY_NATS__QUERY_MAX_IN_FLIGHT AGENT_MEMORY_NATS__QUERY_MAX_QUEUED AGENT_MEMORY_NATS__QUERY_MAX_WAIT_MS
fi
if [[ "$SECTION" == forget ]]; then
echo "== admin forget: a year of data ($FORGET_EVENTS events) and 20 events with a token"
"$LOADGEN" gen-file --dataset year --events "$FORGET_EVENTS" --out "$WORK/year.jsonl"
python3 - "$WORK/year.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
first = json.loads(lines[len(lines) // 2])
with open(sys.argv[1], "a") as out:
    for i in range(20):
        event = dict(first, event_id=f"leak-{i}", text=f"the unlock phrase is qzv7leaked{i:02d}x, noted")
        out.write("\n" + json.dumps(event))
PY
sync
start=$(date +%s.%N)
"$BIN" --data-dir "$WORK/forget" ingest --file "$WORK/year.jsonl" --wait >"$WORK/forget-ingest.out"
end=$(date +%s.%N)
echo "anchor: ingest --file --wait from nothing (store, TOC, ideas, BM25): $(python3 -c "print(f'{$end-$start:.2f}')") s; $(cat "$WORK/forget-ingest.out")"
du -sh "$WORK/forget" | sed 's/^/data dir before: /'
sync
start=$(date +%s.%N)
"$BIN" --data-dir "$WORK/forget" admin forget --match 'qzv7leaked[0-9]+x' --json >"$WORK/forget.json"
end=$(date +%s.%N)
python3 - "$start" "$end" "$WORK/forget.json" <<'PY'
import json, sys
start, end, report = float(sys.argv[1]), float(sys.argv[2]), json.load(open(sys.argv[3]))
events = sum(len(ids) for ids in report["events"].values())
c = report["compaction"]
print(f"admin forget --match: {events} events, {report['spans']} spans rewritten; {c['records']} records "
      f"copied; rebuild {report['rebuild_secs']:.2f} s (caught up: {report['caught_up']}); "
      f"whole command {end - start:.2f} s wall")
PY
du -sh "$WORK/forget" | sed 's/^/data dir after: /'
if grep -rlq "qzv7leaked" "$WORK/forget"; then echo "LEAK: the token is still in the data dir"; else echo "the token is in no file of the data dir"; fi
fi
if [[ "$SECTION" == hybrid ]]; then
export AGENT_MEMORY_TELEPORT__VECTOR__ENABLED=true
echo "== hybrid search through the daemon: a year of data, vectors on"
# HYBRID_DATA_DIR keeps the preloaded data dir (the preload embeds every document), so a
# later run with the same HYBRID_EVENTS measures search again without it.
HYBRID_DIR=${HYBRID_DATA_DIR:-$WORK/hybrid}
if [[ -f "$HYBRID_DIR/.preloaded-$HYBRID_EVENTS" ]]; then
    echo "preloaded data dir reused: $HYBRID_DIR ($(cat "$HYBRID_DIR/.preloaded-$HYBRID_EVENTS"))"
else
rm -rf "$HYBRID_DIR"
"$LOADGEN" gen-file --dataset year --events "$HYBRID_EVENTS" --out "$WORK/year.jsonl"
sync
start=$(date +%s.%N)
"$BIN" --data-dir "$HYBRID_DIR" ingest --file "$WORK/year.jsonl" --wait --wait-timeout-secs 14400 >"$WORK/hybrid-ingest.out"
end=$(date +%s.%N)
python3 - "$start" "$end" "$(cat "$WORK/hybrid-ingest.out")" <<'PY' | tee "$WORK/hybrid-preload.txt"
import sys, re
start, end, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
n = int(re.search(r"(\d+) accepted", out).group(1))
print(f"ingest --file --wait (events durable, TOC built, BM25 and vectors committed; the indexing embedder on every core): {n} events in {end-start:.0f} s wall; {out}")
PY
cp "$WORK/hybrid-preload.txt" "$HYBRID_DIR/.preloaded-$HYBRID_EVENTS"
fi
sync
start_stack "$HYBRID_DIR"
teleport_status() { "$BIN" teleport status --nats-url "$URL" --json >"$WORK/teleport-status.json"; }
for _ in $(seq 1 3600); do
    if teleport_status 2>/dev/null && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["bm25_cursor"] == r["bm25_log_head"] and r["vector_lag"] == 0 and r["vector_healthy"] else 1)' "$WORK/teleport-status.json"; then
        break
    fi
    sleep 1
done
python3 - "$WORK/teleport-status.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"teleport.status: bm25 {r['bm25_doc_count']} docs, vector {r['vector_doc_count']} docs (lag {r['vector_lag']}); {r['message']}")
PY
echo "== search over NATS, hybrid tier (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" teleport --nats-url "$URL" --year-events "$HYBRID_EVENTS" --requests "$HYBRID_REQUESTS" --concurrency "$HYBRID_CONCURRENCY" --expect-tier hybrid --show-questions 4 \
    || echo "loadgen teleport failed"
echo "== daemon-side means"
daemon_means
RSS=$(awk '/VmHWM/ {print $2}' /proc/$DAEMON_PID/status)
echo "daemon peak RSS (model loaded): $((RSS / 1024)) MiB"
awk '/^(VmRSS|RssAnon|RssFile|RssShmem):/ {printf "%s %d MiB  ", $1, $2 / 1024} END {print ""}' /proc/$DAEMON_PID/status | sed 's/^/daemon RSS now: /'
stop_stack
fi
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
