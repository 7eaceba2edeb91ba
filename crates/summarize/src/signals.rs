//! Salience signals, shared by the grip extractor ([`crate::grips`]) and the extractive
//! summarizer ([`crate::extractive`]): decisions, problems, fixes, conclusions,
//! questions, identifiers, file paths, numbers with units and dates. Phrase signals match
//! lowercase text on word boundaries.

/// Whether `needle` occurs in `haystack` starting at a word boundary and, unless
/// `allow_suffix`, ending at one (`allow_suffix` lets "error" match "errors").
fn contains_term(haystack: &str, needle: &str, allow_suffix: bool) -> bool {
    haystack.match_indices(needle).any(|(start, matched)| {
        let end = start + matched.len();
        let starts_word = haystack[..start]
            .chars()
            .next_back()
            .is_none_or(|before| !is_word_char(before));
        let ends_word = allow_suffix
            || needle
                .chars()
                .next_back()
                .is_some_and(|last| !is_word_char(last))
            || haystack[end..]
                .chars()
                .next()
                .is_none_or(|after| !is_word_char(after));
        starts_word && ends_word
    })
}

fn is_word_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

fn contains_any_term(haystack: &str, needles: &[&str], allow_suffix: bool) -> bool {
    needles
        .iter()
        .any(|needle| contains_term(haystack, needle, allow_suffix))
}

pub(crate) const DECISION_PHRASES: &[&str] = &[
    "we decided",
    "i decided",
    "decided to",
    "decided on",
    "let's go with",
    "lets go with",
    "let's use",
    "we'll use",
    "we will use",
    "we'll go with",
    "going with",
    "agreed",
    "decision:",
    "the decision is",
    "switch to",
    "switching to",
    "instead of",
    "we chose",
    "opted for",
];

pub(crate) fn has_decision(lower: &str) -> bool {
    contains_any_term(lower, DECISION_PHRASES, false)
}

/// Whether the excerpt ends with a question mark, before closing quotes or brackets.
pub(crate) fn is_question(excerpt: &str) -> bool {
    excerpt
        .trim_end()
        .trim_end_matches(['"', '\'', ')', ']', '\u{201d}', '\u{2019}', '`'])
        .ends_with(['?', '\u{ff1f}'])
}

/// Problem words, matched as word prefixes ("error" matches "errors", "fail" matches
/// "failing" and "failure").
const PROBLEM_PREFIXES: &[&str] = &[
    "error",
    "fail",
    "bug",
    "panic",
    "exception",
    "broken",
    "breaks",
    "flaky",
    "leak",
    "timeout",
    "timed out",
    "crash",
    "regression",
    "traceback",
    "segfault",
    "deadlock",
    "not working",
    "doesn't work",
    "does not work",
];

pub(crate) fn has_problem(lower: &str) -> bool {
    contains_any_term(lower, PROBLEM_PREFIXES, true) || is_stack_trace_line(lower)
}

/// Lines of a stack trace: `at foo (file:1:2)`, `File "x.py", line 3`, Rust's
/// `panicked at` and backtrace frames.
fn is_stack_trace_line(lower: &str) -> bool {
    let trimmed = lower.trim_start();
    (trimmed.starts_with("at ") && (trimmed.contains('(') || trimmed.contains(':')))
        || (trimmed.starts_with("file \"") && trimmed.contains(", line "))
        || trimmed.contains("stack backtrace")
        || trimmed.contains("panicked at")
}

pub(crate) const SOLUTION_PHRASES: &[&str] = &[
    "fixed",
    "fixes",
    "the fix",
    "fix is",
    "fix was",
    "resolved",
    "resolves",
    "works now",
    "working now",
    "passes now",
    "pass now",
    "solution",
    "solved",
    "root cause",
    "the problem was",
    "the issue was",
    "workaround",
];

pub(crate) fn has_solution(lower: &str) -> bool {
    contains_any_term(lower, SOLUTION_PHRASES, false)
}

const CONCLUSION_PHRASES: &[&str] = &[
    "in summary",
    "to summarize",
    "turns out",
    "turned out",
    "the answer is",
    "conclusion",
    "bottom line",
    "that means",
    "which means",
];

