//! Backups end to end, with a real nats-server and the real daemon with both indexes
//! (the real embedding model): `admin backup --nats-url` while a producer keeps
//! ingesting, `admin restore` into an empty data dir (and a clear refusal for a data
//! dir that is not), and a daemon started on the restored data dir that holds exactly
//! the events up to the backup's position and answers the same as the original.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{
    NatsServer, build_daemon, http_get, metric_sum, request_json, serve_daemon,
};
use serde_json::{Value, json};

const ENV: &[(&str, &str)] = &[("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "true")];

/// The sample conversations, through request/reply ingest, by project.
async fn ingest_sample(client: &async_nats::Client) -> anyhow::Result<()> {
    let path = memory_e2e_tests::repo_root().join("sample/conversations.jsonl");
    let mut by_project: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    for line in std::fs::read_to_string(path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let event: Value = serde_json::from_str(line)?;
        let project = event["project_id"].as_str().unwrap_or("default").to_owned();
        by_project.entry(project).or_default().push(event);
    }
    for (project, events) in by_project {
        for chunk in events.chunks(100) {
            let reply =
                request_json(client, &format!("memory.ingest.{project}"), &json!(chunk)).await?;
            anyhow::ensure!(
                reply["accepted"].as_u64() == Some(chunk.len() as u64),
                "{reply}"
            );
        }
    }
    Ok(())
}

/// Waits until every consumer is idle and the vector index has embedded everything.
async fn wait_caught_up(client: &async_nats::Client, metrics: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let report = request_json(client, "memory.admin.status", &json!({})).await?;
        let idle = report["consumers"]
            .as_array()
            .is_some_and(|all| !all.is_empty() && all.iter().all(|c| c["lag"].as_u64() == Some(0)));
        let embedded = http_get(&format!("http://{metrics}/metrics"))
            .map(|(_, text)| {
                text.contains("\nvector_index_lag ")
                    && metric_sum(&text, "vector_index_lag", &[]) == 0.0
                    && metric_sum(&text, "vector_index_doc_count", &[]) > 0.0
            })
            .unwrap_or(false);
        if idle && embedded {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("never caught up: {report}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// What project `webapp` answers: its tree, a session's events, and the best hits of a
/// search (the tier that answered and its first results).
async fn answers(client: &async_nats::Client) -> anyhow::Result<Vec<Value>> {
    let call = |method: &str, body: Value| {
        let subject = format!("memory.query.webapp.{method}");
        async move { request_json(client, &subject, &body).await }
    };
    let root = call("toc.root", json!({})).await?;
    let events = call(
        "events.get",
        json!({"session_id": "webapp-s01", "limit": 100}),
    )
    .await?;
    let search = call(
        "search",
        json!({"query": "what did we decide about JWT expiry?"}),
    )
    .await?;
    let top: Vec<Value> = search["results"]
        .as_array()
        .context("no results")?
        .iter()
        .take(3)
        .map(|hit| {
            json!([
                hit["doc_type"],
                hit["doc_id"],
                hit["node_id"],
                hit["grip_id"]
            ])
        })
        .collect();
    Ok(vec![root, events, search["tier"].clone(), json!(top)])
}

fn admin(data_dir: &std::path::Path, args: &[&str]) -> anyhow::Result<std::process::Output> {
    Ok(Command::new(build_daemon()?)
        .args(["--data-dir", &data_dir.to_string_lossy(), "admin"])
        .args(args)
        .env("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "true")
        .output()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_into_a_daemon_that_answers_the_same()
-> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let (original, backups, restored) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut daemon, metrics) = serve_daemon(&nats.url(), original.path(), ENV)?;
    let client = nats.connect().await?;
    ingest_sample(&client).await?;
    wait_caught_up(&client, &metrics).await?;

    // A producer writes to another project all through the backup.
    let (stop, acked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let producer = tokio::spawn({
        let (client, stop, acked) = (client.clone(), stop.clone(), acked.clone());
        async move {
            let mut batch = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                let events: Vec<Value> = (0..20)
                    .map(|n| json!({"event_id": format!("n{batch}-{n}"), "session_id": format!("noise-{}", batch / 10),
                        "timestamp": 1_790_000_000_000_u64 + batch * 100_000 + n * 1_000,
                        "kind": "user_message", "text": format!("zebra quartz nebula {batch} {n}")}))
                    .collect();
                let reply = request_json(&client, "memory.ingest.noise", &json!(events)).await?;
                anyhow::ensure!(reply["accepted"].as_u64() == Some(20), "{reply}");
                acked.fetch_add(20, Ordering::Relaxed);
                batch += 1;
            }
            anyhow::Ok(())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let to = backups.path().join("nightly");
    let output = tokio::task::spawn_blocking({
        let (to, url, data) = (to.clone(), nats.url(), original.path().to_path_buf());
        move || {
            admin(
                &data,
                &[
                    "backup",
                    "--to",
                    &to.to_string_lossy(),
                    "--nats-url",
                    &url,
                    "--json",
                ],
            )
        }
    })
    .await??;
    anyhow::ensure!(
        output.status.success(),
        "backup: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout)?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    producer.await??;
    let during = acked.load(Ordering::Relaxed);
    assert!(
        during >= 40,
        "the producer went on during the backup: {during} events"
    );
    let position = report["manifest"]["store"]["outbox_head"]
        .as_u64()
        .context("no position")?;
    for index in ["bm25", "vector"] {
        assert!(
            report["manifest"][index]["cursor"].as_u64().unwrap_or(0) > 0,
            "{index}: {report}"
        );
    }
    assert!(
        to.join(memory_projections::snapshot::MANIFEST_FILE)
            .exists(),
        "{report}"
    );
    // A backup never lands on one already there.
    let again = tokio::task::spawn_blocking({
        let (to, url, data) = (to.clone(), nats.url(), original.path().to_path_buf());
        move || {
            admin(
                &data,
                &["backup", "--to", &to.to_string_lossy(), "--nats-url", &url],
            )
        }
    })
    .await??;
    assert!(
        !again.status.success() && String::from_utf8_lossy(&again.stderr).contains("not empty"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    wait_caught_up(&client, &metrics).await?;
    let before = answers(&client).await?;
    daemon.terminate()?;

    // Restoring into a data dir that holds a store is refused; into an empty one works.
    let refused = admin(
        original.path(),
        &["restore", "--from", &to.to_string_lossy()],
    )?;
    assert!(
        !refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("not empty"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let data = restored.path().join("data");
    let output = admin(
        &data,
        &["restore", "--from", &to.to_string_lossy(), "--json"],
    )?;
    anyhow::ensure!(
        output.status.success(),
        "restore: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let restore: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(restore["installed"]["bm25"], true, "{restore}");
    assert_eq!(restore["installed"]["vector"], true, "{restore}");
    assert_eq!(restore["outbox_head"].as_u64(), Some(position));
    assert!(
        to.join(memory_projections::snapshot::MANIFEST_FILE)
            .exists(),
        "the backup is left as it was"
    );
    // The redaction key came along: the same secret keeps the same tag.
    assert_eq!(
        std::fs::read(data.join("redaction.key"))?,
        std::fs::read(original.path().join("redaction.key"))?
    );
    // The backup's files are its own (no hard link into a live index).
    fn all_single(dir: &std::path::Path) -> anyhow::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let single = if path.is_dir() {
                all_single(&path)?
            } else {
                std::fs::metadata(&path)?.nlink() == 1
            };
            if !single {
                return Ok(false);
            }
        }
        Ok(true)
    }
    assert!(all_single(&to)?, "a backup file is linked elsewhere");

    let (mut back, metrics) = serve_daemon(&nats.url(), &data, ENV)?;
    wait_caught_up(&client, &metrics).await?;
    let after = answers(&client).await?;
    back.terminate()?;
    assert_eq!(
        after, before,
        "the restored daemon answers as the original did"
    );
    // Exactly the log up to the backup's position; after it, only the restored
    // daemon's own `memory_recalled` records of the searches above.
    let log = |dir: &std::path::Path| -> anyhow::Result<Vec<(u64, memory_types::Event)>> {
        let store = memory_store::Store::open(dir, &memory_store::StoreOptions::default())?;
        let mut events = Vec::new();
        let mut after = memory_store::OutboxSeq::ZERO;
        loop {
            let items = store.read_feed(after, 1_000)?;
            let Some(last) = items.last().map(memory_store::FeedItem::seq) else {
                break;
            };
            for item in items {
                if let memory_store::FeedItem::Event { seq, event } = item {
                    events.push((seq.0, event));
                }
            }
            after = last;
        }
        Ok(events)
    };
    let (original_log, restored_log) = (log(original.path())?, log(&data)?);
    let cut = |log: &[(u64, memory_types::Event)]| -> Vec<(u64, memory_types::Event)> {
        log.iter()
            .filter(|(seq, _)| *seq <= position)
            .cloned()
            .collect()
    };
    assert!(cut(&original_log).len() > 1_000, "{}", original_log.len());
    assert!(
        cut(&original_log) == cut(&restored_log),
        "the logs up to the backup differ"
    );
    assert!(
        restored_log
            .iter()
            .filter(|(seq, _)| *seq > position)
            .all(|(_, event)| event.kind == memory_types::EventKind::MemoryRecalled),
        "only the restored daemon's own records follow the backup"
    );
    assert!(
        original_log.len() > cut(&original_log).len() + 20,
        "events the producer sent after the backup are not in it"
    );
    Ok(())
}
