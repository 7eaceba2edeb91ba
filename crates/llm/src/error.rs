//! Why a chat request or an LLM summary failed.
//!
//! The variants split along what the summarizer does with them: the backend was
//! [unavailable](LlmError::is_unavailable) (no connection, timeout, error status), or it
//! answered with something unusable. Both end in an extractive fallback; the split only
//! feeds the `reason` label of the fallback metric and the log line.

use memory_summarize::SummarizeError;

/// A chat request or summary that did not produce a usable answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// `llm.base_url` is not an `http://` or `https://` URL that can take a path.
    #[error("invalid llm base url {base_url:?}: {reason}")]
    InvalidBaseUrl {
        /// The configured value.
        base_url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No connection, the connection broke, or TLS failed, on every attempt.
    #[error("llm server unreachable after {num_attempts} attempt(s): {message}")]
    Transport {
        /// Requests sent, retries included.
        num_attempts: u32,
        /// The last transport error with its causes.
        message: String,
    },
    /// Every attempt ran past the per-request time limit.
    #[error("llm request timed out after {timeout_ms} ms ({num_attempts} attempt(s))")]
    Timeout {
        /// Requests sent, retries included.
        num_attempts: u32,
        /// The per-request limit, milliseconds.
        timeout_ms: u64,
    },
    /// The server answered with an error status: a 4xx other than 429 at once, a 429 or
    /// 5xx once the retries ran out.
    #[error("llm server answered http {status} after {num_attempts} attempt(s): {body}")]
    Status {
        /// The last HTTP status.
        status: u16,
        /// Requests sent, retries included.
        num_attempts: u32,
        /// The start of the response body, for the log.
        body: String,
    },
    /// A success status, but the body is not a chat completion with message content.
    #[error("llm response is not a chat completion: {0}")]
    InvalidResponse(String),
    /// The day's token cap (`[llm] daily_token_cap`) is spent: no request was sent.
    #[error("daily llm token cap reached: {spent} of {cap} tokens spent today")]
    BudgetExhausted {
        /// Tokens spent today.
        spent: u64,
        /// The cap.
        cap: u64,
    },
    /// `[llm] requests_per_minute` left no slot before the request's deadline: not sent.
    #[error("llm request not sent: {requests_per_minute} requests per minute already used")]
    RateLimited {
        /// The limit.
        requests_per_minute: u32,
    },
    /// The model's message is not a summary that passes the checks (JSON shape, grip
    /// numbers in range, lengths).
    #[error("llm answer unusable: {0}")]
    InvalidAnswer(String),
}

impl LlmError {
    /// True when the backend could not be used at all (configuration, connection,
    /// timeout, error status); false when it answered with something unusable.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        match self {
            LlmError::InvalidBaseUrl { .. }
            | LlmError::Transport { .. }
            | LlmError::Timeout { .. }
            | LlmError::Status { .. }
            | LlmError::BudgetExhausted { .. }
            | LlmError::RateLimited { .. } => true,
            LlmError::InvalidResponse(_) | LlmError::InvalidAnswer(_) => false,
        }
    }

    /// The `reason` label of `memory_summarizer_fallbacks_total`: `unavailable` or
    /// `invalid_answer`.
    #[must_use]
    pub fn fallback_reason(&self) -> &'static str {
        if self.is_unavailable() {
            "unavailable"
        } else {
            "invalid_answer"
        }
    }
}

impl From<LlmError> for SummarizeError {
    fn from(error: LlmError) -> Self {
        if error.is_unavailable() {
            SummarizeError::Unavailable(error.to_string())
        } else {
            SummarizeError::InvalidAnswer(error.to_string())
        }
    }
}

/// `Result` with [`LlmError`].
pub type Result<T> = std::result::Result<T, LlmError>;
