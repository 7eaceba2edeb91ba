//! Prometheus metrics of the LLM engine. The agent's own (`memory_indexing_batches_total
//! {engine,mode,outcome}`, batch seconds, ideas stored, rejections) are in
//! `memory-projections`; these say what the model cost and how often it was replaced.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, histogram_vec, int_gauge_vec};
use prometheus::{HistogramVec, IntCounterVec, IntGaugeVec};

/// The LLM engine's metrics.
pub struct LlmEngineMetrics {
    /// `memory_indexing_llm_parts_total{mode,outcome}`: parts of batches (a batch is cut
    /// to the token budget) written by the model (`ok`) or handed to the heuristic
    /// engine (`fallback`).
    pub parts: IntCounterVec,
    /// `memory_indexing_llm_fallbacks_total{reason}`: why a part went to the heuristic
    /// engine: `unavailable` (server down, timeout, error status, cooling down),
    /// `invalid` (no valid change set after the retry), `cut_off` (the answer ran to its
    /// token limit on the retry too), `budget` (the batch's tokens or the day's cap),
    /// `rate_limited`.
    pub fallbacks: IntCounterVec,
    /// `memory_indexing_llm_retries_total{reason}`: second tries after an invalid answer
    /// (`invalid`) or one cut off at the token limit, which asks for fewer ideas
    /// (`cut_off`).
    pub retries: IntCounterVec,
    /// `memory_indexing_llm_calls_total{mode}`: chat requests of the engine (for LLM
    /// calls per 1 000 events, with `memory_indexing_llm_events_total`).
    pub calls: IntCounterVec,
    /// `memory_indexing_llm_events_total{mode}`: events sent to the model.
    pub events: IntCounterVec,
    /// `memory_indexing_tool_calls{protocol}`: tool calls per part.
    pub tool_calls: HistogramVec,
    /// `memory_indexing_tool_calls_total{tool,outcome}`: tool calls by tool and outcome
    /// (`ok`, `error` for a bad argument or unknown tool, `refused` past the limit).
    pub tool_calls_by_tool: IntCounterVec,
    /// `memory_indexing_llm_tokens{mode}`: tokens (read + written) per part.
    pub part_tokens: HistogramVec,
    /// `memory_indexing_llm_protocol{protocol}`: 1 for the tool protocol in use.
    pub protocol: IntGaugeVec,
    /// `memory_indexing_llm_grounding_total{outcome}`: new ideas of the model whose
    /// source event did not hold their content, moved to the event that does (`moved`)
    /// or dropped (`dropped`); and copies of a tool call's or result's text, dropped
    /// (`copied`).
    pub grounding: IntCounterVec,
}

/// The metrics, registered on first use.
pub static LLM_ENGINE_METRICS: LazyLock<LlmEngineMetrics> = LazyLock::new(|| LlmEngineMetrics {
    parts: counter_vec(
        "memory_indexing_llm_parts_total",
        "Batch parts of the LLM indexing engine by mode and outcome (ok, fallback)",
        &["mode", "outcome"],
    ),
    fallbacks: counter_vec(
        "memory_indexing_llm_fallbacks_total",
        "Batch parts the LLM engine handed to the heuristic engine, by reason",
        &["reason"],
    ),
    retries: counter_vec(
        "memory_indexing_llm_retries_total",
        "Second tries of the LLM engine after an invalid or cut-off answer",
        &["reason"],
    ),
    calls: counter_vec(
        "memory_indexing_llm_calls_total",
        "Chat requests of the LLM indexing engine by mode",
        &["mode"],
    ),
    events: counter_vec(
        "memory_indexing_llm_events_total",
        "Events sent to the LLM indexing engine by mode",
        &["mode"],
    ),
    tool_calls: histogram_vec(
        "memory_indexing_tool_calls",
        "Tool calls of the LLM indexing engine per batch part",
        &["protocol"],
        &[0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 15.0, 20.0],
    ),
    tool_calls_by_tool: counter_vec(
        "memory_indexing_tool_calls_total",
        "Tool calls of the LLM indexing engine by tool and outcome (ok, error, refused)",
        &["tool", "outcome"],
    ),
    part_tokens: histogram_vec(
        "memory_indexing_llm_tokens",
        "LLM tokens (read and written) per batch part of the indexing engine",
        &["mode"],
        &[
            500.0, 1_000.0, 2_500.0, 5_000.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0,
        ],
    ),
    protocol: int_gauge_vec(
        "memory_indexing_llm_protocol",
        "1 for the tool protocol the LLM indexing engine uses (native, json)",
        &["protocol"],
    ),
    grounding: counter_vec(
        "memory_indexing_llm_grounding_total",
        "Ideas of the LLM engine not held by their source event (moved or dropped) or copied from a tool event (dropped)",
        &["outcome"],
    ),
});
