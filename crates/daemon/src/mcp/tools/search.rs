//! `search`: the search call, its citations and its text rendering.

use std::fmt::Write as _;

use memory_query::api::{SearchResponse, SearchResult};
use memory_types::{Event, format_timestamp_ms};
use serde_json::{Value, json};

use super::{
    Answer, MAX_SEARCH_RESULTS, MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET, SEARCH_MODES, TEXT_CHARS,
    ToolError, decode,
};
use crate::mcp::args::{ArgError, ToolArgs};
use crate::mcp::backend::Backend;
use crate::query_cli::one_line;

/// The `search` call's body for the arguments.
pub(crate) fn search_request(args: &ToolArgs<'_>) -> Result<Value, ArgError> {
    let query = args.required_string("query", "the question or keywords to look for")?;
    let mut body = json!({"query": query});
    let fields = [
        ("from", args.time("since")?.map(Value::from)),
        ("to", args.time("until")?.map(Value::from)),
        ("mode", args.one_of("mode", &SEARCH_MODES)?.map(Value::from)),
        (
            "limit",
            args.integer("limit", 1, MAX_SEARCH_RESULTS)?
                .map(Value::from),
        ),
        (
            "token_budget",
            args.integer("token_budget", MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET)?
                .map(Value::from),
        ),
    ];
    for (key, value) in fields {
        if let Some(value) = value {
            body[key] = value;
        }
    }
    Ok(body)
}

pub(super) async fn search(
    backend: &Backend,
    args: &ToolArgs<'_>,
    default_project: &str,
) -> Result<Answer, ToolError> {
    let project = args.project(default_project)?;
    let body = search_request(args)?;
    let query = body["query"].as_str().unwrap_or_default().to_owned();
    let value = backend.call(&project, "search", body).await?;
    let response: SearchResponse = decode(value)?;
    Ok(search_answer(&project, &query, &response))
}

/// Ids a search answer cites, each kind in first-seen order without repeats.
#[derive(Default)]
struct Citations {
    event_ids: Vec<String>,
    grip_ids: Vec<String>,
    toc_node_ids: Vec<String>,
    idea_ids: Vec<String>,
}

impl Citations {
    fn of(result: &SearchResult) -> Citations {
        let mut citations = Citations::default();
        let own = match result.doc_type.as_str() {
            "event" => Some(&mut citations.event_ids),
            "grip" => Some(&mut citations.grip_ids),
            "toc_node" => Some(&mut citations.toc_node_ids),
            "idea" => Some(&mut citations.idea_ids),
            _ => None,
        };
        if let Some(list) = own {
            push_new(list, &result.doc_id);
        }
        if let Some(idea_id) = &result.idea_id {
            push_new(&mut citations.idea_ids, idea_id);
        }
        for event in &result.evidence {
            push_new(&mut citations.event_ids, &event.event_id);
        }
        citations
    }

    fn merge(&mut self, other: &Citations) {
        for (mine, theirs) in [
            (&mut self.event_ids, &other.event_ids),
            (&mut self.grip_ids, &other.grip_ids),
            (&mut self.toc_node_ids, &other.toc_node_ids),
            (&mut self.idea_ids, &other.idea_ids),
        ] {
            for id in theirs {
                push_new(mine, id);
            }
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "event_ids": self.event_ids,
            "grip_ids": self.grip_ids,
            "toc_node_ids": self.toc_node_ids,
            "idea_ids": self.idea_ids,
        })
    }
}

fn push_new(list: &mut Vec<String>, id: &str) {
    if !list.iter().any(|known| known == id) {
        list.push(id.to_owned());
    }
}

/// An event as the search answer shows it: no project (the answer's) nor metadata.
fn brief_event(event: &Event) -> Value {
    json!({
        "event_id": event.event_id,
        "session_id": event.session_id,
        "timestamp": format_timestamp_ms(event.timestamp_ms),
        "kind": event.kind.as_str(),
        "role": event.role.as_str(),
        "text": event.text,
    })
}

pub(crate) fn search_answer(project: &str, query: &str, response: &SearchResponse) -> Answer {
    let mut all = Citations::default();
    let mut results = Vec::with_capacity(response.results.len());
    let mut text = format!(
        "search {query:?} in project {project}: {} result{} from the {} tier{}, ~{} tokens\n",
        response.results.len(),
        if response.results.len() == 1 { "" } else { "s" },
        response.tier,
        response
            .fallback_reason
            .as_ref()
            .map(|reason| format!(" (fallback: {reason})"))
            .unwrap_or_default(),
        response.token_estimate,
    );
    for (index, result) in response.results.iter().enumerate() {
        let citations = Citations::of(result);
        all.merge(&citations);
        results.push(json!({
            "rank": index + 1,
            "doc_id": result.doc_id,
            "doc_type": result.doc_type,
            "level": result.level.map(|level| level.as_str()),
            "score": result.score,
            "text": result.text,
            "idea_id": result.idea_id,
            "is_superseded": result.is_superseded,
            "superseded_by": result.superseded_by,
            "citations": citations.to_json(),
            "evidence": result.evidence.iter().map(brief_event).collect::<Vec<_>>(),
        }));
        let _ = writeln!(
            text,
            "\n{}. [{:.2}] {} {}{} — {}",
            index + 1,
            result.score,
            result.doc_type,
            result.doc_id,
            if result.is_superseded {
                " (superseded)"
            } else {
                ""
            },
            one_line(&result.text, TEXT_CHARS)
        );
        for event in &result.evidence {
            let _ = writeln!(
                text,
                "   {} {} event {} (session {}): {}",
                format_timestamp_ms(event.timestamp_ms),
                event.kind.as_str(),
                event.event_id,
                event.session_id,
                one_line(&event.text, TEXT_CHARS)
            );
        }
    }
    if response.results.is_empty() {
        text.push_str("nothing found; try other words, a wider time range, or `navigate`\n");
    }
    Answer {
        structured: json!({
            "project": project,
            "query": query,
            "tier": response.tier.as_str(),
            "fallback_reason": response.fallback_reason,
            "took_ms": response.took_ms,
            "token_estimate": response.token_estimate,
            "results": results,
            "citations": all.to_json(),
        }),
        text,
    }
}

