//! [`Pattern`]: the engine's compiled-once regular expressions. Every pattern here is a
//! constant, so a failure to compile is a bug caught by any test (a `debug_assert!`);
//! in a release build such a pattern never matches rather than panicking.
//!
//! Word boundaries are ASCII (`\b` becomes `(?-u:\b)`): a Unicode `\b` makes the regex
//! crate leave its fast engines on any non-ASCII text ("—", "µs", "≈" are everywhere
//! in coding sessions), which made cue matching twenty times slower; every cue is ASCII.

use std::borrow::Cow;

use regex::{Captures, Match, Regex, RegexSet};

/// A compiled constant pattern.
#[derive(Debug)]
pub(crate) struct Pattern(Option<Regex>);

/// `pattern` with ASCII word boundaries.
fn ascii_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

impl Pattern {
    /// Compiles `pattern` (with ASCII word boundaries).
    pub(crate) fn new(pattern: &str) -> Pattern {
        let compiled = Regex::new(&ascii_boundaries(pattern));
        debug_assert!(compiled.is_ok(), "bad pattern {pattern:?}: {compiled:?}");
        Pattern(compiled.ok())
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.0.as_ref().is_some_and(|regex| regex.is_match(text))
    }

    pub(crate) fn find<'h>(&self, text: &'h str) -> Option<Match<'h>> {
        self.0.as_ref().and_then(|regex| regex.find(text))
    }

    pub(crate) fn find_iter<'s, 'h>(&'s self, text: &'h str) -> impl Iterator<Item = Match<'h>> + 's
    where
        'h: 's,
    {
        self.0.iter().flat_map(move |regex| regex.find_iter(text))
    }

    pub(crate) fn captures<'h>(&self, text: &'h str) -> Option<Captures<'h>> {
        self.0.as_ref().and_then(|regex| regex.captures(text))
    }

    pub(crate) fn captures_iter<'s, 'h>(
        &'s self,
        text: &'h str,
    ) -> impl Iterator<Item = Captures<'h>> + 's
    where
        'h: 's,
    {
        self.0
            .iter()
            .flat_map(move |regex| regex.captures_iter(text))
    }

    pub(crate) fn replace_all<'h>(&self, text: &'h str, replacement: &str) -> Cow<'h, str> {
        match &self.0 {
            Some(regex) => regex.replace_all(text, replacement),
            None => Cow::Borrowed(text),
        }
    }
}

/// Compiled constant patterns matched together.
#[derive(Debug)]
pub(crate) struct PatternSet(Option<RegexSet>);

impl PatternSet {
    /// Compiles `patterns` (with ASCII word boundaries).
    pub(crate) fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> PatternSet {
        let compiled = RegexSet::new(patterns.into_iter().map(ascii_boundaries));
        debug_assert!(compiled.is_ok(), "bad pattern set: {compiled:?}");
        PatternSet(compiled.ok())
    }

    /// Indexes of the patterns that match `text`, in order.
    pub(crate) fn matches(&self, text: &str) -> Vec<usize> {
        self.0
            .as_ref()
            .map(|set| set.matches(text).into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_ascii_and_unicode_text_still_matches() {
        let pattern = Pattern::new(r"\bfixed\b");
        assert!(pattern.is_match("— fixed in 2.9 µs"));
        assert!(!pattern.is_match("unfixed"));
        assert_eq!(
            PatternSet::new([r"\ba\b", r"\bb\b"]).matches("b — a"),
            [0, 1]
        );
    }
}
