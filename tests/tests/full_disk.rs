//! A full disk, for real: the daemon's data dir on a size-limited tmpfs the test mounts
//! (it needs root and the right to mount; where it cannot, it says so and does not
//! run — `MEMORY_TEST_REQUIRE_MOUNT=1` makes that a failure). Ingest fills it down to
//! the store's reserve (`[store] min_free_mb`); the request refused there gets
//! `unavailable` with a clear message and nothing of it is acknowledged; `/readyz`
//! turns 503 naming the reason; queries keep answering from what is there. Once space
//! is freed (the tmpfs grown in place) the same daemon, not restarted, is ready again,
//! ingests, and its projections catch up: every acknowledged event is there once,
//! nothing was dead-lettered.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{NatsServer, export_events, http_get, request_json, serve_daemon};
use serde_json::{Value, json};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> anyhow::Result<Mount> {
        std::fs::create_dir_all(at)?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()?;
        if !output.status.success() {
            bail!("{}", String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(Mount(at.to_path_buf()))
    }

    /// [`Mount::tmpfs`], or `None` (said on stderr) where the test cannot mount and
    /// `MEMORY_TEST_REQUIRE_MOUNT` is not set.
    fn tmpfs_or_skip(at: &Path, size: &str) -> anyhow::Result<Option<Mount>> {
        match Mount::tmpfs(at, size) {
            Ok(mount) => Ok(Some(mount)),
            Err(err) if std::env::var_os("MEMORY_TEST_REQUIRE_MOUNT").is_none() => {
                eprintln!("full_disk: not run, cannot mount a tmpfs here ({err}); it needs root");
                Ok(None)
            }
            Err(err) => Err(err.context("cannot mount a tmpfs")),
        }
    }

    fn resize(&self, size: &str) -> anyhow::Result<()> {
        let output = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .output()?;
        anyhow::ensure!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).output();
    }
}

