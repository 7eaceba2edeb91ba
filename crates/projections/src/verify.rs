//! What `memory-daemon admin verify` compares: the projections a daemon built
//! incrementally (batch by batch, across restarts and crashes) against the same
//! projections rebuilt from its log, and what each accelerator index holds against the
//! documents the log implies. The daemon runs the rebuild; this module captures,
//! compares and explains, and prints nothing.
//!
//! [`ProjectionDump::capture`] reads every record of the session catalog, the segmenter
//! (closed and open segments, lease fences), the grip extractor (grips, each segment's
//! grip list, its document-frequency table), the rollup builder (nodes, the membership
//! index, its document-frequency table, the log's model summaries) and the ideas graph,
//! each rendered as text under its project and key. [`compare_dumps`] compares two dumps
//! part by part; [`compare_documents`] an index's live documents with
//! [`crate::implied_documents`].
//!
//! What is left out, because it is not a function of the log:
//! - the wall-clock time at which an open segment's last event was applied;
//! - an idea's record time (`recorded_at`, [`crate::IdeaGraph::dump`]) and the ideas
//!   graph's proposal chains (they hold this store's log positions);
//! - with `mask_summaries` (a model writes the TOC's summaries in single mode): every
//!   node's title, summary, bullets and keywords — the structure stays compared;
//! - in single mode, every part of the TOC of a project in which a segment closed on
//!   the wall clock (close reason `idle`): the log does not say where the silence fell,
//!   so a rebuild cannot know where that segment ended, and the document-frequency
//!   tables count segments in close order, so every later grip and keyword of the
//!   project may differ too. [`ProjectionDump::idle_closed`] names those projects, the
//!   caller says whether to skip them (cluster mode puts idle closes in the log).

use std::collections::{BTreeMap, BTreeSet};

use memory_search::{DocType, Hit, SearchDoc};
use memory_store::{Store, StoreError};
use memory_toc::TocNode;

use crate::consumer::ConsumerError;
use crate::grip_extractor::{GripExtractor, SEGMENT_GRIPS_KEYSPACE, TERM_DF_KEYSPACE};
use crate::ideas::IdeaGraph;
use crate::lifecycle::PruneReport;
use crate::rollup_builder::{
    CHILDREN_KEYSPACE, MODEL_SUMMARIES_KEYSPACE, RollupBuilder,
    TERM_DF_KEYSPACE as TOC_TERM_DF_KEYSPACE,
};
use crate::segmenter::{CloseReason, Segmenter};
use crate::session_catalog::SessionCatalog;

/// The parts of a dump that make up a project's time table of contents: what a
/// wall-clock idle close makes impossible to compare.
pub const TOC_PARTS: [&str; 10] = [
    "segments",
    "open_segments",
    "segment_fences",
    "grips",
    "segment_grips",
    "grip_term_df",
    "toc_nodes",
    "toc_children",
    "toc_term_df",
    "toc_model_summaries",
];

/// The part holding the ideas graph.
pub const IDEAS_PART: &str = "ideas";

/// How to capture a dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpOptions {
    /// Blank each node's title, summary, bullets and keywords: a model wrote them, and
    /// two answers of a model differ.
    pub mask_summaries: bool,
    /// Capture the ideas graph.
    pub ideas: bool,
}

/// A record's place: its project and its key within the part, as text.
pub type RecordKey = (String, String);

/// Every record of the projections of one store, rendered as text, by part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectionDump {
    parts: BTreeMap<&'static str, BTreeMap<RecordKey, String>>,
    idle_closed: BTreeMap<String, usize>,
}

/// Bytes as text: UTF-8 with NUL shown as ` | `, anything else escaped.
fn render_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.replace('\0', " | "),
        Err(_) => bytes.escape_ascii().to_string(),
    }
}

/// The project of a project-scoped key (`project \0 …`) and the rest of the key.
fn split_project(key: &[u8]) -> (String, String) {
    match key.iter().position(|byte| *byte == 0) {
        Some(at) => (render_bytes(&key[..at]), render_bytes(&key[at + 1..])),
        None => (render_bytes(key), String::new()),
    }
}

