//! Grip extraction: the salient verbatim excerpts of a closed segment.
//!
//! A bullet of the table of contents is a paraphrase; its grips are the exact words it
//! was written from, so an agent can check a summary against the conversation and
//! expand a grip into the events around it (ARCHITECTURE §1–2). This module picks those
//! excerpts, deterministically and offline, so that a rebuild from the event log
//! extracts the same grips and [`GripId::derive`](crate::GripId::derive) gives them the
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
//! Invariant (a property test below): every [`GripCandidate::excerpt`] is
//! `&text[excerpt_start..excerpt_start + excerpt.len()]` of the event named by
//! `event_id_start`, and the same input always yields the same output.
//!
//! It is not:
//! - a summarizer: it picks excerpts, the rollup builder writes bullets from them;
//! - storage: a [`GripCandidate`] becomes a [`Grip`](crate::Grip) once the caller adds
//!   the project, session, segment and id;
//! - multi-event: every grip covers one event for now (`event_id_start ==
//!   event_id_end`); the fields are there for grips that span a question and its answer.

use std::collections::{BTreeSet, HashMap};

use memory_text::{query_terms, truncate_chars};
use serde::{Deserialize, Serialize};

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

// ---------------------------------------------------------------------------------
// Sentence splitting

/// Dotted abbreviations (lowercase, without their final dot) after which a `.` does
/// not end a sentence.
const ABBREVIATIONS: &[&str] = &["cf", "e.g", "eg", "etc", "i.e", "ie", "vs", "mr", "dr"];

/// The byte ranges of the sentences of `text`, in order, each trimmed of surrounding
/// whitespace and leading list markers, never empty.
pub(crate) fn sentence_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut inside_code_fence = false;
    let mut line_start = 0;
    for line in text.split('\n') {
        let line_end = line_start + line.len();
        let is_fence_marker = line.trim_start().starts_with("```");
        if is_fence_marker {
            inside_code_fence = !inside_code_fence;
        } else if inside_code_fence || is_code_like_line(line) {
            push_trimmed(text, line_start, line_end, &mut ranges);
        } else {
            split_prose_line(text, line_start, line_end, &mut ranges);
        }
        line_start = line_end + 1;
    }
    ranges
}

/// Lines that are code rather than prose, kept whole: indented blocks and lines ending
/// like statements or blocks.
fn is_code_like_line(line: &str) -> bool {
    let trimmed_end = line.trim_end();
    line.starts_with('\t')
        || line.starts_with("    ")
        || trimmed_end.ends_with(';')
        || trimmed_end.ends_with('{')
        || trimmed_end.ends_with('}')
}

