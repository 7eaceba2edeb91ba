//! The daemon's HTTP hook listener (`[capture] http_listen`): `POST /hooks/claude-code`
//! and `POST /hooks/codex` take the same hook input as `memory-daemon hook`, for agents'
//! `http` hook type, so no process is started per event.
//!
//! The body becomes events exactly as the command hook makes them (the same session
//! state files under the spool directory, so both kinds of hook can be mixed), which go
//! through the ingest path like every other event (validated, redacted, committed)
//! before the answer. A `SessionStart` is answered with the project's brief as
//! `hookSpecificOutput.additionalContext`. Loopback by default; a bearer token when
//! `http_token` is set (required off loopback).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use memory_actors::IngestHandle;
use memory_agents::{Agent, Projects, SpoolDir, SpooledEvent, hook_events};
use memory_config::Config;
use memory_types::{
    DEFAULT_PROJECT, Event, IngestReply, ProjectScope, ValidationLimits, parse_single,
};
use prometheus::{HistogramVec, IntCounterVec};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

/// Largest hook body accepted.
const MAX_BODY_BYTES: usize = 16 << 20;

struct Metrics {
    requests: IntCounterVec,
    seconds: HistogramVec,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    requests: memory_metrics::counter_vec(
        "memory_hook_http_requests_total",
        "Hook inputs posted to the HTTP hook listener, by agent and outcome (ok, bad_request, unauthorized, unavailable)",
        &["agent", "outcome"],
    ),
    seconds: memory_metrics::histogram_vec(
        "memory_hook_http_seconds",
        "Time from a hook input's arrival to its answer (events committed), by agent",
        &["agent"],
        &[0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0],
    ),
});

struct HookState {
    spool: SpoolDir,
    project: Option<String>,
    token: Option<String>,
    ingest: IngestHandle,
    query: memory_query::QueryService,
    limits: ValidationLimits,
    context_tokens: usize,
    redactor: Option<memory_redact::Redactor>,
}

/// The running listener.
pub struct HookListener {
    task: JoinHandle<()>,
}

impl HookListener {
    /// Waits until it has stopped (after the shutdown token).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Starts the listener when `[capture] http_listen` is set.
///
/// # Errors
/// The address cannot be bound.
pub async fn start(
    config: &Config,
    data_dir: &Path,
    ingest: IngestHandle,
    query: memory_query::QueryService,
    shutdown: CancellationToken,
) -> anyhow::Result<Option<HookListener>> {
    if config.capture.http_listen.is_empty() {
        return Ok(None);
    }
    let addr: SocketAddr = config
        .capture
        .http_listen
        .parse()
        .context("capture.http_listen is not an address")?;
    let state = Arc::new(HookState {
        spool: crate::hook_cli::spool_dir(config, data_dir),
        project: config.capture.project.clone(),
        token: config.capture.http_token.clone(),
        ingest,
        query,
        limits: crate::settings::limits(config),
        context_tokens: config.capture.context_tokens,
        redactor: crate::embedded::redactor(data_dir).ok(),
    });
    let router = Router::new()
        .route("/hooks/{agent}", post(handle))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot bind the hook listener on {addr}"))?;
    let addr = listener.local_addr()?;
    info!(%addr, "hook listener serving /hooks/claude-code and /hooks/codex");
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
        {
            warn!(%error, "hook listener failed");
        }
    });
    Ok(Some(HookListener { task }))
}

