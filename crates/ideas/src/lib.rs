//! The ideas graph's model and engines, with no store and no runtime.
//!
//! The indexing agent (an outbox consumer in `memory-projections`) hands a batch of
//! events and read access to the stored graph to an engine ([`IdeaExtractor`]); the
//! engine proposes a [`ChangeSet`] (the design's output schema,
//! `schemas/agent-output.v1.json`); [`validate()`] drops every part that names something
//! that does not exist or is out of range, counting why; [`apply_changes`] stores the
//! rest with the merge rules that make the graph independent of batching. The same
//! apply step runs on the in-memory [`Overlay`] an engine works on within a batch, so
//! what an engine saw and what was stored never disagree.
//!
//! The heuristic engine ([`HeuristicEngine`]) is offline and deterministic: cue phrases
//! for intents, the shipped lexicon and code-shaped names for entities, term overlap for
//! answers, changed values for supersession.

pub mod apply;
pub mod change_set;
pub mod entities;
pub mod extractor;
pub mod heuristic;
pub mod memory_graph;
pub mod model;
pub mod overlay;
pub mod proposal;
pub mod validate;

pub use apply::{ApplyReport, apply_changes, apply_recall};
pub use change_set::{
    AnsweredQuestion, ChangeSet, CompletedTodo, EntityLink, EntityMention, NewIdea, RelationOut,
    SkipEvent, TopicChange, TopicUpdate, change_set_schema,
};
pub use entities::{Lexicon, canonical_key};
pub use extractor::{
    BatchMode, CONTEXT_EVENTS, ExtractBatch, ExtractError, GraphError, GraphStore, GraphView,
    IdeaExtractor, SessionEvents,
};
pub use heuristic::{
    EmbedFn, HeuristicEngine, SettingValues, ValueChange, explicit_change, stated_values,
    value_change,
};
pub use memory_graph::MemoryGraph;
pub use model::{
    Entity, EntityType, Idea, IdeaSource, Intent, MIN_CONFIDENCE, RECALL_SALIENCE_STEP, Relation,
    RelationType, Resolution, Sector, SkippedEvent, TopicSpan, UnknownName, entity_id, idea_id,
    span_id,
};
pub use overlay::Overlay;
pub use proposal::{IdeasProposal, MAX_PROPOSAL_BYTES, ProposalChain};
pub use validate::{RejectReason, Rejection, ValidChanges, validate, validate_event};
