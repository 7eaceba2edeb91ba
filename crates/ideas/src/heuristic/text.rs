//! Cutting an event's prose into the units ideas are taken from: fenced code, tables
//! and code-looking lines are dropped; paragraphs are split into sentences; each bullet
//! is one unit and remembers the lead-in it sits under ("Summary of today's
//! decisions:"); a decision list after "We decided:" is split into clauses. Also the
//! cleaning that turns a unit into idea content (markdown noise out, at most
//! [`MAX_IDEA_CHARS`]).

use std::sync::LazyLock;

use memory_text::truncate_chars;

use crate::heuristic::pattern::Pattern;
use crate::heuristic::settings::is_identifier;

/// Longest idea content the engine proposes, in characters.
pub(crate) const MAX_IDEA_CHARS: usize = 300;

/// One unit of prose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The sentence or bullet as written (markdown kept, code blocks gone).
    pub text: String,
    /// The lead-in segment (by index) this bullet sits under.
    pub lead_in: Option<usize>,
    /// Whether this segment introduces the bullets after it.
    pub is_lead_in: bool,
    /// Whether this segment is a bullet (or a sentence of a long bullet).
    pub is_bullet: bool,
}

static BULLET: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"^(?:[-*•+]|\d{1,2}[.)]|\([a-z0-9]{1,2}\)|[a-h][.)])\s+(\S.*)$")
});
static CODE_LINE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"^(?:import|export|fn|pub fn|async fn|const|def|class|package|#include|return)\s|^(?:let|var)\s+\w+\s*=|^[}\])]|[{;]\s*$|^\s*(?:at\s+\S+\s+\(|File .+, line \d+)",
    )
});

/// Cuts `text` into segments, in order.
pub(crate) fn segment(text: &str) -> Vec<Segment> {
    let mut builder = Builder::default();
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            builder.flush_all();
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if trimmed.is_empty() {
            builder.flush_paragraph();
            builder.flush_bullet();
            continue;
        }
        if trimmed.starts_with('|') || CODE_LINE.is_match(trimmed) {
            builder.flush_all();
            continue;
        }
        if let Some(heading) = trimmed.strip_prefix('#') {
            builder.flush_all();
            builder.push_heading(heading.trim_start_matches('#').trim());
            continue;
        }
        if let Some(captures) = BULLET.captures(trimmed) {
            builder.flush_paragraph();
            builder.flush_bullet();
            builder.bullet = Some(captures[1].to_owned());
            continue;
        }
        let is_indented = line.starts_with(' ') || line.starts_with('\t');
        if let Some(bullet) = builder.bullet.as_mut()
            && is_indented
        {
            bullet.push(' ');
            bullet.push_str(trimmed);
            continue;
        }
        builder.flush_bullet();
        builder.paragraph.push(trimmed);
    }
    builder.flush_all();
    builder.segments
}

#[derive(Default)]
struct Builder<'a> {
    segments: Vec<Segment>,
    paragraph: Vec<&'a str>,
    bullet: Option<String>,
    lead_in: Option<usize>,
}

impl Builder<'_> {
    fn flush_all(&mut self) {
        self.flush_paragraph();
        self.flush_bullet();
    }

    fn flush_paragraph(&mut self) {
        if self.paragraph.is_empty() {
            return;
        }
        let joined = self.paragraph.join(" ");
        self.paragraph.clear();
        self.lead_in = None;
        let sentences = split_sentences(&joined);
        let num_sentences = sentences.len();
        for (index, sentence) in sentences.into_iter().enumerate() {
            let is_lead_in = index + 1 == num_sentences && sentence.trim_end().ends_with(':');
            if is_lead_in {
                self.lead_in = Some(self.segments.len());
            }
            self.segments.push(Segment {
                text: sentence.to_owned(),
                lead_in: None,
                is_lead_in,
                is_bullet: false,
            });
        }
    }

    fn push_heading(&mut self, heading: &str) {
        if heading.is_empty() {
            return;
        }
        self.lead_in = Some(self.segments.len());
        self.segments.push(Segment {
            text: heading.to_owned(),
            lead_in: None,
            is_lead_in: true,
            is_bullet: false,
        });
    }

    fn flush_bullet(&mut self) {
        let Some(bullet) = self.bullet.take() else {
            return;
        };
        let pieces = if bullet.chars().count() > MAX_IDEA_CHARS {
            split_sentences(&bullet)
        } else {
            vec![bullet.as_str()]
        };
        for piece in pieces {
            self.segments.push(Segment {
                text: piece.to_owned(),
                lead_in: self.lead_in,
                is_lead_in: false,
                is_bullet: true,
            });
        }
    }
}

/// Words after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "approx", "cf", "incl", "mr", "mrs", "dr", "st", "no", "fig", "al",
    "ca", "eg", "ie", "resp", "ver",
];

