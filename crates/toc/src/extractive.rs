//! [`ExtractiveSummarizer`]: the default [`Summarizer`], deterministic, offline, no model.
//!
//! Every segment is summarized on the ingest path, and a rebuild from the event log must
//! write the same tree byte for byte (ARCHITECTURE §2), so the default summarizer picks
//! words and sentences out of its input instead of writing new ones. What it writes is
//! what agents browse and what term-overlap search ([`crate::search`]) matches on, so
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
//! detected by the same rules as the grip extractor's ([`crate::grips`]); words go
//! through [`memory_text`]. Each event text is tokenized once; every ranking breaks ties
//! on positions or text, and no hash-map order reaches the output.
//!
//! ```
//! use chrono::NaiveDate;
//! use memory_toc::{
//!     ExtractiveSummarizer, ParentInput, SegmentInput, Summarizer, SummaryEvent, TocLevel,
//!     TocNode, TocNodeId,
//! };
//!
//! let day = NaiveDate::from_ymd_opt(2026, 1, 30).unwrap();
//! let segment_id = TocNodeId::segment_for(day, 1_769_767_200_000, "e1");
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

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use chrono::Datelike;
use serde::{Deserialize, Serialize};

use crate::grips::{
    DECISION_PHRASES, DUPLICATE_STEM_OVERLAP, SOLUTION_PHRASES, SYSTEM_ROLE_FACTOR, has_conclusion,
    has_decision, has_solution, is_question, sentence_ranges, trim_to_max_chars,
};
use crate::level::TocLevel;
use crate::node::TocBullet;
use crate::node_id::{GripId, TocNodeId};
use crate::summarize::{ParentInput, SegmentInput, SummarizeError, Summarizer, Summary};
use memory_text::{is_stopword, query_terms, stem, tokenize};

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
// Segment analysis

/// The tokens and stems of a segment, each stem interned as an index into `stems`.
#[derive(Debug, Default)]
struct Vocabulary {
    /// Every distinct token seen, with its stem (`None` for a stopword) and count.
    tokens: HashMap<String, TokenEntry>,
    /// Stem → its id.
    stem_ids: HashMap<String, usize>,
    stems: Vec<StemEntry>,
}

#[derive(Debug)]
struct TokenEntry {
    stem_id_opt: Option<usize>,
    count: u32,
}

#[derive(Debug)]
struct StemEntry {
    text: String,
    /// Occurrences in the segment's events (0 for stems seen only in grips).
    term_frequency: u32,
    /// tf × idf for keyword-worthy stems, 0 for the others.
    weight: f64,
}

/// Bytes of text per distinct token, roughly, to size the maps once instead of growing
/// them token by token.
const BYTES_PER_DISTINCT_TOKEN: usize = 16;
/// The most distinct tokens the maps are sized for up front, so a huge event does not
/// reserve memory it may not need.
const MAX_PRESIZED_TOKENS: usize = 1 << 14;

impl Vocabulary {
    fn with_capacity_for(num_text_bytes: usize) -> Self {
        let num_distinct_tokens =
            (num_text_bytes / BYTES_PER_DISTINCT_TOKEN).min(MAX_PRESIZED_TOKENS);
        Vocabulary {
            tokens: HashMap::with_capacity(num_distinct_tokens),
            stem_ids: HashMap::with_capacity(num_distinct_tokens),
            stems: Vec::with_capacity(num_distinct_tokens),
        }
    }

    /// Counts the tokens of `text` and returns its distinct stems, sorted by id.
    fn add_text(&mut self, text: &str) -> Vec<usize> {
        let mut stem_ids = Vec::new();
        for token in tokenize(text) {
            let entry = match self.tokens.entry(token) {
                Entry::Occupied(occupied) => occupied.into_mut(),
                Entry::Vacant(vacant) => {
                    let stem_id_opt = (!is_stopword(vacant.key())).then(|| {
                        intern_stem(&mut self.stem_ids, &mut self.stems, stem(vacant.key()))
                    });
                    vacant.insert(TokenEntry {
                        stem_id_opt,
                        count: 0,
                    })
                }
            };
            let Some(stem_id) = entry.stem_id_opt else {
                continue;
            };
            entry.count += 1;
            self.stems[stem_id].term_frequency += 1;
            stem_ids.push(stem_id);
        }
        stem_ids.sort_unstable();
        stem_ids.dedup();
        stem_ids
    }

    /// The distinct stems of `text`, sorted by id, without counting them.
    fn stem_ids_of(&mut self, text: &str) -> Vec<usize> {
        let mut stem_ids: Vec<usize> = query_terms(text)
            .into_iter()
            .map(|term| intern_stem(&mut self.stem_ids, &mut self.stems, term))
            .collect();
        stem_ids.sort_unstable();
        stem_ids.dedup();
        stem_ids
    }

    /// The ids of those of `anchor_stems` the segment holds, sorted; `None` when
    /// `anchor_stems` is.
    fn anchor_ids(&self, anchor_stems_opt: Option<&[String]>) -> Option<Vec<usize>> {
        let mut anchor_ids: Vec<usize> = anchor_stems_opt?
            .iter()
            .filter_map(|anchor_stem| self.stem_ids.get(anchor_stem.as_str()).copied())
            .collect();
        anchor_ids.sort_unstable();
        Some(anchor_ids)
    }

    /// Weighs each keyword-worthy stem by tf × idf, `idf = ln((N + 1) / (df + 1)) + 1`.
    fn weigh(&mut self, corpus_document_frequency: &dyn Fn(&str) -> u32, num_documents: u32) {
        let num_documents = f64::from(num_documents);
        for entry in &mut self.stems {
            if entry.term_frequency == 0 || !is_keyword_worthy(&entry.text) {
                continue;
            }
            // A df above N would be an inconsistent table; clamped, idf stays >= 1.
            let document_frequency =
                f64::from(corpus_document_frequency(&entry.text)).min(num_documents);
            let inverse_document_frequency =
                ((num_documents + 1.0) / (document_frequency + 1.0)).ln() + 1.0;
            entry.weight = f64::from(entry.term_frequency) * inverse_document_frequency;
        }
    }

