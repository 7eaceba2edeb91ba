//! Grip extraction: the salient verbatim excerpts of a closed segment.
//!
//! A bullet of the table of contents is a paraphrase; its grips are the exact words it
//! was written from, so an agent can check a summary against the conversation and
//! expand a grip into the events around it (ARCHITECTURE §1–2). This module picks those
//! excerpts, deterministically and offline, so that a rebuild from the event log
//! extracts the same grips and [`GripId::derive`](memory_toc::GripId::derive) gives them the
//! same ids.
//!
//! [`extract_grips`] works in four steps:
//! 1. **Split** each event's text into sentences: at `.`, `!` or `?` followed by
//!    whitespace, and at every newline. A dot without whitespace after it (`jwt.ts`,
//!    `1.2.3`, `0.5`, `Date.now()`) never ends a sentence, nor does the dot of a short
//!    abbreviation (`e.g.`, `vs.`). Code-ish lines (inside a ``` fence, indented by a
//!    tab or four spaces, or ending in `;`, `{` or `}`) stay whole. Leading whitespace
//!    and list or quote markers (`- `, `* `, `> `, `1) `…) are not part of a sentence.
//! 2. **Trim** a sentence longer than [`GripConfig::max_excerpt_chars`] to its
//!    beginning, cut on a word boundary, so that the excerpt stays a verbatim substring
//!    (no ellipsis is ever added).
//! 3. **Score** each excerpt by the [`Salience`] signals it shows, each with a weight
//!    (see the `*_WEIGHT` constants): what was decided, what broke and how it was fixed
//!    carries a session, so those signals weigh most; questions come next; identifiers,
//!    file paths, numbers, dates and rare terms make an excerpt findable but not
//!    important on their own.
//! 4. **Select** up to [`GripConfig::max_grips`] by salience (ties to the earlier
//!    position), skipping an excerpt whose stems overlap 70 % or more with one already
//!    chosen, and taking at most three from one event while other events have salient
//!    excerpts left; the grips are returned in event order.
//!
//! Invariant (a property test in `grips_tests.rs`): every [`GripCandidate::excerpt`] is
//! `&text[excerpt_start..excerpt_start + excerpt.len()]` of the event named by
//! `event_id_start`, and the same input always yields the same output.
//!
//! It is not:
//! - a summarizer: it picks excerpts, the rollup builder writes bullets from them;
//! - storage: a [`GripCandidate`] becomes a [`Grip`](memory_toc::Grip) once the caller adds
//!   the project, session, segment and id;
//! - multi-event: every grip covers one event for now (`event_id_start ==
//!   event_id_end`); the fields are there for grips that span a question and its answer.

use std::collections::{BTreeSet, HashMap};

use memory_text::query_terms;
use serde::{Deserialize, Serialize};

use crate::sentences::{sentence_ranges, trim_to_max_chars};
use crate::signals::{
    has_conclusion, has_date, has_decision, has_file_path, has_identifier, has_number_with_unit,
    has_problem, has_solution, is_question,
};

/// One event of a segment as the grip extractor sees it: only what scoring needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GripSourceEvent<'a> {
    /// The event's id, copied into the grips taken from it.
    pub event_id: &'a str,
    /// Epoch milliseconds of the event; the time its grips are cited with.
    pub timestamp_ms: u64,
    /// Who spoke: `user`, `assistant`, `tool` or `system`. A user's question gets a
    /// bonus (it is what the session was for); system text is discounted (it is
    /// boilerplate more often than not).
    pub role: &'a str,
    /// The event kind as stored (`user_message`, `tool_result`, …); carried for
    /// callers and future rules, not scored today.
    pub kind: &'a str,
    /// The event text the excerpts are cut from.
    pub text: &'a str,
}

