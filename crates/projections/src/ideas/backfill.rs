//! The indexing agent's backfill mode ([`IndexingAgent::backfill`]): the ideas of what
//! the agent already passed, extracted again session by session, oldest first — and
//! carried on where it stopped after a crash or a failure.
//!
//! A backfill starts by deleting the graph of the projects it covers. Had it kept its
//! place only in memory, a daemon killed mid-way would come back with the ideas of the
//! sessions it had reached and no others (the agent's cursor is past every event), and
//! nothing would say so until someone ran it again — the crash soak found exactly that.
//! So the backfill writes its **plan** (the projects, the position it extracts up to, the
//! sessions in the order it takes them) in the store batch that clears the graph, and its
//! **mark** (sessions done, the last position done in the next one, the counts) in the
//! store batch of each extraction: after a crash the graph and the mark agree.
//!
//! The agent carries an unfinished backfill on in its runner's steps, a slice of at most
//! [`RESUME_SLICE`] at a time, before any continuous batch: a step that finds one
//! applies nothing of the feed and asks to be stepped again ([`ConsumerError::Deferred`]),
//! so new turns wait for the graph the backfill builds — as they wait for a backfill run
//! by `admin backfill-ideas` — while rebuilds, exclusive jobs and shutdown get in between
//! slices. A slice that fails (panics included) is tried again after a backoff (30 s,
//! doubling to 10 min; the attempts and the last error are stored, and `status` shows
//! them); after [`MAX_ATTEMPTS`] failures that are the batch's, not the environment's, the
//! batch is parked in the dead letters and the backfill goes on, as the runner parks a
//! poison entry. The last batch, the recalls' replay, deletes the records.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use memory_ideas::{BatchMode, ExtractBatch, SessionEvents};
use memory_store::{DeadLetter, DerivedEntry, OutboxSeq, Store};
use memory_types::{Event, EventKind};
use tracing::{error, info, warn};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::ideas::agent::{
    BatchInput, IDEAS_CLEARED, INDEXING_AGENT, IndexingAgent, RECALL_SESSION,
};
use crate::ideas::backfill_state::{
    BackfillFailure, BackfillMark, BackfillPlan, BackfillProgress, FAILURE_VERSION, MARK_VERSION,
    MarkUpdate, PLAN_VERSION, PendingBackfill, clear_gauges,
};
use crate::ideas::graph::{BACKFILL_FAILURE, BACKFILL_MARK, BACKFILL_PLAN};
use crate::ideas::metrics::IDEAS_METRICS;
use crate::ideas::reads::recall_of;
use crate::session_catalog::SessionCatalog;

/// The most a step spends carrying an unfinished backfill on (it stops after the batch
/// that passes it: one model call at most with the LLM engine).
pub(crate) const RESUME_SLICE: Duration = Duration::from_secs(1);
/// Failures of one batch, not the environment's, before it is parked.
pub(crate) const MAX_ATTEMPTS: u32 = 5;

/// The next extraction batch of a backfill: its session and events.
struct NextBatch<'a> {
    project_id: &'a str,
    session_id: &'a str,
    events: Vec<(u64, Event)>,
    /// Whether it is its session's last.
    ends_session: bool,
}

/// Reads the batch after `mark` (skipping sessions with nothing to extract, which the
/// mark passes); `None` when every session is done.
fn next_batch<'a>(
    store: &Store,
    plan: &'a BackfillPlan,
    mark: &mut BackfillMark,
    chunk: usize,
) -> Result<Option<NextBatch<'a>>, ConsumerError> {
    let cursor = OutboxSeq(plan.cursor);
    while let Some((project_id, session_id)) = plan.sessions.get(mark.sessions_done) {
        let mut events = Vec::new();
        for item in store.scan_events(project_id, Some(session_id), None, None) {
            let (seq, event) = item?;
            if seq <= cursor && seq.0 > mark.after_seq && event.kind.is_conversation() {
                events.push((seq.0, event));
            }
        }
        if events.is_empty() {
            mark.sessions_done += 1;
            mark.after_seq = 0;
            continue;
        }
        events.sort_by_key(|(seq, _)| *seq);
        let ends_session = events.len() <= chunk;
        events.truncate(chunk);
        return Ok(Some(NextBatch {
            project_id,
            session_id,
            events,
            ends_session,
        }));
    }
    Ok(None)
}

