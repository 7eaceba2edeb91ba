//! [`IndexingAgent`]: the outbox consumer that keeps the ideas graph — the indexing
//! agent design's last actor. Upstream: outbox events (conversation turns, and the
//! daemon's `memory_recalled` bookkeeping). Downstream: `idea_written` entries, one per
//! new idea (the BM25 and vector indexes hold each idea as a document) and `ideas_cleared` (they drop the
//! idea documents of a reset project).
//!
//! **Continuous mode** is the runner's loop with a long linger: after catching up it
//! waits the batch window (1.5 s by default) so that one batch holds the turns of
//! several sessions, grouped per session in first-seen order. **Backfill mode**
//! ([`IndexingAgent::backfill`], in `backfill.rs`) re-extracts what the agent already
//! passed, one session at a time, oldest first, in large batches, and is resumed after
//! a crash. Each batch: the engine proposes a change set, [`memory_ideas::validate`]
//! drops what does not resolve (counted), [`memory_ideas::apply_changes`] writes the
//! rest into a write buffer, and the buffer, the derived entries and the cursor (or the
//! backfill's progress) commit in one atomic store batch.

use std::sync::Arc;
use std::time::Instant;

use memory_ideas::{
    BatchMode, ExtractBatch, ExtractError, IdeaExtractor, Lexicon, apply_changes, apply_recall,
    validate,
};
use memory_store::{DerivedEntry, FeedItem, OutboxSeq, Store};
use memory_types::{Clock, EventKind};
use tracing::{info_span, warn};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::ideas::backfill_state::{MarkUpdate, PendingBackfill, clear_gauges};
use crate::ideas::graph::IdeaGraph;
use crate::ideas::metrics::IDEAS_METRICS;
use crate::ideas::proposals;
use crate::ideas::reads::{read_context, recall_of};

/// The consumer's name: cursor key and metrics label.
pub const INDEXING_AGENT: &str = "indexing_agent";
/// Derived entry: an idea was stored or changed (`key`: the idea id).
pub const IDEA_WRITTEN: &str = "idea_written";
/// Derived entry: every idea of a project (`key`: the project) or of all projects
/// (`key`: empty) was deleted.
pub const IDEAS_CLEARED: &str = "ideas_cleared";
/// The session the daemon's `memory_recalled` events are written to.
pub const RECALL_SESSION: &str = "memory-recall";

/// Builds the engine; called at start and after a panic.
pub type EngineFactory = Arc<dyn Fn() -> Box<dyn IdeaExtractor> + Send + Sync>;

/// How the agent runs.
#[derive(Clone)]
pub struct IndexingSettings {
    /// The engine.
    pub engine: EngineFactory,
    /// Record time of new ideas.
    pub clock: Clock,
    /// Events per backfill batch.
    pub backfill_batch_events: usize,
    /// Whether ideas come from the log's `ideas_proposed` events instead of the engine
    /// (cluster mode with a model: the group's lease holder runs the engine and
    /// publishes its change sets; see [`crate::ideas::proposals`]).
    pub follow_proposals: bool,
}

impl IndexingSettings {
    /// `engine` with the system clock and backfill batches of 2 000 events.
    #[must_use]
    pub fn new(engine: EngineFactory) -> Self {
        IndexingSettings {
            engine,
            clock: Clock::system(),
            backfill_batch_events: 2_000,
            follow_proposals: false,
        }
    }
}

/// The consumer.
pub struct IndexingAgent {
    pub(super) graph: IdeaGraph,
    pub(super) engine: Box<dyn IdeaExtractor>,
    pub(super) settings: IndexingSettings,
    /// An unfinished backfill and when to resume it (see [`crate::ideas::backfill`]).
    pub(super) pending_backfill: PendingBackfill,
}

/// One batch's changes, ready to commit.
pub(super) struct BatchInput {
    pub(super) mode: BatchMode,
    pub(super) batch: ExtractBatch,
    pub(super) recalls: Vec<(String, Vec<String>)>,
    /// A backfill's progress, committed with the batch.
    pub(super) mark: Option<MarkUpdate>,
}

