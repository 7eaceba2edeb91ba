//! How a new event relates to ideas already in the graph (answers: see `answers`):
//! - **supersedes / builds_on / contradicts** between a new decision (or preference) and
//!   the decisions in force: the same setting given another value supersedes, the same
//!   value builds on; a decision that says which value it replaced ("16 workers, not 8
//!   anymore", "(was RabbitMQ)") supersedes those that state the replaced value; a change cue ("switch to", "instead of") with two shared words and
//!   half of the smaller idea's supersedes a decision that sets no value, or one whose
//!   value the new idea replaces by one of its kind (`values::value_change`), unless
//!   the new idea repeats every value the old one set; a technology the new idea negates ("we don't use Redis") that the old
//!   one uses contradicts (supersedes with a change cue); three shared words and 60 %
//!   builds on (one per new idea, the strongest). An elliptical change ("let's move it
//!   to 03:30", "set it to 2 GB") names no setting: it supersedes the decision in force
//!   that shares most words with what the session just said — its latest ideas and its
//!   last two turns, within 15 minutes ("Can we move the nightly suite?", "The 01:00
//!   run collides with the backups") — when that pointer is unambiguous
//!   ([`elliptical_referents`]).
//! - **todo completion**: a sentence saying something is done ("implemented",
//!   "merged", not "will be merged") or a commit message, holding two of the todo's terms
//!   and half of them (40 % for a commit).
//! - **tool signals**: a test run that passes resolves the session's latest open problem
//!   about tests (test, spec, CI, flaky, build, …).

use std::sync::LazyLock;

use memory_types::{Event, EventKind};

use crate::change_set::{AnsweredQuestion, CompletedTodo};
use crate::heuristic::facts::{FactsCache, IdeaFacts, salient_terms};
use crate::heuristic::intent::is_negated;
use crate::heuristic::pattern::Pattern;
use crate::heuristic::text::{MAX_IDEA_CHARS, truncate_at_word};
use crate::heuristic::values::{ValueChange, stated_values, value_change};
use crate::model::{EntityType, Idea, Intent, RelationType};

/// Most ideas a new idea supersedes, todos an event completes.
const MAX_RESOLVED_PER_EVENT: usize = 3;

/// A new decision or preference, as supersession sees it.
pub(crate) struct NewDecision<'a> {
    /// Its content.
    pub content: &'a str,
    /// Its facts.
    pub facts: &'a IdeaFacts,
    /// It carries a change cue.
    pub is_change: bool,
    /// It carries a keep cue.
    pub is_keep: bool,
    /// The values it says it replaced, and those it states
    /// (`values::explicit_change`).
    pub replaced: &'a ValueChange,
}

