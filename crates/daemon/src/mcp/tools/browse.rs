//! `navigate`, `timeline` and `get_events`: the table of contents, what happened
//! around a moment, and events verbatim.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use memory_query::api::GripExpandResponse;
use memory_types::{Event, ServiceError, format_timestamp_ms};
use serde_json::{Value, json};

use super::{
    Answer, MAX_EVENT_IDS, MAX_GRIP_CONTEXT, MAX_ID_CHARS, MAX_TIMELINE_SIDE, MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET, TEXT_CHARS, ToolError, array_of, decode, str_of,
};
use crate::mcp::args::{ArgError, ToolArgs};
use crate::mcp::backend::Backend;
use crate::query_cli::one_line;

pub(super) async fn navigate(
    backend: &Backend,
    args: &ToolArgs<'_>,
    default_project: &str,
) -> Result<Answer, ToolError> {
    let project = args.project(default_project)?;
    let question = args.required_string("question", "what to look for, time hints included")?;
    let mut body = json!({"query": question});
    if let Some(budget) = args.integer("token_budget", MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)? {
        body["token_budget"] = budget.into();
    }
    let value = backend.call(&project, "navigate", body).await?;
    Ok(navigate_answer(&project, value))
}

fn navigate_answer(project: &str, mut value: Value) -> Answer {
    if let Value::Object(map) = &mut value {
        map.remove("explanation");
        map.insert("project".to_owned(), project.into());
    }
    let mut text = format!(
        "navigate {:?} in project {project}: {} nodes opened, stopped: {}, ~{} tokens\npath:\n",
        str_of(&value["query"]),
        value["nodes_visited"],
        str_of(&value["stopped"]),
        value["token_estimate"],
    );
    for step in array_of(&value["path"]) {
        let _ = writeln!(
            text,
            "  {:<8} {:<40} {}",
            str_of(&step["action"]),
            step["node_id"].as_str().unwrap_or("root"),
            str_of(&step["reason"])
        );
    }
    text.push_str("evidence:\n");
    for item in array_of(&value["evidence"]) {
        let _ = writeln!(
            text,
            "  {} — {}",
            str_of(&item["node_id"]),
            one_line(str_of(&item["title"]), TEXT_CHARS)
        );
        for bullet in array_of(&item["bullets"]) {
            let grips: Vec<&str> = array_of(&bullet["grip_ids"])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let _ = writeln!(
                text,
                "    - {} [{}]",
                one_line(str_of(&bullet["text"]), TEXT_CHARS),
                grips.join(", ")
            );
        }
    }
    Answer {
        structured: value,
        text,
    }
}

pub(super) async fn timeline(
    backend: &Backend,
    args: &ToolArgs<'_>,
    default_project: &str,
) -> Result<Answer, ToolError> {
    let project = args.project(default_project)?;
    let anchors = ["event_id", "idea_id", "at"]
        .into_iter()
        .filter(|key| args.has(key))
        .count();
    if anchors != 1 {
        return Err(ArgError(format!(
            "give exactly one of `event_id`, `idea_id` or `at` (got {anchors})"
        ))
        .into());
    }
    let anchor = if let Some(event_id) = args.string("event_id")? {
        json!({"event_id": event_id})
    } else if let Some(idea_id) = args.string("idea_id")? {
        json!({"idea_id": idea_id})
    } else {
        json!({"timestamp": args.time("at")?})
    };
    let mut body = json!({"anchor": anchor});
    for side in ["before", "after"] {
        if let Some(count) = args.integer(side, 0, MAX_TIMELINE_SIDE)? {
            body[side] = count.into();
        }
    }
    let mut value = backend.call(&project, "timeline", body).await?;
    if let Value::Object(map) = &mut value {
        map.insert("project".to_owned(), project.clone().into());
    }
    let text = timeline_text(&project, &value);
    Ok(Answer {
        structured: value,
        text,
    })
}

fn timeline_text(project: &str, value: &Value) -> String {
    let anchor = &value["anchor"];
    let mut text = format!(
        "timeline in project {project} around {}\n",
        str_of(&anchor["timestamp"])
    );
    if anchor["event"].is_object() {
        let _ = writeln!(text, "anchor event: {}", event_line(&anchor["event"]));
    }
    if anchor["idea"].is_object() {
        let _ = writeln!(text, "anchor idea: {}", idea_line(&anchor["idea"]));
    }
    for idea in array_of(&anchor["ideas"]) {
        let _ = writeln!(text, "  idea of the anchor: {}", idea_line(idea));
    }
    for (side, label) in [("before", "before"), ("after", "after")] {
        let ideas = array_of(&value[side]);
        let _ = writeln!(text, "{label} ({}):", ideas.len());
        for idea in ideas {
            let _ = writeln!(text, "  {}", idea_line(idea));
        }
    }
    text
}

