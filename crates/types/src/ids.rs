//! Identifiers with their ordering guarantees.

use serde::{Deserialize, Serialize};

/// Position in the outbox, the store's change feed.
///
/// Sequence numbers are allocated in commit order, start at 1 and never repeat; 0 means
/// "before everything". Every entry with seq ≤ n is durable once n has been published as
/// the store's head, so a consumer whose cursor is n has seen exactly the entries 1..=n.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct OutboxSeq(pub u64);

impl OutboxSeq {
    /// The position before the first entry.
    pub const ZERO: OutboxSeq = OutboxSeq(0);

    /// The next position.
    #[must_use]
    pub fn next(self) -> OutboxSeq {
        OutboxSeq(self.0 + 1)
    }

    /// Big-endian bytes, so that keys sort in sequence order.
    #[must_use]
    pub fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

impl std::fmt::Display for OutboxSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Longest accepted project id, in bytes.
pub const MAX_PROJECT_ID_LEN: usize = 64;

/// A project id must be usable as one NATS subject token (`memory.ingest.<project>`), so
/// it is limited to ASCII letters, digits, `-` and `_`, 1 to 64 bytes.
#[must_use]
pub fn is_valid_project_id(project_id: &str) -> bool {
    !project_id.is_empty()
        && project_id.len() <= MAX_PROJECT_ID_LEN
        && project_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_ids_are_subject_tokens() {
        assert!(is_valid_project_id("webapp"));
        assert!(is_valid_project_id("locomo-26"));
        assert!(is_valid_project_id("a_b"));
        assert!(!is_valid_project_id(""));
        assert!(!is_valid_project_id("a.b"));
        assert!(!is_valid_project_id("a b"));
        assert!(!is_valid_project_id("a*"));
        assert!(!is_valid_project_id(">"));
        assert!(!is_valid_project_id(&"x".repeat(65)));
    }

    #[test]
    fn seq_bytes_sort_like_numbers() {
        let small = OutboxSeq(255).to_be_bytes();
        let large = OutboxSeq(256).to_be_bytes();
        assert!(small < large);
        assert_eq!(OutboxSeq::ZERO.next(), OutboxSeq(1));
    }
}
