//! `memory-text`: how agent-memory reads text — terms, token estimates and char-safe
//! truncation.
//!
//! Every part of agent-memory that looks at words looks at them the same way: the
//! index-free TOC search, the BM25 analyzer `memory_en`, the grip extractor and the
//! summarizers all cut text into the terms of this crate, so "tokens" finds "token" and
//! "jwt" never matches inside another word, whichever tier answers.
//! - terms: [`tokenize`] (identifiers split: `getUserToken` → get, user, token, and the
//!   compound `getusertoken`), [`stem`] (light English suffix stripping),
//!   [`query_terms`] (deduplicated stems without [`STOPWORDS`]), [`TermIndex`] and
//!   [`term_overlap_score`] (whole-term overlap), [`TermPrefilter`] (a cheap rejection
//!   before tokenizing a text);
//! - [`estimate_tokens`]: four characters to a token ([`CHARS_PER_TOKEN`]), rounded up,
//!   for reply and prompt budgets;
//! - [`truncate_chars`] and [`truncate_bytes`]: the one char-safe truncation, by
//!   characters or by bytes.
//!
//! ```
//! use memory_text::{TermIndex, estimate_tokens, query_terms, term_overlap_score, truncate_chars};
//!
//! let text = TermIndex::new("Fixed the getUserToken JWT bug");
//! assert_eq!(query_terms("the JWT tokens"), ["jwt", "token"]);
//! assert_eq!(term_overlap_score(&text, &query_terms("JWT tokens")), Some(1.0));
//! assert_eq!(term_overlap_score(&TermIndex::new("ajwt jwtx"), &query_terms("jwt")), None);
//!
//! assert_eq!(estimate_tokens("four score".chars().count()), 3);
//! assert_eq!(truncate_chars("héllo", 2), "hé");
//! ```
//!
//! It is not:
//! - a ranking function: every query term counts the same here; BM25 weighting is
//!   `memory-search`'s job, and scoring TOC nodes is `memory-toc`'s;
//! - a language-aware analyzer: stemming is English only and for ASCII words, text is
//!   not Unicode-normalized;
//! - a model tokenizer: token counts are estimates for budgets, not what a model counts.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod terms;
mod tokens;
mod truncate;

pub use terms::{
    STOPWORDS, TermIndex, TermPrefilter, for_each_located_token, is_stopword, query_terms, stem,
    term_overlap_score, tokenize,
};
pub use tokens::{CHARS_PER_TOKEN, estimate_tokens};
pub use truncate::{truncate_bytes, truncate_chars};
