//! `memory-redact`: secrets never reach the log.
//!
//! The log is immutable and kept forever, so redaction happens before the append, in
//! the daemon, on every path (the ingest actor calls [`Redactor::redact_event`] on each
//! valid event before the group commit), never trusted to clients:
//!
//! - rules derived from gitleaks' published patterns (`rules/gitleaks-derived.toml`,
//!   translated to Rust regex syntax, provenance in its header) and our own
//!   (`rules/agent-memory.toml`: `Authorization:` headers, `user:pass@` in URLs,
//!   `KEY=value` lines of env dumps, AWS secret keys); PEM blocks are gitleaks'
//!   `private-key`;
//! - compiled once: a keyword prefilter (Aho-Corasick) names the rules that can match,
//!   their captures give the secrets (not a `RegexSet` of all rules: 250 times slower
//!   on the sample, measured);
//! - the whole result of reading a secrets file (`.env*`, `*.pem`, `id_rsa`, credential
//!   files; by the event's `file_path` or `command` metadata);
//! - `<private>…</private>` spans removed.
//!
//! A secret becomes `[REDACTED:<rule>:<tag>]`, the tag a keyed hash (HMAC-SHA256 with
//! the data dir's key, 8 hex characters), so the same secret stays recognisable without
//! being stored. Counts per rule go into the event's `redactions` metadata and
//! `memory_redactions_total{rule}`.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod forget;
mod key;
pub mod metrics;
mod redactor;
pub mod rules;

pub use forget::{
    FORGET_SESSION, FORGOTTEN, FORGOTTEN_KEY, ForgetError, ForgetSelector, ForgetSpec, Forgetter,
    Rewritten,
};
pub use key::load_or_create_key;
pub use redactor::{
    COMMAND_KEY, FILE_PATH_KEY, Findings, PRIVATE_TAG, REDACTIONS_KEY, Redactor, SENSITIVE_FILE,
    is_secrets_file, keyed_tag,
};
pub use rules::{Rule, parse_rules, shannon_entropy};

/// Why a redactor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    /// A rule file does not parse or a rule does not compile.
    #[error("redaction rules ({source_name}): {message}")]
    Rules {
        /// Which file or part.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// The tag key is missing or unreadable.
    #[error("redaction key: {0}")]
    Key(String),
}
