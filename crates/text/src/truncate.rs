//! The one char-safe truncation of the workspace, in its two budgets.
//!
//! Both return a prefix of their input that is valid UTF-8 and never split a character:
//! - [`truncate_chars`] counts characters: what a reader sees (prompts, snippets, log
//!   fields, echoed input);
//! - [`truncate_bytes`] counts bytes: a size limit on stored or sent text, rounded down
//!   to the last whole character.
//!
//! Neither adds a mark such as `…`: whether and how a cut is shown is the caller's.

/// The first `max_chars` characters of `text` (all of it when it has no more).
///
/// The text was cut exactly when the result is shorter than `text`.
#[must_use]
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => &text[..byte_index],
        None => text,
    }
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character
/// boundary (all of `text` when it has no more bytes).
#[must_use]
pub fn truncate_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn truncate_chars_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("héllo", 2), "hé");
        assert_eq!(truncate_chars("hé", 10), "hé");
        assert_eq!(truncate_chars("hé", 2), "hé");
        assert_eq!(truncate_chars("", 3), "");
        assert_eq!(truncate_chars("abc", 0), "");
    }

    #[test]
    fn truncate_bytes_rounds_down_to_a_whole_character() {
        assert_eq!(truncate_bytes("héllo", 2), "h");
        assert_eq!(truncate_bytes("héllo", 3), "hé");
        assert_eq!(truncate_bytes("hé", 10), "hé");
        assert_eq!(truncate_bytes("é", 1), "");
        assert_eq!(truncate_bytes("", 0), "");
    }

    proptest! {
        #[test]
        fn both_return_the_longest_fitting_prefix(text in "\\PC{0,40}", max in 0usize..60) {
            let by_chars = truncate_chars(&text, max);
            prop_assert!(text.starts_with(by_chars));
            prop_assert_eq!(by_chars.chars().count(), text.chars().count().min(max));

            let by_bytes = truncate_bytes(&text, max);
            prop_assert!(text.starts_with(by_bytes));
            prop_assert!(by_bytes.len() <= max);
            let next_char_fits = text[by_bytes.len()..]
                .chars()
                .next()
                .is_some_and(|next| by_bytes.len() + next.len_utf8() <= max);
            prop_assert!(!next_char_fits);
        }
    }
}