fn batch(n: u64) -> Value {
    let events: Vec<Value> = (0..100)
        .map(|i| {
            json!({"event_id": format!("b{n}-{i}"), "session_id": format!("s{}", n / 5),
                "timestamp": 1_790_000_000_000_u64 + n * 100_000 + i * 1_000,
                "kind": if i % 2 == 0 { "user_message" } else { "assistant_message" },
                "text": format!("turn {i} of batch {n}: we compared the redis cache and the postgres \
                    table for sessions, measured p99 latency, and decided on a 30 minute TTL; {}",
                    "details ".repeat(20))})
        })
        .collect();
    json!(events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_acknowledges_nothing_unstored_and_resumes_without_a_restart()
-> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let Some(mount) = Mount::tmpfs_or_skip(&root.path().join("disk"), "16m")? else {
        return Ok(());
    };
    let data = mount.0.join("data");
    let nats = NatsServer::start()?;
    let env = [
        ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false"),
        ("AGENT_MEMORY_STORE__MIN_FREE_MB", "6"),
        // Retries every 2 s at most, so that the test sees the catch-up soon.
        ("AGENT_MEMORY_CONSUMERS__RETRY_MAX_MS", "2000"),
    ];
    let (mut daemon, metrics) = serve_daemon(&nats.url(), &data, &env)?;
    let client = nats.connect().await?;

    let (mut acked, message) = fill(&client).await?;
    assert!(message.contains("min_free_mb"), "{message}");

    // Not ready, with the reason; queries still answer.
    let readyz = |want: u16, naming: &'static str| {
        let url = format!("http://{metrics}/readyz");
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let (status, body) = http_get(&url)?;
                if status == want && body.contains(naming) {
                    return anyhow::Ok(());
                }
                if Instant::now() > deadline {
                    bail!("/readyz stayed {status}: {body}");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    readyz(503, "min_free_mb").await?;
    let session = request_json(
        &client,
        "memory.query.full.events.get",
        &json!({"session_id": "s0", "limit": 5}),
    )
    .await?;
    assert!(
        session["events"]
            .as_array()
            .is_some_and(|events| !events.is_empty()),
        "{session}"
    );

    // Space freed in place: the same process is ready again and ingests.
    mount.resize("64m")?;
    readyz(200, "").await?;
    let reply = request_json(&client, "memory.ingest.full", &batch(9_999)).await?;
    assert_eq!(reply["accepted"].as_u64(), Some(100), "{reply}");
    acked.extend((0..100).map(|i| format!("b9999-{i}")));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (cursor, head, healthy, events) = bm25(&client).await?;
        if cursor == head && healthy && events == acked.len() as u64 {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "bm25 cursor {cursor} of {head}, healthy {healthy}, {events} of {} events",
                acked.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let status = request_json(&client, "memory.admin.status", &json!({})).await?;
    assert_eq!(status["dead_letters"].as_u64(), Some(0), "{status}");
    let log = daemon.stderr();
    assert!(
        !log.contains("poisoned"),
        "the store was poisoned: {}",
        log.lines()
            .filter(|l| l.contains("poisoned"))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    );
    daemon.terminate()?;

    all_stored_once(&data, &acked)?;
    drop(mount);
    Ok(())
}

/// Ingests batches of 100 until one is refused: the ids acknowledged before, and the
/// refusal's message (checked: `unavailable`, nothing of it stored, at least 500
/// acknowledged before).
async fn fill(client: &async_nats::Client) -> anyhow::Result<(Vec<String>, String)> {
    let mut acked = Vec::new();
    for n in 0..2_000_u64 {
        let reply = request_json(client, "memory.ingest.full", &batch(n)).await?;
        if reply.get("error").is_some() {
            assert_eq!(reply["error"]["code"], "unavailable", "{reply}");
            let message = reply["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("cannot write") && message.contains("nothing of this request"),
                "{message}"
            );
            assert!(
                acked.len() >= 500,
                "{} acknowledged before the disk filled",
                acked.len()
            );
            return Ok((acked, message.to_owned()));
        }
        anyhow::ensure!(reply["accepted"].as_u64() == Some(100), "{reply}");
        acked.extend((0..100).map(|i| format!("b{n}-{i}")));
    }
    bail!("the disk never filled")
}

/// Every acknowledged event is in the stopped daemon's log, none twice.
fn all_stored_once(data: &Path, acked: &[String]) -> anyhow::Result<()> {
    let stored: Vec<String> = export_events(data, "full")?
        .iter()
        .filter_map(|event| event["event_id"].as_str().map(str::to_owned))
        .collect();
    let unique: std::collections::BTreeSet<&String> = stored.iter().collect();
    anyhow::ensure!(unique.len() == stored.len(), "an event is stored twice");
    let lost: Vec<&String> = acked.iter().filter(|id| !unique.contains(id)).collect();
    anyhow::ensure!(
        lost.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    Ok(())
}

/// Without the reserve (`min_free_mb = 0`) the disk fills under fjall, whose failed
/// write poisons the store for good: the daemon says so and exits with a failure by
/// itself (for its supervisor to restart it) instead of serving on without ever
/// ingesting again; restarted with space freed, every acknowledged event is there and
/// ingest works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_poisoned_by_a_full_disk_stops_the_daemon_for_a_restart() -> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let Some(mount) = Mount::tmpfs_or_skip(&root.path().join("disk"), "12m")? else {
        return Ok(());
    };
    let data = mount.0.join("data");
    let nats = NatsServer::start()?;
    let env = [
        ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false"),
        ("AGENT_MEMORY_STORE__MIN_FREE_MB", "0"),
    ];
    let (mut daemon, _) = serve_daemon(&nats.url(), &data, &env)?;
    let client = nats.connect().await?;
    let (acked, _) = fill(&client).await?;
    let status = daemon
        .wait_exit(Duration::from_secs(30))
        .context("a poisoned store left the daemon running")?;
    assert!(!status.success(), "{status}");
    let log = daemon.stderr();
    assert!(log.contains("poisoned"), "{log}");

    mount.resize("64m")?;
    let (mut daemon, metrics) = serve_daemon(&nats.url(), &data, &env)?;
    let reply = request_json(&client, "memory.ingest.full", &batch(9_999)).await?;
    assert_eq!(reply["accepted"].as_u64(), Some(100), "{reply}");
    let (status, body) = http_get(&format!("http://{metrics}/readyz"))?;
    assert_eq!(status, 200, "{body}");
    daemon.terminate()?;
    all_stored_once(&data, &acked)?;
    drop(mount);
    Ok(())
}

/// Where the BM25 index stands: (committed cursor, log head, healthy, event documents).
async fn bm25(client: &async_nats::Client) -> anyhow::Result<(u64, u64, bool, u64)> {
    let status = request_json(client, "memory.query.full.teleport.status", &json!({})).await?;
    Ok((
        status["bm25_cursor"].as_u64().unwrap_or(0),
        status["bm25_log_head"].as_u64().unwrap_or(u64::MAX),
        status["bm25_healthy"].as_bool().unwrap_or(false),
        status["bm25_doc_counts"]["event"].as_u64().unwrap_or(0),
    ))
}

/// Makes a directory tree read-only for everyone, root included (`chattr -R +i`: no
/// file in it can be created, renamed, removed or written), and writable again when
/// dropped.
struct Immutable(PathBuf);

impl Immutable {
    fn set(dir: &Path) -> anyhow::Result<Immutable> {
        let output = Command::new("chattr")
            .arg("-R")
            .arg("+i")
            .arg(dir)
            .output()?;
        if !output.status.success() {
            bail!("{}", String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(Immutable(dir.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr")
            .arg("-R")
            .arg("-i")
            .arg(&self.0)
            .output();
    }
}

/// The BM25 index directory turns read-only (immutable, for root too) while events keep
/// coming: ingest goes on (the index is not on its path), queries keep answering, the
/// index says it is behind and unhealthy, its failed commits are retried and never
/// parked, and once the directory is writable again the index catches up by itself —
/// every event indexed, none in the dead letters — without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_directory_that_turns_read_only_catches_up_once_writable() -> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let nats = NatsServer::start()?;
    let data = root.path().join("data");
    let index_dir = root.path().join("bm25");
    let index = index_dir.display().to_string();
    let env = [
        ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false"),
        ("AGENT_MEMORY_TELEPORT__BM25__INDEX_PATH", index.as_str()),
        // Retries every 2 s at most, so that the test sees the catch-up soon.
        ("AGENT_MEMORY_CONSUMERS__RETRY_MAX_MS", "2000"),
    ];
    let (mut daemon, _) = serve_daemon(&nats.url(), &data, &env)?;
    let client = nats.connect().await?;
    let reply = request_json(&client, "memory.ingest.full", &batch(0)).await?;
    assert_eq!(reply["accepted"].as_u64(), Some(100), "{reply}");
    let caught_up = |wanted: u64, within: Duration| {
        let client = client.clone();
        async move {
            let deadline = Instant::now() + within;
            loop {
                let (cursor, head, healthy, events) = bm25(&client).await?;
                if cursor == head && healthy && events == wanted {
                    return anyhow::Ok(());
                }
                if Instant::now() > deadline {
                    bail!(
                        "bm25 cursor {cursor} of {head}, healthy {healthy}, {events} events indexed, {wanted} wanted"
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    caught_up(100, Duration::from_secs(60)).await?;

    let read_only = match Immutable::set(&index_dir) {
        Ok(read_only) => read_only,
        Err(err) if std::env::var_os("MEMORY_TEST_REQUIRE_MOUNT").is_none() => {
            eprintln!(
                "full_disk: read-only index not run, cannot chattr here ({err}); it needs root"
            );
            daemon.terminate()?;
            return Ok(());
        }
        Err(err) => return Err(err.context("cannot make the index directory read-only")),
    };
    for n in 1..=3 {
        let reply = request_json(&client, "memory.ingest.full", &batch(n)).await?;
        assert_eq!(
            reply["accepted"].as_u64(),
            Some(100),
            "ingest does not wait for the index: {reply}"
        );
    }
    // The index cannot commit: it stays behind and says so; queries still answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (cursor, head, healthy, _) = bm25(&client).await?;
        if cursor < head && !healthy {
            break;
        }
        if Instant::now() > deadline {
            bail!("a read-only index went unnoticed: cursor {cursor} of {head}, healthy {healthy}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = request_json(
        &client,
        "memory.query.full.search",
        &json!({"query": "which TTL did we decide on for sessions"}),
    )
    .await?;
    assert!(answer.get("error").is_none(), "{answer}");
    let events = request_json(
        &client,
        "memory.query.full.events.get",
        &json!({"session_id": "s0", "limit": 5}),
    )
    .await?;
    assert!(
        events["events"].as_array().is_some_and(|e| !e.is_empty()),
        "{events}"
    );

    drop(read_only);
    if let Err(err) = caught_up(400, Duration::from_secs(90)).await {
        let log = daemon.stderr();
        let tail: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("entry failed") || line.contains("parked"))
            .take(8)
            .chain(
                log.lines()
                    .rev()
                    .take(10)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev(),
            )
            .collect();
        bail!("{err}; the daemon's log:\n{}", tail.join("\n"));
    }
    let status = request_json(&client, "memory.admin.status", &json!({})).await?;
    let log = daemon.stderr();
    let parked: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("parked") || line.contains("entry failed"))
        .take(6)
        .collect();
    assert_eq!(
        status["dead_letters"].as_u64(),
        Some(0),
        "{status}\n{}",
        parked.join("\n")
    );
    daemon.terminate()?;
    Ok(())
}
