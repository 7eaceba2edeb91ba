//! Topic spans. A session's first substantive prose event opens its first span
//! ("session start"); an explicit transition at the start of a message ("let's move on
//! to", "next:", "back to", "switching to", "now let's", "another thing", "different
//! topic", "last thing") opens a new one; so does a user message after a pause of ten
//! minutes or more (not a reply) whose six or more salient terms barely meet the span's
//! vocabulary (its name, summary and latest ideas): at most 10 % shared, 20 % after a
//! three-hour pause, once the span has three ideas and 25 terms. With an embedding
//! model, such a message also drifts when it shares up to 30 % of its terms and its
//! cosine with the span (name, summary, latest ideas) stays under 0.2: a new subject
//! said in words the span happened to use too ("the login page" after an hour on the
//! login API's rate limit). Every later
//! event of the session extends the current span (`last_event_id`), so the span's end
//! is right at the end of every batch.
//!
//! A span's name is up to three salient names and words of its opening; its summary is
//! its first idea, then "— latest:" and the latest decision, conclusion or solution.

use foldhash::HashSet;
use std::sync::LazyLock;

use memory_types::Event;

use crate::change_set::{NewIdea, TopicChange, TopicUpdate};
use crate::extractor::{GraphError, GraphView};
use crate::heuristic::answers::Similarity;
use crate::heuristic::facts::{FactsCache, salient_terms};
use crate::heuristic::lexicon::lexicon_entry;
use crate::heuristic::mentions::mentions;
use crate::heuristic::pattern::Pattern;
use crate::heuristic::text::truncate_at_word;
use crate::model::{Intent, TopicSpan, span_id};

/// Marks the latest outcome in a span summary.
const LATEST: &str = " — latest: ";
/// Name of a span whose opening gave nothing to name it by.
const UNTITLED: &str = "untitled";
/// A user message within this long of the session's last event is a reply: it never
/// drifts.
const REPLY_MS: u64 = 10 * 60 * 1_000;
/// A user message sharing no more than this part of its terms with the span drifts.
const DRIFT_OVERLAP: f32 = 0.1;
/// After a pause this long, the drift threshold rises to [`DRIFT_OVERLAP_AFTER_PAUSE`].
const LONG_PAUSE_MS: u64 = 3 * 3_600 * 1_000;
const DRIFT_OVERLAP_AFTER_PAUSE: f32 = 0.2;
/// With an embedding model: a message sharing up to this part of its terms drifts when
/// its meaning is far from the span's ([`DRIFT_COSINE`]).
const EMBEDDED_DRIFT_OVERLAP: f32 = 0.3;
/// Cosine (all-MiniLM-L6-v2) under which a message is about something else than the
/// span: unrelated sentences of one project score 0–0.2, one subject 0.4 and more.
const DRIFT_COSINE: f32 = 0.2;

/// Words too vague to name a topic by.
const NAME_STOPS: &[&str] = &[
    "since",
    "night",
    "morning",
    "today",
    "yesterday",
    "week",
    "there",
    "here",
    "about",
    "some",
    "thing",
    "things",
    "stuff",
    "help",
    "figure",
    "going",
    "need",
    "want",
    "sure",
];

static TRANSITION: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"^(?:(?:ok(?:ay)?|so|alright|right|now|great|good|thanks|cool|done)[,.!]?\s+)?(let's move on to|moving on to|let's switch to|switching to|switching gears|next:|next up:?|next topic:?|back to|now let's|let's now|another thing|different topic|on a different note|unrelated:|new topic:?|let's talk about|one more thing|last thing:?|separately,|change of topic:?)",
    )
});

/// What a prose event tells the span machinery.
pub(crate) struct SpanInput<'a> {
    /// The event.
    pub event: &'a Event,
    /// Its prose (not skipped).
    pub text: &'a str,
    /// Whether a user wrote it.
    pub is_user: bool,
    /// Cue text of its first sentence.
    pub first_cue_text: &'a str,
    /// Salient terms of its sentences.
    pub terms: &'a [String],
    /// The ideas it gives.
    pub ideas: &'a [NewIdea],
    /// Its first sentence as content (a summary when it gives no idea).
    pub first_content: &'a str,
}

/// A span to open or extend.
pub(crate) enum SpanChange {
    /// A new span starts here.
    Open(TopicChange),
    /// The current span grows.
    Update(TopicUpdate),
}

