//! The whole sample (`sample/conversations.jsonl`), one batch per session.

use memory_types::{Event, EventKind, Role};

use super::engine_tests::{BASE_MS, index_batches};
use super::*;

/// Parses `2026-01-05T09:14:06Z` (UTC, whole seconds) to epoch ms.
fn parse_utc(timestamp: &str) -> u64 {
    let number =
        |range: std::ops::Range<usize>| -> i64 { timestamp[range].parse().expect("digits") };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let (hour, minute, second) = (number(11..13), number(14..16), number(17..19));
    // Days from civil (Howard Hinnant).
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(((days * 24 + hour) * 60 + minute) * 60 + second).expect("after 1970") * 1_000
}

fn sample_events() -> Vec<Event> {
    include_str!("../../../../sample/conversations.jsonl")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("json");
            let field = |name: &str| value[name].as_str().unwrap_or_default().to_owned();
            let kind = EventKind::from_wire(&field("kind")).expect("kind");
            let metadata = value["metadata"]
                .as_object()
                .map(|object| {
                    object
                        .iter()
                        .map(|(key, value)| {
                            (key.clone(), value.as_str().unwrap_or_default().to_owned())
                        })
                        .collect()
                })
                .unwrap_or_default();
            Event {
                event_id: field("event_id"),
                session_id: field("session_id"),
                project_id: field("project_id"),
                agent_id: Some(field("agent_id")),
                timestamp_ms: parse_utc(&field("timestamp")),
                kind,
                role: Role::from_wire(&field("role")).unwrap_or_else(|| kind.default_role()),
                text: field("text"),
                metadata,
            }
        })
        .collect()
}

#[test]
fn timestamps_parse() {
    assert_eq!(parse_utc("2026-01-05T00:00:00Z"), BASE_MS);
    assert_eq!(parse_utc("1970-01-01T00:00:01Z"), 1_000);
}

#[test]
fn the_sample_gives_a_sane_graph() {
    let events = sample_events();
    let num_events = events.len();
    // One batch per session, in the order sessions appear (backfill mode).
    let mut sessions: Vec<Vec<Event>> = Vec::new();
    for event in events {
        match sessions.last_mut() {
            Some(session) if session[0].session_id == event.session_id => session.push(event),
            _ => sessions.push(vec![event]),
        }
    }
    let (graph, _) = index_batches(sessions);
    let num_ideas = graph.ideas().count();
    assert!(
        (40..=num_events / 2).contains(&num_ideas),
        "{num_ideas} ideas from {num_events} events"
    );
    let count = |intent: Intent| graph.ideas().filter(|idea| idea.intent == intent).count();
    for intent in [
        Intent::Decision,
        Intent::Question,
        Intent::Problem,
        Intent::Todo,
        Intent::Conclusion,
    ] {
        assert!(count(intent) > 0, "no {intent} idea");
    }
    assert!(
        count(Intent::Context) * 5 <= num_ideas,
        "context is sparing"
    );
    // The 14-day refresh TTL of January is superseded in February.
    let superseded: Vec<&Idea> = graph.ideas().filter(|idea| idea.is_superseded()).collect();
    assert!(
        superseded
            .iter()
            .any(|idea| idea.content.contains("refresh_token_ttl")
                && idea.content.contains("14 days")),
        "{:#?}",
        superseded
            .iter()
            .map(|idea| &idea.content)
            .collect::<Vec<_>>()
    );
    // Most questions get answered; every session has a span ending at its last event.
    let questions = count(Intent::Question);
    let answered = graph
        .ideas()
        .filter(|idea| idea.intent == Intent::Question && idea.resolution.is_some())
        .count();
    assert!(
        answered * 2 >= questions,
        "{answered} of {questions} questions answered"
    );
    assert_eq!(
        graph
            .spans()
            .map(|span| span.session_id.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        15
    );
    assert!(graph.entities().count() > 20);
}
