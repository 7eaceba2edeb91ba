//! Cluster mode under faults, end to end: three nats-servers clustered on loopback, two
//! daemons in one group and one in another. Producers publish through JetStream and
//! through the ingest gateway, retrying what was not acknowledged, while a query loop
//! reads each gateway batch back with `min_seq` (read-your-writes). Meanwhile the log's
//! leader server is killed with SIGKILL and started again, then a replica daemon is.
//!
//! The TOC's gap is 5 s, so sessions fall idle during the run: their segments are
//! closed by each group's lease holder through the log (`segment_close`), the holder of
//! group g1 possibly being the replica that is killed.
//!
//! Afterwards: every acknowledged event is in the log exactly once; the two replicas of
//! a group hold the same events, exactly their partitions' (and the other group's
//! replica exactly the others'); every idle segment was closed, the same way on both;
//! their tables of contents are identical; and every query answered in full or said
//! `unavailable` — never a partial answer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_nats::HeaderMap;
use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use memory_e2e_tests::{NatsCluster, cluster_cli, export_events_without_seq, serve_replica};
use memory_projections::{CloseReason, Segment};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[path = "support/replicas.rs"]
mod replicas;
use replicas::{node_status, projections, wait_settled};

/// Projects spread over the eight partitions of this test's log.
const PROJECTS: [&str; 8] = [
    "webapp", "infra", "mobile", "docs", "ops", "billing", "search", "auth",
];
/// Events per gateway request.
const BATCH: usize = 10;
/// How long a producer keeps retrying one event before the test fails.
const RETRY_FOR: Duration = Duration::from_secs(60);
/// The TOC's gap: wall-clock silence after which a session's open segment closes.
const GAP_SECS: u64 = 5;
/// The daemons' environment.
const ENV: &[(&str, &str)] = &[("AGENT_MEMORY_TOC__SEGMENT_GAP_SECS", "5")];