    /// How each stem of `stem_ids` was written most often (lowercase), ties to the
    /// lexicographically smallest token.
    fn surface_forms(&self, stem_ids: &[usize]) -> Vec<String> {
        let mut best: Vec<Option<(&str, u32)>> = vec![None; stem_ids.len()];
        // "Most frequent, then smallest" is a total order on distinct tokens, so the
        // winner does not depend on the map's iteration order.
        for (token, entry) in &self.tokens {
            let Some(stem_id) = entry.stem_id_opt else {
                continue;
            };
            let Some(position) = stem_ids.iter().position(|&wanted| wanted == stem_id) else {
                continue;
            };
            let is_better = best[position].is_none_or(|(best_token, best_count)| {
                entry.count > best_count
                    || (entry.count == best_count && token.as_str() < best_token)
            });
            if is_better {
                best[position] = Some((token.as_str(), entry.count));
            }
        }
        best.into_iter()
            .zip(stem_ids)
            .map(|(best_opt, &stem_id)| {
                best_opt.map_or_else(
                    || self.stems[stem_id].text.clone(),
                    |(token, _)| token.to_owned(),
                )
            })
            .collect()
    }
}

/// The id of `stem_text`, a new one if it is new.
fn intern_stem(
    stem_ids: &mut HashMap<String, usize>,
    stems: &mut Vec<StemEntry>,
    stem_text: String,
) -> usize {
    match stem_ids.entry(stem_text) {
        Entry::Occupied(occupied) => *occupied.get(),
        Entry::Vacant(vacant) => {
            let stem_id = stems.len();
            stems.push(StemEntry {
                text: vacant.key().clone(),
                term_frequency: 0,
                weight: 0.0,
            });
            vacant.insert(stem_id);
            stem_id
        }
    }
}

/// Stems that can be keywords: three characters or more, not a bare number. Two-letter
/// tokens are mostly file extensions and path fragments (`ts`, `rs`, `js`) that a young
/// project's corpus cannot yet tell apart from topics; the few meaningful ones (`ci`,
/// `db`) still match in titles and bullets, they just do not headline.
fn is_keyword_worthy(stem_text: &str) -> bool {
    stem_text.chars().nth(2).is_some() && !stem_text.chars().all(char::is_numeric)
}

/// One sentence of a segment.
#[derive(Debug)]
struct Sentence<'a> {
    /// Verbatim, as split by [`sentence_ranges`].
    text: &'a str,
    /// Distinct stems, sorted by id.
    stem_ids: Vec<usize>,
    /// Tool output, which is never searched for signals nor preferred as a headline.
    is_tool_output: bool,
    /// [`TOOL_OUTPUT_FACTOR`], [`SYSTEM_ROLE_FACTOR`] or 1.
    role_factor: f64,
    signals: Signals,
    score: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Signals {
    decision: bool,
    solution: bool,
    conclusion: bool,
    question: bool,
    /// A user's question or request.
    user_request: bool,
}

impl Signals {
    /// The bonus of a sentence's score, relative to its score.
    fn bonus(self) -> f64 {
        let mut bonus = 0.0;
        if self.decision || self.solution || self.conclusion {
            bonus += OUTCOME_SIGNAL_BONUS;
        }
        if self.question {
            bonus += QUESTION_BONUS;
        }
        bonus
    }
}

/// The stems without which no phrase of `phrases` (a phrase list of the grip
/// extractor) can match: each phrase's first term, as [`query_terms`] finds it, or
/// `None` when a phrase has no term (all stopwords), so that no sentence can be ruled
/// out.
///
/// The detectors match phrases on word boundaries, so a sentence holding a phrase holds
/// each of its words whole, and their stems are among the sentence's stems (unless a
/// word changes case inside, `deCided`, which tokenizing splits). Checking the few
/// sentences that hold an anchor stem instead of all of them turns signal detection, a
/// scan of the text per phrase, from the largest cost of a summary into a small one.
fn phrase_anchor_stems(phrases: &[&str]) -> Option<Vec<String>> {
    let mut anchor_stems: Vec<String> = phrases
        .iter()
        .map(|phrase| query_terms(phrase).into_iter().next())
        .collect::<Option<_>>()?;
    anchor_stems.sort_unstable();
    anchor_stems.dedup();
    Some(anchor_stems)
}

/// [`phrase_anchor_stems`] of the decision phrases.
static DECISION_ANCHOR_STEMS: LazyLock<Option<Vec<String>>> =
    LazyLock::new(|| phrase_anchor_stems(DECISION_PHRASES));
/// [`phrase_anchor_stems`] of the solution phrases.
static SOLUTION_ANCHOR_STEMS: LazyLock<Option<Vec<String>>> =
    LazyLock::new(|| phrase_anchor_stems(SOLUTION_PHRASES));

