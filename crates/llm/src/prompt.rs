//! The prompts: what the model is asked and how grips are numbered.
//!
//! Grip ids (`grip:1769767200000:01KG…`) are long, opaque and easy for a model to
//! mangle, so the prompt numbers grips `[1]`…`[n]` and the answer cites numbers, which
//! [`crate::answer`] maps back to ids and checks for range. A segment's grips are listed
//! with their excerpts; a parent's are the grip ids its children's bullets cite, shown
//! as numbers after those bullets.
//!
//! The input is cut to a character budget (default [`DEFAULT_PROMPT_BUDGET_CHARS`],
//! about 3 000 tokens) so a prompt fits the context window of small local models and a
//! long segment costs a bounded amount: each event, grip and child gets a share and is
//! cut with `…`, and what does not fit is counted in an "omitted" line. Cutting is
//! deterministic, so the same input always makes the same prompt.

use std::collections::HashMap;
use std::fmt::Write as _;

use memory_summarize::{ParentInput, SegmentInput};
use memory_toc::{GripId, TocNode};

use crate::client::ChatMessage;
use crate::text::{one_line, one_line_capped};

/// Characters of input (events, grips, children) a prompt holds at most, instructions
/// not counted.
pub const DEFAULT_PROMPT_BUDGET_CHARS: usize = 12_000;

/// Longest grip excerpt shown; extracted grips are shorter (280 by default).
const MAX_GRIP_EXCERPT_CHARS: usize = 400;
/// Share of the budget the grip list of a segment may take.
const GRIP_BUDGET_DIVISOR: usize = 2;
/// Bounds of one event's share of the budget.
const MIN_EVENT_CHARS: usize = 200;
const MAX_EVENT_CHARS: usize = 2_000;
/// Bounds of one child's share of the budget.
const MIN_CHILD_CHARS: usize = 300;
const MAX_CHILD_CHARS: usize = 3_000;
/// Longest child summary, bullet and keyword line shown.
const MAX_CHILD_SUMMARY_CHARS: usize = 600;
const MAX_CHILD_BULLET_CHARS: usize = 300;
const MAX_CHILD_KEYWORDS_CHARS: usize = 200;

/// The instructions, the same for every node. The limits asked for are tighter than
/// those [`crate::answer`] enforces, so a model that overshoots a little still passes.
const SYSTEM_PROMPT: &str = "\
You write the table of contents of a coding agent's long-term memory: short, factual \
summaries of what happened in a conversation between a user and a coding agent, so that \
the agent can later find what was decided, broken, fixed or left open.

