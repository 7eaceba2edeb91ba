//! `memory-llm`: TOC summaries written by a language model over any OpenAI-compatible
//! chat completions API, with the extractive summarizer as a safety net.
//!
//! The rollup builder writes a title, bullets citing grips, and keywords for every
//! segment and every day, week, month and year (ARCHITECTURE §2). The extractive
//! summarizer of `memory-summarize` does that offline and deterministically; a model writes
//! better prose, but is slow, can be down and can answer nonsense. This crate lets the
//! daemon use one without depending on it:
//! - [`ChatClient`]: a small blocking client of `POST <base_url>/chat/completions`
//!   asking for a JSON object, with a per-request timeout and retries with exponential
//!   backoff on connection errors, timeouts, 429 and 5xx (never on other 4xx);
//! - [`LlmSummarizer`]: a [`memory_summarize::Summarizer`] (`name()` = `llm`) that prompts with
//!   numbered grips (`[1]`…`[n]`) and events, or a parent's children, cut to a character
//!   budget; checks the JSON answer (grip numbers in range, bounded lengths) and maps
//!   numbers back to grip ids; and on **any** failure summarizes that item with
//!   [`memory_summarize::ExtractiveSummarizer`] instead, so it never fails an item the
//!   extractive summarizer would not;
//! - [`summarizer_for`]: the summarizer the `[llm]` config section asks for;
//! - metrics `memory_llm_requests_total{outcome=ok|retry|error}`,
//!   `memory_llm_request_latency_seconds`, `memory_summarizer_fallbacks_total{reason=
//!   unavailable|invalid_answer}`, a span `llm_summarize` (`node_id`, `attempt`) per item
//!   and a WARN line per fallback.
//!
//! # Which servers work
//! Anything that serves the OpenAI chat completions API under a `/v1` base URL:
//! - **Ollama** (the default, `http://127.0.0.1:11434/v1`, no key): `ollama pull
//!   llama3.1:8b` and go;
//! - **OpenAI** (`https://api.openai.com/v1`, key from `OPENAI_API_KEY` or `llm.api_key`),
//!   with a chat model that takes `max_tokens` and `response_format` (e.g. `gpt-4o-mini`);
//! - **vLLM** (`python -m vllm.entrypoints.openai.api_server`, `http://HOST:8000/v1`);
//! - **llama.cpp server** (`llama-server -m model.gguf`, `http://HOST:8080/v1`);
//!
//! and gateways that speak the same protocol. JSON mode (`response_format: json_object`)
//! is requested; a server that ignores it still works as long as the model answers with
//! the JSON object (fenced or not), and one that rejects it with a 4xx makes every item
//! fall back, visibly in the metrics and logs. `https` uses rustls (ring) with the
//! system's root certificates; an `http(s)_proxy` in the environment is honoured.
//!
//! ```
//! use memory_config::LlmConfig;
//! use memory_llm::LlmSummarizer;
//! use memory_summarize::{ParentInput, Summarizer};
//! use memory_toc::TocNodeId;
//!
//! // Nothing listens on this port: the item falls back to the extractive summarizer.
//! let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
//! let config = LlmConfig {
//!     enabled: true,
//!     base_url: format!("http://127.0.0.1:{port}/v1"),
//!     max_retries: 0,
//!     ..LlmConfig::default()
//! };
//! let summarizer = LlmSummarizer::new(&config)?;
//! assert_eq!(summarizer.name(), "llm");
//! let node_id: TocNodeId = "toc:day:2026-01-30".parse()?;
//! let input = ParentInput { node_id: &node_id, project_id: "default", children: &[] };
//! let summary = summarizer.summarize_parent(&input)?;
//! assert!(!summary.title.is_empty());
//! assert_eq!(summarizer.counters().num_fallbacks_unavailable, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It is not:
//! - an async client or an SDK: one endpoint, blocking, meant for `spawn_blocking`
//!   threads; streaming, tools and embeddings are out of scope;
//! - a source of truth: what the model writes is a projection like any other, and a
//!   rebuild may write it differently (use the extractive summarizer for byte-identical
//!   rebuilds);
//! - the place that decides when to summarize: the rollup builder does.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod answer;
mod client;
mod error;
pub mod metrics;
mod phrases;
mod prompt;
mod spend;
mod summarizer;
#[cfg(feature = "testsuite")]
pub mod testing;
mod text;

pub use answer::{
    MAX_BULLET_CHARS, MAX_BULLETS, MAX_KEYWORD_CHARS, MAX_KEYWORDS, MAX_SUMMARY_CHARS,
    MAX_TITLE_CHARS, json_object_text, parse_answer,
};
pub use client::{
    ChatCall, ChatClient, ChatMessage, ChatReply, ChatRole, DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX, ReplyFormat, ToolCall, ToolSpec, backoff_delay,
};
pub use error::{LlmError, Result};
pub use phrases::{
    PHRASES_MAX_TOKENS, PHRASES_PROMPT, PHRASES_TEMPERATURE, Phrases, write_phrases,
};
pub use prompt::DEFAULT_PROMPT_BUDGET_CHARS;
pub use spend::{Purpose, Spend, SpendLimits, TokenUsage};
pub use summarizer::{LlmSummarizer, LlmSummarizerCounters, summarizer_for};