/// Splits a paragraph into sentences: at `.`, `!`, `?` or `…` followed by white space
/// and a capital, a digit or an opening mark, outside inline code, not after an
/// abbreviation.
pub(crate) fn split_sentences(paragraph: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    let bytes = paragraph.as_bytes();
    let mut chars = paragraph.char_indices().peekable();
    while let Some((index, ch)) = chars.next() {
        if ch == '`' {
            in_code = !in_code;
            continue;
        }
        if in_code || !matches!(ch, '.' | '!' | '?' | '…') {
            continue;
        }
        let mut end = index + ch.len_utf8();
        while end < bytes.len() && matches!(bytes[end], b')' | b']' | b'"' | b'\'' | b'*' | b'_') {
            end += 1;
        }
        let rest = &paragraph[end..];
        let after_space = rest.trim_start();
        if after_space.len() == rest.len() && !rest.is_empty() {
            continue;
        }
        let next_opt = after_space.chars().next();
        let is_boundary = match next_opt {
            None => true,
            Some(next) => {
                let next_word = after_space
                    .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
                    .next()
                    .unwrap_or("");
                let opens = next.is_uppercase()
                    || next.is_ascii_digit()
                    || matches!(next, '`' | '"' | '*' | '(' | '[' | '\'' | '>' | '—' | '-')
                    || is_identifier(next_word);
                opens && !(ch == '.' && ends_with_abbreviation(&paragraph[start..index]))
            }
        };
        if is_boundary {
            let sentence = paragraph[start..end].trim();
            if !sentence.is_empty() {
                sentences.push(sentence);
            }
            start = end;
            while let Some(&(next_index, _)) = chars.peek() {
                if next_index >= end {
                    break;
                }
                chars.next();
            }
        }
    }
    let tail = paragraph[start..].trim();
    if !tail.is_empty() {
        sentences.push(tail);
    }
    sentences
}

