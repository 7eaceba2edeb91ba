//! Cluster mode's model summaries from the log (`toc_summary` events): a node uses the
//! one of its version whichever reaches the rollup builder first, a summary that is out
//! of bounds or malformed changes nothing, and a rebuild keeps them.

use std::collections::BTreeMap;

use memory_store::StoreOptions;
use memory_summarize::Summary;
use memory_toc::{TocBullet, TocLevel, TocNode, TocNodeId};
use memory_types::{Event, EventKind, TOC_NODE, TOC_NODE_VERSION, TOC_SUMMARY_SESSION};

use super::*;
use crate::testsuite::{TocProjections, event};

const TS: u64 = 1_769_764_500_000; // 2026-01-30T09:15:00Z

fn conversation() -> Vec<Event> {
    vec![
        event(
            "c1",
            "s",
            TS,
            EventKind::UserMessage,
            "Why does the tantivy merge stall on the writer lock?",
        ),
        event(
            "c2",
            "s",
            TS + 1_000,
            EventKind::AssistantMessage,
            "The merge policy waits on the writer lock; we decided to commit every 5 seconds.",
        ),
        event(
            "c3",
            "s",
            TS + 2_000,
            EventKind::UserMessage,
            "Good, ship the 5 second commit interval.",
        ),
        event("c4", "s", TS + 3_000, EventKind::SessionEnd, ""),
    ]
}

fn toc_summary(id: &str, node: &TocNode, version: u64, text: &str) -> Event {
    let mut summary = event(
        id,
        TOC_SUMMARY_SESSION,
        node.end_ms,
        EventKind::TocSummary,
        text,
    );
    summary.metadata = BTreeMap::from([
        (TOC_NODE.to_owned(), node.node_id.to_string()),
        (TOC_NODE_VERSION.to_owned(), version.to_string()),
    ]);
    summary
}

fn model_summary(title: &str, grips: Vec<memory_toc::GripId>) -> Summary {
    Summary {
        title: title.to_owned(),
        summary: Some("The writer lock stalled merges; commits every 5 seconds.".to_owned()),
        bullets: vec![TocBullet {
            text: "Chose a 5 second commit interval".to_owned(),
            grip_ids: grips,
        }],
        keywords: vec!["tantivy".to_owned(), "commit interval".to_owned()],
    }
}

fn open(dir: &std::path::Path) -> (Store, TocProjections) {
    let store = Store::open(dir, &StoreOptions::default()).expect("store");
    let toc = TocProjections::open(&store).expect("open");
    (store, toc)
}

fn apply(store: &Store, toc: &mut TocProjections, events: &[Event]) {
    store.append_events(events).expect("append");
    toc.catch_up(store, &mut []).expect("apply");
}

fn node_at(store: &Store, level: TocLevel) -> TocNode {
    RollupBuilder::all_nodes(store)
        .expect("nodes")
        .into_values()
        .find(|node| node.level == level)
        .expect("node of the level")
}

/// The summaries a lease holder would publish for the closed segment and its day: the
/// segment's cites its first grip, the day's the same grip (its child's bullet).
fn summaries_for(store: &Store) -> (Event, Event) {
    let segment = node_at(store, TocLevel::Segment);
    let grips = GripExtractor::segment_grips(store, &segment.node_id.to_string()).expect("grips");
    let grip = grips[0].grip_id;
    let for_segment = toc_summary(
        "sum-segment",
        &segment,
        segment.version,
        &serde_json::to_string(&model_summary(
            "Model: merges stall on the writer lock",
            vec![grip],
        ))
        .expect("json"),
    );
    let day = node_at(store, TocLevel::Day);
    let for_day = toc_summary(
        "sum-day",
        &day,
        day.version,
        &serde_json::to_string(&model_summary("Model: a day of tantivy tuning", vec![grip]))
            .expect("json"),
    );
    (for_segment, for_day)
}

