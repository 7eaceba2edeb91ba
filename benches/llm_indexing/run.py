#!/usr/bin/env python3
"""What the LLM indexing engine extracts from the sample, with a real local model.

Starts scripts/llm-server.py with --model (one thread), ingests the first --sessions
sessions of sample/conversations.jsonl with the heuristic engine (fast), then re-extracts
their ideas with `admin backfill-ideas` and `[indexing] engine = "llm"` (backfill mode:
one session a part), reading the engine's per-part log lines ("LLM indexing part done":
events, calls, tool calls, tokens, seconds, outcome). Writes to --out:
  daemon.log         the daemon's JSON log of the backfill, written as it runs
  parts.jsonl        one line per part
  ideas.json         every idea stored (ideas search, no query, per project)
  heuristic.json     the heuristic engine's ideas of the same sessions
  summary.json       totals: parts, fallbacks, tokens and seconds per part, LLM calls per
                     1 000 events, ideas per intent for both engines
Run: source .tools/env .tools/llm.env; python3 benches/llm_indexing/run.py \
       --binary target/release/memory-daemon --model "$MEMORY_LLM_MODEL_0_5B" --sessions 5 --out /tmp/llm05
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(binary, data_dir, env, *args):
    out = subprocess.run([binary, "--data-dir", data_dir, *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{args} failed: {out.stderr[-2000:]}")
    return out


def ideas(binary, data_dir, env, projects):
    found = []
    for project in projects:
        out = cli(binary, data_dir, env, "ideas", "search", "--project", project, "--limit", "100",
                  "--token-budget", "100000", "--include-superseded", "--json")
        found.extend(json.loads(out.stdout).get("results", []))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--timeout-ms", type=int, default=1_800_000)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    events = [json.loads(line) for line in open(ROOT / "sample/conversations.jsonl")]
    order = []
    for event in events:
        key = (event["project_id"], event["session_id"])
        if key not in order:
            order.append(key)
    keep = set(order[: args.sessions])
    subset = [e for e in events if (e["project_id"], e["session_id"]) in keep]
    projects = sorted({p for p, _ in keep})

    server = subprocess.Popen(
        [os.environ["MEMORY_LLM_PYTHON"], os.environ["MEMORY_LLM_SERVER"], "--model", args.model,
         "--port", "0", "--threads", str(args.threads), "--ctx", "32768", "--exit-with-parent"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline().strip()
    if not line.startswith("ready "):
        sys.exit(f"llm server: {line!r}")
    base_url = line.split(" ", 1)[1]
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            sample = Path(data_dir) / "subset.jsonl"
            sample.write_text("".join(json.dumps(e) + "\n" for e in subset))
            env = dict(os.environ, AGENT_MEMORY_TELEPORT__VECTOR__ENABLED="false")
            cli(args.binary, data_dir, env, "ingest", "--file", str(sample), "--wait")
            heuristic = ideas(args.binary, data_dir, env, projects)
            llm_env = dict(env,
                           AGENT_MEMORY_INDEXING__ENGINE="llm",
                           AGENT_MEMORY_LLM__ENABLED="true",
                           AGENT_MEMORY_LLM__SUMMARIES="false",
                           AGENT_MEMORY_LLM__BASE_URL=base_url,
                           AGENT_MEMORY_LLM__MODEL=Path(args.model).stem,
                           AGENT_MEMORY_LLM__TIMEOUT_MS=str(args.timeout_ms),
                           AGENT_MEMORY_LLM__MAX_RETRIES="0",
                           AGENT_MEMORY_TELEMETRY__LOG_FORMAT="json")
            started = time.time()
            # The daemon's log goes to a file as it runs, so a run stopped early still
            # leaves its parts and warnings behind.
            log_path = out / "daemon.log"
            with open(log_path, "w") as log:
                code = subprocess.run(
                    [args.binary, "--data-dir", data_dir, "--log-level", "info", "admin",
                     "backfill-ideas", "--json"],
                    env=llm_env, stdout=subprocess.DEVNULL, stderr=log).returncode
            if code != 0:
                sys.exit(f"backfill failed ({code}); see {log_path}")
            elapsed = time.time() - started
            parts = []
            for log_line in log_path.read_text().splitlines():
                try:
                    record = json.loads(log_line)
                except ValueError:
                    continue
                fields = record.get("fields", record)
                if fields.get("message") == "LLM indexing part done":
                    parts.append(fields)
                elif record.get("level") in ("WARN", "ERROR"):
                    print("log:", log_line[:400], file=sys.stderr)
            stored = ideas(args.binary, data_dir, env, projects)
    finally:
        server.terminate()
        server.wait()

    (out / "parts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in parts))
    (out / "ideas.json").write_text(json.dumps(stored, indent=1))
    (out / "heuristic.json").write_text(json.dumps(heuristic, indent=1))
    ok = [p for p in parts if p.get("outcome") == "ok"]
    n_events = sum(int(p.get("events", 0)) for p in parts)
    calls = sum(int(p.get("calls", 0)) for p in parts)
    summary = {
        "model": Path(args.model).name,
        "threads": args.threads,
        "sessions": len(keep),
        "events": len(subset),
        "parts": len(parts),
        "parts_ok": len(ok),
        "parts_fallback": len(parts) - len(ok),
        "calls": calls,
        "llm_calls_per_1000_events": round(1000 * calls / n_events, 1) if n_events else None,
        "tool_calls": sum(int(p.get("tool_calls", 0)) for p in parts),
        "tokens_per_part": [int(p.get("tokens", 0)) for p in parts],
        "seconds_per_part": [round(float(p.get("seconds", 0)), 1) for p in parts],
        "backfill_seconds": round(elapsed, 1),
        "ideas_llm": dict(collections.Counter(i["intent"] for i in stored)),
        "ideas_heuristic": dict(collections.Counter(i["intent"] for i in heuristic)),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
