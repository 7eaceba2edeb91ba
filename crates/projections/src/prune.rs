//! [`prune_indexes`]: one lifecycle prune of both accelerator indexes with the same
//! cutoffs, so hybrid search never finds by meaning what keyword search no longer holds.
//! The scheduled pruner (`IndexPruner` in `memory-actors`) and `admin prune-index` run
//! it; each index is pruned and committed on its own, so one failing leaves the other's
//! prune done.

use std::collections::BTreeMap;

use memory_store::Store;
use serde::{Deserialize, Serialize};

use crate::bm25_index::Bm25Handle;
use crate::lifecycle::{PruneKind, PruneReport};
use crate::vector_index::VectorHandle;

/// What one prune of the accelerator indexes did. Each index is pruned on its own: one
/// failing leaves the other's prune done (and committed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexPruneReport {
    /// What the BM25 prune removed; `None` when the index is disabled or its prune
    /// failed.
    pub bm25: Option<PruneReport>,
    /// What the vector prune removed; `None` when the index is disabled or its prune
    /// failed.
    pub vector: Option<PruneReport>,
    /// Why a prune failed, by index (`bm25`, `vector`).
    pub errors: BTreeMap<String, String>,
}

impl IndexPruneReport {
    /// Documents removed from both indexes.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.bm25.as_ref().map_or(0, PruneReport::total)
            + self.vector.as_ref().map_or(0, PruneReport::total)
    }
}

/// Prunes each given index with `cutoffs` (each kind with the time before which its
/// documents go): what the scheduled prune and `admin prune` run. Blocks (commits,
/// HNSW compaction): async callers use `spawn_blocking`.
#[must_use]
pub fn prune_indexes(
    store: &Store,
    bm25: Option<&Bm25Handle>,
    vector: Option<&VectorHandle>,
    cutoffs: &[(PruneKind, u64)],
) -> IndexPruneReport {
    let mut report = IndexPruneReport::default();
    if let Some(handle) = bm25 {
        match handle.prune(store, cutoffs) {
            Ok(pruned) => report.bm25 = Some(pruned),
            Err(err) => {
                report.errors.insert("bm25".to_owned(), err.to_string());
            }
        }
    }
    if let Some(handle) = vector {
        match handle.prune(store, cutoffs) {
            Ok(pruned) => report.vector = Some(pruned),
            Err(err) => {
                report.errors.insert("vector".to_owned(), err.to_string());
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use memory_store::StoreOptions;

    use super::*;
    use crate::bm25_records::Bm25Settings;
    use crate::lifecycle::Retention;
    use crate::testsuite::sample_store_with_indexes;
    use crate::vector_index::VectorSettings;

    /// The sample a year on, with the default retention: the BM25 and the vector index
    /// lose exactly the same documents, and each remembers its report.
    #[test]
    fn both_indexes_prune_the_same_documents() {
        let temp = tempfile::tempdir().expect("tempdir");
        let (store, bm25_settings, vector_settings) = sample_store_with_indexes(temp.path());
        let bm25 = Bm25Handle::open(bm25_settings);
        let vector = VectorHandle::open(vector_settings);
        let cutoffs = Retention::default().cutoffs(1_801_000_000_000);
        let report = prune_indexes(&store, Some(&bm25), Some(&vector), &cutoffs);
        assert!(report.errors.is_empty(), "{report:?}");
        let (bm25_report, vector_report) = (
            report.bm25.clone().expect("bm25 pruned"),
            report.vector.clone().expect("vector pruned"),
        );
        assert!(bm25_report.pruned["event"] > 0, "{bm25_report:?}");
        assert_eq!(bm25_report.pruned, vector_report.pruned);
        assert_eq!(report.total(), 2 * bm25_report.total());
        assert_eq!(bm25.status(store.head()).last_prune, Some(bm25_report));
        assert_eq!(vector.status(store.head()).last_prune, Some(vector_report));
        assert_eq!(
            bm25.status(store.head()).num_docs,
            vector.status(store.head()).num_docs
        );
    }

    /// A disabled index is skipped; a failing one is reported without stopping the other.
    #[test]
    fn one_failing_index_leaves_the_other_pruned() {
        let temp = tempfile::tempdir().expect("tempdir");
        let store =
            Store::open(temp.path().join("store"), &StoreOptions::default()).expect("store");
        let bm25 = Bm25Handle::open(Bm25Settings::new(temp.path().join("bm25")));
        let mut vector_settings = VectorSettings::new(temp.path().join("vector-index"));
        vector_settings.embedder.model_dir = temp.path().join("no-model");
        let broken_vector = VectorHandle::open(vector_settings);
        let cutoffs = [(PruneKind::Event, 10)];
        let report = prune_indexes(&store, Some(&bm25), Some(&broken_vector), &cutoffs);
        assert_eq!(report.bm25.map(|pruned| pruned.total()), Some(0));
        assert_eq!(report.vector, None);
        assert!(
            report.errors["vector"].contains("scripts/setup.sh"),
            "{:?}",
            report.errors
        );
        let report = prune_indexes(&store, None, None, &cutoffs);
        assert_eq!(report, IndexPruneReport::default());
    }
}
