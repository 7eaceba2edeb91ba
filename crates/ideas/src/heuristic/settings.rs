//! Settings said in prose — "`refresh_token_ttl` is 14 days", "set the refresh TTL to
//! 30 days", "access token stays 15 minutes", "ENRICH_WORKERS=4" — as (key, values)
//! pairs, so a later decision that gives the same key another value supersedes the
//! earlier one.
//!
//! Values are quantities, normalised: durations to seconds (`15m`, `15 minutes`,
//! `900 s`, `fifteen minutes` are one value), sizes to bytes,
//! rates to per second, percentages, counts (`500k`); an identifier assigned with `=`
//! may also take a word (`format = postcard`); a key of two words or an identifier may
//! take a name right after "is", "to", "=", "stays" (`acme-uploads-prod`, `#ops-pager`,
//! `Priya`, `pnpm`). A value after "not", "instead of", "no longer", "from … to" is
//! replaced, not given. [`states_setting`] tells a sentence that states a setting as
//! in force ("The pool size is 10"): the engine drafts it as a decision.
//! The key is read leftwards from the value over connectors ("is", "becomes", "stays",
//! "to", "=", "expires after", …): an identifier alone, else up to four words; a list
//! after "key:" gives its values to that key ("ttl: web 14 days, mobile 30 days").
//! Keys are compared by their stems, so "refresh TTL", "refresh_token_ttl" and
//! `auth.refreshTokenTtl` can be the same key.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use memory_text::{is_stopword, stem};

use crate::entities::canonical_key;
use crate::heuristic::intent::{is_negated, is_replaced};
use crate::heuristic::lexicon::{is_name_word, lexicon_entry};
use crate::heuristic::pattern::Pattern;

/// A key: the stems of its words, and the folded identifier when it is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SettingKey {
    /// `canonical_key` of the identifier (`refreshtokenttl`), when the key is one.
    pub ident_opt: Option<String>,
    /// Stems of the key's words, sorted, unique.
    pub terms: Vec<String>,
}

impl SettingKey {
    /// Whether two keys name the same setting: the same identifier, the same stems, or
    /// the stems of one (two or more) inside the other's.
    pub(crate) fn matches(&self, other: &SettingKey) -> bool {
        if let (Some(a), Some(b)) = (&self.ident_opt, &other.ident_opt)
            && a == b
        {
            return true;
        }
        if self.terms.is_empty() || other.terms.is_empty() {
            return false;
        }
        let (small, large) = if self.terms.len() <= other.terms.len() {
            (&self.terms, &other.terms)
        } else {
            (&other.terms, &self.terms)
        };
        small == large || (small.len() >= 2 && small.iter().all(|term| large.contains(term)))
    }
}

/// One setting said: a key and the values given to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The key.
    pub key: SettingKey,
    /// Its normalised values (`dur:1209600`, `n:3`, `pct:70`, `word:postcard`), sorted.
    pub values: Vec<String>,
}

impl Setting {
    /// Whether `other` gives the same key values that share nothing with these.
    pub(crate) fn conflicts_with(&self, other: &Setting) -> bool {
        self.key.matches(&other.key) && !self.values.iter().any(|v| other.values.contains(v))
    }

    /// Whether `other` gives the same key a value these have too.
    pub(crate) fn agrees_with(&self, other: &Setting) -> bool {
        self.key.matches(&other.key) && self.values.iter().any(|v| other.values.contains(v))
    }
}

/// Words read past between a key and its value.
const CONNECTORS: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "be",
    "becomes",
    "become",
    "stays",
    "stay",
    "remains",
    "remain",
    "=",
    "to",
    "of",
    "at",
    "after",
    "in",
    "expires",
    "expire",
    "lives",
    "lasts",
    "now",
    "still",
    "set",
    "exactly",
    "about",
    "~",
    "equals",
    "goes",
    "go",
    "->",
    "→",
    ":",
    "changes",
    "changed",
    "raised",
    "lowered",
    "reduced",
    "bumped",
    "increased",
    "decreased",
    "moves",
    "from",
    "only",
    "just",
    "every",
    "within",
    "up",
    "living",
    "lasting",
    "expiring",
    "for",
];