/// Splits one prose line `text[line_start..line_end]` at sentence ends.
fn split_prose_line(
    text: &str,
    line_start: usize,
    line_end: usize,
    ranges: &mut Vec<(usize, usize)>,
) {
    let line = &text[line_start..line_end];
    let mut sentence_start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((index, ch)) = chars.next() {
        if !matches!(ch, '.' | '!' | '?') {
            continue;
        }
        // The sentence ends after a run of end marks and closing quotes or brackets.
        let mut end = index + ch.len_utf8();
        while let Some(&(next_index, next_ch)) = chars.peek() {
            if matches!(
                next_ch,
                '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '\u{201d}' | '\u{2019}'
            ) {
                end = next_index + next_ch.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let followed_by_whitespace = line[end..].chars().next().is_some_and(char::is_whitespace);
        if !followed_by_whitespace {
            continue;
        }
        if ch == '.' && ends_with_abbreviation(&line[sentence_start..index]) {
            continue;
        }
        push_trimmed(text, line_start + sentence_start, line_start + end, ranges);
        sentence_start = end;
    }
    push_trimmed(text, line_start + sentence_start, line_end, ranges);
}

/// Whether `before_dot` ends with one of the [`ABBREVIATIONS`] as a whole word.
fn ends_with_abbreviation(before_dot: &str) -> bool {
    let last_word = before_dot
        .rsplit(|ch: char| ch.is_whitespace() || ch == '(')
        .next()
        .unwrap_or("");
    ABBREVIATIONS
        .iter()
        .any(|abbreviation| last_word.eq_ignore_ascii_case(abbreviation))
}

/// Pushes `text[start..end]` without surrounding whitespace and leading list or quote
/// markers, unless nothing is left.
fn push_trimmed(text: &str, start: usize, end: usize, ranges: &mut Vec<(usize, usize)>) {
    let Some(slice) = text.get(start..end) else {
        return;
    };
    let mut trimmed = slice.trim();
    loop {
        let without_marker = strip_list_marker(trimmed).trim_start();
        if without_marker.len() == trimmed.len() {
            break;
        }
        trimmed = without_marker;
    }
    if trimmed.is_empty() {
        return;
    }
    let trimmed_start = start + (trimmed.as_ptr() as usize - slice.as_ptr() as usize);
    ranges.push((trimmed_start, trimmed_start + trimmed.len()));
}

/// `text` without a leading `- `, `* `, `+ `, `> `, `#`… heading marks or `12. `/`3) `
/// numbering (the marker must be followed by a space); `text` itself otherwise.
fn strip_list_marker(text: &str) -> &str {
    for marker in ["- ", "* ", "+ ", "> ", "• "] {
        if let Some(rest) = text.strip_prefix(marker) {
            return rest;
        }
    }
    let hashes = text.bytes().take_while(|&byte| byte == b'#').count();
    if hashes > 0 && text[hashes..].starts_with(' ') {
        return &text[hashes..];
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &text[digits..];
        if rest.starts_with(". ") || rest.starts_with(") ") {
            return &rest[1..];
        }
    }
    text
}

/// The beginning of `sentence`, at most `max_chars` characters, cut after the last
/// whole word when it must be cut, without trailing whitespace. A single word longer
/// than the limit is cut at a char boundary.
pub(crate) fn trim_to_max_chars(sentence: &str, max_chars: usize) -> &str {
    let prefix = truncate_chars(sentence, max_chars);
    if prefix.len() == sentence.len() {
        return sentence;
    }
    let cut = prefix.len();
    let next_is_whitespace = sentence[cut..]
        .chars()
        .next()
        .is_some_and(char::is_whitespace);
    if next_is_whitespace {
        return prefix.trim_end();
    }
    match prefix.rfind(char::is_whitespace) {
        Some(space) if !prefix[..space].trim_end().is_empty() => prefix[..space].trim_end(),
        _ => prefix,
    }
}

// ---------------------------------------------------------------------------------
// Signals. Phrase signals match lowercase text on word boundaries.

/// Whether `needle` occurs in `haystack` starting at a word boundary and, unless
/// `allow_suffix`, ending at one (`allow_suffix` lets "error" match "errors").
fn contains_term(haystack: &str, needle: &str, allow_suffix: bool) -> bool {
    haystack.match_indices(needle).any(|(start, matched)| {
        let end = start + matched.len();
        let starts_word = haystack[..start]
            .chars()
            .next_back()
            .is_none_or(|before| !is_word_char(before));
        let ends_word = allow_suffix
            || needle
                .chars()
                .next_back()
                .is_some_and(|last| !is_word_char(last))
            || haystack[end..]
                .chars()
                .next()
                .is_none_or(|after| !is_word_char(after));
        starts_word && ends_word
    })
}

fn is_word_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

fn contains_any_term(haystack: &str, needles: &[&str], allow_suffix: bool) -> bool {
    needles
        .iter()
        .any(|needle| contains_term(haystack, needle, allow_suffix))
}

pub(crate) const DECISION_PHRASES: &[&str] = &[
    "we decided",
    "i decided",
    "decided to",
    "decided on",
    "let's go with",
    "lets go with",
    "let's use",
    "we'll use",
    "we will use",
    "we'll go with",
    "going with",
    "agreed",
    "decision:",
    "the decision is",
    "switch to",
    "switching to",
    "instead of",
    "we chose",
    "opted for",
];

pub(crate) fn has_decision(lower: &str) -> bool {
    contains_any_term(lower, DECISION_PHRASES, false)
}

/// Whether the excerpt ends with a question mark, before closing quotes or brackets.
pub(crate) fn is_question(excerpt: &str) -> bool {
    excerpt
        .trim_end()
        .trim_end_matches(['"', '\'', ')', ']', '\u{201d}', '\u{2019}', '`'])
        .ends_with(['?', '\u{ff1f}'])
}

/// Problem words, matched as word prefixes ("error" matches "errors", "fail" matches
/// "failing" and "failure").
const PROBLEM_PREFIXES: &[&str] = &[
    "error",
    "fail",
    "bug",
    "panic",
    "exception",
    "broken",
    "breaks",
    "flaky",
    "leak",
    "timeout",
    "timed out",
    "crash",
    "regression",
    "traceback",
    "segfault",
    "deadlock",
    "not working",
    "doesn't work",
    "does not work",
];

fn has_problem(lower: &str) -> bool {
    contains_any_term(lower, PROBLEM_PREFIXES, true) || is_stack_trace_line(lower)
}

/// Lines of a stack trace: `at foo (file:1:2)`, `File "x.py", line 3`, Rust's
/// `panicked at` and backtrace frames.
fn is_stack_trace_line(lower: &str) -> bool {
    let trimmed = lower.trim_start();
    (trimmed.starts_with("at ") && (trimmed.contains('(') || trimmed.contains(':')))
        || (trimmed.starts_with("file \"") && trimmed.contains(", line "))
        || trimmed.contains("stack backtrace")
        || trimmed.contains("panicked at")
}

pub(crate) const SOLUTION_PHRASES: &[&str] = &[
    "fixed",
    "fixes",
    "the fix",
    "fix is",
    "fix was",
    "resolved",
    "resolves",
    "works now",
    "working now",
    "passes now",
    "pass now",
    "solution",
    "solved",
    "root cause",
    "the problem was",
    "the issue was",
    "workaround",
];

pub(crate) fn has_solution(lower: &str) -> bool {
    contains_any_term(lower, SOLUTION_PHRASES, false)
}

const CONCLUSION_PHRASES: &[&str] = &[
    "in summary",
    "to summarize",
    "turns out",
    "turned out",
    "the answer is",
    "conclusion",
    "bottom line",
    "that means",
    "which means",
];

pub(crate) fn has_conclusion(lower: &str) -> bool {
    lower.starts_with("so ")
        || lower.starts_with("so,")
        || lower.contains(", so ")
        || contains_any_term(lower, CONCLUSION_PHRASES, false)
}

/// Splits on whitespace and strips surrounding punctuation that is not part of a name.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace().map(|word| {
        word.trim_start_matches(['(', '[', '{', '<', '"', '\'', '`', '\u{201c}', '\u{2018}'])
            .trim_end_matches([
                ')', ']', '}', '>', '"', '\'', '`', '.', ',', ';', ':', '!', '?', '\u{201d}',
                '\u{2019}',
            ])
    })
}

