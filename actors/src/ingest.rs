//! `IngestActor`: validates nothing (transports already did), deduplicates and appends
//! events to the store with group commit. Upstream: NATS request/reply, JetStream, the
//! CLI. Downstream: the outbox, through the store.
//!
//! Group commit: requests that arrive while a commit is in flight wait in `pending`;
//! when the commit finishes, everything pending (up to `max_batch_events`) goes into the
//! next batch — one write, one fsync — and every request of the batch is answered after
//! it. An answer therefore always means durable, and the number of fsyncs falls as load
//! rises instead of capping throughput.
//!
//! Backpressure: `pending` is bounded by `max_pending_events`; past it a request is
//! refused with `unavailable` at once rather than queued without bound. JetStream
//! redelivers refused messages; request/reply callers retry.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use memory_store::{Store, StoreError};
use memory_types::{
    AppendOutcome, Event, EventError, EventSink, IngestReply, ServiceError, split_parsed,
};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::Serialize;
use tracing::{Instrument, debug, error, info_span};

use crate::ask::ask;
use crate::error::ActorError;
use crate::metrics::ACTOR_METRICS;

/// Why an append was not done.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// Too many events are waiting for a commit.
    #[error(
        "ingest is overloaded: {pending} events waiting for a commit (limit {limit}); retry shortly"
    )]
    Overloaded {
        /// Events waiting.
        pending: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The store failed; nothing of the batch was written.
    #[error("store failure: {0}")]
    Store(#[from] StoreError),
    /// The actor is not running (shutting down or restarting), or did not answer.
    #[error("ingest actor unavailable: {0}")]
    Unavailable(ActorError),
}

impl From<IngestError> for ServiceError {
    fn from(err: IngestError) -> Self {
        match err {
            IngestError::Overloaded { .. } | IngestError::Unavailable(_) => {
                ServiceError::unavailable(err.to_string())
            }
            IngestError::Store(StoreError::Locked { .. }) => {
                ServiceError::unavailable(err.to_string())
            }
            // The disk is full or failing: nothing of the request was stored, and the
            // caller may try again once the operator has freed space (or restarted a
            // poisoned store).
            IngestError::Store(ref store) if store.is_environmental() => ServiceError::unavailable(
                format!("the store cannot write, nothing of this request was stored: {err}"),
            ),
            IngestError::Store(_) => ServiceError::internal(err.to_string()),
        }
    }
}

/// Reply of one append: an outcome per event, in order.
pub type AppendReply = Result<Vec<AppendOutcome>, IngestError>;

/// Configuration (immutable).
pub struct IngestActor;

/// Start-up arguments.
pub struct IngestArgs {
    /// The store to append to.
    pub store: Store,
    /// Most events one group commit writes.
    pub max_batch_events: usize,
    /// Most events waiting before requests are refused.
    pub max_pending_events: usize,
}

/// Cheap counters for tests and `status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IngestCounters {
    /// Events appended.
    pub num_accepted: u64,
    /// Events acknowledged as duplicates.
    pub num_duplicates: u64,
    /// Group commits done.
    pub num_commits: u64,
    /// Requests refused for backpressure.
    pub num_overloaded: u64,
    /// Commits that failed.
    pub num_commit_errors: u64,
    /// Events waiting now.
    pub num_pending_events: usize,
}

struct PendingRequest {
    events: Vec<Event>,
    reply: RpcReplyPort<AppendReply>,
    arrived: Instant,
}

/// Mutable state, built in `pre_start`.
pub struct IngestState {
    store: Store,
    max_batch_events: usize,
    max_pending_events: usize,
    pending: VecDeque<PendingRequest>,
    pending_events: usize,
    commit_in_flight: bool,
    flush_waiters: Vec<RpcReplyPort<()>>,
    counters: IngestCounters,
}

/// Messages.
pub enum IngestMsg {
    /// Append events; answered after the durable commit.
    Append {
        /// Valid events, in order.
        events: Vec<Event>,
        /// Where the outcome goes.
        reply: RpcReplyPort<AppendReply>,
    },
    /// A group commit finished (sent by the actor's own blocking task).
    CommitDone {
        /// The requests of the batch.
        requests: Vec<PendingRequestToken>,
        /// All outcomes, in request order, or the failure.
        result: Result<Vec<AppendOutcome>, IngestError>,
        /// How long the commit took.
        elapsed: Duration,
    },
    /// Answers once nothing is pending or in flight (graceful shutdown).
    Flush(RpcReplyPort<()>),
    /// Answers with the counters.
    Observe(RpcReplyPort<IngestCounters>),
}

/// A request of a batch in flight; opaque outside this module.
pub struct PendingRequestToken(PendingRequest);