/// The span change a substantive prose event implies.
pub(crate) fn plan(
    input: &SpanInput<'_>,
    view: &dyn GraphView,
    cache: &mut FactsCache,
    similarity_opt: Option<&Similarity>,
) -> Result<Option<SpanChange>, GraphError> {
    let event = input.event;
    let Some(span) = view.current_span(&event.project_id, &event.session_id)? else {
        return Ok(Some(open(input, input.text, "session start".to_owned())));
    };
    if event.timestamp_ms < span.last_ms || span.last_event_id == event.event_id {
        return Ok(None);
    }
    if event.timestamp_ms > span.first_ms {
        if let Some(found) = TRANSITION.captures(input.first_cue_text)
            && let Some(cue) = found.get(1)
        {
            let rest = &input.first_cue_text[cue.end()..];
            let about = if salient_terms(rest).is_empty() {
                input.text
            } else {
                rest
            };
            let reason = format!(
                "explicit transition: {}",
                cue.as_str().trim_end_matches([':', ','])
            );
            return Ok(Some(open(input, about, reason)));
        }
        if input.is_user
            && let Some(reason) = drifted(input, &span, view, (cache, similarity_opt))?
        {
            return Ok(Some(open(input, input.text, reason.to_owned())));
        }
    }
    let name = if span.name == UNTITLED && !input.ideas.is_empty() {
        name_from(input.text)
    } else {
        span.name.clone()
    };
    Ok(Some(SpanChange::Update(TopicUpdate {
        session_id: event.session_id.clone(),
        span_id: span.span_id.clone(),
        name,
        summary: fold_summary(&span.summary, input.ideas),
        last_event_id: Some(event.event_id.clone()),
    })))
}

/// The current span grows by a non-prose or skipped event.
pub(crate) fn extend(
    event: &Event,
    view: &dyn GraphView,
) -> Result<Option<TopicUpdate>, GraphError> {
    let Some(span) = view.current_span(&event.project_id, &event.session_id)? else {
        return Ok(None);
    };
    if event.timestamp_ms < span.last_ms || span.last_event_id == event.event_id {
        return Ok(None);
    }
    Ok(Some(TopicUpdate {
        session_id: event.session_id.clone(),
        span_id: span.span_id,
        name: span.name,
        summary: span.summary,
        last_event_id: Some(event.event_id.clone()),
    }))
}

fn open(input: &SpanInput<'_>, about: &str, reason: String) -> SpanChange {
    let summary = if input.ideas.is_empty() {
        truncate_at_word(input.first_content, 160)
    } else {
        fold_summary("", input.ideas)
    };
    SpanChange::Open(TopicChange {
        start_event_id: input.event.event_id.clone(),
        new_topic_name: name_from(about),
        reason,
        summary,
        last_event_id: Some(input.event.event_id.clone()),
    })
}

/// The span's summary after an event's ideas: the opening kept (the first idea when
/// there was none), the latest decision, conclusion or solution after [`LATEST`].
pub(crate) fn fold_summary(previous: &str, ideas: &[NewIdea]) -> String {
    let (opening, latest) = match previous.split_once(LATEST) {
        Some((opening, latest)) => (opening.to_owned(), latest.to_owned()),
        None => (previous.to_owned(), String::new()),
    };
    let opening = if opening.is_empty() {
        ideas
            .first()
            .map(|idea| truncate_at_word(&idea.content, 160))
            .unwrap_or_default()
    } else {
        opening
    };
    let latest = ideas
        .iter()
        .rev()
        .find(|idea| {
            matches!(
                idea.intent,
                Intent::Decision | Intent::Conclusion | Intent::Solution
            ) && truncate_at_word(&idea.content, 160) != opening
        })
        .map_or(latest, |idea| truncate_at_word(&idea.content, 200));
    if latest.is_empty() {
        opening
    } else {
        format!("{opening}{LATEST}{latest}")
    }
}

/// Up to three salient names and words of `text`, comma-separated.
pub(crate) fn name_from(text: &str) -> String {
    let head = truncate_at_word(text, 400);
    let mut parts: Vec<String> = Vec::new();
    for mention in mentions(&head).into_iter().take(2) {
        let name =
            lexicon_entry(&mention.name).map_or(mention.name.clone(), |entry| entry.name.clone());
        if !parts.iter().any(|part| part.eq_ignore_ascii_case(&name)) {
            parts.push(name);
        }
    }
    let mut stems: Vec<String> = parts.iter().flat_map(|part| salient_terms(part)).collect();
    for word in head.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')) {
        if parts.len() >= 3 {
            break;
        }
        let lower = word.to_lowercase();
        if lower.len() < 4
            || !lower.chars().all(|c| c.is_alphabetic() || c == '-')
            || ["ly", "ing", "ed"]
                .iter()
                .any(|suffix| lower.ends_with(suffix))
            || NAME_STOPS.contains(&lower.as_str())
        {
            continue;
        }
        let word_stems = salient_terms(&lower);
        let Some(word_stem) = word_stems.first() else {
            continue;
        };
        if stems.iter().any(|known| {
            known.starts_with(word_stem.as_str()) || word_stem.starts_with(known.as_str())
        }) {
            continue;
        }
        stems.extend(word_stems);
        parts.push(lower);
    }
    if parts.is_empty() {
        UNTITLED.to_owned()
    } else {
        truncate_at_word(&parts.join(", "), 80)
    }
}

