#!/usr/bin/env bash
# Run the whole test suite with plain `cargo test` (no cargo-nextest needed).
# Sources .tools/env (written by scripts/setup.sh) so the end-to-end harness
# finds the pinned nats-server through NATS_SERVER_BIN.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -f .tools/env ]]; then
    # shellcheck source=/dev/null
    source .tools/env
fi

# Colour codes only make logs (CI, files) harder to read.
if [[ ! -t 1 ]]; then
    export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
fi

# One cargo invocation builds every target, the daemon binary included, with the same
# feature resolution as the test run below (so nothing is compiled twice); the e2e
# harness then runs exactly this binary.
echo "== cargo build --workspace --all-targets"
cargo build --workspace --all-targets
MEMORY_DAEMON_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/memory-daemon"
export MEMORY_DAEMON_BIN

echo "== cargo test --workspace --all-targets"
cargo test --workspace --all-targets "$@"

echo "== cargo test --workspace --doc"
cargo test --workspace --doc