/// A salient excerpt chosen by [`extract_grips`], before it is given an id and stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GripCandidate {
    /// The event the excerpt starts in.
    pub event_id_start: String,
    /// The event the excerpt ends in (inclusive); equal to `event_id_start` for now.
    pub event_id_end: String,
    /// Epoch milliseconds of the first event.
    pub timestamp_ms: u64,
    /// The excerpt: a verbatim substring of the first event's text.
    pub excerpt: String,
    /// Byte offset of the excerpt in the first event's text (a char boundary); with the
    /// event id it derives the grip id.
    pub excerpt_start: usize,
    /// The weighted sum of the signals (see the `*_WEIGHT` constants); higher is more
    /// salient. Only candidates above zero are returned.
    pub salience: f32,
    /// The signals found in the excerpt, each once, in declaration order of
    /// [`Salience`].
    pub signals: Vec<Salience>,
}

/// Why an excerpt is salient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Salience {
    /// Something was decided: "we decided", "let's go with", "switch to", …
    Decision,
    /// A question: the excerpt ends with `?`.
    Question,
    /// Something broke: "error", "fails", "panic", "timeout", a stack-trace line, …
    Problem,
    /// Something was fixed: "fixed", "the fix", "root cause", "works now", …
    Solution,
    /// Something was concluded: "so …", "turns out", "in summary", …
    Conclusion,
    /// Code names: `camelCase`, `snake_case`, `Foo::bar`, `call()`, backticked code.
    Identifier,
    /// File paths and globs: `src/auth/jwt.ts`, `./x`, `*.rs`, `Cargo.toml`.
    FilePath,
    /// Numbers with units (`15 minutes`, `30%`, `512 MB`) and versions (`1.2.3`).
    Number,
    /// Dates: `2026-01-30`, month and weekday names, "yesterday", "next week".
    Date,
    /// Terms that are rare in the corpus (or, without one, within the segment).
    RareTerm,
}

/// Limits of [`extract_grips`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GripConfig {
    /// At most this many grips per segment: enough to back a handful of bullets
    /// without quoting the whole conversation.
    pub max_grips: usize,
    /// Excerpts longer than this many characters are cut, on a word boundary, to their
    /// beginning: a grip is evidence for a reply, not the whole event.
    pub max_excerpt_chars: usize,
    /// Excerpts shorter than this many characters ("ok.", "Done!") are dropped unless
    /// they hold a decision or a question, which are meaningful even when short.
    pub min_excerpt_chars: usize,
}

impl Default for GripConfig {
    fn default() -> Self {
        GripConfig {
            max_grips: 8,
            max_excerpt_chars: 280,
            min_excerpt_chars: 20,
        }
    }
}

/// Weight of a [`Salience::Decision`]: decisions are what people come back for.
pub const DECISION_WEIGHT: f32 = 3.0;
/// Weight of a [`Salience::Solution`].
pub const SOLUTION_WEIGHT: f32 = 2.5;
/// Weight of a [`Salience::Problem`].
pub const PROBLEM_WEIGHT: f32 = 2.5;
/// Weight of a [`Salience::Conclusion`].
pub const CONCLUSION_WEIGHT: f32 = 2.0;
/// Weight of a [`Salience::Question`].
pub const QUESTION_WEIGHT: f32 = 1.5;
/// Added to [`QUESTION_WEIGHT`] when the user asks: the user's questions are the
/// session's purpose, the assistant's are often rhetorical.
pub const USER_QUESTION_BONUS: f32 = 1.0;
/// Weight of a [`Salience::Identifier`].
pub const IDENTIFIER_WEIGHT: f32 = 1.0;
/// Weight of a [`Salience::FilePath`].
pub const FILE_PATH_WEIGHT: f32 = 1.0;
/// Weight of a [`Salience::Number`].
pub const NUMBER_WEIGHT: f32 = 0.75;
/// Weight of a [`Salience::Date`].
pub const DATE_WEIGHT: f32 = 0.75;
/// Weight of a [`Salience::RareTerm`], multiplied by the rarity strength (0.5 to 1).
pub const RARE_TERM_WEIGHT: f32 = 1.0;
/// Rarity strength (mean normalized IDF of the two rarest terms) from which an excerpt
/// shows [`Salience::RareTerm`].
pub const RARE_TERM_THRESHOLD: f32 = 0.5;
/// Multiplier of the salience of `system` text, mostly instructions and boilerplate.
pub const SYSTEM_ROLE_FACTOR: f32 = 0.5;
/// Candidates whose stem sets overlap this much (shared stems over the smaller set)
/// with a chosen grip are duplicates.
pub const DUPLICATE_STEM_OVERLAP: f32 = 0.7;
/// Grips taken from one event while other events still have salient excerpts, so the
/// grips spread across the segment instead of quoting one long answer.
pub const PREFERRED_MAX_GRIPS_PER_EVENT: usize = 3;