impl IndexingAgent {
    /// Opens the graph and builds the engine.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store, settings: IndexingSettings) -> Result<Self, ConsumerError> {
        let graph = IdeaGraph::open(store)?;
        let pending_backfill = PendingBackfill::read(&graph)?;
        Ok(IndexingAgent {
            graph,
            engine: (settings.engine)(),
            settings,
            pending_backfill,
        })
    }

    /// Groups feed items into a continuous batch: conversation events per session (in
    /// first-seen order, each with its log position) and recalls.
    fn continuous_input(items: &[FeedItem]) -> Result<BatchInput, ConsumerError> {
        let mut events = Vec::new();
        let mut recalls = Vec::new();
        for item in items {
            let FeedItem::Event { seq, event } = item else {
                continue;
            };
            if event.kind == EventKind::MemoryRecalled {
                recalls.push(recall_of(event)?);
                continue;
            }
            if event.kind == EventKind::IdeasProposed {
                // The group's lease holder proposes ideas (its replicas run the LLM
                // engine) while this one runs its own engine: their graphs differ.
                IDEAS_METRICS
                    .proposals
                    .with_label_values(&["not_following"])
                    .inc();
                warn!(
                    event_id = %event.event_id,
                    "an ideas_proposed in the log, but this replica runs its own engine: set \
                     [indexing] engine as the group's other replicas do"
                );
                continue;
            }
            if !event.kind.is_conversation() {
                // `admin forget`'s tombstones: bookkeeping, never an engine's input (the
                // backfill leaves them out the same way).
                continue;
            }
            events.push((seq.0, event.clone()));
        }
        Ok(BatchInput {
            mode: BatchMode::Continuous,
            batch: ExtractBatch::continuous(events),
            recalls,
            mark: None,
        })
    }

    /// Applies a feed batch in follow mode ([`crate::ideas::proposals`]) with `up_to`
    /// as the cursor, in one store batch.
    fn follow(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let started = Instant::now();
        let mut txn = self.graph.txn();
        let followed = proposals::follow(&mut txn, store, items)?;
        let mut batch = store.projection_batch();
        txn.write_into(&mut batch);
        announce(&mut batch, &followed.report);
        batch.set_cursor(INDEXING_AGENT, up_to);
        store.commit_projection(batch)?;
        if !followed.report.touched.is_empty() || !followed.rejected.is_empty() {
            count_applied(
                proposals::PROPOSAL_ENGINE,
                &followed.report,
                &followed.rejected,
            );
            IDEAS_METRICS
                .batch_seconds
                .with_label_values(&[proposals::PROPOSAL_ENGINE, "proposal"])
                .observe(started.elapsed().as_secs_f64());
        }
        count_recalls(followed.recalls);
        Ok(())
    }

    /// Runs the engine over `input`, validates and stores its changes with `cursor`
    /// (when given) in one store batch; returns the ideas stored.
    pub(super) fn run(
        &mut self,
        store: &Store,
        mut input: BatchInput,
        cursor: Option<OutboxSeq>,
    ) -> Result<usize, ConsumerError> {
        let started = Instant::now();
        read_context(store, &mut input.batch)?;
        let engine = self.engine.engine();
        let mode = input.mode.as_str();
        let span = info_span!("indexing_batch", engine, mode, events = input.batch.len());
        let _entered = span.enter();
        fail::fail_point!("ideas_extract", |pattern: Option<String>| {
            let pattern = pattern.unwrap_or_default();
            if input
                .batch
                .events()
                .any(|event| event.text.contains(&pattern))
            {
                Err(ConsumerError::BadInput(format!(
                    "injected ideas_extract failure on {pattern:?}"
                )))
            } else {
                self.commit(store, &input, cursor, started)
            }
        });
        self.commit(store, &input, cursor, started)
    }

    fn commit(
        &mut self,
        store: &Store,
        input: &BatchInput,
        cursor: Option<OutboxSeq>,
        started: Instant,
    ) -> Result<usize, ConsumerError> {
        let mode = input.mode.as_str();
        let outcome = |engine: &str, label: &str| {
            IDEAS_METRICS
                .batches
                .with_label_values(&[engine, mode, label])
                .inc();
        };
        let graph_err = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
        // One project at a time: event ids are unique per project only, so a batch
        // holding two projects' events with the same id must not reach the engine and
        // the validation whole (ideas would be taken for the other project's, and the
        // graph would depend on how the feed was batched). Projects share no ideas, so
        // each part is extracted against the stored graph and applied in turn.
        let mut txn = self.graph.txn();
        let mut report = memory_ideas::ApplyReport::default();
        let mut rejected = Vec::new();
        let parts = if input.batch.is_empty() {
            Vec::new()
        } else {
            input.batch.by_project()
        };
        for part in &parts {
            let changes = match self.engine.extract(part, &self.graph) {
                Ok(changes) => changes,
                Err(err) => {
                    outcome(self.engine.engine(), "error");
                    return Err(match err {
                        ExtractError::Graph(err) => ConsumerError::Internal(err.to_string()),
                        other => ConsumerError::Transient(other.to_string()),
                    });
                }
            };
            let valid = validate(&changes, part, &self.graph, self.settings.clock.now_ms())
                .map_err(graph_err)?;
            let applied = apply_changes(&mut txn, Lexicon::shipped(), &valid).map_err(graph_err)?;
            report.absorb(applied);
            rejected.extend(valid.rejected);
        }

        let mut recall_outcomes = (0u64, 0u64);
        for (project_id, idea_ids) in &input.recalls {
            let found = apply_recall(&mut txn, project_id, idea_ids).map_err(graph_err)?;
            recall_outcomes.0 += found.len() as u64;
            recall_outcomes.1 += (idea_ids.len() - found.len()) as u64;
        }
        let mut batch = store.projection_batch();
        txn.write_into(&mut batch);
        announce(&mut batch, &report);
        if let Some(mark) = &input.mark {
            let stored = report.ideas_by_intent.values().sum();
            mark.write_into(&self.graph, &mut batch, stored)?;
        }
        if let Some(cursor) = cursor {
            batch.set_cursor(INDEXING_AGENT, cursor);
        }
        store.commit_projection(batch)?;

        // Which engine wrote the change set: an LLM engine may have handed (part of)
        // the batch to its heuristic fallback.
        let (engine, run_outcome) = if input.batch.is_empty() {
            (self.engine.engine(), "ok")
        } else {
            self.engine.last_run()
        };
        outcome(engine, run_outcome);
        let metrics = &*IDEAS_METRICS;
        metrics
            .batch_seconds
            .with_label_values(&[engine, mode])
            .observe(started.elapsed().as_secs_f64());
        metrics
            .batch_events
            .with_label_values(&[mode])
            .observe(input.batch.len() as f64);
        count_recalls(recall_outcomes);
        Ok(count_applied(engine, &report, &rejected))
    }
}

