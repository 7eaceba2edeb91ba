//! The outbox consumer runner: the loop every projection actor shares.
//!
//! One step reads a batch after the cursor, hands it to the [`OutboxConsumer`], which
//! writes its projection and the new cursor atomically; then the next step. When caught
//! up, the runner sleeps until the store's head moves (plus a slow safety-net poll).
//!
//! Failure handling: a failing batch is retried item by item to isolate the poison
//! entry; that entry is retried with exponential backoff and, after `max_attempts`,
//! parked in the dead-letter partition with its error while the cursor moves past it.
//! A panic inside `apply` counts as a failed attempt and the consumer is rebuilt from
//! its factory (its in-memory state is suspect; its durable state is not). The steps run
//! on the blocking pool, so the actor stays responsive to `Observe` while working.

use std::time::{Duration, Instant};

use memory_projections::{ConsumerError, ConsumerFactory, OutboxConsumer};
use memory_store::{DeadLetter, FeedItem, OutboxSeq, Store};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::Serialize;
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

/// How long stopping a consumer waits for the step it has running.
/// Below the supervisor's 30 s and systemd's `TimeoutStopSec=30`, so the final index
/// commits and the store's sync still come before a SIGKILL.
const STOP_WAIT: Duration = Duration::from_secs(10);

use crate::ask::ask;
use crate::error::ActorError;
use crate::metrics::ACTOR_METRICS;
use crate::supervisor::Backoff;

/// Tuning of the runner; `*_for_tests` shortens the delays.
#[derive(Clone, Debug)]
pub struct RunnerConfig {
    /// Items read per step.
    pub batch_size: usize,
    /// Attempts at one item before it is parked.
    pub max_attempts: u32,
    /// Retry delays.
    pub retry_backoff: Backoff,
    /// Safety-net poll.
    pub poll_interval: Duration,
    /// After catching up, wait this long before the next step, so that a steady
    /// trickle of appends is applied in batches instead of one commit per append. It
    /// bounds the extra ingest-to-visible delay and frees CPU for ingest.
    pub linger: Duration,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            batch_size: 256,
            max_attempts: 5,
            retry_backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(30)),
            poll_interval: Duration::from_secs(1),
            linger: Duration::from_millis(20),
        }
    }
}

impl RunnerConfig {
    /// Millisecond delays, for tests.
    #[must_use]
    pub fn for_tests() -> Self {
        RunnerConfig {
            batch_size: 64,
            max_attempts: 3,
            retry_backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(10)),
            poll_interval: Duration::from_millis(50),
            linger: Duration::from_millis(1),
        }
    }
}

/// Counters for tests and `status`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConsumerCounters {
    /// The consumer's name.
    pub name: String,
    /// Its durable cursor.
    pub cursor: u64,
    /// Items applied.
    pub num_items_applied: u64,
    /// Steps that applied something.
    pub num_steps: u64,
    /// Failed attempts.
    pub num_failures: u64,
    /// Items parked.
    pub num_dead_lettered: u64,
    /// Rebuilds after a panic.
    pub num_panics: u64,
    /// The last error seen.
    pub last_error: Option<String>,
}

/// The runner actor (no configuration of its own).
pub struct ConsumerActor<C>(std::marker::PhantomData<fn() -> C>);

impl<C> Default for ConsumerActor<C> {
    fn default() -> Self {
        ConsumerActor(std::marker::PhantomData)
    }
}

/// Start-up arguments.
pub struct ConsumerArgs<C> {
    /// The store.
    pub store: Store,
    /// Builds the consumer.
    pub factory: ConsumerFactory<C>,
    /// Tuning.
    pub config: RunnerConfig,
}

