//! [`ExtractiveSummarizer`]: the default [`Summarizer`], deterministic, offline, no model.
//!
//! Every segment is summarized on the ingest path, and a rebuild from the event log must
//! write the same tree byte for byte (ARCHITECTURE §2), so the default summarizer picks
//! words and sentences out of its input instead of writing new ones. What it writes is
//! what agents browse and what term-overlap search (`memory_toc::search`) matches on, so
//! every field is chosen to carry the segment's distinctive words:
//!
//! - **keywords** of a segment are its stems ranked by tf × idf against the project's
//!   earlier segments (`idf = ln((N + 1) / (df + 1)) + 1`), shown in their most frequent
//!   surface form, so a segment is labelled by what sets it apart, not by what every
//!   session says;
//! - **bullets** of a segment quote its grips in event order, each citing its grip, with
//!   near-duplicates merged into the first (which then cites both); without grips, its
//!   best sentences;
//! - the **title** is a headline sentence, a decision, fix or conclusion first, else the
//!   user's first question or request, else the best-scoring sentence, prefixed with the
//!   top keywords it lacks ("jwt: We decided to set the access token expiry to 15
//!   minutes");
//! - the **summary** is the best few sentences that the title does not already say, in
//!   the order they were said.
//!
//! A sentence scores the tf × idf weights of its stems over the square root of their
//! number, with a bonus for a decision, fix, conclusion or question. Tool output counts
//! for keywords like any text, but its sentences score half and are a headline only when
//! nothing else was said: it records what was run, not what was decided.
//!
//! A day, week, month or year is summarized from its children alone: keywords weighed by
//! each child's size and rank, one bullet per child (its title, citing the grips of its
//! first bullets), a title made of the period's label and top keywords, and a count of
//! events and children.
//!
//! Sentences are split and their signals (decision, fix, conclusion, question)
//! detected by the same rules as the grip extractor's ([`crate::sentences`],
//! [`crate::signals`]); words go
//! through [`memory_text`]. Each event text is tokenized once; every ranking breaks ties
//! on positions or text, and no hash-map order reaches the output.
//!
//! ```
//! use chrono::NaiveDate;
//! use memory_summarize::{ExtractiveSummarizer, ParentInput, SegmentInput, Summarizer, SummaryEvent};
//! use memory_toc::{TocLevel, TocNode, TocNodeId};
//!
//! let day = NaiveDate::from_ymd_opt(2026, 1, 30).unwrap();
//! let segment_id = TocNodeId::segment_for("default", day, 1_769_767_200_000, "e1");
//! let event = |event_id, role, text| SummaryEvent { event_id, timestamp_ms: 1_769_767_200_000, role, text };
//! let events = [
//!     event("e1", "user", "Login fails since the refresh change. Can you check the refresh flow?"),
//!     event("e2", "assistant", "The refresh handler compared the JWT expiry in seconds with milliseconds. I fixed the refresh handler."),
//!     event("e3", "user", "Should we shorten the access token lifetime too?"),
//!     event("e4", "assistant", "We decided to set the JWT access token expiry to 15 minutes."),
//! ];
//! // "refresh" is in 40 of the project's 50 earlier segments, the other stems in 2.
//! let document_frequency = |stem: &str| if stem == "refresh" { 40 } else { 2 };
//! let input = SegmentInput {
//!     segment_id: &segment_id,
//!     project_id: "default",
//!     session_id: "session-1",
//!     events: &events,
//!     grips: &[], // without grips, bullets are the best sentences
//!     corpus_document_frequency: &document_frequency,
//!     num_corpus_documents: 50,
//! };
//! let summarizer = ExtractiveSummarizer::default();
//! let segment = summarizer.summarize_segment(&input).unwrap();
//! assert_eq!(segment.title, "We decided to set the JWT access token expiry to 15 minutes");
//! // Said four times, "refresh" still ranks below the words said twice: most segments say it.
//! assert_eq!(segment.keywords[..6], ["access", "expiry", "handler", "jwt", "token", "refresh"]);
//! assert_eq!(segment.bullets[0].text, "The refresh handler compared the JWT expiry in seconds with milliseconds.");
//! assert!(segment.summary.unwrap().ends_with("Should we shorten the access token lifetime too?"));
//!
//! let node = TocNode {
//!     node_id: segment_id,
//!     project_id: "default".to_string(),
//!     level: TocLevel::Segment,
//!     title: segment.title,
//!     summary: None,
//!     bullets: segment.bullets,
//!     keywords: segment.keywords,
//!     start_ms: 1_769_767_200_000,
//!     end_ms: 1_769_767_200_000,
//!     child_ids: vec![],
//!     num_events: 4,
//!     version: 1,
//! };
//! let day_id = TocNodeId::Day(day);
//! let day_summary = summarizer
//!     .summarize_parent(&ParentInput { node_id: &day_id, project_id: "default", children: &[node] })
//!     .unwrap();
//! assert_eq!(day_summary.title, "Friday 30 January 2026: access, expiry, handler");
//! assert_eq!(day_summary.summary.as_deref(), Some("4 events in 1 segment. Topics: access, expiry, handler, jwt, token, refresh."));
//! ```
//!
//! It is not:
//! - an abstractive summarizer: apart from labels, counts and the keyword prefix of a
//!   title, every word it writes was said in the segment; paraphrase is the LLM
//!   summarizer's job, which falls back to this one;
//! - a ranking function for search: its scores pick sentences and keywords for one
//!   node and are not stored or compared across nodes;
//! - language-aware: sentence rules and signals are English, like [`memory_text`];
//!   speaker prefixes ("Caroline: ") are text like any other.

