//! What `tools/list` says about each tool: input and output schemas, titles,
//! descriptions written for an agent, annotations.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Value, json};

use super::{
    DEFAULT_NOTES_SESSION, MAX_EVENT_IDS, MAX_GRIP_CONTEXT, MAX_ID_CHARS, MAX_SEARCH_RESULTS,
    MAX_TAG_CHARS, MAX_TAGS, MAX_TIMELINE_SIDE, MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET, SEARCH_MODES,
};

/// The tool definitions, with `default_project` named where a project may be given.
pub(crate) fn definitions(default_project: &str) -> Vec<Tool> {
    let read_only = |title: &str| {
        ToolAnnotations::with_title(title)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    let project = project_schema(default_project);
    vec![
        tool(
            "search",
            "Search memory",
            "Search the long-term memory of past coding sessions (every user message, \
             assistant reply, tool call and result, and the decisions, questions and todos \
             taken from them) and get the best matching evidence with citations. Use it \
             before answering anything about earlier work: \"what did we decide about JWT \
             expiry?\", \"why did we switch to jose?\", \"when did the build start failing?\". \
             Ask in natural language; a time hint in the query (\"last week\", \"in \
             January\") narrows the search, or give `since`/`until`. Each result has a \
             snippet, its verbatim evidence events and citations: event ids (read them whole \
             with `get_events`, or see what came before and after with `timeline`), grip ids \
             (verbatim excerpts; `get_events` with `grip`) and TOC node ids (read them as \
             `memory://toc/{node_id}`). `tier` says which index answered and \
             `fallback_reason` why a better one could not.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1,
                              "description": "The question or keywords, in natural language."},
                    "project": project,
                    "since": time_schema("Only evidence at or after this time"),
                    "until": time_schema("Only evidence before this time"),
                    "mode": {"type": "string", "enum": SEARCH_MODES, "default": "auto",
                             "description": "Which index answers: `auto` (the best available: \
                              hybrid, then keyword, then semantic, then the table of contents), \
                              `keyword` (BM25), `semantic` (embeddings), `hybrid` (both), `toc` \
                              (the time table of contents, no index)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS,
                              "default": 10, "description": "Most results."},
                    "token_budget": {"type": "integer", "minimum": MIN_TOKEN_BUDGET,
                                     "maximum": MAX_TOKEN_BUDGET, "default": 2000,
                                     "description": "Most tokens of evidence in the answer."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            search_output_schema(),
            read_only("Search memory"),
        ),
        tool(
            "navigate",
            "Navigate the time table of contents",
            "Answer a question by walking the time table of contents of past sessions (years, \
             months, weeks, days, segments of a session) from the period the question names \
             (\"in January\", \"last week\") or from the top, and return the path taken with \
             the reason for every step and the evidence found: node summaries' bullets, each \
             citing verbatim excerpts (grips). Use it for questions about a period (\"what \
             did we work on the week of Jan 5?\") or when `search` finds nothing; it needs no \
             index. Node ids in the answer can be read as `memory://toc/{node_id}` \
             resources; grip ids with `get_events`.",
            json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "minLength": 1,
                                 "description": "The question, time hints included."},
                    "project": project,
                    "token_budget": {"type": "integer", "minimum": MIN_TOKEN_BUDGET,
                                     "maximum": MAX_TOKEN_BUDGET, "default": 2000,
                                     "description": "Most tokens of evidence in the answer."}
                },
                "required": ["question"],
                "additionalProperties": false
            }),
            navigate_output_schema(),
            read_only("Navigate the time table of contents"),
        ),
        tool(
            "timeline",
            "Timeline around a moment",
            "What happened around one moment: the ideas (decisions, questions, todos, \
             problems, solutions, …) just before and after an event, an idea or a time, with \
             the anchor event itself and the sessions involved. Give exactly one of \
             `event_id` (e.g. from a search citation), `idea_id` or `at`. Use it to see what \
             led to a decision and what followed it, or whether it was later superseded.",
            json!({
                "type": "object",
                "properties": {
                    "event_id": {"type": "string", "minLength": 1,
                                 "description": "Centre on this event and its ideas."},
                    "idea_id": {"type": "string", "minLength": 1,
                                "description": "Centre on this idea (at its source event's time)."},
                    "at": time_schema("Centre on this time"),
                    "project": project,
                    "before": {"type": "integer", "minimum": 0, "maximum": MAX_TIMELINE_SIDE,
                               "default": 5, "description": "Ideas before the moment."},
                    "after": {"type": "integer", "minimum": 0, "maximum": MAX_TIMELINE_SIDE,
                              "default": 5, "description": "Ideas at or after the moment."}
                },
                "additionalProperties": false
            }),
            timeline_output_schema(),
            read_only("Timeline around a moment"),
        ),
        tool(
            "get_events",
            "Get verbatim events",
            "Read stored events verbatim (the exact text of a message, tool call or tool \
             result, with its session, time and metadata): give `ids`, event ids from a \
             `search` or `timeline` citation, or `grip`, a grip id, for the excerpt's events \
             with `context` events of the same session around them. Ids that are not found \
             are listed in `not_found`.",
            json!({
                "type": "object",
                "properties": {
                    "ids": {"type": "array", "minItems": 1, "maxItems": MAX_EVENT_IDS,
                            "items": {"type": "string", "minLength": 1},
                            "description": "Event ids."},
                    "grip": {"type": "string", "minLength": 1,
                             "description": "A grip id (`grip:<ms>:<ULID>`)."},
                    "context": {"type": "integer", "minimum": 0, "maximum": MAX_GRIP_CONTEXT,
                                "description": "With `grip`: events before and after the excerpt."},
                    "project": project
                },
                "additionalProperties": false
            }),
            get_events_output_schema(),
            read_only("Get verbatim events"),
        ),
        tool(
            "remember",
            "Remember a note",
            "Store a note in long-term memory so later sessions can find it with `search`: a \
             decision and its reason, a convention, a fact about the project, a todo for \
             later. Write it self-contained (it is read without this conversation). It is \
             stored as an event of kind `note` through the same path as every event \
             (validated, secrets redacted) and searchable within seconds; returns its event \
             id. Do not store secrets: they are redacted anyway.",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "description": "The note."},
                    "project": project,
                    "session_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
                                   "default": DEFAULT_NOTES_SESSION,
                                   "description": "The session to file it under, e.g. the current \
                                    one's id."},
                    "tags": {"type": "array", "maxItems": MAX_TAGS,
                             "items": {"type": "string", "minLength": 1,
                                       "maxLength": MAX_TAG_CHARS, "pattern": "^[^,]+$"},
                             "description": "Labels, stored comma-joined as `metadata.tags`."}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
            json!({
                "type": "object",
                "properties": {
                    "event_id": {"type": "string"},
                    "project": {"type": "string"},
                    "session_id": {"type": "string"},
                    "timestamp": {"type": "string"},
                    "stored": {"type": "string", "enum": ["new", "duplicate"]},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["event_id", "project", "session_id", "timestamp", "stored"]
            }),
            ToolAnnotations::with_title("Remember a note")
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        ),
        tool(
            "status",
            "Memory status",
            "What the memory holds and whether it is healthy: events and sessions per \
             project, how far each projection (table of contents, indexes, ideas) has \
             caught up with the log, dead letters, disk use, and the keyword and semantic \
             indexes' health. Use it to learn which projects exist or why a search fell \
             back to a weaker tier.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            status_output_schema(),
            read_only("Memory status"),
        ),
    ]
}

