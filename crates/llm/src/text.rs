//! Character-based text helpers for prompts and log fields. Budgets here count
//! characters, never bytes, so that cutting never splits a UTF-8 sequence.

use memory_text::truncate_chars;

/// `text` on one line: every run of whitespace (newlines included) becomes one space,
/// and the ends are trimmed.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` on one line, cut to `max_chars` characters with `…` marking a cut.
pub(crate) fn one_line_capped(text: &str, max_chars: usize) -> String {
    let line = one_line(text);
    if line.chars().count() <= max_chars {
        return line;
    }
    let mut capped = truncate_chars(&line, max_chars.saturating_sub(1)).to_owned();
    capped.push('…');
    capped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_whitespace_and_caps_with_an_ellipsis() {
        assert_eq!(one_line("  a\n\n b\tc  "), "a b c");
        assert_eq!(one_line_capped("abcdef", 6), "abcdef");
        assert_eq!(one_line_capped("abcdefg", 6), "abcde…");
        assert_eq!(one_line_capped("ééééééé", 3).chars().count(), 3);
    }
}