use std::collections::BTreeMap;

use chrono::Datelike;
use memory_text::stem;
use memory_toc::{GripId, TocBullet, TocLevel, TocNodeId};
use serde::{Deserialize, Serialize};

use crate::grips::DUPLICATE_STEM_OVERLAP;
use crate::sentences::trim_to_max_chars;
use crate::{ParentInput, SegmentInput, SummarizeError, Summarizer, Summary};

mod analysis;

use analysis::{SegmentAnalysis, Vocabulary, is_near_duplicate, shared_fraction};

/// Default of [`ExtractiveConfig::max_keywords_segment`]: enough to name a segment's
/// topics, technologies and identifiers for term-overlap search, few enough that each
/// one is distinctive.
pub const DEFAULT_MAX_KEYWORDS_SEGMENT: usize = 10;
/// Default of [`ExtractiveConfig::max_keywords_parent`]: a parent spans many segments,
/// so it gets a few more keywords than one segment.
pub const DEFAULT_MAX_KEYWORDS_PARENT: usize = 12;
/// Default of [`ExtractiveConfig::max_bullets_parent`]: one line per child covers a
/// year's twelve months and a week's seven days; a busy day keeps its largest segments.
pub const DEFAULT_MAX_BULLETS_PARENT: usize = 12;
/// Default of [`ExtractiveConfig::max_bullet_chars`]: about 50 tokens, two lines on a
/// screen, so a node's bullets can be scanned without expanding them.
pub const DEFAULT_MAX_BULLET_CHARS: usize = 200;
/// Default of [`ExtractiveConfig::max_title_chars`]: one line, about 25 tokens, which
/// keeps a page of browsed titles inside a small token budget.
pub const DEFAULT_MAX_TITLE_CHARS: usize = 100;
/// Default of [`ExtractiveConfig::max_summary_chars`]: about 120 tokens, three ordinary
/// sentences.
pub const DEFAULT_MAX_SUMMARY_CHARS: usize = 480;
/// Default of [`ExtractiveConfig::max_summary_sentences`]: a headline's worth of
/// context, not a transcript.
pub const DEFAULT_MAX_SUMMARY_SENTENCES: usize = 3;

