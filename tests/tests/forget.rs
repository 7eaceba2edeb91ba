//! `admin forget` leaves no trace: the real daemon against a real nats-server stores
//! events whose text no redaction rule knows (a passphrase, an address), by
//! request/reply and JetStream (one payload goes to dead letters), with one more
//! waiting in the hooks' spool; both indexes and the TOC take them in. After the daemon
//! stops, `admin forget --match` and `admin forget --session` run; then no file of the
//! data dir holds either text, the export shows the events rewritten with their
//! identity kept and one `memory_forgotten` tombstone per forget, and a daemon started
//! again on the data dir rebuilt everything: keyword search finds the rest of the
//! conversation and nothing of what was forgotten.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{
    NatsServer, build_daemon, export_events, files_holding, request_json as request, serve_daemon,
    wait_for_stream,
};
use serde_json::{Value, json};

/// Fresh lowercase letters and digits: one BM25 term no other test or run holds.
fn random_token(length: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let state = std::collections::hash_map::RandomState::new();
    let mut token: String = (0..length)
        .map(|i| {
            let mut hasher = state.build_hasher();
            hasher.write_usize(i);
            char::from(ALPHABET[(hasher.finish() % ALPHABET.len() as u64) as usize])
        })
        .collect();
    token.insert(0, 'q');
    token
}

