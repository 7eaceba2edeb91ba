//! Prometheus metrics of redaction.

use std::sync::LazyLock;

use memory_metrics::counter_vec;
use prometheus::IntCounterVec;

/// Redaction's metrics.
pub struct RedactMetrics {
    /// `memory_redactions_total{rule}`: secrets (and `<private>` spans, and secrets
    /// files' contents) taken out of events before they were stored, by rule.
    pub redactions: IntCounterVec,
}

/// The metrics, registered on first use.
pub static REDACT_METRICS: LazyLock<RedactMetrics> = LazyLock::new(|| RedactMetrics {
    redactions: counter_vec(
        "memory_redactions_total",
        "Secrets taken out of events before they were stored, by rule",
        &["rule"],
    ),
});
