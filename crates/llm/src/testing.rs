//! A scripted OpenAI-compatible HTTP server on loopback, for tests (feature `testsuite`).
//!
//! Each [`ScriptedServer`] listens on its own `127.0.0.1` port, answers every request
//! (any method, any path) with the next [`ScriptedResponse`] of its script, and records
//! what it received, so a test can both steer the model's behaviour (answers, error
//! statuses, delays) and assert on the requests (model, messages, bearer key, count).
//! It runs on a tokio runtime of its own in a background thread, so it serves blocking
//! clients called from plain `#[test]` functions; dropping it stops it at once, without
//! waiting for delayed responses.
//!
//! ```
//! use memory_llm::testing::{ScriptedResponse, ScriptedServer};
//! let server = ScriptedServer::start(vec![ScriptedResponse::chat(r#"{"title": "T"}"#)]);
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().is_empty());
//! ```

use std::future::IntoFuture;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::oneshot;

/// What the server answers to one request.
#[derive(Clone, Debug)]
pub struct ScriptedResponse {
    /// HTTP status.
    pub status: u16,
    /// Response body, sent as `application/json`.
    pub body: String,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Wait this long before answering (to provoke client timeouts).
    pub delay: Duration,
}

impl ScriptedResponse {
    /// `200` with a chat completion whose first choice's message content is `content`.
    #[must_use]
    pub fn chat(content: &str) -> ScriptedResponse {
        ScriptedResponse::completion(content, "stop")
    }

    /// `200` with a chat completion cut off at the token limit (`finish_reason:
    /// "length"`), as a model that enumerates until `max_tokens` leaves it.
    #[must_use]
    pub fn cut_off(content: &str) -> ScriptedResponse {
        ScriptedResponse::completion(content, "length")
    }

    fn completion(content: &str, finish_reason: &str) -> ScriptedResponse {
        let body = serde_json::json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1_769_767_200,
            "model": "scripted",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason
            }],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        });
        ScriptedResponse::raw(200, &body.to_string())
    }

    /// `200` with a chat completion whose message calls `calls` (name, arguments as
    /// JSON text) natively (`message.tool_calls`), with `usage` tokens.
    #[must_use]
    pub fn tool_calls(calls: &[(&str, &str)]) -> ScriptedResponse {
        let tool_calls: Vec<serde_json::Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                serde_json::json!({"id": format!("call_{index}"), "type": "function",
                                   "function": {"name": name, "arguments": arguments}})
            })
            .collect();
        let body = serde_json::json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 1_769_767_200,
            "model": "scripted",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": null, "tool_calls": tool_calls},
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        });
        ScriptedResponse::raw(200, &body.to_string())
    }

    /// `status` with an OpenAI-style error body.
    #[must_use]
    pub fn error(status: u16, message: &str) -> ScriptedResponse {
        let body = serde_json::json!({"error": {"message": message, "type": "scripted"}});
        ScriptedResponse::raw(status, &body.to_string())
    }

    /// `status` with `body` as it is.
    #[must_use]
    pub fn raw(status: u16, body: &str) -> ScriptedResponse {
        ScriptedResponse {
            status,
            body: body.to_owned(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// The same response, sent after `delay`.
    #[must_use]
    pub fn delayed(mut self, delay: Duration) -> ScriptedResponse {
        self.delay = delay;
        self
    }

    /// The same response with one more header.
    #[must_use]
    pub fn with_header(mut self, name: &str, value: &str) -> ScriptedResponse {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A request as the server received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8).
    pub body: String,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header_name, _)| header_name.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    #[must_use]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Chooses the answer to a request from the request itself (a server several callers
/// share: summaries, the indexing agent, phrases).
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> ScriptedResponse + Send + Sync>;

#[derive(Default)]
struct ServerState {
    script: Vec<ScriptedResponse>,
    responder: Option<Responder>,
    num_answered: usize,
    requests: Vec<RecordedRequest>,
}

type SharedState = Arc<Mutex<ServerState>>;

fn lock(state: &SharedState) -> MutexGuard<'_, ServerState> {
    // A panicking handler must not hide the requests from the test that asserts on them.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A scripted chat completions server on `127.0.0.1`; stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: SharedState,
    shutdown_opt: Option<oneshot::Sender<()>>,
    thread_opt: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts a server that answers the `n`-th request with `script[n]`, and every
    /// request past the script with `500` "script exhausted".
    ///
    /// # Panics
    /// When no loopback port can be bound or the runtime cannot start: the test
    /// environment is broken.
    #[must_use]
    pub fn start(script: Vec<ScriptedResponse>) -> ScriptedServer {
        let std_listener =
            StdTcpListener::bind("127.0.0.1:0").expect("bind a loopback port for the server");
        std_listener
            .set_nonblocking(true)
            .expect("make the listener non-blocking");
        let addr = std_listener.local_addr().expect("listener address");
        let state: SharedState = Arc::new(Mutex::new(ServerState {
            script,
            ..ServerState::default()
        }));
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let router = Router::new().fallback(answer).with_state(state.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("start the server runtime");
        let thread = std::thread::Builder::new()
            .name(format!("scripted-llm-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(std_listener)
                        .expect("register the listener with tokio");
                    tokio::select! {
                        _ = axum::serve(listener, router).into_future() => {}
                        _ = shutdown_rx => {}
                    }
                });
                // Dropping the runtime cancels handlers still sleeping on a delay.
            })
            .expect("spawn the server thread");
        ScriptedServer {
            addr,
            state,
            shutdown_opt: Some(shutdown_tx),
            thread_opt: Some(thread),
        }
    }

    /// Starts a server that answers every request with `responder(request)`.
    ///
    /// # Panics
    /// As [`ScriptedServer::start`].
    #[must_use]
    pub fn responding(responder: Responder) -> ScriptedServer {
        let server = ScriptedServer::start(Vec::new());
        lock(&server.state).responder = Some(responder);
        server
    }

    /// The server's address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI-style base URL to configure: `http://127.0.0.1:<port>/v1`.
    #[must_use]
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests received so far, in arrival order.
    #[must_use]
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// How many requests were received so far.
    #[must_use]
    pub fn num_requests(&self) -> usize {
        lock(&self.state).requests.len()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown_opt.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread_opt.take() {
            let _ = thread.join();
        }
    }
}

/// A `http://127.0.0.1:<port>/v1` base URL where nothing listens (the port was bound
/// and released), for connection-refused tests.
///
/// # Panics
/// When no loopback port can be bound.
#[must_use]
pub fn refused_base_url() -> String {
    let listener = StdTcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().expect("listener address");
    drop(listener);
    format!("http://{addr}/v1")
}

async fn answer(
    State(state): State<SharedState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let scripted_opt = {
        let mut state = lock(&state);
        let request = RecordedRequest {
            method: method.to_string(),
            path: uri
                .path_and_query()
                .map_or_else(|| uri.path().to_owned(), ToString::to_string),
            headers: headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        String::from_utf8_lossy(value.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        let responded = state
            .responder
            .as_ref()
            .map(|responder| responder(&request));
        state.requests.push(request);
        let index = state.num_answered;
        state.num_answered += 1;
        responded.or_else(|| state.script.get(index).cloned())
    };
    let scripted = scripted_opt
        .unwrap_or_else(|| ScriptedResponse::error(500, "scripted server: script exhausted"));
    if !scripted.delay.is_zero() {
        tokio::time::sleep(scripted.delay).await;
    }
    let status = StatusCode::from_u16(scripted.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        scripted.body,
    )
        .into_response();
    for (name, value) in &scripted.headers {
        if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            header::HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
