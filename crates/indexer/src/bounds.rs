//! How much a part's answer may hold, and how many tokens the model may write for it.
//!
//! Why: a small local model asked for "the ideas of these events" enumerates until the
//! token limit cuts it off, and a cut-off answer is unclosed JSON — measured with
//! Qwen2.5-Coder-0.5B on the sample, where every backfill part fell back that way
//! (docs/benchmarks.md). Under a grammar (`response_format: json_schema`) a list's
//! `maxItems` makes the model close the list, so the bounds are sized for the answer to
//! fit its token limit; the prompt says the idea bound too, for servers without a
//! grammar. A part of a few events gets a short answer limit: it cannot need more, and a
//! runaway answer costs less.

use serde_json::{Value, json};

/// Tokens of one typical idea in the answer: a 300-character sentence (~75 tokens), its
/// source event id, intent, confidence, importance and two entities.
const IDEA_TOKENS: u32 = 120;
/// Tokens of one `skip_events` entry (event id and a short reason).
const SKIP_TOKENS: u32 = 25;
/// Tokens of one relation, entity link, answered question or completed todo.
const LINK_TOKENS: u32 = 40;
/// Tokens of the answer's frame (field names, braces, topic changes).
const FRAME_TOKENS: u32 = 200;
/// The smallest answer limit: one idea, a topic change and some skips fit.
const MIN_ANSWER_TOKENS: u32 = 512;
/// Longest idea content in the constrained-JSON schema, characters ("one
/// self-contained sentence").
const IDEA_CHARS: u64 = 300;
/// Most entities and `related_to` ids per idea.
const PER_IDEA_ITEMS: u64 = 4;

/// The bounds of one answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnswerBounds {
    /// `max_tokens` of every step of the part.
    pub answer_tokens: u32,
    /// Most new ideas.
    pub ideas: u64,
    /// Most `skip_events` entries.
    pub skip_events: u64,
    /// Most relations, entity links, answered questions and completed todos (each).
    pub links: u64,
    /// Most topic changes and topic updates (each).
    pub topics: u64,
}

impl AnswerBounds {
    /// The bounds for a part of `events` events in `sessions` sessions whose steps may
    /// write at most `max_answer_tokens` tokens: the limit grows with the events (an
    /// idea's worth each) up to `max_answer_tokens`; of what the answer's frame leaves,
    /// three fifths go to ideas, a tenth to skips and a tenth to links.
    #[must_use]
    pub fn for_part(events: usize, sessions: usize, max_answer_tokens: u32) -> AnswerBounds {
        let events = u32::try_from(events.max(1)).unwrap_or(u32::MAX);
        let wanted = FRAME_TOKENS.saturating_add(IDEA_TOKENS.saturating_mul(events));
        let answer_tokens = wanted.max(MIN_ANSWER_TOKENS).min(max_answer_tokens.max(1));
        // What the frame leaves, shared out.
        let room = answer_tokens.saturating_sub(FRAME_TOKENS);
        let share = |part: u32, each: u32| u64::from((room / 10 * part) / each);
        let events = u64::from(events);
        let ideas = share(6, IDEA_TOKENS).clamp(1, events);
        AnswerBounds {
            answer_tokens,
            ideas,
            skip_events: share(1, SKIP_TOKENS).min(events),
            links: share(1, LINK_TOKENS).min(ideas.max(2)),
            topics: (sessions.max(1) as u64 * 2).min(events),
        }
    }

    /// Tighter bounds for the retry of an answer that ran to the token limit: half the
    /// ideas, no skips (they are optional) and half the links; the same token limit, so
    /// the smaller answer has room.
    #[must_use]
    pub fn halved(self) -> AnswerBounds {
        AnswerBounds {
            ideas: (self.ideas / 2).max(1),
            skip_events: 0,
            links: self.links / 2,
            ..self
        }
    }

