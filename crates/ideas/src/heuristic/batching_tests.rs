//! Batching independence: a conversation indexed in one batch, or split anywhere into
//! several, gives the same graph.

use memory_types::{Event, EventKind};
use proptest::prelude::*;

use super::engine_tests::{at, event, index};
use super::*;
use crate::memory_graph::MemoryGraph;

const TECHS: [&str; 4] = ["Postgres", "Redis", "Kafka", "postgres"];
const THINGS: [&str; 4] = [
    "job queue",
    "session store",
    "login endpoint",
    "billing export",
];
const SETTINGS: [&str; 3] = ["refresh_token_ttl", "lock_timeout", "retention window"];

/// One templated event: (template, tech, thing, setting, number).
fn render(
    template: usize,
    tech: usize,
    thing: usize,
    setting: usize,
    number: u64,
) -> (EventKind, String) {
    let tech = TECHS[tech % TECHS.len()];
    let other = TECHS[(tech.len() + 1) % TECHS.len()];
    let thing = THINGS[thing % THINGS.len()];
    let setting = SETTINGS[setting % SETTINGS.len()];
    match template {
        0 => (
            EventKind::UserMessage,
            format!("Should we use {tech} for the {thing}?"),
        ),
        1 => (
            EventKind::UserMessage,
            format!(
                "We decided: {setting} is {number} days, {tech} for the {thing}, alerts on failure."
            ),
        ),
        2 => (
            EventKind::UserMessage,
            format!(
                "So we're changing the decision: {setting} becomes {} days.",
                number + 7
            ),
        ),
        3 => (
            EventKind::Note,
            format!("TODO: add {thing} metrics to the {tech} dashboard."),
        ),
        4 => (
            EventKind::AssistantMessage,
            format!("The {thing} metrics are implemented and merged into the {tech} dashboard."),
        ),
        5 => (
            EventKind::AssistantMessage,
            format!(
                "For the {thing} I'd use {tech}; it handles the {setting} well and we already run it."
            ),
        ),
        6 => (
            EventKind::UserMessage,
            format!("The {thing} job fails with a timeout error on {tech}."),
        ),
        7 => (
            EventKind::AssistantMessage,
            format!(
                "Found it. The fix is to raise {setting} for the {thing} job to {number} minutes."
            ),
        ),
        8 => (EventKind::UserMessage, "ok thanks".to_owned()),
        9 => (EventKind::UserMessage, "hi there".to_owned()),
        10 => (
            EventKind::UserMessage,
            format!("Let's move on to the {thing}. What does it cost?"),
        ),
        11 => (
            EventKind::ToolCall,
            format!("bash: git commit -m '{thing}: add metrics to {tech} dashboard'"),
        ),
        12 => (
            EventKind::ToolResult,
            format!("Tests: {number} passed, {number} total"),
        ),
        13 => (
            EventKind::Note,
            format!("Decision 2026-01-05: {setting} stays {number} days."),
        ),
        14 => (
            EventKind::UserMessage,
            format!(
                "We use {tech} and {other} in src/{}/mod.rs.",
                thing.replace(' ', "_")
            ),
        ),
        15 => (
            EventKind::UserMessage,
            format!("We don't use {tech} for the {thing} anymore."),
        ),
        16 => (EventKind::SessionEnd, String::new()),
        _ => (
            EventKind::AssistantMessage,
            format!(
                "Summary of decisions:\n- {setting} = {number} days\n- {tech} for the {thing}\n"
            ),
        ),
    }
}

fn conversation() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec(
        (
            0usize..18,
            0usize..4,
            0usize..4,
            0usize..3,
            1u64..30,
            0usize..3,
            1u64..90,
        ),
        1..40,
    )
    .prop_map(|steps| {
        let mut minute = 0;
        steps
            .into_iter()
            .enumerate()
            .map(
                |(index, (template, tech, thing, setting, number, session, gap))| {
                    minute += gap;
                    let (kind, text) = render(template, tech, thing, setting, number);
                    let mut event = event(
                        &format!("e{index}"),
                        &format!("s{session}"),
                        at(0, minute),
                        kind,
                        &text,
                    );
                    // The third session belongs to another project.
                    if session == 2 {
                        event.project_id = "ingest".into();
                    }
                    event
                },
            )
            .collect()
    })
}

fn indexed(events: &[Event], cuts: &[usize]) -> MemoryGraph {
    let mut graph = MemoryGraph::default();
    let mut engine = HeuristicEngine::new();
    let numbered: Vec<(u64, Event)> = events
        .iter()
        .cloned()
        .enumerate()
        .map(|(index, event)| (index as u64 + 1, event))
        .collect();
    let mut bounds: Vec<usize> = cuts.iter().map(|cut| cut % (events.len() + 1)).collect();
    bounds.push(0);
    bounds.push(events.len());
    bounds.sort_unstable();
    bounds.dedup();
    for window in bounds.windows(2) {
        if window[0] < window[1] {
            index(&mut graph, &mut engine, &numbered[window[0]..window[1]]);
        }
    }
    graph
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batch_splits_give_identical_graphs(
        events in conversation(),
        cuts in prop::collection::vec(0usize..64, 0..6),
    ) {
        let whole = indexed(&events, &[]);
        let split = indexed(&events, &cuts);
        prop_assert_eq!(&whole, &split);
        let one_by_one: Vec<usize> = (1..events.len()).collect();
        prop_assert_eq!(&whole, &indexed(&events, &one_by_one));
    }
}

#[test]
fn the_templates_exercise_every_kind_of_change() {
    let events: Vec<Event> = [
        (0, 0, 0, 0, 14, 0),
        (1, 0, 0, 0, 14, 0),
        (3, 1, 2, 0, 14, 1),
        (6, 2, 1, 1, 3, 0),
        (7, 2, 1, 1, 3, 0),
        (10, 0, 3, 0, 1, 0),
        (2, 0, 0, 0, 14, 2),
        (11, 1, 2, 0, 1, 1),
        (15, 0, 0, 0, 1, 2),
    ]
    .into_iter()
    .enumerate()
    .map(
        |(index, (template, tech, thing, setting, number, session))| {
            let (kind, text) = render(template, tech, thing, setting, number);
            event(
                &format!("e{index}"),
                &format!("s{session}"),
                at(0, index as u64 * 5),
                kind,
                &text,
            )
        },
    )
    .collect();
    let graph = indexed(&events, &[]);
    assert!(
        graph.ideas().any(|idea| idea.is_superseded()),
        "a supersession"
    );
    assert!(
        graph
            .ideas()
            .any(|idea| idea.intent == Intent::Question && idea.resolution.is_some())
    );
    assert!(
        graph
            .ideas()
            .any(|idea| idea.intent == Intent::Todo && idea.resolution.is_some())
    );
    assert!(graph.spans().count() >= 3);
    assert_eq!(graph, indexed(&events, &[3, 5, 7]));
}
