//! Search phrases: what `search` looks for. The search-first spec has an LLM write
//! three to five phrases per question, each a different angle; a caller that has one
//! passes them as `phrases`. Without them the question is expanded here, offline, into
//! at most three phrases:
//!
//! - the question itself (after its time hint is taken out);
//! - its key terms: its words without the function words ("what did we decide about
//!   JWT expiry" → "decide JWT expiry"), which an embedding model reads as a topic
//!   rather than as a question;
//! - its entity-like tokens: names, acronyms, identifiers, paths, numbers and quoted
//!   text ("JWT", "getUserToken", "src/auth.rs", "v2", "Caroline"), which must appear in
//!   a relevant document, so a keyword search for them alone ranks the documents that
//!   have them first.
//!
//! Each phrase is searched by every accelerator tier, and the lists are fused
//! (`crate::hybrid::fuse_lists`) with each phrase's [`Phrase::weight`]: the question
//! and the caller's phrases count fully, the expansions half, so they add evidence
//! without outvoting the question.
//!
//! The offline expansion is off by default (`[teleport] expand_query`): on the LoCoMo
//! dev slice it lowered hybrid R@1000 tokens from 0.834 to 0.796. The entity phrase
//! does the harm: in a conversation between two people their names are in every turn,
//! and stressing the question's rarer words pushes down evidence phrased differently;
//! the key-term phrase alone changes nothing (0.835). docs/benchmarks.md has the table.

use memory_text::is_stopword;

use crate::error::QueryError;

/// Most phrases a caller may pass.
pub const MAX_PHRASES: usize = 5;
/// Longest phrase a caller may pass, characters.
pub const MAX_PHRASE_CHARS: usize = 500;
/// Weight of a phrase derived from the question offline.
const EXPANSION_WEIGHT: f32 = 0.5;

/// Where a phrase came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PhraseOrigin {
    /// The question.
    Query,
    /// The request's `phrases`.
    Caller,
    /// The question's key terms.
    KeyTerms,
    /// The question's entity-like tokens.
    Entities,
}

/// One thing to search for.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Phrase {
    pub(crate) text: String,
    pub(crate) origin: PhraseOrigin,
}

impl Phrase {
    /// How much the phrase's lists count in the fusion.
    pub(crate) fn weight(&self) -> f32 {
        match self.origin {
            PhraseOrigin::Query | PhraseOrigin::Caller => 1.0,
            PhraseOrigin::KeyTerms | PhraseOrigin::Entities => EXPANSION_WEIGHT,
        }
    }
}

/// Checks the request's `phrases`: one to [`MAX_PHRASES`], none blank or longer than
/// [`MAX_PHRASE_CHARS`].
///
/// # Errors
/// `invalid_argument` saying what is wrong.
pub(crate) fn validate(phrases: &[String]) -> crate::Result<()> {
    if phrases.is_empty() || phrases.len() > MAX_PHRASES {
        return Err(QueryError::invalid_argument(format!(
            "phrases must hold 1 to {MAX_PHRASES} search phrases, got {}",
            phrases.len()
        )));
    }
    for (index, phrase) in phrases.iter().enumerate() {
        if phrase.trim().is_empty() {
            return Err(QueryError::invalid_argument(format!(
                "phrases[{index}] is empty"
            )));
        }
        let chars = phrase.chars().count();
        if chars > MAX_PHRASE_CHARS {
            return Err(QueryError::invalid_argument(format!(
                "phrases[{index}] has {chars} characters; at most {MAX_PHRASE_CHARS}"
            )));
        }
    }
    Ok(())
}

/// The phrases of a search: the question, then the caller's phrases when there are
/// any, else (when `expand`) the question's offline expansions. Duplicates (same words,
/// ignoring case) are dropped.
pub(crate) fn search_phrases(query: &str, caller: Option<&[String]>, expand: bool) -> Vec<Phrase> {
    let mut phrases = vec![Phrase {
        text: query.trim().to_owned(),
        origin: PhraseOrigin::Query,
    }];
    let mut push = |text: String, origin: PhraseOrigin| {
        let key = normalized(&text);
        if !key.is_empty() && phrases.iter().all(|p| normalized(&p.text) != key) {
            phrases.push(Phrase { text, origin });
        }
    };
    match caller {
        Some(caller) => {
            for text in caller {
                push(text.trim().to_owned(), PhraseOrigin::Caller);
            }
        }
        None if expand => {
            let words = words(query);
            let key_terms: Vec<&str> = words
                .iter()
                .copied()
                .filter(|word| !is_stopword(&word.to_lowercase()))
                .collect();
            // One key term is the entity phrase or a weak phrase on its own.
            if key_terms.len() > 1 {
                push(key_terms.join(" "), PhraseOrigin::KeyTerms);
            }
            let entities = entities(query, &words);
            if !entities.is_empty() {
                push(entities.join(" "), PhraseOrigin::Entities);
            }
        }
        None => {}
    }
    phrases
}

/// A phrase's words, lowercase, single-spaced: for duplicate detection.
fn normalized(text: &str) -> String {
    words(text)
        .iter()
        .map(|word| word.to_lowercase())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of `text`: whitespace-separated, without surrounding punctuation (but
/// keeping inner `.`, `/`, `_`, `-`, `:` of paths and identifiers).
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|word| word.trim_matches(|ch: char| !ch.is_alphanumeric()))
        .filter(|word| !word.is_empty())
        .collect()
}

