//! The calls over the bundled sample conversations, on a real store and pipeline.

use memory_projections::testsuite::sample_store;
use memory_toc::Tz;
use memory_types::ErrorCode;
use serde_json::{Value, json};

use crate::QueryService;

/// One store with the sample, shared by the tests of this module.
fn service() -> &'static QueryService {
    static SERVICE: std::sync::OnceLock<(tempfile::TempDir, QueryService)> =
        std::sync::OnceLock::new();
    &SERVICE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = sample_store(dir.path());
            (dir, QueryService::new(store, Tz::UTC))
        })
        .1
}

fn call(method: &str, body: Value) -> Result<Value, memory_types::ServiceError> {
    service().call("webapp", method, &serde_json::to_vec(&body).expect("json"))
}

fn evidence_texts(response: &Value) -> Vec<String> {
    response["results"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|result| result["evidence"].as_array().into_iter().flatten())
        .filter_map(|event| event["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn search_finds_the_decision_and_keeps_to_the_budget() {
    for budget in [40, 250, 2_000] {
        let response = call(
            "search",
            json!({"id": "q1", "query": "What did we decide about JWT expiry?", "token_budget": budget}),
        )
        .expect("search");
        assert_eq!(response["id"], "q1");
        assert_eq!(response["tier"], "toc");
        let texts = evidence_texts(&response);
        let used: usize = texts
            .iter()
            .map(|text| memory_text::estimate_tokens(text.chars().count()))
            .sum();
        assert!(used <= budget, "{used} tokens over a budget of {budget}");
        assert_eq!(response["token_estimate"].as_u64(), Some(used as u64));
        // The tightest budget holds the best turn only (the question about the
        // decision); from a few hundred tokens on, the decision itself is in.
        assert!(
            budget < 100 || texts.iter().any(|text| text.contains("15 minutes")),
            "budget {budget}: the decision is in the evidence: {texts:?}"
        );
        assert!(!texts.is_empty(), "budget {budget}: something fits");
    }
}

#[test]
fn evidence_is_the_relevant_turns_not_the_opening_of_the_segment() {
    let response = call(
        "search",
        json!({"query": "CVE jsonwebtoken jose", "limit": 1}),
    )
    .expect("search");
    let first = &response["results"][0]["evidence"][0]["text"];
    assert!(
        first.as_str().is_some_and(|text| text.contains("CVE")),
        "the best turn comes first: {response}"
    );
}

#[test]
fn bad_requests_get_precise_errors() {
    let code = |result: Result<Value, memory_types::ServiceError>| {
        result.expect_err("an error").error.code
    };
    assert_eq!(
        code(call("search", json!({"query": "  "}))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("search", json!({"query": "the of"}))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("search", json!({"query": "jwt", "tokne_budget": 5}))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("search", json!({"query": "jwt", "mode": "semantic"}))),
        ErrorCode::Unavailable
    );
    assert_eq!(
        code(call(
            "search",
            json!({"query": "jwt", "project_id": "other"})
        )),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("toc.node", json!({"node_id": "toc:day:2026-13-01"}))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("toc.node", json!({"node_id": "toc:day:2025-01-01"}))),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(call("grip.expand", json!({"grip_id": "nope"}))),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(call("toc.rooot", json!({}))),
        ErrorCode::InvalidArgument
    );
    let malformed = service().call("webapp", "search", b"{\"query\": ");
    assert_eq!(code(malformed), ErrorCode::InvalidArgument);
    let other_project = service().call("no such project!", "toc.root", b"{}");
    assert_eq!(code(other_project), ErrorCode::InvalidArgument);
}

#[test]
fn browsing_pages_through_children_and_grips_expand_to_their_turns() {
    let root = call("toc.root", json!({})).expect("root");
    assert_eq!(root["years"][0]["node_id"], "toc:year:2026");
    let month = "toc:month:2026-01";
    let first = call("toc.browse", json!({"node_id": month, "limit": 2})).expect("browse");
    assert_eq!(first["children"].as_array().map(Vec::len), Some(2));
    assert_eq!(first["has_more"], true);
    let second = call(
        "toc.browse",
        json!({"node_id": month, "limit": 2, "page_token": first["next_page_token"]}),
    )
    .expect("browse");
    assert_ne!(
        first["children"][0]["node_id"],
        second["children"][0]["node_id"]
    );

    let day = call("toc.node", json!({"node_id": "toc:day:2026-01-05"})).expect("day");
    let segment_id = day["node"]["child_ids"][0]
        .as_str()
        .expect("a segment")
        .to_string();
    let segment = call("toc.node", json!({"node_id": segment_id})).expect("segment");
    assert_eq!(segment["node"]["level"], "segment");
    let grip_id = segment["node"]["bullets"][0]["grip_ids"][0].clone();
    let expanded = call(
        "grip.expand",
        json!({"grip_id": grip_id, "before": 2, "after": 1}),
    )
    .expect("expand");
    let excerpt = expanded["grip"]["excerpt"].as_str().expect("excerpt");
    let quoted = expanded["excerpt_events"][0]["text"]
        .as_str()
        .expect("event");
    assert!(quoted.contains(excerpt), "the grip is verbatim");
    assert!(
        expanded["events_before"]
            .as_array()
            .is_some_and(|e| e.len() <= 2)
    );
    assert!(
        expanded["events_after"]
            .as_array()
            .is_some_and(|e| e.len() <= 1)
    );

    let page = call(
        "events.get",
        json!({"from": "2026-01-05", "to": "2026-01-06", "limit": 5}),
    )
    .expect("events");
    assert_eq!(page["events"].as_array().map(Vec::len), Some(5));
    let next = call(
        "events.get",
        json!({"from": "2026-01-05", "to": "2026-01-06", "limit": 5, "page_token": page["next_page_token"]}),
    )
    .expect("events");
    assert!(page["events"][4]["timestamp"].as_str() <= next["events"][0]["timestamp"].as_str());
}

#[test]
fn search_children_and_search_node_follow_the_plan() {
    let days = call(
        "toc.search_children",
        json!({"child_level": "day", "query": "JWT refresh", "limit": 2, "token_budget": 400}),
    )
    .expect("search children");
    let results = days["results"].as_array().expect("results");
    assert!(!results.is_empty() && results.len() <= 2);
    assert!(results.iter().all(|r| r["level"] == "day"));
    let best = results[0]["node_id"].as_str().expect("id");
    let inside = call(
        "toc.search_node",
        json!({"node_id": best, "query": "JWT refresh"}),
    )
    .expect("search node");
    assert_eq!(inside["matched"], true);
    let level = call(
        "toc.search_children",
        json!({"parent_id": "toc:year:2026", "child_level": "day", "query": "jwt"}),
    );
    assert_eq!(
        level.expect_err("month is the child level").error.code,
        ErrorCode::InvalidArgument
    );
}

#[test]
fn navigate_explains_its_path_and_respects_the_budget() {
    let response = call(
        "navigate",
        json!({"query": "what did we decide about JWT expiry last month?", "now": "2026-02-10T12:00:00Z",
               "token_budget": 250}),
    )
    .expect("navigate");
    assert_eq!(response["time_hint"]["node_id"], "toc:month:2026-01");
    let path = response["path"].as_array().expect("path");
    assert_eq!(
        path[0]["node_id"], "toc:month:2026-01",
        "starts at the hinted month"
    );
    assert!(
        path.iter()
            .all(|step| !step["reason"].as_str().unwrap_or_default().is_empty())
    );
    assert!(
        response["token_estimate"]
            .as_u64()
            .is_some_and(|t| t <= 250)
    );
    let found: Vec<&Value> = path
        .iter()
        .filter(|step| step["action"] == "found")
        .collect();
    assert!(!found.is_empty(), "{response}");
    let bullets = response["evidence"][0]["bullets"].to_string();
    assert!(bullets.contains("15 minutes"), "{bullets}");

    // Nothing in the hinted week: the navigator widens instead of giving up.
    let widened = call(
        "navigate",
        json!({"query": "JWT expiry yesterday", "now": "2026-03-30T12:00:00Z"}),
    )
    .expect("navigate");
    let actions: Vec<&str> = widened["path"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|step| step["action"].as_str())
        .collect();
    assert!(
        actions.contains(&"broaden") || actions.contains(&"sibling"),
        "{actions:?}"
    );
}

#[test]
fn a_small_scan_budget_reads_the_segments_whose_summaries_match_best() {
    let narrow = service().clone().with_scan_budget(1);
    let body = json!({"query": "We decided JWT access token expiry", "limit": 1});
    let response = narrow
        .call(
            "webapp",
            "search",
            &serde_json::to_vec(&body).expect("json"),
        )
        .expect("search");
    let results = response["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "one segment read, one result: {response}");
    assert!(
        evidence_texts(&response)
            .iter()
            .any(|text| text.contains("15 minutes")),
        "the summary led to the right segment: {response}"
    );
}

#[test]
fn events_get_hides_segment_closes_and_pages_past_them() {
    use memory_store::{Store, StoreOptions};
    use memory_types::{Event, EventKind, Role};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let event = |id: &str, kind: EventKind, ts: u64| Event {
        event_id: id.into(),
        session_id: "s".into(),
        project_id: "p".into(),
        agent_id: None,
        timestamp_ms: ts,
        kind,
        role: Role::User,
        text: if kind == EventKind::SegmentClose {
            String::new()
        } else {
            format!("turn {id}")
        },
        metadata: std::collections::BTreeMap::new(),
    };
    let t0 = 1_790_000_000_000;
    store
        .append_events(&[
            event("a", EventKind::UserMessage, t0),
            event("b", EventKind::UserMessage, t0 + 1),
            event("close", EventKind::SegmentClose, t0 + 1),
            event("c", EventKind::UserMessage, t0 + 2),
        ])
        .expect("append");
    let service = QueryService::new(store, Tz::UTC);
    let page = |body: Value| {
        service
            .call("p", "events.get", &serde_json::to_vec(&body).expect("json"))
            .expect("events")
    };
    let ids = |page: &Value| -> Vec<String> {
        page["events"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["event_id"].as_str().map(str::to_owned))
            .collect()
    };
    let all = page(json!({"session_id": "s"}));
    assert_eq!(ids(&all), ["a", "b", "c"]);
    let first = page(json!({"session_id": "s", "limit": 2}));
    assert_eq!(ids(&first), ["a", "b"]);
    let rest = page(json!({"session_id": "s", "limit": 2, "page_token": first["next_page_token"]}));
    assert_eq!(
        ids(&rest),
        ["c"],
        "nothing lost or repeated across the hidden close"
    );
}
