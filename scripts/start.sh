#!/usr/bin/env bash
# Runs agent-memory for your own agents: a local nats-server (JetStream, loopback) and
# `memory-daemon serve`, both in the background, logs and pid files under
# ${XDG_STATE_HOME:-~/.local/state}/agent-memory. Idempotent: what already runs is left
# alone. `scripts/start.sh --stop` stops both (the daemon first, gracefully).
#
#   scripts/start.sh [--stop]
#
# Needs `make setup build` first (nats-server, ONNX Runtime and the embedding model in
# .tools/, the release binary in target/release/). The data dir is the daemon's default
# (`memory-daemon config show`), or AGENT_MEMORY_DATA_DIR.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${XDG_STATE_HOME:-$HOME/.local/state}/agent-memory"
NATS_PORT="${AGENT_MEMORY_NATS_PORT:-4222}"
DAEMON="${MEMORY_DAEMON:-$REPO_ROOT/target/release/memory-daemon}"
mkdir -p "$STATE"

die() { echo "start: $*" >&2; exit 1; }

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
    local name pidfile
    for name in memory-daemon nats-server; do
        pidfile="$STATE/$name.pid"
        if running "$pidfile"; then
            kill -TERM "$(cat "$pidfile")"
            for _ in $(seq 1 100); do running "$pidfile" || break; sleep 0.1; done
            echo "start: stopped $name"
        fi
        rm -f "$pidfile"
    done
}

if [[ "${1:-}" == "--stop" ]]; then
    stop
    exit 0
fi

[[ -f "$REPO_ROOT/.tools/env" ]] || die "run 'make setup build' first"
# shellcheck disable=SC1091
source "$REPO_ROOT/.tools/env"
[[ -x "$DAEMON" ]] || die "$DAEMON is missing: run 'make build'"
command -v nats-server >/dev/null || die "nats-server is missing: run 'make setup'"

if running "$STATE/nats-server.pid"; then
    echo "start: nats-server already running (pid $(cat "$STATE/nats-server.pid"))"
else
    nats-server -js -a 127.0.0.1 -p "$NATS_PORT" -sd "$STATE/nats" \
        >>"$STATE/nats-server.log" 2>&1 &
    echo $! >"$STATE/nats-server.pid"
    echo "start: nats-server on nats://127.0.0.1:$NATS_PORT (log $STATE/nats-server.log)"
fi

if running "$STATE/memory-daemon.pid"; then
    echo "start: memory-daemon already running (pid $(cat "$STATE/memory-daemon.pid"))"
else
    AGENT_MEMORY_NATS__URL="nats://127.0.0.1:$NATS_PORT" "$DAEMON" serve \
        >>"$STATE/memory-daemon.log" 2>&1 &
    echo $! >"$STATE/memory-daemon.pid"
    for _ in $(seq 1 300); do
        if python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:9464/readyz", timeout=1)' 2>/dev/null; then
            echo "start: memory-daemon ready (log $STATE/memory-daemon.log)"
            exit 0
        fi
        running "$STATE/memory-daemon.pid" || die "memory-daemon exited; see $STATE/memory-daemon.log"
        sleep 0.2
    done
    die "memory-daemon not ready after 60 s; see $STATE/memory-daemon.log"
fi
