//! LLM idea extraction in cluster mode, on three nats-servers clustered on loopback,
//! with a scripted OpenAI-compatible server as the model: replicas a and b of group g1
//! both run `[indexing] engine = "llm"`, yet only the group's lease holder runs the
//! engine — its change sets go to the log as sealed `ideas_proposed` events — and both
//! replicas end with the same ideas graph, every idea the model's, its made-up secret
//! redacted before the log. A third replica, c, whose model is not there, replays the
//! log from the start and ends with the very same graph: the ideas are in the log, not
//! in a replica.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{http_get, metric_sum, serve_replica};
use memory_llm::testing::{RecordedRequest, ScriptedResponse, ScriptedServer};
use memory_projections::IdeaGraph;
use memory_store::{Store, StoreOptions};
use serde_json::{Value, json};

#[path = "support/replicas.rs"]
#[allow(dead_code)]
mod replicas;
use replicas::wait_settled;

/// What the scripted model makes up in every idea: shaped like a GitHub token.
const SECRET: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";

fn metric(metrics: &str, name: &str, labels: &[&str]) -> f64 {
    http_get(&format!("http://{metrics}/metrics"))
        .map(|(_, text)| metric_sum(&text, name, labels))
        .unwrap_or(-1.0)
}

/// The scripted model: answers the tool protocol's probe with a native tool call, and
/// a batch with one decision per event that says "decided", marked "LLM:" and carrying
/// a made-up secret.
fn model(request: &RecordedRequest) -> ScriptedResponse {
    let body = request.json();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    if tools.contains(&"record_number") {
        return ScriptedResponse::tool_calls(&[("record_number", r#"{"n": 7}"#)]);
    }
    let input: Value = body["messages"]
        .get(1)
        .and_then(|message| message["content"].as_str())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    let mut ideas = Vec::new();
    for update in input["updates"].as_array().into_iter().flatten() {
        for event in update["events"].as_array().into_iter().flatten() {
            let text = event["content"].as_str().unwrap_or_default();
            if text.contains("decided") {
                ideas.push(json!({"source_event_id": event["event_id"],
                    "content": format!("LLM: {text} (token {SECRET})"),
                    "intent": "decision", "confidence": 0.9,
                    "entities": [{"name": "JWT", "type": "technology"}]}));
            }
        }
    }
    ScriptedResponse::chat(&json!({ "ideas": ideas }).to_string())
}

/// The asks for change sets (not the probe).
fn batches_asked(server: &ScriptedServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|request| !request.body.contains("record_number"))
        .count()
}

async fn ingest(client: &async_nats::Client, session: &str, start: u64) -> anyhow::Result<()> {
    let events: Vec<Value> = (0..4_u64)
        .map(|n| {
            json!({
                "event_id": format!("{session}-{n}"), "session_id": session,
                "timestamp": start + n * 1_000,
                "kind": if n % 2 == 0 { "user_message" } else { "assistant_message" },
                "text": format!("turn {n} of {session}: we decided the JWT expiry is {} minutes", 15 + n),
            })
        })
        .collect();
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

/// The ideas graph of a stopped replica's data dir (each idea's record time zeroed)
/// and the last proposal it applied per project.
type Graph = (Vec<(Vec<u8>, Vec<u8>)>, Vec<(String, Option<String>)>);

fn graph(data_dir: &Path) -> anyhow::Result<Graph> {
    let store = Store::open(data_dir, &StoreOptions::default())?;
    let heads = memory_projections::proposal_chains(&store)?
        .into_iter()
        .map(|(project, chain)| (project, chain.head))
        .collect();
    Ok((IdeaGraph::open(&store)?.dump()?, heads))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_runs_the_model_and_every_replica_holds_its_ideas()
-> anyhow::Result<()> {
    let server = ScriptedServer::responding(std::sync::Arc::new(model));
    let base_url = server.base_url();
    let llm = [
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__SUMMARIES", "false"),
        ("AGENT_MEMORY_LLM__BASE_URL", base_url.as_str()),
        ("AGENT_MEMORY_LLM__MODEL", "scripted-model"),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
        ("AGENT_MEMORY_INDEXING__ENGINE", "llm"),
        ("AGENT_MEMORY_INDEXING__LLM_WINDOW_MS", "500"),
        ("AGENT_MEMORY_INDEXING__LLM_COOLDOWN_SECS", "0"),
    ];
    let (nats, urls) = memory_e2e_tests::one_group_cluster(
        "mappings = {\n  \"memory.query.*.>\": \"memory.q.{{partition(8,1)}}.{{wildcard(1)}}.>\"\n}\n",
    )?;
    let client = nats.connect().await?;
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut a, metrics_a) = serve_replica(&urls, dir_a.path(), ("a", "g1"), &llm)?;
    let (mut b, metrics_b) = serve_replica(&urls, dir_b.path(), ("b", "g1"), &llm)?;
    // Two sessions, the second once the first is proposed for: a chain of proposals.
    let sum = |name: &str, labels: &[&str]| {
        metric(&metrics_a, name, labels).max(0.0) + metric(&metrics_b, name, labels).max(0.0)
    };
    let published = || {
        sum(
            "memory_cluster_idea_proposals_total",
            &["outcome=\"published\""],
        )
    };
    let wait_published = |at_least: f64| {
        let server = &server;
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            while published() < at_least {
                if Instant::now() > deadline {
                    bail!(
                        "the lease holder published {} proposals; the model was asked {} times",
                        published(),
                        server.num_requests()
                    );
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            anyhow::Ok(())
        }
    };
    ingest(&client, "s1", 1_790_000_000_000).await?;
    wait_published(1.0).await?;
    ingest(&client, "s2", 1_790_003_600_000).await?;
    wait_published(2.0).await?;
    wait_settled(&client, &["a", "b"]).await?;
    // Settled is not enough for the last proposal to be applied by both: wait for it.
    let applied = |metrics: &str| {
        metric(
            metrics,
            "memory_ideas_proposals_total",
            &["outcome=\"applied\""],
        )
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while applied(&metrics_a) < published() || applied(&metrics_b) < published() {
        if Instant::now() > deadline {
            bail!(
                "a applied {}, b {}, of {}",
                applied(&metrics_a),
                applied(&metrics_b),
                published()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The ideas answer through the query API, from whichever replica serves webapp.
    let reply = client
        .request(
            "memory.query.webapp.ideas.decisions",
            serde_json::to_vec(&json!({"limit": 100, "include_superseded": true}))?.into(),
        )
        .await?;
    let answer: Value = serde_json::from_slice(&reply.payload)?;
    let decisions = answer["results"]
        .as_array()
        .cloned()
        .with_context(|| format!("no decisions in {answer}"))?;
    assert_eq!(decisions.len(), 8, "{answer}");
    assert!(
        decisions.iter().all(|idea| idea["content"]
            .as_str()
            .is_some_and(|text| text.starts_with("LLM: "))),
        "{answer}"
    );
    assert_eq!(published(), 2.0, "one proposal per session's batch");
    assert_eq!(
        batches_asked(&server),
        2,
        "the model is asked once per batch, by one node"
    );
    let holders = [&metrics_a, &metrics_b]
        .iter()
        .filter(|metrics| metric(metrics, "memory_cluster_idea_proposals_total", &[]) > 0.0)
        .count();
    assert_eq!(holders, 1, "only the lease holder runs the engine");

    // c, whose model is not there (nothing listens where it points), replays the whole
    // log to the same graph.
    let (mut c, metrics_c) = serve_replica(
        &urls,
        dir_c.path(),
        ("c", "g1"),
        &[
            ("AGENT_MEMORY_LLM__ENABLED", "true"),
            ("AGENT_MEMORY_LLM__BASE_URL", "http://127.0.0.1:9/v1"),
            ("AGENT_MEMORY_INDEXING__ENGINE", "llm"),
        ],
    )?;
    wait_settled(&client, &["a", "b", "c"]).await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while applied(&metrics_c) < 2.0 {
        if Instant::now() > deadline {
            bail!("c applied {}", applied(&metrics_c));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    a.terminate()?;
    b.terminate()?;
    c.terminate()?;
    let (graph_a, graph_b, graph_c) = (
        graph(dir_a.path())?,
        graph(dir_b.path())?,
        graph(dir_c.path())?,
    );
    assert!(graph_a == graph_b, "a and b differ");
    assert!(graph_a == graph_c, "c's replay differs from a");
    assert_eq!(graph_a.1.len(), 1, "{:?}", graph_a.1);
    assert!(graph_a.1[0].1.is_some(), "webapp's chain has a head");
    let store = Store::open(dir_c.path(), &StoreOptions::default())?;
    let ideas = IdeaGraph::open(&store)?.all_ideas("webapp")?;
    assert_eq!(ideas.len(), 8);
    for idea in &ideas {
        assert!(idea.content.starts_with("LLM: "), "{}", idea.content);
        assert!(!idea.content.contains(SECRET), "{}", idea.content);
    }
    drop(store);
    let exported = memory_e2e_tests::export_events(dir_c.path(), "webapp")?;
    let proposals: Vec<&Value> = exported
        .iter()
        .filter(|event| event["kind"] == "ideas_proposed")
        .collect();
    assert_eq!(proposals.len(), 2, "c holds the two proposals of the log");
    for proposal in &proposals {
        assert_eq!(proposal["session_id"], memory_types::IDEAS_PROPOSED_SESSION);
        let text = proposal["text"].as_str().unwrap_or_default();
        assert!(!text.contains(SECRET), "a secret reached the log: {text}");
    }
    Ok(())
}
