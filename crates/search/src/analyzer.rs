//! `memory_en`: the tantivy tokenizer that turns text into the same terms as
//! [`memory_text`], so that BM25 search and the index-free TOC search agree on what
//! a word is.
//!
//! For every word (a run of alphanumeric characters and `_`), the terms are those of
//! [`memory_text::tokenize`] (identifier parts, then the compound: `getUserToken`
//! → `get`, `user`, `token`, `getusertoken`) without [`memory_text::STOPWORDS`],
//! each reduced by [`memory_text::stem`]. A query built from
//! [`memory_text::query_terms`] therefore finds exactly the documents whose
//! [`memory_text::TermIndex`] holds the term.
//!
//! Offsets are those of the whole word (a part of `getUserToken` highlights the whole
//! identifier in snippets); positions count emitted terms, one per term.

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};

/// The name `memory_en` is registered under, and the tokenizer of the `text` and
/// `keywords` fields.
pub const MEMORY_EN: &str = "memory_en";

/// The `memory_en` tokenizer. Stateless; cloned freely by tantivy.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryEnTokenizer;

impl MemoryEnTokenizer {
    /// The tokenizer as a [`TextAnalyzer`], ready for
    /// `index.tokenizers().register(MEMORY_EN, …)`.
    #[must_use]
    pub fn analyzer() -> TextAnalyzer {
        TextAnalyzer::from(Self)
    }
}

impl Tokenizer for MemoryEnTokenizer {
    type TokenStream<'a> = MemoryEnTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        let mut tokens = Vec::new();
        for_each_term(text, |offset_from, offset_to, term| {
            let position = tokens.len();
            tokens.push(Token {
                offset_from,
                offset_to,
                position,
                text: term,
                position_length: 1,
            });
        });
        MemoryEnTokenStream {
            tokens,
            next_index: 0,
            current: Token::default(),
        }
    }
}

/// The terms of one text, computed up front.
#[derive(Debug)]
pub struct MemoryEnTokenStream {
    tokens: Vec<Token>,
    next_index: usize,
    current: Token,
}

impl TokenStream for MemoryEnTokenStream {
    fn advance(&mut self) -> bool {
        let Some(token) = self.tokens.get_mut(self.next_index) else {
            return false;
        };
        self.current = std::mem::take(token);
        self.next_index += 1;
        true
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

/// The terms of `text` in order, duplicates kept: what `memory_en` indexes.
#[must_use]
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |_, _, term| out.push(term));
    out
}

/// Calls `emit(word_start, word_end, term)` for every term of `text`: the tokens of
/// [`memory_text::for_each_located_token`] without stopwords, stemmed.
fn for_each_term(text: &str, mut emit: impl FnMut(usize, usize, String)) {
    memory_text::for_each_located_token(text, |word_start, word_end, token| {
        if !memory_text::is_stopword(token) {
            emit(word_start, word_end, memory_text::stem(token));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the terms of `memory_text` applied to the whole text.
    fn reference_terms(text: &str) -> Vec<String> {
        memory_text::tokenize(text)
            .into_iter()
            .filter(|token| !memory_text::is_stopword(token))
            .map(|token| memory_text::stem(&token))
            .collect()
    }

    fn tokens_of(text: &str) -> Vec<Token> {
        let mut analyzer = MemoryEnTokenizer::analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut tokens = Vec::new();
        stream.process(&mut |token| tokens.push(token.clone()));
        tokens
    }

    #[test]
    fn splits_identifiers_stems_and_drops_stopwords() {
        assert_eq!(
            analyze("The getUserToken() returned tokens"),
            ["get", "user", "token", "getusertoken", "return", "token"]
        );
        assert_eq!(
            analyze("refresh_jwt_token in src/auth/jwt.ts"),
            [
                "refresh",
                "jwt",
                "token",
                "refreshjwttoken",
                "src",
                "auth",
                "jwt",
                "ts"
            ]
        );
        assert!(analyze("").is_empty());
        assert!(analyze("?! -- () {}").is_empty());
        assert!(analyze("what is the").is_empty());
    }

    #[test]
    fn agrees_with_toc_terms_on_tricky_text() {
        for text in [
            "HTTPServer base64Encode URLs JWTs IPv6 utf8",
            "What's Caroline's plan? error: E0308 (maybe) AND/OR NOT",
            "fn main() { println!(\"x\"); } a->b x[0] __init__ _x_ a_b",
            "Zürich naïve café 東京 ÜBERGRÖSSE ǅemal İstanbul",
            "x y 7 z9 9z _ __ 1_2",
        ] {
            assert_eq!(analyze(text), reference_terms(text), "{text:?}");
        }
    }

    #[test]
    fn offsets_cover_the_word_and_positions_increase() {
        let text = "call getUserToken now";
        let tokens = tokens_of(text);
        let texts: Vec<&str> = tokens.iter().map(|token| token.text.as_str()).collect();
        assert_eq!(texts, ["call", "get", "user", "token", "getusertoken"]);
        for token in &tokens[1..] {
            assert_eq!(&text[token.offset_from..token.offset_to], "getUserToken");
        }
        assert_eq!(&text[tokens[0].offset_from..tokens[0].offset_to], "call");
        let positions: Vec<usize> = tokens.iter().map(|token| token.position).collect();
        assert_eq!(positions, [0, 1, 2, 3, 4]);
    }

    proptest::proptest! {
        #[test]
        fn equals_toc_terms(text in "[a-zA-Z0-9_ .()'\"éÜ東\\-]{0,60}") {
            proptest::prop_assert_eq!(analyze(&text), reference_terms(&text));
            for token in tokens_of(&text) {
                proptest::prop_assert!(text.is_char_boundary(token.offset_from));
                proptest::prop_assert!(text.is_char_boundary(token.offset_to));
                proptest::prop_assert!(token.offset_from < token.offset_to);
            }
        }

        #[test]
        fn equals_toc_terms_on_any_string(text in "\\PC{0,40}") {
            proptest::prop_assert_eq!(analyze(&text), reference_terms(&text));
        }
    }
}
