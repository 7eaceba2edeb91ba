//! What a feed item means to an accelerator index (BM25 and vectors alike): raw events
//! as themselves, `toc_node_written` as the node now stored (or its removal when it is
//! gone), `grips_extracted` as the segment's grips, `idea_written` as the idea now
//! stored (or its removal), `ideas_cleared` as the removal of a project's ideas,
//! `toc_cleared` (a TOC reset) as the removal of every TOC node and grip document. One place, so both indexes hold the
//! same documents: events built by `memory_search::documents`, nodes and grips here.

use std::collections::HashSet;

use memory_ideas::{GraphView, Idea};
use memory_search::{DocType, SearchDoc, event_doc};
use memory_store::{FeedItem, OutboxSeq, Store};
use memory_toc::{Grip, TocNode};
use memory_types::DocSelector;

use crate::consumer::ConsumerError;
use crate::grip_extractor::{GRIPS_EXTRACTED, GripExtractor};
use crate::ideas::{IDEA_WRITTEN, IDEAS_CLEARED, IdeaGraph};
use crate::rollup_builder::{RollupBuilder, TOC_CLEARED, TOC_NODE_WRITTEN};

/// A TOC node: title, summary, bullets and keywords as text (the PRD indexes title,
/// bullets and keywords; the summary is what the reader sees, so it is searched too),
/// keywords also in `keywords` for the boost; time is the node's start.
#[must_use]
pub(crate) fn toc_node_doc(node: &TocNode) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::TocNode,
        doc_id: node.node_id.to_string(),
        project_id: node.project_id.clone(),
        session_id: None,
        level: Some(node.level.as_str().to_owned()),
        text: node.searchable_text(),
        keywords: node.keywords.clone(),
        timestamp_ms: node.start_ms,
    }
}

/// A grip: its verbatim excerpt.
#[must_use]
pub(crate) fn grip_doc(grip: &Grip) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::Grip,
        doc_id: grip.grip_id.to_string(),
        project_id: grip.project_id.clone(),
        session_id: Some(grip.session_id.clone()),
        level: None,
        text: grip.excerpt.clone(),
        keywords: Vec::new(),
        timestamp_ms: grip.timestamp_ms,
    }
}

/// An idea: its content, with its entities' names as keywords (so a search for
/// "Postgres" finds an idea that said "pg"); time is the source event's.
#[must_use]
pub(crate) fn idea_doc(idea: &Idea, entity_names: Vec<String>) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::Idea,
        doc_id: idea.idea_id.clone(),
        project_id: idea.project_id.clone(),
        session_id: Some(idea.source.session_id.clone()),
        level: None,
        text: idea.content.clone(),
        keywords: entity_names,
        timestamp_ms: idea.valid_from_ms,
    }
}

/// Every idea of the graph as an index document (index rebuilds).
///
/// # Errors
/// Store or decoding failures.
pub(crate) fn all_idea_docs(store: &Store) -> Result<Vec<SearchDoc>, ConsumerError> {
    let graph = IdeaGraph::open(store)?;
    let read = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
    let mut docs = Vec::new();
    for idea in graph.every_idea().map_err(read)? {
        docs.push(idea_doc_with_names(&graph, &idea)?);
    }
    Ok(docs)
}

/// Feed items read at a time while walking the log for its event documents.
const READ_BATCH: usize = 10_000;

/// Every document the store implies for an accelerator index, in the order a rebuild
/// adds them: the events up to `up_to` (when `index_events`), then every TOC node, grip
/// and idea as stored. `phase` hears the name of each part as it starts (`toc_nodes`,
/// `grips`, `ideas`). One walk shared by the BM25 rebuild (which adds what it visits) and
/// `admin verify` (which compares it with what each index holds), so the two cannot
/// disagree about what an index should hold.
///
/// # Errors
/// Store or decoding failures, or what `visit` returns.
pub(crate) fn for_each_implied_doc(
    store: &Store,
    index_events: bool,
    up_to: OutboxSeq,
    phase: &mut dyn FnMut(&str),
    visit: &mut dyn FnMut(&SearchDoc) -> Result<(), ConsumerError>,
) -> Result<(), ConsumerError> {
    if index_events {
        let mut after = OutboxSeq::ZERO;
        while after < up_to {
            let items = store.read_feed(after, READ_BATCH)?;
            let Some(last) = items.last().map(FeedItem::seq) else {
                break;
            };
            for item in &items {
                if item.seq() > up_to {
                    break;
                }
                if let FeedItem::Event { event, .. } = item
                    && let Some(doc) = event_doc(event)
                {
                    visit(&doc)?;
                }
            }
            after = last;
        }
    }
    phase("toc_nodes");
    for node in RollupBuilder::all_nodes(store)?.values() {
        visit(&toc_node_doc(node))?;
    }
    phase("grips");
    for grip in GripExtractor::all_grips(store) {
        visit(&grip_doc(&grip?))?;
    }
    phase("ideas");
    for doc in all_idea_docs(store)? {
        visit(&doc)?;
    }
    Ok(())
}

/// Every document the store implies for an index that indexes raw events when
/// `index_events`, up to the store's head: see [`for_each_implied_doc`].
///
/// # Errors
/// Store or decoding failures.
pub fn implied_documents(
    store: &Store,
    index_events: bool,
) -> Result<Vec<SearchDoc>, ConsumerError> {
    let mut docs = Vec::new();
    for_each_implied_doc(store, index_events, store.head(), &mut |_| {}, &mut |doc| {
        docs.push(doc.clone());
        Ok(())
    })?;
    Ok(docs)
}

