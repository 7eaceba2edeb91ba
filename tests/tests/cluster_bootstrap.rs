//! A replica's start when its group's snapshot cannot be used, on three nats-servers
//! clustered on loopback: replica a of group g1 takes a snapshot, which is then
//! replaced in the Object Store by a damaged copy (its description intact, its tar cut
//! in half — what a bad disk or a broken upload would leave). Replica c, whose data dir
//! also holds what a crash during an earlier download left (a partial tar, a staging
//! directory), starts with the default `--bootstrap auto`: it clears the leftovers,
//! fails to bring the snapshot in, says so, and replays the whole log instead. Replica
//! d, with `--bootstrap snapshot`, refuses to start with a clear error and leaves its
//! data dir empty, so that its next start — `--bootstrap replay` — begins afresh. All
//! three end with the same events, and `admin forget` refuses a replica's data dir.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::bail;
use async_nats::jetstream::object_store::ObjectMetadata;
use memory_e2e_tests::{
    cluster_cli, export_events_without_seq, http_get, metric_sum, serve_replica, spawn_replica,
};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

#[path = "support/replicas.rs"]
#[allow(dead_code)]
mod replicas;
use replicas::wait_settled;

fn metric(metrics: &str, name: &str) -> f64 {
    http_get(&format!("http://{metrics}/metrics"))
        .map(|(_, text)| metric_sum(&text, name, &[]))
        .unwrap_or(-1.0)
}

async fn ingest(client: &async_nats::Client, session: &str) -> anyhow::Result<()> {
    let events: Vec<Value> = (0..20_u64)
        .map(|n| {
            json!({"event_id": format!("{session}-{n}"), "session_id": session,
                   "timestamp": 1_790_000_000_000_u64 + n * 1_000, "kind": "user_message",
                   "text": format!("turn {n} of {session}: the cache keeps entries for {n} minutes")})
        })
        .collect();
    let reply = client
        .request("memory.ingest.webapp", serde_json::to_vec(&events)?.into())
        .await?;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    anyhow::ensure!(reply["accepted"].as_u64() == Some(20), "{reply}");
    Ok(())
}

/// Replaces group g1's snapshot with its first half, keeping its description.
/// The offsets where a tar's entries start after the first: where the archive can be
/// cut with a reader seeing a clean end.
fn tar_entry_boundaries(tar_bytes: &[u8]) -> anyhow::Result<Vec<usize>> {
    let mut archive = tar::Archive::new(tar_bytes);
    let mut boundaries = Vec::new();
    for entry in archive.entries()? {
        let offset = usize::try_from(entry?.raw_header_position())?;
        if offset > 0 {
            boundaries.push(offset);
        }
    }
    Ok(boundaries)
}

