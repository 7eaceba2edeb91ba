//! The shipped lexicon ([`Lexicon::shipped`]) in free text: aliases matched on word
//! boundaries, up to three words (a phrase is tried only when its first word starts a
//! multi-word name), by a hash map over the folded names. Names that are also ordinary
//! words, file extensions or commands (`data/ambiguous_aliases.tsv`: go, rest, node,
//! express, sh, md, …) match only in a listed spelling and never as a sentence's first
//! word ("Go with rate-limiter-flexible" is not the Go language).

use std::sync::LazyLock;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::entities::{Lexicon, LexiconEntry, canonical_key};
use crate::model::EntityType;

const AMBIGUOUS_DATA: &str = include_str!("../../data/ambiguous_aliases.tsv");

/// Folded name → spellings allowed in free text (empty: never).
static AMBIGUOUS: LazyLock<HashMap<String, Vec<String>>> = LazyLock::new(|| {
    AMBIGUOUS_DATA
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut fields = line.split('\t');
            let key = canonical_key(fields.next().unwrap_or(""));
            let spellings = fields
                .next()
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|spelling| !spelling.is_empty())
                .map(str::to_owned)
                .collect();
            (key, spellings)
        })
        .collect()
});

/// The shipped lexicon by folded name, and the folded first words of its multi-word
/// names: a phrase is looked up only when its first word starts one.
struct LexiconIndex {
    by_key: HashMap<String, usize>,
    first_words: HashSet<String>,
}

static LEXICON_INDEX: LazyLock<LexiconIndex> = LazyLock::new(|| {
    let mut index = LexiconIndex {
        by_key: HashMap::new(),
        first_words: HashSet::new(),
    };
    for (position, entry) in Lexicon::shipped().entries().iter().enumerate() {
        for name in std::iter::once(&entry.name).chain(entry.aliases.iter()) {
            index.by_key.entry(canonical_key(name)).or_insert(position);
            if let Some((first, _)) = name.trim().split_once(char::is_whitespace) {
                index.first_words.insert(canonical_key(first));
            }
        }
    }
    index
});

/// The shipped lexicon's entry for a name (as [`Lexicon::lookup`], with a hash map).
pub(crate) fn lexicon_entry(name: &str) -> Option<&'static LexiconEntry> {
    lexicon_entry_by_key(&canonical_key(name))
}

fn lexicon_entry_by_key(key: &str) -> Option<&'static LexiconEntry> {
    LEXICON_INDEX
        .by_key
        .get(key)
        .and_then(|position| Lexicon::shipped().entries().get(*position))
}

/// [`canonical_key`] of one word into a reused buffer (no allocation per word).
fn fold_into(word: &str, key: &mut String) {
    key.clear();
    let trimmed = word
        .trim()
        .trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | ';' | ':'));
    if trimmed.contains('/') {
        key.extend(trimmed.chars().flat_map(char::to_lowercase));
        return;
    }
    for ch in trimmed.chars() {
        if ch.is_ascii() {
            // The common case, without `to_lowercase`'s iterator.
            if ch.is_ascii_alphanumeric() || matches!(ch, '+' | '#' | '.') {
                key.push(ch.to_ascii_lowercase());
            }
        } else if ch.is_alphanumeric() {
            key.extend(ch.to_lowercase());
        }
    }
    while key.ends_with('.') {
        key.pop();
    }
}

/// Whether an ambiguous lexicon name (`ts`, `go`) is written in an allowed spelling;
/// true for every other name.
pub(crate) fn is_allowed_spelling(name: &str) -> bool {
    AMBIGUOUS
        .get(&canonical_key(name))
        .is_none_or(|spellings| spellings.iter().any(|spelling| spelling == name))
}

/// One word of the sentence for lexicon lookups.
struct LexWord<'a> {
    text: &'a str,
    start: usize,
    /// Punctuation after it: a phrase does not run past it.
    breaks_after: bool,
}

