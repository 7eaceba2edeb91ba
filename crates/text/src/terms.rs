//! Term matching for TOC search and the BM25 analyzer: tokenizing, light stemming and whole-term overlap.
//!
//! This replaces the Phase 10.5 plan's substring matching
//! (`text.to_lowercase().contains(term)`), which matched "jwt" inside "ajwtx" and missed
//! "tokens" against "token". Here a query and a text are both cut into tokens, each
//! token is reduced to a stem, and a query term matches a text only when the text holds
//! the same whole stem:
//!
//! - [`tokenize`] lowercases and splits on anything that is not alphanumeric, then splits
//!   identifiers (`getUserToken` → `get`, `user`, `token`, plus the compound
//!   `getusertoken`).
//! - [`stem`] is a small, conservative English suffix stripper (plurals, `-ed`, `-ing`,
//!   `-ly`, a final `-e`), after Porter's step 1 and step 5.
//! - [`query_terms`] turns a query into deduplicated stems without [`STOPWORDS`].
//! - [`TermIndex`] holds the stems of one text, built once and probed by many queries.
//! - [`term_overlap_score`] is the fraction of query terms the text holds, `None` when
//!   it holds none (the contract of the plan's `term_overlap_score`).
//!
//! In the unit tests (`terms_tests.rs`): `query_terms("JWT tokens")` scored against
//! `TermIndex::new("Fixed the getUserToken JWT bug")` is `Some(1.0)`, and
//! `query_terms("jwt")` against `TermIndex::new("ajwt jwtx")` is `None`.
//!
//! What the stemmer conflates, and what it does not:
//! - conflated: token/tokens, query/queries/queried/querying,
//!   tokenize/tokenizes/tokenized/tokenizing, decide/decides/decided/deciding,
//!   expire/expires/expired/expiring, use/uses/used/using, debug/debugged/debugging,
//!   embed/embeds/embedded/embedding, queue/queued/queuing, agree/agreed,
//!   panic/panicked, cancel/cancelled, quick/quickly, week/weekly, api/apis, jwt/jwts.
//! - not conflated: derivations (`expiry`, `expiration` and `expire` are three stems;
//!   `decision` is not `decide`), irregular forms (`ran`/`run`, `wrote`/`write`),
//!   `-ically` adverbs of `-ic` adjectives (`automatically` is `automatical`),
//!   `freed`/`free`, and plurals of `-us` words of five or more letters
//!   (`menus` stays `menus` so that `status`/`statuses` and `focus`/`focused` conflate).
//!
//! It is not:
//! - a ranking function with term weights (every query term counts the same; BM25 is
//!   the job of the search crate),
//! - a language-aware analyzer: stemming is English only and applies to ASCII words;
//!   other words are lowercased and matched whole, scripts written without spaces
//!   (Chinese, Japanese) are one token per run, and text is not Unicode-normalized,
//! - fuzzy matching: a typo is a different term.

use std::collections::HashSet;
use std::sync::LazyLock;

/// English function words left out of query terms and of [`TermIndex`]es, sorted and
/// unique (a unit test checks).
///
/// Compact on purpose: pronouns, articles, auxiliaries, conjunctions and common
/// prepositions, plus the halves of contractions that survive tokenizing (`don`, `ll`).
/// Words that can carry the topic of a question in this domain (`up`, `down`, `out`,
/// `off`, `over`, `get`, `set`, `use`, `new`, `us`) are kept as terms.
#[rustfmt::skip]
pub const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "aren", "as", "at", "be", "because", "been", "before", "being", "between",
    "both", "but", "by", "can", "could", "couldn", "did", "didn", "do", "does", "doesn",
    "doing", "don", "during", "each", "either", "else", "ever", "every", "few", "for",
    "from", "further", "had", "hadn", "has", "hasn", "have", "haven", "having", "he",
    "her", "here", "hers", "herself", "him", "himself", "his", "how", "however", "i", "if",
    "in", "into", "is", "isn", "it", "its", "itself", "just", "ll", "me", "might", "more",
    "most", "much", "must", "my", "myself", "neither", "no", "nor", "not", "now", "of",
    "on", "once", "only", "or", "other", "our", "ours", "ourselves", "own", "re", "same",
    "shall", "she", "should", "shouldn", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this",
    "those", "through", "thus", "to", "too", "until", "upon", "ve", "very", "was", "wasn",
    "we", "were", "weren", "what", "whatever", "when", "where", "whether", "which",
    "while", "who", "whom", "whose", "why", "will", "with", "won", "would", "wouldn",
    "yet", "you", "your", "yours", "yourself",
];

