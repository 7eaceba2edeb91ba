//! Secrets never reach the log: the real daemon against a real nats-server, fake
//! secrets made fresh for this run sent by every path (request/reply, JetStream, a
//! payload that goes to dead letters, `ingest --file`); afterwards no file of the data
//! dir (store, BM25 and vector indexes, dead letters) holds any of them, the stored
//! events carry `[REDACTED:<rule>:<tag>]` and their `redactions` metadata, and
//! `memory_redactions_total{rule}` counted them.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::bail;
use memory_e2e_tests::{
    NatsServer, build_daemon, export_events, files_holding, http_get, metric_sum,
    request_json as request, serve_daemon, wait_for_stream,
};
use serde_json::{Value, json};

/// Fresh random letters and digits, so no secret of this test exists before it runs.
fn random_alnum(length: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let state = std::collections::hash_map::RandomState::new();
    (0..length)
        .map(|i| {
            let mut hasher = state.build_hasher();
            hasher.write_usize(i);
            char::from(ALPHABET[(hasher.finish() % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// Fresh random characters of AWS key ids' alphabet (A–Z, 2–7).
fn random_base32(length: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    random_alnum(length)
        .bytes()
        .map(|byte| char::from(ALPHABET[usize::from(byte) % ALPHABET.len()]))
        .collect()
}

/// The fake secrets and the events that carry them.
struct Secrets {
    github: String,
    aws_key_id: String,
    bearer: String,
    db_password: String,
    env_value: String,
    pem_body: String,
    private_note: String,
}

impl Secrets {
    fn new() -> Secrets {
        Secrets {
            github: format!("ghp_{}", random_alnum(36)),
            aws_key_id: format!("AKIA{}", random_base32(16)),
            bearer: random_alnum(48),
            db_password: random_alnum(20),
            env_value: random_alnum(32),
            pem_body: (0..6)
                .map(|_| random_alnum(64))
                .collect::<Vec<_>>()
                .join("\n"),
            private_note: format!("my-diary-{}", random_alnum(24)),
        }
    }

    /// Each secret's random tail: compressed blocks (LZ4) keep a string's rare bytes
    /// as literals, so this is what a raw copy would show.
    fn tails(&self) -> Vec<(&'static str, String)> {
        let tail = |s: &str| s[s.len().saturating_sub(16)..].to_owned();
        vec![
            ("github", tail(&self.github)),
            ("aws", tail(&self.aws_key_id)),
            ("bearer", tail(&self.bearer)),
            ("db password", tail(&self.db_password)),
            ("env value", tail(&self.env_value)),
            ("pem", self.pem_body[64 * 2..64 * 2 + 32].to_owned()),
            ("private", tail(&self.private_note)),
        ]
    }

    fn events(&self, project: &str, prefix: &str) -> Vec<Value> {
        let event = |n: u64, kind: &str, text: String, metadata: Value| {
            json!({"event_id": format!("{prefix}-{n}"), "session_id": format!("{prefix}-s"),
                   "project_id": project, "timestamp": 1_767_225_600_000u64 + n * 1_000,
                   "kind": kind, "text": text, "metadata": metadata})
        };
        vec![
            event(
                1,
                "user_message",
                format!("use my token {} for the release workflow", self.github),
                json!({}),
            ),
            event(
                2,
                "tool_call",
                "Bash: aws configure".to_owned(),
                json!({"command": format!("AWS_ACCESS_KEY_ID={} aws s3 ls", self.aws_key_id)}),
            ),
            event(
                3,
                "tool_result",
                format!("< HTTP/1.1 200\n> Authorization: Bearer {}\n", self.bearer),
                json!({}),
            ),
            event(
                4,
                "assistant_message",
                format!(
                    "Connect with postgres://app:{}@db.internal:5432/app and keep <private>{}</private> out.",
                    self.db_password, self.private_note
                ),
                json!({}),
            ),
            event(
                5,
                "tool_result",
                format!(
                    "DB_HOST=localhost\nFEATURE_X=on\nLOG=debug {}",
                    self.env_value
                ),
                json!({"file_path": "/srv/app/.env", "tool_name": "Read"}),
            ),
            event(
                6,
                "tool_result",
                format!(
                    "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                    self.pem_body
                ),
                json!({}),
            ),
            event(
                7,
                "user_message",
                "we decided the JWT access token lives 15 minutes".to_owned(),
                json!({}),
            ),
        ]
    }
}

/// Every file under `dir` that contains any of `tails`, with which.
fn files_holding_any(dir: &Path, tails: &[(&'static str, String)]) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    for (what, tail) in tails {
        for path in files_holding(dir, tail)? {
            found.push(format!("{path} holds the {what} secret"));
        }
    }
    Ok(found)
}

fn check_exported(events: &[Value], prefix: &str) {
    let by_id = |n: u32| {
        events
            .iter()
            .find(|e| e["event_id"] == format!("{prefix}-{n}"))
            .unwrap_or_else(|| panic!("{prefix}-{n} not stored: {events:?}"))
    };
    let first = by_id(1);
    assert!(
        first["text"]
            .as_str()
            .unwrap_or_default()
            .contains("[REDACTED:github-pat:"),
        "{first}"
    );
    assert_eq!(first["metadata"]["redactions"], "github-pat=1", "{first}");
    let second = by_id(2);
    // The key id is both gitleaks' AWS key and an env line's secret: either rule may
    // take it; it must be gone.
    assert!(
        second["metadata"]["command"]
            .as_str()
            .unwrap_or_default()
            .contains("[REDACTED:"),
        "{second}"
    );
    let fourth = by_id(4);
    let text = fourth["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("[REDACTED:url-credentials:") && !text.contains("private"),
        "{fourth}"
    );
    let fifth = by_id(5);
    assert!(
        fifth["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("[REDACTED:sensitive-file:"),
        "{fifth}"
    );
    assert!(
        by_id(6)["text"]
            .as_str()
            .unwrap_or_default()
            .contains("[REDACTED:private-key:")
    );
    // Innocent text is stored as sent.
    assert_eq!(
        by_id(7)["text"],
        "we decided the JWT access token lives 15 minutes"
    );
    assert!(by_id(7)["metadata"].get("redactions").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_path_stores_a_raw_secret() -> anyhow::Result<()> {
    let secrets = Secrets::new();
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    let (mut daemon, metrics) = serve_daemon(&nats.url(), data_dir.path(), &[])?;
    let client = nats.connect().await?;

    // Request/reply.
    let reply = request(
        &client,
        "memory.ingest.rr",
        &Value::Array(secrets.events("rr", "rr")),
    )
    .await?;
    assert_eq!(reply["accepted"], 7, "{reply}");
    // JetStream, once the daemon made the stream; plus a payload that cannot be an
    // event (no timestamp) and so goes to dead letters with its secret.
    let jetstream = async_nats::jetstream::new(client.clone());
    wait_for_stream(&client, "MEMORY_EVENTS").await?;
    for event in secrets.events("js", "js") {
        jetstream
            .publish("memory.events.js", serde_json::to_vec(&event)?.into())
            .await?
            .await?;
    }
    let poison = json!({"event_id": "bad-1", "session_id": "s", "kind": "user_message",
                        "text": format!("deploy with {}", secrets.github)});
    jetstream
        .publish("memory.events.js", serde_json::to_vec(&poison)?.into())
        .await?
        .await?;

    // Everything applied by every consumer (TOC, BM25, vector, ideas).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let report = request(&client, "memory.admin.status", &json!({})).await?;
        let stored = report["projects"]["js"]["events"].as_u64().unwrap_or(0)
            + report["projects"]["rr"]["events"].as_u64().unwrap_or(0);
        let idle = report["consumers"]
            .as_array()
            .is_some_and(|consumers| consumers.iter().all(|c| c["lag"].as_u64() == Some(0)));
        let dead = report["dead_letters"].as_u64().unwrap_or(0);
        if stored == 14 && idle && dead >= 1 {
            break;
        }
        if Instant::now() > deadline {
            bail!("not caught up: {report}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (code, text) = http_get(&format!("http://{metrics}/metrics"))?;
    assert_eq!(code, 200);
    for rule in [
        "github-pat",
        "aws-access-token",
        "authorization-header",
        "url-credentials",
        "sensitive-file",
        "private-key",
        "private-tag",
    ] {
        let label = format!("rule=\"{rule}\"");
        assert!(
            metric_sum(&text, "memory_redactions_total", &[&label]) >= 2.0,
            "memory_redactions_total{{{label}}} below 2"
        );
    }
    daemon.terminate()?;

    let leaks = files_holding_any(data_dir.path(), &secrets.tails())?;
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    check_exported(&export_events(data_dir.path(), "rr")?, "rr");
    check_exported(&export_events(data_dir.path(), "js")?, "js");

    // `ingest --file`, into a data dir of its own.
    let file_dir = tempfile::tempdir()?;
    let file = file_dir.path().join("events.jsonl");
    let lines: Vec<String> = secrets
        .events("file", "file")
        .iter()
        .map(Value::to_string)
        .collect();
    std::fs::write(&file, lines.join("\n"))?;
    let file_data = file_dir.path().join("data");
    let output = std::process::Command::new(build_daemon()?)
        .args([
            "--data-dir",
            &file_data.to_string_lossy(),
            "ingest",
            "--file",
            &file.to_string_lossy(),
            "--wait",
        ])
        .output()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let leaks = files_holding_any(&file_data, &secrets.tails())?;
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    check_exported(&export_events(&file_data, "file")?, "file");
    Ok(())
}
