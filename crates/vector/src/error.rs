//! The one error type of `memory-vector`.

use std::path::Path;
use std::sync::Arc;

/// `crate::Result<T>`.
pub type Result<T> = std::result::Result<T, VectorError>;

/// Everything that can go wrong in the vector index. `Clone`, so it can cross actors.
///
/// The storage variants ([`VectorError::Corrupt`], [`VectorError::UnsupportedFormatVersion`],
/// [`VectorError::IndexDimensions`], [`VectorError::MissingSegment`]) are fatal for the
/// directory: the index never opens as silently empty. The caller reports the index
/// unhealthy and rebuilds it from the log into a fresh directory.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// A [`crate::VectorConfig`] field is out of range.
    #[error("invalid vector index config: {0}")]
    InvalidConfig(String),
    /// A document's or a query's vector does not have the index's dimensions.
    #[error("the vector has {found} dimensions, the index holds {expected}")]
    WrongDimensions {
        /// The index's dimensions.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// A vector that has no direction: all zeros, or a NaN or infinite component.
    #[error("the vector cannot be normalized: {0}")]
    InvalidVector(&'static str),
    /// An unknown `doc_type` string (valid: `toc_node`, `grip`, `event`, `idea`).
    #[error("unknown doc_type {0:?}, expected toc_node, grip, event or idea")]
    UnknownDocType(String),
    /// Reading, writing, syncing, renaming or removing a file or directory failed.
    #[error("i/o error on {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What the OS said.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// A file of the index is not what it should be: wrong magic, truncated, a checksum
    /// or length that does not match, bytes that do not decode, or contents that
    /// contradict the manifest. Rebuild the index.
    #[error("corrupt vector index file {path}: {reason}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file written by another version of this crate.
    #[error("{path} has format version {found}, this build reads version {supported}")]
    UnsupportedFormatVersion {
        /// The file.
        path: String,
        /// The version in the file.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },
    /// The directory holds vectors of other dimensions than configured (another
    /// embedding model). Rebuild the index.
    #[error(
        "{path} holds vectors of {on_disk} dimensions, the index is configured for {configured}"
    )]
    IndexDimensions {
        /// The file.
        path: String,
        /// Dimensions on disk.
        on_disk: usize,
        /// Dimensions configured.
        configured: usize,
    },
    /// The manifest names a segment file that does not exist: files were lost or removed
    /// by hand. Rebuild the index.
    #[error("the manifest names segment file {path}, which does not exist")]
    MissingSegment {
        /// The missing file.
        path: String,
    },
    /// [`crate::VectorIndex::install`] was given a segment the index can no longer take:
    /// it was prepared before [`crate::VectorIndex::clear`], by another index, or merges
    /// segments that are gone. Nothing changed; prepare a new job.
    #[error("stale job: {0}")]
    StaleJob(String),
    /// A segment or manifest could not be encoded (a bug, not a data problem).
    #[error("cannot encode {what}: {message}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// The encoder's message.
        message: String,
    },
}

impl From<memory_types::UnknownDocType> for VectorError {
    fn from(err: memory_types::UnknownDocType) -> Self {
        Self::UnknownDocType(err.0)
    }
}

impl VectorError {
    pub(crate) fn io(path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source: Arc::new(error),
        }
    }

    pub(crate) fn corrupt(path: &Path, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        }
    }
}