/// A headline must hold at least this many distinct terms: "Agreed." or "Fixed!" carry a
/// signal but say nothing about what happened.
pub const MIN_HEADLINE_TERMS: usize = 2;
/// Relative score bonus of a sentence that decides, fixes or concludes something: what
/// a session is remembered for.
pub const OUTCOME_SIGNAL_BONUS: f64 = 0.5;
/// Relative score bonus of a question: what a session was about, less often what came
/// out of it.
pub const QUESTION_BONUS: f64 = 0.25;
/// Score factor of tool output: it is long and full of rare tokens (paths, hashes,
/// numbers), but it records what was run, not what was said or decided. System text
/// (session notices, notes) gets the grip extractor's [`SYSTEM_ROLE_FACTOR`].
pub const TOOL_OUTPUT_FACTOR: f64 = 0.5;
/// How many of the top keywords a segment title must show; the missing ones prefix the
/// headline.
pub const TITLE_PREFIX_KEYWORDS: usize = 2;
/// How many keywords make a title on their own: after the period label of a parent,
/// or for a segment without a headline sentence.
pub const TITLE_KEYWORDS: usize = 3;
/// How many sentences become bullets when a segment has no grips.
pub const MAX_FALLBACK_BULLETS: usize = 3;
/// The title of a segment without a single term, nor a keyword.
pub const FALLBACK_SEGMENT_TITLE: &str = "Conversation segment";
/// How many keywords a parent summary lists as topics.
pub const PARENT_SUMMARY_KEYWORDS: usize = 6;
/// A parent bullet cites the grips of this many of its child's first bullets: the
/// child's title is usually drawn from them.
pub const CHILD_BULLETS_CITED: usize = 2;
/// At most this many grips back one parent bullet.
pub const MAX_PARENT_BULLET_GRIPS: usize = 4;

/// Openings of a user sentence that asks for something without a question mark.
const REQUEST_OPENERS: &[&str] = &[
    "please ",
    "can you ",
    "could you ",
    "would you ",
    "help me ",
    "i want ",
    "i need ",
    "i'd like ",
    "we need ",
    "let's ",
];

/// Limits of [`ExtractiveSummarizer`]. Lengths are in characters (Unicode scalar
/// values), not bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractiveConfig {
    /// Keywords of a segment node, most salient first. Default 10.
    pub max_keywords_segment: usize,
    /// Keywords of a day, week, month or year node. Default 12.
    pub max_keywords_parent: usize,
    /// Bullets of a day, week, month or year node, one per child; when there are more
    /// children, those with the most events are kept. Default 12.
    pub max_bullets_parent: usize,
    /// Characters of a bullet; longer texts are cut on a word boundary and end with
    /// "…". Default 200.
    pub max_bullet_chars: usize,
    /// Characters of a title, cut like bullets; a title is never empty, so 0 counts as
    /// 1. Default 100.
    pub max_title_chars: usize,
    /// Characters of a summary, cut like bullets. Default 480.
    pub max_summary_chars: usize,
    /// Sentences of a segment summary. Default 3.
    pub max_summary_sentences: usize,
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        ExtractiveConfig {
            max_keywords_segment: DEFAULT_MAX_KEYWORDS_SEGMENT,
            max_keywords_parent: DEFAULT_MAX_KEYWORDS_PARENT,
            max_bullets_parent: DEFAULT_MAX_BULLETS_PARENT,
            max_bullet_chars: DEFAULT_MAX_BULLET_CHARS,
            max_title_chars: DEFAULT_MAX_TITLE_CHARS,
            max_summary_chars: DEFAULT_MAX_SUMMARY_CHARS,
            max_summary_sentences: DEFAULT_MAX_SUMMARY_SENTENCES,
        }
    }
}

/// The default [`Summarizer`]: picks keywords, sentences and grips out of its input.
/// Never fails, and the same input always yields the same [`Summary`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtractiveSummarizer {
    config: ExtractiveConfig,
}

impl ExtractiveSummarizer {
    /// A summarizer with the given limits.
    #[must_use]
    pub fn new(config: ExtractiveConfig) -> Self {
        ExtractiveSummarizer { config }
    }

    /// The limits it writes within.
    #[must_use]
    pub fn config(&self) -> &ExtractiveConfig {
        &self.config
    }

