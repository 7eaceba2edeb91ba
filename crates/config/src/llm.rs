//! `[llm]`: the optional language model (summaries, the indexing agent's LLM engine,
//! search phrases), its API key and its spend limits.

use serde::{Deserialize, Serialize};

/// `[llm]`: the optional LLM summarizer of TOC nodes, over any OpenAI-compatible chat
/// completions API (OpenAI, Ollama, vLLM, llama.cpp server). When disabled, or for any
/// item the model cannot summarize in time, the extractive summarizer writes the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// Summarize TOC nodes with the model. Default false (extractive summaries only).
    pub enabled: bool,
    /// Base URL of the OpenAI-compatible API, up to and including `/v1`; requests go to
    /// `<base_url>/chat/completions`. Default `http://127.0.0.1:11434/v1` (Ollama).
    pub base_url: String,
    /// Model name sent with every request. Default `llama3.1:8b`.
    pub model: String,
    /// API key sent as `Authorization: Bearer <key>`. A secret: `config show` masks it.
    /// Default none (then `api_key_env` is read; local servers need no key).
    pub api_key: Option<String>,
    /// Environment variable read at start for the API key when `api_key` is unset.
    /// Default `OPENAI_API_KEY`.
    pub api_key_env: String,
    /// Time limit of one request (connect, send, answer), milliseconds. Default 20000.
    pub timeout_ms: u64,
    /// Retries of a request after a connection error, timeout, 429 or 5xx answer (never
    /// after another 4xx), with exponential backoff. Default 2.
    pub max_retries: u32,
    /// Most tokens the model may generate per answer. Default 400.
    pub max_tokens: u32,
    /// Sampling temperature, 0 to 2; 0 is the most repeatable. Default 0.0.
    pub temperature: f64,
    /// Most requests per minute, all purposes together; 0 for no limit. A request that
    /// cannot get a slot within its time limit is not sent (its caller falls back).
    /// Default 0: a local model needs none, and a hosted API's own limit answers 429,
    /// which is retried with backoff; set it to stay under a provider's quota.
    pub requests_per_minute: u32,
    /// Most tokens (read + written) per UTC day, all purposes together; 0 for no limit.
    /// Once reached, no request is sent until midnight UTC: summaries are extractive,
    /// ideas heuristic, search phrases offline; `memory_llm_tokens_today` and one ERROR
    /// line say so. The count survives restarts (`<data_dir>/llm-spend.json`).
    /// Default 2 000 000.
    pub daily_token_cap: u64,
    /// How the indexing agent's model calls its tools: `native` (OpenAI `tools` /
    /// `tool_calls`), `json` (every step a `response_format: json_schema` object, for
    /// small local models that honour schemas but emit no native tool calls) or `auto`
    /// (a probe at start tries native tool calls and settles on `json` when the model
    /// answers without one). Default `auto`.
    pub tool_protocol: ToolProtocol,
    /// Write TOC summaries with the model (when `enabled`). Default true; false keeps
    /// the extractive summaries and uses the model for ideas or phrases only.
    pub summaries: bool,
}

/// `[llm] tool_protocol`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    /// Probe at start.
    #[default]
    Auto,
    /// OpenAI `tools` / `tool_calls`.
    Native,
    /// Constrained JSON steps (`response_format: json_schema`).
    Json,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            enabled: false,
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3.1:8b".into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_ms: 20_000,
            max_retries: 2,
            max_tokens: 400,
            temperature: 0.0,
            requests_per_minute: 0,
            daily_token_cap: 2_000_000,
            tool_protocol: ToolProtocol::Auto,
            summaries: true,
        }
    }
}

impl LlmConfig {
    /// The API key to send: `api_key` when set, else the non-empty value of the
    /// environment variable named by `api_key_env`, else `None`.
    #[must_use]
    pub fn resolve_api_key(&self) -> Option<String> {
        if let Some(api_key) = &self.api_key {
            return Some(api_key.clone());
        }
        if self.api_key_env.is_empty() {
            return None;
        }
        std::env::var(&self.api_key_env)
            .ok()
            .filter(|value| !value.trim().is_empty())
    }
}
