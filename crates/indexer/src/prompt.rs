//! What the model reads: the design's system prompt, made exact for our output schema,
//! and the input — several sessions per batch, clearly apart, each event with its id in
//! place of the design's transcript lines — cut to the batch's token budget.

use memory_ideas::{BatchMode, ExtractBatch, Intent, SessionEvents};
use memory_text::truncate_chars;
use memory_types::{Event, format_timestamp_ms};
use serde_json::{Value, json};

/// Characters per token, for budgeting text before the server counts it.
pub const CHARS_PER_TOKEN: usize = 4;
/// Most characters of one event's text in the input.
const EVENT_CHARS: usize = 1_500;
/// Most characters of a context event's text (already indexed, for reference).
const CONTEXT_CHARS: usize = 300;

/// The system prompt: the indexing agent design's, with our ids, fields and rules.
#[must_use]
pub fn system_prompt(max_tool_calls: usize, protocol_note: &str) -> String {
    let intents: Vec<&str> = Intent::ALL.iter().map(|intent| intent.as_str()).collect();
    format!(
        "You are an indexing agent that analyzes conversation transcripts of coding sessions and maintains a knowledge graph of ideas.

You have tools to query existing knowledge (at most {max_tool_calls} tool calls per batch). Use them to:
1. Check if similar ideas already exist (avoid duplicates)
2. Find open questions that new content might answer, and open todos it completes
3. Understand current topic context before detecting topic shifts
4. Find existing decisions a new decision supersedes or contradicts

For each batch of new events:
1. First, use tools to understand existing state (recent ideas, open questions, current topics)
2. Analyze the new events (the `context` events were already indexed: never take ideas from them)
3. Extract new ideas: one per decision, conclusion, question, problem, solution, todo, preference or important context; content is one self-contained sentence
4. Detect topic changes (explain the reason)
5. Identify answered questions and completed todos (link to the answer)
6. Create relations between new and existing ideas

Rules:
- Refer to events by their `event_id` exactly as given in the input. Refer to existing ideas, entities and spans only by ids a tool returned. Never invent ids.
- intent is one of: {intents}.
- confidence: 0..1 (tentative 0.5, firm 0.9); ideas below 0.3 are not stored.
- importance: 1.0 decision/conclusion, 0.8 question/problem/solution, 0.5 todo, 0.3 context.
- Skip greetings, acknowledgments, debugging output and tool preambles (list them in skip_events).
- relation_type is one of supersedes (a new decision replaces an old one: \"we changed from X to Y\"), builds_on, contradicts, answers, relates_to. A relation goes from a new idea (its from_event_id) to an existing idea (to_idea_id).
- Entities: projects, technologies, concepts, people, files, with canonical names (\"SQLite\", not \"sqlite\"); search_entities first and reuse a name that exists.

{protocol_note}

The final answer is one JSON object with these fields (all optional lists):
{{\"ideas\": [{{\"source_event_id\", \"content\", \"intent\", \"confidence\", \"importance\", \"entities\": [{{\"name\", \"type\"}}], \"related_to\": [idea ids]}}],
 \"topic_updates\": [{{\"session_id\", \"span_id\", \"name\", \"summary\"}}],
 \"topic_changes\": [{{\"start_event_id\", \"new_topic_name\", \"reason\", \"summary\"}}],
 \"answered_questions\": [{{\"question_idea_id\", \"answered_at_event_id\", \"answer_summary\"}}],
 \"completed_todos\": [{{\"todo_idea_id\", \"completed_at_event_id\", \"completion_summary\"}}],
 \"relations\": [{{\"from_event_id\", \"to_idea_id\", \"relation_type\"}}],
 \"entity_links\": [{{\"idea_source_event_id\", \"entity_id\"}}],
 \"skip_events\": [{{\"event_id\", \"reason\"}}],
 \"activated_ideas\": [idea ids]}}",
        intents = intents.join(", ")
    )
}

fn event_json(event: &Event, chars: usize) -> Value {
    json!({
        "event_id": event.event_id,
        "role": event.role.as_str(),
        "kind": event.kind.as_str(),
        "content": truncate_chars(&event.text, chars),
        "timestamp": format_timestamp_ms(event.timestamp_ms),
    })
}

/// Characters of an event in the input (for cutting batches to a budget).
#[must_use]
pub fn event_cost(event: &Event) -> usize {
    truncate_chars(&event.text, EVENT_CHARS).len() + event.event_id.len() + 120
}

/// The input message: the design's format with event ids, and `limits` (how much the
/// answer may hold, in words) as its `answer_limits` field.
#[must_use]
pub fn input(batch: &ExtractBatch, limits: &str) -> String {
    let mode = match batch.mode {
        BatchMode::Continuous => "continuous",
        BatchMode::Backfill => "backfill",
    };
    let updates: Vec<Value> = batch.sessions.iter().map(session_json).collect();
    json!({"mode": mode, "updates": updates, "answer_limits": limits}).to_string()
}

fn session_json(session: &SessionEvents) -> Value {
    json!({
        "project": session.project_id,
        "session": session.session_id,
        "context": session.context.iter().map(|event| event_json(event, CONTEXT_CHARS)).collect::<Vec<_>>(),
        "events": session.events.iter().map(|event| event_json(event, EVENT_CHARS)).collect::<Vec<_>>(),
    })
}

/// Cuts `batch` into parts whose input fits `max_chars` each, keeping log order within
/// each session and at least one event per part; a session's context travels with its
/// first part, later parts get the events just before them as context.
#[must_use]
pub fn parts(batch: &ExtractBatch, max_chars: usize) -> Vec<ExtractBatch> {
    let mut parts: Vec<ExtractBatch> = Vec::new();
    let mut current = ExtractBatch {
        mode: batch.mode,
        sessions: Vec::new(),
    };
    let mut used = 0usize;
    for session in &batch.sessions {
        let mut piece = SessionEvents {
            project_id: session.project_id.clone(),
            session_id: session.session_id.clone(),
            events: Vec::new(),
            seqs: Vec::new(),
            context: session.context.clone(),
        };
        for (event, seq) in session.events.iter().zip(&session.seqs) {
            let cost = event_cost(event);
            if used + cost > max_chars && (used > 0 || !piece.events.is_empty()) {
                let tail: Vec<Event> = piece
                    .events
                    .iter()
                    .rev()
                    .take(memory_ideas::CONTEXT_EVENTS)
                    .rev()
                    .cloned()
                    .collect();
                if !piece.events.is_empty() {
                    current.sessions.push(piece.clone());
                }
                parts.push(std::mem::replace(
                    &mut current,
                    ExtractBatch {
                        mode: batch.mode,
                        sessions: Vec::new(),
                    },
                ));
                used = 0;
                piece.events.clear();
                piece.seqs.clear();
                if !tail.is_empty() {
                    piece.context = tail;
                }
            }
            used += cost;
            piece.events.push(event.clone());
            piece.seqs.push(*seq);
        }
        if !piece.events.is_empty() {
            current.sessions.push(piece);
        }
    }
    if !current.sessions.is_empty() {
        parts.push(current);
    }
    parts
}
