//! The [`Summarizer`] trait: what the rollup builder asks for when it writes a TOC node.
//!
//! A segment node is written from the segment's events and the grips extracted from
//! them; a day, week, month or year node is written from its children nodes alone, so
//! a parent can be refreshed without reading any event again. Both produce a
//! [`Summary`]: a title, an optional summary, bullets that cite grips, and keywords.
//!
//! Two implementations exist:
//! - [`crate::ExtractiveSummarizer`], the default: deterministic, offline,
//!   no model. A rebuild with it writes the same tree byte for byte.
//! - the LLM summarizer of `memory-llm`, over an OpenAI-compatible chat API, which
//!   falls back to the extractive one for any item it cannot summarize (timeout, HTTP
//!   error, malformed answer), so the pipeline never stalls on a model.
//!
//! Summarizers are called from blocking threads (the consumer runner applies batches
//! on `spawn_blocking`), hence the synchronous signature.
//!
//! It is not: storage (the rollup builder reads inputs and writes nodes), nor
//! scheduling (which parents to refresh and when is the rollup builder's job).

use memory_toc::{Grip, TocBullet, TocLevel, TocNode, TocNodeId};

use crate::error::SummarizeError;

/// One event of a segment as a summarizer sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryEvent<'a> {
    /// The event's id.
    pub event_id: &'a str,
    /// Epoch milliseconds of the event.
    pub timestamp_ms: u64,
    /// `user`, `assistant`, `tool` or `system`.
    pub role: &'a str,
    /// The event's text.
    pub text: &'a str,
}

/// Everything a summarizer gets to write a segment node.
pub struct SegmentInput<'a> {
    /// The segment's node id (`toc:segment:<day>:<ULID>`).
    pub segment_id: &'a TocNodeId,
    /// The project the segment belongs to.
    pub project_id: &'a str,
    /// The session the segment cuts from.
    pub session_id: &'a str,
    /// The segment's events in order (the overlap window of the previous segment not
    /// included: it is context, not content).
    pub events: &'a [SummaryEvent<'a>],
    /// The segment's grips in event order; bullets cite them by id.
    pub grips: &'a [Grip],
    /// How many earlier segments of the project contain a stem (0 when none): corpus
    /// statistics for keyword scoring. Deterministic: it counts the segments summarized
    /// before this one, in outbox order.
    pub corpus_document_frequency: &'a dyn Fn(&str) -> u32,
    /// How many segments of the project were summarized before this one.
    pub num_corpus_documents: u32,
}

/// Everything a summarizer gets to write a day, week, month or year node.
pub struct ParentInput<'a> {
    /// The node being written (its level and calendar period).
    pub node_id: &'a TocNodeId,
    /// The project.
    pub project_id: &'a str,
    /// The node's children that hold data, in chronological order, as currently stored.
    pub children: &'a [TocNode],
}

impl ParentInput<'_> {
    /// The level of the node being written.
    #[must_use]
    pub fn level(&self) -> TocLevel {
        self.node_id.level()
    }
}

/// What a summarizer writes into a node; the rollup builder adds ids, times, children
/// and counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// A short headline that says what happened.
    pub title: String,
    /// A few sentences on the whole node, or `None`.
    pub summary: Option<String>,
    /// The notable things, each citing the grips it stands on.
    pub bullets: Vec<TocBullet>,
    /// Salient terms, most salient first.
    pub keywords: Vec<String>,
}

/// Writes the readable content of TOC nodes.
pub trait Summarizer: Send + Sync {
    /// A short name for metrics, logs and `status` (`extractive`, `llm`).
    fn name(&self) -> &'static str;

    /// The summary of one closed segment.
    ///
    /// # Errors
    /// When no summary could be written; callers keep the node unwritten and retry.
    fn summarize_segment(&self, input: &SegmentInput<'_>) -> Result<Summary, SummarizeError>;

    /// The summary of a day, week, month or year node from its children.
    ///
    /// # Errors
    /// As [`Summarizer::summarize_segment`].
    fn summarize_parent(&self, input: &ParentInput<'_>) -> Result<Summary, SummarizeError>;
}