/// [`STOPWORDS`] as a set: a hash probe is several times faster than a binary search
/// of 150 strings, and every token of every indexed text goes through it.
static STOPWORD_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOPWORDS.iter().copied().collect());

/// Whether a lowercase token is one of the [`STOPWORDS`].
#[must_use]
pub fn is_stopword(token: &str) -> bool {
    STOPWORD_SET.contains(token)
}

/// Splits `text` into lowercase tokens, in order, duplicates kept.
///
/// - Anything that is not alphanumeric separates tokens: `src/auth/jwt.ts` →
///   `src`, `auth`, `jwt`, `ts`.
/// - Identifiers are split further at underscores and case changes: `getUserToken` →
///   `get`, `user`, `token`; `snake_case_name` → `snake`, `case`, `name`; `HTTPServer`
///   → `http`, `server`; `base64Encode` → `base64`, `encode`. Letters and digits are not
///   split apart (`v2`, `utf8`, `ipv6` stay whole), and an uppercase run followed by a
///   single lowercase letter stays whole, so `URLs` and `JWTs` are `urls` and `jwts`.
/// - A split identifier also yields its whole lowercase compound without underscores
///   (`getusertoken`, `snakecasename`) after its parts, so that an exact identifier
///   query matches its identifier more strongly than scattered words do.
/// - Single-character tokens are dropped unless they are a digit.
#[must_use]
pub fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for_each_token(text, |token| tokens.push(token.to_owned()));
    tokens
}

/// Calls `emit` with each token [`tokenize`] would return, reusing one buffer.
fn for_each_token(text: &str, mut emit: impl FnMut(&str)) {
    for_each_located_token(text, |_, _, token| emit(token));
}

/// Calls `emit(word_start, word_end, token)` for each token [`tokenize`] would return,
/// with the byte range of the word it comes from (all parts of `getUserToken` and its
/// compound carry the whole identifier's range). For analyzers that must report
/// offsets, so they cut text exactly as this module does.
pub fn for_each_located_token(text: &str, mut emit: impl FnMut(usize, usize, &str)) {
    let mut part_ranges: Vec<(usize, usize)> = Vec::new();
    let mut token = String::new();
    let mut word_start_opt: Option<usize> = None;
    let word_ends = text
        .char_indices()
        .map(|(index, ch)| (index, is_word_char(ch)))
        .chain(std::iter::once((text.len(), false)));
    for (index, in_word) in word_ends {
        match (in_word, word_start_opt) {
            (true, None) => word_start_opt = Some(index),
            (false, Some(word_start)) => {
                word_start_opt = None;
                let word = &text[word_start..index];
                split_identifier(word, &mut part_ranges);
                for &(start, end) in &part_ranges {
                    token.clear();
                    push_lowercase(&word[start..end], &mut token);
                    if is_kept_token(&token) {
                        emit(word_start, index, &token);
                    }
                }
                if part_ranges.len() > 1 {
                    token.clear();
                    for &(start, end) in &part_ranges {
                        push_lowercase(&word[start..end], &mut token);
                    }
                    debug_assert!(
                        is_kept_token(&token),
                        "a compound has two or more characters"
                    );
                    emit(word_start, index, &token);
                }
            }
            _ => {}
        }
    }
}