fn has_identifier(excerpt: &str) -> bool {
    let has_backticked_code = excerpt
        .split('`')
        .nth(1)
        .is_some_and(|inside| !inside.trim().is_empty())
        && excerpt.matches('`').count() >= 2;
    has_backticked_code
        || excerpt.split_whitespace().any(is_call_like)
        || words(excerpt).any(is_identifier_word)
}

/// `foo()`, `foo(bar)`: an opening parenthesis right after a name.
fn is_call_like(raw_word: &str) -> bool {
    raw_word.find('(').is_some_and(|open| {
        open > 0
            && raw_word[..open]
                .chars()
                .next_back()
                .is_some_and(|before| before.is_ascii_alphanumeric() || before == '_')
            && raw_word[open..].contains(')')
    })
}

/// `camelCase`, `PascalCase`, `snake_case`, `Foo::bar`.
fn is_identifier_word(word: &str) -> bool {
    if let Some(separator) = word.find("::") {
        let before_ok = word[..separator]
            .chars()
            .next_back()
            .is_some_and(|ch| ch.is_ascii_alphanumeric());
        let after_ok = word[separator + 2..]
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if before_ok && after_ok {
            return true;
        }
    }
    let is_code_word = !word.is_empty()
        && word
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && word.chars().any(|ch| ch.is_ascii_alphabetic());
    if !is_code_word {
        return false;
    }
    let bytes = word.as_bytes();
    let is_snake_case = bytes.windows(3).any(|window| {
        window[0].is_ascii_alphanumeric() && window[1] == b'_' && window[2].is_ascii_alphanumeric()
    });
    let is_camel_case = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    is_snake_case || is_camel_case
}