fn tool(
    name: &'static str,
    title: &str,
    description: &'static str,
    input_schema: Value,
    output_schema: Value,
    annotations: ToolAnnotations,
) -> Tool {
    Tool::new(name, description, rmcp::model::object(input_schema))
        .with_title(title)
        .with_raw_output_schema(Arc::new(rmcp::model::object(output_schema)))
        .with_annotations(annotations)
}

fn project_schema(default_project: &str) -> Value {
    json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9_-]{1,64}$",
        "default": default_project,
        "description": format!("The project (default {default_project:?}); `status` lists them."),
    })
}

fn time_schema(what: &str) -> Value {
    json!({
        "type": "string",
        "description": format!("{what}: RFC 3339 (2026-01-30T09:15:00Z) or a date (2026-01-30)."),
    })
}

fn nullable(kind: &str) -> Value {
    json!({"type": [kind, "null"]})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// An event as the answers show it (`get_events` adds `project_id`, `agent_id` and
/// `metadata`).
fn event_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "event_id": {"type": "string"},
            "session_id": {"type": "string"},
            "timestamp": {"type": "string"},
            "kind": {"type": "string"},
            "role": {"type": "string"},
            "text": {"type": "string"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["event_id", "session_id", "timestamp", "kind", "text"]
    })
}

fn citations_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "event_ids": strings(),
            "grip_ids": strings(),
            "toc_node_ids": strings(),
            "idea_ids": strings()
        },
        "required": ["event_ids", "grip_ids", "toc_node_ids", "idea_ids"]
    })
}

fn idea_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "idea_id": {"type": "string"},
            "intent": {"type": "string"},
            "content": {"type": "string"},
            "valid_from": {"type": "string"},
            "valid_until": nullable("string"),
            "is_superseded": {"type": "boolean"},
            "source": {"type": "object", "properties": {
                "event_id": {"type": "string"}, "session_id": {"type": "string"}}}
        },
        "required": ["idea_id", "intent", "content"]
    })
}