impl BackfillMark {
    /// The mark once `batch` is done.
    fn after(&self, batch: &NextBatch<'_>) -> BackfillMark {
        let mut mark = self.clone();
        mark.events += batch.events.len();
        if batch.ends_session {
            mark.sessions_done += 1;
            mark.after_seq = 0;
        } else {
            mark.after_seq = batch.events.last().map_or(0, |(seq, _)| *seq);
        }
        mark
    }
}

impl IndexingAgent {
    /// Re-extracts the ideas of `project_id` (every project when `None`) from the
    /// events the agent has already passed: deletes them, then runs the engine in
    /// backfill mode one session at a time, oldest first, in batches of
    /// `backfill_batch_events`, and replays the recalls. Reports progress after each
    /// session. Events after the agent's cursor are left to the continuous mode. Its
    /// plan and progress are stored with its batches, so a backfill cut short (a crash,
    /// a failure) is carried on by the agent ([`crate::ideas::backfill`]); a backfill
    /// started while another is unfinished covers the projects of both.
    ///
    /// Cross-session links can differ from a log-order build (a question is matched
    /// with answers of sessions processed before it); `admin rebuild --projection
    /// ideas` replays in log order.
    ///
    /// # Errors
    /// Store failures, or an engine failure (the agent then carries it on after a
    /// backoff).
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
        let mut projects: Vec<String> = match project_id {
            Some(project) => vec![project.to_owned()],
            None => store.status()?.events_by_project.into_keys().collect(),
        };
        // An unfinished backfill already cleared its projects: they are done again too.
        if let Some(unfinished) = self.graph.backfill_record::<BackfillPlan>(
            BACKFILL_PLAN,
            "backfill plan",
            PLAN_VERSION,
        )? {
            projects.extend(unfinished.projects);
            projects.sort();
            projects.dedup();
        }
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
        self.graph.remove_backfill(&mut batch);
        self.graph.put_backfill_record(
            &mut batch,
            BACKFILL_PLAN,
            "backfill plan",
            PLAN_VERSION,
            &plan,
        )?;
        let mark = BackfillMark::default();
        MarkUpdate::Save {
            mark: mark.clone(),
            clear_failure: false,
        }
        .write_into(&self.graph, &mut batch, 0)?;
        store.commit_projection(batch)?;
        self.pending_backfill = PendingBackfill {
            pending: true,
            ..PendingBackfill::default()
        };
        let mut mark = mark;
        let result = self.extract_planned(store, &plan, &mut mark, None, progress);
        self.after_attempt(store, &plan, result)
            .map(|finished| finished.unwrap_or_else(|| mark.progress(&plan)))
    }

    /// Carries an unfinished backfill on before the feed is applied: `Ok` when there is
    /// none (the step goes on), [`ConsumerError::Deferred`] otherwise — at once after a
    /// slice of [`RESUME_SLICE`], after the backoff while a failure's runs. Panics of the
    /// engine are caught and count as failures.
    pub(crate) fn backfill_first(&mut self, store: &Store) -> Result<(), ConsumerError> {
        if !self.pending_backfill.pending {
            return Ok(());
        }
        let wait = self.pending_backfill.wait();
        if !wait.is_zero() {
            return Err(ConsumerError::Deferred(wait));
        }
        let deadline = Instant::now() + RESUME_SLICE;
        let attempt = catch_unwind(AssertUnwindSafe(|| self.resume_slice(store, deadline)));
        let finished = match attempt {
            Ok(result) => result?,
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                // The engine may be left half-way through its call: a new one.
                self.engine = (self.settings.engine)();
                IDEAS_METRICS
                    .batches
                    .with_label_values(&[self.engine.engine(), "backfill", "panic"])
                    .inc();
                let error = ConsumerError::Internal(format!("the engine panicked: {message}"));
                self.failed_attempt(store, None, &error)?;
                false
            }
        };
        if finished {
            return Ok(());
        }
        Err(ConsumerError::Deferred(self.pending_backfill.wait()))
    }

    /// One slice of the unfinished backfill, until `deadline`; true when it is done (or
    /// there was none). A failure is recorded (and its batch parked after
    /// [`MAX_ATTEMPTS`]); false then, with the backoff running.
    fn resume_slice(&mut self, store: &Store, deadline: Instant) -> Result<bool, ConsumerError> {
        let Some(plan) = self.graph.backfill_record::<BackfillPlan>(
            BACKFILL_PLAN,
            "backfill plan",
            PLAN_VERSION,
        )?
        else {
            self.pending_backfill = PendingBackfill::default();
            return Ok(true);
        };
        let mut mark: BackfillMark = self
            .graph
            .backfill_record(BACKFILL_MARK, "backfill mark", MARK_VERSION)?
            .unwrap_or_default();
        if mark.sessions_done == 0 && mark.after_seq == 0 {
            info!(
                sessions_total = plan.sessions.len(),
                "carrying on the unfinished ideas backfill"
            );
        }
        let result = self.extract_planned(store, &plan, &mut mark, Some(deadline), &mut |_| {});
        match self.after_attempt(store, &plan, result) {
            Ok(finished) => Ok(finished.is_some()),
            Err(err) if err.is_environmental() => Err(err),
            Err(_) => Ok(false),
        }
    }

    /// Settles an attempt: done clears the pending state and the gauges; a failure is
    /// recorded with its backoff, and the batch that failed [`MAX_ATTEMPTS`] times for
    /// itself (not for the environment) is parked so the backfill goes on.
    fn after_attempt(
        &mut self,
        store: &Store,
        plan: &BackfillPlan,
        result: Result<Option<BackfillProgress>, ConsumerError>,
    ) -> Result<Option<BackfillProgress>, ConsumerError> {
        match result {
            Ok(Some(done)) => {
                self.pending_backfill = PendingBackfill::default();
                clear_gauges();
                Ok(Some(done))
            }
            Ok(None) => Ok(None),
            Err(err) => {
                self.failed_attempt(store, Some(plan), &err)?;
                Err(err)
            }
        }
    }

    /// Records a failed attempt; parks the batch after [`MAX_ATTEMPTS`] failures that
    /// are its own (not the environment's).
    fn failed_attempt(
        &mut self,
        store: &Store,
        plan: Option<&BackfillPlan>,
        error: &ConsumerError,
    ) -> Result<(), ConsumerError> {
        self.record_failure(store, error)?;
        if error.is_environmental() || self.pending_backfill.failures < MAX_ATTEMPTS {
            return Ok(());
        }
        let stored;
        let plan = match plan {
            Some(plan) => plan,
            None => {
                let Some(plan) = self.graph.backfill_record::<BackfillPlan>(
                    BACKFILL_PLAN,
                    "backfill plan",
                    PLAN_VERSION,
                )?
                else {
                    return Ok(());
                };
                stored = plan;
                &stored
            }
        };
        self.park_next_batch(store, plan, error)
    }

    /// Counts a failed attempt, stores it for `status` and starts its backoff.
    fn record_failure(
        &mut self,
        store: &Store,
        error: &ConsumerError,
    ) -> Result<(), ConsumerError> {
        self.pending_backfill.pending = true;
        let wait = self.pending_backfill.failed();
        warn!(
            error = %error,
            attempts = self.pending_backfill.failures,
            retry_in_s = wait.as_secs(),
            "the ideas backfill failed; it is carried on after the pause (the graph holds \
             the sessions it reached)"
        );
        let failure = BackfillFailure {
            attempts: self.pending_backfill.failures,
            last_error: error.to_string(),
        };
        let mut batch = store.projection_batch();
        self.graph.put_backfill_record(
            &mut batch,
            BACKFILL_FAILURE,
            "backfill failure",
            FAILURE_VERSION,
            &failure,
        )?;
        store.commit_projection(batch)?;
        Ok(())
    }

    /// Parks the batch the stored mark is at in the dead letters and moves the mark
    /// past it, in one store batch, so one poison batch does not hold the rest.
    fn park_next_batch(
        &mut self,
        store: &Store,
        plan: &BackfillPlan,
        error: &ConsumerError,
    ) -> Result<(), ConsumerError> {
        let mut mark: BackfillMark = self
            .graph
            .backfill_record(BACKFILL_MARK, "backfill mark", MARK_VERSION)?
            .unwrap_or_default();
        let chunk = self.settings.backfill_batch_events.max(1);
        let Some(next) = next_batch(store, plan, &mut mark, chunk)? else {
            return Ok(());
        };
        let first = next.events.first().map(|(seq, _)| *seq);
        let payload = format!(
            "{{\"backfill\":true,\"project_id\":{:?},\"session_id\":{:?},\"seqs\":{:?}}}",
            next.project_id,
            next.session_id,
            next.events.iter().map(|(seq, _)| *seq).collect::<Vec<_>>()
        );
        let after = mark.after(&next);
        error!(
            project = next.project_id,
            session = next.session_id,
            attempts = self.pending_backfill.failures,
            error = %error,
            "an ideas backfill batch failed every attempt: parked in the dead letters, the \
             backfill goes on"
        );
        let mut batch = store.projection_batch();
        batch.dead_letter(DeadLetter::new(
            INDEXING_AGENT,
            first,
            format!("ideas backfill: {error}"),
            payload.as_bytes(),
            self.pending_backfill.failures,
        ));
        MarkUpdate::Save {
            mark: after,
            clear_failure: true,
        }
        .write_into(&self.graph, &mut batch, 0)?;
        store.commit_projection(batch)?;
        self.pending_backfill.failures = 0;
        self.pending_backfill.retry_at = None;
        Ok(())
    }

    /// Extracts the plan's batches from `mark` on (until `deadline` when given: `None`
    /// then, not done), then replays the recalls and deletes the records.
    fn extract_planned(
        &mut self,
        store: &Store,
        plan: &BackfillPlan,
        mark: &mut BackfillMark,
        deadline: Option<Instant>,
        progress: &mut dyn FnMut(&BackfillProgress),
    ) -> Result<Option<BackfillProgress>, ConsumerError> {
        let cursor = OutboxSeq(plan.cursor);
        let chunk = self.settings.backfill_batch_events.max(1);
        let metrics = &*IDEAS_METRICS;
        let total = plan.sessions.len();
        metrics
            .backfill
            .with_label_values(&["total"])
            .set(total as i64);
        let mut reported = mark.sessions_done;
        metrics
            .backfill
            .with_label_values(&["done"])
            .set(reported as i64);
        progress(&mark.progress(plan));
        while let Some(next) = next_batch(store, plan, mark, chunk)? {
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Ok(None);
            }
            let after = mark.after(&next);
            let input = BatchInput {
                mode: BatchMode::Backfill,
                batch: ExtractBatch {
                    mode: BatchMode::Backfill,
                    sessions: vec![SessionEvents {
                        project_id: next.project_id.to_owned(),
                        session_id: next.session_id.to_owned(),
                        seqs: next.events.iter().map(|(seq, _)| *seq).collect(),
                        events: next.events.into_iter().map(|(_, event)| event).collect(),
                        context: Vec::new(),
                    }],
                },
                recalls: Vec::new(),
                mark: Some(MarkUpdate::Save {
                    mark: after.clone(),
                    clear_failure: self.pending_backfill.failures > 0,
                }),
            };
            let stored = self.run(store, input, None)?;
            self.pending_backfill.failures = 0;
            self.pending_backfill.retry_at = None;
            *mark = BackfillMark {
                ideas: after.ideas + stored,
                ..after
            };
            if mark.sessions_done != reported {
                reported = mark.sessions_done;
                metrics
                    .backfill
                    .with_label_values(&["done"])
                    .set(reported as i64);
                progress(&mark.progress(plan));
            }
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
        let state = mark.progress(plan);
        info!(
            sessions = state.sessions_done,
            events = state.events,
            ideas = state.ideas,
            "ideas backfill done"
        );
        Ok(Some(state))
    }
}
