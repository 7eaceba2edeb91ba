//! What an ideas backfill keeps beside the graph — its plan, its mark, the failures of
//! the batch it is at — and the agent's view of an unfinished one; the backfill itself
//! is `backfill.rs`.

use std::time::{Duration, Instant};

use memory_store::{ProjectionBatch, Store, StoreError};
use serde::{Deserialize, Serialize};

use crate::ideas::graph::{BACKFILL_FAILURE, BACKFILL_MARK, BACKFILL_PLAN, IdeaGraph};
use crate::ideas::metrics::IDEAS_METRICS;

/// Where a backfill is.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackfillProgress {
    /// Sessions to do.
    pub sessions_total: usize,
    /// Sessions done.
    pub sessions_done: usize,
    /// Events read so far.
    pub events: usize,
    /// Ideas stored so far.
    pub ideas: usize,
}

pub(crate) const PLAN_VERSION: u8 = 1;
pub(crate) const MARK_VERSION: u8 = 1;
pub(crate) const FAILURE_VERSION: u8 = 1;

/// The first wait before a failed backfill is resumed; doubled per failure up to
/// [`RESUME_BACKOFF_MAX`].
const RESUME_BACKOFF: Duration = Duration::from_secs(30);
/// The longest wait between two attempts.
const RESUME_BACKOFF_MAX: Duration = Duration::from_secs(600);

/// What a backfill does, fixed when it starts: the session order is kept rather than
/// computed again on resume, since sessions that gain earlier events meanwhile would
/// move in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BackfillPlan {
    /// The projects whose graph it cleared.
    pub(crate) projects: Vec<String>,
    /// The agent's cursor when it started: it extracts the events up to it; later ones
    /// are the continuous mode's.
    pub(crate) cursor: u64,
    /// `(project, session)` in the order taken.
    pub(crate) sessions: Vec<(String, String)>,
}

/// How far a backfill got, committed with each of its batches.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BackfillMark {
    /// Sessions of the plan done.
    pub(crate) sessions_done: usize,
    /// In the plan's next session, the last log position done (zero: none).
    pub(crate) after_seq: u64,
    /// Events extracted.
    pub(crate) events: usize,
    /// Ideas stored.
    pub(crate) ideas: usize,
}

impl BackfillMark {
    pub(crate) fn progress(&self, plan: &BackfillPlan) -> BackfillProgress {
        BackfillProgress {
            sessions_total: plan.sessions.len(),
            sessions_done: self.sessions_done,
            events: self.events,
            ideas: self.ideas,
        }
    }
}

/// The failures of the batch the backfill is at, stored so `status` shows them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BackfillFailure {
    /// Failed attempts of the batch in a row.
    pub(crate) attempts: u32,
    /// The last one's error.
    pub(crate) last_error: String,
}

/// What a batch writes about its backfill.
pub(crate) enum MarkUpdate {
    /// The mark after this batch (the ideas the batch stores are added to its count),
    /// and whether the batch ends a run of failures (their record goes).
    Save {
        mark: BackfillMark,
        clear_failure: bool,
    },
    /// The backfill is done: its plan and mark go.
    Finish,
}

impl MarkUpdate {
    /// Adds the update to the batch that stores `stored` new ideas.
    ///
    /// # Errors
    /// When the mark cannot be encoded.
    pub(crate) fn write_into(
        &self,
        graph: &IdeaGraph,
        batch: &mut ProjectionBatch,
        stored: usize,
    ) -> Result<(), StoreError> {
        match self {
            MarkUpdate::Save {
                mark,
                clear_failure,
            } => {
                if *clear_failure {
                    graph.remove_backfill_failure(batch);
                }
                let mark = BackfillMark {
                    ideas: mark.ideas + stored,
                    ..mark.clone()
                };
                graph.put_backfill_record(
                    batch,
                    BACKFILL_MARK,
                    "backfill mark",
                    MARK_VERSION,
                    &mark,
                )
            }
            MarkUpdate::Finish => {
                graph.remove_backfill(batch);
                Ok(())
            }
        }
    }
}

/// Whether a backfill is unfinished, and when the agent tries it again.
#[derive(Debug, Default)]
pub(crate) struct PendingBackfill {
    pub(crate) pending: bool,
    /// Failed attempts in a row of the batch the backfill is at.
    pub(crate) failures: u32,
    pub(crate) retry_at: Option<Instant>,
}

