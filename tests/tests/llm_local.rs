//! `make test-llm`: the LLM paths against a real small local model — llama.cpp's server
//! (PyPI `xllamacpp`) with Qwen2.5-Coder-0.5B-Instruct, one thread, installed by
//! `scripts/setup-llm.sh` — through a real nats-server and the real daemon: the
//! summarizer, the indexing agent's LLM engine (tool protocol probed) and search
//! phrases. Ignored by `make test` (a ~0.5 GB model, minutes per batch on 2 cores).
//!
//! A small model writes what it writes, so the assertions are what must hold whatever
//! it emits (in cluster mode too: only the lease holder asks for summaries, and the
//! replicas agree): every stored idea comes from an event of the conversation, the batches
//! were written by the model or reported as fallbacks, the spend was counted, the part
//! budget held, and a search with `phrases: "llm"` either used the model's phrases or
//! says why not. What the model extracted is printed for the record.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{NatsServer, http_get, metric_sum as metric, serve_daemon};
use serde_json::{Value, json};

const PROJECT: &str = "llm-local";
/// 2026-03-02T09:00:00Z.
const DAY_ONE: u64 = 1_772_442_000_000;
const MINUTE_MS: u64 = 60_000;
/// Tokens per batch part: small, so one part costs minutes, not tens of minutes.
const PART_TOKENS: &str = "4000";