    /// [`Summarizer::summarize_segment`], which cannot fail here.
    #[must_use]
    pub fn segment_summary(&self, input: &SegmentInput<'_>) -> Summary {
        let mut analysis = SegmentAnalysis::new(input);
        let keyword_stem_ids = analysis.top_keyword_stems(self.config.max_keywords_segment);
        let keywords = analysis.vocabulary.surface_forms(&keyword_stem_ids);
        let ranked_sentences = analysis.ranked_sentences();
        let (title, title_stem_ids) = self.segment_title(&analysis, &keyword_stem_ids, &keywords);
        let summary = self.segment_summary_text(&analysis, &ranked_sentences, &title_stem_ids);
        let bullets = if input.grips.is_empty() {
            self.sentence_bullets(&analysis, &ranked_sentences)
        } else {
            self.grip_bullets(input, &mut analysis.vocabulary)
        };
        Summary {
            title,
            summary,
            bullets,
            keywords,
        }
    }

    /// [`Summarizer::summarize_parent`], which cannot fail here.
    #[must_use]
    pub fn parent_summary(&self, input: &ParentInput<'_>) -> Summary {
        let keywords = aggregate_keywords(input, self.config.max_keywords_parent);
        let label = period_label(input.node_id);
        let title_text = if keywords.is_empty() {
            label
        } else {
            format!("{label}: {}", join_first(&keywords, TITLE_KEYWORDS))
        };
        Summary {
            title: cut_to_chars(&title_text, self.config.max_title_chars.max(1)),
            summary: parent_summary_text(input, &keywords)
                .map(|text| cut_to_chars(&text, self.config.max_summary_chars))
                .filter(|text| !text.is_empty()),
            bullets: self.parent_bullets(input),
            keywords,
        }
    }

    /// The title and the stems it was made of: the headline sentence with the top
    /// keywords it lacks in front, else the top keywords, else
    /// [`FALLBACK_SEGMENT_TITLE`].
    fn segment_title(
        &self,
        analysis: &SegmentAnalysis<'_>,
        keyword_stem_ids: &[usize],
        keywords: &[String],
    ) -> (String, Vec<usize>) {
        let max_chars = self.config.max_title_chars.max(1);
        let Some(headline_index) = analysis.headline() else {
            if keywords.is_empty() {
                return (cut_to_chars(FALLBACK_SEGMENT_TITLE, max_chars), Vec::new());
            }
            let mut title_stem_ids: Vec<usize> = keyword_stem_ids
                .iter()
                .take(TITLE_KEYWORDS)
                .copied()
                .collect();
            title_stem_ids.sort_unstable();
            let title = cut_to_chars(&join_first(keywords, TITLE_KEYWORDS), max_chars);
            return (title, title_stem_ids);
        };
        let headline = &analysis.sentences[headline_index];
        let headline_text = collapse_whitespace(headline.text);
        let headline_text = strip_final_period(&headline_text);
        let mut title_stem_ids = headline.stem_ids.clone();
        let mut missing_keywords: Vec<&str> = Vec::new();
        for (&stem_id, keyword) in keyword_stem_ids
            .iter()
            .zip(keywords)
            .take(TITLE_PREFIX_KEYWORDS)
        {
            if headline.stem_ids.binary_search(&stem_id).is_err() {
                missing_keywords.push(keyword);
                title_stem_ids.push(stem_id);
            }
        }
        title_stem_ids.sort_unstable();
        let title_text = if missing_keywords.is_empty() {
            headline_text.to_owned()
        } else {
            format!("{}: {headline_text}", missing_keywords.join(", "))
        };
        (cut_to_chars(&title_text, max_chars), title_stem_ids)
    }