/// What one step did.
pub enum StepOutcome {
    /// Nothing after the cursor.
    Idle,
    /// The consumer applied nothing and asked to be stepped again after this long
    /// ([`ConsumerError::Deferred`]).
    Deferred(Duration),
    /// Applied items up to this position.
    Advanced {
        /// The new cursor.
        up_to: OutboxSeq,
        /// Items applied.
        num_items: usize,
    },
    /// The batch starting at `first` failed.
    Failed {
        /// Position of the first item of the failed batch.
        first: OutboxSeq,
        /// Position of its last item.
        last: OutboxSeq,
        /// Whether the batch was the single item `first`.
        single: bool,
        /// Why.
        error: String,
        /// Whether it was a panic.
        panicked: bool,
        /// Whether the consumer called the item itself unacceptable
        /// ([`ConsumerError::BadInput`]): retrying cannot help, so once isolated it is
        /// parked without waiting out the retries.
        bad_input: bool,
        /// Whether this failure is the environment's
        /// ([`ConsumerError::is_environmental`]): held and applied again with backoff,
        /// neither isolated nor parked, and not counted towards parking.
        unparkable: bool,
        /// Whether the item is one the consumer never skips
        /// ([`OutboxConsumer::never_park`]): from now on it is applied again with backoff
        /// for as long as it fails, whatever the failure.
        never_skipped: bool,
    },
    /// The item at `seq` was parked.
    Parked {
        /// Its position.
        seq: OutboxSeq,
    },
}

/// Messages.
pub enum ConsumerMsg<C> {
    /// The head moved, a retry is due, or the poll fired.
    Wake,
    /// The linger after catching up is over.
    Linger,
    /// A failed entry's backoff is over.
    RetryDue,
    /// A step finished on the blocking pool; the consumer comes back with it.
    StepDone {
        /// The consumer, or `None` when it panicked.
        consumer: Option<C>,
        /// What happened.
        outcome: StepOutcome,
        /// How long it took.
        elapsed: Duration,
    },
    /// Reset the projection and replay everything after the position.
    Reset(OutboxSeq, RpcReplyPort<Result<(), ConsumerError>>),
    /// Answers with the counters.
    Observe(RpcReplyPort<ConsumerCounters>),
    /// Runs a job with the consumer to itself (between steps, on the blocking pool): a
    /// long operation of one projection, such as the ideas backfill. The job reports
    /// its own result (it owns the reply channel).
    Exclusive(ExclusiveJob<C>),
    /// An exclusive job finished; the consumer comes back (`None`: the job panicked).
    JobDone(Option<C>),
}

/// A job run with exclusive access to a consumer; see [`ConsumerMsg::Exclusive`].
pub type ExclusiveJob<C> = Box<dyn FnOnce(&mut C, &Store) + Send>;

struct Retry {
    seq: OutboxSeq,
    attempts: u32,
    last_error: String,
    /// The item is bad input: park it at the next step, whatever the attempts.
    park_now: bool,
    /// The consumer never skips the item: retried with backoff for as long as it fails.
    never_park: bool,
    /// Failures held for the environment in a row (their backoff; they do not count
    /// towards parking).
    held: u32,
}

/// Mutable state.
pub struct ConsumerState<C> {
    name: String,
    store: Store,
    factory: ConsumerFactory<C>,
    config: RunnerConfig,
    /// `None` while a step runs.
    consumer: Option<C>,
    cursor: OutboxSeq,
    /// After a batch failure, items are applied one at a time up to this position.
    isolate_until: Option<OutboxSeq>,
    retry: Option<Retry>,
    retry_scheduled: bool,
    /// When the last step found the consumer caught up (nothing or a partial batch).
    caught_up_at: Option<Instant>,
    linger_scheduled: bool,
    wake_pending: bool,
    pending_reset: Vec<RpcReplyPort<Result<(), ConsumerError>>>,
    /// Exclusive jobs waiting for the running step to finish.
    pending_jobs: Vec<ExclusiveJob<C>>,
    /// Where the pending reset restarts from.
    reset_start: OutboxSeq,
    notifier: Option<JoinHandle<()>>,
    poller: Option<JoinHandle<()>>,
    /// The step or exclusive job running on the background threads: stopping waits
    /// for it (bounded), so nothing of a stopped consumer still runs when the process
    /// exits (the background runtime is never dropped, which would have waited).
    in_flight: Option<JoinHandle<()>>,
    counters: ConsumerCounters,
}