/// Extensions that make a bare `name.ext` a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cs", "css", "go", "h", "hpp", "html", "java", "js", "json", "jsx", "kt",
    "lock", "log", "md", "mjs", "py", "rb", "rs", "sh", "sql", "swift", "toml", "ts", "tsx", "txt",
    "yaml", "yml",
];

fn has_file_path(excerpt: &str) -> bool {
    words(excerpt).any(is_file_path_word)
}

fn is_file_path_word(word: &str) -> bool {
    if word.contains("://") || !word.chars().any(char::is_alphabetic) {
        return false;
    }
    if let Some(glob_extension) = word.strip_prefix("*.") {
        return !glob_extension.is_empty()
            && glob_extension.chars().all(|ch| ch.is_ascii_alphanumeric());
    }
    if ["./", "../", "~/"]
        .iter()
        .any(|prefix| word.len() > prefix.len() && word.starts_with(prefix))
    {
        return true;
    }
    let path = strip_line_suffix(word);
    let last_segment = path.rsplit('/').next().unwrap_or(path);
    let has_extension = last_segment
        .rsplit_once('.')
        .is_some_and(|(stem, extension)| {
            !stem.is_empty()
                && (1..=5).contains(&extension.len())
                && extension.chars().all(|ch| ch.is_ascii_alphanumeric())
                && extension.chars().any(|ch| ch.is_ascii_alphabetic())
        });
    if path.contains('/') {
        let segments: Vec<&str> = path.split('/').collect();
        let all_segments_named = segments.iter().all(|segment| {
            segment.is_empty()
                || segment
                    .chars()
                    .all(|ch| ch.is_alphanumeric() || matches!(ch, '_' | '-' | '.' | '@' | '*'))
        });
        return all_segments_named && (has_extension || segments.len() >= 3);
    }
    has_extension
        && last_segment
            .rsplit_once('.')
            .is_some_and(|(_, extension)| FILE_EXTENSIONS.contains(&extension))
}

/// `src/a.rs:42:13` → `src/a.rs`: compiler and stack-trace locations.
fn strip_line_suffix(word: &str) -> &str {
    let mut path = word;
    for _ in 0..2 {
        if let Some((before, after)) = path.rsplit_once(':')
            && !after.is_empty()
            && after.bytes().all(|byte| byte.is_ascii_digit())
        {
            path = before;
        }
    }
    path
}

/// Units that make a number salient ("15 minutes", "512 mb"), lowercase.
const NUMBER_UNITS: &[&str] = &[
    "attempts", "b", "bytes", "d", "day", "days", "events", "gb", "gib", "h", "hour", "hours",
    "hr", "hrs", "k", "kb", "kib", "lines", "m", "mb", "mib", "min", "mins", "minute", "minutes",
    "month", "months", "ms", "ns", "percent", "px", "qps", "requests", "retries", "rps", "s",
    "sec", "second", "seconds", "secs", "tb", "times", "tokens", "us", "users", "week", "weeks",
    "x", "year", "years", "µs",
];

/// Numbers followed by a unit or `%` (`15 minutes`, `30%`, `2.5s`), and versions with
/// two dots (`1.2.3`).
fn has_number_with_unit(lower: &str) -> bool {
    let mut previous_char: Option<char> = None;
    let mut chars = lower.char_indices().peekable();
    while let Some((start, ch)) = chars.next() {
        let starts_number = ch.is_ascii_digit()
            && previous_char.is_none_or(|before| !before.is_alphanumeric() && before != '.');
        previous_char = Some(ch);
        if !starts_number {
            continue;
        }
        let mut end = start + ch.len_utf8();
        let mut num_dots = 0;
        while let Some(&(index, next)) = chars.peek() {
            let continues = next.is_ascii_digit()
                || (matches!(next, '.' | ',')
                    && lower[index + 1..]
                        .chars()
                        .next()
                        .is_some_and(|after| after.is_ascii_digit()));
            if !continues {
                break;
            }
            if next == '.' {
                num_dots += 1;
            }
            end = index + next.len_utf8();
            previous_char = Some(next);
            chars.next();
        }
        if num_dots >= 2 {
            return true;
        }
        let after_number = &lower[end..];
        let unit_text = after_number.strip_prefix(' ').unwrap_or(after_number);
        if unit_text.starts_with('%') {
            return true;
        }
        let unit: String = unit_text
            .chars()
            .take_while(|ch| ch.is_alphabetic())
            .collect();
        if !unit.is_empty() && NUMBER_UNITS.contains(&unit.as_str()) {
            return true;
        }
    }
    false
}

