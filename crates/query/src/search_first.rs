//! The search-first spec around `search`: phrases a model writes for the question, the
//! always-include rules, and the `stats` the spec asks for.
//!
//! **Phrases.** With `phrases: "llm"` (or `[teleport] llm_phrases` and no phrases of the
//! caller's) a [`PhraseWriter`] — the daemon's is the `[llm]` model — writes three to
//! five phrases under a hard time budget (default 1.5 s). They are searched as if the
//! caller had passed them. When the model is not configured, too slow, down, over its
//! spend or writes something unusable, the question is searched as it would have been
//! without (its offline expansion when `[teleport] expand_query` is on); the response
//! says which (`phrase_source`) and why (`phrase_fallback_reason`). A search never fails
//! or waits longer than the budget because of the model.
//!
//! **Always include.** `include_preferences` adds the project's current preferences,
//! `include_n_minus_1` the previous turn of `caller_session_id`, `referenced_event_ids`
//! the turns the question refers to — whatever their scores, after the search's results,
//! marked `source: "always_include"`, never twice as the same document. They count against the token budget
//! like any result: the search's own results are cut first.

use std::sync::Arc;
use std::time::Duration;

use memory_ideas::{GraphView, Intent};
use memory_projections::IdeaGraph;
use memory_text::estimate_tokens;
use memory_types::{Event, EventKind};

use crate::api::{
    PhraseSource, PhrasesArg, ResultSource, SearchRequest, SearchResponse, SearchResult,
};
use crate::evidence::snippet_of;
use crate::phrases::{MAX_PHRASE_CHARS, MAX_PHRASES};

/// What a phrase writer wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WrittenPhrases {
    /// Three to five search phrases.
    pub phrases: Vec<String>,
    /// Whether the question may want the user's preferences.
    pub include_preferences: Option<bool>,
    /// Whether it follows up on the conversation.
    pub include_n_minus_1: Option<bool>,
}

/// Why a writer wrote nothing usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhraseWriterError {
    /// `timeout`, `unavailable`, `budget`, `invalid`: the `phrase_fallback_reason`'s
    /// first word.
    pub reason: &'static str,
    /// Detail for the response and the log.
    pub detail: String,
}

/// Writes search phrases for a question (the spec's step 1).
pub trait PhraseWriter: Send + Sync {
    /// Phrases for `question`, within `budget`.
    ///
    /// # Errors
    /// When nothing usable came back in time.
    fn write(&self, question: &str, budget: Duration) -> Result<WrittenPhrases, PhraseWriterError>;
}

/// `[teleport] llm_phrases` and `llm_phrases_timeout_ms`.
#[derive(Clone)]
pub struct SearchFirst {
    /// The writer; `None` when no model is configured.
    pub writer: Option<Arc<dyn PhraseWriter>>,
    /// Ask the writer when the caller passes no phrases.
    pub by_default: bool,
    /// The hard time budget of one writer call.
    pub budget: Duration,
}

impl Default for SearchFirst {
    fn default() -> Self {
        SearchFirst {
            writer: None,
            by_default: false,
            budget: Duration::from_millis(1_500),
        }
    }
}

/// Most preferences `include_preferences` adds.
const MAX_PREFERENCES: usize = 5;

/// A request's phrases resolved: the request to search with, where its phrases came
/// from (when the caller or the model chose them), why the model's were not used, and
/// the model's include flags.
pub(crate) struct Resolved {
    pub(crate) request: SearchRequest,
    pub(crate) source: Option<PhraseSource>,
    pub(crate) fallback_reason: Option<String>,
    pub(crate) written: Option<WrittenPhrases>,
}

impl SearchFirst {
    /// Resolves `phrases: "llm"` (or the default) into phrases, or says why not.
    pub(crate) fn resolve(&self, request: &SearchRequest) -> Resolved {
        let mut resolved = Resolved {
            request: request.clone(),
            source: None,
            fallback_reason: None,
            written: None,
        };
        let wants_model = match &request.phrases {
            Some(PhrasesArg::Phrases(_)) => {
                resolved.source = Some(PhraseSource::Caller);
                return resolved;
            }
            Some(PhrasesArg::Writer(_)) => true,
            None => self.by_default,
        };
        resolved.request.phrases = None;
        if !wants_model {
            return resolved;
        }
        let Some(writer) = &self.writer else {
            resolved.fallback_reason =
                Some("not_configured: no [llm] model to write phrases".to_owned());
            return resolved;
        };
        let span = tracing::info_span!("llm_phrases", phrases = tracing::field::Empty);
        let _entered = span.enter();
        match writer.write(&request.query, self.budget) {
            Ok(written) => {
                let phrases = clean(&written.phrases);
                if phrases.is_empty() {
                    resolved.fallback_reason = Some("invalid: no usable phrase".to_owned());
                    return resolved;
                }
                span.record("phrases", phrases.len());
                resolved.request.phrases = Some(PhrasesArg::Phrases(phrases));
                resolved.source = Some(PhraseSource::Llm);
                resolved.written = Some(written);
            }
            Err(err) => {
                tracing::warn!(reason = err.reason, detail = %err.detail, "model phrases not used; searching the question");
                resolved.fallback_reason = Some(format!("{}: {}", err.reason, err.detail));
            }
        }
        resolved
    }
}

/// The model's phrases made safe to search: trimmed, non-empty, at most
/// [`MAX_PHRASE_CHARS`] characters, the first [`MAX_PHRASES`] of them (the spec
/// truncates more than ten to five; we take at most five whatever came).
fn clean(phrases: &[String]) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for phrase in phrases {
        let phrase: String = phrase.trim().chars().take(MAX_PHRASE_CHARS).collect();
        if !phrase.is_empty() && !kept.iter().any(|k| k.eq_ignore_ascii_case(&phrase)) {
            kept.push(phrase);
        }
        if kept.len() == MAX_PHRASES {
            break;
        }
    }
    if phrases.len() > MAX_PHRASES {
        tracing::warn!(
            written = phrases.len(),
            kept = kept.len(),
            "model wrote more phrases than searched; kept the first"
        );
    }
    kept
}

