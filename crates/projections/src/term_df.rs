//! Per-project document-frequency tables: how many segments of a project contain each
//! stem, counted in segment order.
//!
//! Corpus statistics make grips and keywords pick what is distinctive ("tantivy" in a
//! project that rarely mentions it) over what is everywhere ("test"). Each consumer
//! that needs them keeps its own table, updated in the same batch as its projection and
//! in the order segments are announced, so a replay sees exactly the counts the first
//! run saw and writes the same records.

use std::collections::{BTreeSet, HashMap};

use memory_store::{Keyspace, ProjectionBatch, codec};
use memory_text::{is_stopword, stem, tokenize};

use crate::consumer::ConsumerError;
use crate::keys::project_scoped_key;

const RECORD_VERSION: u8 = 1;

/// The distinct stems of a segment's texts (stopwords left out).
pub(crate) fn segment_stems<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    texts
        .flat_map(tokenize)
        .filter(|token| !is_stopword(token))
        .map(|token| stem(&token))
        .filter(|stem| !stem.is_empty())
        .collect()
}

/// The counts of one segment's stems before the segment is counted.
pub(crate) struct CorpusCounts {
    project_id: String,
    /// Segments of the project counted so far.
    pub(crate) num_documents: u32,
    /// Segments containing each of the segment's stems so far.
    pub(crate) counts: HashMap<String, u32>,
}

impl CorpusCounts {
    /// The count of one stem (0 when the segment does not hold it).
    pub(crate) fn frequency(&self, stem: &str) -> u32 {
        self.counts.get(stem).copied().unwrap_or(0)
    }
}

/// A table read from the store with one batch's increments on top.
pub(crate) struct DocumentFrequency<'a> {
    keyspace: &'a Keyspace,
    pending: HashMap<Vec<u8>, u32>,
}

impl<'a> DocumentFrequency<'a> {
    pub(crate) fn new(keyspace: &'a Keyspace) -> Self {
        DocumentFrequency {
            keyspace,
            pending: HashMap::new(),
        }
    }

    fn get(&mut self, key: &[u8]) -> Result<u32, ConsumerError> {
        if let Some(count) = self.pending.get(key) {
            return Ok(*count);
        }
        let count =
            codec::get_record::<u32>(self.keyspace, key, "term df", RECORD_VERSION)?.unwrap_or(0);
        self.pending.insert(key.to_vec(), count);
        Ok(count)
    }

    /// The current counts of `stems` in `project_id`.
    pub(crate) fn counts(
        &mut self,
        project_id: &str,
        stems: &BTreeSet<String>,
    ) -> Result<CorpusCounts, ConsumerError> {
        let num_documents = self.get(&project_scoped_key(project_id, ""))?;
        let mut counts = HashMap::with_capacity(stems.len());
        for segment_stem in stems {
            counts.insert(
                segment_stem.clone(),
                self.get(&project_scoped_key(project_id, segment_stem))?,
            );
        }
        Ok(CorpusCounts {
            project_id: project_id.to_string(),
            num_documents,
            counts,
        })
    }

    /// Counts the segment whose stems `counts` holds: every stem and the number of
    /// documents go up by one, in the batch and for the rest of it.
    pub(crate) fn add_document(
        &mut self,
        batch: &mut ProjectionBatch,
        counts: CorpusCounts,
    ) -> Result<(), ConsumerError> {
        let entries = counts
            .counts
            .into_iter()
            .chain(std::iter::once((String::new(), counts.num_documents)));
        for (segment_stem, count) in entries {
            let key = project_scoped_key(&counts.project_id, &segment_stem);
            self.pending.insert(key.clone(), count + 1);
            batch.insert(
                self.keyspace,
                key,
                codec::encode("term df", RECORD_VERSION, &(count + 1))?,
            );
        }
        Ok(())
    }
}