fn ends_with_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
        || (word.len() == 1 && word.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Splits at commas and semicolons outside brackets, code and double quotes.
pub(crate) fn split_top_level(text: &str) -> Vec<&str> {
    split_top_level_on(text, &[',', ';'])
}

/// Splits at `separators` outside brackets, code and double quotes.
fn split_top_level_on<'a>(text: &'a str, separators: &[char]) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut depth: u32 = 0;
    let mut in_code = false;
    let mut in_quote = false;
    let mut start = 0;
    for (index, ch) in text.char_indices() {
        match ch {
            '`' => in_code = !in_code,
            '"' if !in_code => in_quote = !in_quote,
            '(' | '[' | '{' if !in_code && !in_quote => depth += 1,
            ')' | ']' | '}' if !in_code && !in_quote => depth = depth.saturating_sub(1),
            _ if separators.contains(&ch) && depth == 0 && !in_code && !in_quote => {
                pieces.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    pieces.push(&text[start..]);
    pieces
}

/// The clauses of a decision list: top-level pieces, a leading "and"/"plus" dropped,
/// pieces of fewer than four words merged into a neighbour unless `stands_alone` says
/// they carry a setting of their own.
pub(crate) fn split_clauses(list: &str, stands_alone: impl Fn(&str) -> bool) -> Vec<String> {
    let mut clauses: Vec<String> = Vec::new();
    let mut carry_opt: Option<String> = None;
    // A piece between semicolons that opens with "key:" lists that key's values: its
    // commas do not separate clauses.
    let mut pieces: Vec<&str> = Vec::new();
    for part in split_top_level_on(list, &[';']) {
        if part.contains(": ") {
            pieces.push(part);
        } else {
            pieces.extend(split_top_level(part));
        }
    }
    for piece in pieces {
        let mut clause = piece.trim();
        for prefix in ["and ", "plus ", "& ", "then "] {
            if clause.len() > prefix.len() && clause[..prefix.len()].eq_ignore_ascii_case(prefix) {
                clause = clause[prefix.len()..].trim_start();
            }
        }
        let clause = clause.trim_end_matches(['.', ' ']);
        if clause.is_empty() {
            continue;
        }
        let is_short = clause.split_whitespace().count() < 4 && !stands_alone(clause);
        match (is_short, clauses.last_mut()) {
            (true, Some(last)) => {
                last.push_str(", ");
                last.push_str(clause);
            }
            (true, None) => {
                let carry = carry_opt.get_or_insert_with(String::new);
                if !carry.is_empty() {
                    carry.push_str(", ");
                }
                carry.push_str(clause);
            }
            (false, _) => {
                let mut joined = carry_opt.take().unwrap_or_default();
                if !joined.is_empty() {
                    joined.push_str(", ");
                }
                joined.push_str(clause);
                clauses.push(joined);
            }
        }
    }
    if let Some(carry) = carry_opt {
        clauses.push(carry);
    }
    clauses
}

/// Idea content from a unit: emphasis and code ticks out, a leading heading or quote
/// marker out (`#`, `>` before the first word only: inside the text they are issue
/// numbers and comparisons, "max/avg > 5"), white space collapsed, a trailing colon
/// dropped, at most [`MAX_IDEA_CHARS`] (cut at a word).
pub(crate) fn clean_content(raw: &str) -> String {
    let mut cleaned = String::with_capacity(raw.len());
    for word in raw.split_whitespace() {
        let word = if cleaned.is_empty() {
            word.trim_start_matches(['#', '>', '*', '`'])
        } else {
            word.trim_start_matches(['*', '`'])
        };
        if word.is_empty() || word.chars().all(|c| matches!(c, '*' | '`' | '_')) {
            continue;
        }
        if !cleaned.is_empty() {
            cleaned.push(' ');
        }
        cleaned.extend(word.chars().filter(|c| !matches!(c, '*' | '`')));
    }
    let trimmed = cleaned.trim_end_matches([':', ' ', '—', '-']).trim();
    truncate_at_word(trimmed, MAX_IDEA_CHARS)
}

/// `text` cut to at most `max_chars` characters at a word boundary, with an ellipsis
/// when cut.
pub(crate) fn truncate_at_word(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let head = truncate_chars(text, max_chars.saturating_sub(1));
    let cut = match head.rfind(char::is_whitespace) {
        Some(space) if space * 3 >= head.len() * 2 => &head[..space],
        _ => head,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// Number of lines of `text` that look like code, logs or tables, and of all
/// non-empty lines.
pub(crate) fn code_line_ratio(text: &str) -> (usize, usize) {
    let mut num_code = 0;
    let mut num_lines = 0;
    let mut in_fence = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        num_lines += 1;
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
            num_code += 1;
            continue;
        }
        let symbols = trimmed
            .chars()
            .filter(|c| matches!(c, '{' | '}' | '(' | ')' | ';' | '=' | '<' | '>' | '[' | ']'))
            .count();
        if in_fence
            || trimmed.starts_with('|')
            || line.starts_with("    ")
            || line.starts_with('\t')
            || CODE_LINE.is_match(trimmed)
            || symbols * 8 > trimmed.len()
        {
            num_code += 1;
        }
    }
    (num_code, num_lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_at_terminal_marks_not_inside_code_or_abbreviations() {
        let paragraph = "Found it. Every worker shares the DB (see `db.ts`. no split), e.g. 600/min. \
                         Is that right? Yes… Version v0.8.2 is out (SEC-1). refresh_token_ttl: 14 days.";
        assert_eq!(
            split_sentences(paragraph),
            [
                "Found it.",
                "Every worker shares the DB (see `db.ts`. no split), e.g. 600/min.",
                "Is that right?",
                "Yes…",
                "Version v0.8.2 is out (SEC-1).",
                "refresh_token_ttl: 14 days."
            ]
        );
    }

    #[test]
    fn bullets_remember_their_lead_in_and_code_is_dropped() {
        let text = "Summary of today's decisions:\n\
                    - Access token expires after **15 minutes**.\n\
                    - `refresh_token_ttl` = 14 days,\n  rotated on every use.\n\
                    \n```ts\nconst x = 1;\n```\n\
                    | a | b |\nDone.";
        let segments = segment(text);
        let texts: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Summary of today's decisions:",
                "Access token expires after **15 minutes**.",
                "`refresh_token_ttl` = 14 days, rotated on every use.",
                "Done."
            ]
        );
        assert!(segments[0].is_lead_in);
        assert_eq!(segments[1].lead_in, Some(0));
        assert_eq!(segments[2].lead_in, Some(0));
        assert_eq!(segments[3].lead_in, None);
    }

    #[test]
    fn clauses_split_at_top_level_and_short_ones_merge() {
        let clauses = split_clauses(
            "min 3, max 12 replicas at 70% CPU, PDB minAvailable 2, no CPU limit",
            |clause| clause.contains("minAvailable"),
        );
        assert_eq!(
            clauses,
            [
                "min 3, max 12 replicas at 70% CPU",
                "PDB minAvailable 2, no CPU limit"
            ]
        );
        let clauses = split_clauses(
            "session_id = xxh3(tenant, anonymous_id), idle eviction after 30 minutes, and cap the map at 500k entries.",
            |_| false,
        );
        assert_eq!(
            clauses,
            [
                "session_id = xxh3(tenant, anonymous_id)",
                "idle eviction after 30 minutes",
                "cap the map at 500k entries"
            ]
        );
    }

    #[test]
    fn a_key_list_keeps_its_commas() {
        assert_eq!(
            split_clauses(
                "ttl: web 14 days, mobile 30 days; family lifetime 90 days",
                |_| false
            ),
            [
                "ttl: web 14 days, mobile 30 days",
                "family lifetime 90 days"
            ]
        );
    }

    #[test]
    fn content_is_cleaned_and_bounded() {
        assert_eq!(
            clean_content("  `refresh_token_ttl` = **14 days**, see `docs/adr`:"),
            "refresh_token_ttl = 14 days, see docs/adr"
        );
        // Markers go only before the first word; comparisons and issue numbers stay.
        assert_eq!(
            clean_content("> ## New alert KafkaPartitionSkew (max/avg > 5 for 30m), see #412"),
            "New alert KafkaPartitionSkew (max/avg > 5 for 30m), see #412"
        );
        let long = "word ".repeat(100);
        let cleaned = clean_content(&long);
        assert!(cleaned.chars().count() <= MAX_IDEA_CHARS, "{cleaned}");
        assert!(cleaned.ends_with('…'));
    }
}
