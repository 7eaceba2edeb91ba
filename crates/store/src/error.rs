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
    /// The data dir's filesystem has less free space than the store keeps in reserve
    /// (`[store] min_free_mb`): the write was refused before it could fail (and poison
    /// the store). Writes resume by themselves once space is freed.
    #[error(
        "the data dir's filesystem ({path}) has {} free, under the {} the store keeps in \
         reserve ([store] min_free_mb); writes resume once space is freed",
        mib(*available), mib(*reserve)
    )]
    NoSpace {
        /// The data directory.
        path: PathBuf,
        /// Bytes free when the write was refused.
        available: u64,
        /// The configured reserve, in bytes.
        reserve: u64,
    },
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
    /// An `admin forget` rewrote events but did not finish removing the older copies
    /// (projections, indexes, journals): nothing may read the data dir until it has.
    #[error(
        "an `admin forget` did not finish in {path}: older copies of what it rewrote may remain; \
         run `memory-daemon --data-dir {path} admin forget --resume` before anything else"
    )]
    ForgetUnfinished {
        /// The data directory.
        path: PathBuf,
    },
    /// `admin forget` asked to rewrite an event into one with another identity.
    #[error("cannot rewrite event {seq}: {detail}")]
    InvalidRewrite {
        /// Its position.
        seq: u64,
        /// What differs.
        detail: String,
    },
    /// A file operation of the compaction that follows `admin forget`.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// Why it failed.
        source: Arc<std::io::Error>,
    },
    /// The thread that commits projection batches stopped (it panicked) while one was
    /// in its hands: whether it was written is unknown; the consumer applies it again.
    #[error("{0}")]
    Committer(&'static str),
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

impl StoreError {
    /// A short name for metrics: `no_space`, `io`, `poisoned` or `other`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::NoSpace { .. } => "no_space",
            StoreError::Poisoned => "poisoned",
            StoreError::Storage(err) if matches!(**err, fjall::Error::Poisoned) => "poisoned",
            StoreError::Io { .. } => "io",
            err if err.is_environmental() => "io",
            _ => "other",
        }
    }

    /// Whether the failure is the device's, not the data's: an I/O error (a full disk,
    /// a read-only or failing device) or the poisoned state it leaves. Retrying once the
    /// device is mended can succeed; a record that does not decode, or a checksum that
    /// does not match, cannot.
    #[must_use]
    pub fn is_environmental(&self) -> bool {
        match self {
            StoreError::Poisoned | StoreError::NoSpace { .. } => true,
            StoreError::Storage(err) => matches!(
                **err,
                fjall::Error::Io(_)
                    | fjall::Error::Poisoned
                    | fjall::Error::Storage(fjall::LsmError::Io(_))
            ),
            _ => false,
        }
    }
}

/// `bytes` as MiB with one decimal, for messages.
fn mib(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes as f64 / f64::from(1u32 << 20);
    format!("{mib:.1} MiB")
}