/// Characters that make up a word before identifier splitting.
fn is_word_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Fills `part_ranges` with the byte ranges of the parts of one identifier-like word:
/// split at `_`, before an uppercase letter that follows a lowercase letter or a digit,
/// and before the last letter of an uppercase run that starts a lowercase word.
fn split_identifier(word: &str, part_ranges: &mut Vec<(usize, usize)>) {
    part_ranges.clear();
    let mut part_start_opt: Option<usize> = None;
    let mut prev_char_opt: Option<char> = None;
    for (index, ch) in word.char_indices() {
        if ch == '_' {
            if let Some(part_start) = part_start_opt.take() {
                part_ranges.push((part_start, index));
            }
            prev_char_opt = None;
            continue;
        }
        match (part_start_opt, prev_char_opt) {
            (None, _) => part_start_opt = Some(index),
            (Some(part_start), Some(prev_char))
                if is_case_boundary(prev_char, ch, &word[index + ch.len_utf8()..]) =>
            {
                part_ranges.push((part_start, index));
                part_start_opt = Some(index);
            }
            _ => {}
        }
        prev_char_opt = Some(ch);
    }
    if let Some(part_start) = part_start_opt {
        part_ranges.push((part_start, word.len()));
    }
}

/// Whether a new part starts at `current`, given the character before it and the text
/// after it: `tU` (`getUser`), `4E` (`base64Encode`), and `PSe` (`HTTPServer`) but not `Ps`
/// (`URLs`) or `Pv6` (`IPv6`).
fn is_case_boundary(prev: char, current: char, rest: &str) -> bool {
    if !current.is_uppercase() {
        return false;
    }
    if prev.is_lowercase() || prev.is_numeric() {
        return true;
    }
    prev.is_uppercase()
        && rest
            .chars()
            .take_while(|next| next.is_lowercase())
            .take(2)
            .count()
            == 2
}

/// Appends the lowercase form of `part` to `out`.
fn push_lowercase(part: &str, out: &mut String) {
    if part.is_ascii() {
        let start = out.len();
        out.push_str(part);
        out[start..].make_ascii_lowercase();
    } else {
        out.extend(part.chars().flat_map(char::to_lowercase));
    }
}

/// Tokens of two or more characters are kept; a single character only if numeric.
fn is_kept_token(token: &str) -> bool {
    let mut chars = token.chars();
    match (chars.next(), chars.next()) {
        (Some(_), Some(_)) => true,
        (Some(only), None) => only.is_numeric(),
        (None, _) => false,
    }
}

/// Reduces one lowercase token (as produced by [`tokenize`]) to its stem.
///
/// Conservative by design: it strips plural `-s`/`-es`/`-ies`, `-ed`, `-ing` and
/// adverbial `-ly`, undoes doubled consonants (`stopped` → `stop`), and removes a final
/// `-e` the way Porter's step 5 does, so that every inflection of a word lands on the
/// same stem (`decide`, `decided`, `deciding` → `decid`; `tokens` → `token`; `queries`
/// → `query`). Stems are not always words. See the module docs for what is not
/// conflated.
///
/// Words of three characters or fewer, and words with anything other than ASCII
/// lowercase letters (numbers, `v2`, `sha256`, `café`, uppercase), are returned
/// unchanged.
#[must_use]
pub fn stem(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    stem_into(word, &mut out);
    out
}

/// Words whose stem the suffix rules would get wrong, with the stem to use.
const STEM_EXCEPTIONS: &[(&str, &str)] = &[
    ("alias", "alias"),
    ("atlas", "atlas"),
    ("bias", "bias"),
    ("canvas", "canvas"),
    ("dying", "die"),
    ("lens", "lens"),
    ("lying", "lie"),
    ("news", "news"),
    ("panicked", "panic"),
    ("panicking", "panic"),
    ("tying", "tie"),
];

/// Words left alone once their plural `-s` is gone (`embeds` → `embed`, not `emb`).
const INVARIANT_AFTER_PLURAL: &[&str] = &["embed"];

