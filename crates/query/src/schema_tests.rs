//! The committed schema against the types, and real and hand-built requests and replies
//! against the schema.

use memory_toc::{
    Grip, GripId, SearchField, TocBullet, TocLevel, TocNode, TocNodeId, Tz, search_children,
};
use memory_types::{Event, EventKind, Role, ServiceError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::*;
use crate::QueryService;
use crate::api::{
    NavigationEvidence, NavigationStep, SearchMode, SearchResult, TimeArg, TimeHintInfo,
};

// A small checker of values against the generated schema: `$ref`, `anyOf`/`oneOf`,
// `type`, `enum`/`const`, `pattern`, `format: date-time`, `minimum`, `required`,
// `properties`/`additionalProperties` and `items`. Enough for what schemars writes.

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => false,
    }
}

fn check(value: &Value, schema: &Value, root: &Value, path: &str, errors: &mut Vec<String>) {
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Object(schema) => schema,
        other => {
            errors.push(format!("{path}: the schema {other} admits nothing"));
            return;
        }
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root["$defs"].get(name));
        match target {
            Some(target) => check(value, target, root, path, errors),
            None => errors.push(format!("{path}: dangling $ref {reference}")),
        }
    }
    for keyword in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(keyword).and_then(Value::as_array) {
            let passing = branches
                .iter()
                .filter(|branch| {
                    let mut branch_errors = Vec::new();
                    check(value, branch, root, path, &mut branch_errors);
                    branch_errors.is_empty()
                })
                .count();
            let fits = if keyword == "oneOf" {
                passing == 1
            } else {
                passing >= 1
            };
            if !fits {
                errors.push(format!(
                    "{path}: {passing} of the {keyword} branches admit {value}"
                ));
            }
        }
    }
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.iter().any(|name| type_matches(name, value)) {
            errors.push(format!("{path}: {value} is not of type {types}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        errors.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        errors.push(format!("{path}: {value} is not {constant}"));
    }
    if let (Some(pattern), Some(text)) = (
        schema.get("pattern").and_then(Value::as_str),
        value.as_str(),
    ) {
        let regex = regex::Regex::new(pattern).expect("the pattern compiles");
        if !regex.is_match(text) {
            errors.push(format!("{path}: {text:?} does not match {pattern}"));
        }
    }
    if let (Some("date-time"), Some(text)) =
        (schema.get("format").and_then(Value::as_str), value.as_str())
        && chrono::DateTime::parse_from_rfc3339(text).is_err()
    {
        errors.push(format!("{path}: {text:?} is not an RFC 3339 date-time"));
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && number < minimum
    {
        errors.push(format!("{path}: {number} is below {minimum}"));
    }
    if let Value::Object(object) = value {
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(name) {
                errors.push(format!("{path}: the required `{name}` is missing"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (key, item) in object {
            let item_path = format!("{path}.{key}");
            match (properties.and_then(|p| p.get(key)), additional) {
                (Some(property), _) => check(item, property, root, &item_path, errors),
                (None, Some(extra @ Value::Object(_))) => {
                    check(item, extra, root, &item_path, errors);
                }
                (None, Some(Value::Bool(true))) => {}
                (None, Some(_)) => {
                    errors.push(format!("{path}: `{key}` is not allowed by the schema"));
                }
                (None, None) if properties.is_some() => {
                    errors.push(format!("{path}: `{key}` is not in the schema's properties"));
                }
                (None, None) => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(item, item_schema, root, &format!("{path}[{index}]"), errors);
        }
    }
}

/// The checker's complaints about `value` as an instance of `$defs/<name>`.
fn errors_for(schema: &Value, name: &str, value: &Value) -> Vec<String> {
    let definition = schema["$defs"]
        .get(name)
        .unwrap_or_else(|| panic!("$defs has no {name}"));
    let mut errors = Vec::new();
    check(value, definition, schema, name, &mut errors);
    errors
}

fn assert_fits<T: Serialize>(schema: &Value, name: &str, value: &T) {
    let json = serde_json::to_value(value).expect("serializes");
    let errors = errors_for(schema, name, &json);
    assert!(errors.is_empty(), "{name} {json}: {errors:#?}");
}

// The committed file

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/query.v1.json")
}

#[test]
fn committed_query_schema_matches_the_types() {
    let generated = query_schema_json();
    let path = committed_path();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/query.v1.json is out of date with memory_query::api; run UPDATE_SCHEMAS=1 cargo test -p memory-query"
    );
}

#[test]
fn every_method_has_a_request_and_a_response_and_the_description_names_them() {
    let schema = query_schema();
    let methods: Vec<&str> = METHOD_SCHEMAS.iter().map(|(method, ..)| *method).collect();
    assert_eq!(methods, crate::METHODS);
    let description = schema["description"].as_str().expect("description");
    assert!(description.contains("`memory.query.<project>.<method>`"));
    for (method, request, response) in METHOD_SCHEMAS {
        assert!(
            description.contains(&format!("`{method}`: {request} → {response}")),
            "{method}"
        );
        let entry = &schema["x-methods"][*method];
        for (role, name) in [("request", request), ("response", response)] {
            let pointer = entry[role].as_str().expect("a pointer");
            assert_eq!(pointer, format!("#/$defs/{name}"));
            assert!(schema.pointer(&pointer[1..]).is_some(), "{pointer}");
        }
        // Requests reject unknown fields, like the service.
        assert_eq!(
            schema["$defs"][*request]["additionalProperties"], false,
            "{request}"
        );
    }
    assert!(schema.pointer("/$defs/ServiceError").is_some());
    for name in [
        "TocNode",
        "TocBullet",
        "Grip",
        "TocLevel",
        "SearchField",
        "NodeMatch",
        "ChildResult",
        "SearchChildrenPage",
        "TocNodeId",
        "GripId",
        "Event",
        "EventKind",
        "Role",
        "ServiceError",
        "ErrorBody",
        "ErrorCode",
    ] {
        assert!(schema["$defs"].get(name).is_some(), "$defs lacks {name}");
    }
    assert_eq!(schema["$defs"]["TocNodeId"]["pattern"], TocNodeId::PATTERN);
    assert_eq!(schema["$defs"]["GripId"]["pattern"], GripId::PATTERN);
    let timestamp = &schema["$defs"]["Event"]["properties"]["timestamp"];
    assert_eq!(timestamp["type"], "string");
    assert_eq!(timestamp["format"], "date-time");
}

#[test]
fn request_and_response_sides_describe_shared_types_alike() {
    let (requests, responses) = definitions();
    let shared: Vec<&String> = requests
        .keys()
        .filter(|name| responses.contains_key(*name))
        .collect();
    assert!(!shared.is_empty());
    for name in shared {
        assert_eq!(requests[name], responses[name], "{name}");
    }
}

// Real values

const TS_MS: u64 = 1_769_767_200_000;

fn segment_id() -> TocNodeId {
    let day = chrono::NaiveDate::from_ymd_opt(2026, 1, 30).expect("a date");
    TocNodeId::segment_for("webapp", day, TS_MS, "evt-1")
}

fn sample_node() -> TocNode {
    TocNode {
        node_id: segment_id(),
        project_id: "webapp".to_string(),
        level: TocLevel::Segment,
        title: "JWT expiry".to_string(),
        summary: Some("Decided on 15 minutes".to_string()),
        bullets: vec![TocBullet {
            text: "Access tokens expire after 15 minutes".to_string(),
            grip_ids: vec![GripId::derive("webapp", TS_MS, "evt-1", 0)],
        }],
        keywords: vec!["jwt".to_string()],
        start_ms: TS_MS,
        end_ms: TS_MS + 60_000,
        child_ids: Vec::new(),
        num_events: 2,
        version: 3,
    }
}

fn sample_grip() -> Grip {
    Grip {
        grip_id: GripId::derive("webapp", TS_MS, "evt-1", 0),
        project_id: "webapp".to_string(),
        session_id: "s1".to_string(),
        excerpt: "expire after 15 minutes".to_string(),
        event_id_start: "evt-1".to_string(),
        event_id_end: "evt-2".to_string(),
        timestamp_ms: TS_MS,
        segment_id: segment_id(),
    }
}

fn sample_event() -> Event {
    Event {
        event_id: "evt-1".to_string(),
        session_id: "s1".to_string(),
        project_id: "webapp".to_string(),
        agent_id: Some("claude".to_string()),
        timestamp_ms: TS_MS,
        kind: EventKind::AssistantMessage,
        role: Role::Assistant,
        text: "Access tokens expire after 15 minutes".to_string(),
        metadata: BTreeMap::from([("model".to_string(), "x".to_string())]),
    }
}

#[test]
fn hand_built_requests_and_responses_fit_the_schema() {
    let schema = query_schema();
    let navigate_request = NavigateRequest {
        query: "what did we decide about JWT last week?".to_string(),
        now: Some(TimeArg::Text("2026-02-04T10:00:00Z".to_string())),
        token_budget: Some(500),
        max_depth: Some(4),
        max_nodes: Some(20),
    };
    assert_fits(&schema, "NavigateRequest", &navigate_request);
    assert_fits(
        &schema,
        "NavigateRequest",
        &NavigateRequest {
            now: Some(TimeArg::Millis(TS_MS)),
            ..NavigateRequest::default()
        },
    );
    let search_request = SearchRequest {
        id: Some(json!({"batch": 7})),
        query: "jwt expiry".to_string(),
        project_id: Some("webapp".to_string()),
        limit: Some(3),
        token_budget: Some(800),
        mode: Some(SearchMode::Toc),
        from: Some(TimeArg::Text("2026-01-01".to_string())),
        to: Some(TimeArg::Millis(TS_MS)),
        session_id: Some("s1".to_string()),
        now: None,
        phrases: Some(crate::api::PhrasesArg::Phrases(vec![
            "token lifetime".to_string(),
        ])),
        include_preferences: Some(true),
        include_n_minus_1: Some(false),
        caller_session_id: Some("s2".to_string()),
        referenced_event_ids: Some(vec!["e1".to_string()]),
        doc_type: Some("event".to_string()),
        level: None,
        recency_half_life_days: Some(30.0),
        include_superseded: Some(true),
        as_of: Some(TimeArg::Text("2026-01-20".to_string())),
        min_salience: Some(0.5),
        sector: Some("reflective".to_string()),
    };
    assert_fits(&schema, "SearchRequest", &search_request);
    assert_fits(
        &schema,
        "SearchChildrenRequest",
        &SearchChildrenRequest {
            parent_id: Some("toc:month:2026-01".to_string()),
            query: "jwt".to_string(),
            child_level: Some(TocLevel::Week),
            fields: vec![SearchField::Title, SearchField::Bullets],
            limit: Some(5),
            token_budget: Some(300),
        },
    );

    let search_response = SearchResponse {
        id: Some(json!("q1")),
        tier: crate::api::Tier::Toc,
        fallback_reason: Some("no index".to_string()),
        results: vec![SearchResult {
            doc_id: segment_id().to_string(),
            doc_type: "toc_node".to_string(),
            level: Some(TocLevel::Segment),
            score: 0.5,
            text: "JWT expiry".to_string(),
            bm25_rank: Some(1),
            vector_rank: None,
            match_type: None,
            evidence: vec![sample_event()],
            idea_id: Some("idea-0123456789abcdef".to_string()),
            source: crate::api::ResultSource::AlwaysInclude,
            source_session: Some(crate::api::SourceSession {
                id: "s1".to_string(),
                started_at: "2026-01-05T09:14:06.000Z".to_string(),
                summary: Some("JWT access tokens".to_string()),
            }),
            is_superseded: true,
            superseded_by: Some(crate::api::SupersededBy {
                idea_id: "idea-fedcba9876543210".to_string(),
                content: "refresh_token_ttl becomes 30 days".to_string(),
                valid_from: "2026-02-12T15:31:35.000Z".to_string(),
            }),
            related_count: 2,
            salience: Some(1.0),
        }],
        token_estimate: 10,
        took_ms: 3,
        time_range: crate::api::range_info(Some(TS_MS), Some(TS_MS + 1)),
        search_terms_used: vec!["jwt expiry".to_string(), "token lifetime".to_string()],
        phrase_source: crate::api::PhraseSource::Llm,
        phrase_fallback_reason: None,
        stats: crate::api::SearchStats {
            phrases: vec![crate::api::PhraseHits {
                phrase: "jwt expiry".to_string(),
                bm25_hits: Some(4),
                vector_hits: None,
            }],
            bm25_matches: 1,
            vector_matches: 0,
            both_matches: 0,
            always_included: 1,
            final_results: 1,
        },
    };
    assert_fits(&schema, "SearchResponse", &search_response);
    let navigate_response = NavigateResponse {
        query: navigate_request.query.clone(),
        time_hint: Some(TimeHintInfo {
            matched: "last week".to_string(),
            from: "2026-01-26T00:00:00.000Z".to_string(),
            to: "2026-02-02T00:00:00.000Z".to_string(),
            node_id: "toc:week:2026-W05".to_string(),
        }),
        path: vec![NavigationStep {
            node_id: Some("toc:week:2026-W05".to_string()),
            level: Some(TocLevel::Week),
            title: "Auth".to_string(),
            searched: 3,
            best_node_id: Some("toc:day:2026-01-30".to_string()),
            best_text: Some("JWT expiry".to_string()),
            best_score: Some(1.0),
            action: "drill".to_string(),
            reason: "the best child holds every term".to_string(),
        }],
        evidence: vec![NavigationEvidence {
            node_id: segment_id().to_string(),
            title: "JWT expiry".to_string(),
            score: 1.0,
            bullets: sample_node().bullets,
            grips: vec![sample_grip()],
        }],
        nodes_visited: 4,
        stopped: "found".to_string(),
        token_estimate: 30,
        explanation: "## Search Path".to_string(),
    };
    assert_fits(&schema, "NavigateResponse", &navigate_response);
    let day = TocNode {
        node_id: "toc:day:2026-01-30".parse().expect("an id"),
        level: TocLevel::Day,
        summary: None,
        child_ids: vec![segment_id()],
        ..sample_node()
    };
    let page = search_children(&[day.clone(), sample_node()], "jwt", &[], 10, None);
    assert!(!page.results.is_empty());
    assert_fits(&schema, "SearchChildrenPage", &page);
    assert_fits(
        &schema,
        "TocRootResponse",
        &TocRootResponse {
            project_id: "webapp".to_string(),
            years: vec![TocNode {
                node_id: TocNodeId::Year(2026),
                level: TocLevel::Year,
                ..day.clone()
            }],
        },
    );
    assert_fits(
        &schema,
        "TocBrowseResponse",
        &TocBrowseResponse {
            node_id: None,
            children: vec![day],
            has_more: true,
            next_page_token: Some("abc".to_string()),
        },
    );
    assert_fits(
        &schema,
        "GripExpandResponse",
        &GripExpandResponse {
            grip: sample_grip(),
            events_before: Vec::new(),
            excerpt_events: vec![sample_event()],
            events_after: vec![Event {
                agent_id: None,
                ..sample_event()
            }],
        },
    );
    assert_fits(
        &schema,
        "ServiceError",
        &ServiceError::not_found("no node toc:day:2026-01-31"),
    );
}

#[test]
fn the_checker_catches_what_the_schema_forbids() {
    let schema = query_schema();
    let mut response = serde_json::to_value(TocNodeResponse {
        node: sample_node(),
    })
    .expect("json");
    assert!(errors_for(&schema, "TocNodeResponse", &response).is_empty());
    response["node"]["titel"] = json!("typo");
    response["node"]["child_ids"] = json!(["toc:week:2026-W5"]);
    response["node"]["level"] = json!("hour");
    response["node"]["version"] = json!(-1);
    let errors = errors_for(&schema, "TocNodeResponse", &response).join("\n");
    for expected in ["`titel`", "toc:week:2026-W5", "\"hour\"", "-1"] {
        assert!(errors.contains(expected), "{expected}: {errors}");
    }
    let mut event = serde_json::to_value(sample_event()).expect("json");
    event["timestamp"] = json!(TS_MS);
    assert!(!errors_for(&schema, "Event", &event).is_empty());
    event["timestamp"] = json!("yesterday");
    assert!(!errors_for(&schema, "Event", &event).is_empty());
    let request = json!({"query": "jwt", "tokne_budget": 5});
    assert!(!errors_for(&schema, "SearchRequest", &request).is_empty());
    assert!(!errors_for(&schema, "SearchRequest", &json!({})).is_empty());
    assert!(errors_for(&schema, "TocRootRequest", &json!({})).is_empty());
}

// Real replies of a real service, over the bundled sample

fn service() -> (tempfile::TempDir, QueryService) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = memory_projections::testsuite::sample_store(dir.path());
    (dir, QueryService::new(store, Tz::UTC))
}

#[test]
fn every_method_s_real_request_and_reply_fit_the_schema() {
    let schema = query_schema();
    let (_dir, service) = service();
    let mut calls = 0;
    let mut call = |method: &str, body: Value| -> Value {
        let (_, request, response) = METHOD_SCHEMAS
            .iter()
            .find(|(name, ..)| *name == method)
            .expect("a method");
        let errors = errors_for(&schema, request, &body);
        assert!(errors.is_empty(), "{method} request {body}: {errors:#?}");
        let reply = service
            .call("webapp", method, &serde_json::to_vec(&body).expect("json"))
            .unwrap_or_else(|err| panic!("{method} {body}: {err}"));
        let errors = errors_for(&schema, response, &reply);
        assert!(errors.is_empty(), "{method} reply {reply}: {errors:#?}");
        calls += 1;
        reply
    };

    let root = call("toc.root", json!({}));
    let year = root["years"][0]["node_id"].clone();
    call("toc.node", json!({"node_id": year}));
    call(
        "toc.browse",
        json!({"node_id": "toc:month:2026-01", "limit": 2}),
    );
    call("toc.browse", json!({}));
    call(
        "events.get",
        json!({"from": "2026-01-05", "to": TS_MS, "limit": 5, "session_id": null}),
    );
    let day = call("toc.node", json!({"node_id": "toc:day:2026-01-05"}));
    let segment_id = day["node"]["child_ids"][0].clone();
    let segment = call("toc.node", json!({"node_id": segment_id}));
    let grip_id = segment["node"]["bullets"][0]["grip_ids"][0].clone();
    let expanded = call(
        "grip.expand",
        json!({"grip_id": grip_id, "before": 2, "after": 1}),
    );
    assert!(expanded["excerpt_events"][0]["timestamp"].is_string());
    let days = call(
        "toc.search_children",
        json!({"child_level": "day", "query": "JWT refresh", "limit": 2, "token_budget": 400}),
    );
    let best_day = days["results"][0]["node_id"].clone();
    call(
        "toc.search_node",
        json!({"node_id": best_day, "query": "JWT refresh", "fields": ["title", "bullets"]}),
    );
    let navigated = call(
        "navigate",
        json!({"query": "what did we decide about JWT expiry last month?",
               "now": "2026-02-10T12:00:00Z", "token_budget": 250}),
    );
    assert!(navigated["time_hint"].is_object());
    assert!(!navigated["evidence"].as_array().is_some_and(Vec::is_empty));
    let searched = call(
        "search",
        json!({"id": "q1", "query": "What did we decide about JWT expiry?",
               "from": "2026-01-01", "mode": "auto", "token_budget": 600}),
    );
    assert!(
        !searched["results"][0]["evidence"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    assert_eq!(calls, 12);

    let failure = service
        .call(
            "webapp",
            "toc.node",
            br#"{"node_id": "toc:day:2026-02-30"}"#,
        )
        .expect_err("no such day");
    assert_fits(&schema, ERROR_SCHEMA, &failure);
}

#[test]
fn every_ideas_method_s_real_request_and_reply_fit_the_schema() {
    let schema = query_schema();
    let fixture = crate::ideas_tests::Fixture::full(false);
    let mut methods_called: Vec<&str> = Vec::new();
    let mut call = |method: &'static str, body: Value| -> Value {
        let (_, request, response) = METHOD_SCHEMAS
            .iter()
            .find(|(name, ..)| *name == method)
            .expect("a method");
        let errors = errors_for(&schema, request, &body);
        assert!(errors.is_empty(), "{method} request {body}: {errors:#?}");
        let reply = fixture
            .try_call("p", method, body.clone())
            .unwrap_or_else(|err| panic!("{method} {body}: {err}"));
        let errors = errors_for(&schema, response, &reply);
        assert!(errors.is_empty(), "{method} reply {reply}: {errors:#?}");
        methods_called.push(method);
        reply
    };
    let found = call(
        "ideas.search",
        json!({"query": "ledger", "include_superseded": true, "as_of": "2026-03-05",
               "intent": "decision", "sector": "reflective", "session_id": null,
               "min_salience": 0.5, "limit": 5, "token_budget": 500}),
    );
    let superseded = found["results"]
        .as_array()
        .and_then(|results| results.iter().find(|r| r["is_superseded"] == true))
        .expect("a superseded decision");
    let idea_id = superseded["idea_id"].clone();
    assert!(superseded["superseded_by"].is_object());
    call("ideas.get", json!({"idea_id": idea_id}));
    call(
        "ideas.open_questions",
        json!({"session_id": "s1", "since": 0, "limit": 5}),
    );
    call("ideas.open_todos", json!({}));
    call(
        "ideas.decisions",
        json!({"entity": "pg", "include_superseded": true, "as_of": TS_MS * 2}),
    );
    let entities = call(
        "entities.search",
        json!({"query": "postgres", "type": "technology"}),
    );
    let entity_id = entities["results"][0]["entity_id"].clone();
    call(
        "entities.ideas",
        json!({"entity_id": entity_id, "limit": 3}),
    );
    call("spans.list", json!({"session_id": "s1"}));
    for anchor in [
        json!({"event_id": "b1"}),
        json!({"idea_id": idea_id}),
        json!({"timestamp": "2026-03-03T00:00:00Z"}),
    ] {
        call(
            "timeline",
            json!({"anchor": anchor, "before": 2, "after": 2}),
        );
    }
    let context = call("session_context", json!({"session_id": "s2"}));
    assert!(
        !context["questions_closed"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
    methods_called.dedup();
    let ideas_methods: Vec<&str> = crate::METHODS
        .iter()
        .copied()
        .skip_while(|method| *method != "ideas.search")
        .collect();
    assert_eq!(methods_called, ideas_methods);
    // The anchor is exactly one of three shapes.
    let request = json!({"anchor": {"event_id": "b1", "idea_id": "x"}});
    assert!(!errors_for(&schema, "TimelineRequest", &request).is_empty());
    assert!(!errors_for(&schema, "IdeasSearchRequest", &json!({"intent": "choice"})).is_empty());
}
