//! `memory-daemon mcp` driven by an MCP client we did not write: the official Python SDK
//! (PyPI `mcp` 2.3.0, installed pinned by `scripts/setup.sh` into `.tools/mcp-venv`),
//! running `tests/python/mcp_client.py`, which calls every tool and resource and prints
//! a JSON summary that these tests assert on.
//!
//! - Embedded over stdio: the client spawns `memory-daemon --data-dir D mcp` on the
//!   ingested sample, once with the `initialize` handshake (protocol 2025-11-25) and
//!   once with `server/discover` (2026-07-28).
//! - A running daemon over NATS, served as streamable HTTP (`mcp --nats-url --listen`).
//!
//! - Raw JSON-RPC over stdio with debug logging on: stdout carries nothing but the
//!   protocol.
//!
//! The SDK sessions check: the six tools with schemas and annotations; search finds the sample's
//! JWT decision with citations; get_events reads the cited events verbatim; navigate,
//! timeline and a grip's events; remember stores a redacted `note` that get_events
//! reads back and search finds; status; the TOC resources; bad arguments answered as
//! tool errors naming the problem while the server keeps answering; an unknown tool as
//! a protocol error; and the `memory_mcp_*` metrics.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{Daemon, NatsServer, build_daemon, free_port, repo_root, serve_daemon};
use serde_json::Value;

/// The sample has no vectors to wait for: keyword search answers.
const KEYWORD_ONLY: (&str, &str) = ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false");

/// The Python of `.tools/mcp-venv` (`MEMORY_MCP_PYTHON` from `.tools/env` wins).
fn mcp_python() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("MEMORY_MCP_PYTHON")
        .filter(|path| !path.is_empty())
        .map_or_else(
            || repo_root().join(".tools/mcp-venv/bin/python"),
            PathBuf::from,
        );
    if !path.is_file() {
        bail!(
            "no MCP client at {}: run `scripts/setup.sh` (installs PyPI's mcp into \
             .tools/mcp-venv)",
            path.display()
        );
    }
    Ok(path)
}

