use memory_store::{DerivedEntry, FeedItem, OutboxSeq, Store, StoreOptions};
use memory_types::EventKind;

use super::{DocChange, batch_doc_changes};
use crate::grip_extractor::GRIPS_EXTRACTED;
use crate::ideas::IDEA_WRITTEN;
use crate::rollup_builder::{TOC_CLEARED, TOC_NODE_WRITTEN};
use crate::testsuite::event;

fn derived(seq: u64, kind: &str, project_id: &str, key: &str) -> FeedItem {
    FeedItem::Derived {
        seq: OutboxSeq(seq),
        entry: DerivedEntry {
            kind: kind.to_owned(),
            project_id: project_id.to_owned(),
            key: key.to_owned(),
        },
    }
}

/// A change as text, to compare lists of them.
fn described(change: &DocChange) -> String {
    match change {
        DocChange::Upsert(doc) => format!("upsert {} {}", doc.project_id, doc.doc_id),
        DocChange::Delete {
            project_id, doc_id, ..
        } => format!("delete {project_id} {doc_id}"),
        DocChange::DeleteMatching(selector) => format!("delete matching {selector:?}"),
    }
}

fn changes_of(items: &[FeedItem]) -> Vec<String> {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
    batch_doc_changes(&store, items, true)
        .expect("changes")
        .iter()
        .map(described)
        .collect()
}

/// Entries that stand for a record as stored now are read once per batch, at the last
/// of them; events and the entries of other projects are all kept, in feed order.
/// (The nodes and the idea named here are not stored, so each stands for a removal.)
#[test]
fn a_record_named_again_later_in_the_batch_is_read_only_at_its_last_entry() {
    const DAY: &str = "toc:day:2026-01-30";
    const WEEK: &str = "toc:week:2026-W05";
    let items = vec![
        derived(1, TOC_NODE_WRITTEN, "p", DAY),
        derived(2, TOC_NODE_WRITTEN, "p", WEEK),
        FeedItem::Event {
            seq: OutboxSeq(3),
            event: event(
                "e7",
                "s2",
                1_769_731_400_000,
                EventKind::AssistantMessage,
                "the build cache misses after the lockfile bump",
            ),
        },
        derived(4, TOC_NODE_WRITTEN, "q", DAY),
        derived(5, IDEA_WRITTEN, "p", "idea-1"),
        derived(6, TOC_NODE_WRITTEN, "p", DAY),
        derived(7, IDEA_WRITTEN, "p", "idea-1"),
        derived(8, TOC_NODE_WRITTEN, "p", DAY),
        derived(9, GRIPS_EXTRACTED, "p", "segment-without-grips"),
    ];
    assert_eq!(
        changes_of(&items),
        [
            format!("delete p {WEEK}"),
            "upsert p e7".to_owned(),
            format!("delete q {DAY}"),
            "delete p idea-1".to_owned(),
            format!("delete p {DAY}"),
        ]
    );
}

/// A clear between two entries of one node keeps its place: what the second entry
/// writes comes after it.
#[test]
fn a_clear_between_two_entries_of_a_node_stays_before_the_second() {
    const DAY: &str = "toc:day:2026-01-30";
    let changes = changes_of(&[
        derived(1, TOC_NODE_WRITTEN, "p", DAY),
        derived(2, TOC_CLEARED, "", ""),
        derived(3, TOC_NODE_WRITTEN, "p", DAY),
    ]);
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert!(changes[0].starts_with("delete matching"), "{changes:?}");
    assert!(changes[1].starts_with("delete matching"), "{changes:?}");
    assert_eq!(changes[2], format!("delete p {DAY}"));
}
