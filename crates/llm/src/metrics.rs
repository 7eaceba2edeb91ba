//! The LLM crate's Prometheus metrics: request outcomes and latency of the chat client,
//! and how often the summarizer fell back to extractive summaries.
//!
//! Names follow the workspace's `memory_<name>_<unit>[_total]` convention; every label
//! takes a fixed, small set of values.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, histogram, int_gauge};
use prometheus::{Histogram, IntCounterVec, IntGauge};

/// Handles into the default registry.
pub struct LlmMetrics {
    /// `memory_llm_requests_total{outcome}`: chat requests by outcome, one count per
    /// attempt: `ok` (answered), `retry` (failed, will be retried), `error` (failed, given
    /// up).
    pub requests: IntCounterVec,
    /// `memory_llm_request_latency_seconds`: one attempt, from send to the whole body
    /// read or the failure.
    pub request_latency: Histogram,
    /// `memory_summarizer_fallbacks_total{reason}`: items the LLM summarizer handed to
    /// the extractive one: `unavailable` (connection, timeout, HTTP status) or
    /// `invalid_answer` (the model answered with something unusable).
    pub summarizer_fallbacks: IntCounterVec,
    /// `memory_llm_tokens_total{direction,purpose}`: tokens read (`prompt`) and written
    /// (`completion`) by purpose (`summary`, `indexing`, `phrases`, `probe`), from the
    /// answers' `usage` (estimated at four characters a token when a server omits it).
    pub tokens: IntCounterVec,
    /// `memory_llm_tokens_today`: tokens spent this UTC day, against `[llm]
    /// daily_token_cap`.
    pub tokens_today: IntGauge,
    /// `memory_llm_budget_exhausted_total{purpose}`: requests refused because the day's
    /// token cap was reached.
    pub budget_exhausted: IntCounterVec,
    /// `memory_llm_rate_limited_total{purpose}`: requests refused because `[llm]
    /// requests_per_minute` left no slot before their deadline.
    pub rate_limited: IntCounterVec,
}

/// Model calls take from tens of milliseconds (a small local model, a cache hit) to
/// tens of seconds (a large model on a CPU), so the buckets span 10 ms to 60 s.
const LLM_LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0,
];

/// The LLM metrics, registered on first use.
pub static LLM_METRICS: LazyLock<LlmMetrics> = LazyLock::new(|| LlmMetrics {
    requests: counter_vec(
        "memory_llm_requests_total",
        "LLM chat requests by outcome (ok, retry, error), one per attempt",
        &["outcome"],
    ),
    request_latency: histogram(
        "memory_llm_request_latency_seconds",
        "Latency of one LLM chat request attempt",
        LLM_LATENCY_BUCKETS_SECONDS,
    ),
    summarizer_fallbacks: counter_vec(
        "memory_summarizer_fallbacks_total",
        "TOC summaries written by the extractive fallback instead of the LLM, by reason",
        &["reason"],
    ),
    tokens: counter_vec(
        "memory_llm_tokens_total",
        "LLM tokens by direction (prompt, completion) and purpose (summary, indexing, phrases, probe)",
        &["direction", "purpose"],
    ),
    tokens_today: int_gauge(
        "memory_llm_tokens_today",
        "LLM tokens spent this UTC day, against [llm] daily_token_cap",
    ),
    budget_exhausted: counter_vec(
        "memory_llm_budget_exhausted_total",
        "LLM requests refused because the daily token cap was reached, by purpose",
        &["purpose"],
    ),
    rate_limited: counter_vec(
        "memory_llm_rate_limited_total",
        "LLM requests refused because requests_per_minute left no slot in time, by purpose",
        &["purpose"],
    ),
});