/// Announces the new ideas to the indexes. Only new ideas change them: an idea's
/// document is its content and entities; supersession, answers and salience are read at
/// query time.
fn announce(batch: &mut memory_store::ProjectionBatch, report: &memory_ideas::ApplyReport) {
    for (project_id, idea_id) in &report.new_ideas {
        batch.append_derived(DerivedEntry {
            kind: IDEA_WRITTEN.to_owned(),
            project_id: project_id.clone(),
            key: idea_id.clone(),
        });
    }
}

/// Counts what a batch stored and what validation dropped (warning with the first
/// reason); returns the ideas stored.
fn count_applied(
    engine: &str,
    report: &memory_ideas::ApplyReport,
    rejected: &[memory_ideas::Rejection],
) -> usize {
    let metrics = &*IDEAS_METRICS;
    let mut stored = 0;
    for (intent, count) in &report.ideas_by_intent {
        stored += count;
        metrics
            .extracted
            .with_label_values(&[intent.as_str(), engine])
            .inc_by(*count as u64);
    }
    for (relation, count) in &report.relations_by_type {
        metrics
            .relations
            .with_label_values(&[relation.as_str()])
            .inc_by(*count as u64);
    }
    for rejection in rejected {
        metrics
            .rejected
            .with_label_values(&[rejection.reason.as_str()])
            .inc();
    }
    if let Some(first) = rejected.first() {
        warn!(
            engine,
            rejected = rejected.len(),
            first = %first.detail,
            "engine proposed changes that do not resolve; dropped"
        );
    }
    stored
}

/// Counts recalls applied and naming ideas the graph does not have.
fn count_recalls((applied, unknown): (u64, u64)) {
    let metrics = &*IDEAS_METRICS;
    metrics
        .recalls
        .with_label_values(&["applied"])
        .inc_by(applied);
    metrics
        .recalls
        .with_label_values(&["unknown"])
        .inc_by(unknown);
}

impl OutboxConsumer for IndexingAgent {
    fn name(&self) -> &str {
        INDEXING_AGENT
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        if self.settings.follow_proposals {
            return self.follow(store, items, up_to);
        }
        // An unfinished backfill first: continuous batches extend the graph it builds.
        self.backfill_first(store)?;
        let input = Self::continuous_input(items)?;
        self.run(store, input, Some(up_to)).map(|_| ())
    }

    fn never_park(&self, item: &FeedItem) -> bool {
        // Skipping a proposal would leave this replica's chain behind its group's for
        // good (every later proposal stale): wait for the fault to be mended instead.
        self.settings.follow_proposals
            && matches!(item, FeedItem::Event { event, .. } if event.kind == EventKind::IdeasProposed)
    }

    fn on_idle(&mut self, store: &Store) -> Result<(), ConsumerError> {
        if self.settings.follow_proposals {
            return Ok(());
        }
        self.backfill_first(store)
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        // A rebuild replaces whatever a backfill had left to do.
        self.pending_backfill = PendingBackfill::default();
        clear_gauges();
        let mut batch = store.projection_batch();
        self.graph.clear_into(&mut batch)?;
        batch.append_derived(DerivedEntry {
            kind: IDEAS_CLEARED.to_owned(),
            project_id: String::new(),
            key: String::new(),
        });
        batch.set_cursor(INDEXING_AGENT, start);
        store.commit_projection(batch)?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
