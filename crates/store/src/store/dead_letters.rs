//! The dead-letter partition: parking entries durably (deduplicated by source key) and listing them.

use tracing::warn;

use super::handle::{META_DEAD_LETTER_KEY_PREFIX, META_LAST_DEAD_LETTER, Store};
use crate::error::Result;
use crate::keys;
use crate::metrics::STORE_METRICS;
use crate::records::{DeadLetter, decode_dead_letter, decode_u64, encode_dead_letter, encode_u64};
use crate::space::WriteShare;

impl Store {
    /// Parks one entry in the dead-letter partition, durably. `dedupe_key` names the
    /// entry's identity at its source (a JetStream stream sequence): a redelivery of an
    /// entry already parked returns the first record's id and writes nothing.
    ///
    /// # Errors
    /// Storage failures.
    pub fn record_dead_letter(
        &self,
        dead_letter: DeadLetter,
        dedupe_key: Option<&str>,
    ) -> Result<u64> {
        let inner = &self.inner;
        self.check_space(WriteShare::Derived)?;
        let mut writer = self.writer();
        let key_record = dedupe_key.map(|key| {
            let mut record = META_DEAD_LETTER_KEY_PREFIX.to_vec();
            record.extend_from_slice(key.as_bytes());
            record
        });
        if let Some(record) = &key_record
            && let Some(existing) = inner.meta.get(record)?
        {
            return decode_u64(&existing);
        }
        let id = writer.last_dead_letter_id + 1;
        let mut batch = inner.db.batch();
        if let Some(record) = key_record {
            batch.insert(&inner.meta, record, encode_u64(id)?);
        }
        batch.insert(
            &inner.dead_letters,
            id.to_be_bytes(),
            encode_dead_letter(&dead_letter)?,
        );
        batch.insert(&inner.meta, META_LAST_DEAD_LETTER, encode_u64(id)?);
        batch.commit()?;
        inner.db.persist(inner.durability.persist_mode())?;
        writer.last_dead_letter_id = id;
        drop(writer);
        STORE_METRICS.dead_letters.inc();
        warn!(source = %dead_letter.source, error = %dead_letter.error, "entry parked in dead letters");
        Ok(id)
    }

    /// The newest dead letters first, at most `limit`.
    ///
    /// # Errors
    /// Storage or decoding failures.
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<(u64, DeadLetter)>> {
        let mut out = Vec::new();
        for guard in self.inner.dead_letters.iter().rev().take(limit) {
            let (key, value) = guard.into_inner()?;
            out.push((
                keys::seq_from_key("dead_letters", &key)?.0,
                decode_dead_letter(&value)?,
            ));
        }
        Ok(out)
    }
}
