//! The seam between the indexing agent and its engines: [`IdeaExtractor`] takes a batch
//! of events plus read access to the graph ([`GraphView`]) and proposes a
//! [`ChangeSet`]. The heuristic engine (this crate) and the LLM engine (`memory-llm`)
//! implement it; the agent validates and stores what they propose.

use memory_types::Event;

use crate::change_set::ChangeSet;
use crate::model::{Entity, Idea, Intent, Relation, SkippedEvent, TopicSpan};

/// How the agent is batching (the design's two modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchMode {
    /// Live traffic: a short window (`[indexing] window_ms`), several sessions per batch.
    Continuous,
    /// Old history: one session at a time, oldest first, large batches.
    Backfill,
}

impl BatchMode {
    /// `continuous` or `backfill` (metrics label).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BatchMode::Continuous => "continuous",
            BatchMode::Backfill => "backfill",
        }
    }
}

/// One session's new events in a batch, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEvents {
    /// The project.
    pub project_id: String,
    /// The session.
    pub session_id: String,
    /// Its new events, in log order.
    pub events: Vec<Event>,
    /// Each event's position in the log (outbox sequence), parallel to `events`: an
    /// engine that links across sessions walks the batch in this order, so the graph
    /// does not depend on how events were grouped into batches.
    pub seqs: Vec<u64>,
    /// The session's events just before `events` (at most [`CONTEXT_EVENTS`], oldest
    /// first), already indexed: what was just said, for reference only — an engine
    /// proposes nothing from them. The agent reads them from the log, so an engine sees
    /// the same conversation however the events were batched.
    pub context: Vec<Event>,
}

/// Most events of a session's context (see [`SessionEvents::context`]).
pub const CONTEXT_EVENTS: usize = 8;

/// What an engine sees: several sessions, each clearly apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtractBatch {
    /// The mode.
    pub mode: BatchMode,
    /// The sessions, each with its new events.
    pub sessions: Vec<SessionEvents>,
}

impl ExtractBatch {
    /// Every event of the batch, session by session.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.sessions
            .iter()
            .flat_map(|session| session.events.iter())
    }

    /// The batch split by project, each part with its sessions in the batch's order;
    /// projects in first-seen order. An event id is unique within its project only, so
    /// an engine and [`crate::validate`] see one project at a time: two projects' events
    /// with the same id in one batch would otherwise be taken for each other.
    #[must_use]
    pub fn by_project(&self) -> Vec<ExtractBatch> {
        let mut parts: Vec<ExtractBatch> = Vec::new();
        for session in &self.sessions {
            match parts
                .iter_mut()
                .find(|part| part.sessions[0].project_id == session.project_id)
            {
                Some(part) => part.sessions.push(session.clone()),
                None => parts.push(ExtractBatch {
                    mode: self.mode,
                    sessions: vec![session.clone()],
                }),
            }
        }
        parts
    }

    /// Every event of the batch in log order (by position), whatever the grouping.
    #[must_use]
    pub fn in_log_order(&self) -> Vec<&Event> {
        let mut all: Vec<(u64, &Event)> = self
            .sessions
            .iter()
            .flat_map(|session| session.seqs.iter().copied().zip(session.events.iter()))
            .collect();
        all.sort_by_key(|(seq, _)| *seq);
        all.into_iter().map(|(_, event)| event).collect()
    }

    /// Number of events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sessions
            .iter()
            .map(|session| session.events.len())
            .sum()
    }

    /// Whether the batch has no event.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why the graph could not be read.
#[derive(Clone, Debug, thiserror::Error)]
#[error("ideas graph: {0}")]
pub struct GraphError(pub String);

/// Read access to the graph as stored before the batch (the design's tools answer from
/// it). Every call is scoped to one project.
pub trait GraphView {
    /// One idea.
    ///
    /// # Errors
    /// Store failures.
    fn idea(&self, project_id: &str, idea_id: &str) -> Result<Option<Idea>, GraphError>;