/// What the always-include rules add for `request` (the model's flags where the request
/// leaves them unset): preferences, the previous turn, referenced turns.
pub(crate) fn always_include(
    store: &memory_store::Store,
    project_id: &str,
    request: &SearchRequest,
    written: Option<&WrittenPhrases>,
    now_ms: u64,
) -> crate::Result<Vec<SearchResult>> {
    let preferences = request
        .include_preferences
        .or(written.and_then(|w| w.include_preferences))
        .unwrap_or(false);
    let n_minus_1 = request
        .include_n_minus_1
        .or(written.and_then(|w| w.include_n_minus_1))
        .unwrap_or(false);
    let mut added = Vec::new();
    if preferences {
        let graph = IdeaGraph::open(store)?;
        let found = graph.recent_ideas(
            project_id,
            None,
            Some(Intent::Preference),
            MAX_PREFERENCES * 4,
        )?;
        for idea in found
            .into_iter()
            .filter(|idea| !idea.is_superseded())
            .take(MAX_PREFERENCES)
        {
            let evidence = event_by_id(store, project_id, &idea.source.event_id)?
                .into_iter()
                .collect();
            added.push(SearchResult {
                doc_id: idea.idea_id.clone(),
                doc_type: "idea".to_owned(),
                text: snippet_of(&idea.content),
                evidence,
                idea_id: Some(idea.idea_id.clone()),
                salience: Some(idea.salience()),
                source: ResultSource::AlwaysInclude,
                ..SearchResult::default()
            });
        }
    }
    if n_minus_1
        && let Some(session) = request.caller_session_id.as_deref()
        && let Some(event) = previous_turn(store, project_id, session, &request.query, now_ms)?
    {
        added.push(event_result(event));
    }
    for event_id in request.referenced_event_ids.iter().flatten() {
        match event_by_id(store, project_id, event_id)? {
            Some(event) => added.push(event_result(event)),
            None => {
                return Err(crate::error::QueryError::not_found(format!(
                    "referenced event {event_id:?} is not in project {project_id:?}"
                )));
            }
        }
    }
    Ok(added)
}

fn event_result(event: Event) -> SearchResult {
    SearchResult {
        doc_id: event.event_id.clone(),
        doc_type: "event".to_owned(),
        text: snippet_of(&event.text),
        evidence: vec![event],
        source: ResultSource::AlwaysInclude,
        ..SearchResult::default()
    }
}

fn event_by_id(
    store: &memory_store::Store,
    project_id: &str,
    event_id: &str,
) -> crate::Result<Option<Event>> {
    let Some(seq) = store.seq_of_event_id(project_id, event_id)? else {
        return Ok(None);
    };
    Ok(store
        .event(seq)?
        .filter(|event| event.project_id == project_id))
}

/// The caller session's last turn with text before `now_ms`, skipping the question
/// itself when it was already stored as the latest turn.
fn previous_turn(
    store: &memory_store::Store,
    project_id: &str,
    session_id: &str,
    question: &str,
    now_ms: u64,
) -> crate::Result<Option<Event>> {
    let mut last: Option<Event> = None;
    for item in store.scan_events(
        project_id,
        Some(session_id),
        None,
        Some(now_ms.saturating_add(1)),
    ) {
        let (_, event) = item?;
        let is_turn = matches!(
            event.kind,
            EventKind::UserMessage | EventKind::AssistantMessage
        );
        if is_turn && !event.text.trim().is_empty() && event.text.trim() != question.trim() {
            last = Some(event);
        }
    }
    Ok(last)
}

/// Appends `added` to `response` (dropping what it already holds), within the token
/// budget: the search's own results are cut from the end to make room. Then fills the
/// `stats` counts.
pub(crate) fn merge(response: &mut SearchResponse, added: Vec<SearchResult>, budget: usize) {
    let added: Vec<SearchResult> = added
        .into_iter()
        // The spec deduplicates by document: an event the search found as evidence of
        // another document is still added, as itself.
        .filter(|item| !response.results.iter().any(|r| r.doc_id == item.doc_id))
        .fold(Vec::new(), |mut kept, item| {
            if !kept.iter().any(|k: &SearchResult| k.doc_id == item.doc_id) {
                kept.push(item);
            }
            kept
        });
    let tokens = |result: &SearchResult| -> usize {
        result
            .evidence
            .iter()
            .map(|event| estimate_tokens(event.text.chars().count()))
            .sum()
    };
    let added_tokens: usize = added.iter().map(tokens).sum();
    let mut used: usize = response.results.iter().map(tokens).sum();
    while used + added_tokens > budget && !response.results.is_empty() {
        if let Some(dropped) = response.results.pop() {
            used -= tokens(&dropped);
        }
    }
    response.token_estimate = used + added_tokens;
    response.results.extend(added);
    let stats = &mut response.stats;
    stats.bm25_matches = 0;
    stats.vector_matches = 0;
    stats.both_matches = 0;
    stats.always_included = 0;
    for result in &response.results {
        if result.source == ResultSource::AlwaysInclude {
            stats.always_included += 1;
            continue;
        }
        match result.match_type.as_deref() {
            Some("both") => stats.both_matches += 1,
            Some("keyword") => stats.bm25_matches += 1,
            Some("semantic") => stats.vector_matches += 1,
            _ => {}
        }
    }
    stats.final_results = response.results.len();
}