pub(crate) fn has_conclusion(lower: &str) -> bool {
    lower.starts_with("so ")
        || lower.starts_with("so,")
        || lower.contains(", so ")
        || contains_any_term(lower, CONCLUSION_PHRASES, false)
}

/// Splits on whitespace and strips surrounding punctuation that is not part of a name.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace().map(|word| {
        word.trim_start_matches(['(', '[', '{', '<', '"', '\'', '`', '\u{201c}', '\u{2018}'])
            .trim_end_matches([
                ')', ']', '}', '>', '"', '\'', '`', '.', ',', ';', ':', '!', '?', '\u{201d}',
                '\u{2019}',
            ])
    })
}

pub(crate) fn has_identifier(excerpt: &str) -> bool {
    let has_backticked_code = excerpt
        .split('`')
        .nth(1)
        .is_some_and(|inside| !inside.trim().is_empty())
        && excerpt.matches('`').count() >= 2;
    has_backticked_code
        || excerpt.split_whitespace().any(is_call_like)
        || words(excerpt).any(is_identifier_word)
}

/// `foo()`, `foo(bar)`: an opening parenthesis right after a name.
fn is_call_like(raw_word: &str) -> bool {
    raw_word.find('(').is_some_and(|open| {
        open > 0
            && raw_word[..open]
                .chars()
                .next_back()
                .is_some_and(|before| before.is_ascii_alphanumeric() || before == '_')
            && raw_word[open..].contains(')')
    })
}

/// `camelCase`, `PascalCase`, `snake_case`, `Foo::bar`.
pub(crate) fn is_identifier_word(word: &str) -> bool {
    if let Some(separator) = word.find("::") {
        let before_ok = word[..separator]
            .chars()
            .next_back()
            .is_some_and(|ch| ch.is_ascii_alphanumeric());
        let after_ok = word[separator + 2..]
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if before_ok && after_ok {
            return true;
        }
    }
    let is_code_word = !word.is_empty()
        && word
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && word.chars().any(|ch| ch.is_ascii_alphabetic());
    if !is_code_word {
        return false;
    }
    let bytes = word.as_bytes();
    let is_snake_case = bytes.windows(3).any(|window| {
        window[0].is_ascii_alphanumeric() && window[1] == b'_' && window[2].is_ascii_alphanumeric()
    });
    let is_camel_case = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase());
    is_snake_case || is_camel_case
}

/// Extensions that make a bare `name.ext` a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cs", "css", "go", "h", "hpp", "html", "java", "js", "json", "jsx", "kt",
    "lock", "log", "md", "mjs", "py", "rb", "rs", "sh", "sql", "swift", "toml", "ts", "tsx", "txt",
    "yaml", "yml",
];

pub(crate) fn has_file_path(excerpt: &str) -> bool {
    words(excerpt).any(is_file_path_word)
}

fn is_file_path_word(word: &str) -> bool {
    if word.contains("://") || !word.chars().any(char::is_alphabetic) {
        return false;
    }
    if let Some(glob_extension) = word.strip_prefix("*.") {
        return !glob_extension.is_empty()
            && glob_extension.chars().all(|ch| ch.is_ascii_alphanumeric());
    }
    if ["./", "../", "~/"]
        .iter()
        .any(|prefix| word.len() > prefix.len() && word.starts_with(prefix))
    {
        return true;
    }
    let path = strip_line_suffix(word);
    let last_segment = path.rsplit('/').next().unwrap_or(path);
    let has_extension = last_segment
        .rsplit_once('.')
        .is_some_and(|(stem, extension)| {
            !stem.is_empty()
                && (1..=5).contains(&extension.len())
                && extension.chars().all(|ch| ch.is_ascii_alphanumeric())
                && extension.chars().any(|ch| ch.is_ascii_alphabetic())
        });
    if path.contains('/') {
        let segments: Vec<&str> = path.split('/').collect();
        let all_segments_named = segments.iter().all(|segment| {
            segment.is_empty()
                || segment
                    .chars()
                    .all(|ch| ch.is_alphanumeric() || matches!(ch, '_' | '-' | '.' | '@' | '*'))
        });
        return all_segments_named && (has_extension || segments.len() >= 3);
    }
    has_extension
        && last_segment
            .rsplit_once('.')
            .is_some_and(|(_, extension)| FILE_EXTENSIONS.contains(&extension))
}

