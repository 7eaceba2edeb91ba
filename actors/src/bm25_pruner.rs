//! `Bm25Pruner`: the BM25 index's lifecycle (PRD FR-09). On a cron schedule (default
//! 03:00 daily, in the TOC's time zone) it removes documents older than their kind's
//! retention — segments, grips and events after 30 days, days after 180, weeks after
//! five years, months and years never — and commits. Only the accelerator's documents
//! go: the log and the TOC keep everything, and the day, week and month rollups of
//! what was pruned stay searchable. The report (time and counts per kind) lives in the
//! index's commit payload, so `teleport.status` shows it across restarts.

use std::time::Duration;

use chrono::Utc;
use croner::Cron;
use memory_store::Store;
use memory_toc::Tz;
use memory_types::now_ms;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tracing::{info, warn};

use crate::bm25_index::{Bm25Handle, PruneReport};
use crate::metrics::BM25_METRICS;

/// Longest single sleep: the schedule is re-read at least this often, so a clock jump
/// (suspend, NTP step) delays a prune by at most this much.
const MAX_SLEEP: Duration = Duration::from_secs(3_600);

/// The actor (no configuration of its own).
pub struct Bm25Pruner;

/// Start-up arguments.
pub struct Bm25PrunerArgs {
    /// The index.
    pub handle: Bm25Handle,
    /// The store (for the commit's cursor mirror).
    pub store: Store,
    /// When to prune.
    pub schedule: Cron,
    /// The zone the schedule is in.
    pub timezone: Tz,
}

/// Messages.
pub enum Bm25PrunerMsg {
    /// Time to look at the schedule again.
    Tick,
    /// A prune finished on the blocking pool.
    Done(Result<PruneReport, String>),
}

/// Mutable state.
pub struct Bm25PrunerState {
    args: Bm25PrunerArgs,
    /// The next scheduled prune, ms since the epoch.
    next_ms: Option<u64>,
    running: bool,
}

impl Bm25PrunerState {
    fn schedule_next(&mut self, myself: &ActorRef<Bm25PrunerMsg>) {
        let now = Utc::now().with_timezone(&self.args.timezone);
        self.next_ms = match self.args.schedule.find_next_occurrence(&now, false) {
            Ok(next) => u64::try_from(next.timestamp_millis()).ok(),
            Err(err) => {
                warn!(error = %err, "the prune schedule has no next occurrence; pruning stops");
                None
            }
        };
        if let Some(next_ms) = self.next_ms {
            info!(next_ms, "next bm25 prune scheduled");
            sleep_until(myself, next_ms);
        }
    }
}

fn sleep_until(myself: &ActorRef<Bm25PrunerMsg>, at_ms: u64) {
    let wait = Duration::from_millis(at_ms.saturating_sub(now_ms())).min(MAX_SLEEP);
    myself.send_after(wait, || Bm25PrunerMsg::Tick);
}

impl Actor for Bm25Pruner {
    type Msg = Bm25PrunerMsg;
    type State = Bm25PrunerState;
    type Arguments = Bm25PrunerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Bm25PrunerArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        let mut state = Bm25PrunerState {
            args,
            next_ms: None,
            running: false,
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
            Bm25PrunerMsg::Tick => {
                let Some(next_ms) = state.next_ms else {
                    return Ok(());
                };
                if now_ms() < next_ms {
                    sleep_until(&myself, next_ms);
                    return Ok(());
                }
                if state.running {
                    return Ok(());
                }
                state.running = true;
                let (handle, store) = (state.args.handle.clone(), state.args.store.clone());
                let myself = myself.clone();
                tokio::spawn(async move {
                    let result = tokio::task::spawn_blocking(move || {
                        let cutoffs = handle.settings().retention.cutoffs(now_ms());
                        handle
                            .prune(&store, &cutoffs)
                            .map_err(|err| err.to_string())
                    })
                    .await
                    .unwrap_or_else(|err| Err(format!("prune panicked: {err}")));
                    let _ = myself.cast(Bm25PrunerMsg::Done(result));
                });
            }
            Bm25PrunerMsg::Done(result) => {
                state.running = false;
                match result {
                    Ok(report) => {
                        BM25_METRICS.prune_total.with_label_values(&["ok"]).inc();
                        info!(pruned = report.total(), "scheduled bm25 prune done");
                    }
                    Err(err) => {
                        BM25_METRICS.prune_total.with_label_values(&["error"]).inc();
                        warn!(error = %err, "scheduled bm25 prune failed; next attempt at the next scheduled time");
                    }
                }
                state.schedule_next(&myself);
            }
        }
        Ok(())
    }
}
