//! `GripExtractor`: for every closed segment, picks the salient verbatim excerpts
//! (decisions, questions, problems, solutions, conclusions, identifiers, paths, numbers,
//! rare terms — `memory_summarize::grips`) and stores them as grips that cite their events.
//! Upstream: `segment_closed` outbox entries. Downstream: the rollup builder, through
//! `grips_extracted` entries.
//!
//! Rare terms need the corpus: the extractor keeps, in `proj_term_df`, how many
//! segments of the project contain each stem, updated in segment order in the same
//! batch as the grips, so a replay computes exactly the same grips.

use memory_store::{
    DerivedEntry, FeedItem, Keyspace, OutboxSeq, ProjectionBatch, Store, StoreError, codec,
};
use memory_summarize::grips::{GripConfig, GripSourceEvent, extract_grips};
use memory_toc::{Grip, GripId, TocNodeId};
use memory_types::Event;

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::segmenter::{SEGMENT_CLOSED, Segment, Segmenter};
use crate::term_df::{DocumentFrequency, segment_stems};

/// The consumer's name: cursor key and metrics label.
pub const GRIP_EXTRACTOR: &str = "grip_extractor";
/// Outbox entry kind announcing a segment's grips; its key is the segment id.
pub const GRIPS_EXTRACTED: &str = "grips_extracted";
const GRIPS_KEYSPACE: &str = "grips";
pub(crate) const SEGMENT_GRIPS_KEYSPACE: &str = "segment_grips";
pub(crate) const TERM_DF_KEYSPACE: &str = "term_df";
const RECORD_VERSION: u8 = 1;

/// The consumer.
pub struct GripExtractor {
    config: GripConfig,
    grips: Keyspace,
    segment_grips: Keyspace,
    term_df: Keyspace,
}

impl GripExtractor {
    /// Opens the extractor's keyspaces.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store, config: GripConfig) -> Result<Self, ConsumerError> {
        Ok(GripExtractor {
            config,
            grips: store.projection_keyspace(GRIPS_KEYSPACE)?,
            segment_grips: store.projection_keyspace(SEGMENT_GRIPS_KEYSPACE)?,
            term_df: store.projection_keyspace(TERM_DF_KEYSPACE)?,
        })
    }

    /// One grip by id.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn grip(store: &Store, grip_id: &GripId) -> Result<Option<Grip>, ConsumerError> {
        let keyspace = store.projection_keyspace(GRIPS_KEYSPACE)?;
        Ok(codec::get_record(
            &keyspace,
            grip_id.to_string(),
            "grip",
            RECORD_VERSION,
        )?)
    }

    /// Every grip of every project, in id order (index rebuilds).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn all_grips(store: &Store) -> impl Iterator<Item = Result<Grip, ConsumerError>> + use<> {
        let keyspace = store.projection_keyspace(GRIPS_KEYSPACE);
        let iter: Box<dyn Iterator<Item = Result<Grip, ConsumerError>>> = match keyspace {
            Ok(keyspace) => Box::new(keyspace.iter().map(|guard| {
                let (_, value) = guard.into_inner().map_err(StoreError::from)?;
                Ok(codec::decode("grip", RECORD_VERSION, &value)?)
            })),
            Err(err) => Box::new(std::iter::once(Err(ConsumerError::from(err)))),
        };
        iter
    }

    /// The grips of one segment, in event order.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn segment_grips(store: &Store, segment_id: &str) -> Result<Vec<Grip>, ConsumerError> {
        let keyspace = store.projection_keyspace(SEGMENT_GRIPS_KEYSPACE)?;
        let ids: Vec<String> =
            codec::get_record(&keyspace, segment_id, "segment grips", RECORD_VERSION)?
                .unwrap_or_default();
        let mut grips = Vec::with_capacity(ids.len());
        for id in ids {
            let grip_id: GripId = id
                .parse()
                .map_err(|err| ConsumerError::Internal(format!("stored grip id {id:?}: {err}")))?;
            if let Some(grip) = GripExtractor::grip(store, &grip_id)? {
                grips.push(grip);
            }
        }
        Ok(grips)
    }

    fn extract_segment(
        &self,
        store: &Store,
        batch: &mut ProjectionBatch,
        df: &mut DocumentFrequency<'_>,
        segment: &Segment,
    ) -> Result<(), ConsumerError> {
        let mut events: Vec<Event> = Vec::with_capacity(segment.events.len());
        for segment_event in &segment.events {
            if let Some(event) = store.event(OutboxSeq(segment_event.seq))? {
                events.push(event);
            }
        }
        let sources: Vec<GripSourceEvent<'_>> = events
            .iter()
            .map(|event| GripSourceEvent {
                event_id: &event.event_id,
                timestamp_ms: event.timestamp_ms,
                role: event.role.as_str(),
                kind: event.kind.as_str(),
                text: &event.text,
            })
            .collect();
        // Read every stem's count before extraction: the callback cannot fail.
        let corpus = df.counts(
            &segment.project_id,
            &segment_stems(events.iter().map(|event| event.text.as_str())),
        )?;
        let frequency = |term: &str| corpus.frequency(term);
        let candidates = extract_grips(&sources, &frequency, corpus.num_documents, &self.config);

        let segment_id: TocNodeId = segment.segment_id.parse().map_err(|err| {
            ConsumerError::Internal(format!("segment id {:?}: {err}", segment.segment_id))
        })?;
        let mut grip_ids = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            let grip_id = GripId::derive(
                &segment.project_id,
                candidate.timestamp_ms,
                &candidate.event_id_start,
                candidate.excerpt_start,
            );
            let grip = Grip {
                grip_id,
                project_id: segment.project_id.clone(),
                session_id: segment.session_id.clone(),
                excerpt: candidate.excerpt,
                event_id_start: candidate.event_id_start,
                event_id_end: candidate.event_id_end,
                timestamp_ms: candidate.timestamp_ms,
                segment_id,
            };
            let id_text = grip_id.to_string();
            batch.insert(
                &self.grips,
                id_text.as_bytes(),
                codec::encode("grip", RECORD_VERSION, &grip)?,
            );
            grip_ids.push(id_text);
        }
        batch.insert(
            &self.segment_grips,
            segment.segment_id.as_bytes(),
            codec::encode("segment grips", RECORD_VERSION, &grip_ids)?,
        );
        // This segment now counts towards the corpus for the segments after it.
        df.add_document(batch, corpus)?;
        batch.append_derived(DerivedEntry {
            kind: GRIPS_EXTRACTED.into(),
            project_id: segment.project_id.clone(),
            key: segment.segment_id.clone(),
        });
        Ok(())
    }
}