/// `src/a.rs:42:13` → `src/a.rs`: compiler and stack-trace locations.
fn strip_line_suffix(word: &str) -> &str {
    let mut path = word;
    for _ in 0..2 {
        if let Some((before, after)) = path.rsplit_once(':')
            && !after.is_empty()
            && after.bytes().all(|byte| byte.is_ascii_digit())
        {
            path = before;
        }
    }
    path
}

/// Units that make a number salient ("15 minutes", "512 mb"), lowercase.
const NUMBER_UNITS: &[&str] = &[
    "attempts", "b", "bytes", "d", "day", "days", "events", "gb", "gib", "h", "hour", "hours",
    "hr", "hrs", "k", "kb", "kib", "lines", "m", "mb", "mib", "min", "mins", "minute", "minutes",
    "month", "months", "ms", "ns", "percent", "px", "qps", "requests", "retries", "rps", "s",
    "sec", "second", "seconds", "secs", "tb", "times", "tokens", "us", "users", "week", "weeks",
    "x", "year", "years", "µs",
];

/// Numbers followed by a unit or `%` (`15 minutes`, `30%`, `2.5s`), and versions with
/// two dots (`1.2.3`).
pub(crate) fn has_number_with_unit(lower: &str) -> bool {
    let mut previous_char: Option<char> = None;
    let mut chars = lower.char_indices().peekable();
    while let Some((start, ch)) = chars.next() {
        let starts_number = ch.is_ascii_digit()
            && previous_char.is_none_or(|before| !before.is_alphanumeric() && before != '.');
        previous_char = Some(ch);
        if !starts_number {
            continue;
        }
        let mut end = start + ch.len_utf8();
        let mut num_dots = 0;
        while let Some(&(index, next)) = chars.peek() {
            let continues = next.is_ascii_digit()
                || (matches!(next, '.' | ',')
                    && lower[index + 1..]
                        .chars()
                        .next()
                        .is_some_and(|after| after.is_ascii_digit()));
            if !continues {
                break;
            }
            if next == '.' {
                num_dots += 1;
            }
            end = index + next.len_utf8();
            previous_char = Some(next);
            chars.next();
        }
        if num_dots >= 2 {
            return true;
        }
        let after_number = &lower[end..];
        let unit_text = after_number.strip_prefix(' ').unwrap_or(after_number);
        if unit_text.starts_with('%') {
            return true;
        }
        let unit: String = unit_text
            .chars()
            .take_while(|ch| ch.is_alphabetic())
            .collect();
        if !unit.is_empty() && NUMBER_UNITS.contains(&unit.as_str()) {
            return true;
        }
    }
    false
}

const DATE_WORDS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "today",
    "tomorrow",
    "last week",
    "next week",
    "last month",
    "next month",
    "last year",
    "next year",
];

/// ISO dates, month and weekday names (`may` only before a day number), and relative
/// days and periods.
pub(crate) fn has_date(lower: &str) -> bool {
    has_iso_date(lower)
        || contains_any_term(lower, DATE_WORDS, false)
        || lower.match_indices("may ").any(|(start, matched)| {
            let starts_word = lower[..start]
                .chars()
                .next_back()
                .is_none_or(|before| !is_word_char(before));
            starts_word
                && lower[start + matched.len()..]
                    .chars()
                    .next()
                    .is_some_and(|ch| ch.is_ascii_digit())
        })
}

/// `YYYY-MM-DD` anywhere.
fn has_iso_date(lower: &str) -> bool {
    lower.as_bytes().windows(10).any(|window| {
        window[..4].iter().all(u8::is_ascii_digit)
            && window[4] == b'-'
            && window[5..7].iter().all(u8::is_ascii_digit)
            && window[7] == b'-'
            && window[8..].iter().all(u8::is_ascii_digit)
    })
}