Answer with one JSON object and nothing else, of this form:
{\"title\": \"...\", \"summary\": \"...\" or null, \"bullets\": [{\"text\": \"...\", \"grips\": [1, 2]}], \"keywords\": [\"...\"]}

Rules:
- title: at most 80 characters; says what happened, e.g. \"Fixed JWT expiry check in refresh()\".
- summary: one to three sentences on the whole, or null when the bullets say everything.
- bullets: one to eight notable things (decisions, problems, fixes, open questions, \
results), each at most 200 characters. In \"grips\", list the numbers of the bracketed \
excerpts [n] the bullet rests on, only numbers that appear in the input; [] when none applies.
- keywords: up to ten salient terms (technologies, identifiers, file names, topics), most \
salient first.
- Use only facts from the input. Write in the language of the conversation.";

/// The closing line of every user message, after the budgeted input.
const ANSWER_REMINDER: &str = "\nAnswer with the JSON object only.";

/// A prompt and the grips its numbers stand for.
#[derive(Debug)]
pub(crate) struct Prompt {
    /// System instructions, then the input.
    pub(crate) messages: Vec<ChatMessage>,
    /// Grip number `n` (1-based) cites `grip_ids[n - 1]`.
    pub(crate) grip_ids: Vec<GripId>,
}

/// Grip ids numbered in order of first appearance.
#[derive(Default)]
struct GripNumbering {
    grip_ids: Vec<GripId>,
    numbers: HashMap<GripId, usize>,
}

impl GripNumbering {
    fn number_of(&mut self, grip_id: GripId) -> usize {
        if let Some(number) = self.numbers.get(&grip_id) {
            return *number;
        }
        self.grip_ids.push(grip_id);
        let number = self.grip_ids.len();
        self.numbers.insert(grip_id, number);
        number
    }

    /// Forgets every number above `len`: the text that showed them was not kept.
    fn truncate(&mut self, len: usize) {
        for grip_id in self.grip_ids.drain(len..) {
            self.numbers.remove(&grip_id);
        }
    }
}

/// The prompt for a segment node: numbered grips with their excerpts, then the events
/// as `role: text` lines, within `budget_chars`.
pub(crate) fn segment_prompt(input: &SegmentInput<'_>, budget_chars: usize) -> Prompt {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "Summarize this segment of a conversation (project {}, session {}).",
        one_line(input.project_id),
        one_line(input.session_id)
    );
    let mut num_chars = text.chars().count();

    text.push_str("\nGrips (verbatim excerpts; cite them by number):\n");
    let grip_budget_chars = budget_chars / GRIP_BUDGET_DIVISOR;
    let mut grip_ids = Vec::new();
    let mut num_grip_chars = 0;
    for grip in input.grips {
        let line = format!(
            "[{}] {}\n",
            grip_ids.len() + 1,
            one_line_capped(&grip.excerpt, MAX_GRIP_EXCERPT_CHARS)
        );
        let num_line_chars = line.chars().count();
        if num_grip_chars + num_line_chars > grip_budget_chars {
            break;
        }
        num_grip_chars += num_line_chars;
        text.push_str(&line);
        grip_ids.push(grip.grip_id);
    }
    if grip_ids.is_empty() {
        text.push_str("(none)\n");
    }
    num_chars += num_grip_chars;

    text.push_str("\nEvents:\n");
    let num_events = input.events.len();
    let event_budget_chars = budget_chars.saturating_sub(num_chars);
    let per_event_chars =
        (event_budget_chars / num_events.max(1)).clamp(MIN_EVENT_CHARS, MAX_EVENT_CHARS);
    let mut num_omitted_events = 0;
    for (index, event) in input.events.iter().enumerate() {
        let line = format!(
            "{}: {}\n",
            one_line(event.role),
            one_line_capped(event.text, per_event_chars)
        );
        let num_line_chars = line.chars().count();
        if num_chars + num_line_chars > budget_chars {
            num_omitted_events = num_events - index;
            break;
        }
        num_chars += num_line_chars;
        text.push_str(&line);
    }
    if num_omitted_events > 0 {
        let _ = writeln!(text, "[… {num_omitted_events} more events omitted]");
    }
    text.push_str(ANSWER_REMINDER);
    Prompt {
        messages: vec![ChatMessage::system(SYSTEM_PROMPT), ChatMessage::user(text)],
        grip_ids,
    }
}

/// The prompt for a day, week, month or year node: each child's title, summary,
/// bullets (with the numbers of the grips they cite) and keywords, within
/// `budget_chars`.
pub(crate) fn parent_prompt(input: &ParentInput<'_>, budget_chars: usize) -> Prompt {
    let mut text = String::new();
    let num_children = input.children.len();
    let _ = writeln!(
        text,
        "Summarize this {} ({}, project {}) from its {} parts below, oldest first. \
         Numbers in brackets after a bullet are grips; cite them by number.",
        input.level(),
        input.node_id,
        one_line(input.project_id),
        num_children
    );
    let mut num_chars = text.chars().count();
    let per_child_chars = (budget_chars.saturating_sub(num_chars) / num_children.max(1))
        .clamp(MIN_CHILD_CHARS, MAX_CHILD_CHARS);
    let mut numbering = GripNumbering::default();
    let mut num_omitted_children = 0;
    for (index, child) in input.children.iter().enumerate() {
        let num_grips_before = numbering.grip_ids.len();
        let section = child_section(index + 1, child, per_child_chars, &mut numbering);
        let num_section_chars = section.chars().count();
        if num_chars + num_section_chars > budget_chars {
            numbering.truncate(num_grips_before);
            num_omitted_children = num_children - index;
            break;
        }
        num_chars += num_section_chars;
        text.push_str(&section);
    }
    if num_omitted_children > 0 {
        let _ = writeln!(text, "\n[… {num_omitted_children} more parts omitted]");
    }
    text.push_str(ANSWER_REMINDER);
    Prompt {
        messages: vec![ChatMessage::system(SYSTEM_PROMPT), ChatMessage::user(text)],
        grip_ids: numbering.grip_ids,
    }
}

