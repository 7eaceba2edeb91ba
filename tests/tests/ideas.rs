//! The ideas graph end to end: a real nats-server, the real daemon (store, indexes,
//! embedding model, the heuristic indexing agent), a conversation written for it, and
//! every check over NATS — a decision reversed two sessions later, a question answered
//! in a later session, a todo completed, entity aliases merged, a greeting skipped,
//! search preferring the current decision, reinforcement in the log, and a rebuild that
//! gives the same graph; and an ideas backfill killed half-way (`kill -9`) that the
//! restarted daemon carries on to the graph a backfill that ran through makes.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memory_e2e_tests::{Daemon, NatsServer, serve_daemon};
use serde_json::{Value, json};

const PROJECT: &str = "ideas-e2e";
/// 2026-03-02T09:00:00Z.
const DAY_ONE: u64 = 1_772_442_000_000;
const DAY_MS: u64 = 86_400_000;
const MINUTE_MS: u64 = 60_000;

fn turn(id: &str, session: &str, at: u64, kind: &str, text: &str) -> Value {
    json!({"event_id": id, "session_id": session, "project_id": PROJECT, "timestamp": at,
           "kind": kind, "text": text})
}

/// Three sessions a week apart: a decision made and reversed, a question asked and
/// answered later, a todo opened and completed, one database under three names.
fn conversation() -> Vec<Value> {
    let a = DAY_ONE;
    let b = DAY_ONE + 3 * DAY_MS;
    let c = DAY_ONE + 7 * DAY_MS;
    vec![
        json!({"event_id": "a1", "session_id": "sess-a", "project_id": PROJECT, "timestamp": a, "kind": "session_start"}),
        turn("a2", "sess-a", a + MINUTE_MS, "user_message", "Hi there!"),
        turn(
            "a3",
            "sess-a",
            a + 2 * MINUTE_MS,
            "user_message",
            "Should we keep login sessions in Postgres or in Redis?",
        ),
        turn(
            "a4",
            "sess-a",
            a + 3 * MINUTE_MS,
            "assistant_message",
            "Login sessions belong in Redis: they expire on their own, while Postgres would need a cleanup job.",
        ),
        turn(
            "a5",
            "sess-a",
            a + 4 * MINUTE_MS,
            "user_message",
            "We decided: the session_cache_ttl is 30 minutes, stored in Redis.",
        ),
        turn(
            "a6",
            "sess-a",
            a + 5 * MINUTE_MS,
            "note",
            "TODO: add a load test for the session cache before the launch.",
        ),
        turn(
            "a7",
            "sess-a",
            a + 6 * MINUTE_MS,
            "user_message",
            "Which queue should the email jobs go through?",
        ),
        json!({"event_id": "a8", "session_id": "sess-a", "project_id": PROJECT, "timestamp": a + 7 * MINUTE_MS, "kind": "session_end"}),
        turn(
            "b1",
            "sess-b",
            b,
            "user_message",
            "I prefer pg over MySQL for anything relational, so the ledger goes in Postgres.",
        ),
        turn(
            "b2",
            "sess-b",
            b + MINUTE_MS,
            "assistant_message",
            "PostgreSQL it is: the ledger tables live in the main database.",
        ),
        turn(
            "c1",
            "sess-c",
            c,
            "user_message",
            "We're changing the decision: the session_cache_ttl becomes 2 hours, users complained about being logged out.",
        ),
        turn(
            "c2",
            "sess-c",
            c + MINUTE_MS,
            "assistant_message",
            "The email jobs go through the SQS queue; a worker drains the queue every minute.",
        ),
        turn(
            "c3",
            "sess-c",
            c + 2 * MINUTE_MS,
            "assistant_message",
            "Done: the load test for the session cache is committed and passing.",
        ),
        turn("c4", "sess-c", c + 3 * MINUTE_MS, "user_message", "thanks"),
    ]
}

struct Stack {
    nats: NatsServer,
    daemon: Daemon,
    _data_dir: tempfile::TempDir,
}

fn start() -> anyhow::Result<Stack> {
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    // A short batch window keeps the test quick; the agent's behaviour is the same.
    let env = [("AGENT_MEMORY_INDEXING__WINDOW_MS", "100")];
    let (daemon, _metrics) = serve_daemon(&nats.url(), data_dir.path(), &env)?;
    Ok(Stack {
        nats,
        daemon,
        _data_dir: data_dir,
    })
}

