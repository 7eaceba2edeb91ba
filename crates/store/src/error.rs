//! The store's one error type.

use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in the store. `Clone`, so one failure can be reported to
/// every waiter of a group commit.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process holds the data directory.
    #[error(
        "data dir {path} is in use by another process (is a daemon running? talk to it with --nats-url)"
    )]
    Locked {
        /// The data directory.
        path: PathBuf,
    },
    /// A previous write failed at the device: fjall refuses further writes, because the
    /// journal's consistency can no longer be guaranteed. Restart the process to recover
    /// to the last durable batch; an operator should check the disk.
    #[error("store is poisoned after a failed write; restart to recover the last durable batch")]
    Poisoned,
    /// An I/O or storage-engine failure.
    #[error("storage error: {0}")]
    Storage(Arc<fjall::Error>),
    /// A record could not be encoded or decoded.
    #[error("cannot {op} {what}: {detail}")]
    Codec {
        /// `encode` or `decode`.
        op: &'static str,
        /// The record type.
        what: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// A record carries a format version this build does not know.
    #[error("{what} record has format version {found}; this build reads up to {supported}")]
    UnknownVersion {
        /// The record type.
        what: &'static str,
        /// The version byte found.
        found: u8,
        /// The newest version this build reads.
        supported: u8,
    },
    /// A key that should be well-formed is not: the store was written by something else.
    #[error("corrupt key in {keyspace}: {detail}")]
    CorruptKey {
        /// The keyspace.
        keyspace: &'static str,
        /// What is wrong.
        detail: String,
    },
}

impl From<fjall::Error> for StoreError {
    fn from(err: fjall::Error) -> Self {
        match err {
            fjall::Error::Poisoned => StoreError::Poisoned,
            other => StoreError::Storage(Arc::new(other)),
        }
    }
}

/// `Result` with [`StoreError`].
pub type Result<T> = std::result::Result<T, StoreError>;
