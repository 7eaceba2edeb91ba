//! [`LlmSummarizer`]: TOC summaries written by a model, never at the cost of the pipeline.
//!
//! Every item goes to the model once (with the client's retries); whatever goes wrong —
//! no server, a timeout, an error status, an answer that is not the JSON asked for, a
//! citation of a grip that was never shown — the item is summarized by the extractive
//! summarizer instead, counted in `memory_summarizer_fallbacks_total{reason}` and logged
//! at WARN. So `summarize_segment` and `summarize_parent` fail only when the extractive
//! summarizer itself does, and a rebuild with the model down still writes a whole tree.

use std::sync::atomic::{AtomicU64, Ordering};

use memory_config::LlmConfig;
use memory_summarize::{
    ExtractiveSummarizer, ParentInput, SegmentInput, SummarizeError, Summarizer, Summary,
};
use memory_toc::TocNodeId;
use serde::Serialize;
use tracing::{field, info_span, warn};

use crate::answer::parse_answer;
use crate::client::ChatClient;
use crate::error::{LlmError, Result};
use crate::metrics::LLM_METRICS;
use crate::prompt::{DEFAULT_PROMPT_BUDGET_CHARS, Prompt, parent_prompt, segment_prompt};

/// What one [`LlmSummarizer`] did since it was built; cheap to read, for `status` and
/// tests (the Prometheus metrics are process-wide).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LlmSummarizerCounters {
    /// Items summarized by the model.
    pub num_llm_summaries: u64,
    /// Items handed to the extractive summarizer because the model could not be used
    /// (connection, timeout, HTTP status).
    pub num_fallbacks_unavailable: u64,
    /// Items handed to the extractive summarizer because the model's answer was unusable.
    pub num_fallbacks_invalid_answer: u64,
}

#[derive(Default)]
struct AtomicCounters {
    num_llm_summaries: AtomicU64,
    num_fallbacks_unavailable: AtomicU64,
    num_fallbacks_invalid_answer: AtomicU64,
}

/// Writes TOC node summaries with an OpenAI-compatible model, falling back to
/// [`ExtractiveSummarizer`] for any item the model fails on.
pub struct LlmSummarizer {
    client: ChatClient,
    fallback: ExtractiveSummarizer,
    prompt_budget_chars: usize,
    /// False for [`LlmSummarizer::without_fallback`].
    falls_back: bool,
    counters: AtomicCounters,
}

impl std::fmt::Debug for LlmSummarizer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LlmSummarizer")
            .field("client", &self.client)
            .field("prompt_budget_chars", &self.prompt_budget_chars)
            .field("counters", &self.counters())
            .finish_non_exhaustive()
    }
}

impl LlmSummarizer {
    /// A summarizer over `config`'s endpoint and model (see [`ChatClient::new`]).
    ///
    /// # Errors
    /// As [`ChatClient::new`]: a bad `base_url`.
    pub fn new(config: &LlmConfig) -> Result<LlmSummarizer> {
        Ok(LlmSummarizer::from_client(ChatClient::new(config)?))
    }

    /// A summarizer over an existing client (tests use one with a short backoff).
    #[must_use]
    pub fn from_client(client: ChatClient) -> LlmSummarizer {
        LlmSummarizer {
            client,
            fallback: ExtractiveSummarizer::default(),
            prompt_budget_chars: DEFAULT_PROMPT_BUDGET_CHARS,
            falls_back: true,
            counters: AtomicCounters::default(),
        }
    }

    /// The same summarizer, failing instead of falling back: for a caller that has an
    /// extractive summary already and wants the model's or nothing — a cluster's lease
    /// holder, which publishes only what the model wrote and tries a failed node again
    /// later.
    #[must_use]
    pub fn without_fallback(mut self) -> LlmSummarizer {
        self.falls_back = false;
        self
    }

    /// The same summarizer with another input budget per prompt, characters (default
    /// [`DEFAULT_PROMPT_BUDGET_CHARS`]): more for models with large context windows.
    #[must_use]
    pub fn with_prompt_budget_chars(mut self, prompt_budget_chars: usize) -> LlmSummarizer {
        self.prompt_budget_chars = prompt_budget_chars;
        self
    }

