//! The LLM engine of the indexing agent end to end: a real nats-server, the real daemon
//! with `[indexing] engine = "llm"`, and a scripted OpenAI-compatible model that reads
//! the input the agent sends and answers with tool calls and change sets — some ids in
//! them invented. What must hold whatever the model says: its valid ideas are stored,
//! its invented ids are rejected and counted, the spend is visible in the metrics, and
//! when the model turns to garbage the heuristic engine carries on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{Daemon, NatsServer, http_get, metric_sum as metric, serve_daemon};
use memory_llm::testing::{RecordedRequest, ScriptedResponse, ScriptedServer};
use serde_json::{Value, json};

const PROJECT: &str = "llm-agent-e2e";
/// 2026-03-02T09:00:00Z.
const DAY_ONE: u64 = 1_772_442_000_000;
const MINUTE_MS: u64 = 60_000;

fn turn(id: &str, session: &str, at: u64, text: &str) -> Value {
    json!({"event_id": id, "session_id": session, "project_id": PROJECT, "timestamp": at,
           "kind": "user_message", "text": text})
}

/// The scripted model: answers the probe with a native tool call, the first step of a
/// batch with a `search_ideas` call, and the next with a change set built from the
/// events it was given — one idea per event that says "decided", marked "LLM:" so
/// the test can tell who wrote it, plus a relation and an answer naming ideas that do
/// not exist. When `garbage` is set it answers everything with prose.
fn model(garbage: Arc<AtomicBool>) -> impl Fn(&RecordedRequest) -> ScriptedResponse {
    move |request: &RecordedRequest| {
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
        if garbage.load(Ordering::SeqCst) {
            return ScriptedResponse::chat("I think these events are about databases.");
        }
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if !tools.is_empty() && !messages.iter().any(|m| m["role"] == "tool") {
            return ScriptedResponse::tool_calls(&[("search_ideas", r#"{"query": "database"}"#)]);
        }
        let input: Value = messages
            .get(1)
            .and_then(|m| m["content"].as_str())
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null);
        let mut ideas = Vec::new();
        let mut relations = Vec::new();
        for update in input["updates"].as_array().into_iter().flatten() {
            for event in update["events"].as_array().into_iter().flatten() {
                let text = event["content"].as_str().unwrap_or_default();
                if text.contains("decided") {
                    let id = event["event_id"].as_str().unwrap_or_default();
                    ideas.push(json!({"source_event_id": id,
                        "content": format!("LLM: {text}"),
                        "intent": "decision", "confidence": 0.9, "importance": 1.0,
                        "entities": [{"name": "Postgres", "type": "technology"}]}));
                    relations.push(
                        json!({"from_event_id": id, "to_idea_id": "idea-invented-by-the-model",
                                          "relation_type": "supersedes"}),
                    );
                }
            }
        }
        let answer = json!({"ideas": ideas, "relations": relations,
            "answered_questions": [{"question_idea_id": "idea-42", "answered_at_event_id": "nope",
                                    "answer_summary": "made up"}]});
        ScriptedResponse::chat(&answer.to_string())
    }
}

struct Stack {
    nats: NatsServer,
    daemon: Daemon,
    metrics: String,
    _data_dir: tempfile::TempDir,
}

fn start(base_url: &str) -> anyhow::Result<Stack> {
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    let env = [
        ("AGENT_MEMORY_INDEXING__LLM_WINDOW_MS", "100"),
        ("AGENT_MEMORY_INDEXING__ENGINE", "llm"),
        ("AGENT_MEMORY_INDEXING__LLM_COOLDOWN_SECS", "0"),
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__SUMMARIES", "false"),
        ("AGENT_MEMORY_LLM__BASE_URL", base_url),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
    ];
    let (daemon, metrics) = serve_daemon(&nats.url(), data_dir.path(), &env)?;
    Ok(Stack {
        nats,
        daemon,
        metrics,
        _data_dir: data_dir,
    })
}

async fn request(client: &async_nats::Client, subject: &str, body: Value) -> anyhow::Result<Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(60),
        client.request(subject.to_owned(), serde_json::to_vec(&body)?.into()),
    )
    .await
    .with_context(|| format!("{subject} timed out"))??;
    Ok(serde_json::from_slice(&reply.payload)?)
}