impl<C: OutboxConsumer> Actor for ConsumerActor<C> {
    type Msg = ConsumerMsg<C>;
    type State = ConsumerState<C>;
    type Arguments = ConsumerArgs<C>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: ConsumerArgs<C>,
    ) -> Result<Self::State, ActorProcessingErr> {
        let store = args.store.clone();
        let factory = args.factory.clone();
        let (consumer, cursor) =
            crate::background::spawn_blocking(move || -> Result<(C, OutboxSeq), ConsumerError> {
                let mut consumer = factory(&store)?;
                let cursor = consumer.load_cursor(&store)?;
                Ok((consumer, cursor))
            })
            .await??;
        let name = consumer.name().to_owned();
        info!(consumer = %name, cursor = cursor.0, "consumer starting");
        let mut head_rx = args.store.subscribe_head();
        let waker = myself.clone();
        let notifier = tokio::spawn(async move {
            while head_rx.changed().await.is_ok() {
                if waker.cast(ConsumerMsg::Wake).is_err() {
                    break;
                }
            }
        });
        let poller = myself.send_interval(args.config.poll_interval, || ConsumerMsg::Wake);
        let counters = ConsumerCounters {
            name: name.clone(),
            cursor: cursor.0,
            ..ConsumerCounters::default()
        };
        publish_cursor(&name, cursor, args.store.head());
        let _ = myself.cast(ConsumerMsg::Wake);
        Ok(ConsumerState {
            name,
            store: args.store,
            factory: args.factory,
            config: args.config,
            consumer: Some(consumer),
            cursor,
            isolate_until: None,
            retry: None,
            retry_scheduled: false,
            caught_up_at: None,
            linger_scheduled: false,
            wake_pending: false,
            pending_reset: Vec::new(),
            pending_jobs: Vec::new(),
            reset_start: OutboxSeq::ZERO,
            notifier: Some(notifier),
            poller: Some(poller),
            in_flight: None,
            counters,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(notifier) = state.notifier.take() {
            notifier.abort();
        }
        if let Some(poller) = state.poller.take() {
            poller.abort();
        }
        if let Some(in_flight) = state.in_flight.take()
            && tokio::time::timeout(STOP_WAIT, in_flight).await.is_err()
        {
            warn!(consumer = %state.name, "a step still runs after {STOP_WAIT:?}; stopping without it");
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ConsumerMsg::Wake => {
                // While a retry waits out its backoff, appends and polls must not cut it short.
                if state.retry_scheduled {
                    return Ok(());
                }
                if let Some(caught_up_at) = state.caught_up_at {
                    let since = caught_up_at.elapsed();
                    if since < state.config.linger {
                        if !state.linger_scheduled {
                            state.linger_scheduled = true;
                            myself.send_after(state.config.linger - since, || ConsumerMsg::Linger);
                        }
                        return Ok(());
                    }
                }
                start_step(&myself, state);
            }
            ConsumerMsg::RetryDue => {
                state.retry_scheduled = false;
                start_step(&myself, state);
            }
            ConsumerMsg::Linger => {
                state.linger_scheduled = false;
                state.caught_up_at = None;
                start_step(&myself, state);
            }
            ConsumerMsg::StepDone {
                consumer,
                outcome,
                elapsed,
            } => {
                ACTOR_METRICS
                    .consumer_apply_latency
                    .with_label_values(&[state.name.as_str()])
                    .observe(elapsed.as_secs_f64());
                state.consumer = match consumer {
                    Some(consumer) => Some(consumer),
                    None => {
                        state.counters.num_panics += 1;
                        let store = state.store.clone();
                        let factory = state.factory.clone();
                        Some(crate::background::spawn_blocking(move || factory(&store)).await??)
                    }
                };
                let progressed = on_step_done(&myself, state, outcome);
                if !state.pending_reset.is_empty() {
                    do_reset(state).await;
                    state.wake_pending = true;
                }
                if !state.pending_jobs.is_empty() {
                    let job = state.pending_jobs.remove(0);
                    start_job(&myself, state, job);
                    return Ok(());
                }
                if progressed || std::mem::take(&mut state.wake_pending) {
                    start_step(&myself, state);
                }
            }
            ConsumerMsg::Reset(start, reply) => {
                state.reset_start = start;
                state.pending_reset.push(reply);
                if state.consumer.is_some() {
                    do_reset(state).await;
                    start_step(&myself, state);
                }
            }
            ConsumerMsg::Exclusive(job) => {
                if state.consumer.is_some() {
                    start_job(&myself, state, job);
                } else {
                    state.pending_jobs.push(job);
                }
            }
            ConsumerMsg::JobDone(consumer) => {
                state.consumer = match consumer {
                    Some(consumer) => Some(consumer),
                    None => {
                        state.counters.num_panics += 1;
                        let store = state.store.clone();
                        let factory = state.factory.clone();
                        Some(crate::background::spawn_blocking(move || factory(&store)).await??)
                    }
                };
                // The job may have moved the durable cursor (it owns the projection).
                let store = state.store.clone();
                if let Some(mut consumer) = state.consumer.take() {
                    let (consumer, cursor) = crate::background::spawn_blocking(move || {
                        let cursor = consumer.load_cursor(&store);
                        (consumer, cursor)
                    })
                    .await?;
                    state.consumer = Some(consumer);
                    if let Ok(cursor) = cursor {
                        state.cursor = cursor;
                    }
                }
                if !state.pending_jobs.is_empty() {
                    let job = state.pending_jobs.remove(0);
                    start_job(&myself, state, job);
                } else {
                    start_step(&myself, state);
                }
            }
            ConsumerMsg::Observe(reply) => {
                let mut counters = state.counters.clone();
                counters.cursor = state.cursor.0;
                let _ = reply.send(counters);
            }
        }
        Ok(())
    }
}

fn publish_cursor(name: &str, cursor: OutboxSeq, head: OutboxSeq) {
    ACTOR_METRICS
        .consumer_cursor
        .with_label_values(&[name])
        .set(i64::try_from(cursor.0).unwrap_or(i64::MAX));
    ACTOR_METRICS
        .consumer_lag
        .with_label_values(&[name])
        .set(i64::try_from(head.0.saturating_sub(cursor.0)).unwrap_or(i64::MAX));
}

async fn do_reset<C: OutboxConsumer>(state: &mut ConsumerState<C>) {
    let Some(mut consumer) = state.consumer.take() else {
        return;
    };
    let store = state.store.clone();
    let start = state.reset_start;
    let joined = crate::background::spawn_blocking(move || {
        let result = consumer.reset(&store, start).map(|()| start);
        (consumer, result)
    })
    .await;
    let result = match joined {
        Ok((consumer, result)) => {
            state.consumer = Some(consumer);
            result
        }
        Err(err) => Err(ConsumerError::Internal(format!("reset panicked: {err}"))),
    };
    if let Ok(cursor) = &result {
        info!(consumer = %state.name, "projection reset; replaying from the log");
        state.cursor = *cursor;
        state.retry = None;
        state.isolate_until = None;
        publish_cursor(&state.name, state.cursor, state.store.head());
    }
    if state.consumer.is_none() {
        let store = state.store.clone();
        let factory = state.factory.clone();
        if let Ok(Ok(consumer)) = crate::background::spawn_blocking(move || factory(&store)).await {
            state.consumer = Some(consumer);
        }
    }
    for reply in state.pending_reset.drain(..) {
        let _ = reply.send(result.clone().map(|_| ()));
    }
}

/// Runs an exclusive job on the blocking pool with the consumer taken out of the state,
/// so no step starts meanwhile; the consumer comes back with [`ConsumerMsg::JobDone`].
fn start_job<C: OutboxConsumer>(
    myself: &ActorRef<ConsumerMsg<C>>,
    state: &mut ConsumerState<C>,
    job: ExclusiveJob<C>,
) {
    let Some(mut consumer) = state.consumer.take() else {
        state.pending_jobs.insert(0, job);
        return;
    };
    let store = state.store.clone();
    let myself = myself.clone();
    state.in_flight = Some(tokio::spawn(async move {
        let joined = crate::background::spawn_blocking(move || {
            job(&mut consumer, &store);
            consumer
        })
        .await;
        if myself.cast(ConsumerMsg::JobDone(joined.ok())).is_err() {
            debug!("consumer stopped during an exclusive job");
        }
    }));
}

/// Starts a step on the blocking pool unless one is running or a retry is waiting.
fn start_step<C: OutboxConsumer>(myself: &ActorRef<ConsumerMsg<C>>, state: &mut ConsumerState<C>) {
    if state.retry_scheduled {
        return;
    }
    let Some(mut consumer) = state.consumer.take() else {
        state.wake_pending = true;
        return;
    };
    let store = state.store.clone();
    let cursor = state.cursor;
    let isolating = state.isolate_until.is_some_and(|until| cursor < until);
    let batch_size = if isolating {
        1
    } else {
        state.config.batch_size
    };
    let park = state
        .retry
        .as_ref()
        .filter(|retry| {
            !retry.never_park
                && (retry.park_now || retry.attempts >= state.config.max_attempts)
                && retry.seq == cursor.next()
        })
        .map(|retry| (retry.attempts, retry.last_error.clone()));
    let name = state.name.clone();
    let myself = myself.clone();
    state.in_flight = Some(tokio::spawn(async move {
        let started = Instant::now();
        let joined = crate::background::spawn_blocking(move || {
            let outcome = run_step(&mut consumer, &store, &name, cursor, batch_size, park);
            (consumer, outcome)
        })
        .await;
        let message = match joined {
            Ok((consumer, outcome)) => ConsumerMsg::StepDone {
                consumer: Some(consumer),
                outcome,
                elapsed: started.elapsed(),
            },
            Err(join_err) => ConsumerMsg::StepDone {
                consumer: None,
                outcome: StepOutcome::Failed {
                    first: cursor.next(),
                    last: cursor.next(),
                    single: batch_size == 1,
                    error: format!("panicked: {join_err}"),
                    panicked: true,
                    bad_input: false,
                    unparkable: false,
                    never_skipped: false,
                },
                elapsed: started.elapsed(),
            },
        };
        if myself.cast(message).is_err() {
            debug!("consumer stopped during a step");
        }
    }));
}

fn run_step<C: OutboxConsumer>(
    consumer: &mut C,
    store: &Store,
    name: &str,
    cursor: OutboxSeq,
    batch_size: usize,
    park: Option<(u32, String)>,
) -> StepOutcome {
    let items = match store.read_feed(cursor, batch_size) {
        Ok(items) => items,
        Err(err) => {
            let next = cursor.next();
            return StepOutcome::Failed {
                first: next,
                last: next,
                single: false,
                error: format!("reading the feed: {err}"),
                panicked: false,
                bad_input: false,
                unparkable: true,
                never_skipped: false,
            };
        }
    };
    let (Some(first), Some(last)) = (
        items.first().map(FeedItem::seq),
        items.last().map(FeedItem::seq),
    ) else {
        match consumer.on_idle(store) {
            Err(ConsumerError::Deferred(after)) => return StepOutcome::Deferred(after),
            Err(err) => {
                tracing::warn!(consumer = %name, error = %err, "idle work failed; retrying at the next idle step");
            }
            Ok(()) => {}
        }
        return StepOutcome::Idle;
    };
    if let Some((attempts, error)) = park {
        let item = &items[0];
        if consumer.never_park(item) {
            return StepOutcome::Failed {
                first,
                last: first,
                single: true,
                error: format!("{error} (never skipped: applied again after a pause)"),
                panicked: false,
                bad_input: false,
                unparkable: false,
                never_skipped: true,
            };
        }
        let payload = describe_item(item);
        let dead_letter = DeadLetter::new(name, Some(first.0), error, payload.as_bytes(), attempts);
        return match consumer.park(store, dead_letter, first) {
            Ok(()) => StepOutcome::Parked { seq: first },
            Err(err) => StepOutcome::Failed {
                first,
                last: first,
                single: true,
                error: format!("parking: {err}"),
                panicked: false,
                bad_input: false,
                // Parking failed for the environment (it writes too): not parked, and
                // applied again once the environment is mended.
                unparkable: err.is_environmental(),
                never_skipped: false,
            },
        };
    }
    match consumer.apply(store, &items, last) {
        Ok(()) => StepOutcome::Advanced {
            up_to: last,
            num_items: items.len(),
        },
        Err(ConsumerError::Deferred(after)) => StepOutcome::Deferred(after),
        Err(err) => StepOutcome::Failed {
            first,
            last,
            single: items.len() == 1,
            error: err.to_string(),
            panicked: false,
            bad_input: err.is_bad_input(),
            unparkable: err.is_environmental(),
            never_skipped: false,
        },
    }
}

fn describe_item(item: &FeedItem) -> String {
    match item {
        FeedItem::Event { seq, event } => format!(
            "{{\"seq\":{seq},\"project_id\":{:?},\"event_id\":{:?},\"session_id\":{:?}}}",
            event.project_id, event.event_id, event.session_id
        ),
        FeedItem::Derived { seq, entry } => format!(
            "{{\"seq\":{seq},\"kind\":{:?},\"project_id\":{:?},\"key\":{:?}}}",
            entry.kind, entry.project_id, entry.key
        ),
        FeedItem::Truncated { seq } => format!("{{\"seq\":{seq},\"truncated\":true}}"),
    }
}

/// Folds a step's outcome into the state; true when the next step should start now.
fn on_step_done<C: OutboxConsumer>(
    myself: &ActorRef<ConsumerMsg<C>>,
    state: &mut ConsumerState<C>,
    outcome: StepOutcome,
) -> bool {
    let name = state.name.clone();
    match outcome {
        StepOutcome::Idle => {
            state.caught_up_at = Some(Instant::now());
            publish_cursor(&name, state.cursor, state.store.head());
            false
        }
        StepOutcome::Deferred(after) => {
            if after.is_zero() {
                return true;
            }
            state.retry_scheduled = true;
            myself.send_after(after, || ConsumerMsg::RetryDue);
            false
        }
        StepOutcome::Advanced { up_to, num_items } => {
            if num_items < state.config.batch_size {
                state.caught_up_at = Some(Instant::now());
            }
            state.cursor = up_to;
            state.counters.num_items_applied += num_items as u64;
            state.counters.num_steps += 1;
            if state.retry.as_ref().is_some_and(|retry| retry.seq <= up_to) {
                state.retry = None;
            }
            if state.isolate_until.is_some_and(|until| up_to >= until) {
                state.isolate_until = None;
            }
            ACTOR_METRICS
                .consumer_items
                .with_label_values(&[name.as_str()])
                .inc_by(num_items as u64);
            publish_cursor(&name, up_to, state.store.head());
            true
        }
        StepOutcome::Parked { seq } => {
            warn!(consumer = %name, seq = seq.0, "poison entry parked in dead letters");
            state.cursor = seq;
            state.retry = None;
            state.counters.num_dead_lettered += 1;
            publish_cursor(&name, seq, state.store.head());
            true
        }
        StepOutcome::Failed {
            first,
            last,
            single,
            error,
            panicked,
            bad_input,
            unparkable,
            never_skipped,
        } => {
            state.counters.num_failures += 1;
            state.counters.last_error = Some(error.clone());
            ACTOR_METRICS
                .consumer_failures
                .with_label_values(&[name.as_str()])
                .inc();
            let sticky = never_skipped
                || state
                    .retry
                    .as_ref()
                    .is_some_and(|retry| retry.seq == first && retry.never_park);
            if unparkable || sticky {
                // Not the entry's fault (the disk, a read-only directory), or an entry
                // this consumer never skips: no isolating, no parking — applied again
                // with backoff (up to the longest) until whatever fails it is mended. A
                // later failure of another kind is handled as that kind.
                let held = match &mut state.retry {
                    Some(retry) if retry.seq == first => {
                        retry.held += 1;
                        retry.last_error = error.clone();
                        retry.never_park = sticky;
                        retry.held
                    }
                    _ => {
                        state.retry = Some(Retry {
                            seq: first,
                            attempts: 0,
                            last_error: error.clone(),
                            park_now: false,
                            never_park: sticky,
                            held: 1,
                        });
                        1
                    }
                };
                error!(consumer = %name, seq = first.0, held, error = %error, "cannot apply; applying again after a pause (never parked: not the entry's fault, or an entry this consumer never skips)");
                let delay = state.config.retry_backoff.delay(held - 1);
                state.retry_scheduled = true;
                myself.send_after(delay, || ConsumerMsg::RetryDue);
                return false;
            }
            if !single {
                // Isolate the poison entry: replay this range one item at a time.
                debug!(consumer = %name, first = first.0, last = last.0, error = %error, "batch failed; isolating");
                state.isolate_until = Some(last);
                return true;
            }
            let attempts = match &mut state.retry {
                Some(retry) if retry.seq == first => {
                    retry.attempts += 1;
                    retry.last_error = error.clone();
                    retry.park_now = bad_input;
                    retry.attempts
                }
                _ => {
                    state.retry = Some(Retry {
                        seq: first,
                        attempts: 1,
                        last_error: error.clone(),
                        park_now: bad_input,
                        never_park: false,
                        held: 0,
                    });
                    1
                }
            };
            warn!(consumer = %name, seq = first.0, attempts, panicked, bad_input, error = %error, "entry failed");
            if bad_input || attempts >= state.config.max_attempts {
                return true; // the next step parks it
            }
            let delay = state.config.retry_backoff.delay(attempts - 1);
            state.retry_scheduled = true;
            myself.send_after(delay, || ConsumerMsg::RetryDue);
            false
        }
    }
}

/// A cheap handle to a running consumer, resolved by registered name on every call so
/// it survives supervisor restarts.
pub struct ConsumerHandle<C> {
    name: String,
    _consumer: std::marker::PhantomData<fn() -> C>,
}

impl<C> Clone for ConsumerHandle<C> {
    fn clone(&self) -> Self {
        ConsumerHandle {
            name: self.name.clone(),
            _consumer: std::marker::PhantomData,
        }
    }
}

impl<C: OutboxConsumer> ConsumerHandle<C> {
    /// A handle to the consumer actor registered as `name`.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        ConsumerHandle {
            name: name.into(),
            _consumer: std::marker::PhantomData,
        }
    }

    fn actor(&self) -> Result<ActorRef<ConsumerMsg<C>>, ActorError> {
        ActorRef::where_is(self.name.clone())
            .ok_or_else(|| ActorError::NotRunning(format!("consumer {}", self.name)))
    }

    /// The consumer's counters.
    ///
    /// # Errors
    /// When the actor does not answer.
    pub async fn counters(&self) -> Result<ConsumerCounters, ActorError> {
        ask(
            &self.actor()?,
            ConsumerMsg::Observe,
            Some(Duration::from_secs(5)),
        )
        .await
    }

    /// Resets the projection; it then replays from the log.
    ///
    /// # Errors
    /// When the reset fails or the actor does not answer.
    pub async fn reset(&self) -> Result<(), ActorError> {
        self.reset_from(OutboxSeq::ZERO).await
    }

    /// Resets the projection with its cursor at `start`; it then applies what follows.
    ///
    /// # Errors
    /// When the reset fails or the actor does not answer.
    pub async fn reset_from(&self, start: OutboxSeq) -> Result<(), ActorError> {
        ask(
            &self.actor()?,
            |reply| ConsumerMsg::Reset(start, reply),
            None,
        )
        .await?
        .map_err(ActorError::from)
    }

    /// Runs `job` with the consumer to itself (between steps) and returns its result.
    ///
    /// # Errors
    /// When the actor is not running or the job panicked.
    pub async fn exclusive<R: Send + 'static>(
        &self,
        job: impl FnOnce(&mut C, &Store) -> R + Send + 'static,
    ) -> Result<R, ActorError> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        self.actor()?
            .cast(ConsumerMsg::Exclusive(Box::new(move |consumer, store| {
                let _ = sender.send(job(consumer, store));
            })))
            .map_err(|err| ActorError::NotRunning(format!("consumer {}: {err}", self.name)))?;
        receiver.await.map_err(|_| {
            ActorError::NotRunning(format!("consumer {}: the job panicked", self.name))
        })
    }

    /// Waits until the consumer's cursor reaches `seq` or `timeout` passes; true when reached.
    pub async fn wait_for(&self, seq: OutboxSeq, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.counters().await.is_ok_and(|c| c.cursor >= seq.0) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

#[cfg(test)]
#[path = "consumer_tests.rs"]
mod consumer_tests;