fn idea_line(idea: &Value) -> String {
    let superseded = match idea["superseded_by"]["idea_id"].as_str() {
        Some(by) => format!(" [superseded by {by}]"),
        None if idea["is_superseded"].as_bool() == Some(true) => " [superseded]".to_owned(),
        None => String::new(),
    };
    format!(
        "{} {} {} (event {}): {}{superseded}",
        str_of(&idea["valid_from"]),
        str_of(&idea["intent"]),
        str_of(&idea["idea_id"]),
        str_of(&idea["source"]["event_id"]),
        one_line(str_of(&idea["content"]), TEXT_CHARS)
    )
}

fn event_line(event: &Value) -> String {
    format!(
        "{} {} {} (session {}): {}",
        str_of(&event["timestamp"]),
        str_of(&event["kind"]),
        str_of(&event["event_id"]),
        str_of(&event["session_id"]),
        one_line(str_of(&event["text"]), TEXT_CHARS)
    )
}

pub(super) async fn get_events(
    backend: &Backend,
    args: &ToolArgs<'_>,
    default_project: &str,
) -> Result<Answer, ToolError> {
    let project = args.project(default_project)?;
    let ids = args.strings("ids", MAX_EVENT_IDS, MAX_ID_CHARS)?;
    let grip = args.string("grip")?;
    let context = args.integer("context", 0, MAX_GRIP_CONTEXT)?;
    let (events, grip_json, excerpt_ids, not_found) = match (ids, grip) {
        (Some(ids), None) => {
            if context.is_some() {
                return Err(ArgError("`context` applies to `grip` only".into()).into());
            }
            let (events, not_found) = events_by_id(backend, &project, &ids).await?;
            (events, Value::Null, Vec::new(), not_found)
        }
        (None, Some(grip_id)) => {
            let mut body = json!({"grip_id": grip_id});
            if let Some(context) = context {
                body["before"] = context.into();
                body["after"] = context.into();
            }
            let response: GripExpandResponse =
                decode(backend.call(&project, "grip.expand", body).await?)?;
            let excerpt_ids: Vec<String> = response
                .excerpt_events
                .iter()
                .map(|event| event.event_id.clone())
                .collect();
            let events: Vec<Event> = response
                .events_before
                .into_iter()
                .chain(response.excerpt_events)
                .chain(response.events_after)
                .collect();
            let grip = serde_json::to_value(&response.grip)
                .map_err(|err| ServiceError::internal(err.to_string()))?;
            (events, grip, excerpt_ids, Vec::new())
        }
        _ => {
            return Err(ArgError(
                "give exactly one of `ids` (event ids) or `grip` (a grip id)".into(),
            )
            .into());
        }
    };
    let mut text = format!(
        "{} event{} of project {project}",
        events.len(),
        if events.len() == 1 { "" } else { "s" }
    );
    if let Some(excerpt) = grip_json["excerpt"].as_str() {
        let _ = write!(
            text,
            " around grip {}: \"{}\"",
            str_of(&grip_json["grip_id"]),
            one_line(excerpt, TEXT_CHARS)
        );
    }
    text.push('\n');
    for event in &events {
        let marker = if excerpt_ids.contains(&event.event_id) {
            "> "
        } else {
            ""
        };
        let _ = writeln!(
            text,
            "\n{marker}[{}] {} {} {} (session {})\n{}",
            event.event_id,
            format_timestamp_ms(event.timestamp_ms),
            event.role.as_str(),
            event.kind.as_str(),
            event.session_id,
            event.text
        );
    }
    if !not_found.is_empty() {
        let _ = writeln!(text, "\nnot found: {}", not_found.join(", "));
    }
    let events_json =
        serde_json::to_value(&events).map_err(|err| ServiceError::internal(err.to_string()))?;
    Ok(Answer {
        structured: json!({
            "project": project,
            "events": events_json,
            "grip": grip_json,
            "excerpt_event_ids": excerpt_ids,
            "not_found": not_found,
        }),
        text,
    })
}

/// The events of `ids`, in the order given, and the ids the project does not hold.
/// Each is the anchor of a `timeline` call with no ideas around it, the one query call
/// that reads an event by id over NATS as well as embedded.
async fn events_by_id(
    backend: &Backend,
    project: &str,
    ids: &[String],
) -> Result<(Vec<Event>, Vec<String>), ToolError> {
    let mut unique: Vec<&String> = Vec::with_capacity(ids.len());
    let mut seen = BTreeSet::new();
    for id in ids {
        if seen.insert(id) {
            unique.push(id);
        }
    }
    let answers = futures::future::join_all(unique.iter().map(|id| {
        backend.call(
            project,
            "timeline",
            json!({"anchor": {"event_id": id}, "before": 0, "after": 0}),
        )
    }))
    .await;
    let mut events = Vec::new();
    let mut not_found = Vec::new();
    for (id, answer) in unique.into_iter().zip(answers) {
        match answer {
            Ok(value) => {
                let event: Event = decode(value["anchor"]["event"].clone())?;
                events.push(event);
            }
            Err(err) if err.error.code == memory_types::ErrorCode::NotFound => {
                not_found.push(id.clone());
            }
            Err(err) => return Err(err.into()),
        }
    }
    if events.is_empty() {
        return Err(ToolError {
            code: "not_found",
            message: format!(
                "project {project:?} has none of the events {}",
                not_found.join(", ")
            ),
        });
    }
    Ok((events, not_found))
}