/// Waits until the daemon stored `events` in project `fg` and every consumer is idle.
async fn wait_caught_up(client: &async_nats::Client, events: u64) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let report = request(client, "memory.admin.status", &json!({})).await?;
        let stored = report["projects"]["fg"]["events"].as_u64().unwrap_or(0);
        let idle = report["consumers"]
            .as_array()
            .is_some_and(|consumers| consumers.iter().all(|c| c["lag"].as_u64() == Some(0)));
        if stored == events && idle {
            return Ok(report);
        }
        if Instant::now() > deadline {
            bail!("not caught up: {report}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// BM25 hits for `query` in project `fg`.
async fn keyword_hits(client: &async_nats::Client, query: &str) -> anyhow::Result<Vec<Value>> {
    let answer = request(
        client,
        "memory.query.fg.teleport.search",
        &json!({"query": query, "limit": 20}),
    )
    .await?;
    answer["results"]
        .as_array()
        .cloned()
        .with_context(|| format!("no results: {answer}"))
}

fn admin(data_dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(build_daemon()?)
        .args(["--data-dir", &data_dir.to_string_lossy(), "admin", "forget"])
        .args(args)
        .output()?;
    if !output.status.success() {
        bail!(
            "admin forget {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_leaves_no_trace_in_store_indexes_or_export() -> anyhow::Result<()> {
    let passphrase = random_token(24);
    let address = random_token(24);
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(&nats.url(), data_dir.path(), &[])?;
    let client = nats.connect().await?;

    let now = 1_790_000_000_000_u64;
    let events = json!([
        {"event_id": "e1", "session_id": "s1", "timestamp": now, "kind": "user_message",
         "text": format!("the staging vault unlock phrase is {passphrase}, keep it handy")},
        {"event_id": "e2", "session_id": "s1", "timestamp": now + 1000,
         "kind": "assistant_message",
         "text": "noted; we decided the JWT access token lives 15 minutes"},
        {"event_id": "e3", "session_id": "s1", "timestamp": now + 2000, "kind": "tool_call",
         "text": "Bash", "metadata": {"tool_name": "Bash",
                                      "command": format!("vault operator unseal {passphrase}")}},
        {"event_id": "e4", "session_id": "s2", "timestamp": now + 3000, "kind": "user_message",
         "text": format!("ship the laptop to {address} street")},
        {"event_id": "e5", "session_id": "s2", "timestamp": now + 4000,
         "kind": "assistant_message", "text": "I will write the shipping label"},
    ]);
    let reply = request(&client, "memory.ingest.fg", &events).await?;
    assert_eq!(reply["accepted"], 5, "{reply}");
    // A JetStream payload that cannot be an event (no timestamp) parks in dead letters
    // with the passphrase.
    let jetstream = async_nats::jetstream::new(client.clone());
    wait_for_stream(&client, "MEMORY_EVENTS").await?;
    let poison = json!({"event_id": "bad-1", "session_id": "s1", "kind": "user_message",
                        "text": format!("unseal with {passphrase}")});
    jetstream
        .publish("memory.events.fg", serde_json::to_vec(&poison)?.into())
        .await?
        .await?;
    let status = wait_caught_up(&client, 5).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while request(&client, "memory.admin.status", &json!({})).await?["dead_letters"]
        .as_u64()
        .unwrap_or(0)
        < 1
    {
        if Instant::now() > deadline {
            bail!("the poison never reached dead letters: {status}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The texts are stored and indexed as sent: no rule took them.
    assert!(!keyword_hits(&client, &passphrase).await?.is_empty());
    assert!(!keyword_hits(&client, &address).await?.is_empty());
    daemon.terminate()?;

    // A hook's event waits in the spool for the next flush.
    let spool = data_dir.path().join("spool");
    std::fs::create_dir_all(&spool)?;
    let spooled = json!({"project": "fg", "event": {"event_id": "sp-1", "session_id": "s1",
        "timestamp": now + 5000, "kind": "user_message",
        "text": format!("once more: {passphrase}")}});
    std::fs::write(spool.join("spool.jsonl"), format!("{spooled}\n"))?;
    // A hook's state holds a response still being written.
    std::fs::create_dir_all(spool.join("sessions"))?;
    let state = json!({"seq": 3, "transcript_offset": 10, "transcript": {"open": {
        "text": format!("I will use {passphrase} to unseal")}}});
    std::fs::write(
        spool
            .join("sessions")
            .join("claude-code-0123456789abcdef.json"),
        state.to_string(),
    )?;
    for secret in [&passphrase, &address] {
        assert!(
            !files_holding(data_dir.path(), secret)?.is_empty(),
            "the test needs {secret} on disk first"
        );
    }

    // A dry run says what it would do and changes nothing.
    let pattern = format!("{}[a-z0-9]+", &passphrase[..8]);
    let plan: Value = serde_json::from_str(&admin(
        data_dir.path(),
        &["--match", &pattern, "--dry-run", "--json"],
    )?)?;
    assert_eq!(plan["events"]["fg"], json!(["e1", "e3"]), "{plan}");
    assert_eq!(
        (
            plan["dead_letters"].clone(),
            plan["spooled"].clone(),
            plan["session_states"].clone()
        ),
        (json!(1), json!(1), json!(1)),
        "{plan}"
    );
    assert!(!files_holding(data_dir.path(), &passphrase)?.is_empty());

    let said = admin(data_dir.path(), &["--match", &pattern])?;
    assert!(
        said.contains(
            "forgot 2 span(s) in 2 event(s), 1 dead letter(s), 1 spooled event(s) and 1 \
             session state(s)"
        ),
        "{said}"
    );
    let said = admin(data_dir.path(), &["--session", "s2", "--project", "fg"])?;
    assert!(said.contains("in 2 event(s)"), "{said}");
    // Nothing is left to forget the second time, and nothing is pending.
    let said = admin(data_dir.path(), &["--match", &pattern])?;
    assert!(said.contains("nothing matched"), "{said}");
    let said = admin(data_dir.path(), &["--resume"])?;
    assert!(said.contains("no forget is pending"), "{said}");

    for secret in [&passphrase, &address] {
        let leaks = files_holding(data_dir.path(), secret)?;
        assert!(leaks.is_empty(), "{secret} is still in {leaks:?}");
    }
    let exported = export_events(data_dir.path(), "fg")?;
    let by_id = |id: &str| {
        exported
            .iter()
            .find(|event| event["event_id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} not exported: {exported:?}"))
    };
    let e1 = by_id("e1");
    let text = e1["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("the staging vault unlock phrase is [FORGOTTEN:")
            && text.ends_with(", keep it handy"),
        "{e1}"
    );
    assert!(
        by_id("e3")["metadata"]["command"]
            .as_str()
            .unwrap_or_default()
            .starts_with("vault operator unseal [FORGOTTEN:")
    );
    assert_eq!(by_id("e4")["text"], "[FORGOTTEN]");
    assert_eq!(by_id("e4")["session_id"], "s2");
    assert_eq!(by_id("e5")["text"], "[FORGOTTEN]");
    assert_eq!(
        by_id("e2")["text"],
        "noted; we decided the JWT access token lives 15 minutes"
    );
    let tombstones: Vec<&Value> = exported
        .iter()
        .filter(|event| event["kind"] == "memory_forgotten")
        .collect();
    assert_eq!(tombstones.len(), 2, "{tombstones:?}");
    assert_eq!(tombstones[0]["metadata"]["selector"], "match");
    assert_eq!(tombstones[0]["metadata"]["event_ids"], "e1,e3");
    assert_eq!(tombstones[0]["metadata"]["dead_letters"], "1");
    assert_eq!(tombstones[1]["metadata"]["selector"], "session");
    assert_eq!(
        e1["metadata"]["forgotten"], tombstones[0]["event_id"],
        "a rewritten event names its tombstone"
    );

    // A daemon on the data dir serves the rebuilt projections and indexes.
    let (mut daemon, _) = serve_daemon(&nats.url(), data_dir.path(), &[])?;
    wait_caught_up(&client, 7).await?;
    assert!(keyword_hits(&client, &passphrase).await?.is_empty());
    assert!(keyword_hits(&client, &address).await?.is_empty());
    let kept = keyword_hits(&client, "JWT access token").await?;
    assert!(
        kept.iter().any(|hit| hit["text"]
            .as_str()
            .unwrap_or_default()
            .contains("15 minutes")),
        "{kept:?}"
    );
    let root = request(&client, "memory.query.fg.toc.root", &json!({})).await?;
    assert!(
        root["years"]
            .as_array()
            .is_some_and(|years| !years.is_empty()),
        "{root}"
    );
    daemon.terminate()?;
    Ok(())
}

/// A forget cut short after it rewrote the store (the process killed there): every
/// command refuses the data dir and names `--resume`, which finishes the job — the
/// spool scrubbed, the indexes deleted and rebuilt, the store compacted — from what the
/// pending mark wrote down.
#[test]
fn an_interrupted_forget_blocks_the_data_dir_until_resumed() -> anyhow::Result<()> {
    use memory_store::{ForgetBatch, OutboxSeq, Store, StoreOptions};
    use memory_types::{EventKind, Role};

    let secret = random_token(24);
    let dir = tempfile::tempdir()?;
    let data_dir = dir.path().join("data");
    let file = dir.path().join("events.jsonl");
    let lines = [
        json!({"event_id": "a", "session_id": "s", "timestamp": 1_790_000_000_000_u64,
               "kind": "user_message", "text": format!("the unlock phrase is {secret}")}),
        json!({"event_id": "b", "session_id": "s", "timestamp": 1_790_000_001_000_u64,
               "kind": "assistant_message", "text": "we decided the JWT access token lives 15 minutes"}),
    ];
    std::fs::write(
        &file,
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    )?;
    let daemon = build_daemon()?;
    let data = data_dir.to_string_lossy().into_owned();
    let output = Command::new(&daemon)
        .args([
            "--data-dir",
            &data,
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
    let spool = data_dir.join("spool");
    std::fs::create_dir_all(&spool)?;
    let spooled = json!({"project": "default", "event": {"event_id": "c", "session_id": "s",
        "timestamp": 1_790_000_002_000_u64, "kind": "user_message",
        "text": format!("again {secret}")}});
    std::fs::write(spool.join("spool.jsonl"), format!("{spooled}\n"))?;

    // What `admin forget --match` does before it is killed: the rewrite, the tombstone
    // and the pending mark with the forget written down.
    {
        let store = Store::open(&data_dir, &StoreOptions::default())?;
        let mut batch = ForgetBatch::default();
        for item in store.log_events(OutboxSeq::ZERO) {
            let (seq, mut event) = item?;
            if event.text.contains(&secret) {
                event.text = event.text.replace(&secret, "[FORGOTTEN:00000000]");
                batch.rewrites.push((seq, event));
            }
        }
        assert_eq!(batch.rewrites.len(), 1);
        batch.tombstones.push(memory_types::Event {
            event_id: "forget-test".to_owned(),
            session_id: "memory-forget".to_owned(),
            project_id: "default".to_owned(),
            agent_id: None,
            timestamp_ms: 1_790_000_003_000,
            kind: EventKind::MemoryForgotten,
            role: Role::System,
            text: "admin forget rewrote 1 event(s)".to_owned(),
            metadata: Default::default(),
        });
        batch.resume = serde_json::to_vec(&json!({"selector": "match",
            "values": [secret.clone()], "project": null, "tombstone_id": "forget-test"}))?;
        store.forget(&batch)?;
    }
    assert!(!files_holding(&data_dir, &secret)?.is_empty());

    let refused = Command::new(&daemon)
        .args([
            "--data-dir",
            &data,
            "events",
            "export",
            "--project",
            "default",
        ])
        .output()?;
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("admin forget --resume"),
        "{said}"
    );
    let refused = admin(&data_dir, &["--session", "s"]);
    assert!(
        refused.as_ref().is_err_and(|err| err
            .to_string()
            .contains("run `admin forget --resume` first")),
        "{refused:?}"
    );

    let said = admin(&data_dir, &["--resume"])?;
    assert!(
        said.contains("finishing the forget an earlier run left pending"),
        "{said}"
    );
    assert!(said.contains("rewrote 1 spooled event(s)"), "{said}");
    let leaks = files_holding(&data_dir, &secret)?;
    assert!(leaks.is_empty(), "{leaks:?}");
    let exported = export_events(&data_dir, "default")?;
    assert_eq!(exported.len(), 3, "{exported:?}");
    assert_eq!(
        exported[0]["text"],
        "the unlock phrase is [FORGOTTEN:00000000]"
    );
    // The rebuilt BM25 index answers from the rewritten log.
    let hits = Command::new(&daemon)
        .args([
            "--data-dir",
            &data,
            "teleport",
            "search",
            "JWT access token",
        ])
        .output()?;
    let found = String::from_utf8_lossy(&hits.stdout);
    assert!(hits.status.success() && found.contains("event"), "{found}");
    Ok(())
}