/// An idea's document with its entities' names.
fn idea_doc_with_names(graph: &IdeaGraph, idea: &Idea) -> Result<SearchDoc, ConsumerError> {
    let read = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
    let mut names = Vec::new();
    for entity_id in &idea.entity_ids {
        if let Some(entity) = graph.entity(&idea.project_id, entity_id).map_err(read)? {
            names.push(entity.name);
        }
    }
    Ok(idea_doc(idea, names))
}

/// One change an item asks of an index.
pub(crate) enum DocChange {
    /// Write (or replace) this document.
    Upsert(SearchDoc),
    /// A record that no longer exists (a TOC node, an idea): remove its document.
    Delete {
        /// Its project.
        project_id: String,
        /// Its kind.
        doc_type: DocType,
        /// Its id.
        doc_id: String,
    },
    /// Remove every document the selector selects (a project's ideas after a reset).
    DeleteMatching(DocSelector),
}

/// The changes a batch of feed items asks for, in feed order, leaving out each item a
/// later item of the batch repeats.
///
/// `toc_node_written`, `grips_extracted` and `idea_written` stand for the record *as
/// stored when the index reads it*, not as it was when the entry was written: of
/// several entries naming one record, the earlier ones would read the same record (or
/// an older version, had a projection written in between) and write the same document
/// again. And they repeat: a TOC node is written again with each version (an open
/// segment's node at each rollup step that adds events to it, a day with each segment
/// under it, a week with each day), so in a catch-up many of a batch's node entries
/// name a node a later entry names too, and the vector index embedded each of them
/// once more. Only the last is read; the order
/// of what is kept is the feed's, so a clear between two entries still comes before
/// the document the second one writes.
///
/// # Errors
/// As [`doc_changes`].
pub(crate) fn batch_doc_changes(
    store: &Store,
    items: &[FeedItem],
    index_events: bool,
) -> Result<Vec<DocChange>, ConsumerError> {
    let mut named_later = HashSet::new();
    let mut repeated = vec![false; items.len()];
    for (index, item) in items.iter().enumerate().rev() {
        if let FeedItem::Derived { entry, .. } = item
            && names_a_stored_record(&entry.kind)
        {
            repeated[index] = !named_later.insert((
                entry.kind.as_str(),
                entry.project_id.as_str(),
                entry.key.as_str(),
            ));
        }
    }
    let mut changes = Vec::with_capacity(items.len());
    for (item, repeated) in items.iter().zip(repeated) {
        if !repeated {
            changes.extend(doc_changes(store, item, index_events)?);
        }
    }
    Ok(changes)
}

/// Whether an entry of `kind` stands for a record read from the store when indexed
/// (see [`batch_doc_changes`]).
fn names_a_stored_record(kind: &str) -> bool {
    matches!(kind, TOC_NODE_WRITTEN | GRIPS_EXTRACTED | IDEA_WRITTEN)
}

/// The changes `item` asks for, in order.
///
/// # Errors
/// A node id that does not parse, or a store failure reading the record it names.
fn doc_changes(
    store: &Store,
    item: &FeedItem,
    index_events: bool,
) -> Result<Vec<DocChange>, ConsumerError> {
    Ok(match item {
        FeedItem::Event { event, .. } if index_events => event_doc(event)
            .map(DocChange::Upsert)
            .into_iter()
            .collect(),
        FeedItem::Derived { entry, .. } if entry.kind == TOC_NODE_WRITTEN => {
            let node_id = entry.key.parse().map_err(|err| {
                ConsumerError::BadInput(format!("toc_node_written names {:?}: {err}", entry.key))
            })?;
            vec![
                match RollupBuilder::node(store, &entry.project_id, &node_id)? {
                    Some(node) => DocChange::Upsert(toc_node_doc(&node)),
                    None => DocChange::Delete {
                        project_id: entry.project_id.clone(),
                        doc_type: DocType::TocNode,
                        doc_id: entry.key.clone(),
                    },
                },
            ]
        }
        FeedItem::Derived { entry, .. } if entry.kind == GRIPS_EXTRACTED => {
            GripExtractor::segment_grips(store, &entry.key)?
                .iter()
                .map(|grip| DocChange::Upsert(grip_doc(grip)))
                .collect()
        }
        FeedItem::Derived { entry, .. } if entry.kind == IDEA_WRITTEN => {
            let graph = IdeaGraph::open(store)?;
            let read = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
            vec![
                match graph.idea(&entry.project_id, &entry.key).map_err(read)? {
                    Some(idea) => DocChange::Upsert(idea_doc_with_names(&graph, &idea)?),
                    None => DocChange::Delete {
                        project_id: entry.project_id.clone(),
                        doc_type: DocType::Idea,
                        doc_id: entry.key.clone(),
                    },
                },
            ]
        }
        FeedItem::Derived { entry, .. } if entry.kind == IDEAS_CLEARED => {
            let selector = if entry.key.is_empty() {
                DocSelector::new(DocType::Idea)
            } else {
                DocSelector::new(DocType::Idea).project_id(entry.key.clone())
            };
            vec![DocChange::DeleteMatching(selector)]
        }
        FeedItem::Derived { entry, .. } if entry.kind == TOC_CLEARED => vec![
            DocChange::DeleteMatching(DocSelector::new(DocType::TocNode)),
            DocChange::DeleteMatching(DocSelector::new(DocType::Grip)),
        ],
        FeedItem::Event { .. } | FeedItem::Derived { .. } | FeedItem::Truncated { .. } => {
            Vec::new()
        }
    })
}

#[cfg(test)]
#[path = "index_docs_tests.rs"]
mod tests;
