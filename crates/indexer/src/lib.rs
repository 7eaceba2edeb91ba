//! `memory-indexer`: the LLM engine of the indexing agent (the indexing agent design's
//! tool loop), the second implementation of [`memory_ideas::IdeaExtractor`].
//!
//! - [`LlmEngine`]: cuts a batch into parts that fit the mode's token budget, gives
//!   each part to the model with the design's system prompt and input format (several
//!   sessions per batch, each apart, event ids in place of transcript lines) and its
//!   eleven tools ([`tools`]), reads the change set, and falls back to the heuristic
//!   engine per part when the model is down, slow, over budget or wrong twice.
//! - Two tool protocols ([`Protocol`]): OpenAI's native `tools`/`tool_calls`, and
//!   constrained JSON steps (`response_format: json_schema`) for small local models
//!   that honour a schema but write no native tool calls; `[llm] tool_protocol = auto`
//!   probes at start ([`LlmEngine::probe`]).
//!
//! It is not the agent: batching, validation against the graph, storing and the
//! `memory_indexing_batches_total` metrics are `memory-projections`'; and it trusts
//! nothing the model writes — the agent's [`memory_ideas::validate`] drops what does
//! not resolve, and counts it.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod bounds;
mod engine;
pub mod grounding;
pub mod metrics;
pub mod prompt;
pub mod tools;

pub use bounds::AnswerBounds;
pub use engine::{LlmEngine, LlmEngineSettings, Protocol, json_step_schema};