async fn call(client: &async_nats::Client, method: &str, body: Value) -> anyhow::Result<Value> {
    let subject = format!("memory.query.{PROJECT}.{method}");
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        client.request(subject.clone(), serde_json::to_vec(&body)?.into()),
    )
    .await
    .with_context(|| format!("{subject} timed out"))??;
    let value: Value = serde_json::from_slice(&reply.payload)?;
    if value.get("error").is_some() {
        bail!("{subject} {body} failed: {value}");
    }
    Ok(value)
}

async fn admin(client: &async_nats::Client, subject: &str, body: Value) -> anyhow::Result<Value> {
    let reply = tokio::time::timeout(
        Duration::from_secs(120),
        client.request(subject.to_owned(), serde_json::to_vec(&body)?.into()),
    )
    .await
    .with_context(|| format!("{subject} timed out"))??;
    Ok(serde_json::from_slice(&reply.payload)?)
}

/// Waits until every consumer (the indexing agent and the indexes included) has
/// applied the whole log.
async fn caught_up(client: &async_nats::Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let report = admin(client, "memory.admin.status", json!({})).await?;
        let consumers = report["consumers"].as_array().cloned().unwrap_or_default();
        let agent = consumers
            .iter()
            .any(|consumer| consumer["name"] == "indexing_agent");
        if agent
            && consumers
                .iter()
                .all(|consumer| consumer["lag"].as_u64() == Some(0))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("consumers never caught up: {report}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn contents(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter_map(|result| result["content"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn find<'a>(answer: &'a Value, needle: &str) -> Option<&'a Value> {
    answer["results"].as_array()?.iter().find(|result| {
        result["content"]
            .as_str()
            .is_some_and(|content| content.contains(needle))
    })
}

/// What the graph holds, as the calls show it (salience left out: recalls raise it).
async fn graph_view(client: &async_nats::Client) -> anyhow::Result<Value> {
    let strip = |mut answer: Value| {
        if let Some(results) = answer["results"].as_array_mut() {
            for result in results {
                if let Some(object) = result.as_object_mut() {
                    object.remove("salience");
                }
            }
        }
        answer
    };
    Ok(json!({
        "decisions": strip(call(client, "ideas.decisions", json!({"include_superseded": true, "limit": 100})).await?),
        "questions": strip(call(client, "ideas.open_questions", json!({"limit": 100})).await?),
        "todos": strip(call(client, "ideas.open_todos", json!({"limit": 100})).await?),
        "entities": call(client, "entities.search", json!({"query": "", "limit": 100})).await?,
        "spans": call(client, "spans.list", json!({"session_id": "sess-a"})).await?,
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graph_knows_what_is_still_true() -> anyhow::Result<()> {
    let mut stack = start()?;
    let client = stack.nats.connect().await?;
    let reply = admin(
        &client,
        &format!("memory.ingest.{PROJECT}"),
        Value::Array(conversation()),
    )
    .await?;
    assert_eq!(reply["accepted"].as_u64(), Some(14), "{reply}");
    caught_up(&client).await?;

    // The reversed decision: the new one by default, the old one only on request.
    let current = call(
        &client,
        "ideas.search",
        json!({"query": "session cache ttl"}),
    )
    .await?;
    assert!(
        find(&current, "2 hours").is_some(),
        "current decision missing: {current}"
    );
    assert!(
        find(&current, "30 minutes").is_none(),
        "superseded decision shown by default: {current}"
    );
    let all = call(
        &client,
        "ideas.search",
        json!({"query": "session cache ttl", "include_superseded": true}),
    )
    .await?;
    let old = find(&all, "30 minutes").with_context(|| format!("old decision: {all}"))?;
    let new = find(&all, "2 hours").with_context(|| format!("new decision: {all}"))?;
    assert_eq!(old["is_superseded"], true, "{old}");
    assert_eq!(old["superseded_by"]["idea_id"], new["idea_id"], "{old}");
    assert_eq!(new["is_superseded"], false, "{new}");
    // What was true on day four: the 30-minute decision, not yet superseded.
    let then = call(
        &client,
        "ideas.search",
        json!({"query": "session cache ttl", "as_of": DAY_ONE + 4 * DAY_MS}),
    )
    .await?;
    let old_then = find(&then, "30 minutes").with_context(|| format!("as_of: {then}"))?;
    assert_eq!(old_then["is_superseded"], false, "{old_then}");
    assert!(find(&then, "2 hours").is_none(), "{then}");

    // The question of session A was answered in session C; the todo was completed.
    let open = call(&client, "ideas.open_questions", json!({})).await?;
    assert!(
        !contents(&open)
            .iter()
            .any(|content| content.contains("email jobs")),
        "answered question still open: {open}"
    );
    let todos = call(&client, "ideas.open_todos", json!({})).await?;
    assert!(
        !contents(&todos)
            .iter()
            .any(|content| content.contains("load test")),
        "completed todo still open: {todos}"
    );

    // One database under three names.
    let entities = call(&client, "entities.search", json!({"query": "postgres"})).await?;
    let postgres: Vec<&Value> = entities["results"]
        .as_array()
        .map(|results| {
            results
                .iter()
                .filter(|entity| entity["name"] == "PostgreSQL")
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(postgres.len(), 1, "{entities}");
    for alias in ["pg", "Postgres"] {
        let found = call(&client, "entities.search", json!({"query": alias})).await?;
        assert!(
            found["results"]
                .as_array()
                .is_some_and(|results| results.iter().any(|e| e["name"] == "PostgreSQL")),
            "{alias}: {found}"
        );
    }

    // The greeting was skipped.
    let context = call(&client, "session_context", json!({"session_id": "sess-a"})).await?;
    let skipped = context["skipped_events"].to_string();
    assert!(skipped.contains("a2"), "greeting not skipped: {context}");

    // `search` ranks the current decision above the stale one and says which is which.
    let search = call(
        &client,
        "search",
        json!({"query": "what is the session cache ttl", "mode": "hybrid", "include_superseded": true}),
    )
    .await?;
    let results = search["results"].as_array().cloned().unwrap_or_default();
    let position = |needle: &str| {
        results.iter().position(|result| {
            result["evidence"].as_array().is_some_and(|events| {
                events
                    .iter()
                    .any(|e| e["text"].as_str().is_some_and(|t| t.contains(needle)))
            })
        })
    };
    let (current_at, stale_at) = (position("2 hours"), position("30 minutes"));
    assert!(
        current_at.is_some() && (stale_at.is_none() || current_at < stale_at),
        "current {current_at:?} stale {stale_at:?}: {search}"
    );
    assert!(
        results.iter().any(|result| result["is_superseded"] == true
            && result["superseded_by"]["content"]
                .as_str()
                .is_some_and(|c| c.contains("2 hours"))),
        "no result says it was superseded: {search}"
    );

    // Searches that returned ideas are in the log as memory_recalled events.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = call(
            &client,
            "events.get",
            json!({"session_id": "memory-recall", "limit": 100}),
        )
        .await?;
        if events["events"]
            .as_array()
            .is_some_and(|events| !events.is_empty())
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("no memory_recalled event: {events}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A rebuild from the log gives the same graph.
    caught_up(&client).await?;
    let before = graph_view(&client).await?;
    let answer = admin(
        &client,
        "memory.admin.rebuild",
        json!({"projection": "ideas"}),
    )
    .await?;
    assert_eq!(answer["status"], "rebuilding", "{answer}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    caught_up(&client).await?;
    let after = graph_view(&client).await?;
    assert_eq!(before, after, "the rebuilt graph differs");

    let exit = stack.daemon.terminate_within(Duration::from_secs(30))?;
    assert!(exit.success());
    Ok(())
}

/// Sessions of routine work, three turns each: a question, a decision, a todo.
fn routine_sessions(count: u64) -> Vec<Value> {
    (0..count)
        .flat_map(|i| {
            let session = format!("routine-{i:03}");
            let at = DAY_ONE + 2 * DAY_MS + i * 10 * MINUTE_MS;
            vec![
                turn(
                    &format!("r{i}-1"),
                    &session,
                    at,
                    "user_message",
                    &format!("Which queue should worker {i} read from?"),
                ),
                turn(
                    &format!("r{i}-2"),
                    &session,
                    at + MINUTE_MS,
                    "assistant_message",
                    &format!("We decided worker {i} reads from queue-{i}, partitioned by tenant."),
                ),
                turn(
                    &format!("r{i}-3"),
                    &session,
                    at + 2 * MINUTE_MS,
                    "user_message",
                    &format!("TODO: add a retry test for worker {i}."),
                ),
            ]
        })
        .collect()
}

/// Everything the graph holds that the calls list, without salience.
async fn whole_graph(client: &async_nats::Client) -> anyhow::Result<Value> {
    let mut view = json!({
        "decisions": call(client, "ideas.decisions", json!({"include_superseded": true, "limit": 1000})).await?,
        "questions": call(client, "ideas.open_questions", json!({"limit": 1000})).await?,
        "todos": call(client, "ideas.open_todos", json!({"limit": 1000})).await?,
        "entities": call(client, "entities.search", json!({"query": "", "limit": 1000})).await?,
    });
    for list in ["decisions", "questions", "todos"] {
        if let Some(results) = view[list]["results"].as_array_mut() {
            for result in results {
                if let Some(object) = result.as_object_mut() {
                    object.remove("salience");
                }
            }
        }
    }
    Ok(view)
}

/// Waits until `status` names no unfinished ideas backfill and every consumer is at the
/// head.
async fn backfill_finished(client: &async_nats::Client) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let report = admin(client, "memory.admin.status", json!({})).await?;
        if report.get("ideas_backfill").is_none() {
            return caught_up(client).await;
        }
        if Instant::now() > deadline {
            bail!("the backfill was never carried on: {report}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A backfill clears the graph before it extracts again; `kill -9` half-way used to
/// leave the graph (and both indexes) with the sessions it had reached and nothing
/// more. The restarted daemon carries it on from its last batch, and the graph ends as
/// a backfill that ran through makes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backfill_killed_half_way_is_carried_on_by_the_restarted_daemon() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let data_dir = tempfile::tempdir()?;
    // One event per backfill batch: each is its own store commit, so the backfill takes
    // long enough to be killed in the middle.
    let env = [
        ("AGENT_MEMORY_INDEXING__WINDOW_MS", "100"),
        ("AGENT_MEMORY_INDEXING__BACKFILL_BATCH_EVENTS", "1"),
        ("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false"),
    ];
    let (mut daemon, _metrics) = serve_daemon(&nats.url(), data_dir.path(), &env)?;
    // A backfill answers when it is done: longer than a client's default 10 s.
    let connect = || {
        async_nats::ConnectOptions::new()
            .request_timeout(Some(Duration::from_secs(120)))
            .connect(nats.url())
    };
    let client = connect().await?;
    let mut events = conversation();
    events.extend(routine_sessions(200));
    for chunk in events.chunks(200) {
        let reply = admin(
            &client,
            &format!("memory.ingest.{PROJECT}"),
            Value::Array(chunk.to_vec()),
        )
        .await?;
        assert_eq!(
            reply["accepted"].as_u64(),
            Some(chunk.len() as u64),
            "{reply}"
        );
    }
    caught_up(&client).await?;

    let backfill = {
        let client = client.clone();
        tokio::spawn(async move { admin(&client, "memory.admin.backfill_ideas", json!({})).await })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let reached = loop {
        let report = admin(&client, "memory.admin.status", json!({})).await?;
        let done = report["ideas_backfill"]["sessions_done"].as_u64();
        let total = report["ideas_backfill"]["sessions_total"].as_u64();
        if let (Some(done), Some(total)) = (done, total)
            && done >= 1
        {
            assert!(done < total, "{report}");
            break done;
        }
        assert!(
            !backfill.is_finished(),
            "the backfill ended before it could be killed half-way: {:?}",
            backfill.await
        );
        assert!(Instant::now() < deadline, "no backfill progress: {report}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    daemon.kill_9()?;
    backfill.abort();
    // The kill caught it half-way: the stopped data dir says so.
    let stopped = std::process::Command::new(memory_e2e_tests::build_daemon()?)
        .args([
            "--data-dir",
            &data_dir.path().to_string_lossy(),
            "status",
            "--json",
        ])
        .output()?;
    let stopped: Value = serde_json::from_slice(&stopped.stdout)
        .with_context(|| String::from_utf8_lossy(&stopped.stderr).into_owned())?;
    let left = &stopped["ideas_backfill"];
    assert!(
        matches!(
            (left["sessions_done"].as_u64(), left["sessions_total"].as_u64()),
            (Some(done), Some(total)) if done < total
        ),
        "the backfill was not cut short: {stopped}"
    );

    let (mut daemon, _metrics) = serve_daemon(&nats.url(), data_dir.path(), &env)?;
    let client = connect().await?;
    backfill_finished(&client).await?;
    let carried_on = whole_graph(&client).await?;

    // A backfill that runs through, on the same log.
    let report = admin(&client, "memory.admin.backfill_ideas", json!({})).await?;
    assert_eq!(
        report["sessions_done"], report["sessions_total"],
        "{report}"
    );
    caught_up(&client).await?;
    let through = whole_graph(&client).await?;
    let decisions = through["decisions"]["results"]
        .as_array()
        .map_or(0, Vec::len);
    let todos = through["todos"]["results"].as_array().map_or(0, Vec::len);
    assert!(
        decisions >= 100 && todos >= 100,
        "{decisions} decisions, {todos} todos"
    );
    assert_eq!(
        carried_on, through,
        "the backfill killed after {reached} sessions and carried on differs from one that ran through"
    );

    let exit = daemon.terminate_within(Duration::from_secs(30))?;
    assert!(exit.success());
    Ok(())
}
