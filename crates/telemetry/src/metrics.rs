//! This crate's own process-wide metrics and the text rendering `GET /metrics` serves.
//! Every crate registers its metrics through `memory-metrics`, in the default registry
//! rendered here.
//!
//! The Prometheus `process` collector (CPU, RSS, open fds) is not registered: it needs
//! the `prometheus/process` feature, which pulls in `procfs`, a dependency the workspace
//! does not carry.

use std::sync::LazyLock;

use memory_metrics::{int_gauge, int_gauge_vec};
use prometheus::{IntGauge, IntGaugeVec, TextEncoder};

/// Process-wide metrics owned by this crate.
pub struct TelemetryMetrics {
    /// `memory_nats_connected`: 1 while the NATS client is connected, 0 otherwise.
    /// Set by the NATS crate.
    pub nats_connected: IntGauge,
    /// `memory_build_info{version}`: always 1; the label carries the crate version.
    pub build_info: IntGaugeVec,
}

/// This crate's metrics; forced by [`crate::serve`] and [`crate::init_tracing`] so they
/// are exported even before anyone touches them.
pub static TELEMETRY_METRICS: LazyLock<TelemetryMetrics> = LazyLock::new(|| {
    let build_info = int_gauge_vec(
        "memory_build_info",
        "build information; the value is always 1",
        &["version"],
    );
    build_info
        .with_label_values(&[env!("CARGO_PKG_VERSION")])
        .set(1);
    TelemetryMetrics {
        nats_connected: int_gauge(
            "memory_nats_connected",
            "1 when the nats client is connected, 0 otherwise",
        ),
        build_info,
    }
});

/// Renders every metric of the default registry in the Prometheus text format
/// ([`prometheus::TEXT_FORMAT`], `text/plain; version=0.0.4`).
pub fn render_text() -> crate::Result<String> {
    let metric_families = prometheus::gather();
    let text = TextEncoder::new().encode_to_string(&metric_families)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telemetry_metrics_export_build_info() {
        TELEMETRY_METRICS.nats_connected.set(1);
        let text = render_text().expect("render metrics");
        let expected_build_info = format!(
            r#"memory_build_info{{version="{}"}} 1"#,
            env!("CARGO_PKG_VERSION")
        );
        assert!(text.contains(&expected_build_info), "{text}");
        assert!(text.contains("memory_nats_connected 1"));
    }
}