#[test]
fn a_model_summary_is_used_whichever_reaches_the_builder_first_and_a_rebuild_keeps_it() {
    // Node first: the summaries arrive after the segment closed.
    let node_first = tempfile::tempdir().expect("tempdir");
    let (store, mut toc) = open(node_first.path());
    apply(&store, &mut toc, &conversation());
    let awaiting: Vec<TocLevel> = RollupBuilder::awaiting_model_summary(&store)
        .expect("awaiting")
        .iter()
        .map(|node| node.level)
        .collect();
    assert_eq!(
        awaiting,
        [
            TocLevel::Segment,
            TocLevel::Day,
            TocLevel::Week,
            TocLevel::Month,
            TocLevel::Year
        ],
        "a closed segment and its parents, bottom up"
    );
    let extractive = node_at(&store, TocLevel::Segment);
    let (for_segment, for_day) = summaries_for(&store);
    apply(&store, &mut toc, std::slice::from_ref(&for_segment));
    let segment = node_at(&store, TocLevel::Segment);
    assert_eq!(segment.title, "Model: merges stall on the writer lock");
    assert_eq!(
        (segment.version, segment.num_events),
        (extractive.version, extractive.num_events)
    );
    apply(&store, &mut toc, std::slice::from_ref(&for_day));
    assert_eq!(
        node_at(&store, TocLevel::Day).title,
        "Model: a day of tantivy tuning"
    );
    let awaiting = RollupBuilder::awaiting_model_summary(&store).expect("awaiting");
    assert_eq!(
        awaiting.iter().map(|node| node.level).collect::<Vec<_>>(),
        [TocLevel::Week, TocLevel::Month, TocLevel::Year]
    );
    let incremental = RollupBuilder::all_nodes(&store).expect("nodes");

    // Summaries first: in one append with the conversation, the builder reads them
    // before the segment closes (the close comes later, from the grip extractor).
    let summaries_first = tempfile::tempdir().expect("tempdir");
    let (other, mut other_toc) = open(summaries_first.path());
    let mut all = conversation();
    all.extend([for_segment, for_day]);
    apply(&other, &mut other_toc, &all);
    assert_eq!(
        RollupBuilder::all_nodes(&other).expect("nodes"),
        incremental
    );

    // A rebuild starts the builder at the head, past the summaries: it keeps them.
    toc.rebuild(&store).expect("rebuild");
    assert_eq!(
        RollupBuilder::all_nodes(&store).expect("nodes"),
        incremental
    );
}

#[test]
fn a_model_summary_out_of_bounds_malformed_or_for_another_version_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, mut toc) = open(dir.path());
    apply(&store, &mut toc, &conversation());
    let before = RollupBuilder::all_nodes(&store).expect("nodes");
    let segment = node_at(&store, TocLevel::Segment);
    let foreign = memory_toc::GripId::derive("proj", TS, "elsewhere", 0);
    let json = |summary: &Summary| serde_json::to_string(summary).expect("json");
    let too_long = Summary {
        title: "t".repeat(500),
        ..model_summary("x", Vec::new())
    };
    let bad = [
        toc_summary(
            "foreign-grip",
            &segment,
            segment.version,
            &json(&model_summary("Invented", vec![foreign])),
        ),
        toc_summary("too-long", &segment, segment.version, &json(&too_long)),
        toc_summary("not-json", &segment, segment.version, "the model rambled"),
        toc_summary(
            "old-version",
            &segment,
            segment.version - 1,
            &json(&model_summary("Stale", Vec::new())),
        ),
    ];
    apply(&store, &mut toc, &bad);
    assert_eq!(RollupBuilder::all_nodes(&store).expect("nodes"), before);
    let mut no_node = toc_summary(
        "no-node",
        &segment,
        1,
        &json(&model_summary("Nowhere", Vec::new())),
    );
    no_node
        .metadata
        .insert(TOC_NODE.to_owned(), "not a node id".to_owned());
    apply(&store, &mut toc, &[no_node]);
    assert_eq!(RollupBuilder::all_nodes(&store).expect("nodes"), before);
    let day: TocNodeId = node_at(&store, TocLevel::Day).node_id;
    assert!(
        RollupBuilder::node(&store, "p", &day)
            .expect("read")
            .is_some()
    );
}

