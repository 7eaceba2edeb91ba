//! What a feed item means to an accelerator index (BM25 and vectors alike): raw events
//! as themselves, `toc_node_written` as the node now stored (or its removal when it is
//! gone), `grips_extracted` as the segment's grips. One place, so both indexes hold the
//! same documents: events built by `memory_search::documents`, nodes and grips here.

use memory_search::{DocType, SearchDoc, event_doc};
use memory_store::{FeedItem, Store};
use memory_toc::{Grip, TocNode};

use crate::consumer::ConsumerError;
use crate::grip_extractor::{GRIPS_EXTRACTED, GripExtractor};
use crate::rollup_builder::{RollupBuilder, TOC_NODE_WRITTEN};

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

/// One change an item asks of an index.
pub(crate) enum DocChange {
    /// Write (or replace) this document.
    Upsert(SearchDoc),
    /// A TOC node that no longer exists: remove it.
    DeleteNode {
        /// Its project.
        project_id: String,
        /// Its id.
        node_id: String,
    },
}

/// The changes `item` asks for, in order.
///
/// # Errors
/// A node id that does not parse, or a store failure reading the record it names.
pub(crate) fn doc_changes(
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
                    None => DocChange::DeleteNode {
                        project_id: entry.project_id.clone(),
                        node_id: entry.key.clone(),
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
        FeedItem::Event { .. } | FeedItem::Derived { .. } | FeedItem::Truncated { .. } => {
            Vec::new()
        }
    })
}