async fn damage_snapshot(client: &async_nats::Client) -> anyhow::Result<()> {
    let bucket = async_nats::jetstream::new(client.clone())
        .get_object_store("memory_snapshots")
        .await?;
    let info = bucket.info("g1").await?;
    let mut bytes = Vec::new();
    bucket.get("g1").await?.read_to_end(&mut bytes).await?;
    anyhow::ensure!(bytes.len() > 1_024, "a snapshot of {} bytes", bytes.len());
    // Cut at the entry boundary nearest the middle: a tar reader sees a clean end there
    // and unpacks the first half without an error (the store then lacks its last
    // files), so only the size the publisher packed tells the snapshot is incomplete.
    let cut = tar_entry_boundaries(&bytes)?
        .into_iter()
        .min_by_key(|offset| offset.abs_diff(bytes.len() / 2))
        .ok_or_else(|| anyhow::anyhow!("no tar entry in the snapshot"))?;
    bytes.truncate(cut);
    let metadata: HashMap<String, String> = info.metadata.clone();
    bucket
        .put(
            ObjectMetadata {
                name: "g1".to_owned(),
                description: info.description.clone(),
                metadata,
                ..ObjectMetadata::default()
            },
            &mut bytes.as_slice(),
        )
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_brought_in_falls_back_to_a_replay_or_stops_the_start()
-> anyhow::Result<()> {
    let (nats, urls) = memory_e2e_tests::one_group_cluster("")?;
    let client = nats.connect().await?;
    let (dir_a, dir_c, dir_d) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut a, _) = serve_replica(&urls, dir_a.path(), ("a", "g1"), &[])?;
    ingest(&client, "s1").await?;
    wait_settled(&client, &["a"]).await?;
    let snapshot: Value =
        serde_json::from_str(&cluster_cli(&["snapshot", "--node", "a", "--json"], &urls)?)?;
    assert_eq!(snapshot["group"], "g1", "{snapshot}");
    damage_snapshot(&client).await?;
    ingest(&client, "s2").await?;

    // What a crash during an earlier download left in c's data dir.
    let partial_tar = dir_c.path().join(".restore.tar");
    std::fs::write(&partial_tar, b"the first bytes of a tar")?;
    let staging = dir_c.path().join(".snapshot");
    std::fs::create_dir_all(staging.join("store"))?;
    std::fs::write(staging.join("store").join("half-copied"), b"x")?;
    let (mut c, metrics_c) = serve_replica(&urls, dir_c.path(), ("c", "g1"), &[])?;
    assert!(
        c.stderr().contains("replaying the whole log instead")
            || c.stdout().contains("replaying the whole log instead"),
        "c says why it replays: {}",
        c.stderr()
    );
    assert_eq!(
        metric(&metrics_c, "memory_cluster_bootstrap_stream_seq"),
        0.0,
        "c started from no snapshot"
    );
    assert!(
        !partial_tar.exists() && !staging.exists(),
        "leftovers cleared"
    );

    // `--bootstrap snapshot` refuses the damaged snapshot, and empties its data dir.
    let (mut d, _) = spawn_replica(
        &urls,
        dir_d.path(),
        ("d", "g1"),
        &["--bootstrap", "snapshot"],
        &[],
    )?;
    let exit = d.wait_exit(Duration::from_secs(60))?;
    if exit.success() || !d.stderr().contains("cannot start from group g1's snapshot") {
        bail!("d: {exit:?}: {}", d.stderr());
    }
    let left: Vec<String> = std::fs::read_dir(dir_d.path())?
        .map(|entry| entry.map(|entry| entry.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert!(
        left.iter()
            .all(|name| name.ends_with(".lock") || name == "LOCK"),
        "d's data dir keeps nothing of the failed start: {left:?}"
    );
    let (mut d, metrics_d) = spawn_replica(
        &urls,
        dir_d.path(),
        ("d", "g1"),
        &["--bootstrap", "replay"],
        &[],
    )?;
    d.wait_ready(
        &format!("http://{metrics_d}/readyz"),
        Duration::from_secs(60),
    )?;

    wait_settled(&client, &["a", "c", "d"]).await?;
    a.terminate()?;
    c.terminate()?;
    d.terminate()?;
    let events_a = export_events_without_seq(dir_a.path(), "webapp")?;
    assert_eq!(
        events_a
            .iter()
            .filter(|event| event["kind"] == "user_message")
            .count(),
        40
    );
    assert!(
        events_a == export_events_without_seq(dir_c.path(), "webapp")?,
        "c differs"
    );
    assert!(
        events_a == export_events_without_seq(dir_d.path(), "webapp")?,
        "d differs"
    );

    // Forgetting on one replica would leave the log and its peers with the text.
    let forget = std::process::Command::new(memory_e2e_tests::build_daemon()?)
        .args(["--data-dir", &dir_c.path().to_string_lossy()])
        .args(["admin", "forget", "--event", "s1-3", "--project", "webapp"])
        .output()?;
    let said = String::from_utf8_lossy(&forget.stderr);
    assert!(
        !forget.status.success() && said.contains("is a cluster replica's data dir"),
        "{said}"
    );
    assert!(
        events_a == export_events_without_seq(dir_c.path(), "webapp")?,
        "c unchanged"
    );
    Ok(())
}
