//! [`ChatClient`]: a small blocking client of the OpenAI chat completions API.
//!
//! One call, `POST <base_url>/chat/completions`, asking for a JSON object
//! (`response_format: {"type": "json_object"}`), is all the summarizer needs, and every
//! server worth using speaks it, so a full SDK would only add weight. It blocks because
//! its callers run on blocking threads (the consumer runner applies batches on
//! `spawn_blocking`); do not call it from an async task. It is built on ureq with rustls
//! over ring and the platform's root certificates; the workspace `Cargo.toml` says why
//! not reqwest (its TLS features would leak into the OTLP exporter's client).
//!
//! Failures are split by whether trying again can help: connection errors, timeouts,
//! `429 Too Many Requests` and `5xx` are retried `max_retries` times with exponential
//! backoff ([`backoff_delay`]; a `Retry-After` in seconds is honoured up to the cap);
//! any other status, and a success whose body is not a chat completion, fail at once.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_config::LlmConfig;
use memory_text::truncate_chars;
use serde::{Deserialize, Serialize};
use tracing::{Span, debug};
use ureq::Agent;
use ureq::http::Uri;
use ureq::http::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER};
use ureq::tls::{RootCerts, TlsConfig};

use crate::error::{LlmError, Result};
use crate::metrics::LLM_METRICS;
use crate::spend::{Purpose, Spend, SpendLimits, TokenUsage};

/// First retry delay; doubles with each further retry.
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(200);
/// Longest retry delay.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Most characters of an error response body kept in [`LlmError::Status`].
const MAX_ERROR_BODY_CHARS: usize = 300;

/// Who speaks a [`ChatMessage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions to the model.
    System,
    /// The input to work on.
    User,
    /// An earlier answer of the model.
    Assistant,
    /// The result of a tool the model called (native tool protocol).
    Tool,
}

/// One message of a chat completion request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: ChatRole,
    /// What is said.
    pub content: String,
    /// The tools an assistant message called (native tool protocol).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A tool the model may call (OpenAI `tools[].function`).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The function name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments, a JSON schema of an object.
    pub parameters: serde_json::Value,
}

impl ToolSpec {
    /// The OpenAI `tools[]` entry.
    #[must_use]
    pub fn to_openai(&self) -> serde_json::Value {
        serde_json::json!({"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}})
    }
}

/// A tool call the model made (OpenAI `message.tool_calls[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id, echoed in the tool message that answers it.
    pub id: String,
    /// The function name.
    pub name: String,
    /// The arguments as the model wrote them: JSON text, perhaps malformed.
    pub arguments: String,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serde_json::json!({"id": self.id, "type": "function",
                           "function": {"name": self.name, "arguments": self.arguments}})
        .serialize(serializer)
    }
}

/// How the answer must be written.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplyFormat {
    /// `response_format: {"type": "json_object"}`.
    JsonObject,
    /// `response_format: {"type": "json_schema", …}`: the server constrains the output
    /// to the schema (llama.cpp turns it into a grammar; OpenAI's strict mode).
    JsonSchema {
        /// The schema's name.
        name: String,
        /// The schema.
        schema: serde_json::Value,
    },
    /// No `response_format` (what servers expect next to `tools`).
    Free,
}

impl ReplyFormat {
    fn to_openai(&self) -> Option<serde_json::Value> {
        match self {
            ReplyFormat::JsonObject => Some(serde_json::json!({"type": "json_object"})),
            ReplyFormat::JsonSchema { name, schema } => Some(serde_json::json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": true}})),
            ReplyFormat::Free => None,
        }
    }
}

/// One chat completion to make: [`ChatClient::chat`]'s argument. Unset fields take the
/// client's configuration.
#[derive(Clone, Debug)]
pub struct ChatCall<'a> {
    /// What it is for (metrics, spend).
    pub purpose: Purpose,
    /// The conversation so far.
    pub messages: &'a [ChatMessage],
    /// How the answer must be written.
    pub format: ReplyFormat,
    /// Tools the model may call (native protocol); empty for none.
    pub tools: &'a [ToolSpec],
    /// Most tokens to write.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Time limit of each attempt.
    pub timeout: Option<Duration>,
    /// Retries after a retryable failure.
    pub max_retries: Option<u32>,
}

