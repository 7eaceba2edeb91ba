//! `[capture]`: how coding agents' hooks and transcript importers feed the memory.

use serde::{Deserialize, Serialize};

/// `[capture]`: the hooks (`memory-daemon hook claude-code|codex`), their spool, the
/// daemon's own HTTP hook listener, and the importers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaptureConfig {
    /// Project id for everything the hooks and importers capture, instead of the one git
    /// gives (the origin's `owner-repo`, else the repository's folder, else the working
    /// directory's name). Also `AGENT_MEMORY_CAPTURE__PROJECT`. Default none.
    pub project: Option<String>,
    /// How long a hook may take end to end (read its input, send, get the reply),
    /// milliseconds. A hook that gets no reply in time writes its events to the spool and
    /// exits: the agent never waits on the memory. Default 50.
    pub hook_timeout_ms: u64,
    /// Most tokens of the context the SessionStart hook prints for the agent (recent
    /// sessions, decisions in force, open questions and todos, with citations); 0 prints
    /// none. Default 1500.
    pub context_tokens: usize,
    /// How long the SessionStart hook waits for that context, milliseconds; without an
    /// answer in time it prints nothing. Default 1000.
    pub context_timeout_ms: u64,
    /// Where hooks keep undelivered events and each session's hook state. Default
    /// `<data_dir>/spool`.
    pub spool_dir: Option<std::path::PathBuf>,
    /// Address of the daemon's HTTP hook listener (`POST /hooks/claude-code`,
    /// `POST /hooks/codex`), for agents' `http` hooks: no process per event. Empty: off.
    /// A non-loopback address needs `http_token`. Default empty.
    pub http_listen: String,
    /// Bearer token the HTTP hook listener requires (`Authorization: Bearer <token>`).
    /// A secret: `config show` masks it. Default none (no token on loopback).
    pub http_token: Option<String>,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            project: None,
            hook_timeout_ms: 50,
            context_tokens: 1_500,
            context_timeout_ms: 1_000,
            spool_dir: None,
            http_listen: String::new(),
            http_token: None,
        }
    }
}
