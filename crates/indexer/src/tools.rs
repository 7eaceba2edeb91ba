//! The indexing agent design's eleven tools, answered from the graph as stored before
//! the batch (plus what earlier parts of the batch added: the engine hands an
//! [`memory_ideas::Overlay`] in).
//!
//! A tool never fails the batch: a bad argument, an unknown tool or a store error
//! becomes an `{"error": …}` result the model can read and correct. Results are compact
//! JSON (ids, intents, the first characters of contents) cut to [`MAX_RESULT_CHARS`], so
//! a chatty model cannot blow the batch's token budget with one call. Every call is
//! scoped to a project of the batch: a model cannot read another project's ideas by
//! naming it.

use std::collections::BTreeMap;

use memory_ideas::{Entity, EntityType, GraphView, Idea, Intent, Relation, TopicSpan};
use memory_llm::ToolSpec;
use memory_text::truncate_chars;
use serde_json::{Value, json};

/// Most characters of one tool result sent back to the model.
pub const MAX_RESULT_CHARS: usize = 4_000;
/// Most characters of an idea's content in a tool result.
const CONTENT_CHARS: usize = 240;
/// Largest `limit` a tool accepts.
const MAX_LIMIT: usize = 25;

/// The eleven tools' names, in the design's order.
pub const TOOL_NAMES: [&str; 11] = [
    "search_ideas",
    "get_open_questions",
    "get_open_todos",
    "get_current_span",
    "list_session_spans",
    "find_similar_topics",
    "get_topic_hierarchy",
    "search_entities",
    "get_entity_ideas",
    "get_recent_ideas",
    "get_idea_relations",
];

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn limit(default: usize) -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
           "description": format!("Most results (default {default}).")})
}

fn intent_filter() -> Value {
    let intents: Vec<&str> = Intent::ALL.iter().map(|intent| intent.as_str()).collect();
    json!({"type": "string", "enum": intents, "description": "Only ideas of this intent."})
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required,
           "additionalProperties": false})
}

/// The tools as OpenAI function specifications (the native protocol sends them as
/// `tools`; the constrained-JSON protocol builds its step schema from them).
#[must_use]
pub fn tool_specs() -> Vec<ToolSpec> {
    let session = || string("The session id (as in the input).");
    let project = || string("The project id; default: the first project of the batch.");
    let spec = |name: &str, description: &str, parameters: Value| ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    };
    vec![
        spec(
            "search_ideas",
            "Search existing ideas sharing words with a query. Use to find duplicates, related ideas, or what a new decision supersedes.",
            object(
                json!({"query": string("What to look for."), "limit": limit(10),
                       "session": session(), "intent": intent_filter(), "project": project()}),
                &["query"],
            ),
        ),
        spec(
            "get_open_questions",
            "Unanswered questions and problems, most recent first. Use to check whether new content answers one.",
            object(
                json!({"session": session(), "limit": limit(10), "project": project()}),
                &[],
            ),
        ),
        spec(
            "get_open_todos",
            "Todos not done yet, most recent first. Use to check whether new content completes one.",
            object(
                json!({"session": session(), "limit": limit(10), "project": project()}),
                &[],
            ),
        ),
        spec(
            "get_current_span",
            "The current topic span of a session: id, name, summary, first and last event.",
            object(
                json!({"session": session(), "project": project()}),
                &["session"],
            ),
        ),
        spec(
            "list_session_spans",
            "All topic spans of a session with names and summaries, oldest first.",
            object(
                json!({"session": session(), "project": project()}),
                &["session"],
            ),
        ),
        spec(
            "find_similar_topics",
            "Topic spans of any session of the project whose name or summary shares words with a topic name.",
            object(
                json!({"topic_name": string("The topic to match."), "limit": limit(5),
                       "project": project()}),
                &["topic_name"],
            ),
        ),
        spec(
            "get_topic_hierarchy",
            "The project's sessions and their topic spans, as a tree.",
            object(json!({"session": session(), "project": project()}), &[]),
        ),
        spec(
            "search_entities",
            "Existing entities whose name contains a text. Use before naming an entity, to reuse its canonical name.",
            object(
                json!({"name": string("Part of the name."),
                       "type": {"type": "string",
                                "enum": EntityType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>()},
                       "project": project()}),
                &["name"],
            ),
        ),
        spec(
            "get_entity_ideas",
            "Ideas that mention an entity, most recent first.",
            object(
                json!({"entity_id": string("The entity id (from search_entities)."),
                       "limit": limit(10), "project": project()}),
                &["entity_id"],
            ),
        ),
        spec(
            "get_recent_ideas",
            "Recent ideas, most recent first, of a session or of the project.",
            object(
                json!({"session": session(), "limit": limit(20), "intent": intent_filter(),
                       "project": project()}),
                &[],
            ),
        ),
        spec(
            "get_idea_relations",
            "The relations of an idea, both directions: what it supersedes, builds on, answers…",
            object(
                json!({"idea_id": string("The idea id."), "project": project()}),
                &["idea_id"],
            ),
        ),
    ]
}

