#!/usr/bin/env bash
# Demo: ingest the bundled sample into a throwaway data dir (embedded mode, no
# NATS needed), show the store's status, then export the start of one session.
# Run through `make demo`, which builds the release binary first.
set -euo pipefail

# A webapp session from sample/conversations.jsonl (JWT + refresh tokens, 2026-01-05).
SESSION_ID="ff3c90a4-01c3-5e58-8ffd-3c2b535b91db"
PROJECT="webapp"

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${MEMORY_DAEMON_BIN:-target/release/memory-daemon}"
SAMPLE="sample/conversations.jsonl"

[[ -x "$BIN" ]] || { echo "demo: $BIN not found; run 'make build' first" >&2; exit 1; }

D="$(mktemp -d -t agent-memory-demo.XXXXXX)"
trap 'rm -rf "$D"' EXIT

echo "== ingest $SAMPLE into $D"
"$BIN" --data-dir "$D" ingest --file "$SAMPLE" --wait

echo "== status"
"$BIN" --data-dir "$D" status

echo "== first 5 events of session $SESSION_ID (project $PROJECT)"
# Export to a file first so a real export failure fails the demo, while `head`
# closing a pipe early (EPIPE in the daemon) cannot.
"$BIN" --data-dir "$D" events export --project "$PROJECT" --session "$SESSION_ID" >"$D/session.jsonl"
head -n 5 "$D/session.jsonl"