/// One child as a prompt section of at most about `max_chars` characters: bullets that
/// do not fit are left out (and their grips stay unnumbered).
fn child_section(
    position: usize,
    child: &TocNode,
    max_chars: usize,
    numbering: &mut GripNumbering,
) -> String {
    let mut section = String::new();
    let _ = writeln!(
        section,
        "\n## {position}. {} {}: {}",
        child.level,
        child.node_id,
        one_line_capped(&child.title, MAX_CHILD_BULLET_CHARS)
    );
    if let Some(summary) = child.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        let _ = writeln!(
            section,
            "Summary: {}",
            one_line_capped(summary, MAX_CHILD_SUMMARY_CHARS)
        );
    }
    let keywords_line = if child.keywords.is_empty() {
        String::new()
    } else {
        format!(
            "Keywords: {}\n",
            one_line_capped(&child.keywords.join(", "), MAX_CHILD_KEYWORDS_CHARS)
        )
    };
    let mut num_chars = section.chars().count() + keywords_line.chars().count();
    for bullet in &child.bullets {
        let num_grips_before = numbering.grip_ids.len();
        let mut line = format!(
            "- {}",
            one_line_capped(&bullet.text, MAX_CHILD_BULLET_CHARS)
        );
        for grip_id in &bullet.grip_ids {
            let _ = write!(line, " [{}]", numbering.number_of(*grip_id));
        }
        line.push('\n');
        let num_line_chars = line.chars().count();
        if num_chars + num_line_chars > max_chars {
            numbering.truncate(num_grips_before);
            break;
        }
        num_chars += num_line_chars;
        section.push_str(&line);
    }
    section.push_str(&keywords_line);
    section
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use memory_summarize::SummaryEvent;
    use memory_toc::{Grip, TocBullet, TocLevel, TocNodeId};

    use super::*;

    fn segment_id() -> TocNodeId {
        let day = NaiveDate::from_ymd_opt(2026, 1, 30).expect("date");
        TocNodeId::segment_for("default", day, 1_769_767_200_000, "evt-1")
    }

    fn grip(segment_id: TocNodeId, offset: usize, excerpt: &str) -> Grip {
        Grip {
            grip_id: GripId::derive("default", 1_769_767_200_000, "evt-1", offset),
            project_id: "default".into(),
            session_id: "s1".into(),
            excerpt: excerpt.into(),
            event_id_start: "evt-1".into(),
            event_id_end: "evt-1".into(),
            timestamp_ms: 1_769_767_200_000,
            segment_id,
        }
    }

    fn user_text(prompt: &Prompt) -> &str {
        &prompt.messages[1].content
    }

    #[test]
    fn segment_prompt_numbers_grips_and_lists_events() {
        let segment_id = segment_id();
        let grips = [
            grip(segment_id, 0, "Let's use RS256 for JWT"),
            grip(segment_id, 40, "expiry is 15\nminutes"),
        ];
        let events = [
            SummaryEvent {
                event_id: "evt-1",
                timestamp_ms: 1,
                role: "user",
                text: "Let's use RS256 for JWT.\nexpiry is 15 minutes",
            },
            SummaryEvent {
                event_id: "evt-2",
                timestamp_ms: 2,
                role: "assistant",
                text: "Done.",
            },
        ];
        let document_frequency = |_: &str| 0;
        let input = SegmentInput {
            segment_id: &segment_id,
            project_id: "default",
            session_id: "s1",
            events: &events,
            grips: &grips,
            corpus_document_frequency: &document_frequency,
            num_corpus_documents: 0,
        };
        let prompt = segment_prompt(&input, DEFAULT_PROMPT_BUDGET_CHARS);
        assert_eq!(prompt.grip_ids, [grips[0].grip_id, grips[1].grip_id]);
        let text = user_text(&prompt);
        assert!(text.contains("[1] Let's use RS256 for JWT\n"), "{text}");
        assert!(text.contains("[2] expiry is 15 minutes\n"), "{text}");
        assert!(
            text.contains(
                "user: Let's use RS256 for JWT. expiry is 15 minutes\nassistant: Done.\n"
            ),
            "{text}"
        );
        assert!(!text.contains("omitted"), "{text}");
        assert_eq!(prompt.messages[0].content, SYSTEM_PROMPT);
    }

    #[test]
    fn segment_prompt_stays_within_the_budget() {
        let segment_id = segment_id();
        let long_text = "word ".repeat(2_000);
        let events: Vec<SummaryEvent<'_>> = (0..100)
            .map(|_| SummaryEvent {
                event_id: "evt",
                timestamp_ms: 1,
                role: "tool",
                text: &long_text,
            })
            .collect();
        let document_frequency = |_: &str| 0;
        let input = SegmentInput {
            segment_id: &segment_id,
            project_id: "default",
            session_id: "s1",
            events: &events,
            grips: &[],
            corpus_document_frequency: &document_frequency,
            num_corpus_documents: 0,
        };
        let prompt = segment_prompt(&input, 5_000);
        let text = user_text(&prompt);
        let num_chars = text.chars().count();
        assert!(num_chars <= 5_000 + 100, "{num_chars}");
        assert!(text.contains("(none)"));
        assert!(text.contains("more events omitted]"), "{text}");
        assert!(prompt.grip_ids.is_empty());
    }

    fn child(node_id: &str, title: &str, bullets: Vec<TocBullet>) -> TocNode {
        let node_id: TocNodeId = node_id.parse().expect("node id");
        TocNode {
            level: node_id.level(),
            node_id,
            project_id: "default".into(),
            title: title.into(),
            summary: Some("A summary.".into()),
            bullets,
            keywords: vec!["jwt".into(), "rs256".into()],
            start_ms: 0,
            end_ms: 0,
            child_ids: Vec::new(),
            num_events: 3,
            version: 1,
        }
    }

    #[test]
    fn parent_prompt_numbers_the_grips_its_children_cite_once_each() {
        let grip_a = GripId::derive("default", 1, "a", 0);
        let grip_b = GripId::derive("default", 2, "b", 0);
        let children = [
            child(
                "toc:day:2026-01-29",
                "JWT signing",
                vec![TocBullet {
                    text: "Chose RS256".into(),
                    grip_ids: vec![grip_a, grip_b],
                }],
            ),
            child(
                "toc:day:2026-01-30",
                "JWT expiry",
                vec![TocBullet {
                    text: "Expiry 15 min".into(),
                    grip_ids: vec![grip_b],
                }],
            ),
        ];
        let node_id: TocNodeId = "toc:week:2026-W05".parse().expect("node id");
        let input = ParentInput {
            node_id: &node_id,
            project_id: "default",
            children: &children,
        };
        assert_eq!(input.level(), TocLevel::Week);
        let prompt = parent_prompt(&input, DEFAULT_PROMPT_BUDGET_CHARS);
        assert_eq!(prompt.grip_ids, [grip_a, grip_b]);
        let text = user_text(&prompt);
        assert!(
            text.contains("Summarize this week (toc:week:2026-W05"),
            "{text}"
        );
        assert!(
            text.contains("## 1. day toc:day:2026-01-29: JWT signing"),
            "{text}"
        );
        assert!(text.contains("- Chose RS256 [1] [2]\n"), "{text}");
        assert!(text.contains("- Expiry 15 min [2]\n"), "{text}");
        assert!(text.contains("Keywords: jwt, rs256"), "{text}");
    }

    #[test]
    fn parent_prompt_leaves_omitted_children_unnumbered() {
        let children: Vec<TocNode> = (1..=28)
            .map(|day| {
                child(
                    &format!("toc:day:2026-02-{day:02}"),
                    &"long title ".repeat(20),
                    (0..10)
                        .map(|index| TocBullet {
                            text: "a bullet that takes some room ".repeat(8),
                            grip_ids: vec![GripId::derive("default", day, "e", index)],
                        })
                        .collect(),
                )
            })
            .collect();
        let node_id: TocNodeId = "toc:month:2026-02".parse().expect("node id");
        let input = ParentInput {
            node_id: &node_id,
            project_id: "default",
            children: &children,
        };
        let prompt = parent_prompt(&input, 4_000);
        let text = user_text(&prompt);
        assert!(text.chars().count() <= 4_000 + 100);
        assert!(text.contains("more parts omitted]"), "{text}");
        let num_shown = (1..=prompt.grip_ids.len())
            .filter(|number| text.contains(&format!("[{number}]")))
            .count();
        assert_eq!(num_shown, prompt.grip_ids.len(), "every number is shown");
        assert!(!text.contains(&format!("[{}]", prompt.grip_ids.len() + 1)));
    }
}
