//! Whether the model's ideas say what their source events say.
//!
//! Validation checks that an idea's `source_event_id` is an event of the batch, not that
//! the event says it. Measured on the sample, Qwen2.5-Coder-1.5B wrote true ideas from a
//! session's summary turn and pinned them on earlier turns (a question, a greeting):
//! every citation of such an idea would point at the wrong turn. So before a change set
//! leaves the engine, each new idea is checked against its source: when fewer than half
//! of its content words are in the source event's text, it moves to the event of the
//! same session in the batch that holds the most of them (at least half), and the
//! relations and entity links that meant that idea follow it (under its new id; an
//! event's other ideas keep theirs); when no event does, the idea is dropped. Both are counted (`memory_indexing_llm_grounding_total{outcome}`). An
//! idea pinned on an event outside the part (its read-only `context`, or an earlier
//! part's) moves to the part's event of the same session that holds half its words, or
//! goes; an id the model invented is left to validation, which rejects and counts it.
//!
//! An idea is a sentence about what was said, not a copy of a tool's input or output:
//! measured on the sample, Qwen2.5-Coder-0.5B filed shell commands, file writes and
//! `npm` output verbatim as decisions and conclusions (21 of its first 40 ideas). An
//! idea whose source is a tool call or tool result and whose content is that event's
//! text (or its opening) copied is dropped (`outcome="copied"`), as the design's "skip
//! debugging output and tool preambles" asks.

use std::collections::{BTreeMap, BTreeSet};

use memory_ideas::{ChangeSet, ExtractBatch};
use memory_text::is_stopword;
use memory_types::{Event, EventKind};

use crate::metrics::LLM_ENGINE_METRICS;

/// Share of an idea's content words its source must hold.
pub const MIN_GROUNDED_SHARE: f32 = 0.5;
/// Characters of a tool event's opening that, found in an idea, make it a copy.
const COPIED_OPENING_CHARS: usize = 40;

/// What grounding did to a change set's new ideas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grounding {
    /// Moved to the event that says them.
    pub moved: usize,
    /// Said by no event of their session in the batch.
    pub dropped: usize,
    /// Copies of a tool call's or result's text.
    pub copied: usize,
}

/// Whitespace runs as one space, trimmed.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `content` is `source`'s text copied: contained in it, or holding its opening.
fn is_copy(content: &str, source: &Event) -> bool {
    if !matches!(source.kind, EventKind::ToolCall | EventKind::ToolResult) {
        return false;
    }
    let (content, text) = (squeeze(content), squeeze(&source.text));
    if content.is_empty() || text.is_empty() {
        return false;
    }
    if text.contains(&content) {
        return true;
    }
    // The opening rule needs an opening long enough to be the text's own: a short result
    // (`ok`, `0`) is in many a true sentence.
    if text.chars().count() < COPIED_OPENING_CHARS {
        return false;
    }
    let opening: String = text.chars().take(COPIED_OPENING_CHARS).collect();
    content.contains(&opening)
}

/// Lowercase words of three or more characters that are not function words.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|ch: char| !ch.is_alphanumeric() && ch != '_')
        .filter(|word| word.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|word| !is_stopword(word))
        .collect()
}

fn share(content: &BTreeSet<String>, event: &BTreeSet<String>) -> f32 {
    if content.is_empty() {
        return 1.0;
    }
    content.intersection(event).count() as f32 / content.len() as f32
}

/// What grounding does to one idea.
enum Fate {
    Stays,
    Moved { project_id: String, to: String },
    Dropped,
}

/// Points the relations and entity links of `changes` at where their ideas go (`fates`,
/// one per idea, in order), before the ideas move. A relation names its idea by source
/// event and id (or the event's first idea); an entity link by source event (every idea
/// of it). A dropped idea's relations keep naming it, so validation refuses them.
fn follow(changes: &mut ChangeSet, fates: &[(Option<String>, Fate)]) {
    if !fates
        .iter()
        .any(|(_, fate)| matches!(fate, Fate::Moved { .. }))
    {
        return;
    }
    let ideas = &changes.ideas;
    for relation in &mut changes.relations {
        // The idea it meant: the one with its id, else its event's first.
        let meant = ideas.iter().zip(fates).find(|(idea, (original_id, _))| {
            idea.source_event_id == relation.from_event_id
                && relation
                    .from_idea_id
                    .as_ref()
                    .is_none_or(|id| original_id.as_ref() == Some(id))
        });
        match meant {
            Some((idea, (_, Fate::Moved { project_id, to }))) => {
                relation.from_event_id.clone_from(to);
                relation.from_idea_id = Some(memory_ideas::idea_id(project_id, to, &idea.content));
            }
            // Named by the id it had, which no idea has any more: validation refuses it
            // rather than giving it to the event's next idea.
            Some((_, (Some(original_id), Fate::Dropped))) => {
                relation.from_idea_id = Some(original_id.clone());
            }
            _ => {}
        }
    }
    let mut links = Vec::with_capacity(changes.entity_links.len());
    for link in &changes.entity_links {
        let of_event: Vec<&Fate> = ideas
            .iter()
            .zip(fates)
            .filter(|(idea, _)| idea.source_event_id == link.idea_source_event_id)
            .map(|(_, (_, fate))| fate)
            .collect();
        if of_event.is_empty() || of_event.iter().any(|fate| matches!(fate, Fate::Stays)) {
            links.push(link.clone());
        }
        for fate in of_event {
            if let Fate::Moved { to, .. } = fate {
                let mut moved = link.clone();
                moved.idea_source_event_id.clone_from(to);
                if !links.contains(&moved) {
                    links.push(moved);
                }
            }
        }
    }
    changes.entity_links = links;
}