/// The relations from a new decision to the decisions in force (`current`, none of
/// them from the same event): each old idea at most once.
pub(crate) fn decision_relations(
    new: &NewDecision<'_>,
    current: &[Idea],
    cache: &mut FactsCache,
) -> Vec<(RelationType, String)> {
    let mut relations: Vec<(RelationType, String)> = Vec::new();
    let mut builds_on: Option<(usize, String)> = None;
    for old in current {
        let old_facts = cache.get(old);
        let conflicts = new.facts.settings.iter().any(|setting| {
            old_facts
                .settings
                .iter()
                .any(|old| setting.conflicts_with(old))
        });
        let agrees = new.facts.settings.iter().any(|setting| {
            old_facts
                .settings
                .iter()
                .any(|old| setting.agrees_with(old))
        });
        let clash = polarity_clash(new.facts, &old_facts);
        let shared = new.facts.num_shared_words(&old_facts);
        let smaller = new.facts.words.len().min(old_facts.words.len());
        // The new idea repeats every value the old one sets: a restatement, not a change.
        let repeats_values = !old_facts.settings.is_empty()
            && old_facts
                .settings
                .iter()
                .flat_map(|setting| setting.values.iter())
                .all(|value| new.facts.values.contains(value));
        let relation_opt = if conflicts || replaces_stated_value(new.replaced, &old.content, shared)
        {
            Some(RelationType::Supersedes)
        } else if clash {
            Some(if new.is_change {
                RelationType::Supersedes
            } else {
                RelationType::Contradicts
            })
        } else if agrees || repeats_values {
            None
        } else if new.is_change
            && !new.is_keep
            && shared >= 2
            && shared * 2 >= smaller
            && (old_facts.settings.is_empty()
                || !value_change(&old.content, new.content).old.is_empty())
        {
            // A decision that sets a value ("the JWT access token expiry is 15 minutes")
            // is replaced by a new value of its kind ("2 hours instead of half an hour
            // for the TTL"), not by any change on the same subject ("switch JWT signing
            // to jose"): only choices without a setting go by words alone.
            Some(RelationType::Supersedes)
        } else {
            None
        };
        match relation_opt {
            Some(relation) => {
                let cap = if relation == RelationType::Supersedes {
                    MAX_RESOLVED_PER_EVENT
                } else {
                    2
                };
                let num_same = relations
                    .iter()
                    .filter(|(kind, _)| *kind == relation)
                    .count();
                if num_same < cap {
                    relations.push((relation, old.idea_id.clone()));
                }
            }
            None => {
                let strength = if agrees || (repeats_values && shared >= 2) {
                    usize::MAX
                } else if shared >= 3 && shared * 5 >= smaller * 3 {
                    shared
                } else {
                    0
                };
                if strength > 0 && builds_on.as_ref().is_none_or(|(top, _)| strength > *top) {
                    builds_on = Some((strength, old.idea_id.clone()));
                }
            }
        }
    }
    if let Some((_, old_id)) = builds_on {
        relations.push((RelationType::BuildsOn, old_id));
    }
    relations
}

/// Whether a decision that says which values it replaced ("It's thirty days now, not
/// one week anymore") replaces one `old` states: `old` states a replaced value and none
/// of the new ones, and shares a word with it (`shared`): many settings are 8, many
/// things happen on Monday.
fn replaces_stated_value(replaced: &ValueChange, old: &str, shared: usize) -> bool {
    if replaced.old.is_empty() || shared == 0 {
        return false;
    }
    let old_values = stated_values(old);
    old_values.iter().any(|value| replaced.old.contains(value))
        && !old_values.iter().any(|value| replaced.new.contains(value))
}

/// The decisions in force an elliptical change ("let's make it 10:15", see
/// `draft::Draft::is_elliptical`) replaces: those that share the most words with what
/// the session just said (`context`: the words of its latest ideas and last two turns,
/// "Can we revisit the daily standup?") and state a value the change does not repeat.
/// People point at the subject under discussion; with nothing said just before,
/// nothing is superseded. Several decisions sharing most are one setting said twice only when
/// they state a common value ("the metrics server is X" in two places); otherwise the
/// pointer is ambiguous and nothing is superseded.
pub(crate) fn elliptical_referents(
    new_content: &str,
    context: &[String],
    current: &[Idea],
    cache: &mut FactsCache,
) -> Vec<String> {
    let new_values = stated_values(new_content);
    let mut best: Vec<(String, Vec<String>)> = Vec::new();
    let mut top = 0;
    for old in current {
        if !matches!(old.intent, Intent::Decision | Intent::Preference) {
            continue;
        }
        let old_facts = cache.get(old);
        let shared = old_facts
            .words
            .iter()
            .filter(|word| context.contains(word))
            .count();
        if shared == 0 || shared < top {
            continue;
        }
        let old_values = stated_values(&old.content);
        if old_values.iter().all(|value| new_values.contains(value)) {
            continue;
        }
        if shared > top {
            top = shared;
            best.clear();
        }
        best.push((old.idea_id.clone(), old_values));
    }
    let one_setting = best.first().is_some_and(|(_, first_values)| {
        first_values
            .iter()
            .any(|value| best.iter().all(|(_, values)| values.contains(value)))
    });
    if !one_setting {
        return Vec::new();
    }
    best.into_iter()
        .take(MAX_RESOLVED_PER_EVENT)
        .map(|(idea_id, _)| idea_id)
        .collect()
}

