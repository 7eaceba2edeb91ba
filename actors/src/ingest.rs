//! `IngestActor`: validates nothing (transports already did), deduplicates and appends
//! events to the store with group commit. Upstream: NATS request/reply, JetStream, the
//! CLI. Downstream: the outbox, through the store.
//!
//! Group commit: requests that arrive while a commit is in flight wait in a queue; when
//! the commit finishes, everything queued (up to `max_batch_events`) goes into the next
//! batch — one write, one fsync — and every request of the batch is answered after it.
//! An answer therefore always means durable, and the number of fsyncs falls as load
//! rises instead of capping throughput. The commits run on the actor's commit lane, a
//! thread of its own (`commit_lane.rs`, which says why).
//!
//! Backpressure: `pending` is bounded by `max_pending_events`; past it a request is
//! refused with `unavailable` at once rather than queued without bound. JetStream
//! redelivers refused messages; request/reply callers retry.

use std::time::Duration;

use memory_store::Store;
use memory_types::{Event, EventError, EventSink, IngestReply, ServiceError, split_parsed};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::error;

use crate::ask::ask;
use crate::commit_lane::CommitLane;
use crate::error::ActorError;
pub use crate::ingest_reply::{AppendReply, IngestCounters, IngestError};
use crate::metrics::ACTOR_METRICS;

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

/// Mutable state, built in `pre_start`: the commit lane the actor feeds.
pub struct IngestState {
    lane: CommitLane,
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
    /// Answers once nothing is pending or in flight (graceful shutdown).
    Flush(RpcReplyPort<()>),
    /// Answers with the counters.
    Observe(RpcReplyPort<IngestCounters>),
}

impl Actor for IngestActor {
    type Msg = IngestMsg;
    type State = IngestState;
    type Arguments = IngestArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<IngestMsg>,
        args: IngestArgs,
    ) -> Result<IngestState, ActorProcessingErr> {
        // Started here, on a runtime thread: the lane's thread has the daemon's
        // priority.
        let lane = CommitLane::start(args.store, args.max_batch_events, args.max_pending_events)
            .map_err(|err| format!("cannot start the ingest commit thread: {err}"))?;
        Ok(IngestState { lane })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<IngestMsg>,
        state: &mut IngestState,
    ) -> Result<(), ActorProcessingErr> {
        // What was queued is committed and answered before the actor counts as stopped,
        // so after a graceful stop a restart never has two lanes writing. (An actor
        // killed or panicking skips this: its lane finishes its queue beside the new
        // one, the store's writer lock keeping their appends apart.)
        if let Some(thread) = state.lane.stop() {
            let joined = tokio::task::spawn_blocking(move || thread.join()).await;
            if !matches!(joined, Ok(Ok(()))) {
                error!("the ingest commit thread ended abnormally");
            }
        }
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<IngestMsg>,
        message: IngestMsg,
        state: &mut IngestState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            IngestMsg::Append { events, reply } => state.lane.submit(events, reply),
            IngestMsg::Flush(reply) => state.lane.flush(reply),
            IngestMsg::Observe(reply) => {
                let _ = reply.send(state.lane.counters());
            }
        }
        Ok(())
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
    use memory_types::{AppendOutcome, EventKind, OutboxSeq};

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

    /// `num_requests` appends of `per_request` new events each, sent at once.
    fn appends_at_once(
        handle: &IngestHandle,
        prefix: &str,
        num_requests: usize,
        per_request: usize,
    ) -> Vec<tokio::task::JoinHandle<AppendReply>> {
        (0..num_requests)
            .map(|request| {
                let handle = handle.clone();
                let events: Vec<Event> = (0..per_request)
                    .map(|i| event(&format!("{prefix}{request}-{i}")))
                    .collect();
                tokio::spawn(async move { handle.append(events).await })
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_group_commits_and_all_get_durable_answers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 10_000, 100_000).await;
        let tasks = appends_at_once(&handle, "t", 50, 20);
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

    #[tokio::test]
    async fn a_failed_commit_answers_its_requests_and_the_lane_goes_on() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Free space below the floor: every append is refused before it writes.
        let options = StoreOptions {
            min_free_mb: u64::MAX / (1 << 21),
            ..StoreOptions::default()
        };
        let store = Store::open(dir.path(), &options).expect("store");
        let handle = start(&store, 100, 1000).await;
        for id in ["a", "b"] {
            match handle.append(vec![event(id)]).await {
                Err(IngestError::Store(err)) => assert!(err.is_environmental(), "{err}"),
                other => panic!("expected a store failure, got {other:?}"),
            }
        }
        let counters = handle.counters().await.expect("counters");
        assert_eq!((counters.num_commit_errors, counters.num_commits), (2, 0));
        assert_eq!(store.head(), OutboxSeq::ZERO);
    }

    /// Stopping the actor commits and answers what was queued: every request ends, and
    /// what was answered stored is all the log holds, also afterwards (no commit runs
    /// once the actor counts as stopped).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stopping_the_actor_answers_every_queued_request_and_commits_no_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 20, 100_000).await;
        let actor = handle.actor().expect("running");
        let tasks = appends_at_once(&handle, "s", 60, 5);
        tokio::task::yield_now().await;
        actor.stop_and_wait(None, None).await.expect("stop");
        let head_at_stop = store.head();
        let mut stored = 0u64;
        for task in tasks {
            let answer = tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .expect("every request is answered")
                .expect("join");
            match answer {
                Ok(outcomes) => stored += outcomes.len() as u64,
                Err(IngestError::Unavailable(_)) => {}
                Err(other) => panic!("unexpected {other}"),
            }
        }
        assert_eq!(
            store.head(),
            head_at_stop,
            "nothing committed after the stop"
        );
        assert_eq!(store.head().0, stored);
    }

    /// Under a queue limit of one batch, requests are either stored or refused with
    /// `Overloaded` — never lost, never half-stored. (Whether a refusal happens depends on
    /// scheduling, so this checks the accounting, not that one occurs.)
    #[tokio::test]
    async fn under_a_tight_queue_limit_every_request_is_stored_or_refused_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let handle = start(&store, 10, 10).await;
        let tasks = appends_at_once(&handle, "o", 30, 10);
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