    /// The client requests go through.
    #[must_use]
    pub fn client(&self) -> &ChatClient {
        &self.client
    }

    /// What this summarizer did since it was built.
    #[must_use]
    pub fn counters(&self) -> LlmSummarizerCounters {
        LlmSummarizerCounters {
            num_llm_summaries: self.counters.num_llm_summaries.load(Ordering::Relaxed),
            num_fallbacks_unavailable: self
                .counters
                .num_fallbacks_unavailable
                .load(Ordering::Relaxed),
            num_fallbacks_invalid_answer: self
                .counters
                .num_fallbacks_invalid_answer
                .load(Ordering::Relaxed),
        }
    }

    /// The model's summary for `prompt`, without fallback.
    fn ask(&self, prompt: &Prompt) -> Result<Summary> {
        let content = self.client.complete_json(&prompt.messages)?;
        parse_answer(&content, &prompt.grip_ids)
    }

    /// The model's summary, or the extractive one when the model failed.
    fn summarize_with_fallback(
        &self,
        node_id: &TocNodeId,
        prompt: impl FnOnce() -> Prompt,
        fallback: impl FnOnce() -> std::result::Result<Summary, SummarizeError>,
    ) -> std::result::Result<Summary, SummarizeError> {
        let span = info_span!("llm_summarize", node_id = %node_id, attempt = field::Empty);
        let _entered = span.enter();
        let error = match self.ask(&prompt()) {
            Ok(summary) => {
                self.counters
                    .num_llm_summaries
                    .fetch_add(1, Ordering::Relaxed);
                return Ok(summary);
            }
            Err(error) => error,
        };
        warn!(
            node_id = %node_id,
            model = self.client.model(),
            reason = error.fallback_reason(),
            falls_back = self.falls_back,
            error = %error,
            "llm summary failed"
        );
        if !self.falls_back {
            return Err(if error.is_unavailable() {
                SummarizeError::Unavailable(error.to_string())
            } else {
                SummarizeError::InvalidAnswer(error.to_string())
            });
        }
        self.count_fallback(&error);
        fallback()
    }

    fn count_fallback(&self, error: &LlmError) {
        let reason = error.fallback_reason();
        LLM_METRICS
            .summarizer_fallbacks
            .with_label_values(&[reason])
            .inc();
        let counter = if error.is_unavailable() {
            &self.counters.num_fallbacks_unavailable
        } else {
            &self.counters.num_fallbacks_invalid_answer
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl Summarizer for LlmSummarizer {
    fn name(&self) -> &'static str {
        "llm"
    }

    fn summarize_segment(
        &self,
        input: &SegmentInput<'_>,
    ) -> std::result::Result<Summary, SummarizeError> {
        self.summarize_with_fallback(
            input.segment_id,
            || segment_prompt(input, self.prompt_budget_chars),
            || self.fallback.summarize_segment(input),
        )
    }

    fn summarize_parent(
        &self,
        input: &ParentInput<'_>,
    ) -> std::result::Result<Summary, SummarizeError> {
        self.summarize_with_fallback(
            input.node_id,
            || parent_prompt(input, self.prompt_budget_chars),
            || self.fallback.summarize_parent(input),
        )
    }
}

/// The summarizer `config` asks for: an [`LlmSummarizer`] (counting against `spend`, when
/// given) when `config.enabled` and `config.summaries`, else
/// the [`ExtractiveSummarizer`].
///
/// # Errors
/// As [`LlmSummarizer::new`], only when enabled.
pub fn summarizer_for(
    config: &LlmConfig,
    spend: Option<std::sync::Arc<crate::Spend>>,
) -> Result<Box<dyn Summarizer>> {
    if config.enabled && config.summaries {
        let client = ChatClient::new(config)?;
        let client = match spend {
            Some(spend) => client.with_spend(spend),
            None => client,
        };
        Ok(Box::new(LlmSummarizer::from_client(client)))
    } else {
        Ok(Box::new(ExtractiveSummarizer::default()))
    }
}