/// Words a key never reaches over, or starts with.
const KEY_STOPS: &[&str] = &[
    "the", "a", "an", "our", "every", "each", "all", "its", "their", "this", "that", "my", "your",
    "we", "i", "you", "they", "it", "and", "or", "with", "for", "per", "by", "on", "but", "so",
    "then", "set", "sets", "setting", "make", "use", "using", "decided", "decision", "only",
    "just", "also", "plus", "than", "when", "if", "while", "because", "which", "who", "let's",
    "lets", "keep", "give", "gives", "add", "adds", "cap", "caps", "need", "needs", "want",
    "about", "around", "roughly", "under", "over", "into", "onto", "stays", "is", "are", "becomes",
    "to", "at", "of", "in", "after",
];

/// Stems that say nothing about which setting it is.
const KEY_GENERIC: &[&str] = &[
    "value", "setting", "config", "default", "new", "old", "current",
];

static PARENTHETICAL: LazyLock<Pattern> = LazyLock::new(|| Pattern::new(r"\([^()]*\)"));
static NUMBER: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"^[~≈]?(\d+(?:,\d{3})*(?:\.\d+)?)([A-Za-z%/-]*(?:/[A-Za-z]+)?)$")
});

/// Every quantity `text` gives, normalised, whatever it quantifies (not those it
/// negates or replaces).
pub(crate) fn quantities(text: &str) -> Vec<String> {
    let plain = text.replace(['*', '`', '\'', '"', '(', ')'], " ");
    let mut found: Vec<String> = Vec::new();
    for part in plain.split([';', '\n']) {
        let words = words_of(part);
        let mut index = 0;
        while index < words.len() {
            match quantity(&words, index) {
                Some((value, consumed)) => {
                    // "instead of half an hour", "not 30 seconds": not a value it gives.
                    if !found.contains(&value) && !is_after_marker(&words, index) {
                        found.push(value);
                    }
                    index += consumed;
                }
                None => index += 1,
            }
        }
    }
    found.sort();
    found
}

static STATED: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)^(?:(?:update|fyi|so|ok|okay|noted)[,:.!]?\s+)?(?:the|our)\s+([^,;:.!?]{3,80}?)\s(?:is|are|stays|remains)\s",
    )
});

/// Whether a sentence states a setting as in force: "The database connection pool
/// size is 10", "Our error tracking service is honeybadger.io now" — the subject a key
/// of two words or an identifier, a value right after the verb, at most 30 words. Such
/// a sentence records what is configured as surely as "we decided" does, and a later
/// one giving the key another value replaces it.
pub(crate) fn states_setting(sentence: &str) -> bool {
    // Cheap checks first: the engine asks this of every sentence without a cue.
    let starts_right = sentence.trim_start().get(..3).is_some_and(|start| {
        matches!(
            start.to_ascii_lowercase().as_str(),
            "the" | "our" | "upd" | "fyi" | "so " | "ok " | "ok," | "oka" | "not"
        )
    });
    starts_right
        && [" is ", " are ", " stays ", " remains "]
            .iter()
            .any(|verb| sentence.contains(verb))
        && sentence.split_whitespace().count() <= 30
        && STATED
            .captures(sentence.trim_start())
            .filter(|captures| {
                // A value follows the verb ("is 10", "is now #ops-pager", "is Priya"),
                // not prose ("is what bothers me"): checked before reading settings.
                let end = captures.get_match().end();
                sentence.trim_start()[end..]
                    .split_whitespace()
                    .find(|word| {
                        !matches!(
                            word.to_ascii_lowercase().as_str(),
                            "now" | "still" | "set" | "at"
                        )
                    })
                    .is_some_and(may_be_value)
            })
            .and_then(|captures| captures.get(1))
            .is_some_and(|subject| {
                // The setting is the sentence's subject, not something said after it.
                let subject_terms =
                    key_terms(&subject.as_str().split_whitespace().collect::<Vec<_>>());
                settings(sentence).iter().any(|setting| {
                    (setting.key.ident_opt.is_some() || setting.key.terms.len() >= 2)
                        && setting
                            .key
                            .terms
                            .iter()
                            .all(|term| subject_terms.contains(term))
                })
            })
}

/// Whether a word can start a value: a digit, `#`, `@`, `/`, a capital, punctuation
/// inside (`acme-uploads-prod`, `db.internal`), a lexicon name, a spelled number.
fn may_be_value(word: &str) -> bool {
    let word = word.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')'));
    let Some(first) = word.chars().next() else {
        return false;
    };
    first.is_ascii_digit()
        || matches!(first, '#' | '@' | '/' | '~')
        || first.is_uppercase()
        || word
            .trim_end_matches(['.', ',', ';', ':', '!', '?'])
            .contains(['-', '.', '_', '/', ':', '@'])
        || lexicon_entry(word.trim_end_matches(['.', ',', ';', ':', '!', '?'])).is_some()
        || spelled_number(&word.to_lowercase()).is_some()
        || word.eq_ignore_ascii_case("half")
}

