//! A consistent copy of the whole store while it serves: the snapshot a new cluster
//! replica boots from (and, later, a backup).
//!
//! [`Store::view`] pins one instant across every keyspace (a fjall snapshot: each of the
//! store's writes is one atomic batch, so the view holds whole batches only). The caller
//! takes it while nothing it copies beside the store can move — the accelerator
//! indexes' writers are held, so their committed cursors, mirrored into `cursors`, are
//! the ones the view holds and the outbox still has every entry after them.
//! [`StoreView::write_to`] then copies every keyspace, projections, outbox and cursors
//! included, into a fresh database by bulk ingestion, at leisure: writers go on.

use std::path::Path;

use fjall::{Database, KeyspaceCreateOptions, PersistMode, Readable, Snapshot};
use serde::{Deserialize, Serialize};

use super::handle::{META_FORMAT, META_LAST_SEQ, Store};
use super::replica::META_APPLIED_STREAM_SEQ;
use crate::error::Result;
use crate::records::decode_u64;

/// The store at one instant.
pub struct StoreView {
    store: Store,
    snapshot: Snapshot,
}

/// What [`StoreView::write_to`] copied: the position the copy stands at.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreCopy {
    /// The store's format version (`meta/format_version`).
    pub format_version: u64,
    /// Keyspaces copied.
    pub keyspaces: usize,
    /// Records copied.
    pub records: u64,
    /// The outbox head at the instant.
    pub outbox_head: u64,
    /// The last stream sequence applied (cluster mode; 0 otherwise).
    pub applied_stream_seq: u64,
}

impl Store {
    /// Pins the store as it is now, across every keyspace. Keep it short-lived: fjall
    /// keeps what it holds until it is dropped.
    #[must_use]
    pub fn view(&self) -> StoreView {
        StoreView {
            store: self.clone(),
            snapshot: self.inner.db.snapshot(),
        }
    }
}

impl StoreView {
    fn meta_u64(&self, key: &[u8]) -> Result<u64> {
        match self.snapshot.get(&self.store.inner.meta, key)? {
            Some(bytes) => decode_u64(&bytes),
            None => Ok(0),
        }
    }

    /// The outbox head at the instant.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn outbox_head(&self) -> Result<u64> {
        self.meta_u64(META_LAST_SEQ)
    }

    /// Copies every keyspace as of the instant into a new database at `dest` (which must
    /// not hold one), synced to disk before it returns.
    ///
    /// # Errors
    /// Storage failures, or `dest` already holding a database.
    pub fn write_to(&self, dest: &Path) -> Result<StoreCopy> {
        let db = &self.store.inner.db;
        let mut copy = StoreCopy {
            format_version: self.meta_u64(META_FORMAT)?,
            outbox_head: self.outbox_head()?,
            applied_stream_seq: self.meta_u64(META_APPLIED_STREAM_SEQ)?,
            ..StoreCopy::default()
        };
        let new = Database::builder(dest).open()?;
        for name in db.list_keyspace_names() {
            let name: &str = &name;
            let from = db.keyspace(name, KeyspaceCreateOptions::default)?;
            let to = new.keyspace(name, KeyspaceCreateOptions::default)?;
            let mut ingestion = to.start_ingestion()?;
            for guard in self.snapshot.iter(&from) {
                let (key, value) = guard.into_inner()?;
                ingestion.write(key, value)?;
                copy.records += 1;
            }
            ingestion.finish()?;
            copy.keyspaces += 1;
        }
        new.persist(PersistMode::SyncAll)?;
        Ok(copy)
    }
}