/// Writes the stem of `word` into `out`, replacing its contents.
fn stem_into(word: &str, out: &mut String) {
    out.clear();
    out.push_str(word);
    if word.len() <= 3 || !word.bytes().all(|byte| byte.is_ascii_lowercase()) {
        return;
    }
    if let Some(&(_, exception_stem)) = STEM_EXCEPTIONS.iter().find(|(w, _)| *w == word) {
        out.clear();
        out.push_str(exception_stem);
        return;
    }
    strip_plural(out);
    if out.len() <= 3 || INVARIANT_AFTER_PLURAL.contains(&out.as_str()) {
        return;
    }
    strip_ly(out);
    strip_ed_ing(out);
    normalize_ending(out);
    debug_assert!(
        out.len() >= 3,
        "stems of words longer than 3 keep 3 letters"
    );
}

/// Plurals and third persons: `classes` → `class`, `queries` → `query`, `ties` → `tie`,
/// `tokens` → `token`; `class` and `status` (an `-us` word of 5+ letters) stay.
fn strip_plural(word: &mut String) {
    let len = word.len();
    if word.ends_with("sses") && len >= 5 {
        word.truncate(len - 2);
    } else if word.ends_with("ies") {
        let stem_len = len - 3;
        word.truncate(stem_len);
        word.push_str(if stem_len >= 2 { "y" } else { "ie" });
    } else if word.ends_with("ss") || (word.ends_with("us") && len >= 5) {
        // `class`, `access`, `status`, `focus`: not plurals.
    } else if word.ends_with('s') {
        word.truncate(len - 1);
    }
}

/// Adverbs: `easily` → `easy`, `quickly` → `quick`, `really` → `real`,
/// `carefully` → `careful`, `completely` → `complete`. Only after the letters Porter2
/// accepts before `-ly` (c d e g h k m n r t), `-al` or `-ful`, and only when four
/// letters remain, so `reply`, `apply`, `supply`, `early`, `only` and `family` stay
/// (`family` becomes `famy` through `-ily`, as does `families`).
fn strip_ly(word: &mut String) {
    let len = word.len();
    if !word.ends_with("ly") {
        return;
    }
    if word.ends_with("ily") {
        if len - 3 >= 3 {
            word.truncate(len - 3);
            word.push('y');
        }
        return;
    }
    let base_len = len - 2;
    if base_len < 4 {
        return;
    }
    let base = &word.as_bytes()[..base_len];
    let strips = base.ends_with(b"al")
        || base.ends_with(b"ful")
        || matches!(
            base[base_len - 1],
            b'c' | b'd' | b'e' | b'g' | b'h' | b'k' | b'm' | b'n' | b'r' | b't'
        );
    if strips {
        word.truncate(base_len);
    }
}

/// Past tenses and participles: `queried` → `query`, `stopped` → `stop`,
/// `tokenizing` → `tokenize`, `hoped` → `hope`, `used` → `use`, `added` → `add`.
/// Words ending in `-eed` are left to [`normalize_ending`]; a remaining stem must hold a
/// vowel (`thing`, `string`, `shed` stay) and three letters, or be two letters that
/// start with a vowel and get an `e` back (`used` → `use`, `aged` → `age`).
fn strip_ed_ing(word: &mut String) {
    let len = word.len();
    if word.ends_with("eed") {
        return;
    }
    if word.ends_with("ied") {
        let stem_len = len - 3;
        word.truncate(stem_len);
        word.push_str(if stem_len >= 2 { "y" } else { "ie" });
        return;
    }
    let suffix_len = if word.ends_with("ed") {
        2
    } else if word.ends_with("ing") {
        3
    } else {
        return;
    };
    let stem_len = len - suffix_len;
    let stem_bytes = &word.as_bytes()[..stem_len];
    let is_short_vowel_start = stem_len == 2 && ends_with_short_syllable(stem_bytes);
    if !contains_vowel(stem_bytes) || (stem_len < 3 && !is_short_vowel_start) {
        return;
    }
    word.truncate(stem_len);
    let bytes = word.as_bytes();
    if word.ends_with("at") || word.ends_with("bl") || word.ends_with("iz") {
        // `created` → `create`, `enabled` → `enable`, `tokenized` → `tokenize`.
        word.push('e');
    } else if ends_with_double_consonant(bytes)
        && !matches!(bytes[bytes.len() - 1], b'l' | b's' | b'z')
        && bytes.len() >= 4
    {
        // `stopped` → `stop`, `debugging` → `debug`; `filled`, `passed`, `added` stay.
        word.pop();
    } else if measure(bytes) == 1 && ends_with_short_syllable(bytes) {
        // `hoped` → `hope`, `coded` → `code`, `used` → `use`.
        word.push('e');
    }
}

