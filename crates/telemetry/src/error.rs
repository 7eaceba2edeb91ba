//! The one error type of this crate.

use std::io;
use std::net::SocketAddr;

/// Everything that can go wrong while installing or serving observability plumbing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The log filter (from `RUST_LOG` or the configuration) is not valid `EnvFilter` syntax.
    #[error("invalid log filter `{filter}`: {source}")]
    InvalidLogFilter {
        /// The filter text that failed to parse.
        filter: String,
        /// The parser's explanation.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global tracing subscriber (or `log` logger) is already installed in this process;
    /// `init_tracing` can succeed at most once per process.
    #[error("a global tracing subscriber is already installed: {0}")]
    SubscriberAlreadySet(#[source] tracing_subscriber::util::TryInitError),
    /// The OTLP span exporter could not be built (invalid endpoint, HTTP client failure).
    #[error("cannot build the otlp span exporter for `{endpoint}`: {source}")]
    OtlpExporter {
        /// The configured endpoint.
        endpoint: String,
        /// The exporter's explanation.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The HTTP listener could not bind its address (port in use, permission denied).
    #[error("cannot bind the http listener on {addr}: {source}")]
    Bind {
        /// The address we tried to bind.
        addr: SocketAddr,
        /// The operating system's explanation.
        #[source]
        source: io::Error,
    },
    /// The HTTP server failed while serving.
    #[error("http server failed: {0}")]
    Server(#[source] io::Error),
    /// The HTTP server task panicked or was cancelled.
    #[error("http server task ended abnormally: {0}")]
    ServerTask(#[from] tokio::task::JoinError),
    /// The Prometheus text encoder failed.
    #[error("cannot encode metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// `Result` with [`TelemetryError`].
pub type Result<T> = std::result::Result<T, TelemetryError>;
