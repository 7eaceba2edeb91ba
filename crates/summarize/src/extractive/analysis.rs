//! The analysis behind a segment's summary: its vocabulary (tokens and stems with
//! tf × idf weights), its sentences with their signals and scores, and near-duplicate
//! detection between sentences.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::LazyLock;

use memory_text::{is_stopword, query_terms, stem, tokenize};

use crate::SegmentInput;
use crate::grips::{DUPLICATE_STEM_OVERLAP, SYSTEM_ROLE_FACTOR};
use crate::sentences::sentence_ranges;
use crate::signals::{
    DECISION_PHRASES, SOLUTION_PHRASES, has_conclusion, has_decision, has_solution, is_question,
};

use super::{
    MIN_HEADLINE_TERMS, OUTCOME_SIGNAL_BONUS, QUESTION_BONUS, REQUEST_OPENERS, TOOL_OUTPUT_FACTOR,
};

/// The tokens and stems of a segment, each stem interned as an index into `stems`.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
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
    pub(super) fn stem_ids_of(&mut self, text: &str) -> Vec<usize> {
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
    pub(super) fn surface_forms(&self, stem_ids: &[usize]) -> Vec<String> {
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
pub(super) struct Sentence<'a> {
    /// Verbatim, as split by [`sentence_ranges`].
    pub(super) text: &'a str,
    /// Distinct stems, sorted by id.
    pub(super) stem_ids: Vec<usize>,
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
pub(super) static DECISION_ANCHOR_STEMS: LazyLock<Option<Vec<String>>> =
    LazyLock::new(|| phrase_anchor_stems(DECISION_PHRASES));
/// [`phrase_anchor_stems`] of the solution phrases.
pub(super) static SOLUTION_ANCHOR_STEMS: LazyLock<Option<Vec<String>>> =
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
/// [`crate::signals`] expect.
pub(super) fn lowercase_for_phrases(text: &str) -> String {
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
pub(super) struct SegmentAnalysis<'a> {
    pub(super) vocabulary: Vocabulary,
    /// In event order, then text order.
    pub(super) sentences: Vec<Sentence<'a>>,
}

impl<'a> SegmentAnalysis<'a> {
    pub(super) fn new(input: &SegmentInput<'a>) -> Self {
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
    pub(super) fn top_keyword_stems(&self, max_keywords: usize) -> Vec<usize> {
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
    pub(super) fn ranked_sentences(&self) -> Vec<usize> {
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
    pub(super) fn headline(&self) -> Option<usize> {
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
    pub(super) fn duplicates_any(&self, index: usize, chosen: &[usize]) -> bool {
        let stem_ids = &self.sentences[index].stem_ids;
        chosen
            .iter()
            .any(|&other| is_near_duplicate(stem_ids, &self.sentences[other].stem_ids))
    }
}

/// Whether two sorted stem-id lists overlap by [`DUPLICATE_STEM_OVERLAP`] or more of
/// the smaller one, the grip extractor's rule; never for an empty list.
pub(super) fn is_near_duplicate(left: &[usize], right: &[usize]) -> bool {
    let (smaller, larger) = if left.len() <= right.len() {
        (left, right)
    } else {
        (right, left)
    };
    !smaller.is_empty() && shared_fraction(smaller, larger) >= DUPLICATE_STEM_OVERLAP
}

/// The fraction of the ids of sorted `part` that sorted `whole` holds too; 0 for an
/// empty `part`.
pub(super) fn shared_fraction(part: &[usize], whole: &[usize]) -> f32 {
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