impl<'a> ChatCall<'a> {
    /// A call asking for a JSON object, with the client's settings.
    #[must_use]
    pub fn new(purpose: Purpose, messages: &'a [ChatMessage]) -> Self {
        ChatCall {
            purpose,
            messages,
            format: ReplyFormat::JsonObject,
            tools: &[],
            max_tokens: None,
            temperature: None,
            timeout: None,
            max_retries: None,
        }
    }
}

/// The model's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChatReply {
    /// The message text (may be empty next to tool calls).
    pub content: String,
    /// The tools it called (native protocol).
    pub tool_calls: Vec<ToolCall>,
    /// Tokens read and written.
    pub usage: TokenUsage,
    /// The answer stopped at `max_tokens` (`finish_reason: "length"`): its text is cut
    /// off, so a JSON answer is very likely unclosed.
    pub truncated: bool,
}

impl ChatMessage {
    /// A system message (instructions).
    #[must_use]
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::System,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A user message (the input).
    #[must_use]
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// An earlier answer of the model, with the tools it called.
    #[must_use]
    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::Assistant,
            content: content.into(),
            tool_calls,
            tool_call_id: None,
        }
    }

    /// The result of tool call `call_id`.
    #[must_use]
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// The delay before retry number `retry_index` (0 for the first retry):
/// `base × 2^retry_index`, at most `max`.
#[must_use]
pub fn backoff_delay(base: Duration, max: Duration, retry_index: u32) -> Duration {
    let factor = 1_u32.checked_shl(retry_index.min(31)).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(max)
}

/// A blocking client of one OpenAI-compatible chat completions endpoint.
///
/// Cheap to share by reference across threads (`Sync`); holds one connection pool.
#[derive(Clone)]
pub struct ChatClient {
    agent: Agent,
    endpoint: String,
    model: String,
    api_key_opt: Option<String>,
    timeout: Duration,
    max_retries: u32,
    max_tokens: u32,
    temperature: f64,
    backoff_base: Duration,
    backoff_max: Duration,
    spend: Arc<Spend>,
}

impl fmt::Debug for ChatClient {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ChatClient")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key_opt.as_ref().map(|_| "********"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<ChatChoice>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
}

#[derive(Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChatChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ResponseToolCall>>,
}

#[derive(Deserialize)]
struct ResponseToolCall {
    #[serde(default)]
    id: Option<String>,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    /// A JSON string per the API; some servers send the object itself.
    #[serde(default)]
    arguments: serde_json::Value,
}

/// How one attempt failed, before the retry decision.
enum AttemptFailure {
    /// A connection or protocol error that may pass (refused, reset, DNS).
    Transport(String),
    /// An error that trying again cannot fix (TLS setup, a bad URI).
    Fatal(String),
    Timeout,
    Status {
        status: u16,
        body: String,
        retry_after_opt: Option<Duration>,
    },
    InvalidResponse(String),
}

impl AttemptFailure {
    fn is_retryable(&self) -> bool {
        match self {
            AttemptFailure::Transport(_) | AttemptFailure::Timeout => true,
            AttemptFailure::Status { status, .. } => *status == 429 || *status >= 500,
            AttemptFailure::Fatal(_) | AttemptFailure::InvalidResponse(_) => false,
        }
    }

