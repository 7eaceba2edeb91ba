//! `[telemetry]`: logs, traces and metrics.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormatConfig {
    /// Human-readable (default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `[telemetry]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Address of `/metrics`, `/healthz`, `/readyz` under `serve`. Default `127.0.0.1:9464`.
    pub metrics_listen: SocketAddr,
    /// Log filter (`RUST_LOG` syntax; `RUST_LOG` wins when set). Default `info`.
    pub log_filter: String,
    /// `text` (default) or `json`.
    pub log_format: LogFormatConfig,
    /// OTLP/HTTP traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`. Default none
    /// (no export).
    pub otlp_endpoint: Option<String>,
    /// `service.name` of exported spans. Default `agent-memory`.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            metrics_listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
            log_filter: "info".into(),
            log_format: LogFormatConfig::Text,
            otlp_endpoint: None,
            service_name: "agent-memory".into(),
        }
    }
}
