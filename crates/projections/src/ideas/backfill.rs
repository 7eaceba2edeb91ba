//! The indexing agent's backfill mode ([`IndexingAgent::backfill`]): the ideas of what
//! the agent already passed, extracted again session by session, oldest first — and
//! resumed where it stopped after a crash.
//!
//! A backfill starts by deleting the graph of the projects it covers. Had it kept its
//! place only in memory, a daemon killed mid-way would come back with the ideas of the
//! sessions it had reached and no others (the agent's cursor is past every event), and
//! nothing would say so until someone ran it again — the crash soak found exactly that.
//! So the backfill writes its **plan** (the projects, the position it extracts up to, the
//! sessions in the order it takes them) in the store batch that clears the graph, and its
//! **mark** (sessions done, the last position done in the next one, the counts) in the
//! store batch of each extraction: after a crash the graph and the mark agree, and the
//! agent carries on from the mark before its next continuous batch (or when idle). A
//! backfill that failed (the engine's model down) is resumed the same way, after a
//! backoff. The last batch, the recalls' replay, deletes both records.

use std::time::{Duration, Instant};

use memory_ideas::{BatchMode, ExtractBatch, SessionEvents};
use memory_store::{DerivedEntry, OutboxSeq, ProjectionBatch, Store, StoreError};
use memory_types::EventKind;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::ideas::agent::{
    BackfillProgress, BatchInput, IDEAS_CLEARED, IndexingAgent, RECALL_SESSION,
};
use crate::ideas::graph::{BACKFILL_MARK, BACKFILL_PLAN, IdeaGraph};
use crate::ideas::metrics::IDEAS_METRICS;
use crate::ideas::reads::recall_of;
use crate::session_catalog::SessionCatalog;

const PLAN_VERSION: u8 = 1;
const MARK_VERSION: u8 = 1;

/// The first wait before a failed backfill is resumed; doubled per failure up to
/// [`RESUME_BACKOFF_MAX`].
const RESUME_BACKOFF: Duration = Duration::from_secs(30);
/// The longest wait between two attempts.
const RESUME_BACKOFF_MAX: Duration = Duration::from_secs(600);

/// What a backfill does, fixed when it starts: the session order is kept rather than
/// computed again on resume, since sessions that gain earlier events meanwhile would
/// move in it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BackfillPlan {
    /// The projects whose graph it cleared.
    projects: Vec<String>,
    /// The agent's cursor when it started: it extracts the events up to it; later ones
    /// are the continuous mode's.
    cursor: u64,
    /// `(project, session)` in the order taken.
    sessions: Vec<(String, String)>,
}

/// How far a backfill got, committed with each of its batches.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct BackfillMark {
    /// Sessions of the plan done.
    sessions_done: usize,
    /// In the plan's next session, the last log position done (zero: none).
    after_seq: u64,
    /// Events extracted.
    events: usize,
    /// Ideas stored.
    ideas: usize,
}

impl BackfillMark {
    fn progress(&self, plan: &BackfillPlan) -> BackfillProgress {
        BackfillProgress {
            sessions_total: plan.sessions.len(),
            sessions_done: self.sessions_done,
            events: self.events,
            ideas: self.ideas,
        }
    }
}

/// What a batch writes about its backfill.
pub(crate) enum MarkUpdate {
    /// The mark after this batch (the ideas the batch stores are added to its count).
    Save(BackfillMark),
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
            MarkUpdate::Save(mark) => {
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
    pending: bool,
    failures: u32,
    retry_at: Option<Instant>,
}

impl PendingBackfill {
    /// What the stored graph says: a plan is there until its backfill is done.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub(crate) fn read(graph: &IdeaGraph) -> Result<Self, StoreError> {
        let plan: Option<BackfillPlan> =
            graph.backfill_record(BACKFILL_PLAN, "backfill plan", PLAN_VERSION)?;
        Ok(PendingBackfill {
            pending: plan.is_some(),
            ..PendingBackfill::default()
        })
    }

    fn due(&self) -> bool {
        self.pending && self.retry_at.is_none_or(|at| Instant::now() >= at)
    }

    /// Counts a failure; the wait before the next attempt.
    fn failed(&mut self) -> Duration {
        self.failures += 1;
        let doublings = (self.failures - 1).min(5);
        let wait = RESUME_BACKOFF
            .saturating_mul(1 << doublings)
            .min(RESUME_BACKOFF_MAX);
        self.retry_at = Some(Instant::now() + wait);
        wait
    }
}