    fn into_error(self, num_attempts: u32, timeout: Duration) -> LlmError {
        match self {
            AttemptFailure::Transport(message) | AttemptFailure::Fatal(message) => {
                LlmError::Transport {
                    num_attempts,
                    message,
                }
            }
            AttemptFailure::Timeout => LlmError::Timeout {
                num_attempts,
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            AttemptFailure::Status { status, body, .. } => LlmError::Status {
                status,
                num_attempts,
                body,
            },
            AttemptFailure::InvalidResponse(message) => LlmError::InvalidResponse(message),
        }
    }

    fn describe(&self) -> String {
        match self {
            AttemptFailure::Transport(message)
            | AttemptFailure::Fatal(message)
            | AttemptFailure::InvalidResponse(message) => message.clone(),
            AttemptFailure::Timeout => "timed out".to_owned(),
            AttemptFailure::Status { status, .. } => format!("http {status}"),
        }
    }

    fn from_ureq(error: &ureq::Error) -> AttemptFailure {
        match error {
            ureq::Error::Timeout(_) => AttemptFailure::Timeout,
            ureq::Error::Io(io_error) if io_error.kind() == std::io::ErrorKind::TimedOut => {
                AttemptFailure::Timeout
            }
            ureq::Error::Io(_)
            | ureq::Error::ConnectionFailed
            | ureq::Error::HostNotFound
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled => AttemptFailure::Transport(error_chain(error)),
            _ => AttemptFailure::Fatal(error_chain(error)),
        }
    }
}

/// An error and its causes on one line, so the log shows the root cause ("Connection
/// refused") and not only the outermost message.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source_opt = error.source();
    while let Some(source) = source_opt {
        let source_message = source.to_string();
        if !message.contains(&source_message) {
            message.push_str(": ");
            message.push_str(&source_message);
        }
        source_opt = source.source();
    }
    message
}