/// A technology the new idea negates that the old one names plainly, or the reverse.
fn polarity_clash(new: &IdeaFacts, old: &IdeaFacts) -> bool {
    new.mentions.iter().any(|mention| {
        mention.entity_type == EntityType::Technology
            && old.mentions.iter().any(|other| {
                other.key == mention.key
                    && other.entity_type == EntityType::Technology
                    && other.is_negated != mention.is_negated
            })
    })
}

static DONE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b(?:done|finished|implemented|fixed|merged|committed|completed|shipped|deployed|resolved|closed|landed|added|removed|pushed|released|created|migrated|documented)\b",
    )
});

/// Evidence that something was completed.
pub(crate) struct Evidence {
    /// One line on how.
    pub summary: String,
    /// Its salient terms.
    pub terms: Vec<String>,
    /// Whether it is a commit message (weaker overlap suffices).
    pub is_commit: bool,
}

/// The sentences (content, cue text) that say something is done.
pub(crate) fn done_evidence<'a>(
    sentences: impl Iterator<Item = (&'a str, &'a str, &'a [String])>,
) -> Vec<Evidence> {
    let mut evidence = Vec::new();
    for (content, cue_text, terms) in sentences {
        let is_done = DONE.find_iter(cue_text).any(|found| {
            let before = &cue_text[..found.start()];
            !is_negated(before) && !is_future(before)
        });
        if !is_done || terms.is_empty() {
            continue;
        }
        evidence.push(Evidence {
            summary: content.to_owned(),
            terms: terms.to_vec(),
            is_commit: false,
        });
    }
    evidence
}

fn is_future(before: &str) -> bool {
    before
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
        .rev()
        .take(3)
        .any(|word| {
            word.ends_with("'ll")
                || matches!(
                    word,
                    "will"
                        | "going"
                        | "need"
                        | "needs"
                        | "should"
                        | "must"
                        | "can"
                        | "could"
                        | "would"
                        | "to"
                        | "be"
                        | "once"
                        | "when"
                        | "after"
                        | "until"
                        | "if"
                        | "get"
                        | "gets"
                        | "yet"
                )
        })
}

static COMMIT: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r#"\bgit\s+commit\b[^'"\n]*?\s-[a-zA-Z]*m\s*(?:'([^']+)'|"([^"]+)")"#)
});

/// The message of a `git commit -m '…'` in a tool call.
pub(crate) fn commit_message(text: &str) -> Option<String> {
    let captures = COMMIT.captures(text)?;
    let message = captures.get(1).or_else(|| captures.get(2))?.as_str().trim();
    (!message.is_empty()).then(|| message.to_owned())
}

/// A commit as evidence.
pub(crate) fn commit_evidence(message: &str) -> Evidence {
    Evidence {
        summary: truncate_at_word(&format!("committed: {message}"), MAX_IDEA_CHARS),
        terms: salient_terms(message),
        is_commit: true,
    }
}