/// Final normalization shared by all forms: `-eed` after a syllable becomes `-ee`
/// (`agreed` → `agree`, `exceeded` → `exceed` → `excee`; `need`, `speed` stay), `-ie`
/// becomes `-y` (`cookie` → `cooky`, like `cookies`), and a final `e` goes when Porter's
/// step 5 drops it (`decide` → `decid`, `cache` → `cach`, `issue` → `issu`) or after `u`
/// (`queue` → `queu`), but stays after a short syllable (`code`, `note`, `plane`);
/// a final `ll` after two syllables loses an `l` (`cancelled` → `cancel`, `fill` stays).
fn normalize_ending(word: &mut String) {
    let len = word.len();
    if word.ends_with("eed") && measure(&word.as_bytes()[..len - 3]) > 0 {
        word.pop();
    }
    let len = word.len();
    if len >= 5 && word.ends_with("ie") {
        word.truncate(len - 2);
        word.push('y');
    }
    let len = word.len();
    if len >= 4 && word.ends_with('e') {
        let base = &word.as_bytes()[..len - 1];
        let base_measure = measure(base);
        let drops =
            base_measure > 1 || (base_measure == 1 && !ends_with_cvc(base)) || base.ends_with(b"u");
        if drops {
            word.pop();
        }
    }
    if word.ends_with("ll") && measure(word.as_bytes()) > 1 {
        // Porter's step 5b: `cancelled` → `cancell` → `cancel`, `install` → `instal`.
        word.pop();
    }
}

/// Porter's consonant test on ASCII lowercase letters: `y` is a consonant at the start
/// of a word or after a vowel.
fn is_consonant(bytes: &[u8], index: usize) -> bool {
    match bytes[index] {
        b'a' | b'e' | b'i' | b'o' | b'u' => false,
        b'y' => index == 0 || !is_consonant(bytes, index - 1),
        _ => true,
    }
}

fn contains_vowel(bytes: &[u8]) -> bool {
    (0..bytes.len()).any(|index| !is_consonant(bytes, index))
}

/// Porter's measure: the number of vowel-run-then-consonant-run pairs.
fn measure(bytes: &[u8]) -> usize {
    let mut num_pairs = 0;
    let mut prev_is_vowel = false;
    for index in 0..bytes.len() {
        let is_vowel = !is_consonant(bytes, index);
        if prev_is_vowel && !is_vowel {
            num_pairs += 1;
        }
        prev_is_vowel = is_vowel;
    }
    num_pairs
}

fn ends_with_double_consonant(bytes: &[u8]) -> bool {
    let len = bytes.len();
    len >= 2 && bytes[len - 1] == bytes[len - 2] && is_consonant(bytes, len - 1)
}

/// Ends consonant-vowel-consonant, the last not `w`, `x` or `y` (`hop`, `cod`, `plan`).
fn ends_with_cvc(bytes: &[u8]) -> bool {
    let len = bytes.len();
    len >= 3
        && is_consonant(bytes, len - 3)
        && !is_consonant(bytes, len - 2)
        && is_consonant(bytes, len - 1)
        && !matches!(bytes[len - 1], b'w' | b'x' | b'y')
}

/// A cvc ending, or a two-letter word of a vowel then a consonant (`us`, `ag`).
fn ends_with_short_syllable(bytes: &[u8]) -> bool {
    ends_with_cvc(bytes) || (bytes.len() == 2 && !is_consonant(bytes, 0) && is_consonant(bytes, 1))
}