/// `base_url` + `/chat/completions`, or `base_url` itself when it already names that path.
fn chat_completions_url(base_url: &str) -> Result<String> {
    let invalid = |reason: &str| LlmError::InvalidBaseUrl {
        base_url: base_url.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = base_url.trim().trim_end_matches('/');
    if trimmed.contains('#') {
        return Err(invalid("a fragment is not allowed"));
    }
    let base: Uri = trimmed
        .parse()
        .map_err(|error: ureq::http::uri::InvalidUri| invalid(&error.to_string()))?;
    if !matches!(base.scheme_str(), Some("http" | "https")) {
        return Err(invalid("the scheme must be http or https"));
    }
    if base.host().is_none_or(str::is_empty) {
        return Err(invalid("a host is required"));
    }
    if base.query().is_some() {
        return Err(invalid("a query is not allowed"));
    }
    if base.path().ends_with("/chat/completions") {
        return Ok(trimmed.to_owned());
    }
    Ok(format!("{trimmed}/chat/completions"))
}

impl ChatClient {
    /// A client for `config`'s endpoint and model. The API key is `config.api_key`, else
    /// the variable named by `config.api_key_env`, read now; none is fine for local
    /// servers. `config.enabled` is not looked at: whether to summarize with the model
    /// is the caller's choice.
    ///
    /// # Errors
    /// [`LlmError::InvalidBaseUrl`] for a base URL that is not `http(s)://host[...]`.
    pub fn new(config: &LlmConfig) -> Result<ChatClient> {
        let endpoint = chat_completions_url(&config.base_url)?;
        let timeout = Duration::from_millis(config.timeout_ms.max(1));
        let agent: Agent = Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .user_agent(concat!("agent-memory/", env!("CARGO_PKG_VERSION")))
            .tls_config(
                TlsConfig::builder()
                    .root_certs(RootCerts::PlatformVerifier)
                    .build(),
            )
            .build()
            .into();
        Ok(ChatClient {
            agent,
            endpoint,
            model: config.model.clone(),
            api_key_opt: config.resolve_api_key(),
            timeout,
            max_retries: config.max_retries,
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
            spend: Arc::new(Spend::new(SpendLimits::from_config(config))),
        })
    }

    /// The same client counting against `spend` (one per daemon, shared by every
    /// client, so the daily cap bounds them together).
    #[must_use]
    pub fn with_spend(mut self, spend: Arc<Spend>) -> ChatClient {
        self.spend = spend;
        self
    }

    /// The spend this client counts against.
    #[must_use]
    pub fn spend(&self) -> &Arc<Spend> {
        &self.spend
    }

    /// The same client with another retry backoff (first delay, cap); tests use short ones.
    #[must_use]
    pub fn with_backoff(mut self, base: Duration, max: Duration) -> ChatClient {
        self.backoff_base = base;
        self.backoff_max = max.max(base);
        self
    }

    /// The URL requests go to (`…/chat/completions`).
    #[must_use]
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The model requests name.
    #[must_use]
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The per-request time limit.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `messages` asking for a JSON object (a summary) and returns the content of
    /// the first choice's message, as the model wrote it (it may still be malformed JSON:
    /// checking it is the caller's job).
    ///
    /// # Errors
    /// As [`ChatClient::chat`]; an answer without text is [`LlmError::InvalidResponse`].
    pub fn complete_json(&self, messages: &[ChatMessage]) -> Result<String> {
        let reply = self.chat(&ChatCall::new(Purpose::Summary, messages))?;
        if reply.content.is_empty() {
            return Err(LlmError::InvalidResponse(
                "no choice with message content".to_owned(),
            ));
        }
        Ok(reply.content)
    }

    /// Makes one chat completion: waits for the spend's permission, then sends, retrying
    /// what may pass, and counts the tokens of the answer.
    ///
    /// Records `attempt` (1 for the first request) on the current span when the span
    /// declares that field (the summarizer's `llm_summarize` span does).
    ///
    /// # Errors
    /// [`LlmError::BudgetExhausted`] or [`LlmError::RateLimited`] before anything is
    /// sent; [`LlmError::Transport`], [`LlmError::Timeout`] or [`LlmError::Status`] once
    /// the retries are spent (or at once for a non-retryable status);
    /// [`LlmError::InvalidResponse`] when a success body is not a chat completion with
    /// message content or tool calls.
    pub fn chat(&self, call: &ChatCall<'_>) -> Result<ChatReply> {
        let timeout = call.timeout.unwrap_or(self.timeout);
        let max_retries = call.max_retries.unwrap_or(self.max_retries);
        let request = ChatRequest {
            model: &self.model,
            messages: call.messages,
            temperature: call.temperature.unwrap_or(self.temperature),
            max_tokens: call.max_tokens.unwrap_or(self.max_tokens),
            response_format: call.format.to_openai(),
            tools: call.tools.iter().map(ToolSpec::to_openai).collect(),
        };
        // The rate limit may hold a request back, but not longer than it may take.
        self.spend.admit(call.purpose, Instant::now() + timeout)?;
        let span = Span::current();
        let mut attempt_index: u32 = 0;
        loop {
            let num_attempts = attempt_index + 1;
            span.record("attempt", num_attempts);
            let started = Instant::now();
            let outcome = self.send_once(&request, timeout);
            LLM_METRICS
                .request_latency
                .observe(started.elapsed().as_secs_f64());
            let failure = match outcome {
                Ok(mut reply) => {
                    LLM_METRICS.requests.with_label_values(&["ok"]).inc();
                    if reply.usage == TokenUsage::default() {
                        reply.usage = estimate_usage(&request, &reply);
                    }
                    self.spend.record(call.purpose, reply.usage);
                    return Ok(reply);
                }
                Err(failure) => failure,
            };
            if !failure.is_retryable() || attempt_index >= max_retries {
                LLM_METRICS.requests.with_label_values(&["error"]).inc();
                return Err(failure.into_error(num_attempts, timeout));
            }
            LLM_METRICS.requests.with_label_values(&["retry"]).inc();
            let backoff = backoff_delay(self.backoff_base, self.backoff_max, attempt_index);
            let delay = match &failure {
                AttemptFailure::Status {
                    retry_after_opt: Some(retry_after),
                    ..
                } => (*retry_after).min(self.backoff_max),
                _ => backoff,
            };
            debug!(
                endpoint = %self.endpoint,
                attempt = num_attempts,
                delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error = %failure.describe(),
                "llm request failed, retrying"
            );
            std::thread::sleep(delay);
            attempt_index += 1;
        }
    }

    fn send_once(
        &self,
        request: &ChatRequest<'_>,
        timeout: Duration,
    ) -> std::result::Result<ChatReply, AttemptFailure> {
        let mut builder = self
            .agent
            .post(&self.endpoint)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header(ACCEPT, "application/json");
        if let Some(api_key) = &self.api_key_opt {
            builder = builder.header(AUTHORIZATION, format!("Bearer {api_key}"));
        }
        let mut response = builder
            .send_json(request)
            .map_err(|error| AttemptFailure::from_ureq(&error))?;
        let status = response.status().as_u16();
        let retry_after_opt = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response
            .body_mut()
            .read_to_string()
            .map_err(|error| AttemptFailure::from_ureq(&error))?;
        if !(200..300).contains(&status) {
            return Err(AttemptFailure::Status {
                status,
                body: truncate_chars(body.trim(), MAX_ERROR_BODY_CHARS).to_owned(),
                retry_after_opt,
            });
        }
        let chat_response: ChatResponse = serde_json::from_str(&body).map_err(|error| {
            AttemptFailure::InvalidResponse(format!(
                "{error}; body starts with {:?}",
                truncate_chars(&body, 120)
            ))
        })?;
        let usage = chat_response
            .usage
            .map_or_else(TokenUsage::default, |usage| TokenUsage {
                prompt_tokens: usage.prompt_tokens,
                completion_tokens: usage.completion_tokens,
            });
        let choice = chat_response
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| AttemptFailure::InvalidResponse("no choice".to_owned()))?;
        let truncated = choice.finish_reason.as_deref() == Some("length");
        let message = choice.message;
        let tool_calls: Vec<ToolCall> = message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{index}")),
                name: call.function.name,
                arguments: match call.function.arguments {
                    serde_json::Value::String(text) => text,
                    serde_json::Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                },
            })
            .collect();
        let content = message.content.unwrap_or_default();
        if content.is_empty() && tool_calls.is_empty() {
            return Err(AttemptFailure::InvalidResponse(
                "no choice with message content or tool calls".to_owned(),
            ));
        }
        Ok(ChatReply {
            content,
            tool_calls,
            usage,
            truncated,
        })
    }
}

