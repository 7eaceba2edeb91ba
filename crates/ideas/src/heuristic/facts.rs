//! What the engine reads off an idea's content to relate it to others — its salient
//! terms, the settings it gives, the entities it names and their polarity — computed
//! once per idea and cached across batches. The facts are a pure function of the
//! content (and idea ids are derived from the content), so the cache never changes an
//! answer, only its cost.

use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock};

use foldhash::{HashMap, HashSet};

use memory_text::{query_terms, stem};

use crate::entities::canonical_key;
use crate::heuristic::mentions::{Mention, mentions};
use crate::heuristic::settings::{Setting, is_identifier, quantities, settings};
use crate::model::{Idea, normalized_content};

/// Cached entries before the cache starts over.
const MAX_CACHED: usize = 50_000;

/// Facts of one idea.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IdeaFacts {
    /// Salient terms (see [`salient_terms`]).
    pub terms: Vec<String>,
    /// Their [`term_hash`]es, at the same positions.
    pub term_hashes: Vec<u64>,
    /// Salient words, an identifier one word (see [`salient_words`]).
    pub words: Vec<String>,
    /// Settings it gives.
    pub settings: Vec<Setting>,
    /// Every quantity it names.
    pub values: Vec<String>,
    /// The content as it counts for uniqueness (`model::normalized_content`).
    pub normalized: String,
    /// Its [`term_hash`].
    pub normalized_hash: u64,
    /// Entities it names.
    pub mentions: Vec<Mention>,
}

impl IdeaFacts {
    /// The facts of `content`.
    pub(crate) fn of(content: &str) -> IdeaFacts {
        let terms = salient_terms(content);
        let normalized = normalized_content(content);
        IdeaFacts {
            term_hashes: terms.iter().map(|term| term_hash(term)).collect(),
            terms,
            words: salient_words(content),
            settings: settings(content),
            values: quantities(content),
            mentions: mentions(content),
            normalized_hash: term_hash(&normalized),
            normalized,
        }
    }

    /// How many of these words `other` has.
    pub(crate) fn num_shared_words(&self, other: &IdeaFacts) -> usize {
        self.words
            .iter()
            .filter(|word| other.words.contains(word))
            .count()
    }
}

/// A term's hash, the same in every process (fixed seed), for matching term lists
/// without string comparisons.
pub(crate) fn term_hash(term: &str) -> u64 {
    static STATE: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x1dea_5eed);
    STATE.hash_one(term)
}

/// Facts by idea id, and the facts of contents the engine drafted for the event at hand
/// by content: a drafted decision's facts are read to relate it, and read again when the
/// applied idea joins a candidate list; the second read finds them here.
#[derive(Debug, Default)]
pub(crate) struct FactsCache {
    by_idea: HashMap<String, Arc<IdeaFacts>>,
    drafted: HashMap<String, Arc<IdeaFacts>>,
}

impl FactsCache {
    /// The facts of a stored idea.
    pub(crate) fn get(&mut self, idea: &Idea) -> Arc<IdeaFacts> {
        if let Some(facts) = self.by_idea.get(&idea.idea_id) {
            return Arc::clone(facts);
        }
        if self.by_idea.len() >= MAX_CACHED {
            self.by_idea.clear();
        }
        let facts = self
            .drafted
            .remove(&idea.content)
            .unwrap_or_else(|| Arc::new(IdeaFacts::of(&idea.content)));
        self.by_idea
            .insert(idea.idea_id.clone(), Arc::clone(&facts));
        facts
    }

    /// The facts of a drafted content, kept until an idea with that content is read
    /// through [`FactsCache::get`] or the event's changes are applied
    /// ([`FactsCache::forget_drafts`]).
    pub(crate) fn of_draft(&mut self, content: &str) -> Arc<IdeaFacts> {
        if let Some(facts) = self.drafted.get(content) {
            return Arc::clone(facts);
        }
        let facts = Arc::new(IdeaFacts::of(content));
        self.drafted.insert(content.to_owned(), Arc::clone(&facts));
        facts
    }

    /// Forgets the drafted contents no idea took (rejected, restated, or not listed).
    pub(crate) fn forget_drafts(&mut self) {
        self.drafted.clear();
    }
}

/// Words that say nothing about what an idea is about: cue verbs, units, fillers.
#[rustfmt::skip]
const GENERIC_WORDS: &[&str] = &[
    "decide", "decided", "decision", "use", "using", "switch", "change", "changing", "become",
    "becomes", "stay", "stays", "remain", "let", "go", "going", "now", "instead", "keep", "add",
    "make", "need", "want", "think", "also", "still", "new", "old", "day", "minute", "second",
    "hour", "week", "month", "min", "ms", "sec", "per", "like", "yes", "ok", "okay", "thing",
    "way", "one", "two", "three", "get", "set", "done", "sure", "really", "right", "good",
    "well", "time", "today", "later", "next", "first", "last", "please", "thanks", "maybe",
    "probably", "actually", "much", "many", "lot", "bit", "part", "case", "look", "see",
    "check", "try", "work", "put", "give", "take", "know", "say", "said", "mean", "able", "via",
    "etc", "something", "anything", "everything", "everyone", "someone", "todo", "fix",
    "fixed", "issue", "problem", "question", "answer", "idea", "go", "going", "went", "thing",
    "start", "write", "run", "call", "followup", "follow", "up", "out", "back", "remind",
    "forget", "long", "rather", "prefer", "always", "never", "wait", "hmm", "ll", "ve",
];

static GENERIC: LazyLock<HashSet<String>> =
    LazyLock::new(|| GENERIC_WORDS.iter().map(|word| stem(word)).collect());

/// The terms of `text` that say what it is about: [`query_terms`] without numbers and
/// [`GENERIC_WORDS`].
pub(crate) fn salient_terms(text: &str) -> Vec<String> {
    query_terms(text)
        .into_iter()
        .filter(|term| {
            term.chars().next().is_some_and(char::is_alphabetic) && !GENERIC.contains(term)
        })
        .collect()
}

/// Salient terms with each identifier kept whole (`tenant_id` is `tenantid`, not
/// `tenant` and `id`): what two decisions share, without code names inflating it.
pub(crate) fn salient_words(text: &str) -> Vec<String> {
    let mut plain = String::with_capacity(text.len());
    let mut identifiers: Vec<String> = Vec::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
        let token = token.trim_matches('.');
        if is_identifier(token) {
            let key = canonical_key(token);
            if !identifiers.contains(&key) {
                identifiers.push(key);
            }
        } else if !token.is_empty() {
            plain.push_str(token);
            plain.push(' ');
        }
    }
    let mut words = salient_terms(&plain);
    for identifier in identifiers {
        if !words.contains(&identifier) {
            words.push(identifier);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn salient_terms_drop_numbers_units_and_cue_words() {
        assert_eq!(
            salient_terms("We decided the refresh_token_ttl becomes 30 days"),
            ["refresh", "token", "ttl", "refreshtokenttl"]
        );
        assert_eq!(
            salient_words("partition key becomes tenant_id + anonymous_id"),
            ["partition", "key", "tenantid", "anonymousid"]
        );
    }
}