/// A tool argument error: the model reads the message.
struct ArgError(String);

/// Answers tool calls for one batch.
pub struct ToolBox<'g> {
    graph: &'g dyn GraphView,
    /// The batch's projects, first seen first: the only ones a tool reads.
    projects: Vec<String>,
}

impl<'g> ToolBox<'g> {
    /// Tools over `graph`, scoped to `projects` (the batch's; not empty).
    #[must_use]
    pub fn new(graph: &'g dyn GraphView, projects: Vec<String>) -> Self {
        ToolBox { graph, projects }
    }

    /// The result of calling `name` with `arguments` (a JSON object), as the compact
    /// JSON text sent back to the model; never fails.
    #[must_use]
    pub fn call(&self, name: &str, arguments: &Value) -> String {
        let result = match self.answer(name, arguments) {
            Ok(value) => value,
            Err(ArgError(message)) => json!({"error": message}),
        };
        let text = result.to_string();
        if text.chars().count() <= MAX_RESULT_CHARS {
            return text;
        }
        // Cut whole items off the end rather than leave broken JSON.
        let mut value = result;
        while value.to_string().chars().count() > MAX_RESULT_CHARS {
            let Some(items) = value.get_mut("results").and_then(Value::as_array_mut) else {
                return json!({"error": "result too large", "truncated": truncate_chars(&text, MAX_RESULT_CHARS / 2)}).to_string();
            };
            if items.pop().is_none() {
                break;
            }
            value["truncated"] = Value::Bool(true);
        }
        value.to_string()
    }

    fn answer(&self, name: &str, args: &Value) -> Result<Value, ArgError> {
        let Some(args) = args.as_object() else {
            return Err(ArgError("arguments must be a JSON object".to_owned()));
        };
        let text = |key: &str| -> Result<Option<&str>, ArgError> {
            match args.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(value)) if value.trim().is_empty() => Ok(None),
                Some(Value::String(value)) => Ok(Some(value.trim())),
                Some(other) => Err(ArgError(format!("{key} must be a string, got {other}"))),
            }
        };
        let required = |key: &str| -> Result<&str, ArgError> {
            text(key)?.ok_or_else(|| ArgError(format!("{key} is required")))
        };
        let limit = |default: usize| -> Result<usize, ArgError> {
            match args.get("limit") {
                None | Some(Value::Null) => Ok(default),
                Some(value) => value
                    .as_u64()
                    .or_else(|| value.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                    .map(|n| usize::try_from(n).unwrap_or(MAX_LIMIT).clamp(1, MAX_LIMIT))
                    .ok_or_else(|| {
                        ArgError(format!("limit must be a positive integer, got {value}"))
                    }),
            }
        };
        let intent = || -> Result<Option<Intent>, ArgError> {
            text("intent")?
                .map(|value| {
                    value
                        .parse::<Intent>()
                        .map_err(|err| ArgError(err.to_string()))
                })
                .transpose()
        };
        let project = self.project(text("project")?)?;
        let graph = self.graph;
        let store =
            |err: memory_ideas::GraphError| ArgError(format!("the graph could not be read: {err}"));
        let value = match name {
            "search_ideas" => ideas(
                graph
                    .search_ideas(
                        project,
                        required("query")?,
                        text("session")?,
                        intent()?,
                        limit(10)?,
                    )
                    .map_err(store)?,
            ),
            "get_open_questions" => ideas(
                graph
                    .open_questions(project, text("session")?, limit(10)?)
                    .map_err(store)?,
            ),
            "get_open_todos" => ideas(
                graph
                    .open_todos(project, text("session")?, limit(10)?)
                    .map_err(store)?,
            ),
            "get_current_span" => {
                let span = graph
                    .current_span(project, required("session")?)
                    .map_err(store)?;
                json!({"span": span.as_ref().map(span_json)})
            }
            "list_session_spans" => spans(
                graph
                    .session_spans(project, required("session")?)
                    .map_err(store)?,
            ),
            "find_similar_topics" => {
                let topic = required("topic_name")?;
                let all = graph
                    .project_spans(project, SPAN_SCAN_LIMIT)
                    .map_err(store)?;
                spans(rank_spans(all, topic, limit(5)?))
            }
            "get_topic_hierarchy" => {
                let all = match text("session")? {
                    Some(session) => graph.session_spans(project, session).map_err(store)?,
                    None => graph
                        .project_spans(project, SPAN_SCAN_LIMIT)
                        .map_err(store)?,
                };
                hierarchy(project, all)
            }
            "search_entities" => {
                let wanted = text("type")?
                    .map(|value| {
                        value
                            .parse::<EntityType>()
                            .map_err(|err| ArgError(err.to_string()))
                    })
                    .transpose()?;
                let found = graph
                    .search_entities(project, required("name")?, MAX_LIMIT * 4)
                    .map_err(store)?;
                let kept: Vec<Value> = found
                    .iter()
                    .filter(|entity| wanted.is_none_or(|kind| entity.entity_type == kind))
                    .take(MAX_LIMIT)
                    .map(entity_json)
                    .collect();
                json!({"results": kept})
            }
            "get_entity_ideas" => ideas(
                graph
                    .entity_ideas(project, required("entity_id")?, limit(10)?)
                    .map_err(store)?,
            ),
            "get_recent_ideas" => ideas(
                graph
                    .recent_ideas(project, text("session")?, intent()?, limit(20)?)
                    .map_err(store)?,
            ),
            "get_idea_relations" => {
                let idea_id = required("idea_id")?;
                if graph.idea(project, idea_id).map_err(store)?.is_none() {
                    return Err(ArgError(format!(
                        "no idea {idea_id:?} in project {project:?}"
                    )));
                }
                relations(graph.relations(project, idea_id).map_err(store)?)
            }
            other => {
                return Err(ArgError(format!(
                    "unknown tool {other:?}; the tools are {}",
                    TOOL_NAMES.join(", ")
                )));
            }
        };
        Ok(value)
    }

    fn project(&self, asked: Option<&str>) -> Result<&str, ArgError> {
        match asked {
            None => self
                .projects
                .first()
                .map(String::as_str)
                .ok_or_else(|| ArgError("the batch has no project".to_owned())),
            Some(asked) => self
                .projects
                .iter()
                .find(|project| project.as_str() == asked)
                .map(String::as_str)
                .ok_or_else(|| {
                    ArgError(format!(
                        "project {asked:?} is not in this batch; use one of {:?}",
                        self.projects
                    ))
                }),
        }
    }
}