#[cfg(test)]
mod tests {
    use memory_types::EventKind;

    use super::super::test_support::{schema_of, with};
    use super::*;

    #[test]
    fn search_arguments_become_the_search_call() {
        let body = with(
            "search",
            json!({"query": "jwt expiry", "since": "2026-01-01", "until": "2026-02-01T00:00:00Z",
                   "mode": "keyword", "limit": 3, "token_budget": 500, "project": "webapp"}),
            search_request,
        );
        assert_eq!(
            body,
            Ok(json!({"query": "jwt expiry", "from": "2026-01-01",
                      "to": "2026-02-01T00:00:00Z", "mode": "keyword", "limit": 3,
                      "token_budget": 500}))
        );
        let minimal = with("search", json!({"query": "jwt"}), |args| {
            search_request(args)
        });
        assert_eq!(minimal, Ok(json!({"query": "jwt"})));
    }

    #[test]
    fn bad_search_arguments_say_what_is_wrong() {
        for (arguments, message) in [
            (
                json!({}),
                "`query` is required: the question or keywords to look for",
            ),
            (
                json!({"query": 7}),
                "`query` must be a string, got 7 (a number)",
            ),
            (
                json!({"query": "x", "mode": "fuzzy"}),
                "`mode` must be one of auto, toc, keyword, semantic, hybrid, got \"fuzzy\"",
            ),
            (
                json!({"query": "x", "limit": 0}),
                "`limit` must be an integer from 1 to 50, got 0 (a number)",
            ),
            (
                json!({"query": "x", "token_budget": "lots"}),
                "`token_budget` must be an integer from 100 to 20000, got \"lots\" (a string)",
            ),
            (
                json!({"query": "x", "since": "yesterday"}),
                "`since` must be an RFC 3339 time (2026-01-30T09:15:00Z) or a date (2026-01-30), \
                 got \"yesterday\"",
            ),
        ] {
            let result = with("search", arguments.clone(), search_request);
            assert_eq!(result, Err(ArgError(message.to_owned())), "{arguments}");
        }
        let schema = schema_of("search");
        let arguments = rmcp::model::object(json!({"query": "x", "from": "2026-01-01"}));
        let err = ToolArgs::parse("search", Some(&arguments), &schema)
            .err()
            .expect("refused");
        assert_eq!(
            err.0,
            "unknown argument `from` for search; it takes limit, mode, project, query, since, \
             token_budget, until"
        );
        let project = with(
            "search",
            json!({"query": "x", "project": "no/pe"}),
            |args| args.project("default"),
        );
        assert!(project.is_err());
    }

    #[test]
    fn citations_collect_every_kind_once() {
        let event = |id: &str| Event {
            event_id: id.to_owned(),
            session_id: "s1".to_owned(),
            project_id: "webapp".to_owned(),
            agent_id: None,
            timestamp_ms: 1_767_605_033_000,
            kind: EventKind::UserMessage,
            role: memory_types::Role::User,
            text: "We decided: JWT access token expiry is 15 minutes".to_owned(),
            metadata: Default::default(),
        };
        let response: SearchResponse = serde_json::from_value(json!({
            "tier": "bm25", "fallback_reason": null, "token_estimate": 40, "took_ms": 2,
            "results": [
                {"doc_id": "grip:1767605033000:01KE6QGP18B9MN95XEZ9YBHNBP", "doc_type": "grip",
                 "score": 0.9, "text": "We decided: JWT access token expiry is 15 minutes",
                 "is_superseded": false, "related_count": 0,
                 "evidence": [serde_json::to_value(event("e12")).expect("json")]},
                {"doc_id": "toc:day:2026-01-05", "doc_type": "toc_node", "level": "day",
                 "score": 0.5, "text": "Auth work", "idea_id": "idea-1",
                 "is_superseded": false, "related_count": 0,
                 "evidence": [serde_json::to_value(event("e12")).expect("json"),
                              serde_json::to_value(event("e13")).expect("json")]}
            ]
        }))
        .expect("a search response");
        let answer = search_answer("webapp", "jwt expiry", &response);
        assert_eq!(
            answer.structured["citations"],
            json!({"event_ids": ["e12", "e13"],
                   "grip_ids": ["grip:1767605033000:01KE6QGP18B9MN95XEZ9YBHNBP"],
                   "toc_node_ids": ["toc:day:2026-01-05"], "idea_ids": ["idea-1"]})
        );
        assert_eq!(answer.structured["results"][1]["level"], "day");
        assert_eq!(answer.structured["results"][0]["rank"], 1);
        assert_eq!(
            answer.structured["results"][0]["evidence"][0]["timestamp"],
            "2026-01-05T09:23:53.000Z"
        );
        assert!(answer.text.starts_with(
            "search \"jwt expiry\" in project webapp: 2 results from the bm25 tier, ~40 tokens"
        ));
        assert!(
            answer.text.contains("event e13 (session s1)"),
            "{}",
            answer.text
        );
    }
}