    /// One bullet per grip in grip order, each merged into the first earlier one it
    /// nearly repeats.
    fn grip_bullets(
        &self,
        input: &SegmentInput<'_>,
        vocabulary: &mut Vocabulary,
    ) -> Vec<TocBullet> {
        struct DraftBullet {
            bullet: TocBullet,
            stem_ids: Vec<usize>,
            lowercase_text: String,
        }
        let mut drafts: Vec<DraftBullet> = Vec::with_capacity(input.grips.len());
        for grip in input.grips {
            let text = collapse_whitespace(&grip.excerpt);
            let bullet_text = cut_to_chars(&text, self.config.max_bullet_chars);
            if bullet_text.is_empty() {
                continue;
            }
            let stem_ids = vocabulary.stem_ids_of(&text);
            let lowercase_text = text.to_lowercase();
            // Without stems to compare (symbols only), only equal texts merge.
            let earlier_opt = drafts.iter_mut().find(|draft| {
                if draft.stem_ids.is_empty() || stem_ids.is_empty() {
                    draft.lowercase_text == lowercase_text
                } else {
                    is_near_duplicate(&draft.stem_ids, &stem_ids)
                }
            });
            if let Some(earlier) = earlier_opt {
                if !earlier.bullet.grip_ids.contains(&grip.grip_id) {
                    earlier.bullet.grip_ids.push(grip.grip_id);
                }
                continue;
            }
            drafts.push(DraftBullet {
                bullet: TocBullet {
                    text: bullet_text,
                    grip_ids: vec![grip.grip_id],
                },
                stem_ids,
                lowercase_text,
            });
        }
        drafts.into_iter().map(|draft| draft.bullet).collect()
    }

    /// Up to [`MAX_FALLBACK_BULLETS`] of the best sentences, in order, citing nothing.
    fn sentence_bullets(
        &self,
        analysis: &SegmentAnalysis<'_>,
        ranked_sentences: &[usize],
    ) -> Vec<TocBullet> {
        let mut chosen: Vec<usize> = Vec::with_capacity(MAX_FALLBACK_BULLETS);
        for &index in ranked_sentences {
            if chosen.len() >= MAX_FALLBACK_BULLETS {
                break;
            }
            if !analysis.duplicates_any(index, &chosen) {
                chosen.push(index);
            }
        }
        chosen.sort_unstable();
        chosen
            .into_iter()
            .map(|index| TocBullet {
                text: cut_to_chars(
                    &collapse_whitespace(analysis.sentences[index].text),
                    self.config.max_bullet_chars,
                ),
                grip_ids: Vec::new(),
            })
            .filter(|bullet| !bullet.text.is_empty())
            .collect()
    }

    /// The best sentences that fit, in the order they were said, leaving out those that
    /// nearly repeat the title or a better sentence; `None` for a segment of fewer than
    /// two sentences with terms, and when nothing but the title is left to say.
    fn segment_summary_text(
        &self,
        analysis: &SegmentAnalysis<'_>,
        ranked_sentences: &[usize],
        title_stem_ids: &[usize],
    ) -> Option<String> {
        let num_sentences_with_terms = analysis
            .sentences
            .iter()
            .filter(|sentence| !sentence.stem_ids.is_empty())
            .count();
        if num_sentences_with_terms < 2 {
            return None;
        }
        let max_chars = self.config.max_summary_chars;
        let mut chosen: Vec<(usize, String)> = Vec::new();
        let mut num_chars = 0;
        for &index in ranked_sentences {
            if chosen.len() >= self.config.max_summary_sentences {
                break;
            }
            let stem_ids = &analysis.sentences[index].stem_ids;
            // Says nothing the title does not, or nearly what a better sentence says.
            let is_repeat = shared_fraction(stem_ids, title_stem_ids) >= DUPLICATE_STEM_OVERLAP
                || chosen.iter().any(|&(chosen_index, _)| {
                    is_near_duplicate(stem_ids, &analysis.sentences[chosen_index].stem_ids)
                });
            if is_repeat {
                continue;
            }
            let text = collapse_whitespace(analysis.sentences[index].text);
            let text = if chosen.is_empty() {
                // The best sentence is always in, cut if it must be.
                cut_to_chars(&text, max_chars)
            } else if num_chars + 1 + text.chars().count() <= max_chars {
                text
            } else {
                continue;
            };
            num_chars += usize::from(!chosen.is_empty()) + text.chars().count();
            chosen.push((index, text));
        }
        chosen.sort_unstable_by_key(|&(index, _)| index);
        let texts: Vec<String> = chosen.into_iter().map(|(_, text)| text).collect();
        let summary = texts.join(" ");
        (!summary.is_empty()).then_some(summary)
    }