impl Actor for IngestActor {
    type Msg = IngestMsg;
    type State = IngestState;
    type Arguments = IngestArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<IngestMsg>,
        args: IngestArgs,
    ) -> Result<IngestState, ActorProcessingErr> {
        Ok(IngestState {
            store: args.store,
            max_batch_events: args.max_batch_events.max(1),
            max_pending_events: args.max_pending_events.max(args.max_batch_events.max(1)),
            pending: VecDeque::new(),
            pending_events: 0,
            commit_in_flight: false,
            flush_waiters: Vec::new(),
            counters: IngestCounters::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<IngestMsg>,
        message: IngestMsg,
        state: &mut IngestState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            IngestMsg::Append { events, reply } => {
                if events.is_empty() {
                    let _ = reply.send(Ok(Vec::new()));
                    return Ok(());
                }
                if state.pending_events + events.len() > state.max_pending_events
                    && state.pending_events > 0
                {
                    state.counters.num_overloaded += 1;
                    let _ = reply.send(Err(IngestError::Overloaded {
                        pending: state.pending_events,
                        limit: state.max_pending_events,
                    }));
                    return Ok(());
                }
                state.pending_events += events.len();
                state.pending.push_back(PendingRequest {
                    events,
                    reply,
                    arrived: Instant::now(),
                });
                start_commit_if_idle(&myself, state);
            }
            IngestMsg::CommitDone {
                requests,
                result,
                elapsed,
            } => {
                state.commit_in_flight = false;
                finish_commit(state, requests, result, elapsed);
                start_commit_if_idle(&myself, state);
                if !state.commit_in_flight && state.pending.is_empty() {
                    for waiter in state.flush_waiters.drain(..) {
                        let _ = waiter.send(());
                    }
                }
            }
            IngestMsg::Flush(reply) => {
                if !state.commit_in_flight && state.pending.is_empty() {
                    let _ = reply.send(());
                } else {
                    state.flush_waiters.push(reply);
                }
            }
            IngestMsg::Observe(reply) => {
                let mut counters = state.counters.clone();
                counters.num_pending_events = state.pending_events;
                let _ = reply.send(counters);
            }
        }
        Ok(())
    }
}

/// Takes everything pending (up to the batch limit, at least one request) into one
/// commit on a blocking thread; the result comes back as `CommitDone`.
fn start_commit_if_idle(myself: &ActorRef<IngestMsg>, state: &mut IngestState) {
    if state.commit_in_flight || state.pending.is_empty() {
        return;
    }
    let mut requests = Vec::new();
    let mut num_events = 0usize;
    while let Some(front) = state.pending.front() {
        if !requests.is_empty() && num_events + front.events.len() > state.max_batch_events {
            break;
        }
        let Some(request) = state.pending.pop_front() else {
            break;
        };
        num_events += request.events.len();
        requests.push(request);
    }
    state.pending_events -= num_events;
    state.commit_in_flight = true;
    let store = state.store.clone();
    let myself = myself.clone();
    let span = info_span!("ingest_commit", num_requests = requests.len(), num_events);
    tokio::spawn(
        async move {
            let started = Instant::now();
            let (requests, result) = tokio::task::spawn_blocking(move || {
                // Borrowed, not copied: a copy of every text and metadata map was a
                // fifth of the commit path's time.
                let result = store
                    .append_events(requests.iter().flat_map(|r| r.events.iter()))
                    .map_err(IngestError::from);
                (requests, result)
            })
            .await
            .unwrap_or_else(|join_err| {
                // The requests moved into the panicked task are gone; their callers see
                // a dropped reply port, which they report as unavailable.
                error!(error = %join_err, "ingest commit task panicked");
                (
                    Vec::new(),
                    Err(IngestError::Unavailable(ActorError::NotRunning(format!(
                        "commit task failed: {join_err}"
                    )))),
                )
            });
            let elapsed = started.elapsed();
            let requests = requests.into_iter().map(PendingRequestToken).collect();
            if myself
                .cast(IngestMsg::CommitDone {
                    requests,
                    result,
                    elapsed,
                })
                .is_err()
            {
                debug!("ingest actor stopped before its commit finished");
            }
        }
        .instrument(span),
    );
}