const DATE_WORDS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "today",
    "tomorrow",
    "last week",
    "next week",
    "last month",
    "next month",
    "last year",
    "next year",
];

/// ISO dates, month and weekday names (`may` only before a day number), and relative
/// days and periods.
fn has_date(lower: &str) -> bool {
    has_iso_date(lower)
        || contains_any_term(lower, DATE_WORDS, false)
        || lower.match_indices("may ").any(|(start, matched)| {
            let starts_word = lower[..start]
                .chars()
                .next_back()
                .is_none_or(|before| !is_word_char(before));
            starts_word
                && lower[start + matched.len()..]
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_digit())
        })
}

/// `YYYY-MM-DD` anywhere.
fn has_iso_date(lower: &str) -> bool {
    lower.as_bytes().windows(10).any(|window| {
        window[..4].iter().all(u8::is_ascii_digit)
            && window[4] == b'-'
            && window[5..7].iter().all(u8::is_ascii_digit)
            && window[7] == b'-'
            && window[8..].iter().all(u8::is_ascii_digit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event<'a>(event_id: &'a str, role: &'a str, text: &'a str) -> GripSourceEvent<'a> {
        GripSourceEvent {
            event_id,
            timestamp_ms: 1_769_767_200_000,
            role,
            kind: "message",
            text,
        }
    }

    fn no_corpus(_: &str) -> u32 {
        0
    }

    fn extract(events: &[GripSourceEvent<'_>]) -> Vec<GripCandidate> {
        extract_grips(events, &no_corpus, 0, &GripConfig::default())
    }

    fn excerpts(grips: &[GripCandidate]) -> Vec<&str> {
        grips.iter().map(|grip| grip.excerpt.as_str()).collect()
    }

    fn assert_verbatim(events: &[GripSourceEvent<'_>], grips: &[GripCandidate]) {
        for grip in grips {
            let source = events
                .iter()
                .find(|event| event.event_id == grip.event_id_start)
                .expect("grip names an input event");
            assert_eq!(grip.event_id_start, grip.event_id_end);
            assert_eq!(grip.timestamp_ms, source.timestamp_ms);
            assert!(source.text.is_char_boundary(grip.excerpt_start));
            assert_eq!(
                source
                    .text
                    .get(grip.excerpt_start..grip.excerpt_start + grip.excerpt.len()),
                Some(grip.excerpt.as_str())
            );
        }
    }

    fn coding_session() -> Vec<GripSourceEvent<'static>> {
        vec![
            event(
                "e1",
                "user",
                "The login tests started failing after the refresh change. Can you look at src/auth/jwt.ts?",
            ),
            event(
                "e2",
                "tool",
                "FAIL tests/auth.test.ts\n  refresh rejects expired tokens\n    Error: TokenExpiredError: jwt expired at 2026-01-30T10:00:00Z\n      at getUserToken (src/auth/jwt.ts:42:13)",
            ),
            event(
                "e3",
                "assistant",
                "The root cause is that getUserToken reads the expiry in seconds but compares it with Date.now() in milliseconds. I fixed it in src/auth/jwt.ts by converting exp to milliseconds. The tests pass now.",
            ),
            event(
                "e4",
                "user",
                "Should we also shorten the access token lifetime?",
            ),
            event(
                "e5",
                "assistant",
                "Good point. We decided to set the JWT access token expiry to 15 minutes and keep refresh tokens for 7 days. Ok.",
            ),
        ]
    }

    #[test]
    fn coding_session_yields_decision_error_fix_and_question() {
        let events = coding_session();
        let grips = extract(&events);
        assert_verbatim(&events, &grips);
        let texts = excerpts(&grips);
        for expected in [
            "We decided to set the JWT access token expiry to 15 minutes and keep refresh tokens for 7 days.",
            "Error: TokenExpiredError: jwt expired at 2026-01-30T10:00:00Z",
            "I fixed it in src/auth/jwt.ts by converting exp to milliseconds.",
            "Should we also shorten the access token lifetime?",
        ] {
            assert!(texts.contains(&expected), "{expected:?} not in {texts:#?}");
        }
        let decision = grips
            .iter()
            .find(|grip| grip.excerpt.starts_with("We decided"))
            .expect("decision grip");
        assert_eq!(decision.event_id_start, "e5");
        assert!(decision.signals.contains(&Salience::Decision));
        assert!(decision.signals.contains(&Salience::Number));
        let fix = grips
            .iter()
            .find(|grip| grip.excerpt.starts_with("I fixed"))
            .expect("fix grip");
        assert!(fix.signals.contains(&Salience::Solution));
        assert!(fix.signals.contains(&Salience::FilePath));
        let root_cause = grips
            .iter()
            .find(|grip| grip.excerpt.starts_with("The root cause"))
            .expect("root cause grip");
        assert!(root_cause.signals.contains(&Salience::Identifier));
        // Short filler is never a grip.
        assert!(!texts.contains(&"Ok."));
        assert!(!texts.contains(&"Good point."));
        // Event order, then offset.
        let positions: Vec<(usize, usize)> = grips
            .iter()
            .map(|grip| {
                let event_index = events
                    .iter()
                    .position(|event| event.event_id == grip.event_id_start)
                    .expect("known event");
                (event_index, grip.excerpt_start)
            })
            .collect();
        let mut sorted_positions = positions.clone();
        sorted_positions.sort_unstable();
        assert_eq!(positions, sorted_positions);
    }

    #[test]
    fn user_question_is_kept_even_when_short() {
        let events = [
            event("e1", "user", "Why Redis?"),
            event("e2", "assistant", "It keeps the session cache in memory."),
        ];
        let grips = extract(&events);
        assert_eq!(excerpts(&grips)[0], "Why Redis?");
        assert!(grips[0].signals.contains(&Salience::Question));
        // The same question from the assistant scores lower.
        let assistant_question = [event("e1", "assistant", "Why Redis?")];
        let assistant_grips = extract(&assistant_question);
        assert!(assistant_grips[0].salience < grips[0].salience);
    }

    #[test]
    fn duplicates_collapse_to_the_first() {
        let events = [
            event(
                "e1",
                "assistant",
                "We decided to use Redis for the session cache.",
            ),
            event(
                "e2",
                "user",
                "Agreed, we decided to use Redis for the session cache!",
            ),
            event(
                "e3",
                "assistant",
                "The build fails with a linker error on macOS.",
            ),
        ];
        let grips = extract(&events);
        let texts = excerpts(&grips);
        assert_eq!(
            texts,
            [
                "We decided to use Redis for the session cache.",
                "The build fails with a linker error on macOS."
            ]
        );
    }

    #[test]
    fn max_grips_is_respected_and_spread_across_events() {
        let many_decisions: String = (0..20)
            .map(|index| format!("We decided to use backend{index} for shard {index}x. "))
            .collect();
        let events = [
            event("e1", "assistant", &many_decisions),
            event("e2", "user", "The deploy fails with a timeout error."),
        ];
        for max_grips in [0, 1, 3, 5] {
            let config = GripConfig {
                max_grips,
                ..GripConfig::default()
            };
            let grips = extract_grips(&events, &no_corpus, 0, &config);
            assert!(grips.len() <= max_grips);
            assert_verbatim(&events, &grips);
        }
        let config = GripConfig {
            max_grips: 4,
            ..GripConfig::default()
        };
        let grips = extract_grips(&events, &no_corpus, 0, &config);
        // Three from the long event, then the other event, although every decision
        // outscores the problem.
        assert_eq!(grips.len(), 4);
        assert_eq!(
            grips
                .iter()
                .filter(|grip| grip.event_id_start == "e1")
                .count(),
            3
        );
        assert_eq!(grips[3].event_id_start, "e2");
        // With room to spare, the long event fills up past three.
        let grips = extract_grips(&events, &no_corpus, 0, &GripConfig::default());
        assert_eq!(grips.len(), 8);
    }

    #[test]
    fn empty_input_yields_nothing() {
        assert!(extract(&[]).is_empty());
        assert!(extract(&[event("e1", "user", "")]).is_empty());
        assert!(extract(&[event("e1", "user", " \n\n  ")]).is_empty());
    }

    #[test]
    fn sentences_do_not_split_inside_paths_versions_or_decimals() {
        let text = "Upgrade to tokio 1.2.3 in crates/toc/Cargo.toml. The ratio is 0.5 now! Use Date.now() e.g. here.\nnext line";
        let sentences: Vec<&str> = sentence_ranges(text)
            .into_iter()
            .map(|(start, end)| &text[start..end])
            .collect();
        assert_eq!(
            sentences,
            [
                "Upgrade to tokio 1.2.3 in crates/toc/Cargo.toml.",
                "The ratio is 0.5 now!",
                "Use Date.now() e.g. here.",
                "next line"
            ]
        );
    }

    #[test]
    fn code_lines_and_list_markers() {
        let text = "```rust\nlet x = a. b; let y = 2. z;\n```\n- First point. Second point.\n    indented. code here";
        let sentences: Vec<&str> = sentence_ranges(text)
            .into_iter()
            .map(|(start, end)| &text[start..end])
            .collect();
        assert_eq!(
            sentences,
            [
                "let x = a. b; let y = 2. z;",
                "First point.",
                "Second point.",
                "indented. code here"
            ]
        );
    }

    #[test]
    fn long_excerpts_are_cut_on_a_word_boundary() {
        assert_eq!(trim_to_max_chars("alpha beta gamma", 8), "alpha");
        assert_eq!(trim_to_max_chars("alpha beta gamma", 10), "alpha beta");
        assert_eq!(trim_to_max_chars("alpha beta gamma", 11), "alpha beta");
        assert_eq!(trim_to_max_chars("alpha beta", 50), "alpha beta");
        assert_eq!(trim_to_max_chars("ééééé", 3), "ééé");
        assert_eq!(trim_to_max_chars("abc", 0), "");
        let long = format!("We decided to {}", "retry ".repeat(100));
        let grips = extract(&[event("e1", "user", &long)]);
        assert!(grips[0].excerpt.chars().count() <= 280);
        assert!(grips[0].excerpt.ends_with("retry"));
    }

    #[test]
    fn signal_detectors() {
        assert!(is_identifier_word("getUserToken"));
        assert!(is_identifier_word("snake_case_name"));
        assert!(is_identifier_word("Foo::bar"));
        assert!(!is_identifier_word("Hello"));
        assert!(!is_identifier_word("__"));
        assert!(has_identifier("call `x + 1` here"));
        assert!(has_identifier("then run refresh() again"));
        assert!(!has_identifier("a plain (parenthetical) sentence"));
        for path in [
            "src/auth/jwt.ts",
            "./x",
            "*.rs",
            "Cargo.toml",
            "(src/a.rs:42:13)",
        ] {
            assert!(has_file_path(path), "{path}");
        }
        for not_path in [
            "and/or",
            "https://example.com/a.html",
            "e.g.",
            "1/2/3",
            "done.",
        ] {
            assert!(!has_file_path(not_path), "{not_path}");
        }
        for number in ["15 minutes", "30%", "2.5s", "512 mb", "tokio 1.2.3"] {
            assert!(has_number_with_unit(number), "{number}");
        }
        for not_number in ["sha256 hash", "v2 api", "line 42", "0.5"] {
            assert!(!has_number_with_unit(not_number), "{not_number}");
        }
        for date in [
            "on 2026-01-30",
            "last week",
            "since monday",
            "may 4",
            "in january",
        ] {
            assert!(has_date(date), "{date}");
        }
        assert!(!has_date("it may work"));
        assert!(has_problem("tests are failing"));
        assert!(has_problem("at foo (src/a.js:1:2)"));
        assert!(!has_problem("we debugged it"));
        assert!(has_conclusion("so the cache was stale"));
        assert!(!has_conclusion("it is also fine"));
        assert!(has_decision("let's go with postgres"));
        assert!(has_decision(
            "let\u{2019}s go with postgres"
                .replace('\u{2019}', "'")
                .as_str()
        ));
        assert!(!has_decision("we disagreed"));
    }

    #[test]
    fn corpus_rarity_marks_rare_terms() {
        let events = [event(
            "e1",
            "assistant",
            "The kubernetes ingress controller handles the traffic for everyone.",
        )];
        let common_everywhere = |_: &str| 100;
        let grips = extract_grips(&events, &common_everywhere, 100, &GripConfig::default());
        assert!(grips.is_empty());
        let rare = |stem: &str| {
            if stem == "kubernet" || stem == "ingress" {
                1
            } else {
                100
            }
        };
        let grips = extract_grips(&events, &rare, 100, &GripConfig::default());
        assert_eq!(grips.len(), 1);
        assert_eq!(grips[0].signals, [Salience::RareTerm]);
    }

    #[test]
    fn salience_serializes_snake_case() {
        let json =
            serde_json::to_string(&[Salience::RareTerm, Salience::FilePath]).expect("serializes");
        assert_eq!(json, r#"["rare_term","file_path"]"#);
    }

    fn arbitrary_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<String>(),
            "[a-zA-Z0-9 .?!/_`:;{}()*'\"\n\t#>-]{0,300}",
            "[a-zé東😀 .?\n]{0,200}",
            "[a-z ]{0,2000}",
            "[a-zA-Z]{500,1500}",
            Just(String::new()),
            Just("We decided. Why? é.\n\n```\n".to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn excerpts_are_verbatim_and_extraction_is_deterministic(
            texts in proptest::collection::vec(arbitrary_text(), 0..6),
            roles in proptest::collection::vec(
                prop_oneof![Just("user"), Just("assistant"), Just("tool"), Just("system")],
                6,
            ),
            max_grips in 0usize..10,
            max_excerpt_chars in 0usize..300,
            min_excerpt_chars in 0usize..40,
            num_corpus_documents in 0u32..10,
        ) {
            let event_ids: Vec<String> = (0..texts.len()).map(|index| format!("e{index}")).collect();
            let events: Vec<GripSourceEvent<'_>> = texts
                .iter()
                .enumerate()
                .map(|(index, text)| GripSourceEvent {
                    event_id: &event_ids[index],
                    timestamp_ms: index as u64,
                    role: roles[index],
                    kind: "message",
                    text,
                })
                .collect();
            let config = GripConfig { max_grips, max_excerpt_chars, min_excerpt_chars };
            let document_frequency = |stem: &str| (stem.len() % 7) as u32;
            let grips = extract_grips(&events, &document_frequency, num_corpus_documents, &config);
            prop_assert!(grips.len() <= max_grips);
            let mut previous_position: Option<(usize, usize)> = None;
            for grip in &grips {
                let event_index = event_ids
                    .iter()
                    .position(|event_id| *event_id == grip.event_id_start);
                prop_assert!(event_index.is_some());
                let event_index = event_index.unwrap_or(0);
                let text = &texts[event_index];
                prop_assert_eq!(&grip.event_id_start, &grip.event_id_end);
                prop_assert!(!grip.excerpt.is_empty());
                prop_assert!(grip.excerpt.chars().count() <= max_excerpt_chars);
                prop_assert!(text.is_char_boundary(grip.excerpt_start));
                prop_assert_eq!(
                    text.get(grip.excerpt_start..grip.excerpt_start + grip.excerpt.len()),
                    Some(grip.excerpt.as_str())
                );
                prop_assert!(grip.salience.is_finite() && grip.salience > 0.0);
                let position = (event_index, grip.excerpt_start);
                prop_assert!(previous_position.is_none_or(|previous| previous < position));
                previous_position = Some(position);
            }
            let again = extract_grips(&events, &document_frequency, num_corpus_documents, &config);
            prop_assert_eq!(grips, again);
        }
    }
}
