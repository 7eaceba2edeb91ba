#!/usr/bin/env bash
# Cluster mode through the release daemon, against single mode and a bare JetStream
# publish in the same run. Prints the lines recorded in docs/benchmarks.md.
#
#   three nats-servers clustered on loopback (JetStream, sync_interval: always, the
#   query mapping), `cluster init` (R3, 64 partitions), one group owning every
#   partition, one replica (node a); then:
#   1. a bare JetStream publish of EVENTS events to memory.events.<project> (the log's
#      own ceiling) and the time the replica takes to apply them to its store;
#   2. durable ingest through the gateway (`loadgen ingest`, batch 100, concurrency 32)
#      and ack latency at 2 000 events/s (`loadgen latency`, one event per request);
#   3. full replay: a second replica (node b) started on the whole log, timed until it
#      applied the last sequence;
#   4. queries through the account mapping to the group's two replicas (`loadgen query
#      --mix light` on the gateway's project: the root, a session's events, a search;
#      8 in flight);
#   5. single mode on its own nats-server: the same `loadgen ingest`, `latency` and
#      `query`.
#
# Usage: benches/run-cluster.sh   (EVENTS, default 100000)
# The vector index is off (embedding is measured elsewhere).
source "$(dirname "${BASH_SOURCE[0]}")/cluster-lib.sh"

echo "== 1. bare JetStream publish, R3, sync always ($EVENTS events), and the replica applying them"
start=$(now)
"$LOADGEN" jetstream --url "$URL" --events "$EVENTS" --project bare
published=$(now)
LAST=$(last_seq)
wait_applied "$METRICS_A" "$LAST"
applied_at=$(now)
python3 -c "
s, p, a, n = $start, $published, $applied_at, $EVENTS
print(f'published {n} events in {p-s:.2f} s = {n/(p-s):.0f} events/s acknowledged by the log (R3, fsync)')
print(f'replica a applied them to its store {a-p:.2f} s after the last ack; {n/(a-s):.0f} events/s from first publish to applied')"

echo "== 2. durable ingest through the gateway (load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$LOADGEN" ingest --url "$URL" --requests 1000 --batch 100 --concurrency 32 --project gw
"$LOADGEN" latency --url "$URL" --rate 2000 --seconds 10 --project gwlat
LAST=$(last_seq)
start=$(now)
wait_applied "$METRICS_A" "$LAST"
python3 -c "print(f'replica a caught up with the gateway runs {$(now)-$start:.2f} s after they ended')"

echo "== 3. full replay: replica b starts on the whole log ($LAST messages)"
start=$(now)
start_replica b "$WORK/b"
wait_applied "$METRICS" "$LAST"
python3 -c "t = $(now) - $start; print(f'replica b applied {$LAST} messages in {t:.2f} s = {$LAST/t:.0f} messages/s (process start included)')"

echo "== 4. queries through the mapping to replicas a and b (load average $(cut -d' ' -f1-3 /proc/loadavg))"
# Both replicas answer once caught up: wait until each serves queries.
for m in "$METRICS_A" "$METRICS"; do
    for _ in $(seq 1 200); do
        [[ "$(curl -s "http://$m/metrics" | awk '/^memory_cluster_serving_queries / {print $2}')" == "1" ]] && break
        sleep 0.1
    done
done
"$LOADGEN" query --mix light --url "$URL" --project gw --requests 2000 --concurrency 8
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()

echo "== 5. single mode, same machine, same run"
SPORT=$(free_port)
"$NATS_SERVER_BIN" -a 127.0.0.1 -p "$SPORT" -js -sd "$WORK/single-js" >"$WORK/single-nats.log" 2>&1 &
PIDS+=($!)
SMETRICS=127.0.0.1:$(free_port)
"$BIN" --data-dir "$WORK/single" serve --nats-url "nats://127.0.0.1:$SPORT" --metrics-listen "$SMETRICS" >"$WORK/single.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 600); do curl -sf "http://$SMETRICS/readyz" >/dev/null 2>&1 && break; sleep 0.05; done
"$LOADGEN" ingest --url "nats://127.0.0.1:$SPORT" --requests 1000 --batch 100 --concurrency 32 --project gw
"$LOADGEN" latency --url "nats://127.0.0.1:$SPORT" --rate 2000 --seconds 10 --project gwlat
"$LOADGEN" query --mix light --url "nats://127.0.0.1:$SPORT" --project gw --requests 2000 --concurrency 8
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