/// The local server, stopped when dropped.
struct LlmServer {
    child: Child,
    base_url: String,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_llm() -> anyhow::Result<LlmServer> {
    let python = std::env::var("MEMORY_LLM_PYTHON").context(
        "MEMORY_LLM_PYTHON unset: run `make test-llm` (it installs and sources .tools/llm.env)",
    )?;
    let server = std::env::var("MEMORY_LLM_SERVER").context("MEMORY_LLM_SERVER unset")?;
    let model = std::env::var("MEMORY_LLM_MODEL")
        .or_else(|_| std::env::var("MEMORY_LLM_MODEL_0_5B"))
        .context("MEMORY_LLM_MODEL_0_5B unset")?;
    let mut child = Command::new(python)
        .args([
            &server,
            "--model",
            &model,
            "--port",
            "0",
            "--threads",
            "1",
            "--ctx",
            "16384",
            "--exit-with-parent",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start the local LLM server")?;
    let stdout = child.stdout.take().context("server stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let base_url = line
        .trim()
        .strip_prefix("ready ")
        .with_context(|| format!("server did not get ready: {line:?}"))?
        .to_owned();
    Ok(LlmServer { child, base_url })
}

fn turn(id: &str, session: &str, at: u64, kind: &str, text: &str) -> Value {
    json!({"event_id": id, "session_id": session, "project_id": PROJECT, "timestamp": at,
           "kind": kind, "text": text})
}

fn conversation() -> Vec<Value> {
    let t = |minutes: u64| DAY_ONE + minutes * MINUTE_MS;
    vec![
        turn(
            "l1",
            "sess-l",
            t(0),
            "user_message",
            "Hi! Let's sort out the session store today.",
        ),
        turn(
            "l2",
            "sess-l",
            t(1),
            "user_message",
            "Should login sessions live in Postgres or in Redis?",
        ),
        turn(
            "l3",
            "sess-l",
            t(2),
            "assistant_message",
            "Redis: sessions expire on their own there, Postgres would need a cleanup job.",
        ),
        turn(
            "l4",
            "sess-l",
            t(3),
            "user_message",
            "We decided: login sessions go in Redis with a 30 minute TTL.",
        ),
        turn(
            "l5",
            "sess-l",
            t(4),
            "user_message",
            "TODO: add a load test for the session cache before launch.",
        ),
        turn("l6", "sess-l", t(5), "user_message", "thanks"),
    ]
}

async fn request(client: &async_nats::Client, subject: &str, body: Value) -> anyhow::Result<Value> {
    // The client's default request timeout (10 s) is far too short for a small model
    // on one thread writing phrases.
    let request = async_nats::Request::new()
        .payload(serde_json::to_vec(&body)?.into())
        .timeout(Some(Duration::from_secs(900)));
    let reply = client
        .send_request(subject.to_owned(), request)
        .await
        .with_context(|| format!("{subject} failed"))?;
    Ok(serde_json::from_slice(&reply.payload)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the local model: make test-llm"]
async fn a_real_small_model_indexes_summarizes_and_writes_phrases_without_breaking_anything()
-> anyhow::Result<()> {
    let llm = start_llm()?;
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    let env = [
        ("AGENT_MEMORY_INDEXING__LLM_WINDOW_MS", "2000"),
        ("AGENT_MEMORY_INDEXING__ENGINE", "llm"),
        ("AGENT_MEMORY_INDEXING__LLM_BATCH_TOKENS", PART_TOKENS),
        ("AGENT_MEMORY_INDEXING__LLM_MAX_TOOL_CALLS", "2"),
        ("AGENT_MEMORY_INDEXING__LLM_MAX_ANSWER_TOKENS", "700"),
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__BASE_URL", llm.base_url.as_str()),
        ("AGENT_MEMORY_LLM__MODEL", "qwen2.5-coder-0.5b-instruct"),
        ("AGENT_MEMORY_LLM__TIMEOUT_MS", "900000"),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
        ("AGENT_MEMORY_TELEPORT__LLM_PHRASES_TIMEOUT_MS", "300000"),
    ];
    let (mut daemon, metrics) = serve_daemon(&nats.url(), data_dir.path(), &env)?;
    let client = nats.connect().await?;
    let started = Instant::now();
    let reply = request(
        &client,
        &format!("memory.ingest.{PROJECT}"),
        Value::Array(conversation()),
    )
    .await?;
    assert_eq!(reply["accepted"].as_u64(), Some(6), "{reply}");

    // Wait for every consumer (the indexing agent and the summaries) to catch up.
    let deadline = Instant::now() + Duration::from_secs(3_600);
    loop {
        let report = request(&client, "memory.admin.status", json!({})).await?;
        let consumers = report["consumers"].as_array().cloned().unwrap_or_default();
        if consumers.iter().any(|c| c["name"] == "indexing_agent")
            && consumers.iter().all(|c| c["lag"].as_u64() == Some(0))
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("consumers never caught up: {report}");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let indexed_in = started.elapsed();

    let (_, text) = http_get(&format!("http://{metrics}/metrics"))?;
    let batches = metric(&text, "memory_indexing_batches_total", &[]);
    let by_model = metric(&text, "memory_indexing_batches_total", &["engine=\"llm\""]);
    let fallbacks = metric(&text, "memory_indexing_llm_fallbacks_total", &[]);
    let parts_fallback = metric(
        &text,
        "memory_indexing_llm_parts_total",
        &["outcome=\"fallback\""],
    );
    assert!(batches >= 1.0, "{text}");
    assert_eq!(
        fallbacks, parts_fallback,
        "every part handed over is reported with a reason"
    );
    let prompt_tokens = metric(
        &text,
        "memory_llm_tokens_total",
        &["direction=\"prompt\"", "purpose=\"indexing\""],
    );
    assert!(
        prompt_tokens > 0.0,
        "the model was asked and its tokens counted"
    );
    // The part budget held: no part spent more than twice its tokens (the check is
    // before each call, so the last call may pass it).
    let parts = metric(&text, "memory_indexing_llm_tokens_count", &[]);
    let within = metric(
        &text,
        "memory_indexing_llm_tokens_bucket",
        &["le=\"10000\""],
    );
    assert_eq!(parts, within, "a part over 10 000 tokens: {text}");
    let protocol = if metric(
        &text,
        "memory_indexing_llm_protocol",
        &["protocol=\"json\""],
    ) == 1.0
    {
        "json"
    } else {
        "native"
    };

    // Whatever the model wrote, every stored idea is of an event of the conversation.
    let ids: Vec<String> = conversation()
        .iter()
        .filter_map(|e| e["event_id"].as_str().map(str::to_owned))
        .collect();
    let mut stored = Vec::new();
    for method in [
        "ideas.decisions",
        "ideas.open_questions",
        "ideas.open_todos",
    ] {
        let answer = request(
            &client,
            &format!("memory.query.{PROJECT}.{method}"),
            json!({"include_superseded": true, "limit": 100}),
        )
        .await?;
        for idea in answer["results"].as_array().into_iter().flatten() {
            let source = idea["source_event_id"]
                .as_str()
                .or_else(|| idea["source"]["event_id"].as_str())
                .unwrap_or_default();
            assert!(
                ids.iter().any(|id| id == source),
                "idea from an unknown event: {idea}"
            );
            stored.push(format!("{}: {}", idea["intent"], idea["content"]));
        }
    }

    eprintln!(
        "llm-local: indexed in {:.0} s; protocol {protocol}; batches {batches} (llm {by_model}); part fallbacks {fallbacks}; indexing tokens prompt {prompt_tokens}",
        indexed_in.as_secs_f64()
    );
    for idea in &stored {
        eprintln!("llm-local idea: {idea}");
    }

    // Phrases: the model's, or the question alone with the reason.
    let search = request(
        &client,
        &format!("memory.query.{PROJECT}.search"),
        json!({"query": "where do login sessions live?", "phrases": "llm", "mode": "keyword"}),
    )
    .await?;
    match search["phrase_source"].as_str() {
        Some("llm") => assert!(
            search["search_terms_used"]
                .as_array()
                .is_some_and(|t| t.len() > 1),
            "{search}"
        ),
        Some("query") => assert!(search["phrase_fallback_reason"].is_string(), "{search}"),
        other => bail!("unexpected phrase_source {other:?}: {search}"),
    }
    let (_, text) = http_get(&format!("http://{metrics}/metrics"))?;
    let summary_tokens = metric(&text, "memory_llm_tokens_total", &["purpose=\"summary\""]);
    let summary_fallbacks = metric(&text, "memory_summarizer_fallbacks_total", &[]);
    assert!(
        summary_tokens > 0.0 || summary_fallbacks > 0.0,
        "summaries went to the model or fell back visibly"
    );

    eprintln!(
        "llm-local: indexing tokens completion {}; calls {}; tool calls {}; summary tokens {summary_tokens}, summary fallbacks {summary_fallbacks}; phrases {} {} {}",
        metric(
            &text,
            "memory_llm_tokens_total",
            &["direction=\"completion\"", "purpose=\"indexing\""]
        ),
        metric(&text, "memory_indexing_llm_calls_total", &[]),
        metric(&text, "memory_indexing_tool_calls_sum", &[]),
        search["phrase_source"],
        search["search_terms_used"],
        search["phrase_fallback_reason"],
    );
    daemon.terminate()?;
    drop(llm);
    Ok(())
}

/// Cluster mode with the real model: two replicas of one group both have `[llm]
/// summaries` and the LLM indexing engine on, only the lease holder asks the model, and
/// both end with the same TOC and the same ideas graph. Whatever the small model writes,
/// every final node is either summarized by it or failed visibly (and keeps its
/// extractive summary), the events are covered by proposals (the model's, or its
/// heuristic fallback's), and the replicas agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the local model: make test-llm"]
async fn in_cluster_mode_only_the_lease_holder_asks_the_model_and_the_replicas_agree()
-> anyhow::Result<()> {
    use memory_e2e_tests::serve_replica;
    let llm = start_llm()?;
    let (nats, urls) = memory_e2e_tests::one_group_cluster("")?;
    let env = [
        ("AGENT_MEMORY_INDEXING__ENGINE", "llm"),
        ("AGENT_MEMORY_INDEXING__LLM_WINDOW_MS", "1000"),
        ("AGENT_MEMORY_INDEXING__LLM_COOLDOWN_SECS", "0"),
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__BASE_URL", llm.base_url.as_str()),
        ("AGENT_MEMORY_LLM__MODEL", "qwen2.5-coder-0.5b-instruct"),
        ("AGENT_MEMORY_LLM__TIMEOUT_MS", "900000"),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
    ];
    let (dir_a, dir_b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let (mut a, metrics_a) = serve_replica(&urls, dir_a.path(), ("a", "g1"), &env)?;
    let (mut b, metrics_b) = serve_replica(&urls, dir_b.path(), ("b", "g1"), &env)?;
    let client = nats.connect().await?;
    let mut events = conversation();
    events.push(turn(
        "l7",
        "sess-l",
        DAY_ONE + 5 * MINUTE_MS + 1_000,
        "session_end",
        "",
    ));
    events[6].as_object_mut().map(|event| event.remove("text"));
    let reply = request(
        &client,
        &format!("memory.ingest.{PROJECT}"),
        Value::Array(events),
    )
    .await?;
    assert_eq!(reply["accepted"].as_u64(), Some(7), "{reply}");

    // One segment, its day, week, month and year: each published or failed at least once.
    let sum = |name: &str, labels: &[&str]| -> f64 {
        [&metrics_a, &metrics_b]
            .iter()
            .map(|metrics| {
                http_get(&format!("http://{metrics}/metrics"))
                    .map(|(_, text)| metric(&text, name, labels))
                    .unwrap_or(0.0)
            })
            .sum()
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs(3_600);
    while sum("memory_cluster_model_summaries_total", &[]) < 5.0 {
        if Instant::now() > deadline {
            bail!(
                "the holder asked for {} summaries in an hour",
                sum("memory_cluster_model_summaries_total", &[])
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    // Both replicas take every published summary (a failed node may still be retried).
    let taken = |metrics: &str| {
        http_get(&format!("http://{metrics}/metrics"))
            .map(|(_, text)| {
                ["applied", "waiting", "rejected"]
                    .iter()
                    .map(|outcome| {
                        metric(
                            &text,
                            "memory_toc_model_summaries_total",
                            &[&format!("outcome=\"{outcome}\"")],
                        )
                    })
                    .sum::<f64>()
            })
            .unwrap_or(0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    let published = loop {
        let published = sum(
            "memory_cluster_model_summaries_total",
            &["outcome=\"published\""],
        );
        while taken(&metrics_a) < published || taken(&metrics_b) < published {
            if Instant::now() > deadline {
                bail!(
                    "a took {}, b {} of {published}",
                    taken(&metrics_a),
                    taken(&metrics_b)
                );
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        if sum(
            "memory_cluster_model_summaries_total",
            &["outcome=\"published\""],
        ) == published
        {
            break published;
        }
    };
    // The ideas: every event covered by a proposal both replicas applied.
    let applied = |metrics: &str| {
        http_get(&format!("http://{metrics}/metrics"))
            .map(|(_, text)| {
                metric(
                    &text,
                    "memory_ideas_proposals_total",
                    &["outcome=\"applied\""],
                )
            })
            .unwrap_or(0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(1_800);
    let proposals = loop {
        let proposed = sum(
            "memory_cluster_idea_proposals_total",
            &["outcome=\"published\""],
        );
        let pending = sum("memory_cluster_ideas_pending_projects", &[]);
        if proposed > 0.0
            && pending == 0.0
            && applied(&metrics_a) >= proposed
            && applied(&metrics_b) >= proposed
        {
            break proposed;
        }
        if Instant::now() > deadline {
            bail!(
                "{proposed} ideas proposals published, {pending} projects pending, a applied {}, b {}",
                applied(&metrics_a),
                applied(&metrics_b)
            );
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    for metrics in [&metrics_a, &metrics_b] {
        let (_, text) = http_get(&format!("http://{metrics}/metrics"))?;
        for line in text.lines().filter(|line| {
            !line.starts_with('#')
                && (line.contains("model_summaries")
                    || line.contains("lease_held")
                    || line.contains("proposals")
                    || line.contains("memory_indexing_batches_total"))
        }) {
            eprintln!("llm-local cluster {metrics}: {line}");
        }
    }
    let askers = |purpose: &str| {
        [&metrics_a, &metrics_b]
            .iter()
            .filter(|metrics| {
                http_get(&format!("http://{metrics}/metrics"))
                    .map(|(_, text)| {
                        metric(
                            &text,
                            "memory_llm_tokens_total",
                            &[&format!("purpose=\"{purpose}\"")],
                        )
                    })
                    .unwrap_or(0.0)
                    > 0.0
            })
            .count()
    };
    let (summary_askers, indexing_askers) = (askers("summary"), askers("indexing"));
    let failed = sum(
        "memory_cluster_model_summaries_total",
        &["outcome=\"failed\""],
    );
    a.terminate()?;
    b.terminate()?;
    let toc = |dir: &std::path::Path| -> anyhow::Result<Vec<memory_toc::TocNode>> {
        let store = memory_store::Store::open(dir, &memory_store::StoreOptions::default())?;
        Ok(memory_projections::RollupBuilder::all_nodes(&store)?
            .into_values()
            .collect())
    };
    let (toc_a, toc_b) = (toc(dir_a.path())?, toc(dir_b.path())?);
    assert_eq!(toc_a.len(), 5, "{toc_a:?}");
    assert!(toc_a == toc_b, "the replicas' TOCs differ");
    if published > 0.0 {
        assert_eq!(summary_askers, 1, "only the lease holder asks the model");
    }
    assert!(
        indexing_askers <= 1,
        "only the lease holder runs the engine"
    );
    let graph = |dir: &std::path::Path| -> anyhow::Result<_> {
        let store = memory_store::Store::open(dir, &memory_store::StoreOptions::default())?;
        let graph = memory_projections::IdeaGraph::open(&store)?;
        Ok((graph.dump()?, graph.all_ideas(PROJECT)?))
    };
    let ((graph_a, ideas), (graph_b, _)) = (graph(dir_a.path())?, graph(dir_b.path())?);
    assert!(graph_a == graph_b, "the replicas' ideas graphs differ");
    eprintln!(
        "llm-local cluster: {published} summaries published, {failed} failed, {proposals} ideas proposals, {} ideas, in {:.0} s",
        ideas.len(),
        started.elapsed().as_secs_f64()
    );
    for idea in &ideas {
        eprintln!(
            "llm-local cluster idea ({:?}): {}",
            idea.intent, idea.content
        );
    }
    for node in &toc_a {
        eprintln!("llm-local cluster node {}: {}", node.node_id, node.title);
    }
    drop(llm);
    Ok(())
}