/// Every setting `text` gives, values of one key merged.
pub(crate) fn settings(text: &str) -> Vec<Setting> {
    let mut plain = text.replace(['*', '`', '\'', '"'], " ");
    for _ in 0..2 {
        plain = PARENTHETICAL.replace_all(&plain, " ").into_owned();
    }
    let mut found: Vec<Setting> = Vec::new();
    for part in plain.split([';', '\n']).flat_map(|part| part.split(". ")) {
        read_part(part, &mut found);
    }
    found
}

/// One word of a part, with whether a comma, colon or period ended it.
pub(crate) struct Word<'a> {
    pub(crate) text: &'a str,
    pub(crate) lower: String,
    pub(crate) ends_clause: bool,
    ends_colon: bool,
}

pub(crate) fn words_of(part: &str) -> Vec<Word<'_>> {
    let mut words = Vec::new();
    for raw in part.split_whitespace() {
        // `ENRICH_WORKERS=4` is three words.
        let mut pieces: Vec<&str> = Vec::new();
        let mut rest = raw;
        while let Some(at) = rest.find('=') {
            if at > 0 {
                pieces.push(&rest[..at]);
            }
            pieces.push("=");
            rest = &rest[at + 1..];
        }
        if !rest.is_empty() {
            pieces.push(rest);
        }
        for piece in pieces {
            let text = piece.trim_end_matches([',', '.', ':', '!', '?', ';']);
            let tail = &piece[text.len()..];
            let text = text.trim_start_matches(['[', '{', '<']);
            if text.is_empty() && piece != "=" {
                continue;
            }
            words.push(Word {
                text: if piece == "=" { "=" } else { text },
                lower: text.to_lowercase(),
                ends_clause: tail.contains([',', '.', '!', '?']),
                ends_colon: tail.contains(':'),
            });
        }
    }
    words
}

fn read_part(part: &str, found: &mut Vec<Setting>) {
    let words = words_of(part);
    let mut colon_key: Option<SettingKey> = None;
    let mut index = 0;
    while index < words.len() {
        if words[index].ends_colon
            && let Some(key) = key_before(&words, index + 1, true)
            && (key.ident_opt.is_some() || key.terms.len() >= 2)
        {
            colon_key = Some(key);
        }
        // A value the sentence negates or replaces ("not 30 seconds", "instead of
        // half an hour", "from 5 to 8") is not given.
        let replaced = is_after_marker(&words, index);
        let Some((value, consumed)) = quantity(&words, index) else {
            if !replaced && let Some((key, value)) = name_setting(&words, index) {
                add(found, key, value);
            }
            index += 1;
            continue;
        };
        let key_opt = key_before(&words, index, false)
            .or_else(|| colon_key.clone())
            .or_else(|| key_after(&words, index, consumed));
        if let Some(key) = key_opt
            && !replaced
        {
            add(found, key, value);
        }
        index += consumed;
    }
    // `spool.format = postcard`: an identifier given a word.
    for (index, word) in words.iter().enumerate() {
        if word.text == "="
            && index > 0
            && is_identifier(words[index - 1].text)
            && let Some(value_word) = words.get(index + 1)
            && quantity(&words, index + 1).is_none()
            && value_word
                .lower
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
            && let Some(key) = identifier_key(words[index - 1].text)
        {
            add(found, key, format!("word:{}", value_word.lower));
        }
    }
}