impl OutboxConsumer for GripExtractor {
    fn name(&self) -> &str {
        GRIP_EXTRACTOR
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let mut batch = store.projection_batch();
        let mut df = DocumentFrequency::new(&self.term_df);
        for item in items {
            let FeedItem::Derived { entry, .. } = item else {
                continue;
            };
            if entry.kind != SEGMENT_CLOSED {
                continue;
            }
            let segment = Segmenter::segment(store, &entry.key)?.ok_or_else(|| {
                ConsumerError::BadInput(format!("segment {} announced but not stored", entry.key))
            })?;
            self.extract_segment(store, &mut batch, &mut df, &segment)?;
        }
        batch.set_cursor(GRIP_EXTRACTOR, up_to);
        store.commit_projection(batch)?;
        Ok(())
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.grips.clear().map_err(StoreError::from)?;
        self.segment_grips.clear().map_err(StoreError::from)?;
        self.term_df.clear().map_err(StoreError::from)?;
        store.set_cursor(GRIP_EXTRACTOR, start)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use memory_store::StoreOptions;

    use super::*;
    use crate::segmenter::SegmenterConfig;
    use crate::testsuite::{catch_up, sample_events};

    fn all_grips(store: &Store) -> BTreeMap<String, Vec<Grip>> {
        Segmenter::all_segments(store)
            .expect("segments")
            .into_iter()
            .map(|segment| {
                let grips =
                    GripExtractor::segment_grips(store, &segment.segment_id).expect("grips");
                (segment.segment_id, grips)
            })
            .collect()
    }

    #[test]
    fn every_segment_gets_verbatim_grips_that_a_rebuild_reproduces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let mut segmenter = Segmenter::open(&store, SegmenterConfig::default()).expect("open");
        let mut extractor = GripExtractor::open(&store, GripConfig::default()).expect("open");
        let events = sample_events();
        let by_id: BTreeMap<String, Event> = events
            .iter()
            .map(|e| (e.event_id.clone(), e.clone()))
            .collect();
        store.append_events(&events).expect("append");
        catch_up(&store, &mut [&mut segmenter, &mut extractor]).expect("apply");

        let grips = all_grips(&store);
        assert!(
            grips.len() >= 15,
            "one entry per segment, got {}",
            grips.len()
        );
        let mut num_grips = 0;
        for (segment_id, segment_grips) in &grips {
            let segment = Segmenter::segment(&store, segment_id)
                .expect("read")
                .expect("segment stored");
            let segment_events: Vec<String> = segment
                .events
                .iter()
                .filter_map(|e| store.event(OutboxSeq(e.seq)).expect("read event"))
                .map(|e| e.event_id)
                .collect();
            for grip in segment_grips {
                num_grips += 1;
                let event = by_id
                    .get(&grip.event_id_start)
                    .expect("grip cites a stored event");
                assert!(
                    event.text.contains(&grip.excerpt),
                    "grip {} is not verbatim",
                    grip.grip_id
                );
                assert!(
                    segment_events.contains(&grip.event_id_start),
                    "grip cites an event of its own segment"
                );
                assert_eq!(grip.segment_id.to_string(), *segment_id);
            }
        }
        assert!(
            num_grips >= grips.len(),
            "most segments have grips: {num_grips} grips"
        );
        let decision = grips
            .values()
            .flatten()
            .any(|grip| grip.excerpt.contains("We decided") && grip.excerpt.contains("15 minutes"));
        assert!(decision, "the JWT expiry decision is kept as a grip");

        extractor.reset(&store, OutboxSeq::ZERO).expect("reset");
        catch_up(&store, &mut [&mut extractor]).expect("replay");
        assert_eq!(
            all_grips(&store),
            grips,
            "replay writes the same grips, ids included"
        );
    }
}
