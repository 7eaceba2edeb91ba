//! `memory-telemetry`: the daemon's process-wide observability plumbing.
//!
//! - [`init_tracing`] installs the global `tracing` subscriber: an `EnvFilter`
//!   (`RUST_LOG` overrides the configured filter), text or JSON logs on stderr and,
//!   when an endpoint is configured, span export over OTLP/HTTP (protobuf).
//! - [`serve`] runs the HTTP endpoint Prometheus and orchestrators talk to:
//!   `GET /metrics`, `GET /healthz` (liveness), `GET /readyz` (readiness from [`Health`]).
//! - [`metrics`] renders the default registry (every crate registers there through
//!   `memory-metrics`) and holds the process-wide [`TELEMETRY_METRICS`].
//!
//! ```
//! use std::net::SocketAddr;
//! use memory_telemetry::{Health, TracingConfig, init_tracing, serve};
//!
//! # #[tokio::main]
//! # async fn main() -> memory_telemetry::Result<()> {
//! let _tracing_guard = init_tracing(&TracingConfig::default())?;
//!
//! let health = Health::new();
//! let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
//! let server = serve(SocketAddr::from(([127, 0, 0, 1], 0)), health.clone(), async move {
//!     let _ = stop_rx.await;
//! })
//! .await?;
//! tracing::info!(addr = %server.local_addr(), "observability ready");
//!
//! health.set_ready("store", true, "opened");
//! assert!(health.is_ready());
//!
//! let _ = stop_tx.send(());
//! server.stopped().await?;
//! # Ok(())
//! # }
//! ```
//!
//! It is not:
//! - a metrics backend or log store: it exposes metrics for scraping and ships spans to
//!   an OTLP collector, and keeps nothing;
//! - the query or admin API: `/readyz` reports readiness; `status` lives in the daemon;
//! - a place for other crates' metrics: each crate keeps its own `metrics.rs` and
//!   registers through `memory-metrics`;
//! - an OpenTelemetry metrics or logs pipeline: metrics are Prometheus, logs go to stderr,
//!   only spans are exported over OTLP.

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod error;
mod health;
mod http;
pub mod metrics;
mod tracing_init;

pub use error::{Result, TelemetryError};
pub use health::{ComponentHealth, Health};
pub use http::{ServerHandle, serve};
pub use metrics::{TELEMETRY_METRICS, TelemetryMetrics};
pub use tracing_init::{LogFormat, TracingConfig, TracingGuard, init_tracing};
