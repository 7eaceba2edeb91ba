//! Natural-language questions made deterministically from document texts, shared by the
//! in-process `bm25` bench and `loadgen teleport`: 2–4 content words of one document in
//! a template; one question in ten each with an apostrophe, a colon, parentheses, or a
//! code identifier or path.

use memory_text::is_stopword;

use crate::year::Rng;

const PLAIN: &[&str] = &[
    "what did we decide about {}?",
    "why does {} keep failing?",
    "how did we fix the {} problem",
    "when did we last discuss {}?",
    "any notes on {}",
    "remind me what happened with {}",
];
const APOSTROPHE: &[&str] = &[
    "what's the status of {}? didn't we change it?",
    "where's the {} thing we couldn't fix",
    "why doesn't {} work on the team's staging?",
];
const COLON: &[&str] = &[
    "error: {} - what does it mean?",
    "follow-up: did {} ever get resolved?",
    "decision: {}?",
];
const PARENS: &[&str] = &[
    "what changed ({}) last week?",
    "did we ship the fix (for {}) to prod?",
    "(re {}) who looked into this?",
];
const CODE: &[&str] = &[
    "where is {} used?",
    "what did we change in {}?",
    "why does {} return an error?",
    "who touched {} last",
];

/// Seed of the question generators.
pub const QUESTION_SEED: u64 = 25;

/// Lowercase alphabetic words of `text` worth asking about: not stopwords, 3+ letters,
/// each once.
#[must_use]
pub fn content_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphabetic()) {
        let word = word.to_lowercase();
        if word.len() >= 3 && !is_stopword(&word) && !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

/// Code identifiers and paths of `text`: `getUserToken`, `verify_jwt`, `src/auth/jwt.ts`.
#[must_use]
pub fn code_tokens(text: &str) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for raw in text.split_whitespace() {
        let token = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        let code_chars = token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'));
        let camel = token
            .as_bytes()
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
        let looks_like_code = token.contains('_') || token.contains('/') || camel;
        if token.len() >= 4 && code_chars && looks_like_code && !tokens.iter().any(|t| t == token) {
            tokens.push(token.to_owned());
        }
    }
    tokens
}

/// `count` distinct items of `items` in random order (all of them if fewer).
pub fn pick_some(rng: &mut Rng, items: &[String], count: usize) -> Vec<String> {
    let mut pool: Vec<&String> = items.iter().collect();
    let mut picked = Vec::with_capacity(count);
    while picked.len() < count && !pool.is_empty() {
        let at = (rng.next_u64() % pool.len() as u64) as usize;
        picked.push(pool.swap_remove(at).clone());
    }
    picked
}

/// The question number `ordinal` (which sets its kind) made from `text`, or `None`
/// when the text has too few words (or, for a code question, no code): the caller
/// draws another document.
pub fn question_from(rng: &mut Rng, text: &str, ordinal: usize) -> Option<String> {
    let words = content_words(text);
    if words.len() < 2 {
        return None;
    }
    let count = rng.range(2, 4) as usize;
    let phrase = pick_some(rng, &words, count).join(" ");
    let (templates, filling) = match ordinal % 10 {
        6 => (APOSTROPHE, phrase),
        7 => (COLON, phrase),
        8 => (PARENS, phrase),
        9 => (CODE, pick_some(rng, &code_tokens(text), 1).pop()?),
        _ => (PLAIN, phrase),
    };
    Some(rng.pick(templates).replace("{}", &filling))
}