    /// Writes the bounds into the change-set schema `answer` (its `properties`) and its
    /// `$defs` (the idea's content, entities and `related_to`). Other lists and strings
    /// keep the generic bounds added after.
    pub fn apply(&self, answer: &mut Value, defs: &mut Value) {
        let lists = [
            ("ideas", self.ideas),
            ("skip_events", self.skip_events),
            ("relations", self.links),
            ("entity_links", self.links),
            ("answered_questions", self.links),
            ("completed_todos", self.links),
            ("activated_ideas", self.links),
            ("topic_changes", self.topics),
            ("topic_updates", self.topics),
        ];
        if let Some(properties) = answer.get_mut("properties") {
            for (name, most) in lists {
                if let Some(list) = properties.get_mut(name).and_then(Value::as_object_mut) {
                    list.insert("maxItems".to_owned(), json!(most));
                }
            }
        }
        if let Some(idea) = defs
            .get_mut("NewIdea")
            .and_then(|idea| idea.get_mut("properties"))
        {
            for (name, key, most) in [
                ("content", "maxLength", IDEA_CHARS),
                ("entities", "maxItems", PER_IDEA_ITEMS),
                ("related_to", "maxItems", PER_IDEA_ITEMS),
            ] {
                if let Some(field) = idea.get_mut(name).and_then(Value::as_object_mut) {
                    field.insert(key.to_owned(), json!(most));
                }
            }
        }
    }

    /// The sentence the model reads with its input: the same bound in words.
    #[must_use]
    pub fn instruction(&self) -> String {
        format!(
            "Write at most {} ideas: the most important ones, one short sentence each (under {IDEA_CHARS} characters). List at most {} skip_events.",
            self.ideas, self.skip_events
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_limit_grows_with_the_events_up_to_the_setting() {
        let small = AnswerBounds::for_part(1, 1, 2_048);
        assert_eq!(small.answer_tokens, MIN_ANSWER_TOKENS);
        assert_eq!(small.ideas, 1);
        let medium = AnswerBounds::for_part(8, 1, 2_048);
        assert_eq!(medium.answer_tokens, 200 + 8 * 120);
        assert!(medium.ideas <= 8);
        let large = AnswerBounds::for_part(60, 2, 2_048);
        assert_eq!(large.answer_tokens, 2_048);
        // Three fifths of (2 048 - 200) tokens at 120 an idea.
        assert_eq!(large.ideas, 9);
        assert_eq!(large.topics, 4);
        // A setting under the floor is obeyed.
        assert_eq!(AnswerBounds::for_part(60, 1, 300).answer_tokens, 300);
    }

    #[test]
    fn the_worst_case_answer_fits_its_limit() {
        for events in [1, 3, 10, 30, 100] {
            for max in [512, 1_024, 2_048, 4_096] {
                let bounds = AnswerBounds::for_part(events, 2, max);
                let typical = FRAME_TOKENS as u64
                    + bounds.ideas * IDEA_TOKENS as u64
                    + bounds.skip_events * SKIP_TOKENS as u64
                    + bounds.links * LINK_TOKENS as u64;
                assert!(
                    typical <= u64::from(bounds.answer_tokens),
                    "{events} events, {max}: {bounds:?} needs {typical}"
                );
            }
        }
    }

    #[test]
    fn halving_keeps_at_least_one_idea_and_the_token_limit() {
        let bounds = AnswerBounds::for_part(40, 1, 2_048);
        let halved = bounds.halved();
        assert_eq!(halved.ideas, bounds.ideas / 2);
        assert_eq!(halved.skip_events, 0);
        assert_eq!(halved.answer_tokens, bounds.answer_tokens);
        assert_eq!(AnswerBounds::for_part(1, 1, 2_048).halved().ideas, 1);
    }

    #[test]
    fn apply_writes_the_lists_and_the_idea_fields() {
        let mut answer = json!({"properties": {
            "ideas": {"type": "array"}, "skip_events": {"type": "array"},
            "relations": {"type": "array"}}});
        let mut defs = json!({"NewIdea": {"properties": {
            "content": {"type": "string"}, "entities": {"type": "array"}}}});
        let bounds = AnswerBounds::for_part(10, 1, 2_048);
        bounds.apply(&mut answer, &mut defs);
        assert_eq!(
            answer["properties"]["ideas"]["maxItems"],
            json!(bounds.ideas)
        );
        assert_eq!(
            answer["properties"]["skip_events"]["maxItems"],
            json!(bounds.skip_events)
        );
        assert_eq!(
            answer["properties"]["relations"]["maxItems"],
            json!(bounds.links)
        );
        assert_eq!(
            defs["NewIdea"]["properties"]["content"]["maxLength"],
            json!(IDEA_CHARS)
        );
        assert_eq!(
            defs["NewIdea"]["properties"]["entities"]["maxItems"],
            json!(PER_IDEA_ITEMS)
        );
    }
}
