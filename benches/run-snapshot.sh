#!/usr/bin/env bash
# Bootstrapping a new replica from its group's snapshot against a full replay of the
# log, through the release daemon, in the same run. Prints the lines recorded in
# docs/benchmarks.md.
#
#   the cluster of benches/cluster-lib.sh (three nats-servers, R3, sync always, 64
#   partitions, group g1, replica a); then:
#   1. EVENTS events published to the log (`loadgen jetstream`: one project, sessions of
#      50 events), replica a
#      caught up: its store and every projection and index (`status --node a`: every
#      consumer's lag 0);
#   2. `cluster snapshot --node a`: taken and uploaded to the Object Store (R3);
#   3. TAIL more events (what arrived since the snapshot);
#   4. replica b starts on an empty data dir with `--bootstrap replay`, replica c with
#      `--bootstrap snapshot`, one after the other; each timed from process start until
#      its store applied the last sequence and until every projection and index caught
#      up with it (ready to answer current).
#
# Usage: benches/run-snapshot.sh   (EVENTS, default 100000; TAIL, default 5000;
# VECTORS=true to include the vector index, which embeds every event on 2 cores)
source "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"
TAIL=${TAIL:-5000}

settled() { # node: true when every consumer of the node's store has lag 0, the indexes
    # included (their cursors reach the store with their first commit, so they must be
    # listed: an index that never committed is not caught up)
    "$BIN" status --json --nats-url "$URLS" --node "$1" 2>/dev/null | VECTORS="$AGENT_MEMORY_TELEPORT__VECTOR__ENABLED" python3 -c '
import json, os, sys
report = json.load(sys.stdin)
lags = {c["name"]: c["lag"] for c in report["consumers"]}
wanted = ["bm25_indexer"] + (["vector_indexer"] if os.environ["VECTORS"] == "true" else [])
sys.exit(0 if all(name in lags for name in wanted) and all(lag == 0 for lag in lags.values()) else 1)'
}
wait_settled() { # node
    for _ in $(seq 1 72000); do settled "$1" && return 0; sleep 0.05; done
    echo "node $1 never settled"; return 1
}
bootstrap() { # node, mode
    local start applied done
    start=$(now)
    start_replica "$1" "$WORK/$1" --bootstrap "$2"
    wait_applied "$METRICS" "$LAST"
    applied=$(now)
    wait_settled "$1"
    done=$(now)
    python3 -c "
s, a, d = $start, $applied, $done
print(f'--bootstrap $2 (node $1): store at the last sequence {a-s:.2f} s, every projection and index caught up {d-s:.2f} s (process start included)')"
    grep -h "started from the group's snapshot" "$WORK/$1.log" | sed 's/^.*INFO //' || true
}

echo "== 1. $EVENTS events to the log, replica a caught up"
start=$(now)
"$LOADGEN" jetstream --url "$URL" --events "$EVENTS" --project bare
LAST=$(last_seq)
wait_applied "$METRICS_A" "$LAST"
wait_settled a
python3 -c "print(f'replica a: {$LAST} messages applied and indexed in {$(now)-$start:.2f} s')"
echo "== 2. snapshot of replica a"
"$BIN" cluster snapshot --node a --nats-url "$URLS"
echo "== 3. $TAIL more events"
"$LOADGEN" jetstream --url "$URL" --events "$TAIL" --project tail
LAST=$(last_seq)
wait_applied "$METRICS_A" "$LAST"
echo "== 4. new replicas (load average $(cut -d' ' -f1-3 /proc/loadavg))"
bootstrap b replay
bootstrap c snapshot
du -sh "$WORK/a" "$WORK/b" "$WORK/c" | sed 's/^/data dir /'
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