/// `memory-daemon --data-dir DIR ingest --file sample/conversations.jsonl --wait`.
fn ingest_sample(data_dir: &Path) -> anyhow::Result<()> {
    let sample = repo_root().join("sample/conversations.jsonl");
    let output = Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["ingest", "--file"])
        .arg(&sample)
        .arg("--wait")
        .envs([KEYWORD_ONLY])
        .output()?;
    if !output.status.success() {
        bail!("ingest failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

/// Runs the client script with `args`; returns its summary.
fn run_client(args: &[&str], server_log: Option<&Path>) -> anyhow::Result<Value> {
    let script = repo_root().join("tests/python/mcp_client.py");
    let mut command = Command::new(mcp_python()?);
    command.arg(&script).args(args).envs([KEYWORD_ONLY]);
    if let Some(log) = server_log {
        command.arg("--server-log").arg(log);
    }
    let output = command.output().context("running the MCP client")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let server = server_log
        .map(|log| std::fs::read_to_string(log).unwrap_or_default())
        .unwrap_or_default();
    let summary: Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .with_context(|| {
            format!(
                "the client printed no summary ({}):\n{stdout}\nclient stderr:\n{stderr}\n\
                 server stderr:\n{server}",
                output.status
            )
        })?;
    if summary.get("fatal").is_some() || summary.get("errors").is_some() {
        bail!("the client failed: {summary:#}\nclient stderr:\n{stderr}\nserver stderr:\n{server}");
    }
    Ok(summary)
}

fn strs(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Everything one client session must have seen; `mode` is the status tool's.
fn assert_session(s: &Value, mode: &str, protocol_version: &str) {
    assert_eq!(s["protocol_version"], protocol_version, "{s:#}");
    assert_eq!(s["server_name"], "agent-memory");
    assert_eq!(s["capabilities"]["tools"], true);
    assert_eq!(s["capabilities"]["resources"], true);

    // tools/list: all six, with schemas and annotations.
    let tools = s["tools"].as_object().expect("tools");
    let mut names: Vec<&String> = tools.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "get_events",
            "navigate",
            "remember",
            "search",
            "status",
            "timeline"
        ]
    );
    for (name, tool) in tools {
        assert!(tool["title"].is_string(), "{name}: {tool}");
        assert!(tool["description_chars"].as_u64() > Some(200), "{name}");
        assert_eq!(tool["input_type"], "object", "{name}");
        assert_eq!(tool["output_type"], "object", "{name}");
        let writes = name == "remember";
        assert_eq!(tool["annotations"]["read_only"], !writes, "{name}");
        assert_eq!(tool["annotations"]["idempotent"], !writes, "{name}");
        assert_eq!(tool["annotations"]["destructive"], false, "{name}");
        assert_eq!(tool["annotations"]["open_world"], false, "{name}");
    }
    assert_eq!(tools["search"]["required"], serde_json::json!(["query"]));
    assert_eq!(
        tools["navigate"]["required"],
        serde_json::json!(["question"])
    );
    assert_eq!(tools["remember"]["required"], serde_json::json!(["text"]));
    assert_eq!(
        strs(&tools["search"]["input_properties"]),
        [
            "limit",
            "mode",
            "project",
            "query",
            "since",
            "token_budget",
            "until"
        ]
    );

    // search finds the sample's decision, with citations.
    let search = &s["search"];
    assert_eq!(search["is_error"], false, "{search:#}");
    assert!(search["num_results"].as_u64() >= Some(1), "{search:#}");
    assert!(
        ["bm25", "hybrid", "vector", "toc"].contains(&search["tier"].as_str().unwrap_or("")),
        "{search:#}"
    );
    let cited = strs(&search["citations"]["event_ids"]);
    assert!(cited.contains(&"webapp-s01-0012"), "{search:#}");
    assert!(
        strs(&search["evidence_texts"])
            .iter()
            .any(|text| text.contains("JWT access token expiry is 15 minutes")),
        "{search:#}"
    );
    assert!(
        search["text"]
            .as_str()
            .is_some_and(|text| text.contains("webapp-s01-0012")),
        "{search:#}"
    );

    // get_events: the cited events verbatim, the unknown id listed.
    let events = &s["get_events"];
    assert_eq!(events["is_error"], false, "{events:#}");
    assert_eq!(events["returned"], events["requested"], "{events:#}");
    assert_eq!(events["not_found"], serde_json::json!(["no-such-event"]));
    assert!(
        strs(&events["texts"])
            .iter()
            .any(|text| text.starts_with("OK. We decided: JWT access token expiry is 15 minutes")),
        "{events:#}"
    );

    // navigate: a path down the January tree to evidence citing grips.
    let navigate = &s["navigate"];
    assert_eq!(navigate["is_error"], false, "{navigate:#}");
    assert!(!strs(&navigate["path"]).is_empty(), "{navigate:#}");
    assert!(
        strs(&navigate["evidence_nodes"])
            .iter()
            .any(|node| node.starts_with("toc:segment:2026-01-05")),
        "{navigate:#}"
    );
    let grip = &s["get_events_grip"];
    assert_eq!(grip["is_error"], false, "{grip:#}");
    assert!(grip["num_events"].as_u64() >= Some(1), "{grip:#}");
    assert!(!strs(&grip["excerpt_event_ids"]).is_empty(), "{grip:#}");

    // timeline around the first cited event, and around a date.
    let timeline = &s["timeline"];
    assert_eq!(timeline["is_error"], false, "{timeline:#}");
    assert_eq!(timeline["anchor_event_id"], cited[0], "{timeline:#}");
    assert!(
        timeline["before"].as_u64() >= Some(1) && timeline["after"].as_u64() >= Some(1),
        "{timeline:#}"
    );
    assert_eq!(s["timeline_at"]["is_error"], false);
    assert_eq!(s["timeline_at"]["timestamp"], "2026-01-20T00:00:00.000Z");

    // remember: a redacted note of kind note, read back and found by search.
    let remember = &s["remember"];
    assert_eq!(remember["is_error"], false, "{remember:#}");
    assert_eq!(remember["stored"], "new");
    assert!(
        remember["event_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("mcp-"))
    );
    let read = &s["remember_read"];
    assert_eq!(read["kind"], "note", "{read:#}");
    assert_eq!(read["session_id"], "mcp-notes");
    assert_eq!(read["metadata"]["source"], "mcp");
    assert_eq!(read["metadata"]["tags"], "deploy,e2e");
    assert_eq!(read["metadata"]["redactions"], "github-pat=1", "{read:#}");
    assert_eq!(read["redacted"], true);
    assert_eq!(read["secret_in_text"], false);
    assert_eq!(
        s["remember_search"]["found"], true,
        "{:#}",
        s["remember_search"]
    );

    // status.
    let status = &s["status"];
    assert_eq!(status["is_error"], false, "{status:#}");
    assert_eq!(status["mode"], mode);
    assert_eq!(
        strs(&status["projects"]),
        ["ingest-pipeline", "webapp"],
        "{status:#}"
    );
    assert!(status["total_events"].as_u64() > Some(570), "{status:#}");
    assert_eq!(status["bm25_healthy"], true, "{status:#}");

    // Resources: the root listed, the template, the root and a month read.
    assert!(
        strs(&s["resources"]).contains(&"memory://toc/root"),
        "{s:#}"
    );
    assert!(strs(&s["resources"]).contains(&"memory://toc/toc:year:2026"));
    assert_eq!(
        s["templates"],
        serde_json::json!(["memory://toc/{node_id}"])
    );
    let root = &s["read_root"];
    assert_eq!(root["mime_type"], "application/json");
    assert_eq!(root["project_id"], "webapp");
    assert_eq!(strs(&root["years"]), ["toc:year:2026"]);
    assert!(strs(&root["child_uris"]).contains(&"memory://toc/toc:month:2026-01"));
    let child = &s["read_child"];
    assert_eq!(child["node_id"], "toc:month:2026-01", "{child:#}");
    assert_eq!(child["level"], "month");
    assert!(child["num_bullets"].as_u64() >= Some(1));
    assert!(
        strs(&child["child_uris"])
            .iter()
            .all(|uri| uri.starts_with("memory://toc/toc:week:2026-W"))
    );
    // A missing node: resource-not-found (-32002), or invalid params on 2026-07-28.
    assert!(
        [-32002, -32602].contains(&s["read_missing"]["error"].as_i64().unwrap_or(0)),
        "{:#}",
        s["read_missing"]
    );

    // Bad arguments: tool errors that say what is wrong; the server keeps answering.
    let expected = [
        "invalid_argument: `query` is required",
        "invalid_argument: `query` must be a string, got 5 (a number)",
        "invalid_argument: `mode` must be one of auto, toc, keyword, semantic, hybrid, got",
        "invalid_argument: `project` \"bad project!\" is not a project id",
        "invalid_argument: `limit` must be an integer from 1 to 50, got \"ten\" (a string)",
        "invalid_argument: unknown argument `qurey` for search",
        "invalid_argument: `since` must be an RFC 3339 time",
        "invalid_argument: give exactly one of `event_id`, `idea_id` or `at`",
        "invalid_argument: `ids` must be a list of strings",
        "not_found: project \"webapp\" has none of the events no-such-event",
        "invalid_argument: `text` must not be empty",
        "invalid_argument: unknown argument `verbose` for status; it takes no arguments",
    ];
    let bad = s["bad_arguments"].as_array().expect("bad arguments");
    assert_eq!(bad.len(), expected.len());
    for (case, prefix) in bad.iter().zip(expected) {
        assert_eq!(case["is_error"], true, "{case:#}");
        assert!(
            case["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(prefix)),
            "{case:#} should start with {prefix:?}"
        );
    }
    let unknown = &s["unknown_tool"];
    assert_eq!(unknown["protocol_error"], true, "{unknown:#}");
    assert_eq!(unknown["code"], -32602);
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("forget_everything"))
    );
    assert_eq!(s["after_errors_ok"], true);
}

/// The `memory_mcp_*` samples the client read from `/metrics` at the end of a session.
fn assert_metrics(s: &Value) {
    let metrics = s["metrics"].as_object().expect("metrics");
    let value = |key: &str| metrics.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    assert!(
        value(r#"memory_mcp_calls_total{outcome="ok",tool="search"}"#) >= 2.0,
        "{metrics:#?}"
    );
    assert!(value(r#"memory_mcp_calls_total{outcome="invalid_argument",tool="search"}"#) >= 7.0);
    assert!(value(r#"memory_mcp_calls_total{outcome="not_found",tool="get_events"}"#) >= 1.0);
    assert!(value(r#"memory_mcp_calls_total{outcome="ok",tool="remember"}"#) >= 1.0);
    assert!(value(r#"memory_mcp_calls_total{outcome="unknown_tool",tool="unknown"}"#) >= 1.0);
    for tool in [
        "search",
        "navigate",
        "timeline",
        "get_events",
        "remember",
        "status",
    ] {
        assert!(
            value(&format!(
                r#"memory_mcp_call_seconds_count{{tool="{tool}"}}"#
            )) >= 1.0,
            "{tool}: {metrics:#?}"
        );
    }
}

#[test]
fn the_python_sdk_uses_every_tool_and_resource_over_stdio_on_a_data_dir() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    ingest_sample(data.path())?;
    let daemon = build_daemon()?;
    let daemon = daemon.to_string_lossy();
    let data_dir = data.path().to_string_lossy();
    let logs = tempfile::tempdir()?;

    // The initialize handshake, with /metrics read before the session ends.
    let metrics = format!("127.0.0.1:{}", free_port());
    let metrics_url = format!("http://{metrics}/metrics");
    let legacy = run_client(
        &[
            "--daemon",
            &daemon,
            "--data-dir",
            &data_dir,
            "--project",
            "webapp",
            "--mode",
            "legacy",
            "--metrics-listen",
            &metrics,
            "--metrics-url",
            &metrics_url,
        ],
        Some(&logs.path().join("legacy.log")),
    )?;
    assert_session(&legacy, "embedded", "2025-11-25");
    assert_metrics(&legacy);

    // The 2026-07-28 lifecycle (server/discover, per-request metadata) on the same data.
    let modern = run_client(
        &[
            "--daemon",
            &daemon,
            "--data-dir",
            &data_dir,
            "--project",
            "webapp",
            "--mode",
            "auto",
        ],
        Some(&logs.path().join("auto.log")),
    )?;
    assert_session(&modern, "embedded", "2026-07-28");
    Ok(())
}

#[test]
fn the_python_sdk_reaches_a_running_daemon_over_nats_and_streamable_http() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let data = tempfile::tempdir()?;
    ingest_sample(data.path())?;
    let (_daemon, _daemon_metrics) = serve_daemon(&nats.url(), data.path(), &[KEYWORD_ONLY])?;

    let listen = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let nats_url = nats.url();
    let mut mcp = Daemon::start_with_env(
        &build_daemon()?,
        &[
            "mcp",
            "--nats-url",
            &nats_url,
            "--listen",
            &listen,
            "--metrics-listen",
            &metrics,
            "--project",
            "webapp",
        ],
        &[KEYWORD_ONLY],
    )?;
    mcp.wait_ready(&format!("http://{metrics}/readyz"), Duration::from_secs(30))?;
    assert!(
        mcp.stderr().contains(&format!(
            "serving MCP over streamable HTTP at http://{listen}/mcp"
        )),
        "{}",
        mcp.stderr()
    );

    let url = format!("http://{listen}/mcp");
    let metrics_url = format!("http://{metrics}/metrics");
    let summary = run_client(
        &[
            "--http",
            &url,
            "--project",
            "webapp",
            "--mode",
            "legacy",
            "--metrics-url",
            &metrics_url,
        ],
        None,
    )
    .with_context(|| format!("mcp stderr:\n{}", mcp.stderr()))?;
    assert_session(&summary, "daemon", "2025-11-25");
    assert_metrics(&summary);

    // The modern lifecycle over HTTP: stateless requests with per-request metadata.
    let modern = run_client(
        &[
            "--http",
            &url,
            "--project",
            "webapp",
            "--mode",
            "auto",
            "--no-bad-arguments",
        ],
        None,
    )
    .with_context(|| format!("mcp stderr:\n{}", mcp.stderr()))?;
    assert_eq!(modern["protocol_version"], "2026-07-28");
    assert_eq!(modern["search"]["is_error"], false);
    assert_eq!(modern["remember_search"]["found"], true);

    let status = mcp.terminate_within(Duration::from_secs(20))?;
    assert!(status.success(), "{status}: {}", mcp.stderr());
    // stdout is the protocol's on stdio; the HTTP server writes nothing there either.
    assert_eq!(mcp.stdout(), "");

    // As an agent starts it (the plugin's `.mcp.json`: no flags): the daemon answering
    // at the configured URL owns the data dir, so the server goes through it, for the
    // project `[capture] project` names.
    let mut child = Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data.path())
        .arg("mcp")
        .envs([
            KEYWORD_ONLY,
            ("AGENT_MEMORY_NATS__URL", nats_url.as_str()),
            ("AGENT_MEMORY_CAPTURE__PROJECT", "webapp"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    for request in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "status", "arguments": {}}}),
    ] {
        writeln!(stdin, "{request}")?;
    }
    stdin.flush()?;
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        answers.push(serde_json::from_str::<Value>(&line).context("JSON-RPC")?);
    }
    drop(stdin);
    let _ = child.wait()?;
    let status = &answers[1]["result"]["structuredContent"];
    assert_eq!(status["mode"], "daemon", "{:#}", answers[1]);
    Ok(())
}

#[test]
fn stdout_carries_only_the_protocol_with_debug_logs_on() -> anyhow::Result<()> {
    let data = tempfile::tempdir()?;
    ingest_sample(data.path())?;
    let logs = tempfile::tempdir()?;
    let stderr_path = logs.path().join("stderr.log");
    let mut child = Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data.path())
        .args([
            "--log-level",
            "debug",
            "mcp",
            "--embedded",
            "--project",
            "webapp",
        ])
        .envs([KEYWORD_ONLY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()?;
    // A hung server must fail the test, not hang it.
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, pid) = (Arc::clone(&done), child.id());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !done.load(Ordering::SeqCst) {
                if Instant::now() > deadline {
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let mut stdin = child.stdin.take().context("stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    let mut exchange = |request: Value| -> anyhow::Result<Option<Value>> {
        writeln!(stdin, "{request}")?;
        stdin.flush()?;
        if request.get("id").is_none() {
            return Ok(None);
        }
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let answer: Value = serde_json::from_str(&line)
            .with_context(|| format!("stdout line is not JSON-RPC: {line:?}"))?;
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["id"], request["id"], "{answer}");
        Ok(Some(answer))
    };
    let init = exchange(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}),
    )?
    .context("initialize answer")?;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    exchange(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let search = exchange(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "JWT expiry"}}}),
    )?
    .context("search answer")?;
    assert_eq!(search["result"]["isError"], false, "{search}");
    let remember = exchange(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": "raw stdio note"}}}),
    )?
    .context("remember answer")?;
    assert_eq!(
        remember["result"]["structuredContent"]["stored"], "new",
        "{remember}"
    );
    let bad = exchange(
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "search", "arguments": {"limit": 3}}}),
    )?
    .context("bad call answer")?;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    drop(stdin);
    // Closing stdin ends the session: nothing more on stdout, a clean exit.
    let mut rest = String::new();
    stdout.read_to_string(&mut rest)?;
    let status = child.wait()?;
    done.store(true, Ordering::SeqCst);
    let _ = watchdog.join();
    let stderr = std::fs::read_to_string(&stderr_path)?;
    assert_eq!(rest, "", "stdout after the answers; stderr:\n{stderr}");
    assert!(status.success(), "{status}; stderr:\n{stderr}");
    assert!(
        stderr.contains("DEBUG"),
        "debug logs go to stderr: {stderr}"
    );
    Ok(())
}