fn finish_commit(
    state: &mut IngestState,
    requests: Vec<PendingRequestToken>,
    result: Result<Vec<AppendOutcome>, IngestError>,
    elapsed: Duration,
) {
    let metrics = &*ACTOR_METRICS;
    metrics.ingest_commit_latency.observe(elapsed.as_secs_f64());
    match result {
        Ok(outcomes) => {
            state.counters.num_commits += 1;
            metrics.ingest_batch_size.observe(outcomes.len() as f64);
            let mut remaining = outcomes.into_iter();
            for PendingRequestToken(request) in requests {
                let mine: Vec<AppendOutcome> =
                    remaining.by_ref().take(request.events.len()).collect();
                let accepted = mine
                    .iter()
                    .filter(|o| matches!(o, AppendOutcome::Appended(_)))
                    .count() as u64;
                let duplicates = mine.len() as u64 - accepted;
                state.counters.num_accepted += accepted;
                state.counters.num_duplicates += duplicates;
                metrics
                    .ingest_events
                    .with_label_values(&["accepted"])
                    .inc_by(accepted);
                metrics
                    .ingest_events
                    .with_label_values(&["duplicate"])
                    .inc_by(duplicates);
                metrics
                    .ingest_ack_latency
                    .observe(request.arrived.elapsed().as_secs_f64());
                let _ = request.reply.send(Ok(mine));
            }
        }
        Err(err) => {
            state.counters.num_commit_errors += 1;
            error!(error = %err, "group commit failed; nothing of the batch was written");
            for PendingRequestToken(request) in requests {
                let _ = request.reply.send(Err(err.clone()));
            }
        }
    }
}

/// A cheap, cloneable way to talk to the ingest actor; implements [`EventSink`]. It
/// resolves the actor by its registered name on every call, so it keeps working across
/// a supervisor restart.
#[derive(Clone)]
pub struct IngestHandle {
    name: String,
    store: Store,
    redactor: Option<memory_redact::Redactor>,
}

impl IngestHandle {
    /// A handle to the ingest actor registered as `name`.
    #[must_use]
    pub fn new(name: impl Into<String>, store: Store) -> Self {
        IngestHandle {
            name: name.into(),
            store,
            redactor: None,
        }
    }

    /// The same handle, taking secrets out of every event it appends (and out of
    /// dead-letter payloads) with `redactor`: every path into the log (NATS,
    /// JetStream, `ingest --file`, hooks, import) appends through a handle.
    #[must_use]
    pub fn with_redactor(mut self, redactor: Option<memory_redact::Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    fn actor(&self) -> Result<ActorRef<IngestMsg>, IngestError> {
        ActorRef::where_is(self.name.clone()).ok_or_else(|| {
            IngestError::Unavailable(ActorError::NotRunning(
                "the ingest actor (restarting or shut down)".into(),
            ))
        })
    }

    /// Appends valid events; returns after the durable commit.
    ///
    /// # Errors
    /// Backpressure, store failure, or the actor not running.
    pub async fn append(&self, mut events: Vec<Event>) -> AppendReply {
        if let Some(redactor) = &self.redactor {
            for event in &mut events {
                redactor.redact_event(event);
            }
        }
        ask(
            &self.actor()?,
            |reply| IngestMsg::Append { events, reply },
            None,
        )
        .await
        .map_err(IngestError::Unavailable)?
    }

    /// Waits until nothing is pending or in flight.
    pub async fn flush(&self) {
        if let Ok(actor) = self.actor() {
            let _ = actor.call(IngestMsg::Flush, None).await;
        }
    }

    /// The actor's counters.
    ///
    /// # Errors
    /// The actor not running.
    pub async fn counters(&self) -> Result<IngestCounters, IngestError> {
        ask(
            &self.actor()?,
            IngestMsg::Observe,
            Some(Duration::from_secs(5)),
        )
        .await
        .map_err(IngestError::Unavailable)
    }
}

impl EventSink for IngestHandle {
    async fn ingest(
        &self,
        parsed: Vec<Result<Event, EventError>>,
    ) -> Result<IngestReply, ServiceError> {
        let (valid, rejected) = split_parsed(parsed);
        ACTOR_METRICS
            .ingest_events
            .with_label_values(&["rejected"])
            .inc_by(rejected.len() as u64);
        let outcomes = if valid.is_empty() {
            Vec::new()
        } else {
            self.append(valid).await?
        };
        Ok(IngestReply::assemble(rejected, &outcomes))
    }