/// Finds the signals of the signal candidates: sentences that are not tool output and
/// have enough terms, by index into `sentences`, each with its role.
fn detect_signals(
    sentences: &mut [Sentence<'_>],
    vocabulary: &Vocabulary,
    candidates: &[(usize, &str)],
) {
    let decision_anchors_opt = vocabulary.anchor_ids(DECISION_ANCHOR_STEMS.as_deref());
    let solution_anchors_opt = vocabulary.anchor_ids(SOLUTION_ANCHOR_STEMS.as_deref());
    // Without anchors (a phrase of stopwords only), every sentence may hold a phrase.
    let holds_any = |stem_ids: &[usize], anchors_opt: Option<&[usize]>| {
        anchors_opt.is_none_or(|anchors| {
            anchors
                .iter()
                .any(|anchor| stem_ids.binary_search(anchor).is_ok())
        })
    };
    for &(index, role) in candidates {
        let sentence = &mut sentences[index];
        let lower = lowercase_for_phrases(sentence.text);
        let question = is_question(sentence.text);
        sentence.signals = Signals {
            decision: holds_any(&sentence.stem_ids, decision_anchors_opt.as_deref())
                && has_decision(&lower),
            solution: holds_any(&sentence.stem_ids, solution_anchors_opt.as_deref())
                && has_solution(&lower),
            conclusion: has_conclusion(&lower),
            question,
            user_request: role == "user"
                && (question
                    || REQUEST_OPENERS
                        .iter()
                        .any(|opener| lower.starts_with(opener))),
        };
    }
}

/// Lowercase with typographic apostrophes made ASCII, as the phrase signals of
/// [`crate::grips`] expect.
fn lowercase_for_phrases(text: &str) -> String {
    text.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'")
}

/// The score factor of a sentence said in `role`.
fn role_factor(role: &str) -> f64 {
    match role {
        "tool" => TOOL_OUTPUT_FACTOR,
        "system" => f64::from(SYSTEM_ROLE_FACTOR),
        _ => 1.0,
    }
}

/// A segment's sentences and vocabulary, scored.
struct SegmentAnalysis<'a> {
    vocabulary: Vocabulary,
    /// In event order, then text order.
    sentences: Vec<Sentence<'a>>,
}

impl<'a> SegmentAnalysis<'a> {
    fn new(input: &SegmentInput<'a>) -> Self {
        let num_text_bytes = input.events.iter().map(|event| event.text.len()).sum();
        let mut vocabulary = Vocabulary::with_capacity_for(num_text_bytes);
        let mut sentences = Vec::new();
        // Signal candidates: sentence index and role.
        let mut candidates: Vec<(usize, &str)> = Vec::new();
        for event in input.events {
            let is_tool_output = event.role == "tool";
            for (start, end) in sentence_ranges(event.text) {
                let text = &event.text[start..end];
                let stem_ids = vocabulary.add_text(text);
                // Fewer terms never make a headline, and their bonus would be small.
                if !is_tool_output && stem_ids.len() >= MIN_HEADLINE_TERMS {
                    candidates.push((sentences.len(), event.role));
                }
                sentences.push(Sentence {
                    text,
                    stem_ids,
                    is_tool_output,
                    role_factor: role_factor(event.role),
                    signals: Signals::default(),
                    score: 0.0,
                });
            }
        }
        detect_signals(&mut sentences, &vocabulary, &candidates);
        vocabulary.weigh(input.corpus_document_frequency, input.num_corpus_documents);
        for sentence in &mut sentences {
            if sentence.stem_ids.is_empty() {
                continue;
            }
            let weight_sum: f64 = sentence
                .stem_ids
                .iter()
                .map(|&stem_id| vocabulary.stems[stem_id].weight)
                .sum();
            // Exact for any realistic number of terms in a sentence.
            #[allow(clippy::cast_precision_loss)]
            let num_terms = sentence.stem_ids.len() as f64;
            sentence.score = weight_sum / num_terms.sqrt()
                * (1.0 + sentence.signals.bonus())
                * sentence.role_factor;
        }
        SegmentAnalysis {
            vocabulary,
            sentences,
        }
    }

    /// The ids of the best keyword stems, by weight, ties by stem text.
    fn top_keyword_stems(&self, max_keywords: usize) -> Vec<usize> {
        let stems = &self.vocabulary.stems;
        let mut stem_ids: Vec<usize> = (0..stems.len())
            .filter(|&stem_id| stems[stem_id].weight > 0.0)
            .collect();
        if max_keywords == 0 {
            return Vec::new();
        }
        // Stems are distinct, so this is a total order and the result is deterministic.
        let by_salience = |left: &usize, right: &usize| {
            stems[*right]
                .weight
                .total_cmp(&stems[*left].weight)
                .then_with(|| stems[*left].text.cmp(&stems[*right].text))
        };
        if stem_ids.len() > max_keywords {
            stem_ids.select_nth_unstable_by(max_keywords - 1, by_salience);
            stem_ids.truncate(max_keywords);
        }
        stem_ids.sort_unstable_by(by_salience);
        stem_ids
    }

    /// Indexes of the sentences with a positive score, best first, ties to the earlier.
    fn ranked_sentences(&self) -> Vec<usize> {
        let mut indexes: Vec<usize> = (0..self.sentences.len())
            .filter(|&index| self.sentences[index].score > 0.0)
            .collect();
        indexes.sort_unstable_by(|&left, &right| {
            self.sentences[right]
                .score
                .total_cmp(&self.sentences[left].score)
                .then(left.cmp(&right))
        });
        indexes
    }

    /// The sentence that says what happened: the best decision, else fix, else
    /// conclusion; else the user's first question or request; else the best sentence
    /// that is not tool output; else the best sentence. Signals are not looked for in
    /// tool output.
    fn headline(&self) -> Option<usize> {
        let is_substantial =
            |sentence: &Sentence<'_>| sentence.stem_ids.len() >= MIN_HEADLINE_TERMS;
        let outcome_signals: [fn(&Signals) -> bool; 3] = [
            |signals| signals.decision,
            |signals| signals.solution,
            |signals| signals.conclusion,
        ];
        for has_signal in outcome_signals {
            let best_opt = self.best_sentence(|sentence| {
                is_substantial(sentence) && has_signal(&sentence.signals)
            });
            if best_opt.is_some() {
                return best_opt;
            }
        }
        let first_request_opt = self
            .sentences
            .iter()
            .position(|sentence| is_substantial(sentence) && sentence.signals.user_request);
        if first_request_opt.is_some() {
            return first_request_opt;
        }
        self.best_sentence(|sentence| !sentence.is_tool_output && !sentence.stem_ids.is_empty())
            .or_else(|| self.best_sentence(|sentence| !sentence.stem_ids.is_empty()))
    }

