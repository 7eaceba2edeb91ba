//! Sentence splitting and trimming, shared by the grip extractor ([`crate::grips`]) and
//! the extractive summarizer ([`crate::extractive`]): a grip is a (trimmed) sentence, and
//! the summarizer's sentences are cut by the same rules.

use memory_text::truncate_chars;

/// Dotted abbreviations (lowercase, without their final dot) after which a `.` does
/// not end a sentence.
const ABBREVIATIONS: &[&str] = &["cf", "e.g", "eg", "etc", "i.e", "ie", "vs", "mr", "dr"];

/// The byte ranges of the sentences of `text`, in order, each trimmed of surrounding
/// whitespace and leading list markers, never empty.
pub(crate) fn sentence_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut inside_code_fence = false;
    let mut line_start = 0;
    for line in text.split('\n') {
        let line_end = line_start + line.len();
        let is_fence_marker = line.trim_start().starts_with("```");
        if is_fence_marker {
            inside_code_fence = !inside_code_fence;
        } else if inside_code_fence || is_code_like_line(line) {
            push_trimmed(text, line_start, line_end, &mut ranges);
        } else {
            split_prose_line(text, line_start, line_end, &mut ranges);
        }
        line_start = line_end + 1;
    }
    ranges
}

/// Lines that are code rather than prose, kept whole: indented blocks and lines ending
/// like statements or blocks.
fn is_code_like_line(line: &str) -> bool {
    let trimmed_end = line.trim_end();
    line.starts_with('\t')
        || line.starts_with("    ")
        || trimmed_end.ends_with(';')
        || trimmed_end.ends_with('{')
        || trimmed_end.ends_with('}')
}

/// Splits one prose line `text[line_start..line_end]` at sentence ends.
fn split_prose_line(
    text: &str,
    line_start: usize,
    line_end: usize,
    ranges: &mut Vec<(usize, usize)>,
) {
    let line = &text[line_start..line_end];
    let mut sentence_start = 0;
    let mut chars = line.char_indices().peekable();
    while let Some((index, ch)) = chars.next() {
        if !matches!(ch, '.' | '!' | '?') {
            continue;
        }
        // The sentence ends after a run of end marks and closing quotes or brackets.
        let mut end = index + ch.len_utf8();
        while let Some(&(next_index, next_ch)) = chars.peek() {
            if matches!(
                next_ch,
                '.' | '!' | '?' | '"' | '\'' | ')' | ']' | '\u{201d}' | '\u{2019}'
            ) {
                end = next_index + next_ch.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        let followed_by_whitespace = line[end..].chars().next().is_some_and(char::is_whitespace);
        if !followed_by_whitespace {
            continue;
        }
        if ch == '.' && ends_with_abbreviation(&line[sentence_start..index]) {
            continue;
        }
        push_trimmed(text, line_start + sentence_start, line_start + end, ranges);
        sentence_start = end;
    }
    push_trimmed(text, line_start + sentence_start, line_end, ranges);
}

/// Whether `before_dot` ends with one of the [`ABBREVIATIONS`] as a whole word.
fn ends_with_abbreviation(before_dot: &str) -> bool {
    let last_word = before_dot
        .rsplit(|ch: char| ch.is_whitespace() || ch == '(')
        .next()
        .unwrap_or("");
    ABBREVIATIONS
        .iter()
        .any(|abbreviation| last_word.eq_ignore_ascii_case(abbreviation))
}

/// Pushes `text[start..end]` without surrounding whitespace and leading list or quote
/// markers, unless nothing is left.
fn push_trimmed(text: &str, start: usize, end: usize, ranges: &mut Vec<(usize, usize)>) {
    let Some(slice) = text.get(start..end) else {
        return;
    };
    let mut trimmed = slice.trim();
    loop {
        let without_marker = strip_list_marker(trimmed).trim_start();
        if without_marker.len() == trimmed.len() {
            break;
        }
        trimmed = without_marker;
    }
    if trimmed.is_empty() {
        return;
    }
    let trimmed_start = start + (trimmed.as_ptr() as usize - slice.as_ptr() as usize);
    ranges.push((trimmed_start, trimmed_start + trimmed.len()));
}

/// `text` without a leading `- `, `* `, `+ `, `> `, `#`… heading marks or `12. `/`3) `
/// numbering (the marker must be followed by a space); `text` itself otherwise.
fn strip_list_marker(text: &str) -> &str {
    for marker in ["- ", "* ", "+ ", "> ", "• "] {
        if let Some(rest) = text.strip_prefix(marker) {
            return rest;
        }
    }
    let hashes = text.bytes().take_while(|&byte| byte == b'#').count();
    if hashes > 0 && text[hashes..].starts_with(' ') {
        return &text[hashes..];
    }
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &text[digits..];
        if rest.starts_with(". ") || rest.starts_with(") ") {
            return &rest[1..];
        }
    }
    text
}

/// The beginning of `sentence`, at most `max_chars` characters, cut after the last
/// whole word when it must be cut, without trailing whitespace. A single word longer
/// than the limit is cut at a char boundary.
pub(crate) fn trim_to_max_chars(sentence: &str, max_chars: usize) -> &str {
    let prefix = truncate_chars(sentence, max_chars);
    if prefix.len() == sentence.len() {
        return sentence;
    }
    let cut = prefix.len();
    let next_is_whitespace = sentence[cut..]
        .chars()
        .next()
        .is_some_and(char::is_whitespace);
    if next_is_whitespace {
        return prefix.trim_end();
    }
    match prefix.rfind(char::is_whitespace) {
        Some(space) if !prefix[..space].trim_end().is_empty() => prefix[..space].trim_end(),
        _ => prefix,
    }
}