/// Whether a user message drifts away from the span: the reason ("vocabulary drift",
/// "meaning drift" when the embedding model told), else `None`.
fn drifted(
    input: &SpanInput<'_>,
    span: &TopicSpan,
    view: &dyn GraphView,
    (cache, similarity_opt): (&mut FactsCache, Option<&Similarity>),
) -> Result<Option<&'static str>, GraphError> {
    let terms: HashSet<&str> = input.terms.iter().map(String::as_str).collect();
    if terms.len() < 6 {
        return Ok(None);
    }
    let event = input.event;
    let pause_ms = event.timestamp_ms.saturating_sub(span.last_ms);
    if pause_ms < REPLY_MS {
        return Ok(None);
    }
    let recent = view.recent_ideas(&event.project_id, Some(&event.session_id), None, 12)?;
    let in_span: Vec<_> = recent
        .iter()
        .filter(|idea| idea.valid_from_ms >= span.first_ms)
        .collect();
    if in_span.len() < 3 {
        return Ok(None);
    }
    let mut vocabulary: HashSet<String> = salient_terms(&span.name).into_iter().collect();
    vocabulary.extend(salient_terms(&span.summary));
    for idea in &in_span {
        vocabulary.extend(cache.get(idea).terms.iter().cloned());
    }
    if vocabulary.len() < 25 {
        return Ok(None);
    }
    let shared = terms
        .iter()
        .filter(|term| vocabulary.contains(**term))
        .count();
    let overlap = shared as f32 / terms.len() as f32;
    let threshold = if pause_ms >= LONG_PAUSE_MS {
        DRIFT_OVERLAP_AFTER_PAUSE
    } else {
        DRIFT_OVERLAP
    };
    if overlap <= threshold {
        return Ok(Some("vocabulary drift"));
    }
    let Some(similarity) = similarity_opt.filter(|_| overlap <= EMBEDDED_DRIFT_OVERLAP) else {
        return Ok(None);
    };
    let mut about = vec![span.name.as_str(), span.summary.as_str()];
    about.extend(in_span.iter().map(|idea| idea.content.as_str()));
    let far = similarity.cosine_of(input.text, &about.join(". ")) < DRIFT_COSINE;
    Ok(far.then_some("meaning drift"))
}

/// The id a span opened at `event` gets.
pub(crate) fn opened_span_id(event: &Event) -> String {
    span_id(&event.project_id, &event.session_id, &event.event_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idea(content: &str, intent: Intent) -> NewIdea {
        NewIdea {
            source_event_id: "e".into(),
            content: content.into(),
            intent,
            confidence: 0.8,
            importance: None,
            entities: vec![],
            related_to: vec![],
        }
    }

    #[test]
    fn summaries_keep_the_opening_and_the_latest_outcome() {
        let first = fold_summary(
            "",
            &[idea("Why is the consumer lagging?", Intent::Question)],
        );
        assert_eq!(first, "Why is the consumer lagging?");
        let second = fold_summary(
            &first,
            &[idea("The root cause is a sync commit.", Intent::Conclusion)],
        );
        assert_eq!(
            second,
            "Why is the consumer lagging? — latest: The root cause is a sync commit."
        );
        let third = fold_summary(
            &second,
            &[idea("We decided: async commits.", Intent::Decision)],
        );
        assert_eq!(
            third,
            "Why is the consumer lagging? — latest: We decided: async commits."
        );
        assert_eq!(fold_summary(&third, &[]), third);
    }

    #[test]
    fn names_prefer_entities_then_salient_words() {
        assert_eq!(
            name_from("We need to replace the cookie session auth with JWTs in src/auth."),
            "JWT, src/auth, replace"
        );
        assert_eq!(name_from("ok"), UNTITLED);
    }

    #[test]
    fn transitions_are_recognised_at_the_start_only() {
        assert!(TRANSITION.is_match("ok, let's move on to the rate limiter"));
        assert!(TRANSITION.is_match("last thing: expired refresh tokens will pile up."));
        assert!(!TRANSITION.is_match("agreed, we're switching to postcard."));
    }
}