fn search_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "query": {"type": "string"},
            "tier": {"type": "string", "enum": ["hybrid", "bm25", "vector", "toc"]},
            "fallback_reason": nullable("string"),
            "took_ms": {"type": "integer"},
            "token_estimate": {"type": "integer"},
            "results": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "rank": {"type": "integer"},
                    "doc_id": {"type": "string"},
                    "doc_type": {"type": "string"},
                    "level": nullable("string"),
                    "score": {"type": "number"},
                    "text": {"type": "string"},
                    "idea_id": nullable("string"),
                    "is_superseded": {"type": "boolean"},
                    "superseded_by": {"type": ["object", "null"]},
                    "citations": citations_schema(),
                    "evidence": {"type": "array", "items": event_schema()}
                },
                "required": ["rank", "doc_id", "doc_type", "score", "text", "citations", "evidence"]
            }},
            "citations": citations_schema()
        },
        "required": ["project", "query", "tier", "fallback_reason", "results", "citations"]
    })
}

fn navigate_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "query": {"type": "string"},
            "time_hint": {"type": ["object", "null"]},
            "path": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string"},
                    "node_id": nullable("string"),
                    "level": nullable("string"),
                    "title": {"type": "string"},
                    "reason": {"type": "string"}
                },
                "required": ["action", "reason"]
            }},
            "evidence": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "node_id": {"type": "string"},
                    "title": {"type": "string"},
                    "score": {"type": "number"},
                    "bullets": {"type": "array", "items": {"type": "object", "properties": {
                        "text": {"type": "string"}, "grip_ids": strings()}}},
                    "grips": {"type": "array", "items": {"type": "object", "properties": {
                        "grip_id": {"type": "string"}, "excerpt": {"type": "string"},
                        "event_id_start": {"type": "string"}, "event_id_end": {"type": "string"},
                        "session_id": {"type": "string"}}}}
                },
                "required": ["node_id", "title", "bullets", "grips"]
            }},
            "nodes_visited": {"type": "integer"},
            "stopped": {"type": "string"},
            "token_estimate": {"type": "integer"}
        },
        "required": ["project", "query", "path", "evidence", "stopped"]
    })
}

fn timeline_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "anchor": {
                "type": "object",
                "properties": {
                    "timestamp": {"type": "string"},
                    "event": {"anyOf": [event_schema(), {"type": "null"}]},
                    "idea": {"anyOf": [idea_schema(), {"type": "null"}]},
                    "ideas": {"type": "array", "items": idea_schema()}
                },
                "required": ["timestamp"]
            },
            "before": {"type": "array", "items": idea_schema()},
            "after": {"type": "array", "items": idea_schema()},
            "sessions": {"type": "object"}
        },
        "required": ["project", "anchor", "before", "after"]
    })
}

fn get_events_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "project": {"type": "string"},
            "events": {"type": "array", "items": event_schema()},
            "grip": {"type": ["object", "null"], "properties": {
                "grip_id": {"type": "string"}, "excerpt": {"type": "string"}}},
            "excerpt_event_ids": strings(),
            "not_found": strings()
        },
        "required": ["project", "events", "not_found"]
    })
}

fn status_output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["embedded", "daemon"]},
            "data_dir": {"type": "string"},
            "total_events": {"type": "integer"},
            "projects": {"type": "object", "additionalProperties": {
                "type": "object",
                "properties": {"events": {"type": "integer"}, "sessions": {"type": "integer"}},
                "required": ["events", "sessions"]
            }},
            "outbox_head": {"type": "integer"},
            "consumers": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "cursor": {"type": "integer"},
                "lag": {"type": "integer"}}}},
            "dead_letters": {"type": "integer"},
            "disk_bytes": {"type": "integer"},
            "indexes": {"type": ["object", "null"]},
            "index_error": nullable("string")
        },
        "required": ["mode", "total_events", "projects", "consumers", "dead_letters", "indexes"]
    })
}

#[cfg(test)]
mod tests {
    use super::super::TOOL_NAMES;
    use super::*;

    #[test]
    fn every_tool_is_defined_once_with_schemas_and_annotations() {
        let tools = definitions("webapp");
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names, TOOL_NAMES);
        for tool in &tools {
            assert!(tool.title.is_some(), "{}", tool.name);
            assert!(
                tool.description
                    .as_ref()
                    .is_some_and(|text| text.len() > 80),
                "{}",
                tool.name
            );
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert_eq!(
                tool.input_schema["additionalProperties"], false,
                "{}",
                tool.name
            );
            let output = tool.output_schema.as_ref().expect("output schema");
            assert_eq!(output["type"], "object", "{}", tool.name);
            let annotations = tool.annotations.as_ref().expect("annotations");
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            assert_eq!(annotations.destructive_hint, Some(false), "{}", tool.name);
            let writes = tool.name == "remember";
            assert_eq!(annotations.read_only_hint, Some(!writes), "{}", tool.name);
            assert_eq!(annotations.idempotent_hint, Some(!writes), "{}", tool.name);
            if let Some(project) = tool.input_schema["properties"].get("project") {
                assert_eq!(project["default"], "webapp");
            }
        }
    }
}
