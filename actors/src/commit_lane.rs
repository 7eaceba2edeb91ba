//! The ingest actor's commit lane: one thread that takes everything pending into one
//! group commit, answers its requests, and takes what arrived meanwhile at once.
//!
//! Why a thread of its own rather than a task per commit: a commit started from the
//! actor took four hand-offs between threads — a task spawned for it, a blocking-pool
//! thread woken for the append, the task woken again to tell the actor, the actor woken
//! to answer and start the next — and on a small machine under load each of them waits
//! for a core (`perf sched` measured runtime workers waiting up to 25 ms). The disk sat
//! idle through them while requests piled up. Here the thread that finishes a commit
//! answers it and starts the next without waiting for anyone; a request's own hops are
//! its arrival (the actor puts it in the queue and wakes the lane) and its answer.
//!
//! The thread is started by the actor, on a runtime thread, so it has the daemon's
//! priority, never the background threads' (`background.rs`). It stops when the actor
//! does: it commits what is already queued (those requests were accepted and wait for
//! an answer), answers it, and ends.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use memory_store::Store;
use memory_types::{AppendOutcome, Event};
use ractor::RpcReplyPort;
use tracing::{error, info_span};

use crate::error::ActorError;
use crate::ingest_reply::{AppendReply, IngestCounters, IngestError};
use crate::metrics::ACTOR_METRICS;

/// The name of the commit lane's thread (in `top -H`, `perf`, a panic message).
pub(crate) const COMMIT_THREAD: &str = "memory-ingest-commit";

/// The queue and the thread that commits it.
pub(crate) struct CommitLane {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a request arrives or the lane is told to stop.
    arrived: Condvar,
    max_batch_events: usize,
    max_pending_events: usize,
}

struct Queue {
    pending: VecDeque<PendingRequest>,
    pending_events: usize,
    /// A commit is being written: what is pending waits for it.
    committing: bool,
    stopping: bool,
    flush_waiters: Vec<RpcReplyPort<()>>,
    counters: IngestCounters,
}

struct PendingRequest {
    events: Vec<Event>,
    reply: RpcReplyPort<AppendReply>,
    arrived: Instant,
}

