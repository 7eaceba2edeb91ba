//! The mixed load of one trial: request/reply producers, a JetStream producer, a query
//! loop and an online admin call, all against the running daemon until the load's end
//! or the kill. What each producer did not get acknowledged it keeps, and sends again
//! after the restart ([`Producer::resend`]) with the same event ids.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use memory_benches::toc_mix::{QueryKind, TOPICAL, light_kinds, query_kinds};
use memory_benches::year::{Rng, YEAR_PROJECTS, YearEvent};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::feed::{Feed, Ledger, Session, key_of};

/// How long one ingest request or publish may wait for its acknowledgement.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an admin call may take (a BM25 rebuild or a backfill of the whole log).
const ADMIN_TIMEOUT: Duration = Duration::from_secs(900);

/// How a producer sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transport {
    /// `memory.ingest.<project>`, a batch per request; acknowledged by the reply.
    RequestReply,
    /// `memory.events.<project>`, one event per message; acknowledged by the PubAck
    /// (the daemon consumes the stream after, even across its crashes).
    JetStream,
}

/// One producer: its session in progress and what it still has to get acknowledged.
pub(super) struct Producer {
    pub(super) transport: Transport,
    rng: Rng,
    session: Option<Session>,
    /// Batches (request/reply) or single events (JetStream) sent without an
    /// acknowledgement, in order.
    unacked: Vec<Vec<YearEvent>>,
    /// Pause between sends, ms: `low..=high`.
    pause_ms: (u64, u64),
    /// Most events per request.
    max_batch: u64,
}

/// What the producers and the query loop did in one trial.
#[derive(Default)]
pub(super) struct LoadStats {
    /// Events acknowledged through request/reply.
    pub(super) acked_rr: u64,
    /// Events acknowledged by a PubAck.
    pub(super) acked_js: u64,
    /// Events the daemon refused (never expected: the generated events are valid).
    pub(super) rejected: u64,
    /// The first refusal.
    pub(super) rejected_example: Option<String>,
    /// Queries answered.
    pub(super) queries_ok: u64,
    /// Queries answered with an error, by code.
    pub(super) query_errors: BTreeMap<String, u64>,
    /// Queries without an answer (the daemon killed, or no responder yet).
    pub(super) queries_unanswered: u64,
    /// The first `internal` error, which no query should get.
    pub(super) internal_example: Option<String>,
}

impl LoadStats {
    /// Queries answered `internal`.
    pub(super) fn internal_errors(&self) -> u64 {
        self.query_errors.get("internal").copied().unwrap_or(0)
    }
}

/// What the producers share.
#[derive(Clone)]
pub(super) struct Shared {
    pub(super) client: async_nats::Client,
    pub(super) feed: Arc<Feed>,
    pub(super) ledger: Arc<Mutex<Ledger>>,
    pub(super) stats: Arc<Mutex<LoadStats>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request/reply batch as the wire carries it.
fn payload(events: &[YearEvent]) -> Bytes {
    let body: Vec<Value> = events.iter().map(YearEvent::to_json).collect();
    Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
}

impl Producer {
    /// A producer whose choices come from `seed`; `rate` scales how often it sends.
    pub(super) fn new(transport: Transport, seed: u64, rate: f64) -> Producer {
        let scale = |ms: u64| ((ms as f64) / rate.max(0.01)).round() as u64;
        let (pause_ms, max_batch) = match transport {
            Transport::RequestReply => ((scale(40), scale(160)), 8),
            Transport::JetStream => ((scale(30), scale(90)), 1),
        };
        Producer {
            transport,
            rng: Rng::new(seed),
            session: None,
            unacked: Vec::new(),
            pause_ms,
            max_batch,
        }
    }

