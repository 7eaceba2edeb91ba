//! Replica snapshots end to end, on three nats-servers clustered on loopback: replica a
//! of group g1 (with both accelerator indexes, the real embedding model) takes a
//! snapshot while events keep arriving through the gateway, uploads it to the Object
//! Store, and `cluster status` shows it; replica b then starts on an empty data dir
//! from that snapshot (`--bootstrap snapshot`) and replays only the log after it —
//! without re-embedding or re-indexing what the snapshot held — and ends with the same
//! events, ideas, TOC, segments, index sizes and search answers (events, TOC nodes)
//! as a. A replica of a group without a
//! snapshot refuses `--bootstrap snapshot` with a clear error.

use std::time::Duration;

use anyhow::{Context, bail};
use memory_e2e_tests::{
    build_daemon, cluster_cli, export_events_without_seq, http_get, metric_sum, serve_replica,
    spawn_replica,
};
use serde_json::{Value, json};

#[path = "support/replicas.rs"]
mod replicas;
use replicas::{projections, wait_settled};

const PROJECTS: [&str; 3] = ["webapp", "infra", "mobile"];
/// Both indexes on (the helper turns vectors off by default).
const ENV: &[(&str, &str)] = &[("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "true")];

/// Sends `count` events per project through the gateway, in sessions of 20 turns;
/// the log's last sequence after them.
async fn ingest(client: &async_nats::Client, round: u32, count: u32) -> anyhow::Result<u64> {
    let mut last = 0;
    for project in PROJECTS {
        let events: Vec<Value> = (0..count)
            .map(|n| {
                let topic = ["JWT expiry", "the redis cache", "the deploy pipeline"][n as usize % 3];
                json!({"event_id": format!("r{round}-{n}"), "session_id": format!("r{round}-s{}", n / 20),
                    "timestamp": 1_790_000_000_000_u64 + u64::from(round) * 10_000_000 + u64::from(n) * 1_000,
                    "kind": if n % 2 == 0 { "user_message" } else { "assistant_message" },
                    "text": format!("round {round} turn {n} in {project}: we decided about {topic} after comparing option {n}")})
            })
            .collect();
        for chunk in events.chunks(50) {
            let reply = tokio::time::timeout(
                Duration::from_secs(30),
                client.request(
                    format!("memory.ingest.{project}"),
                    serde_json::to_vec(chunk)?.into(),
                ),
            )
            .await??;
            let reply: Value = serde_json::from_slice(&reply.payload)?;
            anyhow::ensure!(
                reply["accepted"].as_u64() == Some(chunk.len() as u64),
                "{reply}"
            );
            last = reply["last_seq"].as_u64().context("no last_seq")?;
        }
    }
    Ok(last)
}

fn metric(metrics: &str, name: &str, labels: &[&str]) -> f64 {
    http_get(&format!("http://{metrics}/metrics"))
        .map(|(_, text)| metric_sum(&text, name, labels))
        .unwrap_or(-1.0)
}

/// Waits up to 120 s until the replica's vector index has embedded everything it
/// applied (the status's consumers do not wait for the vector index's commits).
async fn wait_embedded(metrics: &str) -> anyhow::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while metric(metrics, "vector_index_lag", &[]) != 0.0
        || metric(metrics, "vector_index_doc_count", &[]) <= 0.0
    {
        if std::time::Instant::now() > deadline {
            bail!(
                "the vector index never caught up: lag {}",
                metric(metrics, "vector_index_lag", &[])
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// The JSON `memory-daemon --data-dir D <args…>` prints (embedded mode, the daemon
/// stopped; the vector index off: these calls read the BM25 index).
fn embedded_json(data_dir: &std::path::Path, args: &[&str]) -> anyhow::Result<Value> {
    let output = std::process::Command::new(build_daemon()?)
        .args(["--data-dir", &data_dir.to_string_lossy()])
        .args(args)
        .env("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false")
        .output()?;
    if !output.status.success() {
        bail!(
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// The BM25 index's documents per type of a stopped replica's data dir.
fn bm25_counts(
    data_dir: &std::path::Path,
) -> anyhow::Result<std::collections::BTreeMap<String, u64>> {
    let status = embedded_json(data_dir, &["teleport", "status", "--json"])?;
    Ok(serde_json::from_value(status["bm25_doc_counts"].clone())?)
}

/// The ids of the documents of `doc_type` `teleport search` (BM25) finds for `query` in
/// `project` of a stopped replica's data dir, sorted.
fn bm25_ids(
    data_dir: &std::path::Path,
    project: &str,
    query: &str,
    doc_type: &str,
) -> anyhow::Result<Vec<String>> {
    let answer = embedded_json(
        data_dir,
        &[
            "teleport",
            "search",
            query,
            "--project",
            project,
            "--type",
            doc_type,
            "--limit",
            "50",
            "--json",
        ],
    )?;
    let mut ids: Vec<String> = answer["results"]
        .as_array()
        .context("no results")?
        .iter()
        .filter_map(|hit| hit["doc_id"].as_str().map(str::to_owned))
        .collect();
    ids.sort();
    Ok(ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_replica_starts_from_its_groups_snapshot_and_replays_only_the_rest()
-> anyhow::Result<()> {
    let mapping = "mappings = {\n  \"memory.query.*.>\": \"memory.q.{{partition(8,1)}}.{{wildcard(1)}}.>\"\n}\n";
    let (nats, urls) = memory_e2e_tests::one_group_cluster(mapping)?;
    let client = nats.connect().await?;
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut a, metrics_a) = serve_replica(&urls, dir_a.path(), ("a", "g1"), ENV)?;
    ingest(&client, 0, 200).await?;
    wait_settled(&client, &["a"]).await?;
    wait_embedded(&metrics_a).await?;

    // The snapshot is taken while the gateway keeps taking events.
    let (snapshot, more) = tokio::join!(
        tokio::task::spawn_blocking({
            let urls = urls.clone();
            move || cluster_cli(&["snapshot", "--node", "a", "--json"], &urls)
        }),
        ingest(&client, 1, 60)
    );
    let snapshot: Value = serde_json::from_str(&snapshot??)?;
    more?;
    let at = snapshot["manifest"]["store"]["applied_stream_seq"]
        .as_u64()
        .context("no position")?;
    assert!(at >= 600, "{snapshot}");
    assert_eq!(snapshot["group"], "g1", "{snapshot}");
    assert_eq!(
        snapshot["partitions"],
        json!([0, 1, 2, 3, 4, 5, 6, 7]),
        "{snapshot}"
    );
    for index in ["bm25", "vector"] {
        let part = &snapshot["manifest"][index];
        assert!(
            part["files"].as_u64().unwrap_or(0) > 0,
            "{index}: {snapshot}"
        );
        // a was caught up before the snapshot: its indexes hold nearly everything.
        assert!(
            part["cursor"].as_u64().unwrap_or(0) > 600,
            "{index}: {snapshot}"
        );
    }
    let status: Value = serde_json::from_str(&cluster_cli(&["status", "--json"], &urls)?)?;
    assert_eq!(status["snapshots"]["g1"]["node_id"], "a", "{status}");
    assert_eq!(
        status["snapshots"]["g1"]["manifest"]["store"]["applied_stream_seq"], at,
        "{status}"
    );
    let last = ingest(&client, 2, 40).await?;

    // b starts from the snapshot and replays only what came after it.
    let (mut b, metrics_b) = serve_replica(&urls, dir_b.path(), ("b", "g1"), ENV)?;
    assert_eq!(
        metric(&metrics_b, "memory_cluster_bootstrap_stream_seq", &[]) as u64,
        at
    );
    assert!(metric(&metrics_b, "memory_cluster_bootstrap_seconds", &[]) > 0.0);
    wait_settled(&client, &["a", "b"]).await?;
    wait_embedded(&metrics_a).await?;
    wait_embedded(&metrics_b).await?;
    // The vector index came over whole and both hold the same documents.
    let (vectors_a, vectors_b) = (
        metric(&metrics_a, "vector_index_doc_count", &[]),
        metric(&metrics_b, "vector_index_doc_count", &[]),
    );
    assert!(
        vectors_a > 1_000.0 && vectors_b == vectors_a,
        "vector documents: a {vectors_a}, b {vectors_b}"
    );
    assert!(
        b.stderr().contains("bm25=true vector=true left_out=[]"),
        "{}",
        b.stderr()
    );
    let applied_b = metric(&metrics_b, "memory_cluster_applied_stream_seq", &[]) as u64;
    assert_eq!(applied_b, last);
    // What the snapshot held was neither embedded nor indexed again by b.
    let embedded_a = metric(&metrics_a, "embeddings_total", &["use=\"index\""]);
    let embedded_b = metric(&metrics_b, "embeddings_total", &["use=\"index\""]);
    assert!(
        embedded_b > 0.0 && embedded_b < embedded_a / 2.0,
        "b embedded {embedded_b} texts, a {embedded_a}; snapshot {snapshot}"
    );
    let added_a = metric(&metrics_a, "bm25_index_operations_total", &["op=\"add\""]);
    let added_b = metric(&metrics_b, "bm25_index_operations_total", &["op=\"add\""]);
    assert!(
        added_b > 0.0 && added_b < added_a / 2.0,
        "b indexed {added_b} documents, a {added_a}"
    );

    // A group without a snapshot cannot start a replica from one.
    let (mut c, _) = spawn_replica(
        &urls,
        dir_c.path(),
        ("c", "g2"),
        &["--bootstrap", "snapshot"],
        &[],
    )?;
    let exit = c.wait_exit(Duration::from_secs(60))?;
    assert!(
        !exit.success() && c.stderr().contains("group g2 has no snapshot yet"),
        "{}",
        c.stderr()
    );

    a.terminate()?;
    b.terminate()?;
    // The same ideas graph, though b extracted the tail in other batches than a.
    let ideas = |dir: &std::path::Path| -> anyhow::Result<Vec<(String, String, String)>> {
        let store = memory_store::Store::open(dir, &memory_store::StoreOptions::default())?;
        let mut ideas: Vec<(String, String, String)> = memory_projections::IdeaGraph::open(&store)?
            .every_idea()?
            .into_iter()
            .map(|idea| (idea.project_id, idea.idea_id, idea.content))
            .collect();
        ideas.sort();
        Ok(ideas)
    };
    let (ideas_a, ideas_b) = (ideas(dir_a.path())?, ideas(dir_b.path())?);
    assert!(!ideas_a.is_empty());
    assert!(
        ideas_a == ideas_b,
        "the replicas' ideas differ: a {}, b {}",
        ideas_a.len(),
        ideas_b.len()
    );
    let (counts_a, counts_b) = (bm25_counts(dir_a.path())?, bm25_counts(dir_b.path())?);
    assert!(
        counts_a.get("event") == Some(&900) && counts_a == counts_b,
        "a {counts_a:?}, b {counts_b:?}"
    );
    for project in PROJECTS {
        let (events_a, events_b) = (
            export_events_without_seq(dir_a.path(), project)?,
            export_events_without_seq(dir_b.path(), project)?,
        );
        assert_eq!(events_a.len(), 300, "{project}");
        assert!(
            events_a == events_b,
            "{project}: the replicas' events differ"
        );
        for (query, doc_type) in [
            ("JWT expiry", "event"),
            ("redis cache option 7", "toc_node"),
        ] {
            let (found_a, found_b) = (
                bm25_ids(dir_a.path(), project, query, doc_type)?,
                bm25_ids(dir_b.path(), project, query, doc_type)?,
            );
            assert!(!found_a.is_empty(), "{project} {query}");
            assert_eq!(found_a, found_b, "{project} {query}");
        }
    }
    let (toc_a, segments_a, _) = projections(dir_a.path())?;
    let (toc_b, segments_b, _) = projections(dir_b.path())?;
    assert!(toc_a.len() > 10, "{}", toc_a.len());
    assert!(toc_a == toc_b, "the replicas' TOCs differ");
    assert!(segments_a == segments_b, "the replicas' segments differ");
    assert!(
        b.stderr().contains("started from the group's snapshot")
            || b.stdout().contains("started from the group's snapshot"),
        "{}",
        b.stderr()
    );
    Ok(())
}

/// The group's lease holder takes snapshots on its schedule, without being asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_holder_takes_snapshots_on_its_schedule() -> anyhow::Result<()> {
    let (nats, urls) = memory_e2e_tests::one_group_cluster("")?;
    let client = nats.connect().await?;
    let dir = tempfile::tempdir()?;
    let (mut a, metrics) = spawn_replica(
        &urls,
        dir.path(),
        ("a", "g1"),
        &["--snapshot-interval-secs", "2"],
        &[],
    )?;
    a.wait_ready(&format!("http://{metrics}/readyz"), Duration::from_secs(60))?;
    let last = ingest(&client, 0, 20).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status: Value = serde_json::from_str(&cluster_cli(&["status", "--json"], &urls)?)?;
        let snapshot = &status["snapshots"]["g1"];
        if snapshot["node_id"] == "a"
            && snapshot["manifest"]["store"]["applied_stream_seq"].as_u64() == Some(last)
        {
            break;
        }
        if std::time::Instant::now() > deadline {
            bail!("no scheduled snapshot at {last}: {status}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The snapshot is counted once its upload returned, a moment after the group's
    // status shows it.
    let published = || {
        metric(
            &metrics,
            "memory_cluster_snapshots_total",
            &["outcome=\"published\""],
        )
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while published() < 1.0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(published() >= 1.0);
    assert_eq!(
        metric(
            &metrics,
            "memory_cluster_snapshots_total",
            &["outcome=\"failed\""]
        ),
        0.0
    );
    a.terminate()?;
    Ok(())
}
