//! End-to-end: the real `memory-daemon serve` against a real nats-server with JetStream,
//! on the real fjall store. One test binary, few tests, each meaningful.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{
    Daemon, NatsServer, build_daemon, export_events, free_port, http_get, scripted_llm_env,
    serve_daemon_on,
};
use serde_json::{Value, json};
use tokio::sync::Mutex;

struct Stack {
    nats: NatsServer,
    daemon: Daemon,
    data_dir: tempfile::TempDir,
    metrics_port: u16,
}

fn start_daemon_with_env(
    nats_url: &str,
    data_dir: &Path,
    metrics_port: u16,
    env: &[(&str, &str)],
) -> anyhow::Result<Daemon> {
    serve_daemon_on(nats_url, data_dir, metrics_port, env).map(|(daemon, _)| daemon)
}

fn start_stack() -> anyhow::Result<Stack> {
    start_stack_with_env(&[])
}

fn start_stack_with_env(env: &[(&str, &str)]) -> anyhow::Result<Stack> {
    let token = env
        .iter()
        .find(|(key, _)| *key == "AGENT_MEMORY_NATS__TOKEN")
        .map(|(_, value)| *value);
    let nats = match token {
        Some(token) => NatsServer::start_with_token(token)?,
        None => NatsServer::start()?,
    };
    let data_dir = tempfile::tempdir()?;
    let metrics_port = free_port();
    let daemon = start_daemon_with_env(&nats.url(), data_dir.path(), metrics_port, env)?;
    Ok(Stack {
        nats,
        daemon,
        data_dir,
        metrics_port,
    })
}

fn event(project: &str, id: &str, n: usize) -> Value {
    json!({"event_id": id, "session_id": format!("{project}-s{}", n / 100), "project_id": project,
           "timestamp": 1_767_225_600_000u64 + n as u64 * 1000, "kind": "user_message",
           "text": format!("turn {n}: we decided the JWT access token lives 15 minutes"), "metadata": {"n": n.to_string()}})
}

async fn request(
    client: &async_nats::Client,
    subject: &str,
    payload: Vec<u8>,
) -> anyhow::Result<Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(20),
        client.request(subject.to_owned(), payload.into()),
    )
    .await
    .context("request timed out")?
    .context("request failed")?;
    Ok(serde_json::from_slice(&reply.payload)?)
}

async fn status(client: &async_nats::Client) -> anyhow::Result<Value> {
    request(client, "memory.admin.status", b"{}".to_vec()).await
}