impl PendingBackfill {
    /// What the stored graph says: a plan is there until its backfill is done; the
    /// stored failures keep their count (a restart does not reset it).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub(crate) fn read(graph: &IdeaGraph) -> Result<Self, StoreError> {
        let plan: Option<BackfillPlan> =
            graph.backfill_record(BACKFILL_PLAN, "backfill plan", PLAN_VERSION)?;
        let failure: Option<BackfillFailure> =
            graph.backfill_record(BACKFILL_FAILURE, "backfill failure", FAILURE_VERSION)?;
        Ok(PendingBackfill {
            pending: plan.is_some(),
            failures: failure.map_or(0, |failure| failure.attempts),
            retry_at: None,
        })
    }

    /// Ends the backoff now (tests).
    #[cfg(test)]
    pub(crate) fn due_now(&mut self) {
        self.retry_at = None;
    }

    /// How long until the next attempt (zero when due).
    pub(crate) fn wait(&self) -> Duration {
        self.retry_at.map_or(Duration::ZERO, |at| {
            at.saturating_duration_since(Instant::now())
        })
    }

    /// Counts a failure; the wait before the next attempt.
    pub(crate) fn failed(&mut self) -> Duration {
        self.failures += 1;
        let doublings = (self.failures - 1).min(5);
        let wait = RESUME_BACKOFF
            .saturating_mul(1 << doublings)
            .min(RESUME_BACKOFF_MAX);
        self.retry_at = Some(Instant::now() + wait);
        wait
    }
}

/// How far an unfinished backfill is, for `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnfinishedBackfill {
    /// Sessions, events and ideas so far.
    #[serde(flatten)]
    pub progress: BackfillProgress,
    /// Failed attempts in a row of the batch it is at (zero when none failed).
    pub failed_attempts: u32,
    /// The last failure's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The unfinished backfill of the store's ideas graph, if any (for `status`).
///
/// # Errors
/// Store or decoding failures.
pub fn unfinished_backfill(store: &Store) -> Result<Option<UnfinishedBackfill>, StoreError> {
    let graph = IdeaGraph::open(store)?;
    let Some(plan) =
        graph.backfill_record::<BackfillPlan>(BACKFILL_PLAN, "backfill plan", PLAN_VERSION)?
    else {
        return Ok(None);
    };
    let mark: BackfillMark = graph
        .backfill_record(BACKFILL_MARK, "backfill mark", MARK_VERSION)?
        .unwrap_or_default();
    let failure: Option<BackfillFailure> =
        graph.backfill_record(BACKFILL_FAILURE, "backfill failure", FAILURE_VERSION)?;
    Ok(Some(UnfinishedBackfill {
        progress: mark.progress(&plan),
        failed_attempts: failure.as_ref().map_or(0, |failure| failure.attempts),
        last_error: failure.map(|failure| failure.last_error),
    }))
}

/// The backfill gauges once no backfill is running.
pub(crate) fn clear_gauges() {
    for state in ["total", "done"] {
        IDEAS_METRICS.backfill.with_label_values(&[state]).set(0);
    }
}

#[cfg(test)]
mod tests {
    use memory_store::codec;

    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
            .collect()
    }

    /// Version 1 of the three records, byte for byte: a store written by this build
    /// must stay readable by later ones.
    const PLAN_V1: &str = "010101702a010170027331";
    const MARK_V1: &str = "0101070903";
    const FAILURE_V1: &str = "01020a6d6f64656c20646f776e";

    #[test]
    fn the_v1_records_still_decode() {
        let plan = BackfillPlan {
            projects: vec!["p".into()],
            cursor: 42,
            sessions: vec![("p".into(), "s1".into())],
        };
        let mark = BackfillMark {
            sessions_done: 1,
            after_seq: 7,
            events: 9,
            ideas: 3,
        };
        let failure = BackfillFailure {
            attempts: 2,
            last_error: "model down".into(),
        };
        let encoded = [
            hex(&codec::encode("backfill plan", PLAN_VERSION, &plan).expect("plan")),
            hex(&codec::encode("backfill mark", MARK_VERSION, &mark).expect("mark")),
            hex(&codec::encode("backfill failure", FAILURE_VERSION, &failure).expect("failure")),
        ];
        assert_eq!(encoded, [PLAN_V1, MARK_V1, FAILURE_V1]);
        let plan: BackfillPlan =
            codec::decode("backfill plan", 1, &unhex(PLAN_V1)).expect("plan v1");
        assert_eq!((plan.cursor, plan.sessions.len()), (42, 1));
        let mark: BackfillMark =
            codec::decode("backfill mark", 1, &unhex(MARK_V1)).expect("mark v1");
        assert_eq!((mark.sessions_done, mark.after_seq, mark.ideas), (1, 7, 3));
        let failure: BackfillFailure =
            codec::decode("backfill failure", 1, &unhex(FAILURE_V1)).expect("failure v1");
        assert_eq!(failure.attempts, 2);
    }
}