/// Extracts the salient verbatim excerpts of one segment's events.
///
/// `events` are the segment's events in order. `corpus_document_frequency(stem)` tells
/// how many segments of the corpus contain a stem (0 when unknown), out of
/// `num_corpus_documents`; when `num_corpus_documents` is 0 rarity is measured within
/// the segment, each sentence a document. Returns at most `config.max_grips` grips in
/// event order, then by offset. Pure and deterministic: no I/O, no clock.
#[must_use]
pub fn extract_grips(
    events: &[GripSourceEvent<'_>],
    corpus_document_frequency: &dyn Fn(&str) -> u32,
    num_corpus_documents: u32,
    config: &GripConfig,
) -> Vec<GripCandidate> {
    if config.max_grips == 0 {
        return Vec::new();
    }
    let mut scored_candidates = Vec::new();
    for (event_index, event) in events.iter().enumerate() {
        for (sentence_start, sentence_end) in sentence_ranges(event.text) {
            let sentence = &event.text[sentence_start..sentence_end];
            let excerpt = trim_to_max_chars(sentence, config.max_excerpt_chars);
            if excerpt.is_empty() {
                continue;
            }
            scored_candidates.push(ScoredCandidate::new(event_index, sentence_start, excerpt));
        }
    }

    let rarity = RarityModel::new(
        &scored_candidates,
        corpus_document_frequency,
        num_corpus_documents,
    );
    for candidate in &mut scored_candidates {
        let role = events
            .get(candidate.event_index)
            .map_or("", |event| event.role);
        candidate.score(role, &rarity);
    }

    scored_candidates.retain(|candidate| {
        candidate.salience > 0.0
            && (candidate.excerpt.chars().count() >= config.min_excerpt_chars
                || candidate.signals.contains(&Salience::Decision)
                || candidate.signals.contains(&Salience::Question))
    });
    // Most salient first; ties to the earlier position, so selection is stable.
    scored_candidates.sort_by(|left, right| {
        right
            .salience
            .total_cmp(&left.salience)
            .then(left.event_index.cmp(&right.event_index))
            .then(left.excerpt_start.cmp(&right.excerpt_start))
    });

    let chosen_indexes = select(&scored_candidates, config.max_grips);
    let mut chosen: Vec<&ScoredCandidate> = chosen_indexes
        .iter()
        .filter_map(|&index| scored_candidates.get(index))
        .collect();
    chosen.sort_by_key(|candidate| (candidate.event_index, candidate.excerpt_start));
    chosen
        .into_iter()
        .filter_map(|candidate| {
            let event = events.get(candidate.event_index)?;
            Some(GripCandidate {
                event_id_start: event.event_id.to_owned(),
                event_id_end: event.event_id.to_owned(),
                timestamp_ms: event.timestamp_ms,
                excerpt: candidate.excerpt.clone(),
                excerpt_start: candidate.excerpt_start,
                salience: candidate.salience,
                signals: candidate.signals.clone(),
            })
        })
        .collect()
}

/// Greedy selection over candidates sorted by salience: skip duplicates, prefer at
/// most [`PREFERRED_MAX_GRIPS_PER_EVENT`] per event, and fill up from over-represented
/// events only when nothing else is left. Returns indexes into `sorted_candidates`.
fn select(sorted_candidates: &[ScoredCandidate], max_grips: usize) -> Vec<usize> {
    let mut chosen_indexes: Vec<usize> = Vec::new();
    let mut grips_per_event: HashMap<usize, usize> = HashMap::new();
    for enforce_event_cap in [true, false] {
        for (index, candidate) in sorted_candidates.iter().enumerate() {
            if chosen_indexes.len() >= max_grips {
                return chosen_indexes;
            }
            if chosen_indexes.contains(&index) {
                continue;
            }
            let event_count = grips_per_event
                .get(&candidate.event_index)
                .copied()
                .unwrap_or(0);
            if enforce_event_cap && event_count >= PREFERRED_MAX_GRIPS_PER_EVENT {
                continue;
            }
            let is_duplicate = chosen_indexes.iter().any(|&chosen_index| {
                sorted_candidates
                    .get(chosen_index)
                    .is_some_and(|chosen| is_near_duplicate(candidate, chosen))
            });
            if is_duplicate {
                continue;
            }
            chosen_indexes.push(index);
            grips_per_event.insert(candidate.event_index, event_count + 1);
        }
    }
    chosen_indexes
}

/// Whether two candidates say the same thing: their stem sets overlap by
/// [`DUPLICATE_STEM_OVERLAP`] or more of the smaller set, or, without stems, their
/// excerpts are equal ignoring case.
fn is_near_duplicate(candidate: &ScoredCandidate, chosen: &ScoredCandidate) -> bool {
    let smaller_len = candidate.stems.len().min(chosen.stems.len());
    if smaller_len == 0 {
        return candidate.excerpt.to_lowercase() == chosen.excerpt.to_lowercase();
    }
    let num_shared = candidate.stems.intersection(&chosen.stems).count();
    // Exact for the small integers involved.
    #[allow(clippy::cast_precision_loss)]
    let overlap = num_shared as f32 / smaller_len as f32;
    overlap >= DUPLICATE_STEM_OVERLAP
}

/// A sentence being scored.
#[derive(Debug)]
struct ScoredCandidate {
    event_index: usize,
    excerpt_start: usize,
    excerpt: String,
    /// Lowercase excerpt with typographic apostrophes made ASCII, for phrase matching.
    excerpt_lower: String,
    stems: BTreeSet<String>,
    salience: f32,
    signals: Vec<Salience>,
}

impl ScoredCandidate {
    fn new(event_index: usize, excerpt_start: usize, excerpt: &str) -> Self {
        ScoredCandidate {
            event_index,
            excerpt_start,
            excerpt: excerpt.to_owned(),
            excerpt_lower: excerpt
                .to_lowercase()
                .replace(['\u{2019}', '\u{2018}'], "'"),
            stems: query_terms(excerpt).into_iter().collect(),
            salience: 0.0,
            signals: Vec::new(),
        }
    }

    /// Finds the signals and sums their weights into `salience`.
    fn score(&mut self, role: &str, rarity: &RarityModel) {
        let lower = self.excerpt_lower.as_str();
        let mut signals = Vec::new();
        let mut salience = 0.0_f32;
        let mut add = |signal: Salience, weight: f32| {
            signals.push(signal);
            salience += weight;
        };
        if has_decision(lower) {
            add(Salience::Decision, DECISION_WEIGHT);
        }
        if is_question(&self.excerpt) {
            let bonus = if role == "user" {
                USER_QUESTION_BONUS
            } else {
                0.0
            };
            add(Salience::Question, QUESTION_WEIGHT + bonus);
        }
        if has_problem(lower) {
            add(Salience::Problem, PROBLEM_WEIGHT);
        }
        if has_solution(lower) {
            add(Salience::Solution, SOLUTION_WEIGHT);
        }
        if has_conclusion(lower) {
            add(Salience::Conclusion, CONCLUSION_WEIGHT);
        }
        if has_identifier(&self.excerpt) {
            add(Salience::Identifier, IDENTIFIER_WEIGHT);
        }
        if has_file_path(&self.excerpt) {
            add(Salience::FilePath, FILE_PATH_WEIGHT);
        }
        if has_number_with_unit(lower) {
            add(Salience::Number, NUMBER_WEIGHT);
        }
        if has_date(lower) {
            add(Salience::Date, DATE_WEIGHT);
        }
        let rarity_strength = rarity.strength(&self.stems);
        if rarity_strength >= RARE_TERM_THRESHOLD {
            add(Salience::RareTerm, RARE_TERM_WEIGHT * rarity_strength);
        }
        if role == "system" {
            salience *= SYSTEM_ROLE_FACTOR;
        }
        self.signals = signals;
        self.salience = salience;
    }
}

/// How rare a stem is: a normalized inverse document frequency in `[0, 1]`, from the
/// corpus when there is one, from the segment's sentences otherwise.
struct RarityModel<'a> {
    corpus_document_frequency: &'a dyn Fn(&str) -> u32,
    num_corpus_documents: u32,
    /// Sentences of the segment holding each stem; used when there is no corpus.
    segment_document_frequency: HashMap<String, u32>,
    num_segment_documents: u32,
}

