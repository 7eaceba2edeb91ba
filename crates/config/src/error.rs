//! Configuration errors: which file, which key, what is wrong.

use std::path::PathBuf;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `--config` names a file that does not exist.
    #[error("config file {path} does not exist")]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// The file or the environment does not parse or names unknown keys.
    #[error("invalid configuration: {0}")]
    Parse(Box<figment::Error>),
    /// Values parse but break a rule.
    #[error("invalid configuration: {key}: {message}")]
    Invalid {
        /// The dotted key, e.g. `ingest.max_payload_bytes`.
        key: &'static str,
        /// The rule.
        message: String,
    },
}

impl From<figment::Error> for ConfigError {
    fn from(err: figment::Error) -> Self {
        ConfigError::Parse(Box::new(err))
    }
}

/// `Result` with [`ConfigError`].
pub type Result<T> = std::result::Result<T, ConfigError>;