/// Spans read for a project-wide topic search, at most.
const SPAN_SCAN_LIMIT: usize = 500;

fn idea_json(idea: &Idea) -> Value {
    let mut value = json!({
        "idea_id": idea.idea_id,
        "session": idea.source.session_id,
        "intent": idea.intent.as_str(),
        "content": truncate_chars(&idea.content, CONTENT_CHARS),
        "source_event_id": idea.source.event_id,
    });
    if let Some(by) = &idea.superseded_by {
        value["superseded_by"] = json!(by);
    }
    if idea.resolution.is_some() {
        value["resolved"] = Value::Bool(true);
    }
    value
}

fn ideas(found: Vec<Idea>) -> Value {
    json!({"results": found.iter().map(idea_json).collect::<Vec<_>>()})
}

fn span_json(span: &TopicSpan) -> Value {
    json!({
        "span_id": span.span_id,
        "session": span.session_id,
        "name": span.name,
        "summary": truncate_chars(&span.summary, CONTENT_CHARS),
        "first_event_id": span.first_event_id,
        "last_event_id": span.last_event_id,
    })
}

fn spans(found: Vec<TopicSpan>) -> Value {
    json!({"results": found.iter().map(span_json).collect::<Vec<_>>()})
}

fn entity_json(entity: &Entity) -> Value {
    json!({"entity_id": entity.entity_id, "name": entity.name,
           "type": entity.entity_type.as_str(), "aliases": entity.aliases})
}

fn relations(found: Vec<Relation>) -> Value {
    json!({"results": found.iter().map(|relation| json!({
        "from_idea_id": relation.from_idea_id,
        "to_idea_id": relation.to_idea_id,
        "relation_type": relation.relation_type.as_str(),
        "evidence_event_id": relation.evidence_event_id,
    })).collect::<Vec<_>>()})
}

fn hierarchy(project: &str, all: Vec<TopicSpan>) -> Value {
    let mut sessions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for span in &all {
        sessions
            .entry(span.session_id.clone())
            .or_default()
            .push(json!({"span_id": span.span_id, "name": span.name}));
    }
    json!({"project": project, "sessions": sessions.into_iter().map(|(session, spans)| {
        json!({"session": session, "spans": spans})
    }).collect::<Vec<_>>()})
}

/// Lowercase words of two or more characters.
fn terms(text: &str) -> Vec<String> {
    text.split(|ch: char| !ch.is_alphanumeric())
        .filter(|word| word.chars().count() > 1)
        .map(str::to_lowercase)
        .collect()
}

/// Spans sharing the most words of `topic` in name (twice) and summary, best first;
/// spans sharing none are left out.
fn rank_spans(all: Vec<TopicSpan>, topic: &str, limit: usize) -> Vec<TopicSpan> {
    let wanted = terms(topic);
    let mut scored: Vec<(usize, TopicSpan)> = all
        .into_iter()
        .filter_map(|span| {
            let name = terms(&span.name);
            let summary = terms(&span.summary);
            let score: usize = wanted
                .iter()
                .map(|word| {
                    2 * usize::from(name.contains(word)) + usize::from(summary.contains(word))
                })
                .sum();
            (score > 0).then_some((score, span))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.last_ms.cmp(&a.1.last_ms)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, span)| span)
        .collect()
}