async fn wait_for_events(
    client: &async_nats::Client,
    project: &str,
    expected: u64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let report = status(client).await?;
        let count = report["projects"][project]["events"].as_u64().unwrap_or(0);
        if count == expected {
            return Ok(());
        }
        if count > expected || Instant::now() > deadline {
            bail!("project {project}: expected {expected} events, status says {count}: {report}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every stored event of a project, by event id, via the CLI's embedded export (the
/// daemon must be stopped: one process owns a data dir).
fn exported_ids(data_dir: &Path, project: &str) -> anyhow::Result<BTreeMap<String, usize>> {
    let mut ids = BTreeMap::new();
    for event in export_events(data_dir, project)? {
        *ids.entry(event["event_id"].as_str().unwrap_or_default().to_owned())
            .or_insert(0) += 1;
    }
    Ok(ids)
}

async fn publish_jetstream(
    client: &async_nats::Client,
    project: &str,
    prefix: &str,
    range: std::ops::Range<usize>,
) -> anyhow::Result<()> {
    let context = async_nats::jetstream::new(client.clone());
    let mut acks = Vec::new();
    for n in range {
        let payload = serde_json::to_vec(&event(project, &format!("{prefix}-{n}"), n))?;
        acks.push(
            context
                .publish(format!("memory.events.{project}"), payload.into())
                .await?,
        );
        if acks.len() >= 256 {
            for ack in acks.drain(..) {
                ack.await?;
            }
        }
    }
    for ack in acks {
        ack.await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_reply_and_jetstream_store_every_event_exactly_once() -> anyhow::Result<()> {
    // Twenty thousand events: embedding them would only take the other tests' cores.
    let mut stack = start_stack_with_env(&[KEYWORD_ONLY])?;
    let client = stack.nats.connect().await?;
    // The daemon creates the stream when it starts consuming; publish after it exists.
    let stream_ready = Instant::now();
    while async_nats::jetstream::new(client.clone())
        .get_stream("MEMORY_EVENTS")
        .await
        .is_err()
    {
        if stream_ready.elapsed() > Duration::from_secs(20) {
            bail!("stream MEMORY_EVENTS never appeared");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut producers = Vec::new();
    for producer in 0..10 {
        let client = client.clone();
        producers.push(tokio::spawn(async move {
            for batch in 0..10 {
                let events: Vec<Value> = (0..100)
                    .map(|i| {
                        let n = producer * 1000 + batch * 100 + i;
                        event("rr", &format!("rr-{n}"), n)
                    })
                    .collect();
                let reply =
                    request(&client, "memory.ingest.rr", serde_json::to_vec(&events)?).await?;
                if reply["accepted"] != 100 || reply["rejected"] != json!([]) {
                    bail!("unexpected reply {reply}");
                }
            }
            anyhow::Ok(())
        }));
    }
    for producer in 0..10 {
        let client = client.clone();
        producers.push(tokio::spawn(async move {
            publish_jetstream(&client, "js", "js", producer * 1000..(producer + 1) * 1000).await
        }));
    }
    for producer in producers {
        producer.await??;
    }
    wait_for_events(&client, "rr", 10_000, Duration::from_secs(60)).await?;
    wait_for_events(&client, "js", 10_000, Duration::from_secs(120)).await?;

    // A retried request is acknowledged as duplicates, not stored again.
    let retry: Vec<Value> = (0..100)
        .map(|n| event("rr", &format!("rr-{n}"), n))
        .collect();
    let reply = request(&client, "memory.ingest.rr", serde_json::to_vec(&retry)?).await?;
    assert_eq!(
        (reply["accepted"].as_u64(), reply["duplicates"].as_u64()),
        (Some(0), Some(100)),
        "{reply}"
    );

    let (code, metrics) = http_get(&format!("http://127.0.0.1:{}/metrics", stack.metrics_port))?;
    assert_eq!(code, 200);
    for name in [
        "memory_ingest_events_total{result=\"accepted\"}",
        "memory_ingest_commit_latency_seconds_bucket",
        "memory_ingest_batch_size_bucket",
        "memory_outbox_head ",
        "memory_consumer_lag",
        "memory_nats_connected 1",
    ] {
        assert!(metrics.contains(name), "/metrics lacks {name}");
    }
    // The 20 000 events, plus what the TOC actors announced about them.
    let head: u64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("memory_outbox_head "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_default();
    assert!(head >= 20_000, "outbox head {head}");

    // SIGTERM while producers are sending: the daemon drains, so every request that got
    // an answer is stored, and it exits cleanly.
    let answered: Arc<Mutex<BTreeSet<String>>> = Arc::new(Mutex::new(BTreeSet::new()));
    let mut producers = Vec::new();
    for producer in 0..4 {
        let (client, answered) = (client.clone(), answered.clone());
        producers.push(tokio::spawn(async move {
            for batch in 0.. {
                let ids: Vec<String> = (0..20)
                    .map(|i| format!("drain-{producer}-{batch}-{i}"))
                    .collect();
                let events: Vec<Value> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| event("drain", id, i))
                    .collect();
                let Ok(payload) = serde_json::to_vec(&events) else {
                    break;
                };
                match request(&client, "memory.ingest.drain", payload).await {
                    Ok(reply) if reply["accepted"] == 20 => answered.lock().await.extend(ids),
                    _ => break,
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let exit =
        tokio::task::block_in_place(|| stack.daemon.terminate_within(Duration::from_secs(30)))?;
    assert!(exit.success(), "clean shutdown on SIGTERM, got {exit}");
    for producer in producers {
        producer.await?;
    }
    let answered = answered.lock().await.clone();
    assert!(
        !answered.is_empty(),
        "producers were answered before the shutdown"
    );
    let drained = exported_ids(stack.data_dir.path(), "drain")?;
    let lost: Vec<&String> = answered
        .iter()
        .filter(|id| !drained.contains_key(*id))
        .collect();
    assert!(
        lost.is_empty(),
        "{} answered events missing after SIGTERM",
        lost.len()
    );
    for (project, prefix) in [("rr", "rr"), ("js", "js")] {
        let ids = exported_ids(stack.data_dir.path(), project)?;
        assert_eq!(ids.len(), 10_000, "{project}: every event stored");
        assert!(
            ids.values().all(|count| *count == 1),
            "{project}: none twice"
        );
        assert!((0..10_000).all(|n| ids.contains_key(&format!("{prefix}-{n}"))));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_events_survive_kill_9_and_unacked_jetstream_messages_are_redelivered_once()
-> anyhow::Result<()> {
    // A short ack wait, so messages the killed daemon held come back within the test.
    let env = [("AGENT_MEMORY_NATS__JETSTREAM__ACK_WAIT_SECS", "3")];
    let mut stack = start_stack_with_env(&env)?;
    let client = stack.nats.connect().await?;
    let acked: Arc<Mutex<BTreeSet<String>>> = Arc::new(Mutex::new(BTreeSet::new()));
    let total_batches = 120usize;
    let mut producers = Vec::new();
    for producer in 0..4 {
        let (client, acked) = (client.clone(), acked.clone());
        producers.push(tokio::spawn(async move {
            for batch in 0..total_batches {
                let ids: Vec<String> = (0..50)
                    .map(|i| format!("crash-{producer}-{batch}-{i}"))
                    .collect();
                let events: Vec<Value> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| event("crash", id, batch * 50 + i))
                    .collect();
                let payload = serde_json::to_vec(&events)?;
                // Retry until acknowledged: the daemon may be dead for a while.
                let deadline = Instant::now() + Duration::from_secs(90);
                loop {
                    match request(&client, "memory.ingest.crash", payload.clone()).await {
                        Ok(reply) if reply.get("error").is_none() => {
                            acked.lock().await.extend(ids.iter().cloned());
                            break;
                        }
                        _ if Instant::now() > deadline => bail!("batch {batch} never acknowledged"),
                        _ => tokio::time::sleep(Duration::from_millis(50)).await,
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    let js_client = client.clone();
    let js_producer =
        tokio::spawn(
            async move { publish_jetstream(&js_client, "crashjs", "cjs", 0..5_000).await },
        );

    // Kill the daemon mid-stream, once some events are in.
    let started = Instant::now();
    while acked.lock().await.len() < 2_000 {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("producers made no progress");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stack.daemon.kill_9()?;
    let acked_before_crash = acked.lock().await.clone();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stack.daemon = start_daemon_with_env(
        &stack.nats.url(),
        stack.data_dir.path(),
        stack.metrics_port,
        &env,
    )?;

    for producer in producers {
        producer.await??;
    }
    js_producer.await??;
    wait_for_events(
        &client,
        "crash",
        4 * total_batches as u64 * 50,
        Duration::from_secs(60),
    )
    .await?;
    wait_for_events(&client, "crashjs", 5_000, Duration::from_secs(120)).await?;
    stack.daemon.terminate_within(Duration::from_secs(30))?;

    let stored = exported_ids(stack.data_dir.path(), "crash")?;
    assert!(
        stored.values().all(|count| *count == 1),
        "no event stored twice"
    );
    let missing: Vec<&String> = acked_before_crash
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} events acknowledged before kill -9 are missing, e.g. {:?}",
        missing.len(),
        missing.first()
    );
    assert_eq!(stored.len(), acked.lock().await.len());
    let js = exported_ids(stack.data_dir.path(), "crashjs")?;
    assert_eq!(js.len(), 5_000, "every JetStream message stored");
    assert!(
        js.values().all(|count| *count == 1),
        "redelivered messages stored once"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_precise_errors_and_disturbs_nothing() -> anyhow::Result<()> {
    // Limits below NATS's own 1 MiB message cap, so the daemon's checks are what answer;
    // and a server that requires a token, so the daemon's credentials come from config.
    let mut stack = start_stack_with_env(&[
        ("AGENT_MEMORY_NATS__TOKEN", "e2e-s3cret"),
        ("AGENT_MEMORY_INGEST__MAX_PAYLOAD_BYTES", "65536"),
        ("AGENT_MEMORY_INGEST__MAX_EVENT_BYTES", "32768"),
    ])?;
    let client = stack.nats.connect().await?;
    let good = |id: &str| json!({"event_id": id, "session_id": "s", "timestamp": "2026-01-30T09:00:00Z", "kind": "note", "text": "ok"});

    // Whole-payload errors.
    for (payload, needle) in [
        (b"this is not json".to_vec(), "not valid JSON"),
        (vec![b'{', 0xff, 0xfe, b'}'], "UTF-8"),
        (vec![b' '; 65_537], "exceeds the limit of 65536 bytes"),
        (b"42".to_vec(), "event object or an array"),
    ] {
        let reply = request(&client, "memory.ingest.bad", payload).await?;
        assert_eq!(reply["error"]["code"], "invalid_argument", "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(needle),
            "{reply}"
        );
    }

    // Per-event errors in one batch: good events kept, bad ones reported by index.
    let mut oversize = good("big");
    oversize["text"] = json!("x".repeat(40_000));
    let batch = json!([
        good("g1"),
        {"event_id": "e1", "session_id": 7, "timestamp": 1, "kind": "note", "text": "x"},
        {"event_id": "e2", "timestamp": 1, "kind": "note", "text": "x"},
        {"event_id": "e3", "session_id": "s", "kind": "note", "text": "x"},
        {"event_id": "e4", "session_id": "s", "timestamp": 1, "kind": "gossip", "text": "x"},
        {"event_id": "e5", "session_id": "s", "timestamp": "2999-01-01T00:00:00Z", "kind": "note", "text": "x"},
        {"event_id": "e6", "project_id": "other", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"},
        good("g1"),
        good("g2"),
    ]);
    let reply = request(&client, "memory.ingest.bad", serde_json::to_vec(&batch)?).await?;
    assert_eq!(reply["accepted"], 2, "{reply}");
    let rejected: Vec<(u64, String, String)> = reply["rejected"]
        .as_array()
        .context("rejected list")?
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap_or(99),
                r["error"]["code"].as_str().unwrap_or_default().to_owned(),
                r["error"]["field"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(u64, String, String)> = [
        (1, "invalid_type", "session_id"),
        (2, "missing_field", "session_id"),
        (3, "missing_field", "timestamp"),
        (4, "unknown_kind", "kind"),
        (5, "timestamp_in_future", "timestamp"),
        (6, "project_mismatch", "project_id"),
        (7, "duplicate_in_batch", "event_id"),
    ]
    .iter()
    .map(|(i, c, f)| (*i, (*c).to_owned(), (*f).to_owned()))
    .collect();
    assert_eq!(rejected, expected);
    let reply = request(
        &client,
        "memory.ingest.bad",
        serde_json::to_vec(&json!([oversize, good("g3")]))?,
    )
    .await?;
    assert_eq!(
        reply["accepted"], 1,
        "an oversize event inside a batch is rejected alone: {reply}"
    );
    assert_eq!(
        reply["rejected"][0]["error"]["code"], "too_large",
        "{reply}"
    );

    // A bad project token in the subject.
    let reply = request(
        &client,
        "memory.ingest.no$pe",
        serde_json::to_vec(&good("x"))?,
    )
    .await?;
    assert_eq!(reply["error"]["code"], "invalid_argument", "{reply}");

    // Poison JetStream message: terminated, parked, counted; good ones around it stored.
    let context = async_nats::jetstream::new(client.clone());
    let started = Instant::now();
    while context.get_stream("MEMORY_EVENTS").await.is_err()
        && started.elapsed() < Duration::from_secs(20)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    context
        .publish(
            "memory.events.bad",
            serde_json::to_vec(&good("js-ok-1"))?.into(),
        )
        .await?
        .await?;
    context
        .publish(
            "memory.events.bad",
            b"{\"session_id\": \"s\", \"kind\": \"note\""
                .to_vec()
                .into(),
        )
        .await?
        .await?;
    context
        .publish(
            "memory.events.bad",
            serde_json::to_vec(&good("js-ok-2"))?.into(),
        )
        .await?
        .await?;
    wait_for_events(&client, "bad", 5, Duration::from_secs(30)).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(&client).await?["dead_letters"] != 1 {
        if Instant::now() > deadline {
            bail!("poison message not parked: {}", status(&client).await?);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // NATS restarts under the daemon: it reconnects and keeps serving, nothing lost.
    stack.nats.restart()?;
    let client = stack.nats.connect().await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match request(
            &client,
            "memory.ingest.bad",
            serde_json::to_vec(&good("after-restart"))?,
        )
        .await
        {
            Ok(reply) if reply["accepted"] == 1 => break,
            _ if Instant::now() > deadline => {
                bail!("daemon did not come back after the NATS restart")
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    wait_for_events(&client, "bad", 6, Duration::from_secs(10)).await?;
    let (code, metrics) = http_get(&format!("http://127.0.0.1:{}/metrics", stack.metrics_port))?;
    assert_eq!(code, 200);
    assert!(
        metrics.contains("memory_ingest_events_total{result=\"rejected\"}"),
        "rejections counted"
    );
    assert!(
        metrics.contains("memory_dead_letters_total 1"),
        "dead letter counted"
    );
    let exit = stack.daemon.terminate_within(Duration::from_secs(30))?;
    assert!(exit.success());
    Ok(())
}

/// The sample conversations, ingested over request/reply in batches.
async fn ingest_sample(client: &async_nats::Client) -> anyhow::Result<()> {
    let path = memory_e2e_tests::repo_root().join("sample/conversations.jsonl");
    let lines: Vec<Value> = std::fs::read_to_string(path)?
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let mut by_project: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in lines {
        let project = line["project_id"].as_str().unwrap_or("default").to_owned();
        by_project.entry(project).or_default().push(line);
    }
    for (project, events) in by_project {
        for chunk in events.chunks(100) {
            let reply = request(
                client,
                &format!("memory.ingest.{project}"),
                serde_json::to_vec(chunk)?,
            )
            .await?;
            assert_eq!(
                reply["accepted"].as_u64(),
                Some(chunk.len() as u64),
                "{reply}"
            );
        }
    }
    Ok(())
}

/// Polls a query until `done` holds for its answer (at most three minutes: embedding
/// the sample's events, grips, nodes and ideas takes about a minute on two idle cores,
/// several under a parallel build).
async fn query_until(
    client: &async_nats::Client,
    subject: &str,
    body: Value,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let answer = request(client, subject, serde_json::to_vec(&body)?).await?;
        if done(&answer) {
            return Ok(answer);
        }
        if Instant::now() > deadline {
            bail!("{subject} never satisfied the condition; last answer: {answer}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_service_answers_over_nats_and_live_work_is_navigable() -> anyhow::Result<()> {
    let stack = start_stack()?;
    let client = stack.nats.connect().await?;
    ingest_sample(&client).await?;
    // Every consumer has applied everything: the TOC is complete.
    query_until(&client, "memory.admin.status", json!({}), |report| {
        report["consumers"].as_array().is_some_and(|consumers| {
            consumers.len() >= 4 && consumers.iter().all(|c| c["lag"].as_u64() == Some(0))
        })
    })
    .await?;

    // The vector indexer embeds at its own pace (a backfill may lag; BM25 covers what
    // is not embedded yet): wait until it has everything.
    query_until(
        &client,
        "memory.query.webapp.teleport.status",
        json!({}),
        |status| {
            status["vector_healthy"] == true
                && status["vector_lag"] == 0
                && status["vector_doc_count"].as_u64().unwrap_or(0) > 500
        },
    )
    .await?;

    // Discovery: a NATS micro service with one endpoint per call.
    let ping = request(&client, "$SRV.PING.memory-query", Vec::new()).await?;
    assert_eq!(ping["name"], "memory-query", "{ping}");

    // The TOC is built: years, and a drill-down to the planted decision.
    let root = query_until(
        &client,
        "memory.query.webapp.toc.root",
        json!({}),
        |answer| {
            answer["years"]
                .as_array()
                .is_some_and(|years| !years.is_empty())
        },
    )
    .await?;
    assert_eq!(root["years"][0]["node_id"], "toc:year:2026", "{root}");
    let search = query_until(
        &client,
        "memory.query.webapp.search",
        json!({"id": 7, "query": "what did we decide about JWT expiry?", "token_budget": 300}),
        |answer| answer["results"].as_array().is_some_and(|r| !r.is_empty()),
    )
    .await?;
    // Both accelerator tiers are healthy and caught up: the answer is hybrid.
    assert_eq!(
        (search["id"].clone(), search["tier"].clone()),
        (json!(7), json!("hybrid")),
        "{search}"
    );
    assert!(search["fallback_reason"].is_null(), "{search}");
    assert!(
        search["token_estimate"].as_u64().unwrap_or(u64::MAX) <= 300,
        "{search}"
    );
    let evidence: Vec<&str> = search["results"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|result| result["evidence"].as_array().into_iter().flatten())
        .filter_map(|event| event["text"].as_str())
        .collect();
    assert!(
        evidence.iter().any(|text| text.contains("15 minutes")),
        "the decision is in the evidence: {evidence:?}"
    );
    let navigation = request(
        &client,
        "memory.query.webapp.navigate",
        serde_json::to_vec(
            &json!({"query": "JWT expiry decision in January", "now": "2026-02-20"}),
        )?,
    )
    .await?;
    assert_eq!(
        navigation["time_hint"]["node_id"], "toc:month:2026-01",
        "{navigation}"
    );
    assert!(
        navigation["explanation"]
            .as_str()
            .unwrap_or_default()
            .starts_with("## Search Path"),
        "{navigation}"
    );
    assert!(
        !navigation["evidence"].as_array().is_none_or(Vec::is_empty),
        "{navigation}"
    );

    // Errors are precise JSON, and nothing crosses projects.
    let empty = request(
        &client,
        "memory.query.webapp.search",
        br#"{"query": " "}"#.to_vec(),
    )
    .await?;
    assert_eq!(empty["error"]["code"], "invalid_argument", "{empty}");
    let bad_phrases = request(
        &client,
        "memory.query.webapp.search",
        br#"{"query": "jwt", "phrases": ["a", "b", "c", "d", "e", "f"]}"#.to_vec(),
    )
    .await?;
    assert_eq!(
        bad_phrases["error"]["code"], "invalid_argument",
        "{bad_phrases}"
    );

    // Each tier can be asked for; the semantic tier finds the decision by meaning
    // alone (no word of the question is in it but "token"), and phrases and filters
    // reach both accelerator tiers.
    let semantic = request(
        &client,
        "memory.query.webapp.search",
        br#"{"query": "how long should access tokens stay valid", "mode": "semantic", "token_budget": 400}"#
            .to_vec(),
    )
    .await?;
    assert_eq!(semantic["tier"], "vector", "{semantic}");
    assert!(
        semantic["results"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|result| result["match_type"] == "semantic"),
        "{semantic}"
    );
    let phrased = request(
        &client,
        "memory.query.webapp.search",
        serde_json::to_vec(&json!({
            "query": "what did we decide?", "phrases": ["JWT expiry", "access token lifetime"],
            "doc_type": "event", "token_budget": 400
        }))?,
    )
    .await?;
    assert_eq!(phrased["tier"], "hybrid", "{phrased}");
    let results = phrased["results"].as_array().cloned().unwrap_or_default();
    assert!(!results.is_empty(), "{phrased}");
    assert!(
        results.iter().all(|result| result["doc_type"] == "event"),
        "{phrased}"
    );
    assert!(
        results.iter().any(|result| result["match_type"] == "both"),
        "{phrased}"
    );
    let nearest = request(
        &client,
        "memory.query.webapp.vector.search",
        br#"{"query": "token lifetime", "limit": 3}"#.to_vec(),
    )
    .await?;
    assert_eq!(
        nearest["results"].as_array().map(Vec::len),
        Some(3),
        "{nearest}"
    );
    let missing = request(
        &client,
        "memory.query.ingest-pipeline.toc.node",
        br#"{"node_id": "toc:day:2026-01-05"}"#.to_vec(),
    )
    .await?;
    assert_eq!(missing["error"]["code"], "not_found", "{missing}");

    // The CLI sends the same call to the daemon.
    let output = std::process::Command::new(build_daemon()?)
        .args([
            "search",
            "--nats-url",
            &stack.nats.url(),
            "--project",
            "webapp",
            "--json",
        ])
        .arg("rate limiting")
        .output()?;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cli: Value = serde_json::from_slice(&output.stdout)?;
    assert_eq!(cli["tier"], "hybrid", "{cli}");

    // A session still going is in its day node within moments, not at midnight.
    let now_ms = memory_types::now_ms();
    let live = json!({"event_id": "live-1", "session_id": "live", "timestamp": now_ms,
                      "kind": "user_message", "text": "Start the zanzibar authorization spike today."});
    let reply = request(&client, "memory.ingest.webapp", serde_json::to_vec(&live)?).await?;
    assert_eq!(reply["accepted"], 1, "{reply}");
    let found = query_until(
        &client,
        "memory.query.webapp.search",
        json!({"query": "zanzibar spike", "mode": "toc"}),
        |answer| answer["results"][0]["evidence"][0]["event_id"] == "live-1",
    )
    .await?;
    assert_eq!(found["tier"], "toc", "{found}");
    // ... and keyword-searchable (how fast is measured by `loadgen searchable`, not here).
    query_until(
        &client,
        "memory.query.webapp.teleport.search",
        json!({"query": "zanzibar", "doc_type": "event"}),
        |answer| answer["results"][0]["doc_id"] == "live-1",
    )
    .await?;

    // Per-endpoint statistics of the micro service.
    let stats = request(&client, "$SRV.STATS.memory-query", Vec::new()).await?;
    let search_requests: u64 = stats["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|endpoint| endpoint["name"] == "search")
        .filter_map(|endpoint| endpoint["num_requests"].as_u64())
        .sum();
    assert!(search_requests >= 4, "{stats}");

    // The BM25 teleport calls, status, rebuild and prune over NATS.
    let status = request(
        &client,
        "memory.query.webapp.teleport.status",
        b"{}".to_vec(),
    )
    .await?;
    assert_eq!(
        (
            status["bm25_enabled"].clone(),
            status["bm25_healthy"].clone()
        ),
        (json!(true), json!(true)),
        "{status}"
    );
    let num_docs = status["bm25_doc_count"].as_u64().unwrap_or(0);
    assert!(num_docs > 300, "{status}");
    let rebuilt = request(
        &client,
        "memory.admin.rebuild",
        br#"{"index_type": "bm25"}"#.to_vec(),
    )
    .await?;
    assert!(
        rebuilt["num_docs"].as_u64().unwrap_or(0) >= num_docs,
        "{rebuilt}"
    );
    let status = request(
        &client,
        "memory.query.webapp.teleport.status",
        b"{}".to_vec(),
    )
    .await?;
    assert_eq!(status["bm25_doc_count"], rebuilt["num_docs"], "{status}");
    let grips = request(
        &client,
        "memory.query.webapp.teleport.search",
        br#"{"query": "refresh token reuse iOS", "doc_type": "grip", "limit": 3}"#.to_vec(),
    )
    .await?;
    assert!(
        grips["results"].as_array().is_some_and(
            |hits| !hits.is_empty() && hits.iter().all(|hit| hit["doc_type"] == "grip")
        ),
        "{grips}"
    );
    let pruned = request(
        &client,
        "memory.admin.prune",
        br#"{"age_days": 1, "level": "segment"}"#.to_vec(),
    )
    .await?;
    // Both indexes drop the same documents.
    assert!(
        pruned["bm25"]["pruned"]["event"].as_u64().unwrap_or(0) > 300,
        "{pruned}"
    );
    assert_eq!(
        pruned["vector"]["pruned"], pruned["bm25"]["pruned"],
        "{pruned}"
    );
    let status = request(
        &client,
        "memory.query.webapp.teleport.status",
        b"{}".to_vec(),
    )
    .await?;
    assert_eq!(
        status["bm25_last_prune_ms"], pruned["bm25"]["at_ms"],
        "{status}"
    );
    // Only today's live event is younger than a day.
    assert_eq!(status["bm25_doc_counts"]["event"], 1, "{status}");
    assert_eq!(
        status["vector_doc_count"], status["bm25_doc_count"],
        "{status}"
    );
    // Pruned detail is still answered: days and weeks stay in the index, the TOC keeps all.
    let after = request(
        &client,
        "memory.query.webapp.search",
        serde_json::to_vec(&json!({"query": "what did we decide about JWT expiry?"}))?,
    )
    .await?;
    assert!(
        after["results"].as_array().is_some_and(|r| !r.is_empty()),
        "{after}"
    );
    let (_, metrics) = http_get(&format!("http://127.0.0.1:{}/metrics", stack.metrics_port))?;
    for name in [
        "bm25_index_doc_count{doc_type=\"toc_node\"}",
        "bm25_search_latency_seconds_bucket",
        "bm25_commit_total",
        "bm25_index_operations_total{op=\"prune\"}",
        "bm25_rebuild_duration_seconds",
        "bm25_index_size_bytes",
        "vector_index_doc_count",
        "vector_index_lag 0",
        "vector_search_latency_seconds_bucket",
        "embedding_batch_latency_seconds_bucket{use=\"query\"",
        "embeddings_total{use=\"index\"}",
        "vector_index_pruned_total{doc_type=\"event\"}",
        "search_requests_total{fallback=\"no\",tier=\"hybrid\"}",
        "search_latency_seconds_bucket{tier=\"hybrid\"",
    ] {
        assert!(metrics.contains(name), "/metrics lacks {name}");
    }
    drop(stack);
    Ok(())
}

/// Environment that switches the vector tier off, for tests about the TOC and BM25:
/// each embedded CLI run would otherwise wait for the log to be embedded.
const KEYWORD_ONLY: (&str, &str) = ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false");

/// Runs the CLI on a data dir with extra environment; returns stdout.
fn cli(data_dir: &Path, env: &[(&str, &str)], args: &[&str]) -> anyhow::Result<String> {
    let output = std::process::Command::new(build_daemon()?)
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .envs(env.iter().copied())
        .output()?;
    if !output.status.success() {
        bail!(
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

#[test]
fn an_llm_writes_the_summaries_when_configured_and_its_failure_falls_back() -> anyhow::Result<()> {
    use memory_llm::testing::{ScriptedResponse, ScriptedServer, refused_base_url};
    let sample = memory_e2e_tests::repo_root().join("sample/conversations.jsonl");
    let sample = sample.to_string_lossy().into_owned();
    let answer = json!({"title": "LLM: authentication and deployment work", "summary": null,
                        "bullets": [{"text": "Worked on auth", "grips": []}], "keywords": ["auth"]});
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(&answer.to_string()); 400]);
    let base_url = server.base_url();
    let llm_env = [&scripted_llm_env(&base_url)[..], &[KEYWORD_ONLY]].concat();
    let with_llm = tempfile::tempdir()?;
    cli(
        with_llm.path(),
        &llm_env,
        &["ingest", "--file", &sample, "--wait"],
    )?;
    let root: Value = serde_json::from_str(&cli(
        with_llm.path(),
        &[KEYWORD_ONLY],
        &["toc", "root", "--project", "webapp", "--json"],
    )?)?;
    assert_eq!(
        root["years"][0]["title"], "LLM: authentication and deployment work",
        "{root}"
    );
    let requests = server.requests();
    assert!(!requests.is_empty());
    assert_eq!(requests[0].json()["model"], "scripted-model");

    // The model is down: every summary falls back to extractive, nothing stalls.
    let refused = refused_base_url();
    let down_env = [
        ("AGENT_MEMORY_LLM__ENABLED", "true"),
        ("AGENT_MEMORY_LLM__BASE_URL", refused.as_str()),
        ("AGENT_MEMORY_LLM__MAX_RETRIES", "0"),
        KEYWORD_ONLY,
    ];
    let without = tempfile::tempdir()?;
    cli(
        without.path(),
        &down_env,
        &["ingest", "--file", &sample, "--wait"],
    )?;
    let root: Value = serde_json::from_str(&cli(
        without.path(),
        &[KEYWORD_ONLY],
        &["toc", "root", "--project", "webapp", "--json"],
    )?)?;
    let title = root["years"][0]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("2026"),
        "extractive title after fallback: {root}"
    );
    Ok(())
}

#[test]
fn admin_rebuild_replays_the_same_tree_from_the_log() -> anyhow::Result<()> {
    let sample = memory_e2e_tests::repo_root().join("sample/conversations.jsonl");
    let data = tempfile::tempdir()?;
    cli(
        data.path(),
        &[KEYWORD_ONLY],
        &["ingest", "--file", &sample.to_string_lossy(), "--wait"],
    )?;
    let snapshot = || -> anyhow::Result<Vec<String>> {
        let mut out = Vec::new();
        for args in [
            vec!["toc", "root"],
            vec!["toc", "browse", "toc:month:2026-01"],
            vec!["toc", "node", "toc:day:2026-01-05"],
            vec!["search", "why were iOS users logged out?", "--mode", "toc"],
        ] {
            let mut args = args;
            args.extend(["--project", "webapp", "--json"]);
            let mut value: Value =
                serde_json::from_str(&cli(data.path(), &[KEYWORD_ONLY], &args)?)?;
            if let Some(map) = value.as_object_mut() {
                map.remove("took_ms");
            }
            out.push(value.to_string());
        }
        Ok(out)
    };
    // BM25 scores move a little when documents are rewritten (tantivy counts deleted
    // documents until segments merge), so the BM25 answer is compared by its best hits.
    let bm25_top = || -> anyhow::Result<Vec<Value>> {
        let answer: Value = serde_json::from_str(&cli(
            data.path(),
            &[KEYWORD_ONLY],
            &[
                "search",
                "why were iOS users logged out?",
                "--project",
                "webapp",
                "--json",
            ],
        )?)?;
        assert_eq!(answer["tier"], "bm25", "{answer}");
        Ok(answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .take(4)
            .map(|result| result["doc_id"].clone())
            .collect())
    };
    let before = snapshot()?;
    let top_before = bm25_top()?;
    let report = cli(
        data.path(),
        &[KEYWORD_ONLY],
        &["admin", "rebuild", "--projection", "toc"],
    )?;
    assert!(report.contains("rebuilt the TOC"), "{report}");
    assert_eq!(
        snapshot()?,
        before,
        "the rebuilt tree answers exactly as before"
    );
    assert_eq!(bm25_top()?, top_before);
    // The BM25 index: rebuilt into a new generation with the same answers; deleted, it
    // is rebuilt from the log at the next start; disabled, search says so and answers
    // from the TOC.
    let report = cli(
        data.path(),
        &[KEYWORD_ONLY],
        &["admin", "rebuild-index", "--json"],
    )?;
    let report: Value = serde_json::from_str(&report)?;
    assert!(report["num_docs"].as_u64().unwrap_or(0) > 300, "{report}");
    assert_eq!(
        bm25_top()?,
        top_before,
        "the rebuilt index answers as before"
    );
    std::fs::remove_dir_all(data.path().join("bm25-index"))?;
    assert_eq!(
        bm25_top()?,
        top_before,
        "a deleted index is rebuilt from the log"
    );
    let disabled = [
        ("AGENT_MEMORY_TELEPORT__BM25__ENABLED", "false"),
        KEYWORD_ONLY,
    ];
    let answer: Value = serde_json::from_str(&cli(
        data.path(),
        &disabled,
        &[
            "search",
            "why were iOS users logged out?",
            "--project",
            "webapp",
            "--json",
        ],
    )?)?;
    assert_eq!(answer["tier"], "toc", "{answer}");
    assert!(
        answer["fallback_reason"]
            .as_str()
            .unwrap_or("")
            .contains("disabled"),
        "{answer}"
    );
    let status: Value = serde_json::from_str(&cli(
        data.path(),
        &[KEYWORD_ONLY],
        &["teleport", "status", "--json"],
    )?)?;
    assert_eq!(status["bm25_healthy"], true, "{status}");
    let hits = cli(
        data.path(),
        &[KEYWORD_ONLY],
        &[
            "teleport",
            "search",
            "refresh token",
            "--type",
            "grip",
            "--project",
            "webapp",
        ],
    )?;
    assert!(hits.contains("grip:"), "{hits}");

    // The vector tier, switched on: the first start embeds the log, then search is
    // hybrid. Without its model files it is unhealthy, says how to fix it, and search
    // answers from BM25 alone.
    let search = |env: &[(&str, &str)]| -> anyhow::Result<Value> {
        Ok(serde_json::from_str(&cli(
            data.path(),
            env,
            &[
                "search",
                "why were iOS users logged out?",
                "--project",
                "webapp",
                "--json",
            ],
        )?)?)
    };
    let hybrid = search(&[])?;
    assert_eq!(hybrid["tier"], "hybrid", "{hybrid}");
    assert!(
        hybrid["results"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|result| result["vector_rank"].is_u64()),
        "{hybrid}"
    );
    let missing_model = [(
        "AGENT_MEMORY_TELEPORT__VECTOR__MODEL_DIR",
        "/nonexistent/all-MiniLM-L6-v2",
    )];
    let keyword = search(&missing_model)?;
    assert_eq!(keyword["tier"], "bm25", "{keyword}");
    let reason = keyword["fallback_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("vector tier is unhealthy") && reason.contains("setup.sh"),
        "{keyword}"
    );
    let status: Value = serde_json::from_str(&cli(
        data.path(),
        &missing_model,
        &["teleport", "status", "--json"],
    )?)?;
    assert_eq!(
        (
            status["vector_enabled"].clone(),
            status["vector_healthy"].clone()
        ),
        (json!(true), json!(false)),
        "{status}"
    );
    Ok(())
}

/// SIGTERM while a projection's step waits on a model that does not answer: the daemon
/// still exits within the harness's 30 s (the step is abandoned and replayed from its
/// cursor at the next start) instead of holding the stop for as long as the model
/// takes; restarted, it serves with every acknowledged event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_does_not_wait_for_a_step_stuck_on_the_model() -> anyhow::Result<()> {
    use memory_llm::testing::{ScriptedResponse, ScriptedServer};
    let answer = json!({"title": "never in time", "summary": null, "bullets": [], "keywords": []});
    let mut stuck = ScriptedResponse::chat(&answer.to_string());
    stuck.delay = Duration::from_secs(120);
    let server = ScriptedServer::start(vec![stuck; 50]);
    let base_url = server.base_url();
    let env = [
        &scripted_llm_env(&base_url)[..],
        &[("AGENT_MEMORY_LLM__TIMEOUT_MS", "300000"), KEYWORD_ONLY],
    ]
    .concat();
    let nats = NatsServer::start()?;
    let dir = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon_on(&nats.url(), dir.path(), free_port(), &env)?;
    let client = nats.connect().await?;
    ingest_sample(&client).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.requests().is_empty() {
        if Instant::now() > deadline {
            bail!("no step ever asked the model");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = daemon.terminate()?;
    assert!(status.success(), "{status}");
    let stopped = daemon.stderr();
    assert!(stopped.contains("stopping without it"), "{stopped}");

    let (mut daemon, _) = serve_daemon_on(&nats.url(), dir.path(), free_port(), &[KEYWORD_ONLY])?;
    daemon.terminate()?;
    let sample =
        std::fs::read_to_string(memory_e2e_tests::repo_root().join("sample/conversations.jsonl"))?;
    let sent = sample
        .lines()
        .filter(|line| line.contains("\"project_id\": \"webapp\""))
        .count();
    assert!(sent > 0);
    assert_eq!(export_events(dir.path(), "webapp")?.len(), sent);
    Ok(())
}
