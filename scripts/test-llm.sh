#!/usr/bin/env bash
# `make test-llm`: the LLM paths (summaries, the indexing agent's LLM engine, search
# phrases) against a real small local model served by scripts/llm-server.py, through a
# real nats-server and the real daemon (tests/tests/llm_local.rs, ignored by `make
# test`). Needs scripts/setup.sh and scripts/setup-llm.sh to have run (make does that).
# MEMORY_LLM_MODEL=<gguf> runs it against another model (e.g. $MEMORY_LLM_MODEL_1_5B).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=/dev/null
source .tools/env
# shellcheck source=/dev/null
source .tools/llm.env

cargo build -p memory-daemon
MEMORY_DAEMON_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/memory-daemon"
export MEMORY_DAEMON_BIN
cargo test -p memory-e2e-tests --test llm_local -- --ignored --nocapture "$@"