/// The terms of a query: its tokens without [`STOPWORDS`], stemmed, first occurrence
/// first. Empty when the query holds only stopwords or punctuation.
#[must_use]
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut term = String::new();
    for_each_token(query, |token| {
        if is_stopword(token) {
            return;
        }
        stem_into(token, &mut term);
        if !terms.contains(&term) {
            terms.push(term.clone());
        }
    });
    terms
}

/// The set of stems of one text's tokens (stopwords left out), built once so that
/// many queries can be scored against the text cheaply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermIndex {
    stems: HashSet<String>,
}

impl TermIndex {
    /// Indexes `text`: [`tokenize`], drop [`STOPWORDS`], [`stem`].
    #[must_use]
    pub fn new(text: &str) -> Self {
        let mut stems = HashSet::new();
        let mut term = String::new();
        for_each_token(text, |token| {
            if is_stopword(token) {
                return;
            }
            stem_into(token, &mut term);
            if !stems.contains(term.as_str()) {
                stems.insert(term.clone());
            }
        });
        TermIndex { stems }
    }

    /// Whether the text holds `term`, a stem as returned by [`query_terms`] or [`stem`].
    #[must_use]
    pub fn contains(&self, term: &str) -> bool {
        self.stems.contains(term)
    }

    /// Number of distinct stems.
    #[must_use]
    pub fn len(&self) -> usize {
        self.stems.len()
    }

    /// Whether the text held no term at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.stems.is_empty()
    }
}

/// The fraction of `terms` the indexed text holds, from `0.0` exclusive to `1.0`;
/// `None` when it holds none of them, or when `terms` is empty.
///
/// `terms` are stems, as [`query_terms`] returns them; each counts once whatever the
/// number of its occurrences in the text.
#[must_use]
pub fn term_overlap_score(text_index: &TermIndex, terms: &[String]) -> Option<f32> {
    let num_matched = terms
        .iter()
        .filter(|term| text_index.contains(term))
        .count();
    if num_matched == 0 {
        return None;
    }
    Some(num_matched as f32 / terms.len() as f32)
}

/// A cheap necessary condition for a text to hold any of some terms: a substring test
/// of the lowercased text, with no tokenizing or stemming.
///
/// Scanning many texts for a query (every event of a time range, every node of a level)
/// is dominated by tokenizing them; most hold none of the query's terms, and this rules
/// them out first. It never rules out a text that does hold a term
/// ([`TermIndex::contains`]): each term is probed by a prefix that every word with that
/// stem contains (the stem without a final `e`, `i` or `y`, which stemming may add or
/// exchange: `use`/`using`, `query`/`queries`; the irregular words of the stemmer's exception table are probed whole), in
/// the text lowercased the way the tokenizer lowercases, with `_` removed so that
/// `refresh_token` holds the compound `refreshtoken`. A property test checks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermPrefilter {
    probes: Vec<String>,
}

impl TermPrefilter {
    /// The prefilter of `terms` (stems, as [`query_terms`] returns them).
    #[must_use]
    pub fn new(terms: &[String]) -> Self {
        let mut probes: Vec<String> = Vec::with_capacity(terms.len());
        for term in terms {
            let mut probe = term.as_str();
            if probe.len() >= 3
                && probe.is_ascii()
                && let Some(shorter) = probe.strip_suffix(['e', 'i', 'y'])
            {
                probe = shorter;
            }
            probes.push(probe.to_string());
            probes.extend(
                STEM_EXCEPTIONS
                    .iter()
                    .filter(|(_, exception_stem)| exception_stem == term)
                    .map(|(word, _)| (*word).to_string()),
            );
        }
        probes.sort();
        probes.dedup();
        TermPrefilter { probes }
    }

    /// False when `text` certainly holds none of the terms; true when it may.
    #[must_use]
    pub fn may_match(&self, text: &str) -> bool {
        if self.probes.is_empty() {
            return false;
        }
        let mut haystack = String::with_capacity(text.len());
        push_lowercase(text, &mut haystack);
        haystack.retain(|ch| ch != '_');
        self.probes
            .iter()
            .any(|probe| haystack.contains(probe.as_str()))
    }
}

#[cfg(test)]
#[path = "terms_tests.rs"]
mod tests;