/// The unfinished backfill of the store's ideas graph, if any (for `status`).
///
/// # Errors
/// Store or decoding failures.
pub fn unfinished_backfill(store: &Store) -> Result<Option<BackfillProgress>, StoreError> {
    let graph = IdeaGraph::open(store)?;
    let Some(plan) =
        graph.backfill_record::<BackfillPlan>(BACKFILL_PLAN, "backfill plan", PLAN_VERSION)?
    else {
        return Ok(None);
    };
    let mark: BackfillMark = graph
        .backfill_record(BACKFILL_MARK, "backfill mark", MARK_VERSION)?
        .unwrap_or_default();
    Ok(Some(mark.progress(&plan)))
}

impl IndexingAgent {
    /// Re-extracts the ideas of `project_id` (every project when `None`) from the
    /// events the agent has already passed: deletes them, then runs the engine in
    /// backfill mode one session at a time, oldest first, in batches of
    /// `backfill_batch_events`, and replays the recalls. Reports progress after each
    /// session. Events after the agent's cursor are left to the continuous mode. Its
    /// plan and progress are stored with its batches, so a backfill cut short (a crash,
    /// a failure) is carried on by the agent ([`crate::ideas::backfill`]).
    ///
    /// Cross-session links can differ from a log-order build (a question is matched
    /// with answers of sessions processed before it); `admin rebuild --projection
    /// ideas` replays in log order.
    ///
    /// # Errors
    /// Store failures, or an engine failure (the agent then resumes it after a backoff).
    pub fn backfill(
        &mut self,
        store: &Store,
        project_id: Option<&str>,
        progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<BackfillProgress, ConsumerError> {
        if self.settings.follow_proposals {
            return Err(ConsumerError::BadInput(
                "in cluster mode with a model, ideas come from the lease holder's proposals \
                 in the log, and a replica cannot re-extract them alone; rebuild the ideas \
                 projection (admin rebuild --projection ideas) to replay them"
                    .to_owned(),
            ));
        }
        let cursor = self.load_cursor(store)?;
        let projects: Vec<String> = match project_id {
            Some(project) => vec![project.to_owned()],
            None => store.status()?.events_by_project.into_keys().collect(),
        };
        let mut sessions = Vec::new();
        for project in &projects {
            sessions.extend(SessionCatalog::sessions(store, project)?);
        }
        sessions.sort_by(|a, b| {
            (a.first_timestamp_ms, &a.project_id, &a.session_id).cmp(&(
                b.first_timestamp_ms,
                &b.project_id,
                &b.session_id,
            ))
        });
        let plan = BackfillPlan {
            projects,
            cursor: cursor.0,
            sessions: sessions
                .into_iter()
                .map(|session| (session.project_id, session.session_id))
                .collect(),
        };
        let mut batch = store.projection_batch();
        for project in &plan.projects {
            self.graph.clear_project_into(&mut batch, project)?;
            batch.append_derived(DerivedEntry {
                kind: IDEAS_CLEARED.to_owned(),
                project_id: project.clone(),
                key: project.clone(),
            });
        }
        let mark = BackfillMark::default();
        self.graph.put_backfill_record(
            &mut batch,
            BACKFILL_PLAN,
            "backfill plan",
            PLAN_VERSION,
            &plan,
        )?;
        MarkUpdate::Save(mark.clone()).write_into(&self.graph, &mut batch, 0)?;
        store.commit_projection(batch)?;
        self.pending_backfill = PendingBackfill {
            pending: true,
            ..PendingBackfill::default()
        };
        self.carry_out(store, &plan, mark, progress)
    }

    /// Carries on the unfinished backfill now; `None` when there is none.
    ///
    /// # Errors
    /// As [`IndexingAgent::backfill`].
    pub fn resume_backfill(
        &mut self,
        store: &Store,
        progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<Option<BackfillProgress>, ConsumerError> {
        let Some(plan) = self.graph.backfill_record::<BackfillPlan>(
            BACKFILL_PLAN,
            "backfill plan",
            PLAN_VERSION,
        )?
        else {
            self.pending_backfill = PendingBackfill::default();
            return Ok(None);
        };
        let mark: BackfillMark = self
            .graph
            .backfill_record(BACKFILL_MARK, "backfill mark", MARK_VERSION)?
            .unwrap_or_default();
        info!(
            sessions_done = mark.sessions_done,
            sessions_total = plan.sessions.len(),
            "carrying on the unfinished ideas backfill"
        );
        self.carry_out(store, &plan, mark, progress).map(Some)
    }

    /// Carries on an unfinished backfill when one is due: after a restart, or once the
    /// backoff after a failure has passed. A failure is logged and tried again later;
    /// meanwhile the graph holds the sessions the backfill reached.
    pub(crate) fn resume_due_backfill(&mut self, store: &Store) {
        if !self.pending_backfill.due() {
            return;
        }
        if let Err(err) = self.resume_backfill(store, &mut |_| {}) {
            warn!(
                error = %err,
                retry_in_s = self.pending_backfill.retry_at.map_or(0, |at| {
                    at.saturating_duration_since(Instant::now()).as_secs()
                }),
                "the unfinished ideas backfill failed; the graph holds the sessions it reached"
            );
        }
    }

    /// Extracts the plan's sessions from `mark` on, then replays the recalls and
    /// deletes the plan; a failure schedules the next attempt.
    fn carry_out(
        &mut self,
        store: &Store,
        plan: &BackfillPlan,
        mut mark: BackfillMark,
        progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<BackfillProgress, ConsumerError> {
        let result = self.extract_planned(store, plan, &mut mark, progress);
        match &result {
            Ok(_) => self.pending_backfill = PendingBackfill::default(),
            Err(_) => {
                self.pending_backfill.pending = true;
                self.pending_backfill.failed();
            }
        }
        result
    }

    fn extract_planned(
        &mut self,
        store: &Store,
        plan: &BackfillPlan,
        mark: &mut BackfillMark,
        progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<BackfillProgress, ConsumerError> {
        let cursor = OutboxSeq(plan.cursor);
        let chunk = self.settings.backfill_batch_events.max(1);
        let metrics = &*IDEAS_METRICS;
        metrics
            .backfill
            .with_label_values(&["total"])
            .set(plan.sessions.len() as i64);
        let mut state = mark.progress(plan);
        metrics
            .backfill
            .with_label_values(&["done"])
            .set(state.sessions_done as i64);
        progress(&state);
        for (project_id, session_id) in plan.sessions.iter().skip(mark.sessions_done) {
            let mut events = Vec::new();
            for item in store.scan_events(project_id, Some(session_id), None, None) {
                let (seq, event) = item?;
                if seq <= cursor && seq.0 > mark.after_seq && event.kind.is_conversation() {
                    events.push((seq.0, event));
                }
            }
            events.sort_by_key(|(seq, _)| *seq);
            let parts = events.len().div_ceil(chunk);
            if parts == 0 {
                // Nothing to extract: the next batch's mark counts it.
                mark.sessions_done += 1;
                mark.after_seq = 0;
            }
            for (n, part) in events.chunks(chunk).enumerate() {
                mark.events += part.len();
                if n + 1 == parts {
                    mark.sessions_done += 1;
                    mark.after_seq = 0;
                } else {
                    mark.after_seq = part.last().map_or(0, |(seq, _)| *seq);
                }
                let input = BatchInput {
                    mode: BatchMode::Backfill,
                    batch: ExtractBatch {
                        mode: BatchMode::Backfill,
                        sessions: vec![SessionEvents {
                            project_id: project_id.clone(),
                            session_id: session_id.clone(),
                            events: part.iter().map(|(_, event)| event.clone()).collect(),
                            seqs: part.iter().map(|(seq, _)| *seq).collect(),
                            context: Vec::new(),
                        }],
                    },
                    recalls: Vec::new(),
                    mark: Some(MarkUpdate::Save(mark.clone())),
                };
                mark.ideas += self.run(store, input, None)?;
            }
            state = mark.progress(plan);
            metrics
                .backfill
                .with_label_values(&["done"])
                .set(state.sessions_done as i64);
            progress(&state);
        }
        // The recalls of every project, replayed in the batch that ends the backfill.
        let mut recalls = Vec::new();
        for project in &plan.projects {
            for item in store.scan_events(project, Some(RECALL_SESSION), None, None) {
                let (seq, event) = item?;
                if seq <= cursor && event.kind == EventKind::MemoryRecalled {
                    recalls.push(recall_of(&event)?);
                }
            }
        }
        let input = BatchInput {
            mode: BatchMode::Backfill,
            batch: ExtractBatch {
                mode: BatchMode::Backfill,
                sessions: Vec::new(),
            },
            recalls,
            mark: Some(MarkUpdate::Finish),
        };
        self.run(store, input, None)?;
        info!(
            sessions = state.sessions_done,
            events = state.events,
            ideas = state.ideas,
            "ideas backfill done"
        );
        Ok(state)
    }
}
