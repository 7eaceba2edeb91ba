//! Key layouts. Integers are big-endian so keys sort numerically; strings that may
//! contain any character come last or are length-prefixed, so no separator can collide.

use memory_types::OutboxSeq;

use crate::error::{Result, StoreError};

/// `seq` → 8 bytes, for the log, the outbox and dead letters.
pub(crate) fn seq_key(seq: OutboxSeq) -> [u8; 8] {
    seq.to_be_bytes()
}

/// Reads a sequence key back.
pub(crate) fn seq_from_key(keyspace: &'static str, key: &[u8]) -> Result<OutboxSeq> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| StoreError::CorruptKey {
        keyspace,
        detail: format!("expected 8 bytes, found {}", key.len()),
    })?;
    Ok(OutboxSeq(u64::from_be_bytes(bytes)))
}

/// Reads the trailing sequence number of an index key.
pub(crate) fn trailing_seq(keyspace: &'static str, key: &[u8]) -> Result<OutboxSeq> {
    match key.len().checked_sub(8) {
        Some(start) => seq_from_key(keyspace, &key[start..]),
        None => Err(StoreError::CorruptKey {
            keyspace,
            detail: "key shorter than 8 bytes".into(),
        }),
    }
}

/// Length-prefixed string: one byte of length (project ids are ≤ 64 bytes) then bytes.
fn push_short(key: &mut Vec<u8>, text: &str) {
    debug_assert!(text.len() <= usize::from(u8::MAX));
    key.push(u8::try_from(text.len()).unwrap_or(u8::MAX));
    key.extend_from_slice(text.as_bytes());
}

/// Length-prefixed string with a 2-byte length, for session ids (≤ 256 chars, ≤ 1 KiB).
fn push_long(key: &mut Vec<u8>, text: &str) {
    key.extend_from_slice(&u16::try_from(text.len()).unwrap_or(u16::MAX).to_be_bytes());
    key.extend_from_slice(text.as_bytes());
}

/// `project | event_id` → seq: the idempotency index.
pub(crate) fn event_id_key(project_id: &str, event_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + project_id.len() + event_id.len());
    push_short(&mut key, project_id);
    key.extend_from_slice(event_id.as_bytes());
    key
}

/// `project | timestamp | seq`: the project's events in time order.
pub(crate) fn time_key(project_id: &str, timestamp_ms: u64, seq: OutboxSeq) -> Vec<u8> {
    let mut key = project_prefix(project_id);
    key.extend_from_slice(&timestamp_ms.to_be_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Prefix of all of a project's keys in the time and session indexes.
pub(crate) fn project_prefix(project_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + project_id.len() + 16);
    push_short(&mut key, project_id);
    key
}

/// `project | session | timestamp | seq`: one session's events in time order.
pub(crate) fn session_key(
    project_id: &str,
    session_id: &str,
    timestamp_ms: u64,
    seq: OutboxSeq,
) -> Vec<u8> {
    let mut key = session_prefix(project_id, session_id);
    key.extend_from_slice(&timestamp_ms.to_be_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Prefix of one session's keys.
pub(crate) fn session_prefix(project_id: &str, session_id: &str) -> Vec<u8> {
    let mut key = project_prefix(project_id);
    push_long(&mut key, session_id);
    key
}

/// Appends a timestamp bound to a prefix (for range scans).
pub(crate) fn with_timestamp(prefix: &[u8], timestamp_ms: u64) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.extend_from_slice(&timestamp_ms.to_be_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_prefixes_do_not_collide() {
        // "ab" + session "c" must not share a prefix with project "a" + session "bc".
        let one = session_prefix("ab", "c");
        let two = session_prefix("a", "bc");
        assert!(!one.starts_with(&two) && !two.starts_with(&one));
        assert!(!time_key("ab", 1, OutboxSeq(1)).starts_with(&project_prefix("a")));
    }

    #[test]
    fn time_keys_sort_by_time_then_seq() {
        let early = time_key("p", 10, OutboxSeq(9));
        let late = time_key("p", 11, OutboxSeq(1));
        assert!(early < late);
        assert_eq!(trailing_seq("t", &late).expect("seq"), OutboxSeq(1));
    }
}