fn raw_records(
    store: &Store,
    keyspace: &str,
) -> Result<BTreeMap<RecordKey, String>, ConsumerError> {
    let keyspace = store.projection_keyspace(keyspace)?;
    let mut records = BTreeMap::new();
    for guard in keyspace.iter() {
        let (key, value) = guard.into_inner().map_err(StoreError::from)?;
        records.insert(split_project(&key), format!("{:?}", value.as_ref()));
    }
    Ok(records)
}

fn masked(node: &TocNode) -> TocNode {
    TocNode {
        title: String::new(),
        summary: None,
        bullets: Vec::new(),
        keywords: Vec::new(),
        ..node.clone()
    }
}

impl ProjectionDump {
    /// Reads every record of `store`'s projections.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn capture(store: &Store, options: DumpOptions) -> Result<ProjectionDump, ConsumerError> {
        let mut dump = ProjectionDump::default();
        let projects: Vec<String> = store.status()?.events_by_project.into_keys().collect();

        let mut catalog = BTreeMap::new();
        for project in &projects {
            for session in SessionCatalog::sessions(store, project)? {
                catalog.insert(
                    (project.clone(), session.session_id.clone()),
                    format!("{session:?}"),
                );
            }
        }
        dump.parts.insert("catalog", catalog);

        let mut segments = BTreeMap::new();
        let mut segment_projects = BTreeMap::new();
        for segment in Segmenter::all_segments(store)? {
            if segment.close_reason == CloseReason::Idle {
                *dump
                    .idle_closed
                    .entry(segment.project_id.clone())
                    .or_default() += 1;
            }
            segment_projects.insert(segment.segment_id.clone(), segment.project_id.clone());
            segments.insert(
                (segment.project_id.clone(), segment.segment_id.clone()),
                format!("{segment:?}"),
            );
        }
        dump.parts.insert("segments", segments);
        let open = Segmenter::open_records(store)?
            .into_iter()
            .map(|(project, session, record)| ((project, session), record))
            .collect();
        dump.parts.insert("open_segments", open);
        let fences = Segmenter::fences(store)?
            .into_iter()
            .map(|(project, group, record)| ((project, group), record))
            .collect();
        dump.parts.insert("segment_fences", fences);

        let mut grips = BTreeMap::new();
        for grip in GripExtractor::all_grips(store) {
            let grip = grip?;
            grips.insert(
                (grip.project_id.clone(), grip.grip_id.to_string()),
                format!("{grip:?}"),
            );
        }
        dump.parts.insert("grips", grips);
        // Keyed by segment id alone: the segment record names the project.
        let segment_grips = raw_records(store, SEGMENT_GRIPS_KEYSPACE)?
            .into_iter()
            .map(|((segment_id, _), value)| {
                let project = segment_projects
                    .get(&segment_id)
                    .cloned()
                    .unwrap_or_default();
                ((project, segment_id), value)
            })
            .collect();
        dump.parts.insert("segment_grips", segment_grips);
        dump.parts
            .insert("grip_term_df", raw_records(store, TERM_DF_KEYSPACE)?);

        let mut nodes = BTreeMap::new();
        for ((project, node_id), node) in RollupBuilder::all_nodes(store)? {
            let node = if options.mask_summaries {
                masked(&node)
            } else {
                node
            };
            nodes.insert((project, node_id.to_string()), format!("{node:?}"));
        }
        dump.parts.insert("toc_nodes", nodes);
        dump.parts
            .insert("toc_children", raw_records(store, CHILDREN_KEYSPACE)?);
        dump.parts
            .insert("toc_term_df", raw_records(store, TOC_TERM_DF_KEYSPACE)?);
        dump.parts.insert(
            "toc_model_summaries",
            raw_records(store, MODEL_SUMMARIES_KEYSPACE)?,
        );