    /// Sends until `stop` turns true or `until` passes.
    pub(super) async fn run(
        &mut self,
        shared: &Shared,
        until: Instant,
        stop: watch::Receiver<bool>,
    ) {
        while Instant::now() < until && !*stop.borrow() {
            let count = self.rng.range(1, self.max_batch) as usize;
            let Some(events) = self.next_events(shared, count) else {
                break;
            };
            lock(&shared.ledger).sent(&events);
            if !self.send(shared, &events).await {
                self.unacked.push(events);
            }
            let pause = self.rng.range(self.pause_ms.0, self.pause_ms.1);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
    }

    fn next_events(&mut self, shared: &Shared, count: usize) -> Option<Vec<YearEvent>> {
        loop {
            if self.session.as_ref().is_none_or(Session::is_done) {
                self.session = Some(shared.feed.next_session()?);
            }
            let events = self.session.as_mut()?.take(count);
            if !events.is_empty() {
                return Some(events);
            }
        }
    }

    /// Sends `events` once; true when every one was acknowledged.
    async fn send(&self, shared: &Shared, events: &[YearEvent]) -> bool {
        let Some(project) = events.first().map(|event| event.project) else {
            return true;
        };
        match self.transport {
            Transport::RequestReply => {
                let request = shared
                    .client
                    .request(format!("memory.ingest.{project}"), payload(events));
                let Ok(Ok(reply)) = tokio::time::timeout(ACK_TIMEOUT, request).await else {
                    return false;
                };
                let Ok(body) = serde_json::from_slice::<Value>(&reply.payload) else {
                    return false;
                };
                if body.get("error").is_some() {
                    return false;
                }
                let rejected: Vec<usize> = body["rejected"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|entry| entry["index"].as_u64().map(|index| index as usize))
                    .collect();
                let stored = body["accepted"].as_u64().unwrap_or(0)
                    + body["duplicates"].as_u64().unwrap_or(0);
                if stored + rejected.len() as u64 != events.len() as u64 {
                    return false;
                }
                let mut ledger = lock(&shared.ledger);
                let mut stats = lock(&shared.stats);
                for (index, event) in events.iter().enumerate() {
                    if rejected.contains(&index) {
                        stats.rejected += 1;
                        stats
                            .rejected_example
                            .get_or_insert_with(|| format!("{:?}: {body}", key_of(event)));
                    } else {
                        ledger.acked(&key_of(event));
                        stats.acked_rr += 1;
                    }
                }
                true
            }
            Transport::JetStream => {
                let mut all = true;
                for event in events {
                    let key = key_of(event);
                    let mut headers = async_nats::HeaderMap::new();
                    headers.insert("Nats-Msg-Id", format!("{}/{}", key.0, key.1).as_str());
                    let jetstream = async_nats::jetstream::new(shared.client.clone());
                    let publish = async {
                        jetstream
                            .publish_with_headers(
                                format!("memory.events.{project}"),
                                headers,
                                // One event object per message, not an array.
                                Bytes::from(
                                    serde_json::to_vec(&event.to_json()).unwrap_or_default(),
                                ),
                            )
                            .await?
                            .into_future()
                            .await
                            .map_err(anyhow::Error::from)
                    };
                    match tokio::time::timeout(ACK_TIMEOUT, publish).await {
                        Ok(Ok(_)) => {
                            lock(&shared.ledger).acked(&key);
                            lock(&shared.stats).acked_js += 1;
                        }
                        _ => all = false,
                    }
                }
                all
            }
        }
    }

    /// Sends again, in order, everything not acknowledged, until it is or `until`
    /// passes; how many sends it took and how many batches are still unacknowledged.
    pub(super) async fn resend(&mut self, shared: &Shared, until: Instant) -> (u64, usize) {
        let mut sends = 0;
        while let Some(events) = self.unacked.first().cloned() {
            if Instant::now() > until {
                break;
            }
            sends += 1;
            if self.send(shared, &events).await {
                self.unacked.remove(0);
            } else {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        (sends, self.unacked.len())
    }
}

/// Calls the TOC query mix of the benches (on whatever the soak holds: most bodies
/// find something, some nothing) and the agents' calls — `search` (hybrid), keyword
/// and vector search, the ideas — until `stop` turns true or `until` passes.
pub(super) async fn query_loop(
    shared: Shared,
    seed: u64,
    until: Instant,
    stop: watch::Receiver<bool>,
) {
    let mut rng = Rng::new(seed);
    let mut kinds: Vec<QueryKind> = query_kinds();
    for (project, _) in YEAR_PROJECTS {
        kinds.extend(light_kinds(project));
    }
    kinds.push(QueryKind {
        label: "teleport.search",
        id: "soak/teleport_search",
        method: "teleport.search",
        bodies: TOPICAL.iter().map(|q| json!({"query": q})).collect(),
    });
    kinds.push(QueryKind {
        label: "vector.search",
        id: "soak/vector_search",
        method: "vector.search",
        bodies: TOPICAL.iter().map(|q| json!({"query": q})).collect(),
    });
    kinds.push(QueryKind {
        label: "ideas.search",
        id: "soak/ideas_search",
        method: "ideas.search",
        bodies: TOPICAL.iter().map(|q| json!({"query": q})).collect(),
    });
    kinds.push(QueryKind {
        label: "ideas.decisions",
        id: "soak/ideas_decisions",
        method: "ideas.decisions",
        bodies: vec![json!({})],
    });
    while Instant::now() < until && !*stop.borrow() {
        let kind = rng.pick(&kinds);
        let body = rng.pick(&kind.bodies);
        let (project, _) = rng.pick(YEAR_PROJECTS);
        let subject = format!("memory.query.{project}.{}", kind.method);
        let request = shared.client.request(
            subject,
            Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
        );
        let answer = tokio::time::timeout(QUERY_TIMEOUT, request).await;
        let reply = match answer {
            Ok(Ok(reply)) => Some(reply.payload),
            _ => None,
        };
        record_query(&shared.stats, kind.method, body, reply.as_deref());
        tokio::time::sleep(Duration::from_millis(rng.range(10, 60))).await;
    }
}

/// Counts one query's answer (`None`: no answer).
fn record_query(stats: &Mutex<LoadStats>, method: &str, body: &Value, reply: Option<&[u8]>) {
    let mut stats = lock(stats);
    let Some(reply) = reply else {
        stats.queries_unanswered += 1;
        return;
    };
    match serde_json::from_slice::<Value>(reply) {
        Ok(value) if value.get("error").is_some() => {
            let code = value["error"]["code"].as_str().unwrap_or("?").to_owned();
            if code == "internal" {
                stats
                    .internal_example
                    .get_or_insert_with(|| format!("{method} {body} -> {value}"));
            }
            *stats.query_errors.entry(code).or_default() += 1;
        }
        Ok(_) => stats.queries_ok += 1,
        Err(_) => *stats.query_errors.entry("not_json".to_owned()).or_default() += 1,
    }
}

/// An admin call a running daemon answers, made during the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AdminOp {
    /// `memory.admin.rebuild {"index_type": "bm25"}`: a new generation, swapped in.
    Bm25Rebuild,
    /// `memory.admin.backfill_ideas {}`: the ideas graph re-extracted session by
    /// session (the heuristic engine: no model).
    IdeasBackfill,
    /// `memory.admin.rebuild {"projection": "toc"}`.
    TocRebuild,
    /// `memory.admin.rebuild {"projection": "ideas"}`.
    IdeasRebuild,
    /// `memory.admin.rebuild {"index_type": "vector"}`: the whole log embedded again
    /// (slow: only to mend a diverged vector index, never a trial's call).
    VectorRebuild,
}

impl AdminOp {
    /// Its name in the trial's line.
    pub(super) fn name(self) -> &'static str {
        match self {
            AdminOp::Bm25Rebuild => "bm25-rebuild",
            AdminOp::IdeasBackfill => "ideas-backfill",
            AdminOp::TocRebuild => "toc-rebuild",
            AdminOp::IdeasRebuild => "ideas-rebuild",
            AdminOp::VectorRebuild => "vector-rebuild",
        }
    }

    fn request(self) -> (&'static str, Value) {
        match self {
            AdminOp::Bm25Rebuild => ("memory.admin.rebuild", json!({"index_type": "bm25"})),
            AdminOp::IdeasBackfill => ("memory.admin.backfill_ideas", json!({})),
            AdminOp::TocRebuild => ("memory.admin.rebuild", json!({"projection": "toc"})),
            AdminOp::IdeasRebuild => ("memory.admin.rebuild", json!({"projection": "ideas"})),
            AdminOp::VectorRebuild => ("memory.admin.rebuild", json!({"index_type": "vector"})),
        }
    }
}

/// Makes `op` now and waits for its reply; how it ended (`ok in 1.2s`, or the error).
pub(super) async fn admin_call_now(client: async_nats::Client, op: AdminOp) -> String {
    let (_never, stop) = watch::channel(false);
    admin_call(client, op, Duration::ZERO, stop).await
}

/// Makes `op` after `after`; how it ended (`ok in 1.2s`, the error, or `killed` when
/// `stop` turned true first).
pub(super) async fn admin_call(
    client: async_nats::Client,
    op: AdminOp,
    after: Duration,
    mut stop: watch::Receiver<bool>,
) -> String {
    tokio::select! {
        () = tokio::time::sleep(after) => {}
        _ = stop.wait_for(|stopped| *stopped) => return "not started".to_owned(),
    }
    let (subject, body) = op.request();
    let started = Instant::now();
    let call = client.request(subject, Bytes::from(body.to_string()));
    tokio::select! {
        answer = tokio::time::timeout(ADMIN_TIMEOUT, call) => match answer {
            Ok(Ok(reply)) => match serde_json::from_slice::<Value>(&reply.payload) {
                Ok(value) if value.get("error").is_some() => format!("error: {}", value["error"]),
                Ok(_) => format!("ok in {:.1}s", started.elapsed().as_secs_f64()),
                Err(err) => format!("error: reply not JSON: {err}"),
            },
            Ok(Err(err)) => format!("error: {err}"),
            Err(_) => "timed out".to_owned(),
        },
        _ = stop.wait_for(|stopped| *stopped) => {
            format!("killed after {:.1}s", started.elapsed().as_secs_f64())
        }
    }
}
