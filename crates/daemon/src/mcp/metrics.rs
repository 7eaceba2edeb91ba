//! The MCP server's Prometheus metrics, registered through `memory-metrics`.

use std::sync::LazyLock;

use memory_metrics::{LATENCY_BUCKETS_SECONDS, counter_vec, histogram_vec};
use prometheus::{HistogramVec, IntCounterVec};

/// Handles into the default registry.
pub(crate) struct McpMetrics {
    /// `memory_mcp_calls_total{tool, outcome}`: tool calls by tool (one of the six, or
    /// `unknown`) and outcome (`ok`, or the error code: `invalid_argument`, `not_found`,
    /// `unavailable`, `internal`, `unknown_tool`).
    pub(crate) calls: IntCounterVec,
    /// `memory_mcp_call_seconds{tool}`: time to answer one tool call.
    pub(crate) latency: HistogramVec,
}

/// The MCP metrics, registered on first use.
pub(crate) static MCP_METRICS: LazyLock<McpMetrics> = LazyLock::new(|| McpMetrics {
    calls: counter_vec(
        "memory_mcp_calls_total",
        "MCP tool calls by tool and outcome (ok or the error code).",
        &["tool", "outcome"],
    ),
    latency: histogram_vec(
        "memory_mcp_call_seconds",
        "Time to answer one MCP tool call, by tool.",
        &["tool"],
        LATENCY_BUCKETS_SECONDS,
    ),
});
