//! Whether a question asks how things are now. "Which registry do we push to?",
//! "How long do logs stick around these days?" want the value in force: when the
//! memory holds two statements of it, the newer one is the answer. "Where did we deploy
//! the first build?", "What was the timeout before the incident?" ask about a past, and
//! every statement of it may be the answer. Read off the question's own words: a word
//! of the present ("now", "currently", "these days") says it, a past auxiliary ("did",
//! "was") rules it out, and otherwise a present auxiliary ("is", "do", "does", "can")
//! says it.

/// Words and phrases that put a question in the present whatever its verbs.
const NOW_WORDS: [&str; 10] = [
    "now",
    "currently",
    "current",
    "nowadays",
    "today",
    "anymore",
    "still",
    "latest",
    "these days",
    "at the moment",
];

/// Auxiliaries of a question about the past.
const PAST: [&str; 7] = ["did", "was", "were", "had", "has", "have", "used"];

/// Auxiliaries of a question about the present. Not "has"/"have": "What books has she
/// read?" gathers a past, every statement of it counts.
const PRESENT: [&str; 9] = [
    "is", "are", "do", "does", "can", "should", "must", "what's", "where's",
];

/// Whether `question` asks how things are now (see the module doc).
pub(crate) fn asks_about_now(question: &str) -> bool {
    let lower = question.to_lowercase().replace('\u{2019}', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
        .collect();
    let padded = format!(" {} ", words.join(" "));
    if NOW_WORDS
        .iter()
        .any(|now| padded.contains(&format!(" {now} ")))
    {
        return true;
    }
    if words.iter().any(|word| PAST.contains(word)) {
        return false;
    }
    words.iter().any(|word| PRESENT.contains(word))
}

#[cfg(test)]
mod tests {
    use super::asks_about_now;

    #[test]
    fn present_questions_ask_about_now_and_past_ones_do_not() {
        for question in [
            "Which registry do we push images to?",
            "How long is the session cache TTL?",
            "What does CI run the unit tests with these days?",
            "Who owns the billing export at the moment?",
            "What did we decide, and is it still the plan?",
            "Which region is prod in now?",
        ] {
            assert!(asks_about_now(question), "{question}");
        }
        for question in [
            "Where did we deploy the first build?",
            "What books has Melanie read?",
            "What was the timeout before the incident?",
            "When did Caroline go to the support group?",
            "JWT expiry refresh tokens",
        ] {
            assert!(!asks_about_now(question), "{question}");
        }
    }
}