/// Publishes to `memory.events.<project>` in chunks of 20 until `stop`, retrying every
/// unacknowledged message with its `Nats-Msg-Id` for up to [`RETRY_FOR`]; returns what
/// was acknowledged, the longest a chunk waited, and what was given up.
async fn produce_jetstream(
    client: async_nats::Client,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<(BTreeSet<(String, String)>, Duration, Vec<u32>)> {
    let jetstream = jetstream::new(client.clone());
    let mut acked = BTreeSet::new();
    let mut abandoned = Vec::new();
    let mut next = 0u32;
    let mut longest = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        let mut pending: Vec<u32> = (next..next + 20).collect();
        next += 20;
        let since = Instant::now();
        let mut last_error = String::new();
        while !pending.is_empty() {
            if since.elapsed() > RETRY_FOR {
                // Never acknowledged: the contract holds nothing of these (they may or may
                // not be in the log), but a stall this long is worth seeing. What is
                // stuck: a fresh message id, and the log's view of itself.
                let probe = json!({"event_id": format!("probe-{next}"), "session_id": "probe",
                    "timestamp": 1_790_000_000_000_u64, "kind": "note", "text": "probe"});
                let probe = match jetstream
                    .publish("memory.events.webapp", serde_json::to_vec(&probe)?.into())
                    .await
                {
                    Ok(ack) => format!(
                        "{:?}",
                        tokio::time::timeout(Duration::from_secs(5), ack).await
                    ),
                    Err(err) => err.to_string(),
                };
                let info = match jetstream.get_stream("MEMORY_LOG").await {
                    Ok(mut stream) => format!(
                        "{:?}",
                        stream
                            .info()
                            .await
                            .map(|i| (i.state.last_sequence, i.cluster.clone()))
                    ),
                    Err(err) => err.to_string(),
                };
                eprintln!(
                    "JetStream never acknowledged events {pending:?} in {RETRY_FOR:?}: \
                     {last_error}; a fresh publish now: {probe}; the log: {info} (this \
                     client on server {}, {:?})",
                    client.server_info().server_name,
                    client.connection_state()
                );
                abandoned.append(&mut pending);
                break;
            }
            let mut futures = Vec::new();
            for n in &pending {
                let project = PROJECTS[*n as usize % PROJECTS.len()];
                let mut headers = HeaderMap::new();
                headers.insert("Nats-Msg-Id", format!("{project}/j{n}").as_str());
                let body = json!({"event_id": format!("j{n}"),
                    "session_id": format!("js-{}", n / 200),
                    "timestamp": 1_790_000_000_000_u64 + u64::from(*n) * 100,
                    "kind": if n % 2 == 0 { "user_message" } else { "assistant_message" },
                    "text": format!("turn {n}: the {project} deploy keeps JWT expiry at {n} minutes")});
                let sent = jetstream
                    .publish_with_headers(
                        format!("memory.events.{project}"),
                        headers,
                        serde_json::to_vec(&body)?.into(),
                    )
                    .await;
                futures.push((*n, sent));
            }
            let mut failed = Vec::new();
            for (n, sent) in futures {
                let ok = match sent {
                    Ok(ack) => match tokio::time::timeout(Duration::from_secs(5), ack).await {
                        Ok(Ok(_)) => true,
                        Ok(Err(err)) => {
                            last_error = err.to_string();
                            false
                        }
                        Err(_) => {
                            last_error = "no ack within 5 s".to_owned();
                            false
                        }
                    },
                    Err(err) => {
                        last_error = err.to_string();
                        false
                    }
                };
                if ok {
                    let project = PROJECTS[n as usize % PROJECTS.len()];
                    acked.insert((project.to_owned(), format!("j{n}")));
                } else {
                    failed.push(n);
                }
            }
            pending = failed;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        longest = longest.max(since.elapsed());
        tokio::time::sleep(Duration::from_millis(80)).await;
    }
    Ok((acked, longest, abandoned))
}

/// A gateway batch the log acknowledged.
#[derive(Clone, Debug)]
struct Batch {
    project: String,
    session: String,
    ids: Vec<String>,
    last_seq: u64,
}

/// Sends batches of [`BATCH`] events to `memory.ingest.<project>` until `stop`, retrying
/// a batch until every event is accepted or a duplicate; each acknowledged batch goes to
/// `acked` (the query loop) and into the result.
async fn produce_gateway(
    client: async_nats::Client,
    stop: Arc<AtomicBool>,
    acked: mpsc::UnboundedSender<Batch>,
) -> anyhow::Result<Vec<Batch>> {
    let mut batches = Vec::new();
    let mut number = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let project = PROJECTS[number % PROJECTS.len()];
        let session = format!("gw-{number}");
        let ids: Vec<String> = (0..BATCH).map(|i| format!("g{number}-{i}")).collect();
        let events: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                json!({"event_id": id, "session_id": session,
                    "timestamp": 1_790_100_000_000_u64 + (number * BATCH + i) as u64 * 100,
                    "kind": "user_message",
                    "text": format!("batch {number} turn {i}: we moved the {project} cache to redis")})
            })
            .collect();
        let body = serde_json::to_vec(&events)?;
        let since = Instant::now();
        let last_seq = loop {
            if since.elapsed() > RETRY_FOR {
                bail!("the gateway never acknowledged batch {number}");
            }
            // Short: a request the killed daemon took is sent again soon (the gateway's
            // message ids make the retry a duplicate, not a second copy), so the faults
            // do not starve the traffic the checks below need.
            let reply = tokio::time::timeout(
                Duration::from_secs(3),
                client.request(format!("memory.ingest.{project}"), body.clone().into()),
            )
            .await;
            if let Ok(Ok(reply)) = reply
                && let Ok(reply) = serde_json::from_slice::<Value>(&reply.payload)
                && reply["accepted"].as_u64().unwrap_or(0)
                    + reply["duplicates"].as_u64().unwrap_or(0)
                    == BATCH as u64
                && let Some(last_seq) = reply["last_seq"].as_u64()
            {
                break last_seq;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let batch = Batch {
            project: project.to_owned(),
            session,
            ids,
            last_seq,
        };
        let _ = acked.send(batch.clone());
        batches.push(batch);
        number += 1;
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    Ok(batches)
}

/// What the query loop saw.
#[derive(Debug, Default)]
struct Queries {
    /// Answered with the whole batch.
    answered: usize,
    /// Said `unavailable`.
    unavailable: usize,
    /// No replica answered (NATS's "no responders", or the request timed out while
    /// the server this client uses was down).
    unanswered: usize,
    /// Anything else: a partial answer, another error. Must stay empty.
    wrong: Vec<String>,
}

/// Reads every acknowledged gateway batch back through the query mapping, with the
/// batch's `min_seq`.
async fn query_loop(
    client: async_nats::Client,
    mut acked: mpsc::UnboundedReceiver<Batch>,
) -> Queries {
    let mut seen = Queries::default();
    while let Some(batch) = acked.recv().await {
        let request = json!({"session_id": batch.session, "min_seq": batch.last_seq});
        let reply = tokio::time::timeout(
            Duration::from_secs(8),
            client.request(
                format!("memory.query.{}.events.get", batch.project),
                serde_json::to_vec(&request).unwrap_or_default().into(),
            ),
        )
        .await;
        let Ok(Ok(reply)) = reply else {
            seen.unanswered += 1;
            continue;
        };
        let Ok(answer) = serde_json::from_slice::<Value>(&reply.payload) else {
            seen.wrong.push(format!("{}: not JSON", batch.session));
            continue;
        };
        if answer["error"]["code"] == "unavailable" {
            seen.unavailable += 1;
            continue;
        }
        let ids: Vec<String> = answer["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|event| event["event_id"].as_str().map(str::to_owned))
            .collect();
        if ids == batch.ids {
            seen.answered += 1;
        } else {
            seen.wrong.push(format!("{}: {answer}", batch.session));
        }
    }
    seen
}

/// Every message of the log: (partition, project, event id).
async fn read_log(client: &async_nats::Client) -> anyhow::Result<Vec<(u16, String, String)>> {
    let stream = jetstream::new(client.clone())
        .get_stream("MEMORY_LOG")
        .await?;
    let consumer = stream
        .create_consumer(pull::Config {
            ack_policy: jetstream::consumer::AckPolicy::None,
            ..pull::Config::default()
        })
        .await?;
    let last = stream.get_info().await?.state.last_sequence;
    let mut messages = Vec::new();
    let mut seq = 0;
    while seq < last {
        let mut batch = consumer
            .fetch()
            .max_messages(1_000)
            .expires(Duration::from_secs(2))
            .messages()
            .await?;
        while let Some(message) = batch.next().await {
            let message = message.map_err(|err| anyhow::anyhow!("{err}"))?;
            seq = message
                .info()
                .map_err(|err| anyhow::anyhow!("{err}"))?
                .stream_sequence;
            // `memory.p.<partition>.<project>`
            let mut tokens = message.subject.as_str().split('.').skip(2);
            let partition: u16 = tokens.next().context("no partition")?.parse()?;
            let project = tokens.next().context("no project")?.to_owned();
            let body: Value = serde_json::from_slice(&message.payload)?;
            let id = body["event_id"].as_str().context("no event id")?.to_owned();
            messages.push((partition, project, id));
        }
    }
    Ok(messages)
}

/// Waits until the log has not grown for longer than the gap and a lease holder's
/// round: every session has fallen idle and its close is in the log.
async fn wait_quiet(client: &async_nats::Client) -> anyhow::Result<()> {
    let stream = jetstream::new(client.clone())
        .get_stream("MEMORY_LOG")
        .await?;
    let quiet = Duration::from_secs(GAP_SECS + 5);
    let deadline = Instant::now() + Duration::from_secs(90);
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let now = stream.get_info().await?.state.last_sequence;
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() > quiet {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the log never went quiet (at {last})");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_keeps_every_acknowledged_event_through_a_dead_leader_and_a_dead_replica()
-> anyhow::Result<()> {
    let mapping = "mappings = {\n  \"memory.query.*.>\": \"memory.q.{{partition(8,1)}}.{{wildcard(1)}}.>\"\n}\n";
    let started = Instant::now();
    let phase = |what: &str| eprintln!("{:>6.1} s  {what}", started.elapsed().as_secs_f64());
    let mut nats = NatsCluster::start(3, mapping)?;
    let urls = nats.urls();
    // A short duplicate window: nats-server can leave a message id that a dying leader
    // staged but never stored blocking its retries until the window passes (a
    // producer's retry then gets no ack at all); 20 s bounds that in this test.
    cluster_cli(
        &["init", "--partitions", "8", "--duplicate-window-secs", "20"],
        &urls,
    )?;
    cluster_cli(&["assign", "--group", "g1", "--partitions", "0-3"], &urls)?;
    cluster_cli(&["assign", "--group", "g2", "--partitions", "4-7"], &urls)?;
    let (dir_a, dir_b, dir_c) = (
        tempfile::tempdir()?,
        tempfile::tempdir()?,
        tempfile::tempdir()?,
    );
    let (mut a, _) = serve_replica(&urls, dir_a.path(), ("a", "g1"), ENV)?;
    let (mut b, _) = serve_replica(&urls, dir_b.path(), ("b", "g1"), ENV)?;
    let (mut c, _) = serve_replica(&urls, dir_c.path(), ("c", "g2"), ENV)?;

    phase("three replicas ready");
    let client = nats.connect().await?;
    let stop = Arc::new(AtomicBool::new(false));
    let (batches_in, batches_out) = mpsc::unbounded_channel();
    let jetstream_producer = tokio::spawn(produce_jetstream(client.clone(), stop.clone()));
    let gateway_producer = tokio::spawn(produce_gateway(client.clone(), stop.clone(), batches_in));
    let queries = tokio::spawn(query_loop(client.clone(), batches_out));

    // The log's leader dies mid-stream and comes back.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let leader = jetstream::new(client.clone())
        .get_stream("MEMORY_LOG")
        .await?
        .get_info()
        .await?
        .cluster
        .and_then(|cluster| cluster.leader)
        .context("the log has no leader")?;
    let leader: usize = leader.trim_start_matches('n').parse()?;
    phase(&format!("killing the log's leader, server n{leader}"));
    nats.kill_9(leader);
    tokio::time::sleep(Duration::from_secs(4)).await;
    nats.start_again(leader)?;
    // Then a replica dies mid-stream and comes back on its data dir.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // A producer that can publish to the log forges a lease holder's close, with a
    // revision that would fence every real one: it has no seal, so it is parked.
    let forged = json!({"event_id": "forged-close", "session_id": "js-0",
        "timestamp": 1_790_000_000_000_u64, "kind": "segment_close",
        "metadata": {"segment_first_event": "j0", "segment_events": "1",
                     "lease_revision": "999999999"}});
    // Retried like any producer's publish: the log may still be electing a leader.
    let forger = jetstream::new(client.clone());
    let deadline = Instant::now() + RETRY_FOR;
    loop {
        let sent = forger
            .publish("memory.events.webapp", serde_json::to_vec(&forged)?.into())
            .await;
        let acked = match sent {
            Ok(ack) => tokio::time::timeout(Duration::from_secs(5), ack).await,
            Err(err) => bail!("cannot publish the forged close: {err}"),
        };
        match acked {
            Ok(Ok(_)) => break,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(200)).await,
            other => bail!("the forged close was never acknowledged: {other:?}"),
        }
    }
    phase("killing replica b");
    b.kill_9()?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (restarted, _) = serve_replica(&urls, dir_b.path(), ("b", "g1"), ENV)?;
    b = restarted;
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let (jetstream_acked, longest, abandoned) = jetstream_producer.await??;
    eprintln!(
        "longest wait for a JetStream chunk's acks: {longest:?}; given up unacknowledged: \
         {abandoned:?}"
    );
    let batches = gateway_producer.await??;
    let queries = queries.await?;
    phase("producers stopped");
    wait_quiet(&client).await?;
    phase("the log is quiet: every session idle and closed");

    // Every acknowledged event is in the log, once.
    let log = read_log(&client).await?;
    let mut copies: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut partition_of: BTreeMap<String, u16> = BTreeMap::new();
    // The lease holders' closes are in the log too; the rest is what producers sent.
    let closes = log
        .iter()
        .filter(|(_, _, id)| id.starts_with("segment-close-"))
        .count();
    assert!(closes > 0, "no lease holder closed an idle segment");
    let log: Vec<_> = log
        .into_iter()
        .filter(|(_, _, id)| !id.starts_with("segment-close-") && id != "forged-close")
        .collect();
    for (partition, project, id) in &log {
        *copies.entry((project.clone(), id.clone())).or_default() += 1;
        partition_of.insert(project.clone(), *partition);
    }
    let duplicated: Vec<_> = copies.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicated.is_empty(), "stored twice: {duplicated:?}");
    let mut acked = jetstream_acked;
    for batch in &batches {
        for id in &batch.ids {
            acked.insert((batch.project.clone(), id.clone()));
        }
    }
    let missing: Vec<_> = acked
        .iter()
        .filter(|key| !copies.contains_key(*key))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but not in the log: {missing:?}"
    );
    assert!(
        acked.len() > 1_000 && batches.len() > 50,
        "too little traffic to mean anything: {} events, {} batches",
        acked.len(),
        batches.len()
    );

    // Queries during the faults: whole answers or `unavailable`, never partial.
    assert!(queries.wrong.is_empty(), "{:?}", queries.wrong);
    assert!(queries.answered > 0, "{queries:?}");
    eprintln!("queries during the faults: {queries:?}");

    phase("log read and checked");
    wait_settled(&client, &["a", "b", "c"]).await?;
    phase("replicas settled");
    // The forged close is in dead letters on the replicas of webapp's group only.
    let webapp_nodes: &[&str] = if partition_of["webapp"] < 4 {
        &["a", "b"]
    } else {
        &["c"]
    };
    for node in ["a", "b", "c"] {
        let status = node_status(&client, node).await.context("no status")?;
        let parked = u64::from(webapp_nodes.contains(&node));
        assert_eq!(status["dead_letters"], parked, "{node}: {status}");
    }
    for daemon in [&mut a, &mut b, &mut c] {
        let status = daemon.terminate_within(Duration::from_secs(20))?;
        assert!(status.success(), "{status}: {}", daemon.stderr());
    }

    phase("replicas stopped");
    // Each replica holds exactly its group's partitions; the two of g1 the same bytes.
    let group_of = |partition: u16| if partition < 4 { "g1" } else { "g2" };
    let mut projects_of: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for project in PROJECTS {
        let partition = partition_of[project];
        projects_of
            .entry(group_of(partition))
            .or_default()
            .push(project);
        let from_log: BTreeSet<&str> = log
            .iter()
            .filter(|(_, p, _)| p == project)
            .map(|(_, _, id)| id.as_str())
            .collect();
        let from_a = export_events_without_seq(dir_a.path(), project)?;
        let from_c = export_events_without_seq(dir_c.path(), project)?;
        let (holder, other) = if group_of(partition) == "g1" {
            (&from_a, &from_c)
        } else {
            (&from_c, &from_a)
        };
        let held: BTreeSet<&str> = holder
            .iter()
            .filter(|event| event["kind"] != "segment_close")
            .filter_map(|event| event["event_id"].as_str())
            .collect();
        assert_eq!(held, from_log, "{project} (partition {partition})");
        assert_eq!(
            holder
                .iter()
                .filter(|event| event["kind"] != "segment_close")
                .count(),
            from_log.len(),
            "{project}: stored twice"
        );
        assert!(
            other.is_empty(),
            "{project} is on the other group's replica"
        );
        if group_of(partition) == "g1" {
            assert_eq!(
                from_a,
                export_events_without_seq(dir_b.path(), project)?,
                "{project}"
            );
        }
    }
    phase("exports compared");
    // Every idle segment closed, through the log, the same way on both replicas of g1;
    // and they built the same table of contents, node for node (versions included: they
    // are derived from content).
    let (toc_a, segments_a, open_a) = projections(dir_a.path())?;
    let (toc_b, segments_b, open_b) = projections(dir_b.path())?;
    let (_, segments_c, open_c) = projections(dir_c.path())?;
    for (node, open) in [("a", &open_a), ("b", &open_b), ("c", &open_c)] {
        assert!(open.is_empty(), "{node} still has open segments: {open:?}");
    }
    let idle = |segments: &[Segment]| {
        segments
            .iter()
            .filter(|s| s.close_reason == CloseReason::Idle)
            .count()
    };
    assert!(idle(&segments_a) > 0 && idle(&segments_c) > 0);
    if let Some((one, other)) = segments_a
        .iter()
        .zip(&segments_b)
        .find(|(one, other)| one != other)
    {
        panic!("the replicas' segments differ: {one:?} against {other:?}");
    }
    assert_eq!(segments_a.len(), segments_b.len());
    assert!(toc_a.len() > 20, "{toc_a:?}");
    assert!(toc_a == toc_b, "the replicas' TOCs differ");
    phase(&format!(
        "{} segments ({} closed idle by the lease holder) and {} TOC nodes identical",
        segments_a.len(),
        idle(&segments_a),
        toc_a.len()
    ));
    assert!(
        projects_of.len() == 2,
        "both groups must own projects: {projects_of:?}"
    );
    Ok(())
}