    /// Most recent ideas first (by source time), optionally of one session or intent.
    ///
    /// # Errors
    /// Store failures.
    fn recent_ideas(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError>;

    /// Questions and problems not answered yet, most recent first.
    ///
    /// # Errors
    /// Store failures.
    fn open_questions(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError>;

    /// Todos not completed yet, most recent first.
    ///
    /// # Errors
    /// Store failures.
    fn open_todos(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError>;

    /// Decisions and preferences still in force (not superseded), most recent first:
    /// what a new decision may supersede or contradict.
    ///
    /// # Errors
    /// Store failures.
    fn current_decisions(&self, project_id: &str, limit: usize) -> Result<Vec<Idea>, GraphError>;

    /// Ideas whose content shares the most terms with `query`, best first.
    ///
    /// # Errors
    /// Store failures.
    fn search_ideas(
        &self,
        project_id: &str,
        query: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError>;

    /// One entity.
    ///
    /// # Errors
    /// Store failures.
    fn entity(&self, project_id: &str, entity_id: &str) -> Result<Option<Entity>, GraphError>;

    /// The entity with this canonical key or alias key.
    ///
    /// # Errors
    /// Store failures.
    fn entity_by_key(&self, project_id: &str, key: &str) -> Result<Option<Entity>, GraphError>;

    /// Entities whose names contain `name` (case-insensitive), or all when it is empty,
    /// up to `limit`.
    ///
    /// # Errors
    /// Store failures.
    fn search_entities(
        &self,
        project_id: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<Entity>, GraphError>;

    /// Ideas that mention the entity, most recent first.
    ///
    /// # Errors
    /// Store failures.
    fn entity_ideas(
        &self,
        project_id: &str,
        entity_id: &str,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError>;

    /// A session's spans, oldest first.
    ///
    /// # Errors
    /// Store failures.
    fn session_spans(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<TopicSpan>, GraphError>;

    /// Spans of every session of the project, most recently active first, up to
    /// `limit` (the LLM engine's `find_similar_topics` and `get_topic_hierarchy`).
    ///
    /// # Errors
    /// Store failures.
    fn project_spans(&self, project_id: &str, limit: usize) -> Result<Vec<TopicSpan>, GraphError>;

    /// A session's latest span.
    ///
    /// # Errors
    /// Store failures.
    fn current_span(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        Ok(self.session_spans(project_id, session_id)?.pop())
    }

    /// One span of a session, by id.
    ///
    /// # Errors
    /// Store failures.
    fn session_span(
        &self,
        project_id: &str,
        session_id: &str,
        span_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        Ok(self
            .session_spans(project_id, session_id)?
            .into_iter()
            .find(|span| span.span_id == span_id))
    }

    /// An idea's relations, both directions.
    ///
    /// # Errors
    /// Store failures.
    fn relations(&self, project_id: &str, idea_id: &str) -> Result<Vec<Relation>, GraphError>;
}

/// Write access to the graph: what [`crate::apply::apply_changes`] needs besides reads.
/// A write replaces the record with the same id.
pub trait GraphStore: GraphView {
    /// Stores an idea.
    ///
    /// # Errors
    /// Store failures.
    fn put_idea(&mut self, idea: Idea) -> Result<(), GraphError>;

    /// Stores an entity (and indexes its key and aliases).
    ///
    /// # Errors
    /// Store failures.
    fn put_entity(&mut self, entity: Entity) -> Result<(), GraphError>;

    /// Stores a relation (both directions).
    ///
    /// # Errors
    /// Store failures.
    fn put_relation(&mut self, project_id: &str, relation: Relation) -> Result<(), GraphError>;

    /// Stores a topic span.
    ///
    /// # Errors
    /// Store failures.
    fn put_span(&mut self, span: TopicSpan) -> Result<(), GraphError>;

    /// Records a skipped event.
    ///
    /// # Errors
    /// Store failures.
    fn put_skipped(&mut self, project_id: &str, skipped: SkippedEvent) -> Result<(), GraphError>;
}

/// Why an engine produced no change set. The agent retries a `Transient` failure and
/// falls back (or parks the batch) on the others.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// Reading the graph failed.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A dependency (a model server, the embedder) failed or timed out.
    #[error("{0}")]
    Transient(String),
    /// The engine's answer was unusable after its retries.
    #[error("{0}")]
    Invalid(String),
}

/// An indexing engine.
pub trait IdeaExtractor: Send {
    /// `heuristic` or `llm`: the `engine` label of the metrics.
    fn engine(&self) -> &'static str;

    /// The engine that wrote the last change set and the `outcome` label of
    /// `memory_indexing_batches_total`: `ok`, or `fallback` / `partial_fallback` when
    /// another engine stood in for all or part of it. Default: this engine, `ok`.
    fn last_run(&self) -> (&'static str, &'static str) {
        (self.engine(), "ok")
    }

    /// Proposes the changes `batch` implies, given the graph as it is.
    ///
    /// # Errors
    /// See [`ExtractError`].
    fn extract(
        &mut self,
        batch: &ExtractBatch,
        graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError>;
}
