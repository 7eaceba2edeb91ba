#!/usr/bin/env python3
"""LLM calls per 1 000 events in continuous mode, with live-paced batches.

How many batches continuous indexing makes depends on how events arrive (a tool call
and its result a second apart, the next question minutes later) and on how long the
model takes (events that arrive during a call wait for the next batch). This runs the
real stack: a private nats-server (JetStream), the daemon (`serve`, `[indexing] engine =
"llm"`, the constrained-JSON protocol) and `loadgen replay`, which sends the first
--sessions sessions of sample/conversations.jsonl through durable ingest with their
recorded gaps (gaps between sessions cut to 60 s). The model is a stand-in
OpenAI-compatible server that answers every step with an empty change set after a set
latency, so the count is of batch parts, the calls a model makes when it calls no tool
and answers validly the first time (both small Qwen models did, in backfill): a model's
tool calls and retries add to it.

Time runs --speed times faster than recorded; the window (`[indexing] llm_window_ms`) and
the latency are divided by the same factor, so a batch holds what it would hold in real
time. Per scenario (window seconds, latency seconds) it prints events, batch parts, LLM
calls, calls per 1 000 events and events per part, read from the daemon's metrics.

Run: source .tools/env; python3 benches/llm_indexing/continuous.py \
       --binary target/release/memory-daemon --loadgen target/release/loadgen
"""

import argparse
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StandIn(http.server.ThreadingHTTPServer):
    """An OpenAI-compatible chat server answering an empty change set after `latency`."""

    daemon_threads = True

    def __init__(self, latency):
        self.latency = latency
        self.requests = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        with self.server.lock:
            self.server.requests += 1
        time.sleep(self.server.latency)
        body = json.dumps({
            "id": "chatcmpl-stand-in", "object": "chat.completion", "created": 0, "model": "stand-in",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": '{"ideas": [], "skip_events": []}'}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def metric(text, name, labels):
    """Sum of the samples of `name` whose labels include every `labels` pair."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+)(\{[^}]*\})?\s+(\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


def wait_port(port, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"nothing listens on {port}")


def scenario(args, subset_path, n_events, window, latency):
    stand_in = StandIn(latency / args.speed)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        nats_port, metrics_port = free_port(), free_port()
        nats = subprocess.Popen([os.environ["NATS_SERVER_BIN"], "-a", "127.0.0.1", "-p", str(nats_port),
                                 "-js", "-sd", f"{tmp}/nats"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(nats_port)
        url = f"nats://127.0.0.1:{nats_port}"
        env = dict(os.environ,
                   AGENT_MEMORY_TELEPORT__VECTOR__ENABLED="false",
                   AGENT_MEMORY_INDEXING__ENGINE="llm",
                   AGENT_MEMORY_INDEXING__LLM_WINDOW_MS=str(max(1, round(window * 1000 / args.speed))),
                   AGENT_MEMORY_LLM__ENABLED="true",
                   AGENT_MEMORY_LLM__SUMMARIES="false",
                   AGENT_MEMORY_LLM__TOOL_PROTOCOL="json",
                   AGENT_MEMORY_LLM__BASE_URL=f"http://127.0.0.1:{stand_in.server_address[1]}/v1",
                   AGENT_MEMORY_LLM__TIMEOUT_MS="600000",
                   AGENT_MEMORY_LLM__MAX_RETRIES="0")
        with open(f"{tmp}/daemon.log", "w") as log:
            daemon = subprocess.Popen([args.binary, "--data-dir", f"{tmp}/data", "serve", "--nats-url", url,
                                       "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                                      env=env, stdout=log, stderr=log)
        try:
            deadline = time.time() + 120
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/readyz", timeout=2)
                    break
                except OSError:
                    if time.time() > deadline or daemon.poll() is not None:
                        sys.exit(f"daemon not ready; see {tmp}/daemon.log")
                    time.sleep(0.2)
            subprocess.run([args.loadgen, "replay", "--nats-url", url, "--file", str(subset_path),
                            "--speed", str(args.speed)], check=True, stdout=subprocess.DEVNULL)
            # Caught up: the agent has no lag and its count held for two polls.
            deadline, before = time.time() + 600, None
            while True:
                text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics").read().decode()
                indexed = metric(text, "memory_indexing_batch_events_sum", {"mode": "continuous"})
                lag = metric(text, "memory_consumer_lag", {"consumer": "indexing_agent"})
                if lag == 0 and indexed > 0 and indexed == before:
                    break
                if time.time() > deadline:
                    sys.exit(f"indexing did not catch up: {indexed} events indexed, lag {lag}")
                before = indexed
                time.sleep(max(1.0, 2 * window / args.speed + latency / args.speed))
        finally:
            daemon.terminate()
            daemon.wait()
            nats.terminate()
            nats.wait()
    stand_in.shutdown()
    # Parts, not batches: the agent also runs (and counts) batches with no conversation
    # event in them, which never reach the engine.
    parts = metric(text, "memory_indexing_llm_parts_total", {"mode": "continuous"})
    calls = metric(text, "memory_indexing_llm_calls_total", {"mode": "continuous"})
    return {
        "window_s": window, "latency_s": latency, "speed": args.speed, "events_sent": n_events,
        "events": int(indexed),
        "parts": int(parts), "llm_calls": int(calls), "stand_in_requests": stand_in.requests,
        "calls_per_1000_events": round(1000 * calls / indexed, 1),
        "events_per_part": round(indexed / parts, 2) if parts else None,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--loadgen", required=True)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--speed", type=float, default=50.0)
    parser.add_argument("--scenarios", default="1.5:1,3:1,30:1,120:1,1.5:60",
                        help="window:latency pairs in seconds, comma-separated")
    args = parser.parse_args()
    events = [json.loads(line) for line in open(ROOT / "sample/conversations.jsonl")]
    order = []
    for event in events:
        if event["session_id"] not in order:
            order.append(event["session_id"])
    keep = set(order[: args.sessions])
    subset = [e for e in events if e["session_id"] in keep]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as file:
        file.write("".join(json.dumps(e) + "\n" for e in subset))
        subset_path = Path(file.name)
    try:
        for pair in args.scenarios.split(","):
            window, latency = (float(x) for x in pair.split(":"))
            print(json.dumps(scenario(args, subset_path, len(subset), window, latency)), flush=True)
    finally:
        subset_path.unlink()


if __name__ == "__main__":
    main()
