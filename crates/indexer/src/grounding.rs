//! Whether the model's ideas say what their source events say.
//!
//! Validation checks that an idea's `source_event_id` is an event of the batch, not that
//! the event says it. Measured on the sample, Qwen2.5-Coder-1.5B wrote true ideas from a
//! session's summary turn and pinned them on earlier turns (a question, a greeting):
//! every citation of such an idea would point at the wrong turn. So before a change set
//! leaves the engine, each new idea is checked against its source: when fewer than half
//! of its content words are in the source event's text, it moves to the event of the
//! same session in the batch that holds the most of them (at least half), and the
//! relations and entity links naming the old event follow; when no event does, the idea
//! is dropped. Both are counted (`memory_indexing_llm_grounding_total{outcome}`).

use std::collections::{BTreeMap, BTreeSet};

use memory_ideas::{ChangeSet, ExtractBatch};
use memory_text::is_stopword;
use memory_types::Event;

use crate::metrics::LLM_ENGINE_METRICS;

/// Share of an idea's content words its source must hold.
pub const MIN_GROUNDED_SHARE: f32 = 0.5;

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

/// Re-anchors or drops the new ideas of `changes` whose content their source event does
/// not hold (see the module docs); returns (moved, dropped).
pub fn ground(changes: &mut ChangeSet, batch: &ExtractBatch) -> (usize, usize) {
    let events: BTreeMap<&str, (&Event, BTreeSet<String>)> = batch
        .events()
        .map(|event| (event.event_id.as_str(), (event, words(&event.text))))
        .collect();
    let mut moved: BTreeMap<String, String> = BTreeMap::new();
    let (mut num_moved, mut num_dropped) = (0, 0);
    changes.ideas.retain_mut(|idea| {
        let Some((source, source_words)) = events.get(idea.source_event_id.as_str()) else {
            return true; // Not in the batch: validation rejects and counts it.
        };
        let content = words(&idea.content);
        if share(&content, source_words) >= MIN_GROUNDED_SHARE {
            return true;
        }
        let best = events
            .values()
            .filter(|(event, _)| {
                event.session_id == source.session_id && event.project_id == source.project_id
            })
            .map(|(event, words)| (share(&content, words), *event))
            .max_by(|a, b| {
                a.0.total_cmp(&b.0)
                    .then(b.1.timestamp_ms.cmp(&a.1.timestamp_ms))
            });
        match best {
            Some((best_share, event)) if best_share >= MIN_GROUNDED_SHARE => {
                moved.insert(idea.source_event_id.clone(), event.event_id.clone());
                idea.source_event_id.clone_from(&event.event_id);
                num_moved += 1;
                true
            }
            _ => {
                num_dropped += 1;
                false
            }
        }
    });
    if !moved.is_empty() {
        for relation in &mut changes.relations {
            if let Some(to) = moved.get(&relation.from_event_id) {
                relation.from_event_id.clone_from(to);
            }
        }
        for link in &mut changes.entity_links {
            if let Some(to) = moved.get(&link.idea_source_event_id) {
                link.idea_source_event_id.clone_from(to);
            }
        }
    }
    let metrics = &*LLM_ENGINE_METRICS;
    metrics
        .grounding
        .with_label_values(&["moved"])
        .inc_by(num_moved as u64);
    metrics
        .grounding
        .with_label_values(&["dropped"])
        .inc_by(num_dropped as u64);
    (num_moved, num_dropped)
}
