//! Process-wide tracing: an `EnvFilter`, a text or JSON log layer on stderr and, when an
//! OTLP endpoint is configured, an OpenTelemetry layer exporting spans over OTLP/HTTP.

use std::io::IsTerminal;
use std::sync::LazyLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::{Deserialize, Serialize};
use tracing::warn;
use tracing_subscriber::filter::{EnvFilter, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use crate::error::TelemetryError;
use crate::metrics::TELEMETRY_METRICS;

/// Filter used when neither `RUST_LOG` nor [`TracingConfig::log_filter`] says anything.
const DEFAULT_LOG_FILTER: &str = "info";

/// Instrumentation scope name of the spans this process exports.
const INSTRUMENTATION_SCOPE: &str = "agent-memory";

/// Targets whose spans never go to the OTLP exporter: the exporter's own HTTP stack
/// would otherwise trace its exports, which would be exported, and so on.
const EXPORT_MACHINERY_TARGETS: &[&str] = &["opentelemetry", "reqwest", "hyper", "h2", "tower"];

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines; ANSI colours only when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// What [`init_tracing`] installs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracingConfig {
    /// Which spans and events to keep, in `EnvFilter` syntax (`info,memory_store=debug`).
    /// Default `info`. `RUST_LOG`, when set and not blank, overrides it.
    pub log_filter: String,
    /// Log line format on stderr. Default [`LogFormat::Text`].
    pub log_format: LogFormat,
    /// OTLP/HTTP (protobuf) traces endpoint, used as given, e.g.
    /// `http://127.0.0.1:4318/v1/traces`. Default `None`: no span export. A blank string
    /// also means no export.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute of exported spans. Default `memory-daemon`.
    pub service_name: String,
}

impl Default for TracingConfig {
    fn default() -> Self {
        Self {
            log_filter: DEFAULT_LOG_FILTER.to_owned(),
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            service_name: "memory-daemon".to_owned(),
        }
    }
}

/// Keeps span export alive. Dropping it shuts the tracer provider down, which flushes
/// pending spans (waiting up to 5 s for the exporter). Keep it in `main` until exit.
///
/// Log output is unaffected: the global subscriber stays installed for the process.
#[derive(Debug)]
#[must_use = "dropping the guard stops span export"]
pub struct TracingGuard {
    tracer_provider_opt: Option<SdkTracerProvider>,
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        let Some(tracer_provider) = self.tracer_provider_opt.take() else {
            return;
        };
        if let Err(error) = tracer_provider.shutdown() {
            warn!(%error, "tracer provider shutdown failed");
        }
    }
}

/// Installs the global tracing subscriber described by `cfg`.
///
/// Succeeds at most once per process; later calls return
/// [`TelemetryError::SubscriberAlreadySet`]. Safe to call from inside a tokio runtime:
/// spans are exported by the SDK's batch span processor on its own thread with a
/// blocking HTTP client, never on a runtime thread.
pub fn init_tracing(cfg: &TracingConfig) -> crate::Result<TracingGuard> {
    let rust_log_opt = std::env::var("RUST_LOG").ok();
    let filter_text = effective_log_filter(&cfg.log_filter, rust_log_opt.as_deref());
    let env_filter = parse_log_filter(filter_text)?;

    let fmt_layer = match cfg.log_format {
        LogFormat::Text => fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .boxed(),
    };

    let otlp_endpoint_opt = cfg
        .otlp_endpoint
        .as_deref()
        .map(str::trim)
        .filter(|endpoint| !endpoint.is_empty());
    let tracer_provider_opt = otlp_endpoint_opt
        .map(|endpoint| build_tracer_provider(endpoint, &cfg.service_name))
        .transpose()?;
    let otel_layer_opt = tracer_provider_opt.as_ref().map(|tracer_provider| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer_provider.tracer(INSTRUMENTATION_SCOPE))
            .with_filter(filter_fn(|metadata| {
                !is_export_machinery(metadata.target())
            }))
    });

    let init_result = tracing_subscriber::registry()
        .with(env_filter)
        .with(fmt_layer)
        .with(otel_layer_opt)
        .try_init();
    if let Err(error) = init_result {
        if let Some(tracer_provider) = tracer_provider_opt {
            // Nothing was exported through it; shutting down only stops its thread.
            let _ = tracer_provider.shutdown();
        }
        return Err(TelemetryError::SubscriberAlreadySet(error));
    }
    LazyLock::force(&TELEMETRY_METRICS);
    Ok(TracingGuard {
        tracer_provider_opt,
    })
}