/// Re-anchors or drops the new ideas of `changes`, the model's answer for `part` of
/// `batch`, whose content their source event does not hold, and drops copies of tool
/// events (see the module docs).
pub fn ground(changes: &mut ChangeSet, part: &ExtractBatch, batch: &ExtractBatch) -> Grounding {
    let events: BTreeMap<&str, (&Event, BTreeSet<String>)> = part
        .events()
        .map(|event| (event.event_id.as_str(), (event, words(&event.text))))
        .collect();
    // Events the model saw but may not cite: the part's read-only context and the
    // batch's other parts. An idea pinned on one stays in its (project, session).
    let elsewhere: BTreeMap<&str, (&str, &str)> = batch
        .events()
        .chain(
            part.sessions
                .iter()
                .flat_map(|session| session.context.iter()),
        )
        .map(|event| {
            (
                event.event_id.as_str(),
                (event.project_id.as_str(), event.session_id.as_str()),
            )
        })
        .collect();
    // Decide for each idea first (where it goes, or that it goes), then apply: the
    // relations and entity links name an idea by its source event (and its id), so they
    // must follow the idea they meant, not every idea of that event.
    let (mut num_moved, mut num_dropped, mut num_copied) = (0, 0, 0);
    let mut fates: Vec<(Option<String>, Fate)> = Vec::with_capacity(changes.ideas.len());
    for idea in &changes.ideas {
        let content = words(&idea.content);
        // Where the idea belongs: its source when that says it; else the event of the
        // part, in the source's session, that says most of it. The source may be a
        // read-only `context` event or an earlier part's, which validation against the
        // whole batch would let through (measured: the 0.5B pinned one sentence on
        // seven context events); never another session's or project's event.
        let source = events.get(idea.source_event_id.as_str());
        let session_of_source = match source {
            Some((event, _)) => (event.project_id.as_str(), event.session_id.as_str()),
            None => match elsewhere.get(idea.source_event_id.as_str()) {
                Some(session) => *session,
                // An id the model invented: validation rejects and counts it.
                None => {
                    fates.push((None, Fate::Stays));
                    continue;
                }
            },
        };
        let home = match source {
            Some((event, source_words)) if share(&content, source_words) >= MIN_GROUNDED_SHARE => {
                Some(*event)
            }
            _ => events
                .values()
                .filter(|(event, _)| {
                    (event.project_id.as_str(), event.session_id.as_str()) == session_of_source
                })
                .map(|(event, words)| (share(&content, words), *event))
                .max_by(|a, b| {
                    a.0.total_cmp(&b.0)
                        .then(b.1.timestamp_ms.cmp(&a.1.timestamp_ms))
                })
                .filter(|(best, _)| *best >= MIN_GROUNDED_SHARE)
                .map(|(_, event)| event),
        };
        let original_id = Some(memory_ideas::idea_id(
            session_of_source.0,
            &idea.source_event_id,
            &idea.content,
        ));
        fates.push((
            original_id,
            match home {
                None => {
                    num_dropped += 1;
                    Fate::Dropped
                }
                Some(event) if is_copy(&idea.content, event) => {
                    num_copied += 1;
                    Fate::Dropped
                }
                Some(event) if event.event_id != idea.source_event_id => {
                    num_moved += 1;
                    Fate::Moved {
                        project_id: event.project_id.clone(),
                        to: event.event_id.clone(),
                    }
                }
                Some(_) => Fate::Stays,
            },
        ));
    }
    follow(changes, &fates);
    let mut fate = fates.iter().map(|(_, fate)| fate);
    changes.ideas.retain_mut(|idea| match fate.next() {
        Some(Fate::Dropped) => false,
        Some(Fate::Moved { to, .. }) => {
            idea.source_event_id.clone_from(to);
            true
        }
        Some(Fate::Stays) | None => true,
    });
    let metrics = &*LLM_ENGINE_METRICS;
    metrics
        .grounding
        .with_label_values(&["moved"])
        .inc_by(num_moved as u64);
    metrics
        .grounding
        .with_label_values(&["dropped"])
        .inc_by(num_dropped as u64);
    metrics
        .grounding
        .with_label_values(&["copied"])
        .inc_by(num_copied as u64);
    Grounding {
        moved: num_moved,
        dropped: num_dropped,
        copied: num_copied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_result(text: &str) -> Event {
        Event {
            event_id: "t".into(),
            session_id: "s".into(),
            project_id: "p".into(),
            agent_id: None,
            timestamp_ms: 1,
            kind: EventKind::ToolResult,
            role: memory_types::Role::Tool,
            text: text.into(),
            metadata: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn a_short_tool_output_does_not_make_every_sentence_holding_it_a_copy() {
        let ok = tool_result("ok");
        assert!(!is_copy("The migration tests look ok on CI now", &ok));
        assert!(is_copy("ok", &ok), "the output itself is a copy");
        let long = tool_result(
            "added 1 package, and audited 1044 packages in 3s\nfound 0 vulnerabilities",
        );
        assert!(is_copy(
            "added 1 package, and audited 1044 packages in 3s found 0 vulnerabilities, all good",
            &long
        ));
        assert!(!is_copy(
            "We audited the packages and found no vulnerabilities",
            &long
        ));
    }
}