    /// One bullet per child, the largest children when there are too many, in order.
    fn parent_bullets(&self, input: &ParentInput<'_>) -> Vec<TocBullet> {
        let mut kept_indexes: Vec<usize> = (0..input.children.len()).collect();
        if kept_indexes.len() > self.config.max_bullets_parent {
            kept_indexes.sort_unstable_by(|&left, &right| {
                input.children[right]
                    .num_events
                    .cmp(&input.children[left].num_events)
                    .then(left.cmp(&right))
            });
            kept_indexes.truncate(self.config.max_bullets_parent);
            kept_indexes.sort_unstable();
        }
        kept_indexes
            .into_iter()
            .filter_map(|index| {
                let child = &input.children[index];
                let mut text = collapse_whitespace(&child.title);
                if text.is_empty() {
                    text = child.keywords.join(", ");
                }
                if text.is_empty() {
                    text = child.node_id.to_string();
                }
                let mut grip_ids: Vec<GripId> = Vec::new();
                for grip_id in child
                    .bullets
                    .iter()
                    .take(CHILD_BULLETS_CITED)
                    .flat_map(|bullet| &bullet.grip_ids)
                {
                    if grip_ids.len() < MAX_PARENT_BULLET_GRIPS && !grip_ids.contains(grip_id) {
                        grip_ids.push(*grip_id);
                    }
                }
                let text = cut_to_chars(&text, self.config.max_bullet_chars);
                (!text.is_empty()).then_some(TocBullet { text, grip_ids })
            })
            .collect()
    }
}

impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> &'static str {
        "extractive"
    }

    fn summarize_segment(&self, input: &SegmentInput<'_>) -> Result<Summary, SummarizeError> {
        Ok(self.segment_summary(input))
    }

    fn summarize_parent(&self, input: &ParentInput<'_>) -> Result<Summary, SummarizeError> {
        Ok(self.parent_summary(input))
    }
}

// ---------------------------------------------------------------------------------
// Parents

/// Children keywords weighed by `(1 + ln(1 + child events)) / (1 + rank in the child)`,
/// summed over children, best first, ties by text. Keywords are compared by stem
/// (lowercase, whitespace collapsed), so "token" in one child and "tokens" in another
/// add up instead of taking two places; the surface form that brought the most weight
/// (ties: the smallest) is shown. Each counts once per child, at its first rank.
fn aggregate_keywords(input: &ParentInput<'_>, max_keywords: usize) -> Vec<String> {
    // stem → (total weight, weight per surface form)
    let mut weights: BTreeMap<String, (f64, BTreeMap<String, f64>)> = BTreeMap::new();
    for child in input.children {
        // Event counts stay far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let child_weight = 1.0 + (1.0 + child.num_events as f64).ln();
        let mut seen: Vec<String> = Vec::with_capacity(child.keywords.len());
        for (rank, keyword) in child.keywords.iter().enumerate() {
            let normalized = collapse_whitespace(keyword).to_lowercase();
            let key = stem(&normalized);
            if normalized.is_empty() || seen.contains(&key) {
                continue;
            }
            // Ranks stay far below 2^52.
            #[allow(clippy::cast_precision_loss)]
            let weight = child_weight / (1.0 + rank as f64);
            let entry = weights.entry(key.clone()).or_default();
            entry.0 += weight;
            *entry.1.entry(normalized).or_insert(0.0) += weight;
            seen.push(key);
        }
    }
    let mut ranked: Vec<(String, f64)> = weights
        .into_values()
        .filter_map(|(total, forms)| {
            let surface = forms
                .into_iter()
                .max_by(|left, right| {
                    left.1
                        .total_cmp(&right.1)
                        .then_with(|| right.0.cmp(&left.0))
                })?
                .0;
            Some((surface, total))
        })
        .collect();
    ranked.sort_unstable_by(|left, right| {
        right
            .1
            .total_cmp(&left.1)
            .then_with(|| left.0.cmp(&right.0))
    });
    ranked
        .into_iter()
        .take(max_keywords)
        .map(|(keyword, _)| keyword)
        .collect()
}

