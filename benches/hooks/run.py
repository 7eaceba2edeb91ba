#!/usr/bin/env python3
"""How long an agent waits on its memory hook: `memory-daemon hook claude-code`, end to end.

Starts a nats-server and `memory-daemon serve` (with the HTTP hook listener) in temporary
directories, then times, from the agent's side (spawn to exit, or request to answer):

  daemon_up     the command hook with a PostToolUse input (a fresh tool call each run,
                so every run stores two events), the daemon answering;
  no_daemon     the same with the daemon stopped and NATS up (no responder: the hook
                spools at once);
  no_nats       the same with NATS down too (connection refused until the deadline,
                [capture] hook_timeout_ms, then the spool);
  http          POST /hooks/claude-code to the daemon's listener (no process per event).

Prints one JSON object with p50/p95/p99/max in milliseconds per case, and checks that
every event reached the store exactly once (the spooled ones after `spool flush`).
Run: source .tools/env; python3 benches/hooks/run.py --binary target/release/memory-daemon
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "crates/agents/tests/fixtures/hooks/claude-code/PostToolUse.json"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"{url} did not answer")


def percentiles(samples):
    ordered = sorted(samples)

    def at(p):
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {
        "runs": len(ordered),
        "p50_ms": at(0.50),
        "p95_ms": at(0.95),
        "p99_ms": at(0.99),
        "max_ms": round(ordered[-1] * 1000, 2),
        "mean_ms": round(statistics.mean(ordered) * 1000, 2),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    nats_bin = shutil.which("nats-server") or str(ROOT / ".tools/bin/nats-server")
    work = Path(tempfile.mkdtemp(prefix="hook-bench-"))
    data = work / "data"
    nats_port, metrics_port, hook_port = free_port(), free_port(), free_port()
    nats_url = f"nats://127.0.0.1:{nats_port}"
    nats = subprocess.Popen([nats_bin, "-a", "127.0.0.1", "-p", str(nats_port), "-sd", str(work / "nats")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, AGENT_MEMORY_CAPTURE__HTTP_LISTEN=f"127.0.0.1:{hook_port}",
               AGENT_MEMORY_TELEMETRY__LOG_FILTER="warn")

    def serve():
        process = subprocess.Popen([binary, "--data-dir", str(data), "serve", "--nats-url", nats_url,
                                    "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=open(work / "daemon.log", "a"))
        wait_http(f"http://127.0.0.1:{metrics_port}/readyz")
        return process

    template = json.loads(FIXTURE.read_text())
    counter = [0]

    def next_input():
        counter[0] += 1
        item = dict(template)
        item["tool_use_id"] = f"toolu_bench_{counter[0]:06d}"
        return json.dumps(item).encode()

    def run_hooks(runs):
        samples = []
        for _ in range(runs):
            payload = next_input()
            started = time.perf_counter()
            out = subprocess.run([binary, "--data-dir", str(data), "hook", "claude-code", "--nats-url", nats_url],
                                 input=payload, capture_output=True, env=env)
            samples.append(time.perf_counter() - started)
            if out.returncode != 0:
                sys.exit(f"hook failed: {out.stderr.decode()[-500:]}")
        return samples

    results = {}
    daemon = serve()
    run_hooks(5)  # warm the page cache
    results["daemon_up"] = percentiles(run_hooks(args.runs))
    http_samples = []
    for _ in range(args.runs):
        request = urllib.request.Request(f"http://127.0.0.1:{hook_port}/hooks/claude-code", data=next_input(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()
        http_samples.append(time.perf_counter() - started)
    results["http"] = percentiles(http_samples)
    daemon.terminate()
    daemon.wait(timeout=60)
    results["no_daemon"] = percentiles(run_hooks(args.runs))
    nats.terminate()
    nats.wait(timeout=30)
    results["no_nats"] = percentiles(run_hooks(max(20, args.runs // 5)))
    spooled = sum(1 for _ in open(data / "spool/spool.jsonl"))

    # Everything arrives once: NATS and the daemon back, the spool flushed.
    nats = subprocess.Popen([nats_bin, "-a", "127.0.0.1", "-p", str(nats_port), "-sd", str(work / "nats")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    daemon = serve()
    flushed = json.loads(subprocess.run([binary, "--data-dir", str(data), "spool", "flush", "--nats-url", nats_url,
                                         "--json"], capture_output=True, env=env, check=True).stdout)
    daemon.terminate()
    daemon.wait(timeout=60)
    nats.terminate()
    exported = subprocess.run([binary, "--data-dir", str(data), "events", "export", "--project", "webapp"],
                              capture_output=True, check=True).stdout.decode().splitlines()
    results["events_sent"] = counter[0] * 2
    results["spooled"] = spooled
    results["flush"] = flushed
    results["stored"] = len(exported)
    results["stored_once"] = len(exported) == counter[0] * 2 and len({json.loads(e)["event_id"] for e in exported}) == len(exported)
    print(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    if not results["stored_once"]:
        sys.exit("events lost or duplicated")


if __name__ == "__main__":
    main()
