//! A full disk, for real: the daemon's data dir on a size-limited tmpfs the test mounts
//! (it needs root and the right to mount; where it cannot, it says so and does not
//! run — `MEMORY_TEST_REQUIRE_MOUNT=1` makes that a failure). Ingest fills it; the
//! request whose write fails gets `unavailable` with a clear message and nothing of it
//! is acknowledged; `/readyz` turns 503 naming the store's error; queries keep
//! answering from what is there. With space freed, a restart (fjall poisons a store
//! whose write failed) recovers: every acknowledged event is there, and ingest works
//! again.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{NatsServer, export_events, http_get, request_json, serve_daemon};
use serde_json::{Value, json};

const ENV: &[(&str, &str)] = &[("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false")];

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
async fn a_full_disk_acknowledges_nothing_unstored_and_says_so() -> anyhow::Result<()> {
    let root = tempfile::tempdir()?;
    let mount = match Mount::tmpfs(&root.path().join("disk"), "12m") {
        Ok(mount) => mount,
        Err(err) if std::env::var_os("MEMORY_TEST_REQUIRE_MOUNT").is_none() => {
            eprintln!("full_disk: not run, cannot mount a tmpfs here ({err}); it needs root");
            return Ok(());
        }
        Err(err) => return Err(err.context("cannot mount a tmpfs")),
    };
    let data = mount.0.join("data");
    let nats = NatsServer::start()?;
    let (mut daemon, metrics) = serve_daemon(&nats.url(), &data, ENV)?;
    let client = nats.connect().await?;

    let mut acked = Vec::new();
    let mut refusal = None;
    for n in 0..2_000_u64 {
        let reply = request_json(&client, "memory.ingest.full", &batch(n)).await?;
        if reply.get("error").is_some() {
            refusal = Some(reply);
            break;
        }
        anyhow::ensure!(reply["accepted"].as_u64() == Some(100), "{reply}");
        acked.extend((0..100).map(|i| format!("b{n}-{i}")));
    }
    let refusal = refusal.context("the disk never filled")?;
    assert_eq!(refusal["error"]["code"], "unavailable", "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot write") && message.contains("nothing of this request"),
        "{message}"
    );
    assert!(
        acked.len() >= 500,
        "{} acknowledged before the disk filled",
        acked.len()
    );

    // Not ready, with the reason; queries still answer.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = http_get(&format!("http://{metrics}/readyz"))?;
        if status == 503 && body.contains("cannot write") {
            break;
        }
        if Instant::now() > deadline {
            bail!("/readyz stayed {status}: {body}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let root_node = request_json(
        &client,
        "memory.query.full.events.get",
        &json!({"session_id": "s0", "limit": 5}),
    )
    .await?;
    assert!(
        root_node["events"]
            .as_array()
            .is_some_and(|events| !events.is_empty()),
        "{root_node}"
    );
    let _ = daemon.terminate();

    // Space freed, a restart: everything acknowledged is there, and ingest works again.
    mount.resize("64m")?;
    let (mut daemon, metrics) = serve_daemon(&nats.url(), &data, ENV)?;
    let reply = request_json(&client, "memory.ingest.full", &batch(9_999)).await?;
    assert_eq!(reply["accepted"].as_u64(), Some(100), "{reply}");
    let (status, body) = http_get(&format!("http://{metrics}/readyz"))?;
    assert_eq!(status, 200, "{body}");
    daemon.terminate()?;
    let stored: std::collections::BTreeSet<String> = export_events(&data, "full")?
        .iter()
        .filter_map(|event| event["event_id"].as_str().map(str::to_owned))
        .collect();
    let lost: Vec<&String> = acked.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged events lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    drop(mount);
    Ok(())
}