/// "412 events in 7 segments. Topics: jwt, refresh, tantivy." `None` without children.
fn parent_summary_text(input: &ParentInput<'_>, keywords: &[String]) -> Option<String> {
    if input.children.is_empty() {
        return None;
    }
    let num_events = input
        .children
        .iter()
        .fold(0_u64, |total, child| total.saturating_add(child.num_events));
    let num_children = input.children.len();
    let (child_singular, child_plural) = match input.level().child() {
        Some(TocLevel::Month) => ("month", "months"),
        Some(TocLevel::Week) => ("week", "weeks"),
        Some(TocLevel::Day) => ("day", "days"),
        Some(TocLevel::Segment) => ("segment", "segments"),
        Some(TocLevel::Year) | None => ("child", "children"),
    };
    let events_word = if num_events == 1 { "event" } else { "events" };
    let children_word = if num_children == 1 {
        child_singular
    } else {
        child_plural
    };
    let mut text = format!("{num_events} {events_word} in {num_children} {children_word}.");
    if !keywords.is_empty() {
        text.push_str(" Topics: ");
        text.push_str(&join_first(keywords, PARENT_SUMMARY_KEYWORDS));
        text.push('.');
    }
    Some(text)
}

/// The period a node names, in words, from the id alone (never the time zone):
/// `2026`, `January 2026`, `Week 5 of 2026 (26 Jan – 1 Feb)`, `Friday 30 January 2026`.
/// A week over New Year shows both years: `Week 1 of 2026 (29 Dec 2025 – 4 Jan 2026)`.
/// A segment gets its day's label; an invalid id its text form.
fn period_label(node_id: &TocNodeId) -> String {
    let Ok((first_day, last_day)) = node_id.first_and_last_day() else {
        return node_id.to_string();
    };
    match *node_id {
        TocNodeId::Year(year) => year.to_string(),
        TocNodeId::Month { .. } => first_day.format("%B %Y").to_string(),
        TocNodeId::Week { iso_year, week } => {
            let day_format = if first_day.year() == last_day.year() {
                "%-d %b"
            } else {
                "%-d %b %Y"
            };
            format!(
                "Week {week} of {iso_year} ({} – {})",
                first_day.format(day_format),
                last_day.format(day_format)
            )
        }
        TocNodeId::Day(_) | TocNodeId::Segment { .. } => {
            first_day.format("%A %-d %B %Y").to_string()
        }
    }
}

// ---------------------------------------------------------------------------------
// Text helpers

/// The first `count` of `words`, joined by ", ".
fn join_first(words: &[String], count: usize) -> String {
    let first: Vec<&str> = words.iter().take(count).map(String::as_str).collect();
    first.join(", ")
}

/// `text` with every run of whitespace made one space, trimmed.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text` without one final `.` (a headline is not a sentence), unless it ends an
/// ellipsis or is all there is.
fn strip_final_period(text: &str) -> &str {
    match text.strip_suffix('.') {
        Some(rest) if !rest.is_empty() && !rest.ends_with('.') => rest,
        _ => text,
    }
}

/// `text` when it has at most `max_chars` characters; otherwise its beginning, cut after
/// a whole word (or inside a word longer than the limit), followed by "…", `max_chars`
/// characters in all.
fn cut_to_chars(text: &str, max_chars: usize) -> String {
    if text.chars().nth(max_chars).is_none() {
        return text.to_owned();
    }
    if max_chars == 0 {
        return String::new();
    }
    let kept = trim_to_max_chars(text, max_chars - 1)
        .trim_end_matches([',', ';', ':', '-', '–', '—', '(', ' ']);
    let mut out = String::with_capacity(kept.len() + '…'.len_utf8());
    out.push_str(kept);
    out.push('…');
    out
}

#[cfg(test)]
#[path = "extractive_tests.rs"]
mod tests;
