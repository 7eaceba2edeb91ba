//! Capture from real agents' files, end to end: the real daemon on a real nats-server,
//! fed by `memory-daemon hook claude-code` (one process per hook input, as Claude Code
//! runs it) and `memory-daemon import claude-code|codex` over the fixtures in
//! `crates/agents/tests/fixtures`.
//!
//! - With no daemon answering, hooks exit 0 at once and spool their events (redacted:
//!   the `.env` a tool read is not in the spool); `spool flush` stores them once; a
//!   second flush finds nothing.
//! - Hooks that fire again store nothing twice.
//! - An import of the same transcripts recognises every turn the hooks sent (the same
//!   ids), so only the hooks' extra tool call is not in it; an import run again reads
//!   nothing (resumable) or, forced, stores nothing (idempotent).
//! - No file of the data dir holds the fake secrets.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use memory_e2e_tests::{
    NatsServer, build_daemon, export_events, free_port, http_post, repo_root, serve_daemon,
};
use serde_json::Value;

fn fixtures() -> PathBuf {
    repo_root().join("crates/agents/tests/fixtures")
}

/// Runs `memory-daemon --data-dir DATA hook claude-code` with `input` on stdin; returns
/// its stdout (what the agent is shown).
fn hook(data_dir: &Path, nats_url: &str, input: &Value, timeout_ms: u64) -> anyhow::Result<String> {
    let mut child = Command::new(build_daemon()?)
        .args([
            "--data-dir",
            &data_dir.to_string_lossy(),
            "hook",
            "claude-code",
            "--nats-url",
            nats_url,
            "--timeout-ms",
            &timeout_ms.to_string(),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(&serde_json::to_vec(input)?)?;
    let output = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("hook failed ({}): {stderr}", output.status);
    }
    Ok(String::from_utf8(output.stdout)?)
}

fn cli_json(data_dir: &Path, args: &[&str]) -> anyhow::Result<Value> {
    let output = Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()?;
    if !output.status.success() {
        bail!(
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8(output.stdout)?;
    let last = stdout.lines().last().context("no output")?;
    Ok(serde_json::from_str(last)?)
}

fn hook_input(name: &str) -> anyhow::Result<Value> {
    let path = fixtures().join(format!("hooks/claude-code/{name}.json"));
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Whether any file under `dir` contains `needle`.
fn any_file_contains(dir: &Path, needle: &[u8]) -> anyhow::Result<Option<PathBuf>> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if let Some(found) = any_file_contains(&path, needle)? {
                return Ok(Some(found));
            }
        } else if std::fs::read(&path)?
            .windows(needle.len())
            .any(|window| window == needle)
        {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

#[test]
fn hooks_spool_and_imports_store_each_turn_once() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    let data = data_dir.path();
    let transcript = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");

    // 1. No daemon yet: the hooks spool and exit 0.
    let mut stop = hook_input("Stop")?;
    stop["transcript_path"] = Value::String(transcript.to_string_lossy().into_owned());
    let inputs = [
        hook_input("SessionStart")?,
        hook_input("UserPromptSubmit")?,
        hook_input("PostToolUse-Read-dotenv")?,
        stop,
    ];
    for input in &inputs {
        hook(data, &nats.url(), input, 50)?;
    }
    let spool = data.join("spool/spool.jsonl");
    let spooled = std::fs::read_to_string(&spool)?;
    let spooled_lines = spooled.lines().count();
    assert!(
        spooled_lines >= 5,
        "session start, prompt, tool call and result, answers"
    );
    assert!(!spooled.contains("fake-password"), "the spool is redacted");
    assert!(spooled.contains("[REDACTED:"), "{spooled}");

    // 2. The daemon comes up; a flush stores the spool once.
    let hook_port = free_port();
    let hook_listen = format!("127.0.0.1:{hook_port}");
    let (mut daemon, _metrics) = serve_daemon(
        &nats.url(),
        data,
        &[
            ("AGENT_MEMORY_CAPTURE__HTTP_LISTEN", hook_listen.as_str()),
            ("AGENT_MEMORY_CAPTURE__HTTP_TOKEN", "hook-token-for-test"),
        ],
    )?;
    let flushed = cli_json(
        data,
        &["spool", "flush", "--nats-url", &nats.url(), "--json"],
    )?;
    assert_eq!(
        number(&flushed, "accepted"),
        spooled_lines as u64,
        "{flushed}"
    );
    assert_eq!(number(&flushed, "kept"), 0, "{flushed}");
    let again = cli_json(
        data,
        &["spool", "flush", "--nats-url", &nats.url(), "--json"],
    )?;
    assert_eq!(
        number(&again, "accepted") + number(&again, "duplicates"),
        0,
        "{again}"
    );

    // 3. Hooks that fire again (a resumed session's start, a repeated tool hook) store
    //    nothing new; they reach the daemon, so nothing is spooled.
    for input in [&inputs[0], &inputs[2]] {
        hook(data, &nats.url(), input, 10_000)?;
    }
    assert_eq!(
        std::fs::read_to_string(&spool)?.trim(),
        "",
        "nothing spooled"
    );

    // 4. Importing the transcripts: every turn the hooks sent is recognised.
    let projects = fixtures().join("claude-code/projects");
    let projects = projects.to_string_lossy();
    let import = |extra: &[&str]| {
        let mut args = vec![
            "import",
            "claude-code",
            "--dir",
            &projects,
            "--nats-url",
            "",
            "--json",
        ];
        let url = nats.url();
        args[5] = &url;
        args.extend_from_slice(extra);
        cli_json(data, &args)
    };
    let first = import(&[])?;
    let hook_only = 2; // the .env read's tool call and result are in no transcript
    assert_eq!(
        number(&first, "duplicates"),
        spooled_lines as u64 - hook_only,
        "the hooks' ids are the import's: {first}"
    );
    assert!(number(&first, "accepted") > 50, "{first}");
    assert_eq!(number(&first, "rejected"), 0, "{first}");
    let skipped = &first["skipped"];
    assert_eq!(number(skipped, "malformed_json"), 2, "{first}");
    assert!(number(skipped, "replayed") >= 2, "{first}");
    // Run again: nothing changed, nothing read.
    let second = import(&[])?;
    assert_eq!(number(&second, "files_read"), 0, "{second}");
    assert!(number(&second, "files_unchanged") > 0, "{second}");
    // Forced (the resume file gone): everything read, nothing stored twice.
    std::fs::remove_file(data.join("spool/import-claude-code.json"))?;
    let forced = import(&[])?;
    assert_eq!(number(&forced, "accepted"), 0, "{forced}");
    assert_eq!(
        number(&forced, "duplicates"),
        number(&first, "accepted") + number(&first, "duplicates"),
        "{forced}"
    );

    let codex_dir = fixtures().join("codex/sessions");
    let codex = cli_json(
        data,
        &[
            "import",
            "codex",
            "--dir",
            &codex_dir.to_string_lossy(),
            "--nats-url",
            &nats.url(),
            "--json",
        ],
    )?;
    assert!(number(&codex, "accepted") > 10, "{codex}");
    assert_eq!(
        number(&codex["skipped"], "duplicate_event_msg"),
        11,
        "{codex}"
    );

    // 5. A new session starts: the hook prints what the memory knows of the project,
    //    within its budget, once the projections have caught up with the import.
    let mut start = hook_input("SessionStart")?;
    start["session_id"] = Value::String("7a0e5c44-0000-4000-8000-000000000001".into());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let context = loop {
        let printed = hook(data, &nats.url(), &start, 10_000)?;
        if printed.contains("### Recent sessions") || std::time::Instant::now() > deadline {
            break printed;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(
        context.contains("What agent-memory knows about project `webapp`"),
        "{context}"
    );
    assert!(context.contains("[toc:segment:"), "{context}");
    assert!(
        context.len() <= 1_500 * 4 + 200,
        "within the token budget: {context}"
    );

    // 6. The HTTP hook: the same input over `POST /hooks/claude-code`, no process per
    //    event; a token is required, bad input is a 400 that disturbs nothing.
    let url = format!("http://{hook_listen}/hooks/claude-code");
    let auth = [
        ("Authorization", "Bearer hook-token-for-test"),
        ("Content-Type", "application/json"),
    ];
    let mut prompt = hook_input("UserPromptSubmit")?;
    prompt["prompt"] = Value::String("Posted over HTTP: keep the cart clock injectable.".into());
    let body = serde_json::to_vec(&prompt)?;
    let (status, answer) = http_post(&url, &[("Content-Type", "application/json")], &body)?;
    assert_eq!(status, 401, "{answer}");
    // What a web page could send to loopback: refused before anything is read.
    let (status, answer) = http_post(&url, &[auth[0], ("Content-Type", "text/plain")], &body)?;
    assert_eq!(status, 415, "{answer}");
    let (status, answer) = http_post(
        &url,
        &[auth[0], auth[1], ("Origin", "https://evil.example")],
        &body,
    )?;
    assert_eq!(status, 403, "{answer}");
    let (status, answer) = http_post(&url, &auth, b"{not json")?;
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = http_post(&url, &auth, br#"{"hook_event_name": "Stop"}"#)?;
    assert_eq!(status, 400, "no session_id: {answer}");
    assert!(answer.contains("session_id"), "{answer}");
    let (status, answer) = http_post(&url, &auth, &body)?;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer)?;
    assert_eq!(number(&answer, "accepted"), 1, "{answer}");
    // Writing a secrets file: what is written is redacted whole, call and result.
    let mut write = hook_input("PostToolUse-Write")?;
    write["tool_input"] = serde_json::json!({
        "file_path": "/home/dev/webapp/.env",
        "content": "DATABASE_URL=postgres://webapp:fake-password-written@db/webapp\nMODE=dev\n"
    });
    write["tool_response"] =
        serde_json::json!({"type": "create", "filePath": "/home/dev/webapp/.env"});
    write["tool_use_id"] = Value::String("toolu_write_dotenv_e2e".into());
    let (status, answer) = http_post(&url, &auth, &serde_json::to_vec(&write)?)?;
    assert_eq!(status, 200, "{answer}");
    let (status, answer) = http_post(&url, &auth, &serde_json::to_vec(&start)?)?;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer)?;
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(context.contains("### Recent sessions"), "{answer}");

    // 7. Codex's legacy `notify` program gets its payload as its last argument.
    let notify_path = fixtures().join("hooks/codex/notify-agent-turn-complete.json");
    let mut notify: Value = serde_json::from_str(&std::fs::read_to_string(notify_path)?)?;
    notify["last-assistant-message"] = Value::String("The watcher is stopped.".into());
    let output = Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data)
        .args([
            "hook",
            "codex",
            "--nats-url",
            &nats.url(),
            "--timeout-ms",
            "10000",
        ])
        .arg(serde_json::to_string(&notify)?)
        .stdin(Stdio::null())
        .output()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&spool)?.trim(),
        "",
        "reached the daemon"
    );

    daemon.terminate()?;
    let exported = export_events(data, "webapp")?;
    // Every session start that reached the daemon is stored (the one of step 5 once),
    // the prompt and the .env write posted over HTTP, and notify's new answer (its
    // prompt was imported).
    let expected =
        spooled_lines as u64 + number(&first, "accepted") + number(&codex, "accepted") + 5;
    assert_eq!(exported.len() as u64, expected, "each turn stored once");
    let agents: std::collections::BTreeSet<&str> = exported
        .iter()
        .filter_map(|event| event["metadata"]["source"].as_str())
        .collect();
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        ["claude-code", "codex"]
    );
    for secret in [
        "fake-password",
        "MODE=dev",
        "fake-stripe-key-for-fixtures-0000",
    ] {
        if let Some(path) = any_file_contains(data, secret.as_bytes())? {
            bail!("{secret} found in {}", path.display());
        }
    }
    Ok(())
}