/// The entity-like tokens of the question: quoted text, then words that are names
/// (capitalized, except a sentence's first word), acronyms, identifiers (inner capitals,
/// underscores, dots, slashes, colons) or contain digits. Function words never are.
fn entities<'q>(query: &'q str, words: &[&'q str]) -> Vec<&'q str> {
    let mut found: Vec<&str> = quoted(query);
    let mut sentence_start = true;
    for raw in query.split_whitespace() {
        let word = raw.trim_matches(|ch: char| !ch.is_alphanumeric());
        let first_of_sentence = sentence_start;
        sentence_start = raw.ends_with(['.', '?', '!', ':']);
        if word.is_empty() || !words.contains(&word) || is_stopword(&word.to_lowercase()) {
            continue;
        }
        if is_entity(word, first_of_sentence) && !found.contains(&word) {
            found.push(word);
        }
    }
    found
}

fn is_entity(word: &str, first_of_sentence: bool) -> bool {
    let mut chars = word.chars();
    let first_upper = chars.next().is_some_and(char::is_uppercase);
    let inner_upper = chars.clone().any(char::is_uppercase);
    let all_upper = word.chars().filter(|ch| ch.is_alphabetic()).count() >= 2
        && word
            .chars()
            .filter(|ch| ch.is_alphabetic())
            .all(char::is_uppercase);
    let has_digit = word.chars().any(|ch| ch.is_ascii_digit());
    let identifier = word.contains(['_', '.', '/', ':']);
    all_upper
        || inner_upper
        || has_digit
        || identifier
        || (first_upper && !first_of_sentence && word.chars().count() > 1)
}

/// Text between double quotes or backticks (an unclosed quote quotes nothing).
fn quoted(query: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for quote in ['"', '`'] {
        let parts: Vec<&str> = query.split(quote).collect();
        // Odd parts are inside quotes; the last part is inside only when unclosed.
        for inside in parts
            .iter()
            .take(parts.len().saturating_sub(1))
            .skip(1)
            .step_by(2)
        {
            let inside = inside.trim();
            if !inside.is_empty() && !found.contains(&inside) {
                found.push(inside);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(phrases: &[Phrase]) -> Vec<(&str, PhraseOrigin)> {
        phrases
            .iter()
            .map(|p| (p.text.as_str(), p.origin))
            .collect()
    }

    #[test]
    fn a_question_expands_into_key_terms_and_entities() {
        let phrases = search_phrases("What did we decide about JWT expiry?", None, true);
        assert_eq!(
            texts(&phrases),
            [
                ("What did we decide about JWT expiry?", PhraseOrigin::Query),
                ("decide JWT expiry", PhraseOrigin::KeyTerms),
                ("JWT", PhraseOrigin::Entities),
            ]
        );
        let phrases = search_phrases(
            "When did Caroline go to the LGBTQ support group?",
            None,
            true,
        );
        assert_eq!(
            texts(&phrases)[2],
            ("Caroline LGBTQ", PhraseOrigin::Entities)
        );
    }

    #[test]
    fn identifiers_paths_numbers_and_quotes_are_entities() {
        let phrases = search_phrases(
            "why does getUserToken in src/auth.rs fail with \"token expired\" on v2",
            None,
            true,
        );
        assert_eq!(
            phrases.last().map(|p| p.text.as_str()),
            Some("token expired getUserToken src/auth.rs v2")
        );
    }

    #[test]
    fn a_sentence_s_first_word_is_no_name_and_nothing_repeats() {
        // "Deploy" starts the sentence; the key terms equal the query's words.
        let phrases = search_phrases("Deploy pipeline broken", None, true);
        assert_eq!(
            texts(&phrases),
            [("Deploy pipeline broken", PhraseOrigin::Query)]
        );
        let phrases = search_phrases("the retry", None, true);
        assert_eq!(phrases.len(), 1, "one key term adds no phrase: {phrases:?}");
    }

    #[test]
    fn caller_phrases_replace_the_expansion() {
        let caller = vec!["token lifetime".to_owned(), "JWT expiry".to_owned()];
        let phrases = search_phrases("What about JWT expiry?", Some(&caller), true);
        assert_eq!(
            texts(&phrases),
            [
                ("What about JWT expiry?", PhraseOrigin::Query),
                ("token lifetime", PhraseOrigin::Caller),
                ("JWT expiry", PhraseOrigin::Caller),
            ]
        );
        assert!((phrases[1].weight() - 1.0).abs() < f32::EPSILON);
        assert!(search_phrases("What about JWT expiry?", None, false).len() == 1);
    }

    #[test]
    fn caller_phrases_are_validated() {
        assert!(validate(&[]).is_err());
        assert!(validate(&vec!["a".to_owned(); 6]).is_err());
        assert_eq!(
            validate(&["ok".to_owned(), "  ".to_owned()])
                .expect_err("blank")
                .to_string(),
            "phrases[1] is empty"
        );
        assert!(validate(&["x".repeat(501)]).is_err());
        assert!(validate(&["jwt".to_owned()]).is_ok());
    }
}
