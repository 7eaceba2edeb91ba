#!/usr/bin/env bash
# The crash soak (issue 18): TRIALS trials of mixed load against the release daemon — two
# request/reply producers, a JetStream producer, a query loop, and in some trials an
# online BM25 rebuild, ideas backfill, TOC or ideas rebuild, with the vector index
# sealing and merging as it goes — each ended by `kill -9` at a random moment, then a
# restart, the unacknowledged sends sent again, catch-up, a stop, and the checks: every
# acknowledged event exactly once (`events export`) and `admin verify` (every projection
# equal to a rebuild from the log, indexes healthy and holding the log's documents,
# consumers caught up). One line per trial, then `trials=N lost=L dup=D diverged=V`;
# exit 1 when a trial failed. See benches/src/bin/soak.rs.
#
# Usage: benches/run-soak.sh [TRIALS]   (default SOAK_TRIALS, else 100)
# Environment: SOAK_SEED (reproduce a run's choices), SOAK_ARGS (more flags of the
# soak binary, e.g. "--no-vector --keep --work-dir /tmp/soak"). Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
source .tools/env
TRIALS=${1:-${SOAK_TRIALS:-100}}

cargo build --release -q -p memory-daemon -p memory-benches --bin memory-daemon --bin soak
TARGET=${CARGO_TARGET_DIR:-target}
ARGS=(--daemon-bin "$TARGET/release/memory-daemon" --trials "$TRIALS")
if [[ -n "${SOAK_SEED:-}" ]]; then
    ARGS+=(--seed "$SOAK_SEED")
fi
echo "== machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(date -u '+%F %T UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
# shellcheck disable=SC2086 # SOAK_ARGS is a list of flags
exec "$TARGET/release/soak" "${ARGS[@]}" ${SOAK_ARGS:-}
