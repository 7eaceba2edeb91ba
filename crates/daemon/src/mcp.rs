//! `memory-daemon mcp`: the memory as a Model Context Protocol server (on `rmcp`, the
//! official Rust SDK), for coding agents that speak MCP.
//!
//! - Tools: `search`, `navigate`, `timeline`, `get_events`, `remember`, `status`
//!   ([`tools`]); resources: `memory://toc/root` and the template
//!   `memory://toc/{node_id}` ([`resources`]).
//! - Transports: stdio (the default; stdout carries only the protocol, logs go to
//!   stderr) or streamable HTTP at `/mcp` on `--listen ADDR`.
//! - Backends ([`backend`]): a running daemon over NATS (`--nats-url`), else the data
//!   dir opened in this process with the actors running, so `remember` works in both.
//! - Every tool call: a `mcp_call` span (tool, project, outcome) and
//!   `memory_mcp_calls_total{tool,outcome}`, `memory_mcp_call_seconds{tool}`.
//!
//! It is not: an MCP client, nor a way to change or delete what is stored (`remember`
//! only appends a note).

mod args;
mod backend;
mod metrics;
mod resources;
mod tools;

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use memory_config::Config;
use memory_telemetry::{Health, LogFormat, TracingConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

use self::backend::Backend;
use self::metrics::MCP_METRICS;
use crate::cli::McpArgs;

/// The streamable HTTP endpoint's path.
pub const HTTP_PATH: &str = "/mcp";
/// How long shutdown waits for open sessions to let go of the store.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Runs the server until the client hangs up (stdio) or SIGINT/SIGTERM.
pub async fn run(
    config: &Config,
    data_dir: &Path,
    args: McpArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _tracing = memory_telemetry::init_tracing(&TracingConfig {
        log_filter: log_level.unwrap_or("warn").to_owned(),
        log_format: match config.telemetry.log_format {
            memory_config::LogFormatConfig::Text => LogFormat::Text,
            memory_config::LogFormatConfig::Json => LogFormat::Json,
        },
        otlp_endpoint: config.telemetry.otlp_endpoint.clone(),
        service_name: config.telemetry.service_name.clone(),
    })
    .ok();
    crate::settings::apply_long_running_settings(config);
    let project = match &args.project {
        Some(project) => project.clone(),
        None => match &config.capture.project {
            Some(project) => project.clone(),
            None => {
                let cwd = std::env::current_dir().context("no working directory")?;
                memory_agents::project_identity(&cwd, None).id
            }
        },
    };
    args::check_project(&project).map_err(|err| anyhow::anyhow!("--project: {err}"))?;

    let shutdown = CancellationToken::new();
    spawn_signal_watch(shutdown.clone())?;
    let health = Health::new();
    health.set_ready("mcp", false, "starting");
    let metrics_server = match args.metrics_listen {
        Some(addr) => Some(
            memory_telemetry::serve(addr, health.clone(), shutdown.clone().cancelled_owned())
                .await
                .context("cannot serve metrics")?,
        ),
        None => None,
    };

    let backend = match &args.nats_url {
        Some(url) => Backend::daemon(config, url).await?,
        None if !args.embedded && daemon_answers(config, &project).await => {
            Backend::daemon(config, &config.nats.url).await?
        }
        None => Backend::embedded(config, data_dir).await?,
    };
    let server = MemoryServer::new(backend, project);
    health.set_ready("mcp", true, server.shared.backend.mode().as_str());
    let served = match args.listen {
        None => serve_stdio(server.clone(), shutdown.clone()).await,
        Some(addr) => serve_http(server.clone(), addr, shutdown.clone()).await,
    };
    shutdown.cancel();
    server.close().await;
    if let Some(metrics_server) = metrics_server {
        let _ = metrics_server.stopped().await;
    }
    served.map(|()| ExitCode::SUCCESS)
}

/// Whether a daemon answers queries at `[nats] url` within a second (the hooks' daemon,
/// which owns the data dir: then the server must go through it).
async fn daemon_answers(config: &Config, project: &str) -> bool {
    let probe = async {
        let client = memory_nats::connect(&config.nats, |_| {}).await.ok()?;
        let subject = format!(
            "{}.{project}.teleport.status",
            config.nats.query_subject_prefix
        );
        client.request(subject, "{}".into()).await.ok()
    };
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(1), probe).await,
        Ok(Some(_))
    )
}

fn spawn_signal_watch(shutdown: CancellationToken) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    tokio::spawn(async move {
        tokio::select! {
            _ = sigterm.recv() => {}
            _ = sigint.recv() => {}
            () = shutdown.cancelled() => return,
        }
        tracing::info!("signal received; stopping the mcp server");
        shutdown.cancel();
    });
    Ok(())
}

