//! Events not worth an idea, and why: empty text, greetings ("hi there"),
//! acknowledgements ("ok thanks", "sounds good", "yes, swap it"), tool calls and
//! results with no signal in them (`tool_noise`, or `debug_output` when the output is
//! an error or a trace), and prose that is mostly code or log lines (`debug_output`).
//! A prose event that merely yields no idea is not marked: only these.

use std::sync::LazyLock;

use memory_types::Event;

use crate::heuristic::pattern::Pattern;
use crate::heuristic::text::code_line_ratio;

/// Why an event was skipped (the `reason` of a skip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkipReason {
    /// No text.
    Empty,
    /// "hi", "good morning".
    Greeting,
    /// "ok", "thanks", "got it", "sounds good".
    Acknowledgement,
    /// A tool call or result with nothing to keep.
    ToolNoise,
    /// Errors, traces, logs and code dumps.
    DebugOutput,
}

impl SkipReason {
    /// The wire reason.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SkipReason::Empty => "empty",
            SkipReason::Greeting => "greeting",
            SkipReason::Acknowledgement => "acknowledgement",
            SkipReason::ToolNoise => "tool_noise",
            SkipReason::DebugOutput => "debug_output",
        }
    }
}

const GREETINGS: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "hiya",
    "yo",
    "howdy",
    "morning",
    "afternoon",
    "evening",
    "greetings",
];
const GREETING_FILLER: &[&str] = &[
    "good", "there", "all", "everyone", "team", "claude", "folks", "again", "guys", "you", "how",
    "are", "doing", "hope", "well", "and", "it's", "me", "i'm", "am", "today", "friend",
];
const ACKNOWLEDGEMENTS: &[&str] = &[
    "ok",
    "okay",
    "k",
    "kk",
    "thanks",
    "thank",
    "you",
    "thx",
    "ty",
    "cheers",
    "got",
    "it",
    "sounds",
    "good",
    "great",
    "nice",
    "cool",
    "perfect",
    "awesome",
    "yes",
    "yep",
    "yeah",
    "yup",
    "sure",
    "lgtm",
    "makes",
    "sense",
    "agreed",
    "noted",
    "fine",
    "alright",
    "right",
    "correct",
    "exactly",
    "excellent",
    "go",
    "ahead",
    "please",
    "do",
    "that",
    "works",
    "wonderful",
    "brilliant",
    "understood",
    "roger",
    "ack",
    "much",
    "a",
    "lot",
    "so",
    "very",
    "that's",
    "thats",
    "seems",
    "looks",
    "👍",
    "🙏",
    "👌",
    "done",
    "true",
    "indeed",
    "fair",
    "enough",
    "same",
    "here",
    "me",
    "too",
    "this",
    "one",
    "all",
    "of",
    "them",
];
/// Words a short reply may open with and still be an acknowledgement ("Yes, swap it").
const ACK_OPENERS: &[&str] = &[
    "ok", "okay", "yes", "yep", "yeah", "sure", "great", "good", "nice", "perfect", "agreed",
    "cool", "thanks",
];

static ERROR_OUTPUT: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)\berror\b|\berror\[|traceback|panicked at|\bexception\b|\bFAIL\b|fatal:|segmentation fault",
    )
});

/// Why a prose event (user, assistant, note) is skipped before reading it, if it is.
pub(crate) fn prose_skip(text: &str) -> Option<SkipReason> {
    if text.split_whitespace().nth(6).is_some() {
        return None;
    }
    let words: Vec<String> = text
        .split_whitespace()
        .map(|word| {
            word.trim_matches(|c: char| c.is_ascii_punctuation() && c != '\'')
                .to_lowercase()
                .replace('’', "'")
        })
        .filter(|word| !word.is_empty())
        .collect();
    if words.is_empty() {
        return Some(SkipReason::Empty);
    }
    if words.len() <= 6
        && GREETINGS.contains(&words[0].as_str())
        && words[1..].iter().all(|word| {
            GREETING_FILLER.contains(&word.as_str()) || GREETINGS.contains(&word.as_str())
        })
    {
        return Some(SkipReason::Greeting);
    }
    if words.len() <= 2
        && words[0] == "good"
        && words
            .get(1)
            .is_some_and(|w| GREETINGS.contains(&w.as_str()))
    {
        return Some(SkipReason::Greeting);
    }
    let all_acks = words.len() <= 6
        && words
            .iter()
            .all(|word| ACKNOWLEDGEMENTS.contains(&word.as_str()));
    let short_reply =
        words.len() <= 3 && ACK_OPENERS.contains(&words[0].as_str()) && !text.contains('?');
    (all_acks || short_reply).then_some(SkipReason::Acknowledgement)
}

/// Why a tool call or result with no signal is skipped.
pub(crate) fn tool_skip(event: &Event) -> SkipReason {
    let failed = event
        .metadata
        .get("exit_code")
        .is_some_and(|code| code.trim() != "0");
    if event.kind == memory_types::EventKind::ToolResult
        && (failed || ERROR_OUTPUT.is_match(&event.text))
    {
        SkipReason::DebugOutput
    } else {
        SkipReason::ToolNoise
    }
}

/// Whether prose is mostly code, logs or a table (at least four lines, 60 % of them).
pub(crate) fn looks_like_debug_output(text: &str) -> bool {
    let (num_code, num_lines) = code_line_ratio(text);
    num_lines >= 4 && num_code * 10 >= num_lines * 6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greetings_and_acknowledgements_are_skipped() {
        for greeting in [
            "hi",
            "Hello there!",
            "hey claude, good morning",
            "Good morning",
        ] {
            assert_eq!(
                prose_skip(greeting),
                Some(SkipReason::Greeting),
                "{greeting}"
            );
        }
        for ack in [
            "ok thanks",
            "OK.",
            "Thanks!",
            "got it",
            "Sounds good 👍",
            "Yes, swap it.",
            "Agreed, do that.",
        ] {
            assert_eq!(prose_skip(ack), Some(SkipReason::Acknowledgement), "{ack}");
        }
        assert_eq!(prose_skip("  \n "), Some(SkipReason::Empty));
    }

    #[test]
    fn substance_is_not_skipped() {
        for text in [
            "OK. We decided: JWT access token expiry is 15 minutes.",
            "Hi, the login endpoint returns 500 since this morning",
            "Yes, but keep the cookie fallback?",
            "Run it against staging.",
        ] {
            assert_eq!(prose_skip(text), None, "{text}");
        }
    }

    #[test]
    fn code_dumps_are_debug_output() {
        let dump = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\nthat's it";
        assert!(looks_like_debug_output(dump));
        assert!(!looks_like_debug_output("Two things:\n- a\n- b\n- c"));
    }
}