    async fn dead_letter(
        &self,
        source: &str,
        dedupe_key: Option<&str>,
        error: &EventError,
        payload: &[u8],
    ) -> Result<(), ServiceError> {
        ACTOR_METRICS
            .ingest_events
            .with_label_values(&["rejected"])
            .inc();
        let dedupe_key = dedupe_key.map(str::to_owned);
        // A payload that does not parse is kept for the operator, so its secrets go
        // too, read as text (bytes that are not UTF-8 become U+FFFD: a secret next to
        // them must not survive), and so do those the error message quotes (a
        // timestamp, a kind, a field name).
        let mut reason = format!("{}: {}", error.code.as_str(), error.message);
        let redacted = match &self.redactor {
            Some(redactor) => {
                let lossy = String::from_utf8_lossy(payload);
                let (text, findings) = redactor.redact_text(&lossy);
                let (quoted, quoted_findings) = redactor.redact_text(&reason);
                if !quoted_findings.is_empty() {
                    reason = quoted.into_owned();
                }
                (!findings.is_empty()).then(|| text.into_owned())
            }
            None => None,
        };
        let payload = redacted.as_ref().map_or(payload, |text| text.as_bytes());
        let dead_letter = memory_store::DeadLetter::new(source, None, reason, payload, 1);
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || {
            store.record_dead_letter(dead_letter, dedupe_key.as_deref())
        })
        .await
        .map_err(|err| ServiceError::internal(err.to_string()))?
        .map_err(|err| ServiceError::from(IngestError::Store(err)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use memory_store::StoreOptions;
    use memory_types::{EventKind, OutboxSeq};

    use super::*;

    fn event(id: &str) -> Event {
        memory_projections::testsuite::event(id, "s", 1, EventKind::Note, "t")
    }

    async fn start(
        store: &Store,
        max_batch_events: usize,
        max_pending_events: usize,
    ) -> IngestHandle {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let name = format!(
            "ingest-test-{}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        Actor::spawn(
            Some(name.clone()),
            IngestActor,
            IngestArgs {
                store: store.clone(),
                max_batch_events,
                max_pending_events,
            },
        )
        .await
        .expect("spawn ingest");
        IngestHandle::new(name, store.clone())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_group_commits_and_all_get_durable_answers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 10_000, 100_000).await;
        let mut tasks = Vec::new();
        for task in 0..50 {
            let handle = handle.clone();
            tasks.push(tokio::spawn(async move {
                let events: Vec<Event> = (0..20).map(|i| event(&format!("t{task}-{i}"))).collect();
                handle.append(events).await
            }));
        }
        let mut seqs = Vec::new();
        for task in tasks {
            let outcomes = task.await.expect("join").expect("append");
            assert_eq!(outcomes.len(), 20);
            for outcome in outcomes {
                match outcome {
                    AppendOutcome::Appended(seq) => seqs.push(seq),
                    AppendOutcome::Duplicate(_) => panic!("no duplicates sent"),
                }
            }
        }
        seqs.sort();
        seqs.dedup();
        assert_eq!(seqs.len(), 1000);
        assert_eq!(store.head(), OutboxSeq(1000));
        let counters = handle.counters().await.expect("counters");
        assert_eq!(counters.num_accepted, 1000);
        assert!(
            counters.num_commits < 50,
            "requests should share commits, got {}",
            counters.num_commits
        );
    }

    #[tokio::test]
    async fn duplicates_across_requests_are_acknowledged_not_stored() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 100, 1000).await;
        let parsed = vec![
            Ok(event("a")),
            Err(EventError::new(
                memory_types::EventErrorCode::MissingField,
                "timestamp",
                "missing",
            )),
        ];
        let reply = handle.ingest(parsed).await.expect("ingest");
        assert_eq!(
            (
                reply.accepted,
                reply.duplicates,
                reply.rejected.len(),
                reply.last_seq
            ),
            (1, 0, 1, 1)
        );
        let reply = handle
            .ingest(vec![Ok(event("a")), Ok(event("b"))])
            .await
            .expect("ingest");
        assert_eq!(
            (reply.accepted, reply.duplicates, reply.last_seq),
            (1, 1, 2)
        );
    }

    /// Under a queue limit of one batch, requests are either stored or refused with
    /// `Overloaded` — never lost, never half-stored. (Whether a refusal happens depends on
    /// scheduling, so this checks the accounting, not that one occurs.)
    #[tokio::test]
    async fn under_a_tight_queue_limit_every_request_is_stored_or_refused_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 10, 10).await;
        let mut tasks = Vec::new();
        for task in 0..30 {
            let handle = handle.clone();
            tasks.push(tokio::spawn(async move {
                handle
                    .append((0..10).map(|i| event(&format!("o{task}-{i}"))).collect())
                    .await
            }));
        }
        let mut refused = 0;
        let mut stored = 0;
        for task in tasks {
            match task.await.expect("join") {
                Ok(outcomes) => stored += outcomes.len(),
                Err(IngestError::Overloaded { .. }) => refused += 1,
                Err(other) => panic!("unexpected {other}"),
            }
        }
        assert_eq!(stored as u64, store.head().0);
        assert_eq!(stored + refused * 10, 300);
    }
}
