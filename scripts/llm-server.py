#!/usr/bin/env python3
"""Serve a local GGUF model over llama.cpp's OpenAI-compatible HTTP API.

Runs the llama.cpp server embedded in xllamacpp (installed by
scripts/setup-llm.sh into .tools/llm/venv; run this script with that venv's
python, $MEMORY_LLM_PYTHON from .tools/llm.env):

    "$MEMORY_LLM_PYTHON" scripts/llm-server.py --model "$MEMORY_LLM_MODEL_0_5B" --port 8089

It listens on loopback by default, uses --threads CPU threads (default 1) both
for generating and for processing prompts, and serves one request at a time
with the whole --ctx context. Chat templates are rendered with jinja (what
llama-server's --jinja does; without it a request with `tools` is refused), so
a reply written in the template's tool-call markup comes back as
`message.tool_calls`; `response_format` (json_object / json_schema) and the
tools' parameter schemas constrain the output.

Once the server answers /health it prints exactly one line to stdout,
`ready http://HOST:PORT/v1` (the real port when --port 0 let the system pick),
then runs until SIGTERM or SIGINT. llama.cpp's own log goes to stderr. Exit
status: 0 after a signal, 1 when the server fails to start, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import urllib.error
import urllib.request

PROG = "llm-server"
READY_TIMEOUT_S = 120.0


def fail(message: str, status: int = 1) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    sys.exit(status)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="path of the GGUF model file")
    parser.add_argument("--port", type=int, required=True, help="TCP port (0: let the system pick one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads for generation and for prompt processing (default: 1)")
    parser.add_argument("--ctx", type=int, default=8192, help="context size in tokens (default: 8192)")
    parser.add_argument("--alias", default=None,
                        help="model id reported by /v1/models (default: the file name without .gguf)")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="also stop when the process that started this one exits")
    args = parser.parse_args()
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port} is not a TCP port")
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.ctx < 256:
        parser.error("--ctx must be at least 256")
    return args


def check_model(path: str) -> str:
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        fail(f"model file not found: {path} (install it with scripts/setup-llm.sh)", 2)
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        fail(f"cannot read model file {path}: {e}", 2)
    if magic != b"GGUF":
        fail(f"{path} is not a GGUF model file", 2)
    return path


def wait_ready(base: str, deadline: float, stop_signals: set) -> bool:
    """True once GET /health answers 200, False if a stop signal came first;
    fail at the deadline."""
    last = "no answer"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    while time.monotonic() < deadline:
        if signal.sigpending() & stop_signals:
            return False
        try:
            with opener.open(base + "/health", timeout=5) as response:
                if response.status == 200:
                    return True
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as e:  # 503 while the model is loading
            last = f"HTTP {e.code}"
        except OSError as e:
            last = str(e)
        time.sleep(0.1)
    fail(f"server at {base} not ready after {READY_TIMEOUT_S:.0f} s ({last})")


def main() -> None:
    args = parse_args()
    model = check_model(args.model)
    # SIGTERM/SIGINT are blocked before xllamacpp is loaded and llama.cpp starts
    # any thread (threads inherit the mask), and taken with sigtimedwait below:
    # they reach this thread at once, whichever thread the kernel would pick.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    try:
        import xllamacpp
    except ImportError as e:
        fail(f"cannot import xllamacpp ({e}); run this script with the python of "
             f".tools/llm/venv (MEMORY_LLM_PYTHON in .tools/llm.env, from scripts/setup-llm.sh)")

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {args.alias or os.path.basename(model).removesuffix(".gguf")}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1                        # one slot: the whole context for one request
    params.cpuparams.n_threads = args.threads        # generation
    params.cpuparams_batch.n_threads = args.threads  # prompt (batch) processing
    params.n_gpu_layers = 0
    params.use_jinja = True                      # llama-server --jinja: tool calls, templates

    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and listening
    except Exception as e:  # noqa: BLE001 - report whatever llama.cpp raised
        fail(f"llama.cpp server did not start on {args.host}:{args.port} ({e}); "
             "is the port already in use? llama.cpp's log above says more")
    base = server.listening_address.rstrip("/")
    if not wait_ready(base, deadline, stop_signals):
        return  # stopped while starting
    print(f"ready {base}/v1", flush=True)

    parent = os.getppid()
    while signal.sigtimedwait(stop_signals, 1.0) is None:
        if args.exit_with_parent and os.getppid() != parent:
            print(f"{PROG}: parent {parent} exited, stopping", file=sys.stderr, flush=True)
            break
    del server  # stops the HTTP and inference threads


if __name__ == "__main__":
    main()