    /// The highest-scoring sentence that passes `filter`, ties to the earlier.
    fn best_sentence(&self, filter: impl Fn(&Sentence<'_>) -> bool) -> Option<usize> {
        let mut best_opt: Option<usize> = None;
        for (index, sentence) in self.sentences.iter().enumerate() {
            if !filter(sentence) {
                continue;
            }
            if best_opt.is_none_or(|best| sentence.score > self.sentences[best].score) {
                best_opt = Some(index);
            }
        }
        best_opt
    }

    /// Whether sentence `index` says the same as one of `chosen`.
    fn duplicates_any(&self, index: usize, chosen: &[usize]) -> bool {
        let stem_ids = &self.sentences[index].stem_ids;
        chosen
            .iter()
            .any(|&other| is_near_duplicate(stem_ids, &self.sentences[other].stem_ids))
    }
}

/// Whether two sorted stem-id lists overlap by [`DUPLICATE_STEM_OVERLAP`] or more of
/// the smaller one, the grip extractor's rule; never for an empty list.
fn is_near_duplicate(left: &[usize], right: &[usize]) -> bool {
    let (smaller, larger) = if left.len() <= right.len() {
        (left, right)
    } else {
        (right, left)
    };
    !smaller.is_empty() && shared_fraction(smaller, larger) >= DUPLICATE_STEM_OVERLAP
}

/// The fraction of the ids of sorted `part` that sorted `whole` holds too; 0 for an
/// empty `part`.
fn shared_fraction(part: &[usize], whole: &[usize]) -> f32 {
    if part.is_empty() {
        return 0.0;
    }
    let mut num_shared = 0_usize;
    let (mut part_index, mut whole_index) = (0, 0);
    while let (Some(part_id), Some(whole_id)) = (part.get(part_index), whole.get(whole_index)) {
        match part_id.cmp(whole_id) {
            std::cmp::Ordering::Less => part_index += 1,
            std::cmp::Ordering::Greater => whole_index += 1,
            std::cmp::Ordering::Equal => {
                num_shared += 1;
                part_index += 1;
                whole_index += 1;
            }
        }
    }
    // Exact for the small integers involved.
    #[allow(clippy::cast_precision_loss)]
    let fraction = num_shared as f32 / part.len() as f32;
    fraction
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
mod tests {
    use std::collections::HashMap;

    use chrono::NaiveDate;
    use proptest::prelude::*;

    use super::*;
    use crate::node::{Grip, TocNode};
    use crate::summarize::SummaryEvent;

    const TS_MS: u64 = 1_769_767_200_000;

    fn segment_id() -> TocNodeId {
        let day = NaiveDate::from_ymd_opt(2026, 1, 30).expect("valid date");
        TocNodeId::segment_for(day, TS_MS, "e1")
    }

    fn event<'a>(event_id: &'a str, role: &'a str, text: &'a str) -> SummaryEvent<'a> {
        SummaryEvent {
            event_id,
            timestamp_ms: TS_MS,
            role,
            text,
        }
    }

    /// A grip on `excerpt`, which must be in the event's text.
    fn grip(event: &SummaryEvent<'_>, excerpt: &str) -> Grip {
        let offset = event.text.find(excerpt).expect("excerpt is in the event");
        Grip {
            grip_id: GripId::derive(event.timestamp_ms, event.event_id, offset),
            project_id: "default".to_string(),
            session_id: "session-1".to_string(),
            excerpt: excerpt.to_string(),
            event_id_start: event.event_id.to_string(),
            event_id_end: event.event_id.to_string(),
            timestamp_ms: event.timestamp_ms,
            segment_id: segment_id(),
        }
    }

    fn no_corpus(_: &str) -> u32 {
        0
    }

