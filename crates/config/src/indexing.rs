//! `[indexing]`: the indexing agent that keeps the ideas graph.

use serde::{Deserialize, Serialize};

/// Which engine extracts ideas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexingEngine {
    /// Offline and deterministic: cue phrases, the shipped lexicon, term overlap.
    #[default]
    Heuristic,
    /// The `[llm]` model with the design's tools; per batch part, the heuristic engine
    /// stands in when the model is down, slow, over budget or wrong twice. Requires
    /// `[llm] enabled`.
    Llm,
    /// `llm` when `[llm]` is enabled, else `heuristic`.
    Auto,
}

/// `[indexing]`: the indexing agent (ideas, entities, relations, topic spans).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IndexingConfig {
    /// Whether the agent runs. Default true: the heuristic engine costs a few
    /// microseconds per event.
    pub enabled: bool,
    /// The engine. Default `heuristic`.
    pub engine: IndexingEngine,
    /// Continuous mode's batch window: after catching up, the agent waits this long so
    /// one batch holds the turns of several sessions, milliseconds. Default 1500: a turn
    /// waits at most this plus extraction and commit, so it is an idea within 2 s at p99
    /// (the design's 2–3 s suits an engine whose calls cost seconds).
    pub window_ms: u64,
    /// The continuous window when the LLM engine is in use (`engine = "llm"`, or
    /// `"auto"` with `[llm] enabled`), milliseconds. Default 60 000: events arrive one
    /// at a time, seconds to minutes apart, so a 1.5 s window makes one model call per
    /// event (measured: 1 000 calls per 1 000 events of the sample at its recorded pace;
    /// 60 s: 504), each paying the system prompt again. Ideas come up to a minute later.
    pub llm_window_ms: u64,
    /// Most events per continuous batch. Default 1024.
    pub batch_events: usize,
    /// Events per batch of a backfill (`admin backfill-ideas`). Default 2000.
    pub backfill_batch_events: usize,
    /// Whether the heuristic engine asks the embedding model (the vector index's) about
    /// what words leave undecided: an answer sharing a word with a question, a message
    /// after a pause that shares some words with its topic. Only with the vector index
    /// on. Default false: over a year of generated coding sessions it asked 2 604
    /// times, changed nothing in the graph and cut the engine from thousands of events
    /// per second to about a hundred (docs/benchmarks.md).
    pub similarity: bool,
    /// LLM engine: most tool calls per batch part. Default 15.
    pub llm_max_tool_calls: usize,
    /// LLM engine: tokens (read + written) per batch part in continuous mode; a larger
    /// batch is cut into parts. Default 10 000 (the design's ~10k per cycle).
    pub llm_batch_tokens: usize,
    /// LLM engine: tokens per batch part in backfill mode. Default 50 000.
    pub llm_backfill_batch_tokens: usize,
    /// LLM engine: most tokens the model may write per step. Default 2 048. A part's
    /// limit grows with its events up to this, and the answer's bounds follow it.
    pub llm_max_answer_tokens: u32,
    /// LLM engine: how long a model server that failed is left alone before it is
    /// asked again, seconds (batches meanwhile go to the heuristic engine). Default 30.
    pub llm_cooldown_secs: u64,
}

impl Default for IndexingConfig {
    fn default() -> Self {
        IndexingConfig {
            enabled: true,
            engine: IndexingEngine::Heuristic,
            window_ms: 1_500,
            llm_window_ms: 60_000,
            batch_events: 1_024,
            backfill_batch_events: 2_000,
            similarity: false,
            llm_max_tool_calls: 15,
            llm_batch_tokens: 10_000,
            llm_backfill_batch_tokens: 50_000,
            llm_max_answer_tokens: 2_048,
            llm_cooldown_secs: 30,
        }
    }
}