        if options.ideas {
            let graph = IdeaGraph::open(store)?;
            let ideas = graph
                .dump_rendered()
                .map_err(|err| ConsumerError::Internal(err.to_string()))?
                .into_iter()
                .map(|(project, key, value)| ((project, key), value))
                .collect();
            dump.parts.insert(IDEAS_PART, ideas);
        }
        Ok(dump)
    }

    /// Projects with segments closed on the wall clock (close reason `idle`), and how
    /// many.
    #[must_use]
    pub fn idle_closed(&self) -> &BTreeMap<String, usize> {
        &self.idle_closed
    }

    /// The records of one part (empty when the part was not captured).
    #[must_use]
    pub fn part(&self, part: &str) -> Option<&BTreeMap<RecordKey, String>> {
        self.parts.get(part)
    }

    /// Mutable records of one part, for tests that damage a dump.
    #[cfg(test)]
    pub(crate) fn part_mut(&mut self, part: &str) -> Option<&mut BTreeMap<RecordKey, String>> {
        self.parts.get_mut(part)
    }
}

/// One record that differs between the two sides.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RecordDifference {
    /// Its project.
    pub project: String,
    /// Its key within the part.
    pub key: String,
    /// The incrementally built record, `None` when only the rebuild has it.
    pub incremental: Option<String>,
    /// The rebuilt record, `None` when only the incremental state has it.
    pub rebuilt: Option<String>,
}

/// How one part compares.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PartComparison {
    /// The part (`catalog`, `segments`, `toc_nodes`, `ideas`, …).
    pub part: String,
    /// Records compared on the incremental side.
    pub num_incremental: usize,
    /// Records compared on the rebuilt side.
    pub num_rebuilt: usize,
    /// Records only the incremental state holds.
    pub only_incremental: usize,
    /// Records only the rebuild holds.
    pub only_rebuilt: usize,
    /// Records both hold with different values.
    pub differing: usize,
    /// Records of skipped projects left out (both sides).
    pub skipped: usize,
    /// The first few differences, in key order.
    pub examples: Vec<RecordDifference>,
}

impl PartComparison {
    /// Whether the two sides hold the same records.
    #[must_use]
    pub fn is_equal(&self) -> bool {
        self.only_incremental == 0 && self.only_rebuilt == 0 && self.differing == 0
    }
}

/// Compares two dumps part by part (the parts of either). The records of
/// `skip_toc_projects` are left out of the [`TOC_PARTS`] and counted as skipped;
/// `max_examples` differences are kept per part.
#[must_use]
pub fn compare_dumps(
    incremental: &ProjectionDump,
    rebuilt: &ProjectionDump,
    skip_toc_projects: &BTreeSet<String>,
    max_examples: usize,
) -> Vec<PartComparison> {
    let names: BTreeSet<&'static str> = incremental
        .parts
        .keys()
        .chain(rebuilt.parts.keys())
        .copied()
        .collect();
    let empty = BTreeMap::new();
    let mut comparisons = Vec::new();
    for name in names {
        let skips = TOC_PARTS.contains(&name);
        let left = incremental.parts.get(name).unwrap_or(&empty);
        let right = rebuilt.parts.get(name).unwrap_or(&empty);
        let mut comparison = PartComparison {
            part: name.to_owned(),
            ..PartComparison::default()
        };
        let keys: BTreeSet<&RecordKey> = left.keys().chain(right.keys()).collect();
        for key in keys {
            if skips && skip_toc_projects.contains(&key.0) {
                comparison.skipped += 1;
                continue;
            }
            let (a, b) = (left.get(key), right.get(key));
            comparison.num_incremental += usize::from(a.is_some());
            comparison.num_rebuilt += usize::from(b.is_some());
            match (a, b) {
                (Some(a), Some(b)) if a == b => continue,
                (Some(_), Some(_)) => comparison.differing += 1,
                (Some(_), None) => comparison.only_incremental += 1,
                (None, Some(_)) => comparison.only_rebuilt += 1,
                (None, None) => continue,
            }
            if comparison.examples.len() < max_examples {
                comparison.examples.push(RecordDifference {
                    project: key.0.clone(),
                    key: key.1.clone(),
                    incremental: a.cloned(),
                    rebuilt: b.cloned(),
                });
            }
        }
        comparisons.push(comparison);
    }
    comparisons
}

/// An index document's identity: project, type, id.
pub type DocId = (String, DocType, String);

