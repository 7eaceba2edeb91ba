//! Reading the ids of TOC format 1 in the `toc_summary` events it left in the log.
//!
//! Format 1 derived segment and grip ids without the project
//! ([`TocNodeId::legacy_segment_for`], [`GripId::legacy_derive`]); format 2 hashes the
//! project too. The log is never rewritten, so a model summary written before the
//! upgrade (in cluster mode, by the group's lease holder) still names a segment by its
//! format-1 id and cites format-1 grip ids, and a replica not upgraded yet goes on
//! writing such summaries during a rolling upgrade. The rollup builder shows them on
//! the nodes they were written for instead of asking the model again: a segment's
//! summaries are also looked up under its format-1 id, and a summary's format-1 grip
//! ids are translated to the current ids of the same grips before it is checked.
//!
//! Everything is per project: a summary is stored under its event's project, and the
//! translation is built only from the grips of the node's own project, so a summary of
//! one project never attaches to another's node (the two projects' format-1 ids may be
//! equal; that was the bug format 2 fixes).
//!
//! Format 1 hashed a grip's byte offset in its first event's text, which no record
//! keeps; the grip extractor's invariant (its excerpt is the text at that offset) gives
//! it back: every place the excerpt occurs is a candidate, and each maps to the grip.

use std::collections::{BTreeMap, BTreeSet};

use memory_store::{OutboxSeq, Store};
use memory_summarize::Summary;
use memory_toc::{GripId, TocLevel, TocNode, TocNodeId};

use crate::consumer::ConsumerError;
use crate::grip_extractor::GripExtractor;
use crate::segmenter::Segmenter;

/// Format-1 grip ids of one project's grips, to their current ids.
pub(crate) type GripTranslation = BTreeMap<GripId, GripId>;

/// The format-1 id of `node` when it is a closed segment of its project (the id its
/// first own event gave it under format 1); `None` for other nodes, and when the
/// segment's record or first event is gone.
///
/// # Errors
/// Store or decoding failures.
pub(crate) fn legacy_segment_id(
    store: &Store,
    node: &TocNode,
) -> Result<Option<TocNodeId>, ConsumerError> {
    let TocNodeId::Segment { day, .. } = node.node_id else {
        return Ok(None);
    };
    let Some(segment) = Segmenter::segment(store, &node.node_id.to_string())? else {
        return Ok(None);
    };
    if segment.project_id != node.project_id {
        return Ok(None);
    }
    let Some(first) = segment.events.first() else {
        return Ok(None);
    };
    let Some(event) = store.event(OutboxSeq(first.seq))? else {
        return Ok(None);
    };
    Ok(Some(TocNodeId::legacy_segment_for(
        day,
        event.timestamp_ms,
        &event.event_id,
    )))
}

/// The format-1 ids of `grips` (current ids) of `project_id`, each mapped to its current
/// id. Grips of another project under those ids, and grips whose record or first event
/// is gone, are left out.
///
/// # Errors
/// Store or decoding failures.
pub(crate) fn grip_translation(
    store: &Store,
    project_id: &str,
    grips: &BTreeSet<GripId>,
) -> Result<GripTranslation, ConsumerError> {
    let mut translation = GripTranslation::new();
    for grip_id in grips {
        let Some(grip) = GripExtractor::grip(store, grip_id)? else {
            continue;
        };
        if grip.project_id != project_id || grip.excerpt.is_empty() {
            continue;
        }
        let Some(seq) = store.seq_of_event_id(project_id, &grip.event_id_start)? else {
            continue;
        };
        let Some(event) = store.event(seq)? else {
            continue;
        };
        for offset in occurrences(&event.text, &grip.excerpt) {
            let legacy = GripId::legacy_derive(grip.timestamp_ms, &grip.event_id_start, offset);
            translation.insert(legacy, grip.grip_id);
        }
    }
    Ok(translation)
}

/// Every byte offset where `needle` starts in `text`, overlapping ones included (the
/// grip's old offset may be any of them: `match_indices` would skip "aa" at 1 in "aaa").
fn occurrences<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || {
        let offset = from + text.get(from..)?.find(needle)?;
        from = offset + text[offset..].chars().next().map_or(1, char::len_utf8);
        Some(offset)
    })
}

/// `summary` with every cited grip id that `translation` knows replaced by the current
/// one (ids it does not know, current ones included, stay as they are).
#[must_use]
pub(crate) fn translated(summary: &Summary, translation: &GripTranslation) -> Summary {
    let mut summary = summary.clone();
    for bullet in &mut summary.bullets {
        for grip_id in &mut bullet.grip_ids {
            if let Some(current) = translation.get(grip_id) {
                *grip_id = *current;
            }
        }
    }
    summary
}

/// Whether a summary of `node` may have been written under format 1 somewhere the
/// current lookup does not find it: a closed segment (its format-1 id differs) or any
/// parent (same id, but format-1 grip ids in its bullets).
#[must_use]
pub(crate) fn may_have_legacy_summary(node: &TocNode) -> bool {
    match node.level {
        TocLevel::Segment => node.version == node.num_events + 1,
        TocLevel::Day | TocLevel::Week | TocLevel::Month | TocLevel::Year => true,
    }
}

#[cfg(test)]
mod tests {
    use memory_toc::TocBullet;

    use super::*;

    #[test]
    fn translation_replaces_known_ids_and_keeps_the_rest() {
        let legacy = GripId::legacy_derive(5, "e1", 0);
        let current = GripId::derive("p", 5, "e1", 0);
        let other = GripId::derive("p", 6, "e2", 0);
        let summary = Summary {
            title: "t".to_owned(),
            summary: None,
            bullets: vec![TocBullet {
                text: "b".to_owned(),
                grip_ids: vec![legacy, other],
            }],
            keywords: Vec::new(),
        };
        let translation = GripTranslation::from([(legacy, current)]);
        assert_eq!(
            translated(&summary, &translation).bullets[0].grip_ids,
            [current, other]
        );
    }

    #[test]
    fn occurrences_include_overlapping_ones() {
        assert_eq!(occurrences("aaa", "aa").collect::<Vec<_>>(), [0, 1]);
        assert_eq!(occurrences("xéaéa", "éa").collect::<Vec<_>>(), [1, 4]);
        assert_eq!(occurrences("abc", "d").count(), 0);
        assert_eq!(occurrences("ab", "ab").collect::<Vec<_>>(), [0]);
    }
}