#[test]
fn install_writes_claude_code_settings_and_uninstall_takes_them_back() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let project = tempfile::tempdir()?;
    let settings_path = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings_path.parent().context("parent")?)?;
    let theirs = serde_json::json!({
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}
    });
    std::fs::write(&settings_path, serde_json::to_string_pretty(&theirs)?)?;
    let run = |verb: &str| -> anyhow::Result<()> {
        let output = Command::new(build_daemon()?)
            .args([verb, "claude-code", "--project"])
            .arg(project.path())
            .env("HOME", home.path())
            .output()?;
        if !output.status.success() {
            bail!("{verb}: {}", String::from_utf8_lossy(&output.stderr));
        }
        Ok(())
    };
    run("install")?;
    run("install")?;
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_path)?)?;
    assert_eq!(settings["permissions"], theirs["permissions"]);
    let stop = settings["hooks"]["Stop"].as_array().context("Stop")?;
    assert_eq!(stop.len(), 2, "theirs and ours, once: {settings}");
    let command = stop[1]["hooks"][0]["command"].as_str().context("command")?;
    assert!(
        command.ends_with("memory-daemon hook claude-code"),
        "{command}"
    );
    assert!(Path::new(command.trim_end_matches(" hook claude-code")).is_absolute());
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".mcp.json"))?)?;
    assert_eq!(
        mcp["mcpServers"]["agent-memory"]["args"],
        serde_json::json!(["mcp"])
    );
    assert!(
        !home.path().join(".claude.json").exists(),
        "--project leaves the user's alone"
    );

    run("uninstall")?;
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&settings_path)?)?;
    assert_eq!(settings, theirs, "exactly what they had");
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".mcp.json"))?)?;
    assert_eq!(mcp, serde_json::json!({}));
    Ok(())
}