/// What an index stores of a document besides its key, when it stores anything (the
/// BM25 index does; the vector index keeps only keys and vectors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDoc {
    /// The session, if any.
    pub session_id: Option<String>,
    /// The TOC level, for nodes.
    pub level: Option<String>,
    /// The searchable text.
    pub text: String,
    /// The record's time.
    pub timestamp_ms: u64,
}

impl StoredDoc {
    fn of_search_doc(doc: &SearchDoc) -> Self {
        StoredDoc {
            session_id: doc.session_id.clone(),
            level: doc.level.clone(),
            text: doc.text.clone(),
            timestamp_ms: doc.timestamp_ms,
        }
    }

    /// What the BM25 index stores of a hit.
    #[must_use]
    pub fn of_hit(hit: &Hit) -> Self {
        StoredDoc {
            session_id: hit.session_id.clone(),
            level: hit.level.clone(),
            text: hit.text.clone(),
            timestamp_ms: hit.timestamp_ms,
        }
    }
}

/// What an index holds: every copy of each key (one, unless an upsert lost its delete),
/// with its stored content when the index stores any.
pub type HeldDocuments = BTreeMap<DocId, Vec<Option<StoredDoc>>>;

/// How one index's documents compare with the documents the log implies.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DocumentComparison {
    /// Which index (`bm25`, `vector`).
    pub index: String,
    /// Documents the log implies (compared ones).
    pub num_expected: usize,
    /// Documents the index holds (compared ones).
    pub num_actual: usize,
    /// Implied documents the index lacks.
    pub missing: usize,
    /// Documents the index holds that the log does not imply (stale: a node or idea
    /// that is gone, a grip of a segment rebuilt differently).
    pub extra: usize,
    /// Documents whose stored content differs from what the log implies.
    pub stale: usize,
    /// Copies beyond the first of a document the index holds more than once (an upsert
    /// whose delete was lost: docs/benchmarks.md, "Crash soak").
    pub doubled: usize,
    /// Implied documents the index lacks that its last prune may have removed: their
    /// kind was pruned and they are older than the prune. Not differences.
    pub pruned: usize,
    /// Node and grip documents of skipped projects left out.
    pub skipped: usize,
    /// The first few differences.
    pub examples: Vec<String>,
}

impl DocumentComparison {
    /// Whether the index holds exactly the implied documents (pruned ones aside).
    #[must_use]
    pub fn is_equal(&self) -> bool {
        self.missing == 0 && self.extra == 0 && self.stale == 0 && self.doubled == 0
    }
}

/// The lifecycle kind a document is pruned by (`segment`, `grip`, `event`, `day`, …),
/// `None` for ideas, which no prune removes.
fn prune_kind(doc_type: DocType, level: Option<&str>) -> Option<String> {
    match doc_type {
        DocType::Event => Some("event".to_owned()),
        DocType::Grip => Some("grip".to_owned()),
        DocType::TocNode => level.map(str::to_owned),
        DocType::Idea => None,
    }
}