impl<'a> RarityModel<'a> {
    fn new(
        candidates: &[ScoredCandidate],
        corpus_document_frequency: &'a dyn Fn(&str) -> u32,
        num_corpus_documents: u32,
    ) -> Self {
        let mut segment_document_frequency: HashMap<String, u32> = HashMap::new();
        if num_corpus_documents == 0 {
            for candidate in candidates {
                for stem in &candidate.stems {
                    *segment_document_frequency.entry(stem.clone()).or_insert(0) += 1;
                }
            }
        }
        RarityModel {
            corpus_document_frequency,
            num_corpus_documents,
            segment_document_frequency,
            num_segment_documents: u32::try_from(candidates.len()).unwrap_or(u32::MAX),
        }
    }

    /// `ln((N + 1) / (df + 1)) / ln(N + 1)`: 1 for a stem no document holds, 0 for one
    /// every document holds.
    fn rarity(&self, stem: &str) -> f32 {
        let (num_documents, document_frequency) = if self.num_corpus_documents > 0 {
            (
                self.num_corpus_documents,
                (self.corpus_document_frequency)(stem),
            )
        } else {
            (
                self.num_segment_documents,
                self.segment_document_frequency
                    .get(stem)
                    .copied()
                    .unwrap_or(0),
            )
        };
        if num_documents == 0 {
            return 0.0;
        }
        let num_documents = f64::from(num_documents);
        let document_frequency = f64::from(document_frequency).min(num_documents);
        let normalized =
            ((num_documents + 1.0) / (document_frequency + 1.0)).ln() / (num_documents + 1.0).ln();
        // In [0, 1] by construction; the cast only drops precision.
        #[allow(clippy::cast_possible_truncation)]
        let normalized_f32 = normalized.clamp(0.0, 1.0) as f32;
        normalized_f32
    }

    /// The mean rarity of the two rarest content stems (one rare word among common
    /// ones counts half), 0 when the excerpt has none.
    fn strength(&self, stems: &BTreeSet<String>) -> f32 {
        let mut rarities: Vec<f32> = stems
            .iter()
            .filter(|stem| is_content_stem(stem))
            .map(|stem| self.rarity(stem))
            .collect();
        rarities.sort_by(|left, right| right.total_cmp(left));
        rarities.iter().take(2).sum::<f32>() / 2.0
    }
}

/// Stems that can be topical terms: at least three characters, at least one letter
/// (bare numbers are rare everywhere and mean little on their own).
fn is_content_stem(stem: &str) -> bool {
    stem.chars().count() >= 3 && stem.chars().any(char::is_alphabetic)
}

#[cfg(test)]
#[path = "grips_tests.rs"]
mod tests;
