//! `IndexPruner`: the accelerator indexes' lifecycle (BM25 PRD FR-09), for the BM25 and
//! the vector index alike. On a cron schedule (default 03:00 daily, in the TOC's time
//! zone) it removes documents older than their kind's retention — segments, grips and
//! events after 30 days, days after 180, weeks after five years, months and years
//! never — from each enabled index, and each index commits. Only the accelerators'
//! documents go: the log and the TOC keep everything, and the day, week and month
//! rollups of what was pruned stay searchable. Both indexes take the same cutoffs, so
//! hybrid search never finds by meaning what keyword search no longer holds. Each
//! index keeps its last report in its commit payload, so `teleport.status` shows it
//! across restarts.
//!
//! One actor for both, not one per index: the schedule and retention are one setting,
//! and pruning them back to back keeps them in step.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use croner::Cron;
use memory_store::Store;
use memory_toc::Tz;
use memory_types::Clock;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde::Serialize;
use tracing::{info, warn};

use memory_projections::{
    BM25_METRICS, Bm25Handle, IndexPruneReport, PruneReport, Retention, VECTOR_METRICS,
    VectorHandle, prune_indexes,
};

/// Longest single sleep: the schedule is re-read at least this often, so a clock jump
/// (suspend, NTP step) delays a prune by at most this much.
const MAX_SLEEP: Duration = Duration::from_secs(3_600);

/// The actor (no configuration of its own).
pub struct IndexPruner;

/// Start-up arguments.
pub struct IndexPrunerArgs {
    /// The BM25 index, when enabled.
    pub bm25: Option<Bm25Handle>,
    /// The vector index, when enabled.
    pub vector: Option<VectorHandle>,
    /// The store (for the commits' cursor mirrors).
    pub store: Store,
    /// How long each kind stays.
    pub retention: Retention,
    /// When to prune.
    pub schedule: Cron,
    /// The zone the schedule is in.
    pub timezone: Tz,
    /// Where the schedule and the retention cutoffs read the time: the system clock,
    /// except in tests. The timer that wakes the actor still runs on tokio's clock.
    pub clock: Clock,
}

/// Cheap counters, for tests and status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IndexPrunerCounters {
    /// Scheduled prunes finished.
    pub num_runs: u64,
    /// The next scheduled prune, ms since the epoch; `None` when the schedule has no
    /// next occurrence.
    pub next_ms: Option<u64>,
    /// What the last scheduled prune did.
    pub last_report: Option<IndexPruneReport>,
}

/// Messages.
pub enum IndexPrunerMsg {
    /// Time to look at the schedule again.
    Tick,
    /// A prune finished on the blocking pool.
    Done(IndexPruneReport),
    /// The counters.
    Observe(RpcReplyPort<IndexPrunerCounters>),
}

/// Mutable state.
pub struct IndexPrunerState {
    args: IndexPrunerArgs,
    running: bool,
    counters: IndexPrunerCounters,
}

impl IndexPrunerState {
    fn schedule_next(&mut self, myself: &ActorRef<IndexPrunerMsg>) {
        let now_ms = i64::try_from(self.args.clock.now_ms()).unwrap_or(i64::MAX);
        let now = Utc
            .timestamp_millis_opt(now_ms)
            .single()
            .unwrap_or_default()
            .with_timezone(&self.args.timezone);
        self.counters.next_ms = match self.args.schedule.find_next_occurrence(&now, false) {
            Ok(next) => u64::try_from(next.timestamp_millis()).ok(),
            Err(err) => {
                warn!(error = %err, "the prune schedule has no next occurrence; pruning stops");
                None
            }
        };
        if let Some(next_ms) = self.counters.next_ms {
            info!(next_ms, "next index prune scheduled");
            sleep_until(myself, &self.args.clock, next_ms);
        }
    }
}

fn sleep_until(myself: &ActorRef<IndexPrunerMsg>, clock: &Clock, at_ms: u64) {
    let wait = Duration::from_millis(at_ms.saturating_sub(clock.now_ms())).min(MAX_SLEEP);
    myself.send_after(wait, || IndexPrunerMsg::Tick);
}

/// Counts a scheduled prune's outcome per index, in each index's metrics.
fn record_outcome(report: &IndexPruneReport, args: &IndexPrunerArgs) {
    let outcome = |pruned: &Option<PruneReport>| if pruned.is_some() { "ok" } else { "error" };
    if args.bm25.is_some() {
        BM25_METRICS
            .prune_total
            .with_label_values(&[outcome(&report.bm25)])
            .inc();
    }
    if args.vector.is_some() {
        VECTOR_METRICS
            .prune_total
            .with_label_values(&[outcome(&report.vector)])
            .inc();
    }
}

impl Actor for IndexPruner {
    type Msg = IndexPrunerMsg;
    type State = IndexPrunerState;
    type Arguments = IndexPrunerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: IndexPrunerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = IndexPrunerState {
            args,
            running: false,
            counters: IndexPrunerCounters::default(),
        };
        state.schedule_next(&myself);
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            IndexPrunerMsg::Tick => {
                let Some(next_ms) = state.counters.next_ms else {
                    return Ok(());
                };
                if state.args.clock.now_ms() < next_ms {
                    sleep_until(&myself, &state.args.clock, next_ms);
                    return Ok(());
                }
                if state.running {
                    return Ok(());
                }
                state.running = true;
                let (bm25, vector, store) = (
                    state.args.bm25.clone(),
                    state.args.vector.clone(),
                    state.args.store.clone(),
                );
                let cutoffs = state.args.retention.cutoffs(state.args.clock.now_ms());
                let myself = myself.clone();
                tokio::spawn(async move {
                    let report = crate::background::spawn_blocking(move || {
                        prune_indexes(&store, bm25.as_ref(), vector.as_ref(), &cutoffs)
                    })
                    .await
                    .unwrap_or_else(|err| IndexPruneReport {
                        errors: BTreeMap::from([(
                            "prune".to_owned(),
                            format!("prune panicked: {err}"),
                        )]),
                        ..IndexPruneReport::default()
                    });
                    let _ = myself.cast(IndexPrunerMsg::Done(report));
                });
            }
            IndexPrunerMsg::Done(report) => {
                state.running = false;
                record_outcome(&report, &state.args);
                if report.errors.is_empty() {
                    info!(pruned = report.total(), "scheduled index prune done");
                } else {
                    warn!(
                        pruned = report.total(),
                        errors = ?report.errors,
                        "scheduled index prune failed in part; next attempt at the next scheduled time"
                    );
                }
                state.counters.num_runs += 1;
                state.counters.last_report = Some(report);
                state.schedule_next(&myself);
            }
            IndexPrunerMsg::Observe(reply) => {
                let _ = reply.send(state.counters.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "pruner_tests.rs"]
mod tests;