    fn summarize_with(
        summarizer: &ExtractiveSummarizer,
        events: &[SummaryEvent<'_>],
        grips: &[Grip],
        corpus_document_frequency: &dyn Fn(&str) -> u32,
        num_corpus_documents: u32,
    ) -> Summary {
        let segment_id = segment_id();
        let input = SegmentInput {
            segment_id: &segment_id,
            project_id: "default",
            session_id: "session-1",
            events,
            grips,
            corpus_document_frequency,
            num_corpus_documents,
        };
        summarizer
            .summarize_segment(&input)
            .expect("the extractive summarizer never fails")
    }

    fn summarize(events: &[SummaryEvent<'_>], grips: &[Grip]) -> Summary {
        summarize_with(
            &ExtractiveSummarizer::default(),
            events,
            grips,
            &no_corpus,
            0,
        )
    }

    fn coding_session() -> Vec<SummaryEvent<'static>> {
        vec![
            event(
                "e1",
                "user",
                "The login tests started failing after the refresh change. Can you look at src/auth/jwt.ts?",
            ),
            event(
                "e2",
                "tool",
                "FAIL tests/auth.test.ts\n  refresh rejects expired tokens\n    Error: TokenExpiredError: jwt expired",
            ),
            event(
                "e3",
                "assistant",
                "getUserToken compares the JWT expiry in seconds with Date.now() in milliseconds. I converted the expiry to milliseconds in getUserToken.",
            ),
            event(
                "e4",
                "user",
                "Should we also shorten the access token lifetime?",
            ),
            event(
                "e5",
                "assistant",
                "Good point. We decided to set the access token expiry to 15 minutes. Refresh tokens stay valid for 7 days.",
            ),
        ]
    }

    // Segments: determinism

    #[test]
    fn same_input_gives_the_same_summary_whatever_the_hash_map_order() {
        let events = coding_session();
        let grips = [
            grip(&events[0], "Can you look at src/auth/jwt.ts?"),
            grip(
                &events[4],
                "We decided to set the access token expiry to 15 minutes.",
            ),
        ];
        let stems = ["jwt", "token", "expiry", "refresh", "getusertoken", "login"];
        let forward: HashMap<String, u32> = stems
            .iter()
            .zip(1..)
            .map(|(stem, df)| ((*stem).to_string(), df))
            .collect();
        let mut backward: HashMap<String, u32> = HashMap::with_capacity(1000);
        for (stem, df) in stems.iter().zip(1..).collect::<Vec<_>>().into_iter().rev() {
            backward.insert((*stem).to_string(), df);
        }
        let forward_frequency = |stem: &str| forward.get(stem).copied().unwrap_or(0);
        let backward_frequency = |stem: &str| backward.get(stem).copied().unwrap_or(0);
        let summarizer = ExtractiveSummarizer::default();
        let first = summarize_with(&summarizer, &events, &grips, &forward_frequency, 10);
        let again = summarize_with(&summarizer, &events, &grips, &forward_frequency, 10);
        let other_map = summarize_with(
            &ExtractiveSummarizer::new(ExtractiveConfig::default()),
            &events,
            &grips,
            &backward_frequency,
            10,
        );
        assert_eq!(first, again);
        assert_eq!(first, other_map);
        assert!(!first.keywords.is_empty());
    }

    // Segments: keywords

    #[test]
    fn keywords_prefer_corpus_rare_terms() {
        let events = [
            event("e1", "user", "Move the redis cache next to tantivy."),
            event(
                "e2",
                "assistant",
                "Tantivy and redis both run on the box now.",
            ),
        ];
        let redis_common = |stem: &str| match stem {
            "redis" => 90,
            "tantivy" => 1,
            _ => 10,
        };
        let summary = summarize_with(
            &ExtractiveSummarizer::default(),
            &events,
            &[],
            &redis_common,
            100,
        );
        assert_eq!(summary.keywords[0], "tantivy");
        let position = |keyword: &str| summary.keywords.iter().position(|k| k == keyword);
        assert!(position("redis") > position("tantivy"));
        let tantivy_common = |stem: &str| match stem {
            "redis" => 1,
            "tantivy" => 90,
            _ => 10,
        };
        let summary = summarize_with(
            &ExtractiveSummarizer::default(),
            &events,
            &[],
            &tantivy_common,
            100,
        );
        assert_eq!(summary.keywords[0], "redis");
    }

    #[test]
    fn keywords_are_tf_idf_ranked_surface_forms() {
        let events = [event(
            "e1",
            "user",
            "Tokens, tokens and one token: getUserToken returns tokens on 2026-01-30 via v2 x.",
        )];
        let summary = summarize(&events, &[]);
        // "token" occurs 5 times (with getUserToken's part), written "tokens" most often;
        // ties of one occurrence go by stem text. Numbers and tokens of one or two
        // characters ("x", "v2") are left out.
        assert_eq!(
            summary.keywords,
            [
                "tokens",
                "get",
                "getusertoken",
                "one",
                "returns",
                "user",
                "via"
            ]
        );
    }

    #[test]
    fn surface_form_ties_go_to_the_smallest_token() {
        let events = [event("e1", "user", "token tokens")];
        assert_eq!(summarize(&events, &[]).keywords, ["token"]);
        let events = [event("e1", "user", "tokens tokens token")];
        assert_eq!(summarize(&events, &[]).keywords, ["tokens"]);
    }

    #[test]
    fn keyword_count_follows_the_config() {
        let events = coding_session();
        let config = ExtractiveConfig {
            max_keywords_segment: 3,
            ..ExtractiveConfig::default()
        };
        let summary = summarize_with(
            &ExtractiveSummarizer::new(config),
            &events,
            &[],
            &no_corpus,
            0,
        );
        assert_eq!(summary.keywords.len(), 3);
        let config = ExtractiveConfig {
            max_keywords_segment: 0,
            ..ExtractiveConfig::default()
        };
        let summary = summarize_with(
            &ExtractiveSummarizer::new(config),
            &events,
            &[],
            &no_corpus,
            0,
        );
        assert!(summary.keywords.is_empty());
    }

    // Segments: bullets

    #[test]
    fn bullets_cite_grips_in_order_and_merge_near_duplicates() {
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
        let grips = [
            grip(&events[0], "We decided to use Redis for the session cache."),
            grip(
                &events[1],
                "Agreed, we decided to use Redis for the session cache!",
            ),
            grip(&events[2], "The build fails with a linker error on macOS."),
        ];
        let summary = summarize(&events, &grips);
        assert_eq!(
            summary.bullets,
            [
                TocBullet {
                    text: "We decided to use Redis for the session cache.".to_string(),
                    grip_ids: vec![grips[0].grip_id, grips[1].grip_id],
                },
                TocBullet {
                    text: "The build fails with a linker error on macOS.".to_string(),
                    grip_ids: vec![grips[2].grip_id],
                },
            ]
        );
    }

    #[test]
    fn bullets_collapse_whitespace_and_are_cut_on_a_word_boundary() {
        let long_text = format!("We decided\n\n  to {}", "retry the upload ".repeat(30));
        let events = [event("e1", "user", &long_text)];
        let grips = [grip(&events[0], long_text.trim_end())];
        let summary = summarize(&events, &grips);
        let text = &summary.bullets[0].text;
        assert!(text.starts_with("We decided to retry the upload retry"));
        assert!(text.ends_with("upload…") || text.ends_with("retry…") || text.ends_with("the…"));
        assert!(text.chars().count() <= DEFAULT_MAX_BULLET_CHARS);
        assert_eq!(summary.bullets[0].grip_ids, [grips[0].grip_id]);
    }

    #[test]
    fn without_grips_bullets_are_the_best_sentences_in_order() {
        let events = coding_session();
        let summary = summarize(&events, &[]);
        assert!(!summary.bullets.is_empty());
        assert!(summary.bullets.len() <= MAX_FALLBACK_BULLETS);
        assert!(
            summary
                .bullets
                .iter()
                .all(|bullet| bullet.grip_ids.is_empty())
        );
        let all_text: String = events
            .iter()
            .map(|event| event.text.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join(" ");
        let positions: Vec<usize> = summary
            .bullets
            .iter()
            .map(|bullet| all_text.find(&bullet.text).expect("a bullet is a sentence"))
            .collect();
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    }

    // Segments: titles

    #[test]
    fn title_prefers_the_decision_sentence() {
        let summary = summarize(&coding_session(), &[]);
        // The top keywords are "token", which the headline holds, and "expired", which it
        // does not.
        assert_eq!(summary.keywords[..2], ["token", "expired"]);
        assert_eq!(
            summary.title,
            "expired: We decided to set the access token expiry to 15 minutes"
        );
    }

    #[test]
    fn title_prefixes_the_top_keywords_the_headline_lacks() {
        let events = [
            event(
                "e1",
                "user",
                "Tantivy tantivy tantivy segments merge slowly.",
            ),
            event(
                "e2",
                "assistant",
                "We decided to raise the merge budget to 8 threads.",
            ),
        ];
        let summary = summarize(&events, &[]);
        assert_eq!(summary.keywords[..2], ["tantivy", "merge"]);
        assert_eq!(
            summary.title,
            "tantivy: We decided to raise the merge budget to 8 threads"
        );
    }

    #[test]
    fn title_without_outcome_is_the_first_user_request() {
        let events = [
            event(
                "e1",
                "assistant",
                "Hello there, the weather in Lisbon is sunny.",
            ),
            event(
                "e2",
                "user",
                "Please summarize the Kafka consumer lag dashboard.",
            ),
            event("e3", "user", "Can you also check the broker disk usage?"),
        ];
        let summary = summarize(&events, &[]);
        assert!(
            summary
                .title
                .ends_with("Please summarize the Kafka consumer lag dashboard"),
            "{}",
            summary.title
        );
    }

    #[test]
    fn title_is_never_empty() {
        assert_eq!(summarize(&[], &[]).title, FALLBACK_SEGMENT_TITLE);
        assert_eq!(
            summarize(&[event("e1", "user", "?! ... --")], &[]).title,
            FALLBACK_SEGMENT_TITLE
        );
        let only_numbers = summarize(&[event("e1", "tool", "42 17 2026")], &[]);
        assert_eq!(only_numbers.title, "42 17 2026");
        assert!(only_numbers.keywords.is_empty());
        let tiny = ExtractiveSummarizer::new(ExtractiveConfig {
            max_title_chars: 0,
            ..ExtractiveConfig::default()
        });
        let summary = summarize_with(&tiny, &coding_session(), &[], &no_corpus, 0);
        assert_eq!(summary.title, "…");
    }

    #[test]
    fn tool_output_is_a_headline_only_when_nothing_else_is_said() {
        let events = [
            event(
                "e1",
                "tool",
                "Switch to the fallback replica instead of the primary db.",
            ),
            event(
                "e2",
                "assistant",
                "The replica lag stays under two seconds.",
            ),
        ];
        let title = summarize(&events, &[]).title;
        assert!(
            title.ends_with(": The replica lag stays under two seconds"),
            "{title}"
        );
    }

    // Segments: summaries

    #[test]
    fn summary_is_chronological_without_title_repeats_and_within_limits() {
        let events = coding_session();
        let summary = summarize(&events, &[]);
        let text = summary.summary.expect("a five-event segment has a summary");
        assert!(text.chars().count() <= DEFAULT_MAX_SUMMARY_CHARS);
        assert!(!text.contains("We decided"), "{text}");
        let config = ExtractiveConfig {
            max_summary_chars: 40,
            max_summary_sentences: 1,
            ..ExtractiveConfig::default()
        };
        let short = summarize_with(
            &ExtractiveSummarizer::new(config),
            &events,
            &[],
            &no_corpus,
            0,
        );
        let short_text = short.summary.expect("still a summary");
        assert!(short_text.chars().count() <= 40);
        assert!(short_text.ends_with('…'));
    }

    #[test]
    fn summary_is_none_for_one_sentence_or_a_repeat_of_the_title() {
        let one = [event("e1", "user", "We decided to use Redis for sessions.")];
        assert_eq!(summarize(&one, &[]).summary, None);
        let repeated = [
            event("e1", "user", "We decided to use Redis for sessions."),
            event("e2", "assistant", "We decided to use Redis for sessions!"),
        ];
        assert_eq!(summarize(&repeated, &[]).summary, None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn limits_hold_for_any_text(
            texts in proptest::collection::vec(
                prop_oneof![
                    any::<String>(),
                    "[a-zA-Z0-9 .?!/_`:;,'\n-]{0,300}",
                    "[a-zé東😀 .?\n]{0,200}",
                    Just("We decided to ship it. So it works now? Please check.".to_string()),
                ],
                0..6,
            ),
            roles in proptest::collection::vec(
                prop_oneof![Just("user"), Just("assistant"), Just("tool"), Just("system")],
                6,
            ),
            grip_spans in proptest::collection::vec((0usize..6, 0usize..400, 0usize..120), 0..6),
            max_title_chars in 0usize..120,
            max_bullet_chars in 0usize..220,
            max_summary_chars in 0usize..500,
            max_summary_sentences in 0usize..4,
        ) {
            let event_ids: Vec<String> = (0..texts.len()).map(|index| format!("e{index}")).collect();
            let events: Vec<SummaryEvent<'_>> = texts
                .iter()
                .enumerate()
                .map(|(index, text)| event(&event_ids[index], roles[index], text))
                .collect();
            let grips: Vec<Grip> = grip_spans
                .iter()
                .filter_map(|&(event_index, start, len)| {
                    let event = events.get(event_index)?;
                    let start = (0..=start.min(event.text.len()))
                        .rev()
                        .find(|&at| event.text.is_char_boundary(at))?;
                    let end = (start..=(start + len).min(event.text.len()))
                        .rev()
                        .find(|&at| event.text.is_char_boundary(at))?;
                    Some(grip(event, &event.text[start..end]))
                })
                .collect();
            let config = ExtractiveConfig {
                max_title_chars,
                max_bullet_chars,
                max_summary_chars,
                max_summary_sentences,
                ..ExtractiveConfig::default()
            };
            let summarizer = ExtractiveSummarizer::new(config);
            let document_frequency = |stem: &str| (stem.len() % 5) as u32;
            let summary = summarize_with(&summarizer, &events, &grips, &document_frequency, 4);
            prop_assert!(!summary.title.is_empty());
            prop_assert!(summary.title.chars().count() <= max_title_chars.max(1));
            for bullet in &summary.bullets {
                prop_assert!(!bullet.text.is_empty());
                prop_assert!(bullet.text.chars().count() <= max_bullet_chars);
                for grip_id in &bullet.grip_ids {
                    prop_assert!(grips.iter().any(|grip| grip.grip_id == *grip_id));
                }
            }
            if let Some(text) = &summary.summary {
                prop_assert!(!text.is_empty());
                prop_assert!(text.chars().count() <= max_summary_chars);
            }
            prop_assert!(summary.keywords.len() <= DEFAULT_MAX_KEYWORDS_SEGMENT);
            let again = summarize_with(&summarizer, &events, &grips, &document_frequency, 4);
            prop_assert_eq!(summary, again);
        }
    }

    // Signals

    #[test]
    fn every_decision_and_solution_phrase_has_an_anchor_stem_in_its_sentence() {
        for (phrases, anchors_opt, detector) in [
            (
                DECISION_PHRASES,
                DECISION_ANCHOR_STEMS.as_ref(),
                has_decision as fn(&str) -> bool,
            ),
            (
                SOLUTION_PHRASES,
                SOLUTION_ANCHOR_STEMS.as_ref(),
                has_solution,
            ),
        ] {
            let anchors = anchors_opt.expect("every phrase has a term");
            for phrase in phrases {
                let sentence = format!("Then {phrase} the plan");
                assert!(detector(&lowercase_for_phrases(&sentence)), "{phrase}");
                let terms = query_terms(&sentence);
                assert!(
                    anchors.iter().any(|anchor| terms.contains(anchor)),
                    "{phrase}: no anchor in {terms:?}"
                );
            }
        }
    }

    // Parents

    fn child(node_id: &str, title: &str, keywords: &[&str], num_events: u64) -> TocNode {
        let node_id: TocNodeId = node_id.parse().expect("valid id");
        TocNode {
            node_id,
            project_id: "default".to_string(),
            level: node_id.level(),
            title: title.to_string(),
            summary: None,
            bullets: Vec::new(),
            keywords: keywords
                .iter()
                .map(|keyword| (*keyword).to_string())
                .collect(),
            start_ms: TS_MS,
            end_ms: TS_MS,
            child_ids: Vec::new(),
            num_events,
            version: 1,
        }
    }

    fn summarize_parent_with(
        summarizer: &ExtractiveSummarizer,
        node_id: &str,
        children: &[TocNode],
    ) -> Summary {
        let node_id: TocNodeId = node_id.parse().expect("valid id");
        summarizer
            .summarize_parent(&ParentInput {
                node_id: &node_id,
                project_id: "default",
                children,
            })
            .expect("the extractive summarizer never fails")
    }

    fn summarize_parent(node_id: &str, children: &[TocNode]) -> Summary {
        summarize_parent_with(&ExtractiveSummarizer::default(), node_id, children)
    }

    #[test]
    fn parent_titles_label_the_period_for_every_level() {
        let keywords = ["jwt", "tantivy", "segmenter", "redis"];
        for (node_id, child_id, expected) in [
            (
                "toc:year:2026",
                "toc:month:2026-01",
                "2026: jwt, tantivy, segmenter",
            ),
            (
                "toc:month:2026-01",
                "toc:week:2026-W05",
                "January 2026: jwt, tantivy, segmenter",
            ),
            (
                "toc:week:2026-W05",
                "toc:day:2026-01-30",
                "Week 5 of 2026 (26 Jan – 1 Feb): jwt, tantivy, segmenter",
            ),
            (
                "toc:week:2026-W01",
                "toc:day:2025-12-30",
                "Week 1 of 2026 (29 Dec 2025 – 4 Jan 2026): jwt, tantivy, segmenter",
            ),
            (
                "toc:week:2026-W53",
                "toc:day:2026-12-30",
                "Week 53 of 2026 (28 Dec 2026 – 3 Jan 2027): jwt, tantivy, segmenter",
            ),
            (
                "toc:day:2026-01-30",
                "toc:day:2026-01-30",
                "Friday 30 January 2026: jwt, tantivy, segmenter",
            ),
        ] {
            let children = [child(child_id, "Some work", &keywords, 10)];
            assert_eq!(summarize_parent(node_id, &children).title, expected);
        }
        assert_eq!(
            summarize_parent("toc:month:2026-02", &[]).title,
            "February 2026"
        );
    }

    #[test]
    fn parent_bullets_keep_the_largest_children_in_order() {
        let children = [
            child("toc:day:2026-01-26", "Monday work", &[], 5),
            child("toc:day:2026-01-27", "Tuesday work", &[], 50),
            child("toc:day:2026-01-28", "Wednesday work", &[], 7),
            child("toc:day:2026-01-29", "Thursday work", &[], 50),
            child("toc:day:2026-01-30", "Friday work", &[], 7),
        ];
        let summarizer = ExtractiveSummarizer::new(ExtractiveConfig {
            max_bullets_parent: 3,
            ..ExtractiveConfig::default()
        });
        let summary = summarize_parent_with(&summarizer, "toc:week:2026-W05", &children);
        let texts: Vec<&str> = summary
            .bullets
            .iter()
            .map(|bullet| bullet.text.as_str())
            .collect();
        // The two 50s, then the earlier of the two 7s, in chronological order.
        assert_eq!(texts, ["Tuesday work", "Wednesday work", "Thursday work"]);
        let all = summarize_parent("toc:week:2026-W05", &children);
        assert_eq!(all.bullets.len(), 5);
    }

    #[test]
    fn parent_bullets_cite_the_grips_of_the_first_two_child_bullets() {
        let grip_id = |offset: usize| GripId::derive(TS_MS, "e1", offset);
        let bullet = |offsets: &[usize]| TocBullet {
            text: "x".to_string(),
            grip_ids: offsets.iter().map(|&offset| grip_id(offset)).collect(),
        };
        let mut segment = child("toc:day:2026-01-30", "Fixed the JWT expiry", &["jwt"], 3);
        segment.bullets = vec![bullet(&[1, 2]), bullet(&[2, 3, 4, 5]), bullet(&[6])];
        let summary = summarize_parent("toc:week:2026-W05", &[segment]);
        assert_eq!(
            summary.bullets,
            [TocBullet {
                text: "Fixed the JWT expiry".to_string(),
                grip_ids: vec![grip_id(1), grip_id(2), grip_id(3), grip_id(4)],
            }]
        );
    }

    #[test]
    fn parent_keywords_weigh_child_size_and_rank() {
        let children = [
            child("toc:day:2026-01-26", "a", &["jwt", "redis"], 10),
            child(
                "toc:day:2026-01-27",
                "b",
                &["redis", "tantivy", "Beta", "alpha"],
                10,
            ),
            child("toc:day:2026-01-28", "c", &["huge"], 100_000),
        ];
        let summary = summarize_parent("toc:week:2026-W05", &children);
        // w = 1 + ln 11: redis w/2 + w, jwt w, huge (1 + ln 100001) > 1.5 w,
        // tantivy w/2, beta w/3 and alpha w/4, lowercased.
        assert_eq!(
            summary.keywords,
            ["huge", "redis", "jwt", "tantivy", "beta", "alpha"]
        );
        // Equal weights (redis: two halves) go by text.
        let tied = [
            child("toc:day:2026-01-26", "a", &["zeta", "redis"], 1),
            child("toc:day:2026-01-27", "b", &["alpha", "redis"], 1),
        ];
        assert_eq!(
            summarize_parent("toc:week:2026-W05", &tied).keywords,
            ["alpha", "redis", "zeta"]
        );
    }

    #[test]
    fn parent_keywords_add_up_forms_of_one_stem() {
        let children = [
            child("toc:day:2026-01-26", "a", &["tokens", "redis"], 10),
            child("toc:day:2026-01-27", "b", &["token", "tantivy"], 10),
            child("toc:day:2026-01-28", "c", &["tokens"], 10),
        ];
        let summary = summarize_parent("toc:week:2026-W05", &children);
        // One place for token/tokens, shown in the form that weighs most.
        assert_eq!(summary.keywords, ["tokens", "redis", "tantivy"]);
    }

    #[test]
    fn parent_summary_counts_events_and_names_the_children() {
        let children = [
            child("toc:day:2026-01-29", "a", &["jwt", "redis"], 400),
            child("toc:day:2026-01-30", "b", &["tantivy"], 12),
        ];
        assert_eq!(
            summarize_parent("toc:week:2026-W05", &children)
                .summary
                .as_deref(),
            // tantivy: 1 + ln 13 = 3.56 outweighs redis: (1 + ln 401) / 2 = 3.50.
            Some("412 events in 2 days. Topics: jwt, tantivy, redis.")
        );
        let one = [child("toc:month:2026-01", "a", &[], 1)];
        assert_eq!(
            summarize_parent("toc:year:2026", &one).summary.as_deref(),
            Some("1 event in 1 month.")
        );
        let weeks = [child("toc:week:2026-W05", "a", &[], 3)];
        assert_eq!(
            summarize_parent("toc:month:2026-01", &weeks)
                .summary
                .as_deref(),
            Some("3 events in 1 week.")
        );
        assert_eq!(summarize_parent("toc:day:2026-01-30", &[]).summary, None);
    }

    // Config and helpers

    #[test]
    fn config_defaults_and_rejects_unknown_fields() {
        let config: ExtractiveConfig = serde_json::from_str("{}").expect("all fields default");
        assert_eq!(config, ExtractiveConfig::default());
        let config: ExtractiveConfig =
            serde_json::from_str(r#"{"max_title_chars": 60}"#).expect("one field set");
        assert_eq!(config.max_title_chars, 60);
        assert_eq!(config.max_keywords_segment, DEFAULT_MAX_KEYWORDS_SEGMENT);
        assert!(serde_json::from_str::<ExtractiveConfig>(r#"{"max_titel_chars": 60}"#).is_err());
        assert_eq!(ExtractiveSummarizer::default().name(), "extractive");
    }

    #[test]
    fn cut_to_chars_cuts_on_a_word_boundary_with_an_ellipsis() {
        assert_eq!(cut_to_chars("alpha beta gamma", 16), "alpha beta gamma");
        assert_eq!(cut_to_chars("alpha beta gamma", 15), "alpha beta…");
        assert_eq!(cut_to_chars("alpha, beta gamma", 12), "alpha, beta…");
        assert_eq!(cut_to_chars("alpha, beta gamma", 8), "alpha…");
        assert_eq!(cut_to_chars("abcdefgh", 4), "abc…");
        assert_eq!(cut_to_chars("éééé", 3), "éé…");
        assert_eq!(cut_to_chars("abc", 1), "…");
        assert_eq!(cut_to_chars("abc", 0), "");
        assert_eq!(cut_to_chars("", 0), "");
    }
}