/// `RUST_LOG` when set and not blank, else the configured filter when not blank, else `info`.
fn effective_log_filter<'a>(configured: &'a str, rust_log_opt: Option<&'a str>) -> &'a str {
    if let Some(rust_log) = rust_log_opt.filter(|text| !text.trim().is_empty()) {
        return rust_log;
    }
    if configured.trim().is_empty() {
        return DEFAULT_LOG_FILTER;
    }
    configured
}

fn parse_log_filter(filter: &str) -> crate::Result<EnvFilter> {
    EnvFilter::builder()
        .parse(filter)
        .map_err(|source| TelemetryError::InvalidLogFilter {
            filter: filter.to_owned(),
            source,
        })
}

fn is_export_machinery(target: &str) -> bool {
    EXPORT_MACHINERY_TARGETS.iter().any(|prefix| {
        target
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::") || rest.starts_with('_'))
    })
}

/// OTLP/HTTP protobuf exporter behind the SDK's default batch span processor, which runs
/// exports on its own thread (the blocking reqwest client must stay off tokio threads).
fn build_tracer_provider(endpoint: &str, service_name: &str) -> crate::Result<SdkTracerProvider> {
    let span_exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint)
        .build()
        .map_err(|source| TelemetryError::OtlpExporter {
            endpoint: endpoint.to_owned(),
            source,
        })?;
    let resource = Resource::builder()
        .with_service_name(service_name.to_owned())
        .build();
    Ok(SdkTracerProvider::builder()
        .with_resource(resource)
        .with_batch_exporter(span_exporter)
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_overrides_the_configured_filter_unless_blank() {
        assert_eq!(effective_log_filter("warn", Some("debug")), "debug");
        assert_eq!(effective_log_filter("warn", Some("  ")), "warn");
        assert_eq!(effective_log_filter("warn", None), "warn");
        assert_eq!(effective_log_filter("", None), "info");
    }

    #[test]
    fn log_filter_syntax_is_checked() {
        assert!(parse_log_filter("info,memory_store=debug").is_ok());
        let error = parse_log_filter("memory_store=loud").expect_err("bad level");
        assert!(matches!(error, TelemetryError::InvalidLogFilter { .. }));
        assert!(error.to_string().contains("memory_store=loud"), "{error}");
    }

    #[test]
    fn export_machinery_targets_are_recognised() {
        assert!(is_export_machinery("opentelemetry_sdk::trace"));
        assert!(is_export_machinery("opentelemetry"));
        assert!(is_export_machinery("hyper_util::client"));
        assert!(is_export_machinery("reqwest::blocking"));
        assert!(!is_export_machinery("memory_store::batch"));
        assert!(!is_export_machinery("hyperloglog"));
    }

    #[test]
    fn invalid_otlp_endpoint_is_an_error() {
        let error =
            build_tracer_provider("not a url", "memory-test").expect_err("endpoint must parse");
        assert!(matches!(error, TelemetryError::OtlpExporter { .. }));
        assert!(error.to_string().contains("not a url"), "{error}");
    }

    #[test]
    fn log_format_deserializes_lowercase() {
        let format: LogFormat = serde_json::from_str(r#""json""#).expect("json format");
        assert_eq!(format, LogFormat::Json);
    }
}