impl CommitLane {
    /// Starts the lane's thread over `store`.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub(crate) fn start(
        store: Store,
        max_batch_events: usize,
        max_pending_events: usize,
    ) -> std::io::Result<Self> {
        let max_batch_events = max_batch_events.max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                pending: VecDeque::new(),
                pending_events: 0,
                committing: false,
                stopping: false,
                flush_waiters: Vec::new(),
                counters: IngestCounters::default(),
            }),
            arrived: Condvar::new(),
            max_batch_events,
            max_pending_events: max_pending_events.max(max_batch_events),
        });
        let thread = std::thread::Builder::new()
            .name(COMMIT_THREAD.to_owned())
            .spawn({
                let shared = shared.clone();
                move || commit_loop(&shared, &store)
            })?;
        Ok(CommitLane {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues `events` for the next group commit; `reply` gets their outcomes once it is
    /// durable, or `Overloaded` at once when the queue is full.
    pub(crate) fn submit(&self, events: Vec<Event>, reply: RpcReplyPort<AppendReply>) {
        if events.is_empty() {
            let _ = reply.send(Ok(Vec::new()));
            return;
        }
        let mut queue = self.shared.lock();
        if queue.stopping {
            drop(queue);
            let _ = reply.send(Err(stopped()));
            return;
        }
        // A request larger than the limit on its own is still taken when nothing waits:
        // refusing it would refuse it forever.
        if queue.pending_events + events.len() > self.shared.max_pending_events
            && queue.pending_events > 0
        {
            queue.counters.num_overloaded += 1;
            let pending = queue.pending_events;
            drop(queue);
            let _ = reply.send(Err(IngestError::Overloaded {
                pending,
                limit: self.shared.max_pending_events,
            }));
            return;
        }
        queue.pending_events += events.len();
        queue.pending.push_back(PendingRequest {
            events,
            reply,
            arrived: Instant::now(),
        });
        drop(queue);
        self.shared.arrived.notify_one();
    }

    /// Answers `reply` once nothing is pending or being committed.
    pub(crate) fn flush(&self, reply: RpcReplyPort<()>) {
        let mut queue = self.shared.lock();
        if queue.is_idle() {
            drop(queue);
            let _ = reply.send(());
        } else {
            queue.flush_waiters.push(reply);
        }
    }

    /// The counters, with the events waiting now.
    pub(crate) fn counters(&self) -> IngestCounters {
        let queue = self.shared.lock();
        let mut counters = queue.counters.clone();
        counters.num_pending_events = queue.pending_events;
        counters
    }

    /// Tells the thread to commit what is queued and end; refuses new requests from now
    /// on. Returns the thread to join (once; `None` after).
    pub(crate) fn stop(&mut self) -> Option<JoinHandle<()>> {
        self.shared.lock().stopping = true;
        self.shared.arrived.notify_one();
        self.thread.take()
    }
}

impl Drop for CommitLane {
    /// An actor that ends without `post_stop` (killed, or a panic) still lets its thread
    /// finish its queue; it is not joined here, which would block a runtime thread.
    fn drop(&mut self) {
        drop(self.stop());
    }
}

impl Shared {
    /// The queue; a panic while it was held (none of its code panics) does not make it
    /// unusable: its state is a plain queue and counters.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Queue {
    fn is_idle(&self) -> bool {
        !self.committing && self.pending.is_empty()
    }

    /// Everything pending up to the batch limit, at least one request.
    fn take_batch(&mut self, max_batch_events: usize) -> (Vec<PendingRequest>, usize) {
        let mut requests = Vec::new();
        let mut num_events = 0usize;
        while let Some(front) = self.pending.front() {
            if !requests.is_empty() && num_events + front.events.len() > max_batch_events {
                break;
            }
            let Some(request) = self.pending.pop_front() else {
                break;
            };
            num_events += request.events.len();
            requests.push(request);
        }
        self.pending_events -= num_events;
        (requests, num_events)
    }
}

fn stopped() -> IngestError {
    IngestError::Unavailable(ActorError::NotRunning(
        "the ingest actor is stopping".to_owned(),
    ))
}

/// Commits until told to stop with nothing queued.
fn commit_loop(shared: &Shared, store: &Store) {
    let _closed = CloseOnExit(shared);
    loop {
        let (requests, num_events) = {
            let mut queue = shared.lock();
            queue.committing = false;
            while queue.pending.is_empty() {
                for waiter in queue.flush_waiters.drain(..) {
                    let _ = waiter.send(());
                }
                if queue.stopping {
                    return;
                }
                queue = shared
                    .arrived
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            queue.committing = true;
            queue.take_batch(shared.max_batch_events)
        };
        let span = info_span!("ingest_commit", num_requests = requests.len(), num_events);
        let started = Instant::now();
        let result = span.in_scope(|| {
            // Borrowed, not copied: a copy of every text and metadata map was a fifth of
            // the commit path's time.
            catch_unwind(AssertUnwindSafe(|| {
                store.append_events(requests.iter().flat_map(|r| r.events.iter()))
            }))
        });
        let result = match result {
            Ok(appended) => appended.map_err(IngestError::from),
            Err(_) => {
                // These requests are not acknowledged: a caller retries, and what the
                // batch may have stored before the panic comes back a duplicate, never
                // a second copy. The lane goes on with the next batch.
                error!("a group commit panicked; its requests are answered unavailable");
                Err(IngestError::Unavailable(ActorError::NotRunning(
                    "the group commit failed unexpectedly".to_owned(),
                )))
            }
        };
        ACTOR_METRICS
            .ingest_commit_latency
            .observe(started.elapsed().as_secs_f64());
        let (tally, answers) = outcomes_per_request(requests, result);
        // Counted before anyone is answered, so a caller reading the counters after its
        // answer sees its own commit; idle again only after the answers (at the top of
        // the loop), so a flush returns once they are sent.
        tally.add_to(&mut shared.lock().counters);
        for (reply, answer) in answers {
            let _ = reply.send(answer);
        }
    }
}

/// Closes the queue when the commit loop ends, whichever way: a panic outside the
/// append (an answer, a metric, a tracing layer) would otherwise leave the lane taking
/// requests and flushes that nobody answers, and their callers waiting for good.
struct CloseOnExit<'a>(&'a Shared);

impl Drop for CloseOnExit<'_> {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.stopping = true;
        queue.committing = false;
        queue.pending_events = 0;
        let pending = std::mem::take(&mut queue.pending);
        let waiters = std::mem::take(&mut queue.flush_waiters);
        drop(queue);
        if !pending.is_empty() {
            error!(
                num_requests = pending.len(),
                "the ingest commit thread ended with requests queued; they are answered unavailable"
            );
        }
        for request in pending {
            let _ = request.reply.send(Err(stopped()));
        }
        for waiter in waiters {
            let _ = waiter.send(());
        }
    }
}

/// What one commit adds to the counters.
#[derive(Default)]
struct Tally {
    accepted: u64,
    duplicates: u64,
    failed: bool,
}

impl Tally {
    fn add_to(&self, counters: &mut IngestCounters) {
        if self.failed {
            counters.num_commit_errors += 1;
        } else {
            counters.num_commits += 1;
        }
        counters.num_accepted += self.accepted;
        counters.num_duplicates += self.duplicates;
    }
}

/// Each request's outcomes (or the failure), with the metrics recorded.
fn outcomes_per_request(
    requests: Vec<PendingRequest>,
    result: Result<Vec<AppendOutcome>, IngestError>,
) -> (Tally, Vec<(RpcReplyPort<AppendReply>, AppendReply)>) {
    let metrics = &*ACTOR_METRICS;
    let mut tally = Tally::default();
    let answers = match result {
        Ok(outcomes) => {
            metrics.ingest_batch_size.observe(outcomes.len() as f64);
            let mut remaining = outcomes.into_iter();
            let answers = requests
                .into_iter()
                .map(|request| {
                    let mine: Vec<AppendOutcome> =
                        remaining.by_ref().take(request.events.len()).collect();
                    let accepted = mine
                        .iter()
                        .filter(|o| matches!(o, AppendOutcome::Appended(_)))
                        .count() as u64;
                    tally.accepted += accepted;
                    tally.duplicates += mine.len() as u64 - accepted;
                    metrics
                        .ingest_ack_latency
                        .observe(request.arrived.elapsed().as_secs_f64());
                    (request.reply, Ok(mine))
                })
                .collect();
            metrics
                .ingest_events
                .with_label_values(&["accepted"])
                .inc_by(tally.accepted);
            metrics
                .ingest_events
                .with_label_values(&["duplicate"])
                .inc_by(tally.duplicates);
            answers
        }
        Err(err) => {
            tally.failed = true;
            error!(error = %err, "group commit failed; nothing of the batch was written");
            requests
                .into_iter()
                .map(|request| (request.reply, Err(err.clone())))
                .collect()
        }
    };
    (tally, answers)
}
