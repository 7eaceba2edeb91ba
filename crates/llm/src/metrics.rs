//! The LLM crate's Prometheus metrics: request outcomes and latency of the chat client,
//! and how often the summarizer fell back to extractive summaries.
//!
//! Names follow the workspace's `memory_<name>_<unit>[_total]` convention; every label
//! takes a fixed, small set of values.

use std::sync::LazyLock;

use memory_metrics::{counter_vec, histogram};
use prometheus::{Histogram, IntCounterVec};

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
});