/// Two summaries of one node version (a new lease holder asked again before the first
/// reached its store): the first that passes the check is shown everywhere — on a
/// replica that had the node first, on one that read both before the node closed, and
/// after a rebuild — whether the other passes or not.
#[test]
fn of_two_summaries_of_one_version_the_first_that_passes_is_shown_everywhere() {
    let first_dir = tempfile::tempdir().expect("tempdir");
    let (store, mut toc) = open(first_dir.path());
    apply(&store, &mut toc, &conversation());
    let segment = node_at(&store, TocLevel::Segment);
    let json = |summary: &Summary| serde_json::to_string(summary).expect("json");
    let too_long = Summary {
        title: "t".repeat(500),
        ..model_summary("x", Vec::new())
    };
    for (first, second, shown) in [
        (
            model_summary("Model: first", Vec::new()),
            too_long.clone(),
            "Model: first",
        ),
        (
            too_long.clone(),
            model_summary("Model: second", Vec::new()),
            "Model: second",
        ),
        (
            model_summary("Model: first", Vec::new()),
            model_summary("Model: second", Vec::new()),
            "Model: first",
        ),
    ] {
        let summaries = [
            toc_summary("sum-1", &segment, segment.version, &json(&first)),
            toc_summary("sum-2", &segment, segment.version, &json(&second)),
        ];
        // Node first.
        let node_first = tempfile::tempdir().expect("tempdir");
        let (a, mut toc_a) = open(node_first.path());
        apply(&a, &mut toc_a, &conversation());
        apply(&a, &mut toc_a, &summaries[..1]);
        apply(&a, &mut toc_a, &summaries[1..]);
        assert_eq!(node_at(&a, TocLevel::Segment).title, shown);
        // Summaries first, in one append with the conversation.
        let summaries_first = tempfile::tempdir().expect("tempdir");
        let (b, mut toc_b) = open(summaries_first.path());
        let mut all = conversation();
        all.extend(summaries.iter().cloned());
        apply(&b, &mut toc_b, &all);
        let nodes = RollupBuilder::all_nodes(&a).expect("nodes");
        assert_eq!(
            RollupBuilder::all_nodes(&b).expect("nodes"),
            nodes,
            "{shown}"
        );
        // And a rebuild.
        toc_a.rebuild(&a).expect("rebuild");
        assert_eq!(
            RollupBuilder::all_nodes(&a).expect("nodes"),
            nodes,
            "{shown}"
        );
        // A shown summary takes the segment off the list the holder asks for.
        assert!(
            RollupBuilder::awaiting_model_summary(&a)
                .expect("awaiting")
                .iter()
                .all(|node| node.level != TocLevel::Segment)
        );
    }
    // Only a rejected one: the segment keeps its extractive summary and is asked for
    // again.
    apply(
        &store,
        &mut toc,
        &[toc_summary(
            "sum-bad",
            &segment,
            segment.version,
            &json(&too_long),
        )],
    );
    assert_eq!(node_at(&store, TocLevel::Segment), segment);
    assert!(
        RollupBuilder::awaiting_model_summary(&store)
            .expect("awaiting")
            .iter()
            .any(|node| node.level == TocLevel::Segment)
    );
}

/// A summary written to any other session is not one the lease holder wrote: ignored.
#[test]
fn a_toc_summary_outside_its_session_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, mut toc) = open(dir.path());
    apply(&store, &mut toc, &conversation());
    let segment = node_at(&store, TocLevel::Segment);
    let mut elsewhere = toc_summary(
        "sum-elsewhere",
        &segment,
        segment.version,
        &serde_json::to_string(&model_summary("Model: elsewhere", Vec::new())).expect("json"),
    );
    elsewhere.session_id = "s".to_owned();
    apply(&store, &mut toc, &[elsewhere]);
    assert_eq!(node_at(&store, TocLevel::Segment), segment);
}

/// `events` as project `project_id`'s.
fn in_project(events: Vec<Event>, project_id: &str) -> Vec<Event> {
    events
        .into_iter()
        .map(|event| Event {
            project_id: project_id.to_owned(),
            ..event
        })
        .collect()
}