async fn serve_stdio(server: MemoryServer, shutdown: CancellationToken) -> anyhow::Result<()> {
    let running = match server
        .serve_with_ct(rmcp::transport::stdio_pipes(), shutdown)
        .await
    {
        Ok(running) => running,
        Err(rmcp::service::ServerInitializeError::Cancelled) => return Ok(()),
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("the client closed stdin before initializing");
            return Ok(());
        }
        Err(err) => return Err(anyhow::anyhow!("mcp session failed to start: {err}")),
    };
    let reason = running.waiting().await.context("mcp session task failed")?;
    tracing::info!(?reason, "mcp session ended");
    Ok(())
}

async fn serve_http(
    server: MemoryServer,
    addr: SocketAddr,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token());
    if !addr.ip().is_loopback() {
        // The default allows only loopback Host headers (DNS rebinding protection),
        // which no client of a non-loopback address sends.
        tracing::warn!(%addr, "mcp beyond loopback: no authentication, any Host header accepted");
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service(HTTP_PATH, service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!("memory-daemon mcp: serving MCP over streamable HTTP at http://{local}{HTTP_PATH}");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .context("mcp http server failed")
}

/// The server: one per process, cloned into every session.
#[derive(Clone)]
pub(crate) struct MemoryServer {
    shared: Arc<Shared>,
}

struct Shared {
    backend: Backend,
    default_project: String,
    tools: Vec<Tool>,
}

impl MemoryServer {
    fn new(backend: Backend, default_project: String) -> MemoryServer {
        let tools = tools::definitions(&default_project);
        MemoryServer {
            shared: Arc::new(Shared {
                backend,
                default_project,
                tools,
            }),
        }
    }

    /// Closes the backend once no session holds the server any more.
    async fn close(self) {
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut shared = self.shared;
        loop {
            match Arc::try_unwrap(shared) {
                Ok(shared) => {
                    shared.backend.close().await;
                    return;
                }
                Err(still_shared) if Instant::now() < deadline => {
                    shared = still_shared;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(_) => {
                    tracing::warn!("sessions still open at shutdown; stopping without draining");
                    return;
                }
            }
        }
    }

    async fn call(&self, request: CallToolRequestParams) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let metrics = &*MCP_METRICS;
        let Some(tool) = self.shared.tools.iter().find(|tool| tool.name == name) else {
            metrics
                .calls
                .with_label_values(&["unknown", "unknown_tool"])
                .inc();
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {name:?}; the tools are {}",
                    tools::TOOL_NAMES.join(", ")
                ),
                None,
            ));
        };
        let project = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("project"))
            .and_then(|project| project.as_str())
            .unwrap_or(&self.shared.default_project);
        let span = tracing::info_span!("mcp_call", tool = name, project, outcome = field::Empty);
        let started = Instant::now();
        let result = tools::run(
            &self.shared.backend,
            &self.shared.default_project,
            name,
            &tool.input_schema,
            request.arguments.as_ref(),
        )
        .instrument(span.clone())
        .await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(err) => err.code,
        };
        span.record("outcome", outcome);
        metrics.calls.with_label_values(&[name, outcome]).inc();
        metrics
            .latency
            .with_label_values(&[name])
            .observe(started.elapsed().as_secs_f64());
        let result = match result {
            Ok(answer) => answer.into_result(),
            Err(err) => {
                span.in_scope(|| {
                    tracing::info!(code = err.code, message = %err.message, "tool call failed");
                });
                err.into_result()
            }
        };
        Ok(CallToolResponse::Complete(result))
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(
            Implementation::new("agent-memory", env!("CARGO_PKG_VERSION"))
                .with_title("agent-memory"),
        )
        .with_instructions(format!(
            "Long-term memory of past coding sessions in project {:?} (and others: see \
             `status`). Before answering a question about earlier work, decisions or \
             conventions, call `search`; read cited events with `get_events`, see what \
             came before and after with `timeline`, browse by period with `navigate` or the \
             memory://toc resources. Store a decision or fact worth keeping with `remember`.",
            self.shared.default_project
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.shared.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = resources::list(&self.shared.backend, &self.shared.default_project).await;
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let span = tracing::info_span!("mcp_read_resource", uri = %request.uri);
        let contents = resources::read(
            &self.shared.backend,
            &self.shared.default_project,
            &request.uri,
        )
        .instrument(span)
        .await?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse_listen;

    #[test]
    fn listen_takes_an_address_or_a_loopback_port() {
        assert_eq!(
            parse_listen("8765"),
            Ok(SocketAddr::from(([127, 0, 0, 1], 8765)))
        );
        assert_eq!(
            parse_listen("0.0.0.0:9000"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 9000)))
        );
        assert!(parse_listen("[::1]:9000").is_ok());
        assert!(parse_listen("localhost").is_err());
    }
}
