//! The one error type of `memory-summarize`.

/// Why a summarizer could not write a summary. Implementations that can fail (the LLM
/// one) fall back on their own; the error is for their metrics and logs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The backend could not be reached, timed out or answered with an error status.
    #[error("summarizer backend unavailable: {0}")]
    Unavailable(String),
    /// The backend answered, but not with a usable summary.
    #[error("summarizer answer unusable: {0}")]
    InvalidAnswer(String),
}

/// `Result` with [`SummarizeError`], used as `crate::Result<T>`.
pub type Result<T> = std::result::Result<T, SummarizeError>;
