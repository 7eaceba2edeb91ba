//! [`ProjectionBatch`]: a projection's writes, committed atomically with its cursor, derived outbox entries and dead letters.

use fjall::{Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, PersistMode};
use memory_types::OutboxSeq;

use super::handle::{
    COMMITTER_THREAD, CommitJob, META_LAST_DEAD_LETTER, META_LAST_SEQ, PROJECTION_PREFIX, Store,
};
use crate::StoreError;
use crate::error::Result;
use crate::keys;
use crate::metrics::STORE_METRICS;
use crate::records::{
    DeadLetter, DerivedEntry, OutboxRecordV1, encode_dead_letter, encode_outbox, encode_u64,
};
use crate::space::WriteShare;

/// Writes a projection commits atomically with its cursor and derived outbox entries.
pub struct ProjectionBatch {
    batch: OwnedWriteBatch,
    derived: Vec<DerivedEntry>,
    dead_letters: Vec<DeadLetter>,
    cursor: Option<(String, OutboxSeq)>,
}

impl ProjectionBatch {
    /// Writes `value` under `key` in a projection keyspace.
    pub fn insert(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.batch.insert(keyspace, key.as_ref(), value.as_ref());
    }

    /// Removes `key` from a projection keyspace.
    pub fn remove(&mut self, keyspace: &Keyspace, key: impl AsRef<[u8]>) {
        self.batch.remove(keyspace, key.as_ref());
    }

    /// Appends a derived entry to the outbox; its position is assigned at commit.
    pub fn append_derived(&mut self, entry: DerivedEntry) {
        self.derived.push(entry);
    }

    /// Parks an entry in the dead-letter partition.
    pub fn dead_letter(&mut self, dead_letter: DeadLetter) {
        self.dead_letters.push(dead_letter);
    }

    /// Moves `consumer`'s cursor to `seq` with the rest of this batch.
    pub fn set_cursor(&mut self, consumer: &str, seq: OutboxSeq) {
        self.cursor = Some((consumer.to_owned(), seq));
    }
}

impl Store {
    /// A batch for a projection; commit it with [`Store::commit_projection`].
    #[must_use]
    pub fn projection_batch(&self) -> ProjectionBatch {
        ProjectionBatch {
            batch: self.inner.db.batch(),
            derived: Vec::new(),
            dead_letters: Vec::new(),
            cursor: None,
        }
    }

    /// A projection's own keyspace (`proj_<name>`), created on first use.
    ///
    /// # Errors
    /// Storage failures.
    pub fn projection_keyspace(&self, name: &str) -> Result<Keyspace> {
        Ok(self.inner.db.keyspace(
            &format!("{PROJECTION_PREFIX}{name}"),
            KeyspaceCreateOptions::default,
        )?)
    }

    /// Deletes every record of a projection keyspace (for a rebuild).
    ///
    /// # Errors
    /// Storage failures.
    pub fn clear_projection(&self, name: &str) -> Result<()> {
        Ok(self.projection_keyspace(name)?.clear()?)
    }

    /// Commits a projection batch: its writes, its derived outbox entries (positions
    /// assigned now, in commit order), its dead letters and its cursor, atomically.
    /// Projections are rebuildable, so this hands the journal to the OS without an
    /// fsync; a crash loses at most a suffix of projection work, never its atomicity.
    ///
    /// # Errors
    /// Storage failures; then nothing of the batch was written.
    pub fn commit_projection(&self, projection: ProjectionBatch) -> Result<Vec<OutboxSeq>> {
        // On the store's committer thread, at the daemon's priority: projections apply
        // on lowered threads, and a lowered thread holding the writer's lock or fjall's
        // journal lock while other work takes the CPU would hold acknowledgements back.
        if std::thread::current().name() == Some(COMMITTER_THREAD) {
            return self.commit_projection_here(projection);
        }
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let store = self.clone();
        let job: CommitJob = Box::new(move || {
            let _ = reply.send(store.commit_projection_here(projection));
        });
        if let Err(std::sync::mpsc::SendError(job)) = self.inner.committer.send(job) {
            // The committer is gone (it panicked): commit on this thread.
            job();
        }
        answer.recv().unwrap_or(Err(StoreError::Committer(
            "the store's committer thread stopped during the commit",
        )))
    }

    fn commit_projection_here(&self, projection: ProjectionBatch) -> Result<Vec<OutboxSeq>> {
        let inner = &self.inner;
        let ProjectionBatch {
            mut batch,
            derived,
            dead_letters,
            cursor,
        } = projection;
        self.check_space(WriteShare::Derived)?;
        // Only what must be numbered (derived entries, dead letters) takes the writer's
        // lock, which the commit path takes for every append: a large projection batch
        // (a replay, a rebuild) would otherwise hold acknowledgements back for as long
        // as it commits. The batch is atomic on its own, its cursor with it.
        let mut writer = (!derived.is_empty() || !dead_letters.is_empty()).then(|| self.writer());
        let (last_seq, last_dead_letter) = writer.as_ref().map_or((OutboxSeq::ZERO, 0), |w| {
            (w.last_seq, w.last_dead_letter_id)
        });
        let mut next_seq = last_seq;
        let mut assigned = Vec::with_capacity(derived.len());
        for entry in derived {
            next_seq = next_seq.next();
            batch.insert(
                &inner.outbox,
                keys::seq_key(next_seq),
                encode_outbox(&OutboxRecordV1::Derived(entry))?,
            );
            assigned.push(next_seq);
        }
        if next_seq != last_seq {
            batch.insert(&inner.meta, META_LAST_SEQ, encode_u64(next_seq.0)?);
        }
        let mut next_dead_letter = last_dead_letter;
        for dead_letter in &dead_letters {
            next_dead_letter += 1;
            batch.insert(
                &inner.dead_letters,
                next_dead_letter.to_be_bytes(),
                encode_dead_letter(dead_letter)?,
            );
        }
        if next_dead_letter != last_dead_letter {
            batch.insert(
                &inner.meta,
                META_LAST_DEAD_LETTER,
                encode_u64(next_dead_letter)?,
            );
        }
        if let Some((consumer, seq)) = &cursor {
            batch.insert(&inner.cursors, consumer.as_bytes(), encode_u64(seq.0)?);
        }
        self.wrote(
            batch
                .commit()
                .and_then(|()| inner.db.persist(PersistMode::Buffer))
                .map_err(crate::StoreError::from),
        )?;
        if let Some(writer) = writer.as_mut() {
            writer.last_seq = next_seq;
            writer.last_dead_letter_id = next_dead_letter;
            self.publish_head(next_seq);
        }
        drop(writer);
        if !dead_letters.is_empty() {
            STORE_METRICS.dead_letters.inc_by(dead_letters.len() as u64);
        }
        Ok(assigned)
    }
}
