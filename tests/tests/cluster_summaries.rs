//! Model summaries in cluster mode, on three nats-servers clustered on loopback, with a
//! scripted OpenAI-compatible server as the model: replicas a and b of group g1 both
//! have `[llm] summaries` on, yet only the group's lease holder asks the model — once
//! per final TOC node — and publishes each answer to the log as a sealed `toc_summary`;
//! both replicas end with the same TOC, every node carrying the model's summary. A third
//! replica, c, with no model configured, replays the log from the start and ends with
//! the very same TOC: the summaries are in the log, not in a replica.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{http_get, metric_sum, serve_replica};
use memory_llm::testing::{ScriptedResponse, ScriptedServer};
use serde_json::{Value, json};

#[path = "support/replicas.rs"]
mod replicas;
use replicas::{projections, wait_settled};

const TITLE: &str = "Model: the JWT expiry decision";

fn metric(metrics: &str, name: &str, labels: &[&str]) -> f64 {
    http_get(&format!("http://{metrics}/metrics"))
        .map(|(_, text)| metric_sum(&text, name, labels))
        .unwrap_or(-1.0)
}

/// Two sessions of `webapp` through the gateway, on one day: the first ends with a
/// `session_end`, the second stays open until the lease holder closes it for being idle.
async fn ingest(client: &async_nats::Client) -> anyhow::Result<()> {
    let mut events = Vec::new();
    for (session, start) in [("s1", 1_790_000_000_000_u64), ("s2", 1_790_003_600_000)] {
        for n in 0..6_u64 {
            events.push(json!({
                "event_id": format!("{session}-{n}"), "session_id": session,
                "timestamp": start + n * 1_000,
                "kind": if n % 2 == 0 { "user_message" } else { "assistant_message" },
                "text": format!("turn {n} of {session}: we decided the JWT expiry is 15 minutes after comparing option {n}"),
            }));
        }
        if session == "s1" {
            events.push(json!({"event_id": "s1-end", "session_id": "s1",
                "timestamp": start + 5_500, "kind": "session_end"}));
        }
    }
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        client.request("memory.ingest.webapp", serde_json::to_vec(&events)?.into()),
    )
    .await??;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    anyhow::ensure!(
        reply["accepted"].as_u64() == Some(events.len() as u64),
        "{reply}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_asks_the_model_and_every_replica_shows_its_summaries()
-> anyhow::Result<()> {
    let answer = json!({"title": TITLE, "summary": "The access token now expires after 15 minutes.",
        "bullets": [{"text": "JWT expiry set to 15 minutes", "grips": [1]}],
        "keywords": ["jwt", "expiry"]});
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(&answer.to_string()); 100]);
    let base_url = server.base_url();
    let llm = [
        &memory_e2e_tests::scripted_llm_env(&base_url)[..],
        &[
            ("AGENT_MEMORY_INDEXING__ENGINE", "heuristic"),
            ("AGENT_MEMORY_TOC__SEGMENT_GAP_SECS", "3"),
        ],
    ]
    .concat();
    let (nats, urls) = memory_e2e_tests::one_group_cluster("")?;
    let client = nats.connect().await?;
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut a, metrics_a) = serve_replica(&urls, dir_a.path(), ("a", "g1"), &llm)?;
    let (mut b, metrics_b) = serve_replica(&urls, dir_b.path(), ("b", "g1"), &llm)?;
    ingest(&client).await?;

    // Two segments, then their day, week, month and year: six nodes, bottom up.
    let published = || {
        metric(
            &metrics_a,
            "memory_cluster_model_summaries_total",
            &["outcome=\"published\""],
        )
        .max(0.0)
            + metric(
                &metrics_b,
                "memory_cluster_model_summaries_total",
                &["outcome=\"published\""],
            )
            .max(0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while published() < 6.0 {
        if Instant::now() > deadline {
            bail!(
                "the lease holder published {} summaries; the model was asked {} times",
                published(),
                server.num_requests()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_settled(&client, &["a", "b"]).await?;
    // Settled is not enough for the last one to be in both TOCs: wait for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let applied = |metrics: &str| {
        metric(
            metrics,
            "memory_toc_model_summaries_total",
            &["outcome=\"applied\""],
        ) + metric(
            metrics,
            "memory_toc_model_summaries_total",
            &["outcome=\"waiting\""],
        )
    };
    while applied(&metrics_a) < 6.0 || applied(&metrics_b) < 6.0 {
        if Instant::now() > deadline {
            bail!("a took {}, b {}", applied(&metrics_a), applied(&metrics_b));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(published(), 6.0, "one summary per node");
    assert_eq!(
        server.num_requests(),
        6,
        "the model is asked once per node, by one node"
    );
    let holders = [&metrics_a, &metrics_b]
        .iter()
        .filter(|metrics| metric(metrics, "memory_cluster_model_summaries_total", &[]) > 0.0)
        .count();
    assert_eq!(holders, 1, "only the lease holder asks the model");
    // c, without a model, replays the whole log and shows the same summaries.
    let (mut c, _) = serve_replica(
        &urls,
        dir_c.path(),
        ("c", "g1"),
        &[("AGENT_MEMORY_TOC__SEGMENT_GAP_SECS", "3")],
    )?;
    wait_settled(&client, &["a", "b", "c"]).await?;
    a.terminate()?;
    b.terminate()?;
    c.terminate()?;
    let (toc_a, segments_a, open_a) = projections(dir_a.path())?;
    let (toc_b, segments_b, _) = projections(dir_b.path())?;
    let (toc_c, segments_c, _) = projections(dir_c.path())?;
    assert_eq!(toc_a.len(), 6, "{toc_a:?}");
    assert!(open_a.is_empty(), "both segments closed: {open_a:?}");
    for node in &toc_a {
        assert_eq!(node.title, TITLE, "{}", node.node_id);
        assert_eq!(node.keywords, ["jwt", "expiry"], "{}", node.node_id);
        // The bullet cites the node's first grip (a parent: the one its children cite),
        // checked by every replica against the grips the node holds.
        assert_eq!(node.bullets[0].grip_ids.len(), 1, "{}", node.node_id);
    }
    assert!(toc_a == toc_b, "a and b differ");
    assert!(toc_a == toc_c, "c's replay differs from a");
    assert!(segments_a == segments_b && segments_a == segments_c);
    let exported = memory_e2e_tests::export_events(dir_c.path(), "webapp")?;
    let summaries: Vec<&Value> = exported
        .iter()
        .filter(|event| event["kind"] == "toc_summary")
        .collect();
    assert_eq!(
        summaries.len(),
        6,
        "c holds the six toc_summary events of the log"
    );
    assert!(
        summaries
            .iter()
            .all(|event| event["session_id"] == memory_types::TOC_SUMMARY_SESSION),
        "{summaries:?}"
    );
    server
        .requests()
        .first()
        .map(|request| request.json()["model"].clone())
        .filter(|model| model == "scripted-model")
        .context("the scripted model was asked")?;
    Ok(())
}