async fn caught_up(client: &async_nats::Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let report = request(client, "memory.admin.status", json!({})).await?;
        let consumers = report["consumers"].as_array().cloned().unwrap_or_default();
        if consumers.iter().any(|c| c["name"] == "indexing_agent")
            && consumers.iter().all(|c| c["lag"].as_u64() == Some(0))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("consumers never caught up: {report}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn decisions(client: &async_nats::Client) -> anyhow::Result<Vec<String>> {
    let answer = request(
        client,
        &format!("memory.query.{PROJECT}.ideas.decisions"),
        json!({"include_superseded": true, "limit": 100}),
    )
    .await?;
    Ok(answer["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|idea| idea["content"].as_str().map(str::to_owned))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_engine_writes_ideas_its_inventions_are_rejected_and_garbage_falls_back()
-> anyhow::Result<()> {
    let garbage = Arc::new(AtomicBool::new(false));
    let server = ScriptedServer::responding(Arc::new(model(Arc::clone(&garbage))));
    let mut stack = start(&server.base_url())?;
    let client = stack.nats.connect().await?;
    let ingest = format!("memory.ingest.{PROJECT}");
    let reply = request(
        &client,
        &ingest,
        json!([
            turn("a1", "sess-a", DAY_ONE, "Hi!"),
            turn(
                "a2",
                "sess-a",
                DAY_ONE + MINUTE_MS,
                "We decided to keep the ledger in Postgres."
            ),
        ]),
    )
    .await?;
    assert_eq!(reply["accepted"].as_u64(), Some(2), "{reply}");
    caught_up(&client).await?;

    let stored = decisions(&client).await?;
    assert!(
        stored
            .iter()
            .any(|content| content.starts_with("LLM: We decided to keep the ledger")),
        "the model's wording is stored: {stored:?}"
    );
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))),
        "a tool result went back to the model"
    );
    let (_, text) = http_get(&format!("http://{}/metrics", stack.metrics))?;
    assert!(
        metric(
            &text,
            "memory_indexing_batches_total",
            &["engine=\"llm\"", "outcome=\"ok\""]
        ) >= 1.0,
        "{text}"
    );
    assert!(
        metric(
            &text,
            "memory_ideas_rejected_total",
            &["reason=\"unknown_idea\""]
        ) >= 1.0
    );
    assert!(
        metric(
            &text,
            "memory_ideas_rejected_total",
            &["reason=\"unknown_event\""]
        ) >= 1.0
    );
    assert!(
        metric(
            &text,
            "memory_llm_tokens_total",
            &["direction=\"prompt\"", "purpose=\"indexing\""]
        ) > 0.0
    );
    assert!(metric(&text, "memory_indexing_tool_calls_count", &[]) >= 1.0);
    assert_eq!(
        metric(
            &text,
            "memory_indexing_llm_protocol",
            &["protocol=\"native\""]
        ),
        1.0
    );

    // The model turns to garbage: the heuristic engine stores the ideas instead.
    garbage.store(true, Ordering::SeqCst);
    request(
        &client,
        &ingest,
        json!([turn(
            "b1",
            "sess-b",
            DAY_ONE + 10 * MINUTE_MS,
            "We decided to move the cache to Redis."
        )]),
    )
    .await?;
    caught_up(&client).await?;
    let stored = decisions(&client).await?;
    assert!(
        stored
            .iter()
            .any(|content| content.contains("move the cache to Redis")
                && !content.starts_with("LLM:")),
        "the heuristic engine wrote the new decision: {stored:?}"
    );
    let (_, text) = http_get(&format!("http://{}/metrics", stack.metrics))?;
    assert!(
        metric(
            &text,
            "memory_indexing_batches_total",
            &["engine=\"heuristic\"", "outcome=\"fallback\""]
        ) >= 1.0,
        "{text}"
    );
    assert!(
        metric(
            &text,
            "memory_indexing_llm_fallbacks_total",
            &["reason=\"invalid\""]
        ) >= 1.0
    );
    assert!(
        metric(
            &text,
            "memory_indexing_llm_retries_total",
            &["reason=\"invalid\""]
        ) >= 1.0
    );
    stack.daemon.terminate()?;
    Ok(())
}