/// Summaries a lease holder published before TOC format 2 name the segment by its
/// format-1 id and cite format-1 grip ids: the nodes they were written for show them
/// (incrementally, on a rebuild, and the lease holder does not ask again), and another
/// project whose segment had the very same format-1 ids shows none of them.
#[test]
fn format_1_summaries_attach_to_their_own_projects_nodes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, mut toc) = open(dir.path());
    let mut both = conversation();
    both.extend(in_project(conversation(), "q"));
    apply(&store, &mut toc, &both);
    let nodes = RollupBuilder::all_nodes(&store).expect("nodes");
    let node_of = |project: &str, level: TocLevel| {
        nodes
            .values()
            .find(|node| node.project_id == project && node.level == level)
            .cloned()
            .expect("node")
    };
    let segment = node_of("p", TocLevel::Segment);
    let other_segment = node_of("q", TocLevel::Segment);
    assert_ne!(segment.node_id, other_segment.node_id);
    let TocNodeId::Segment { day, .. } = segment.node_id else {
        panic!("a segment id");
    };
    let legacy_segment = TocNode {
        node_id: TocNodeId::legacy_segment_for(day, TS, "c1"),
        ..segment.clone()
    };
    let grip = GripExtractor::segment_grips(&store, &segment.node_id.to_string())
        .expect("grips")
        .remove(0);
    let text = conversation()
        .into_iter()
        .find(|event| event.event_id == grip.event_id_start)
        .expect("the grip's event")
        .text;
    let offset = text.find(&grip.excerpt).expect("a verbatim excerpt");
    let legacy_grip =
        memory_toc::GripId::legacy_derive(grip.timestamp_ms, &grip.event_id_start, offset);
    let for_segment = toc_summary(
        "legacy-segment",
        &legacy_segment,
        segment.version,
        &serde_json::to_string(&model_summary(
            "Model (format 1): segment",
            vec![legacy_grip],
        ))
        .expect("json"),
    );
    let day_node = node_of("p", TocLevel::Day);
    let for_day = toc_summary(
        "legacy-day",
        &day_node,
        day_node.version,
        &serde_json::to_string(&model_summary("Model (format 1): day", vec![legacy_grip]))
            .expect("json"),
    );
    apply(&store, &mut toc, &[for_segment, for_day]);
    let shown = |store: &Store| {
        let nodes = RollupBuilder::all_nodes(store).expect("nodes");
        let segment = nodes
            .get(&("p".to_owned(), segment.node_id))
            .expect("segment")
            .clone();
        let day = nodes
            .get(&("p".to_owned(), day_node.node_id))
            .expect("day")
            .clone();
        let other = nodes
            .get(&("q".to_owned(), other_segment.node_id))
            .expect("other")
            .clone();
        (segment, day, other)
    };
    let (segment_now, day_now, other_now) = shown(&store);
    assert_eq!(segment_now.title, "Model (format 1): segment");
    assert_eq!(
        segment_now.bullets[0].grip_ids,
        [grip.grip_id],
        "translated"
    );
    assert_eq!(day_now.title, "Model (format 1): day");
    assert_eq!(
        other_now, other_segment,
        "project q's segment keeps its own summary"
    );
    let awaiting: Vec<(String, TocLevel)> = RollupBuilder::awaiting_model_summary(&store)
        .expect("awaiting")
        .into_iter()
        .map(|node| (node.project_id, node.level))
        .collect();
    assert!(
        !awaiting.contains(&("p".to_owned(), TocLevel::Segment))
            && !awaiting.contains(&("p".to_owned(), TocLevel::Day))
            && awaiting.contains(&("q".to_owned(), TocLevel::Segment)),
        "{awaiting:?}"
    );
    let incremental = RollupBuilder::all_nodes(&store).expect("nodes");
    toc.rebuild(&store).expect("rebuild");
    assert_eq!(
        RollupBuilder::all_nodes(&store).expect("nodes"),
        incremental
    );
}