/// Compares what `index` holds (`actual`: each document's key, and what it stores when
/// it stores anything) with `expected`, the documents the log implies
/// ([`crate::implied_documents`]). A missing document counts as pruned, not as a
/// difference, when `last_prune` pruned its kind and it is older than that prune (a
/// rebuild adds pruned documents back until the next prune, so either is right). Node
/// and grip documents of `skip_toc_projects` are left out.
#[must_use]
pub fn compare_documents(
    index: &str,
    expected: &[SearchDoc],
    actual: &HeldDocuments,
    last_prune: Option<&PruneReport>,
    skip_toc_projects: &BTreeSet<String>,
    max_examples: usize,
) -> DocumentComparison {
    let skipped = |project: &str, doc_type: DocType| {
        matches!(doc_type, DocType::TocNode | DocType::Grip) && skip_toc_projects.contains(project)
    };
    let mut comparison = DocumentComparison {
        index: index.to_owned(),
        ..DocumentComparison::default()
    };
    let note = |comparison: &mut DocumentComparison, text: String| {
        if comparison.examples.len() < max_examples {
            comparison.examples.push(text);
        }
    };
    let mut implied: BTreeMap<DocId, &SearchDoc> = BTreeMap::new();
    for doc in expected {
        if skipped(&doc.project_id, doc.doc_type) {
            comparison.skipped += 1;
            continue;
        }
        implied.insert(
            (doc.project_id.clone(), doc.doc_type, doc.doc_id.clone()),
            doc,
        );
    }
    comparison.num_expected = implied.len();
    for (id, copies) in actual {
        if skipped(&id.0, id.1) {
            continue;
        }
        comparison.num_actual += 1;
        if copies.len() > 1 {
            comparison.doubled += copies.len() - 1;
            note(
                &mut comparison,
                format!(
                    "{index} holds {} {} {} {} times: {copies:?}",
                    id.0,
                    id.1,
                    id.2,
                    copies.len()
                ),
            );
        }
        match implied.get(id) {
            None => {
                comparison.extra += 1;
                note(
                    &mut comparison,
                    format!(
                        "{index} holds {} {} {} the log does not imply",
                        id.0, id.1, id.2
                    ),
                );
            }
            Some(doc) => {
                let wanted = StoredDoc::of_search_doc(doc);
                if let Some(stored) = copies.iter().flatten().find(|stored| **stored != wanted) {
                    comparison.stale += 1;
                    note(
                        &mut comparison,
                        format!(
                            "{index} holds {} {} {} as {stored:?}, the log implies {wanted:?}",
                            id.0, id.1, id.2
                        ),
                    );
                }
            }
        }
    }
    for (id, doc) in &implied {
        if actual.contains_key(id) {
            continue;
        }
        let prunable = last_prune.is_some_and(|prune| {
            prune_kind(doc.doc_type, doc.level.as_deref())
                .is_some_and(|kind| prune.pruned.contains_key(&kind))
                && doc.timestamp_ms < prune.at_ms
        });
        if prunable {
            comparison.pruned += 1;
        } else {
            comparison.missing += 1;
            note(
                &mut comparison,
                format!("{index} lacks {} {} {}", id.0, id.1, id.2),
            );
        }
    }
    comparison
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testsuite::{TocProjections, sample_events};
    use memory_store::StoreOptions;

    fn built() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        store.append_events(&sample_events()).expect("append");
        let mut toc = TocProjections::open(&store).expect("open");
        toc.catch_up(&store, &mut []).expect("catch up");
        (dir, store)
    }

    #[test]
    fn a_rebuild_dumps_the_same_and_a_damaged_record_is_named() {
        let (_dir, store) = built();
        let options = DumpOptions::default();
        let before = ProjectionDump::capture(&store, options).expect("dump");
        assert!(!before.part("toc_nodes").expect("nodes").is_empty());
        assert!(!before.part("grips").expect("grips").is_empty());
        let mut toc = TocProjections::open(&store).expect("open");
        toc.rebuild(&store).expect("rebuild");
        let after = ProjectionDump::capture(&store, options).expect("dump");
        let none = BTreeSet::new();
        let comparisons = compare_dumps(&before, &after, &none, 3);
        assert!(
            comparisons.iter().all(PartComparison::is_equal),
            "{comparisons:#?}"
        );

        let mut damaged = after.clone();
        let nodes = damaged.part_mut("toc_nodes").expect("nodes");
        let first = nodes.keys().next().cloned().expect("a node");
        nodes.insert(first.clone(), "changed".to_owned());
        damaged
            .part_mut("grips")
            .expect("grips")
            .pop_first()
            .expect("a grip");
        let comparisons = compare_dumps(&before, &damaged, &none, 3);
        let nodes = comparisons
            .iter()
            .find(|c| c.part == "toc_nodes")
            .expect("nodes compared");
        assert_eq!((nodes.differing, nodes.only_incremental), (1, 0));
        assert_eq!(nodes.examples[0].key, first.1);
        assert_eq!(nodes.examples[0].rebuilt.as_deref(), Some("changed"));
        let grips = comparisons
            .iter()
            .find(|c| c.part == "grips")
            .expect("grips compared");
        assert_eq!(grips.only_incremental, 1);
        // A skipped project's TOC is left out of the comparison.
        let skip = BTreeSet::from([first.0.clone()]);
        let comparisons = compare_dumps(&before, &damaged, &skip, 3);
        let nodes = comparisons
            .iter()
            .find(|c| c.part == "toc_nodes")
            .expect("nodes compared");
        assert!(nodes.is_equal() && nodes.skipped > 0, "{nodes:?}");
    }

    /// One copy of each of `expected`, as an index holding exactly them would.
    fn held_as_implied(expected: &[SearchDoc]) -> HeldDocuments {
        expected
            .iter()
            .map(|doc| {
                (
                    (doc.project_id.clone(), doc.doc_type, doc.doc_id.clone()),
                    vec![Some(StoredDoc::of_search_doc(doc))],
                )
            })
            .collect()
    }

    #[test]
    fn documents_compare_by_key_and_content_and_excuse_pruned_ones() {
        let (_dir, store) = built();
        let expected = crate::implied_documents(&store, true).expect("documents");
        assert!(expected.iter().any(|doc| doc.doc_type == DocType::Event));
        assert!(expected.iter().any(|doc| doc.doc_type == DocType::TocNode));
        let mut actual = held_as_implied(&expected);
        let none = BTreeSet::new();
        let equal = compare_documents("bm25", &expected, &actual, None, &none, 3);
        assert!(equal.is_equal(), "{equal:?}");
        assert_eq!(equal.num_actual, expected.len());

        let event = expected
            .iter()
            .find(|doc| doc.doc_type == DocType::Event)
            .expect("an event document");
        let event_id = (
            event.project_id.clone(),
            DocType::Event,
            event.doc_id.clone(),
        );
        actual.remove(&event_id);
        let grip = expected
            .iter()
            .find(|doc| doc.doc_type == DocType::Grip)
            .expect("a grip document");
        let grip_id = (grip.project_id.clone(), DocType::Grip, grip.doc_id.clone());
        if let Some(Some(stored)) = actual
            .get_mut(&grip_id)
            .and_then(|copies| copies.first_mut())
        {
            stored.text.push_str(" (old)");
        }
        actual.insert(
            (
                event.project_id.clone(),
                DocType::Idea,
                "idea-gone".to_owned(),
            ),
            vec![None],
        );
        let found = compare_documents("bm25", &expected, &actual, None, &none, 10);
        assert_eq!(
            (found.missing, found.stale, found.extra),
            (1, 1, 1),
            "{found:?}"
        );
        assert_eq!(found.examples.len(), 3);
        // An event older than a prune of events is excused.
        let prune = PruneReport {
            at_ms: event.timestamp_ms + 1,
            pruned: BTreeMap::from([("event".to_owned(), 1)]),
        };
        let found = compare_documents("bm25", &expected, &actual, Some(&prune), &none, 10);
        assert_eq!((found.missing, found.pruned), (0, 1), "{found:?}");
    }

    #[test]
    fn a_document_held_twice_is_a_difference_whichever_copy_comes_first() {
        let (_dir, store) = built();
        let expected = crate::implied_documents(&store, true).expect("documents");
        let node = expected
            .iter()
            .find(|doc| doc.doc_type == DocType::TocNode)
            .expect("a node document");
        let node_id = (
            node.project_id.clone(),
            DocType::TocNode,
            node.doc_id.clone(),
        );
        let mut old = StoredDoc::of_search_doc(node);
        old.text.push_str(" (an older version)");
        let none = BTreeSet::new();
        for copies in [
            vec![Some(StoredDoc::of_search_doc(node)), Some(old.clone())],
            vec![Some(old.clone()), Some(StoredDoc::of_search_doc(node))],
            vec![Some(StoredDoc::of_search_doc(node)); 2],
        ] {
            let mut actual = held_as_implied(&expected);
            let same = copies[0] == copies[1];
            actual.insert(node_id.clone(), copies);
            let found = compare_documents("bm25", &expected, &actual, None, &none, 10);
            assert!(!found.is_equal(), "{found:?}");
            assert_eq!(found.doubled, 1, "{found:?}");
            assert_eq!(found.stale, usize::from(!same), "{found:?}");
            assert_eq!(found.num_actual, found.num_expected, "{found:?}");
        }
    }
}