/// Four characters a token: for servers that send no `usage`.
fn estimate_usage(request: &ChatRequest<'_>, reply: &ChatReply) -> TokenUsage {
    let read: usize = request
        .messages
        .iter()
        .map(|message| message.content.len() + 16)
        .sum::<usize>()
        + request
            .tools
            .iter()
            .map(|tool| tool.to_string().len())
            .sum::<usize>();
    let written = reply.content.len()
        + reply
            .tool_calls
            .iter()
            .map(|call| call.name.len() + call.arguments.len())
            .sum::<usize>();
    TokenUsage {
        prompt_tokens: (read as u64).div_ceil(4),
        completion_tokens: (written as u64).div_ceil(4).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_up_to_the_cap() {
        let base = Duration::from_millis(200);
        let max = Duration::from_secs(5);
        let delays: Vec<u128> = (0..8)
            .map(|retry_index| backoff_delay(base, max, retry_index).as_millis())
            .collect();
        assert_eq!(delays, [200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000]);
        assert_eq!(backoff_delay(base, max, u32::MAX), max);
    }

    #[test]
    fn endpoint_is_the_base_url_plus_chat_completions() {
        for (base_url, expected) in [
            (
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:11434/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "http://vllm:8000/v1/chat/completions",
                "http://vllm:8000/v1/chat/completions",
            ),
        ] {
            let url = chat_completions_url(base_url).expect(base_url);
            assert_eq!(url, expected);
        }
        for bad in [
            "127.0.0.1:11434/v1",
            "ftp://host/v1",
            "http://",
            "http://host/v1?key=1",
            "http://host/v1#top",
            "",
        ] {
            let err = chat_completions_url(bad).expect_err(bad);
            assert!(
                matches!(err, LlmError::InvalidBaseUrl { .. }),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn request_body_has_the_openai_shape() {
        let messages = [ChatMessage::system("rules"), ChatMessage::user("input")];
        let request = ChatRequest {
            model: "llama3.1:8b",
            messages: &messages,
            temperature: 0.0,
            max_tokens: 400,
            response_format: ReplyFormat::JsonObject.to_openai(),
            tools: Vec::new(),
        };
        let json = serde_json::to_value(&request).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({
                "model": "llama3.1:8b",
                "messages": [{"role": "system", "content": "rules"},
                             {"role": "user", "content": "input"}],
                "temperature": 0.0,
                "max_tokens": 400,
                "response_format": {"type": "json_object"}
            })
        );
    }

    #[test]
    fn debug_output_hides_the_api_key() {
        let config = LlmConfig {
            api_key: Some("sk-very-secret".into()),
            ..LlmConfig::default()
        };
        let client = ChatClient::new(&config).expect("client");
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(shown.contains("********"), "{shown}");
    }
}
