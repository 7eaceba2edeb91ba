//! The one error type of `memory-search`.

use tantivy::TantivyError;
use tantivy::directory::error::OpenDirectoryError;

/// `crate::Result<T>`.
pub type Result<T> = std::result::Result<T, SearchError>;

/// Everything that can go wrong in the BM25 index. `Clone`, so it can cross actors.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query holds no searchable term: it is empty, only punctuation, or only
    /// stopwords. The service edge maps this to `invalid_argument`.
    #[error("the query holds no searchable term")]
    EmptyQuery,
    /// An unknown `doc_type` string (valid: `toc_node`, `grip`, `event`, `idea`).
    #[error("unknown doc_type {0:?}, expected toc_node, grip, event or idea")]
    UnknownDocType(String),
    /// The index directory could not be created or opened.
    #[error("cannot open the bm25 index directory {path}: {message}")]
    OpenDirectory {
        /// The directory asked for.
        path: String,
        /// Why it failed.
        message: String,
    },
    /// A stored document misses a field every document of this crate has: the index
    /// was written by something else or is corrupt. Rebuild it.
    #[error("corrupt bm25 document: missing or mistyped field {field}")]
    CorruptDocument {
        /// The field name.
        field: &'static str,
    },
    /// Anything tantivy reports: I/O, a busy writer lock (`LockFailure`), a schema that
    /// does not match the one on disk, data corruption.
    #[error("tantivy: {0}")]
    Tantivy(#[from] TantivyError),
}

impl From<memory_types::UnknownDocType> for SearchError {
    fn from(err: memory_types::UnknownDocType) -> Self {
        Self::UnknownDocType(err.0)
    }
}

impl SearchError {
    /// Whether the failure is the index directory's, not the documents': it cannot be
    /// written (a full disk, a read-only directory) or a writer thread died of that.
    /// Retrying once the directory is mended succeeds.
    #[must_use]
    pub fn is_environmental(&self) -> bool {
        matches!(
            self,
            SearchError::OpenDirectory { .. }
                | SearchError::Tantivy(
                    TantivyError::IoError(_)
                        | TantivyError::ErrorInThread(_)
                        | TantivyError::OpenWriteError(_)
                        | TantivyError::OpenDirectoryError(_)
                        | TantivyError::OpenReadError(_)
                )
        )
    }

    pub(crate) fn open_directory(path: &std::path::Path, error: &OpenDirectoryError) -> Self {
        Self::OpenDirectory {
            path: path.display().to_string(),
            message: error.to_string(),
        }
    }
}