/// A name given to a key right after "is", "are", "=", "to", "stays", "remains" (or a
/// colon): "the bucket for user uploads is acme-uploads-prod", "switch the package
/// manager to pnpm". The name is value-shaped (`us-east-1`, `#ops-pager`, `Priya`) or
/// in the lexicon; the key has two words or is an identifier, so "it is Friday" gives
/// nothing.
fn name_setting(words: &[Word<'_>], index: usize) -> Option<(SettingKey, String)> {
    let word = &words[index];
    // After "is" or "to", a word of three or more hyphenated parts is a name too
    // (`acme-uploads-prod`; not `client-side`).
    let hyphenated = word.text.matches('-').count() >= 2
        && !word.text.starts_with('-')
        && !word.text.ends_with('-')
        && word.text.chars().all(|c| c.is_alphanumeric() || c == '-');
    let is_name = is_name_value(words, index)
        || hyphenated
        || (lexicon_entry(word.text).is_some() && word.text.chars().any(char::is_alphabetic));
    if !is_name || index == 0 {
        return None;
    }
    let mut before = index - 1;
    if matches!(words[before].lower.as_str(), "now" | "still") && before > 0 {
        before -= 1;
    }
    let connector = &words[before];
    let assigns = connector.ends_colon
        || matches!(
            connector.lower.as_str(),
            "is" | "are" | "=" | "to" | "stays" | "remains"
        );
    if !assigns || connector.ends_clause {
        return None;
    }
    let key = key_before(words, index, false)?;
    if key.ident_opt.is_none() && key.terms.len() < 2 {
        return None;
    }
    Some((key, format!("name:{}", canonical_key(word.text))))
}

fn add(found: &mut Vec<Setting>, key: SettingKey, value: String) {
    if let Some(existing) = found.iter_mut().find(|setting| setting.key == key) {
        if !existing.values.contains(&value) {
            existing.values.push(value);
            existing.values.sort();
        }
        return;
    }
    found.push(Setting {
        key,
        values: vec![value],
    });
}

/// The key read leftwards from the word before `value_index`.
fn key_before(words: &[Word<'_>], value_index: usize, after_colon: bool) -> Option<SettingKey> {
    let mut position = value_index;
    let mut num_connectors = 0;
    while position > 0 && !after_colon {
        let word = &words[position - 1];
        if word.ends_clause || !CONNECTORS.contains(&word.lower.as_str()) || num_connectors == 4 {
            break;
        }
        num_connectors += 1;
        position -= 1;
        if word.ends_colon {
            break;
        }
    }
    if position == 0 {
        return None;
    }
    let first = &words[position - 1];
    if (first.ends_clause || first.ends_colon)
        && !(after_colon || num_connectors > 0 && first.ends_colon)
    {
        return None;
    }
    if is_identifier(first.text) {
        return identifier_key(first.text);
    }
    let mut key_words: Vec<&str> = Vec::new();
    let mut cursor = position;
    while cursor > 0 && key_words.len() < 4 {
        let word = &words[cursor - 1];
        let is_first = cursor == position;
        if (!is_first && (word.ends_clause || word.ends_colon))
            || KEY_STOPS.contains(&word.lower.as_str())
            || NUMBER.is_match(word.text)
            || !word.text.chars().any(char::is_alphabetic)
        {
            break;
        }
        key_words.push(word.text);
        cursor -= 1;
    }
    key_words.reverse();
    if key_words.is_empty() || (num_connectors == 0 && !after_colon && key_words.len() < 2) {
        return None;
    }
    phrase_key(&key_words)
}

/// "a 30-second reuse grace window": a value at the start of a clause names the words
/// after it.
fn key_after(words: &[Word<'_>], value_index: usize, consumed: usize) -> Option<SettingKey> {
    let before_ok = value_index == 0
        || words[value_index - 1].ends_clause
        || words[value_index - 1].ends_colon
        || matches!(
            words[value_index - 1].lower.as_str(),
            "a" | "an" | "and" | "plus" | "with"
        );
    if !before_ok || words[value_index + consumed - 1].ends_clause {
        return None;
    }
    let mut key_words = Vec::new();
    for word in words.iter().skip(value_index + consumed).take(3) {
        if KEY_STOPS.contains(&word.lower.as_str())
            || NUMBER.is_match(word.text)
            || !word.text.chars().any(char::is_alphabetic)
        {
            break;
        }
        key_words.push(word.text);
        if word.ends_clause || word.ends_colon {
            break;
        }
    }
    if key_words.is_empty() {
        return None;
    }
    phrase_key(&key_words)
}

/// Whether a word is code-shaped: `snake_case`, `dotted.name`, `camelCase`,
/// `SCREAMING_CASE`.
pub(crate) fn is_identifier(word: &str) -> bool {
    let word = word.trim_end_matches("()");
    if word.is_empty() || !word.chars().next().is_some_and(char::is_alphabetic) {
        return false;
    }
    if !word
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return false;
    }
    let inner_upper = word.char_indices().skip(1).any(|(index, c)| {
        c.is_uppercase() && word[..index].chars().last().is_some_and(char::is_lowercase)
    });
    let joined = word.contains('_') || (word.contains('.') && !word.ends_with('.'));
    joined || inner_upper
}

fn identifier_key(identifier: &str) -> Option<SettingKey> {
    let terms = key_terms(&[identifier]);
    let ident = canonical_key(identifier);
    (!ident.is_empty()).then_some(SettingKey {
        ident_opt: Some(ident),
        terms,
    })
}

fn phrase_key(words: &[&str]) -> Option<SettingKey> {
    let terms = key_terms(words);
    (!terms.is_empty()).then_some(SettingKey {
        ident_opt: None,
        terms,
    })
}

/// Stems of the words of a key, identifiers split at `_`, `.` and case changes.
fn key_terms(words: &[&str]) -> Vec<String> {
    let mut terms = BTreeSet::new();
    for word in words {
        for piece in word.split(|c: char| !c.is_alphanumeric()) {
            for part in split_camel(piece) {
                let lower = part.to_lowercase();
                if lower.len() < 2 || is_stopword(&lower) {
                    continue;
                }
                let stemmed = stem(&lower);
                if !KEY_GENERIC.contains(&stemmed.as_str()) {
                    terms.insert(stemmed);
                }
            }
        }
    }
    terms.into_iter().collect()
}

fn split_camel(piece: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut prev_lower = false;
    for (index, ch) in piece.char_indices() {
        if ch.is_uppercase() && prev_lower {
            parts.push(&piece[start..index]);
            start = index;
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
    }
    parts.push(&piece[start..]);
    parts
}

/// Whether the word at `index` follows a negation or a replacement marker ("from"
/// only with a "to" later: "from 30 minutes to 2 hours", not "build FROM python").
pub(crate) fn is_after_marker(words: &[Word<'_>], index: usize) -> bool {
    let start = index.saturating_sub(3);
    let before: Vec<&str> = words[start..index]
        .iter()
        .map(|word| word.lower.as_str())
        .collect();
    let before = before.join(" ");
    let from_to = index > 0
        && words[index - 1].lower == "from"
        && words[index + 1..].iter().any(|word| word.lower == "to");
    is_negated(&before) || is_replaced(&before) || from_to
}

pub(crate) const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Whether the word at `index` is a value-shaped word, a capitalised name inside
/// the sentence or a weekday.
pub(crate) fn is_name_value(words: &[Word<'_>], index: usize) -> bool {
    let text = words[index]
        .text
        .trim_end_matches("'s")
        .trim_matches(|c: char| matches!(c, '\'' | ',' | ';' | '!' | '?'));
    let lower = text.to_lowercase();
    if text.len() < 2 || is_stopword(&lower) {
        return false;
    }
    if WEEKDAYS.contains(&lower.trim_end_matches('s')) {
        return true;
    }
    let has_digit = text.chars().any(|c| c.is_ascii_digit());
    let has_letter = text.chars().any(char::is_alphabetic);
    let inner = text.char_indices().nth(1).map_or("", |(at, _)| &text[at..]);
    if text.starts_with(['#', '@'])
        || inner.contains(['/', '_', '@'])
        || (inner.contains(['.', ':']) && !text.ends_with(['.', ':']))
    {
        return has_letter || has_digit;
    }
    if has_digit {
        return has_letter;
    }
    let mut chars = text.chars();
    index > 0
        && text.len() >= 3
        && chars.next().is_some_and(char::is_uppercase)
        && chars.any(char::is_lowercase)
        && text.chars().all(|c| c.is_alphabetic() || c == '-')
        && is_name_word(text)
}

/// The quantity starting at word `index`, normalised, and how many words it took.
pub(crate) fn quantity(words: &[Word<'_>], index: usize) -> Option<(String, usize)> {
    let word = &words[index];
    if let Some(found) = spelled_quantity(words, index) {
        return Some(found);
    }
    let captures = NUMBER.captures(word.text)?;
    let digits = captures[1].replace(',', "");
    let number: f64 = digits.parse().ok()?;
    // `30-second`; dates (2026-01-05) and versions (0.8.2) do not match NUMBER at all.
    let suffix = captures[2].trim_start_matches('-');
    if !suffix.is_empty() {
        return normalise(number, suffix).map(|value| (value, 1));
    }
    if !word.ends_clause
        && let Some(next) = words.get(index + 1)
    {
        if next.lower == "per"
            && let Some(unit_word) = words.get(index + 2)
            && let Some(seconds) = duration_seconds(&unit_word.lower)
        {
            return Some((rate(number, seconds), 3));
        }
        if let Some(value) = normalise(number, &next.lower) {
            return Some((value, 2));
        }
    }
    Some((format!("n:{}", format_number(number)), 1))
}

/// A quantity with its number spelled out — "two hours", "half an hour", "half a gig" —
/// only before a unit of time or size: a spelled number alone ("one of them") is no
/// value.
fn spelled_quantity(words: &[Word<'_>], index: usize) -> Option<(String, usize)> {
    let word = &words[index];
    if word.ends_clause {
        return None;
    }
    let (number, unit_at) = if word.lower == "half"
        && words
            .get(index + 1)
            .is_some_and(|next| matches!(next.lower.as_str(), "a" | "an"))
    {
        (0.5, index + 2)
    } else {
        (spelled_number(&word.lower)?, index + 1)
    };
    let unit = words.get(unit_at)?;
    if duration_seconds(&unit.lower).is_none()
        && byte_size(&unit.lower).is_none()
        && !is_percent(&unit.lower)
    {
        return None;
    }
    normalise(number, &unit.lower).map(|value| (value, unit_at + 1 - index))
}

/// A number written as one word: "one" … "nineteen", the tens "twenty" … "ninety", a
/// hyphenated compound ("twenty-five"). Not "hundred": "two hundred ms" would read as
/// 100 ms, since the words before it are not read.
fn spelled_number(word: &str) -> Option<f64> {
    const UNITS: [&str; 19] = [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
    ];
    const TENS: [&str; 8] = [
        "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    let unit = |word: &str| {
        UNITS
            .iter()
            .position(|number| *number == word)
            .map(|at| at + 1)
    };
    let tens = |word: &str| {
        TENS.iter()
            .position(|number| *number == word)
            .map(|at| 10 * (at + 2))
    };
    let value = match word.split_once('-') {
        Some((high, low)) => tens(high)? + unit(low).filter(|low| *low < 10)?,
        None => unit(word).or_else(|| tens(word))?,
    };
    #[allow(clippy::cast_precision_loss)]
    Some(value as f64)
}

fn byte_size(unit: &str) -> Option<f64> {
    Some(match unit {
        "b" | "byte" | "bytes" => 1.0,
        "kb" | "kib" | "ki" => 1024.0,
        "mb" | "mib" | "mi" => 1024.0 * 1024.0,
        "gb" | "gib" | "gi" | "gig" | "gigs" => 1024.0 * 1024.0 * 1024.0,
        "tb" | "tib" | "ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

fn normalise(number: f64, unit: &str) -> Option<String> {
    if let Some((_, per)) = unit.split_once('/') {
        return duration_seconds(per).map(|seconds| rate(number, seconds));
    }
    let lower = unit.to_lowercase();
    if is_percent(&lower) {
        return Some(format!("pct:{}", format_number(number)));
    }
    if unit == "M" {
        return Some(format!("n:{}", format_number(number * 1e6)));
    }
    if let Some(seconds) = duration_seconds(&lower) {
        return Some(format!("dur:{}", format_number(number * seconds)));
    }
    if lower == "k" {
        return Some(format!("n:{}", format_number(number * 1e3)));
    }
    let bytes = byte_size(&lower)?;
    Some(format!("bytes:{}", format_number(number * bytes)))
}

/// "80%", "80 percent" and "80 pct" are one value.
fn is_percent(unit: &str) -> bool {
    matches!(unit, "%" | "percent" | "pct")
}

fn duration_seconds(unit: &str) -> Option<f64> {
    Some(match unit {
        "ms" | "millisecond" | "milliseconds" => 0.001,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
        "d" | "day" | "days" => 86_400.0,
        "w" | "wk" | "wks" | "week" | "weeks" => 604_800.0,
        "mo" | "month" | "months" => 2_592_000.0,
        "y" | "yr" | "yrs" | "year" | "years" => 31_536_000.0,
        _ => return None,
    })
}

fn rate(number: f64, per_seconds: f64) -> String {
    format!("rate:{}", format_number(number / per_seconds))
}

fn format_number(number: f64) -> String {
    let rounded = (number * 1_000.0).round() / 1_000.0;
    let text = format!("{rounded:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
