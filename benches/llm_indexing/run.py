#!/usr/bin/env python3
"""What the LLM indexing engine extracts from the sample, with a real local model.

Starts scripts/llm-server.py with --model (one thread), then for each of --sessions
sessions of sample/conversations.jsonl (from --first, in file order), in a data dir of its
own: ingests the session with the heuristic engine (fast), then re-extracts its ideas with
`admin backfill-ideas` and `[indexing] engine = "llm"` (backfill mode), reading the
engine's per-part log lines ("LLM indexing part done": events, calls, tool calls,
tokens, seconds, outcome). Each stored idea is marked with the part it came from and
whether the model wrote that part (`by: "llm"`) or the heuristic engine did after a
fallback (`by: "fallback"`): parts are contiguous runs of the session's events in log
order. Everything is written after each session, so a run stopped early keeps what it
finished. Writes to --out:
  daemon.log         the daemon's JSON logs of the backfills, as they run
  parts.jsonl        one line per part (with its session)
  ideas.jsonl        every idea stored, with session, part, by
  heuristic.jsonl    the heuristic engine's ideas of the same sessions
  summary.json       totals: parts, fallbacks, tokens and seconds per part, LLM calls per
                     1 000 events, ideas per intent for both engines
Budgets come from the environment as for the daemon, e.g.
AGENT_MEMORY_INDEXING__LLM_BACKFILL_BATCH_TOKENS=10000 for ~4 000-token parts.
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


def read_parts(log_text):
    parts = []
    for log_line in log_text.splitlines():
        try:
            record = json.loads(log_line)
        except ValueError:
            continue
        fields = record.get("fields", record)
        if fields.get("message") == "LLM indexing part done":
            parts.append(fields)
        elif record.get("level") in ("WARN", "ERROR"):
            print("log:", log_line[:400], file=sys.stderr)
    return parts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--first", type=int, default=0, help="index of the first session")
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
    chosen = order[args.first: args.first + args.sessions]

    server = subprocess.Popen(
        [os.environ["MEMORY_LLM_PYTHON"], os.environ["MEMORY_LLM_SERVER"], "--model", args.model,
         "--port", "0", "--threads", str(args.threads), "--ctx", "32768", "--exit-with-parent"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = server.stdout.readline().strip()
    if not line.startswith("ready "):
        sys.exit(f"llm server: {line!r}")
    base_url = line.split(" ", 1)[1]
    all_parts, all_ideas, all_heuristic, n_events, seconds = [], [], [], 0, 0.0
    log_path = out / "daemon.log"
    log_path.write_text("")
    try:
        for project, session in chosen:
            subset = [e for e in events if (e["project_id"], e["session_id"]) == (project, session)]
            position = {e["event_id"]: i for i, e in enumerate(subset)}
            with tempfile.TemporaryDirectory() as data_dir:
                sample = Path(data_dir) / "subset.jsonl"
                sample.write_text("".join(json.dumps(e) + "\n" for e in subset))
                env = dict(os.environ, AGENT_MEMORY_TELEPORT__VECTOR__ENABLED="false")
                cli(args.binary, data_dir, env, "ingest", "--file", str(sample), "--wait")
                heuristic = ideas(args.binary, data_dir, env, [project])
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
                session_log = Path(data_dir) / "backfill.log"
                with open(session_log, "w") as log:
                    code = subprocess.run(
                        [args.binary, "--data-dir", data_dir, "--log-level", "info", "admin",
                         "backfill-ideas", "--json"],
                        env=llm_env, stdout=subprocess.DEVNULL, stderr=log).returncode
                text = session_log.read_text()
                with open(log_path, "a") as log:
                    log.write(text)
                if code != 0:
                    sys.exit(f"backfill failed ({code}); see {log_path}")
                seconds += time.time() - started
                parts = read_parts(text)
                stored = ideas(args.binary, data_dir, env, [project])
            # Which part each event was in: parts cover the session's events in order.
            ends, total = [], 0
            for part in parts:
                total += int(part.get("events", 0))
                ends.append(total)
            for index, part in enumerate(parts):
                all_parts.append(dict(part, session=session, part=index))
            for idea in stored:
                at = position.get((idea.get("source") or {}).get("event_id"), -1)
                index = next((i for i, end in enumerate(ends) if at < end), None)
                by = None if index is None else ("llm" if parts[index].get("outcome") == "ok" else "fallback")
                all_ideas.append(dict(idea, session=session, part=index, by=by))
            all_heuristic.extend(dict(idea, session=session) for idea in heuristic)
            n_events += len(subset)
            write(out, args, all_parts, all_ideas, all_heuristic, n_events, seconds)
            print(f"session {session}: {len(parts)} parts, {len(stored)} ideas", file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
    print((out / "summary.json").read_text())


def write(out, args, parts, stored, heuristic, n_events, seconds):
    lines = lambda rows: "".join(json.dumps(row) + "\n" for row in rows)
    (out / "parts.jsonl").write_text(lines(parts))
    (out / "ideas.jsonl").write_text(lines(stored))
    (out / "heuristic.jsonl").write_text(lines(heuristic))
    ok = [p for p in parts if p.get("outcome") == "ok"]
    part_events = sum(int(p.get("events", 0)) for p in parts)
    calls = sum(int(p.get("calls", 0)) for p in parts)
    summary = {
        "model": Path(args.model).name,
        "threads": args.threads,
        "sessions": len({p["session"] for p in parts}),
        "events": n_events,
        "parts": len(parts),
        "parts_ok": len(ok),
        "parts_fallback": len(parts) - len(ok),
        "calls": calls,
        "llm_calls_per_1000_events": round(1000 * calls / part_events, 1) if part_events else None,
        "tool_calls": sum(int(p.get("tool_calls", 0)) for p in parts),
        "tokens_per_part": [int(p.get("tokens", 0)) for p in parts],
        "seconds_per_part": [round(float(p.get("seconds", 0)), 1) for p in parts],
        "backfill_seconds": round(seconds, 1),
        "ideas_by_model": dict(collections.Counter(i["intent"] for i in stored if i["by"] == "llm")),
        "ideas_by_fallback": dict(collections.Counter(i["intent"] for i in stored if i["by"] != "llm")),
        "ideas_heuristic": dict(collections.Counter(i["intent"] for i in heuristic)),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
