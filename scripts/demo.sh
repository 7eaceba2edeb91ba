#!/usr/bin/env bash
# Demo: ingest the bundled sample into a throwaway data dir (embedded mode, no
# NATS needed), show the store's status and the start of one session, then the time
# table of contents built from it: the tree, a navigation with its path, and searches
# that say which tier answered (hybrid, semantic, the TOC fallback).
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

echo
echo "== the time table of contents of $PROJECT: years, then the months of 2026"
"$BIN" --data-dir "$D" toc root --project "$PROJECT"
"$BIN" --data-dir "$D" toc browse toc:year:2026 --project "$PROJECT"
echo
echo "== the weeks of January, and one day with its segments"
"$BIN" --data-dir "$D" toc browse toc:month:2026-01 --project "$PROJECT"
"$BIN" --data-dir "$D" toc node toc:day:2026-01-05 --project "$PROJECT"

echo
echo "== navigate: the agent loop over the tree, with the path it took"
# "now" is fixed so that "last month" means January 2026, where the sample lives.
"$BIN" --data-dir "$D" navigate "what did we decide about JWT expiry last month?" \
  --project "$PROJECT" --now 2026-02-20 --token-budget 400

echo
echo "== the accelerator tiers: BM25 and vectors (all-MiniLM-L6-v2, local)"
"$BIN" --data-dir "$D" teleport status --project "$PROJECT"

echo
echo "== search: the call agents use (mode auto picks the best healthy tier: hybrid)"
"$BIN" --data-dir "$D" search "why were iOS users logged out?" --project "$PROJECT" --token-budget 500

echo
echo "== search by meaning alone (mode semantic): no keyword of the question is in the answer"
"$BIN" --data-dir "$D" search "how long do login credentials stay valid?" --mode semantic \
  --project "$PROJECT" --token-budget 300 \
  || echo "(the vector tier is unavailable: see teleport status above)"

echo
echo "== the fallback: with no index at all, the time table of contents answers"
"$BIN" --data-dir "$D" search "why were iOS users logged out?" --mode toc --project "$PROJECT" \
  --token-budget 300
