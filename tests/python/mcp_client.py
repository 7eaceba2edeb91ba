"""Drives `memory-daemon mcp` with the official MCP Python SDK (PyPI `mcp`), as an
agent's MCP client would, and prints one JSON summary of what it saw on stdout.

Run by tests/tests/mcp.rs, which asserts on the summary. Over stdio it spawns
`DAEMON --data-dir D mcp [--nats-url U] --project P [--metrics-listen M]`; with
`--http URL` it talks to a server already serving streamable HTTP. Every call is made
whatever the previous ones answered, so one failure does not hide the rest; a call
that raised is recorded with its error.

    python mcp_client.py --daemon BIN --data-dir DIR --project webapp [--mode legacy|auto]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
import urllib.request
from typing import Any

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

# A fake GitHub token: remember must store the note redacted.
FAKE_SECRET = "ghp_" + "Zq8VwX3kLm2Np7Rs4Tu6Yb1Cd9Ef5Gh0Jk2M"
NOTE = (
    "MCP e2e note: the staging deploy key rotates every 90 days "
    f"(zebralantern checklist); old token {FAKE_SECRET} is revoked."
)


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def tool_summary(tool: Any) -> dict[str, Any]:
    annotations = tool.annotations
    return {
        "title": tool.title,
        "description_chars": len(tool.description or ""),
        "input_type": tool.input_schema.get("type"),
        "input_properties": sorted(tool.input_schema.get("properties", {})),
        "required": tool.input_schema.get("required", []),
        "output_type": (tool.output_schema or {}).get("type"),
        "annotations": None
        if annotations is None
        else {
            "read_only": annotations.read_only_hint,
            "destructive": annotations.destructive_hint,
            "idempotent": annotations.idempotent_hint,
            "open_world": annotations.open_world_hint,
        },
    }


class Run:
    def __init__(self, client: Client, project: str) -> None:
        self.client = client
        self.project = project
        self.summary: dict[str, Any] = {}

    async def step(self, name: str, coroutine: Any) -> Any:
        """Runs one step; records its error instead of stopping."""
        try:
            return await coroutine
        except Exception as error:  # noqa: BLE001 - the summary reports it
            self.summary.setdefault("errors", {})[name] = f"{type(error).__name__}: {error}"
            traceback.print_exc(file=sys.stderr)
            return None

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool(name, arguments)

    async def run(self, bad_arguments: bool) -> dict[str, Any]:
        s = self.summary
        s["protocol_version"] = self.client.protocol_version
        info = self.client.server_info
        s["server_name"] = info.name if info else None
        caps = self.client.server_capabilities
        s["capabilities"] = {"tools": caps.tools is not None, "resources": caps.resources is not None}

        tools = await self.step("tools/list", self.client.list_tools())
        if tools is not None:
            s["tools"] = {tool.name: tool_summary(tool) for tool in tools.tools}

        await self.step("search", self.search())
        await self.step("get_events", self.get_events())
        await self.step("navigate", self.navigate())
        await self.step("timeline", self.timeline())
        await self.step("remember", self.remember())
        await self.step("status", self.status())
        await self.step("resources", self.resources())
        if bad_arguments:
            await self.step("bad_arguments", self.bad_arguments())
            await self.step("unknown_tool", self.unknown_tool())
            # The server still answers after all that.
            after = await self.step("after_errors", self.call("status", {}))
            s["after_errors_ok"] = after is not None and not after.is_error
        return s

    async def search(self) -> None:
        result = await self.call(
            "search", {"query": "what did we decide about JWT access token expiry", "limit": 5}
        )
        data = result.structured_content or {}
        self.summary["search"] = {
            "is_error": result.is_error,
            "tier": data.get("tier"),
            "fallback_reason": data.get("fallback_reason"),
            "num_results": len(data.get("results", [])),
            "citations": data.get("citations"),
            "texts": [item.get("text") for item in data.get("results", [])],
            "evidence_texts": [
                event.get("text") for item in data.get("results", []) for event in item.get("evidence", [])
            ],
            "text": text_of(result)[:2000],
        }

    async def get_events(self) -> None:
        citations = (self.summary.get("search") or {}).get("citations") or {}
        ids = list(citations.get("event_ids", []))[:3]
        result = await self.call("get_events", {"ids": ids + ["no-such-event"]})
        data = result.structured_content or {}
        self.summary["get_events"] = {
            "is_error": result.is_error,
            "requested": ids,
            "returned": [event["event_id"] for event in data.get("events", [])],
            "not_found": data.get("not_found"),
            "texts": [event.get("text") for event in data.get("events", [])],
            "text": text_of(result)[:1000],
        }

    async def navigate(self) -> None:
        result = await self.call(
            "navigate", {"question": "what did we decide about JWT expiry in January 2026?"}
        )
        data = result.structured_content or {}
        grip_ids = [
            grip_id
            for item in data.get("evidence", [])
            for bullet in item.get("bullets", [])
            for grip_id in bullet.get("grip_ids", [])
        ]
        self.summary["navigate"] = {
            "is_error": result.is_error,
            "path": [step.get("action") for step in data.get("path", [])],
            "evidence_nodes": [item.get("node_id") for item in data.get("evidence", [])],
            "grip_ids": grip_ids[:5],
            "text": text_of(result)[:1500],
        }
        if grip_ids:
            expanded = await self.call("get_events", {"grip": grip_ids[0], "context": 1})
            grip_data = expanded.structured_content or {}
            self.summary["get_events_grip"] = {
                "is_error": expanded.is_error,
                "grip_id": (grip_data.get("grip") or {}).get("grip_id"),
                "num_events": len(grip_data.get("events", [])),
                "excerpt_event_ids": grip_data.get("excerpt_event_ids"),
            }

    async def timeline(self) -> None:
        citations = (self.summary.get("search") or {}).get("citations") or {}
        event_ids = citations.get("event_ids") or []
        if not event_ids:
            raise RuntimeError("search cited no event to centre the timeline on")
        result = await self.call("timeline", {"event_id": event_ids[0], "before": 3, "after": 3})
        data = result.structured_content or {}
        anchor = data.get("anchor") or {}
        self.summary["timeline"] = {
            "is_error": result.is_error,
            "anchor_event_id": (anchor.get("event") or {}).get("event_id"),
            "anchor_ideas": len(anchor.get("ideas", [])),
            "before": len(data.get("before", [])),
            "after": len(data.get("after", [])),
            "text": text_of(result)[:1000],
        }
        at = await self.call("timeline", {"at": "2026-01-20", "before": 2, "after": 2})
        self.summary["timeline_at"] = {
            "is_error": at.is_error,
            "timestamp": ((at.structured_content or {}).get("anchor") or {}).get("timestamp"),
        }

    async def remember(self) -> None:
        result = await self.call("remember", {"text": NOTE, "tags": ["deploy", "e2e"]})
        data = result.structured_content or {}
        event_id = data.get("event_id")
        s = self.summary
        s["remember"] = {"is_error": result.is_error, "event_id": event_id, "stored": data.get("stored")}
        if not event_id:
            return
        read = await self.call("get_events", {"ids": [event_id]})
        events = (read.structured_content or {}).get("events", [])
        event = events[0] if events else {}
        s["remember_read"] = {
            "is_error": read.is_error,
            "kind": event.get("kind"),
            "session_id": event.get("session_id"),
            "metadata": event.get("metadata"),
            "redacted": "[REDACTED:" in event.get("text", ""),
            "secret_in_text": FAKE_SECRET in event.get("text", ""),
        }
        # The indexes take up the note within seconds.
        deadline = time.monotonic() + 60
        attempts = 0
        found = False
        while time.monotonic() < deadline and not found:
            attempts += 1
            search = await self.call(
                "search", {"query": "staging deploy key rotates zebralantern checklist", "limit": 10}
            )
            cited = ((search.structured_content or {}).get("citations") or {}).get("event_ids", [])
            found = event_id in cited
            if not found:
                await asyncio.sleep(0.5)
        s["remember_search"] = {"found": found, "attempts": attempts}

    async def status(self) -> None:
        result = await self.call("status", {})
        data = result.structured_content or {}
        self.summary["status"] = {
            "is_error": result.is_error,
            "mode": data.get("mode"),
            "total_events": data.get("total_events"),
            "projects": sorted((data.get("projects") or {}).keys()),
            "bm25_healthy": (data.get("indexes") or {}).get("bm25_healthy"),
            "text": text_of(result)[:800],
        }

    async def resources(self) -> None:
        listed = await self.client.list_resources()
        templates = await self.client.list_resource_templates()
        s = self.summary
        s["resources"] = [str(resource.uri) for resource in listed.resources]
        s["templates"] = [template.uri_template for template in templates.resource_templates]
        root = await self.client.read_resource("memory://toc/root")
        root_json = json.loads(root.contents[0].text)
        years = root_json.get("years", [])
        s["read_root"] = {
            "mime_type": root.contents[0].mime_type,
            "project_id": root_json.get("project_id"),
            "years": [year.get("node_id") for year in years],
            "child_uris": years[0].get("child_uris", []) if years else [],
        }
        child_uri = years[0]["child_uris"][0] if years and years[0].get("child_uris") else None
        if child_uri:
            child = await self.client.read_resource(child_uri)
            child_json = json.loads(child.contents[0].text)
            node = child_json.get("node", {})
            s["read_child"] = {
                "uri": child_uri,
                "node_id": node.get("node_id"),
                "level": node.get("level"),
                "num_bullets": len(node.get("bullets", [])),
                "child_uris": node.get("child_uris", [])[:3],
            }
        try:
            await self.client.read_resource("memory://toc/toc:day:1999-01-01")
            s["read_missing"] = {"error": None}
        except MCPError as error:
            s["read_missing"] = {"error": error.code, "message": error.message}

    async def bad_arguments(self) -> None:
        cases = [
            ("search", {}),
            ("search", {"query": 5}),
            ("search", {"query": "jwt", "mode": "fuzzy"}),
            ("search", {"query": "jwt", "project": "bad project!"}),
            ("search", {"query": "jwt", "limit": "ten"}),
            ("search", {"query": "jwt", "qurey": "typo"}),
            ("search", {"query": "jwt", "since": "last tuesday"}),
            ("timeline", {}),
            ("get_events", {"ids": "webapp-s01-0001"}),
            ("get_events", {"ids": ["no-such-event"]}),
            ("remember", {"text": ""}),
            ("status", {"verbose": True}),
        ]
        outcomes = []
        for name, arguments in cases:
            result = await self.call(name, arguments)
            outcomes.append({"tool": name, "arguments": arguments, "is_error": result.is_error, "message": text_of(result)})
        self.summary["bad_arguments"] = outcomes

    async def unknown_tool(self) -> None:
        try:
            result = await self.call("forget_everything", {})
            self.summary["unknown_tool"] = {"protocol_error": False, "is_error": result.is_error}
        except MCPError as error:
            self.summary["unknown_tool"] = {"protocol_error": True, "code": error.code, "message": error.message}


def fetch_metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    wanted: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("memory_mcp_"):
            name, _, value = line.rpartition(" ")
            wanted[name] = float(value)
    return wanted


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--daemon", help="the memory-daemon binary (stdio)")
    parser.add_argument("--data-dir")
    parser.add_argument("--nats-url")
    parser.add_argument("--http", help="URL of a streamable HTTP server instead of spawning one")
    parser.add_argument("--project", default="webapp")
    parser.add_argument("--mode", default="legacy", help="legacy (initialize) or auto (server/discover)")
    parser.add_argument("--metrics-listen", help="the spawned server's --metrics-listen")
    parser.add_argument("--metrics-url", help="read memory_mcp_* from this /metrics at the end")
    parser.add_argument("--server-log", help="file for the spawned server's stderr")
    parser.add_argument("--no-bad-arguments", action="store_true")
    options = parser.parse_args()

    if options.http:
        server: Any = options.http
        errlog = None
    else:
        args = ["--data-dir", options.data_dir, "mcp", "--project", options.project]
        if options.nats_url:
            args += ["--nats-url", options.nats_url]
        else:
            # The data dir itself, whatever answers on the default NATS URL.
            args += ["--embedded"]
        if options.metrics_listen:
            args += ["--metrics-listen", options.metrics_listen]
        env = {key: value for key, value in os.environ.items() if key.startswith(("AGENT_MEMORY_", "MEMORY_", "RUST_"))}
        server = StdioServerParameters(command=options.daemon, args=args, env=env)
        errlog = open(options.server_log, "w") if options.server_log else sys.stderr  # noqa: SIM115

    summary: dict[str, Any] = {"mode": options.mode}
    try:
        if errlog is not None:
            # Client(StdioServerParameters) logs the server's stderr to ours; a file keeps
            # it out of the summary's way.
            server = stdio_client(server, errlog=errlog)
        client = Client(server, mode=options.mode, read_timeout_seconds=120)
        async with client:
            run = Run(client, options.project)
            summary.update(await run.run(bad_arguments=not options.no_bad_arguments))
            if options.metrics_url:
                summary["metrics"] = fetch_metrics(options.metrics_url)
    except BaseException as error:  # noqa: BLE001 - reported in the summary
        summary["fatal"] = f"{type(error).__name__}: {error}"
        traceback.print_exc(file=sys.stderr)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