fn answer(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn handle(
    State(state): State<Arc<HookState>>,
    UrlPath(agent_name): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let agent = match agent_name.as_str() {
        "claude-code" => Agent::ClaudeCode,
        "codex" => Agent::Codex,
        other => {
            return answer(
                StatusCode::NOT_FOUND,
                &json!({"error": format!("no hook for {other:?}; POST /hooks/claude-code or /hooks/codex")}),
            );
        }
    };
    let label = agent.source();
    let span = info_span!("hook_http", agent = label);
    let (status, body) = serve_one(&state, agent, &headers, body)
        .instrument(span)
        .await;
    let outcome = match status {
        StatusCode::OK => "ok",
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => "unauthorized",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        _ => "bad_request",
    };
    METRICS.requests.with_label_values(&[label, outcome]).inc();
    METRICS
        .seconds
        .with_label_values(&[label])
        .observe(started.elapsed().as_secs_f64());
    answer(status, &body)
}

async fn serve_one(
    state: &Arc<HookState>,
    agent: Agent,
    headers: &HeaderMap,
    body: Bytes,
) -> (StatusCode, Value) {
    // Only an agent posts here: a browser's request carries an `Origin` (a web page
    // may post to loopback without a preflight when the body is `text/plain`), and the
    // body must be declared JSON.
    if headers.contains_key(header::ORIGIN) {
        return (
            StatusCode::FORBIDDEN,
            json!({"error": "requests from web pages (with an Origin header) are refused"}),
        );
    }
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if !is_json {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            json!({"error": "the hook input must be sent as Content-Type: application/json"}),
        );
    }
    if let Some(token) = &state.token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        if given != Some(token.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                json!({"error": "missing or wrong bearer token"}),
            );
        }
    }
    let input: Value = match serde_json::from_slice(&body) {
        Ok(input) => input,
        Err(err) => {
            return (
                StatusCode::BAD_REQUEST,
                json!({"error": format!("the hook input is not JSON: {err}")}),
            );
        }
    };
    // The session's state file is locked and the transcript may be read: blocking work.
    let worker = Arc::clone(state);
    let converted = tokio::task::spawn_blocking(move || {
        let (session_id, _) = memory_agents::hook::identify(&input)?;
        let mut lock = worker.spool.session(agent, &session_id)?;
        let mut projects = Projects::new(worker.project.clone());
        let out = hook_events(
            agent,
            &input,
            &mut lock.state,
            &mut projects,
            memory_types::now_ms(),
        )?;
        lock.save()?;
        Ok::<_, anyhow::Error>(out)
    })
    .await;
    let out = match converted {
        Ok(Ok(out)) => out,
        Ok(Err(err)) => {
            return (
                StatusCode::BAD_REQUEST,
                json!({"error": format!("{err:#}")}),
            );
        }
        Err(err) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": format!("hook task failed: {err}")}),
            );
        }
    };
    let project = out
        .project
        .clone()
        .unwrap_or_else(|| DEFAULT_PROJECT.to_owned());
    let mut events: Vec<Event> = Vec::with_capacity(out.events.len());
    let mut rejected = Vec::new();
    for wire in &out.events {
        let parsed = serde_json::to_vec(wire)
            .map_err(|err| err.to_string())
            .and_then(|bytes| {
                parse_single(&bytes, ProjectScope::Default(&project), &state.limits, None)
                    .map_err(|err| err.message)
            });
        match parsed {
            Ok(event) => events.push(event),
            Err(message) => rejected.push(json!({
                "event_id": wire.event_id,
                "error": message,
            })),
        }
    }
    let mut reply = json!({});
    if !events.is_empty() {
        match state.ingest.append(events.clone()).await {
            Ok(outcomes) => {
                let stored = IngestReply::assemble(Vec::new(), &outcomes);
                reply["accepted"] = json!(stored.accepted);
                reply["duplicates"] = json!(stored.duplicates);
            }
            Err(err) => {
                // The session's hook state has moved past these events: keep them in the
                // spool (redacted) for the next flush rather than lose them.
                let spooled: Vec<SpooledEvent> = events
                    .into_iter()
                    .map(|mut event| {
                        if let Some(redactor) = &state.redactor {
                            redactor.redact_event(&mut event);
                        }
                        SpooledEvent {
                            project: Some(event.project_id.clone()),
                            event: event.to_wire(),
                        }
                    })
                    .collect();
                let kept = state.spool.append(&spooled).is_ok();
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    json!({"error": format!("cannot store the events: {err}"), "spooled": kept}),
                );
            }
        }
    }
    if !rejected.is_empty() {
        reply["rejected"] = Value::Array(rejected);
    }
    if out.hook_event_name == "SessionStart" && state.context_tokens > 0 {
        let body = json!({ "token_budget": state.context_tokens }).to_string();
        let query = state.query.clone();
        let asked = project.clone();
        // A store read: off the async workers.
        let brief = tokio::task::spawn_blocking(move || {
            query.call(&asked, "context.brief", body.as_bytes())
        })
        .await;
        if let Ok(Ok(brief)) = brief
            && let Some(text) = brief["text"].as_str().filter(|text| !text.is_empty())
        {
            reply["hookSpecificOutput"] = json!({
                "hookEventName": "SessionStart",
                "additionalContext": text,
            });
        }
    }
    (StatusCode::OK, reply)
}