/// Lexicon names in `sentence`: (start, end, type), longest phrase first, in order.
pub(crate) fn lexicon_mentions(sentence: &str) -> Vec<(usize, usize, EntityType)> {
    let mut found = Vec::new();
    let mut words: Vec<LexWord<'_>> = Vec::new();
    for raw in sentence.split_whitespace() {
        // `raw` borrows from `sentence`: its offset is the pointer difference.
        let raw_start = raw.as_ptr() as usize - sentence.as_ptr() as usize;
        let lead = raw.len()
            - raw
                .trim_start_matches(['(', '[', '"', '\'', '`', '*', '_', '<', '{'])
                .len();
        let mut text = raw[lead..].trim_end_matches([
            ')', ']', '"', '\'', '`', '*', ',', ';', ':', '!', '?', '.', '…', '>', '}',
        ]);
        let breaks_after = text.len() + lead < raw.len();
        if let Some(stripped) = text.strip_suffix("'s").or_else(|| text.strip_suffix("’s")) {
            text = stripped;
        }
        if let Some(at) = text.find('@')
            && at > 0
        {
            text = &text[..at];
        }
        if !text.chars().any(char::is_alphanumeric) {
            if let Some(previous) = words.last_mut() {
                previous.breaks_after = true;
            }
            continue;
        }
        words.push(LexWord {
            text,
            start: raw_start + lead,
            breaks_after,
        });
    }
    let mut first_key = String::new();
    let mut index = 0;
    while index < words.len() {
        let mut consumed = 1;
        fold_into(words[index].text, &mut first_key);
        let max_len = if LEXICON_INDEX.first_words.contains(&first_key) {
            3
        } else {
            1
        };
        for len in (1..=max_len).rev() {
            if index + len > words.len()
                || words[index..index + len - 1]
                    .iter()
                    .any(|word| word.breaks_after)
            {
                continue;
            }
            let first = &words[index];
            let last = &words[index + len - 1];
            let phrase = &sentence[first.start..last.start + last.text.len()];
            if len > 1 && phrase.contains(['(', ')', '`', '"']) {
                continue;
            }
            let entry_opt = if len == 1 {
                lexicon_entry_by_key(&first_key)
            } else {
                lexicon_entry(phrase)
            };
            let Some(entry) = entry_opt else {
                continue;
            };
            let phrase_key = if len == 1 {
                first_key.clone()
            } else {
                canonical_key(phrase)
            };
            if let Some(spellings) = AMBIGUOUS.get(&phrase_key) {
                let is_initial = index == 0
                    || words[index - 1].breaks_after
                        && sentence[..first.start]
                            .trim_end()
                            .ends_with(['.', ':', '!', '?']);
                if is_initial || !spellings.iter().any(|spelling| spelling == phrase) {
                    continue;
                }
            }
            found.push((first.start, last.start + last.text.len(), entry.entity_type));
            consumed = len;
            break;
        }
        index += consumed;
    }
    found
}

/// Capitalised words that are not names.
#[rustfmt::skip]
const NOT_NAMES: &[&str] = &[
    "the", "this", "that", "these", "those", "it", "we", "i", "you", "they", "he", "she",
    "our", "my", "your", "their", "yes", "no", "ok", "okay", "and", "but", "or", "so", "if",
    "when", "then", "now", "also", "before", "after", "today", "tomorrow", "yesterday",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec", "summary", "decision", "policy", "rule", "root", "cause", "fix",
    "follow", "runbook", "note", "todo", "proposal", "plan", "options", "option", "step",
    "next", "last", "first", "second", "both", "all", "every", "each", "current", "proposed",
    "security", "support", "customer", "success", "test", "tests", "suites", "snapshots",
    "time", "error", "warning", "found", "confirmed", "interesting", "right", "good",
    "great", "nice", "thanks", "sorry", "where", "what", "why", "how", "which", "who", "can",
    "could", "should", "would", "will", "do", "does", "did", "is", "are", "was", "were",
    "let", "keep", "make", "add", "run", "write", "use", "give", "create", "account",
    "production", "staging", "prod", "someone", "everyone", "nobody", "anyone", "there",
    "here", "one", "two", "three", "still", "just", "only", "even", "maybe", "please",
    "done", "agreed", "hmm", "wait", "meanwhile", "either", "neither", "without", "with",
    "from", "for", "to", "in", "on", "at", "by", "of", "as", "an", "a", "not", "never",
    "always", "again", "back", "more", "less", "most", "some", "any", "same", "other",
    "another", "new", "old", "mobile", "web", "team", "review", "reviews", "readme", "api",
    "rollout", "stopgap", "decisions", "context", "problem", "question", "solution",
];

/// Whether a capitalised word may be a name: not a stop word, not a lexicon entry.
pub(crate) fn is_name_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    !NOT_NAMES.contains(&lower.as_str()) && lexicon_entry(word).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_in_place_is_canonical_key() {
        let mut key = String::new();
        for word in [
            "Postgres",
            "`src/Auth/x.ts`",
            "Node.js.",
            "C++",
            "refresh_token",
            "—",
            "Ünïcode",
        ] {
            fold_into(word, &mut key);
            assert_eq!(key, canonical_key(word), "{word}");
        }
    }

    #[test]
    fn phrases_and_ambiguous_names() {
        let sentence = "Go with React Native, not go; the cache is in Node and docker-compose.";
        let names: Vec<&str> = lexicon_mentions(sentence)
            .into_iter()
            .map(|(start, end, _)| &sentence[start..end])
            .collect();
        assert_eq!(names, ["React Native", "Node", "docker-compose"]);
        assert!(is_allowed_spelling("Postgres") && is_allowed_spelling("Go"));
        assert!(!is_allowed_spelling("ts"));
    }
}