/// The open todos the evidence completes, best first.
/// Also closes problems (the caller passes open problems as `open`).
pub(crate) fn completions(
    event: &Event,
    evidence: &[Evidence],
    open: &[Idea],
    cache: &mut FactsCache,
) -> Vec<CompletedTodo> {
    if evidence.is_empty() {
        return Vec::new();
    }
    let mut accepted: Vec<(f32, &Idea, &Evidence)> = Vec::new();
    for todo in open {
        if todo.source.event_id == event.event_id || todo.valid_from_ms > event.timestamp_ms {
            continue;
        }
        let facts = cache.get(todo);
        let num_terms = facts.terms.len();
        let mut best: Option<(usize, &Evidence)> = None;
        for item in evidence {
            let matched = facts
                .terms
                .iter()
                .filter(|term| item.terms.contains(term))
                .count();
            let enough = if item.is_commit {
                matched * 10 >= num_terms * 4
            } else {
                matched * 2 >= num_terms
            };
            if matched >= 2 && enough && best.is_none_or(|(top, _)| matched > top) {
                best = Some((matched, item));
            }
        }
        if let Some((matched, item)) = best {
            accepted.push((matched as f32 / num_terms as f32, todo, item));
        }
    }
    accepted.sort_by(|(a_score, a, _), (b_score, b, _)| {
        b_score
            .total_cmp(a_score)
            .then_with(|| b.valid_from_ms.cmp(&a.valid_from_ms))
            .then_with(|| a.idea_id.cmp(&b.idea_id))
    });
    accepted
        .into_iter()
        .take(MAX_RESOLVED_PER_EVENT)
        .map(|(_, todo, item)| CompletedTodo {
            todo_idea_id: todo.idea_id.clone(),
            completed_at_event_id: event.event_id.clone(),
            completion_summary: truncate_at_word(&item.summary, MAX_IDEA_CHARS),
        })
        .collect()
}

static PASSED: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"(?i)\b\d+ passed\b|\btest result: ok\b|\ball \d+ tests? passed\b")
});
static FAILED: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"(?i)\b[1-9]\d* (?:failed|failing|errors?)\b|\bFAIL\b|test result: FAILED")
});

/// Whether a tool result is a test run that passed (nothing failed, exit code 0).
pub(crate) fn tests_passed(event: &Event) -> bool {
    event.kind == EventKind::ToolResult
        && event
            .metadata
            .get("exit_code")
            .is_none_or(|code| code.trim() == "0")
        && PASSED.is_match(&event.text)
        && !FAILED.is_match(&event.text)
}

/// Stems of problems a test run speaks to.
const TEST_TERMS: &[&str] = &[
    "test", "spec", "ci", "flaky", "build", "assert", "jest", "pytest", "suite", "compil", "lint",
];

/// A passing test run resolves the session's latest open problem about tests (or
/// sharing a term with the output).
pub(crate) fn test_resolution(
    event: &Event,
    session_open: &[Idea],
    cache: &mut FactsCache,
) -> Option<AnsweredQuestion> {
    if !tests_passed(event) {
        return None;
    }
    let problem = session_open.iter().find(|idea| {
        idea.intent == Intent::Problem
            && idea.source.session_id == event.session_id
            && idea.valid_from_ms <= event.timestamp_ms
            && cache
                .get(idea)
                .terms
                .iter()
                .any(|term| TEST_TERMS.contains(&term.as_str()))
    })?;
    let line = event
        .text
        .lines()
        .find(|line| PASSED.is_match(line))
        .unwrap_or("tests pass")
        .trim();
    Some(AnsweredQuestion {
        question_idea_id: problem.idea_id.clone(),
        answered_at_event_id: event.event_id.clone(),
        answer_summary: truncate_at_word(&format!("tests pass: {line}"), MAX_IDEA_CHARS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_messages_are_read_from_tool_calls() {
        assert_eq!(
            commit_message("bash: git add -A && git commit -m 'auth: JWT access tokens (15m)'")
                .as_deref(),
            Some("auth: JWT access tokens (15m)")
        );
        assert_eq!(
            commit_message(r#"git commit -am "consumer: store offsets" && git push"#).as_deref(),
            Some("consumer: store offsets")
        );
        assert_eq!(commit_message("git log --oneline"), None);
    }

    #[test]
    fn done_needs_a_past_tense_that_is_not_negated_or_future() {
        let cases = [
            ("the rate limiter is implemented and merged", true),
            ("it will be merged tomorrow", false),
            ("we haven't merged the rate limiter", false),
            ("once it's deployed we can remove the flag", false),
        ];
        for (text, expected) in cases {
            let terms = salient_terms(text);
            let found = done_evidence(std::iter::once((text, text, terms.as_slice())));
            assert_eq!(!found.is_empty(), expected, "{text}");
        }
    }
}
