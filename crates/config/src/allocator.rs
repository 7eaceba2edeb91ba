//! `[allocator]`: how soon memory the daemon frees goes back to the OS.

use serde::{Deserialize, Serialize};

/// The longest `purge_delay_ms` accepted: an hour (mimalloc adds the delay to its clock;
/// `memory_alloc::set_purge_delay` clamps to the same bound for callers without a config).
pub(crate) const MAX_PURGE_DELAY_MS: u64 = 3_600_000;

/// `[allocator]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AllocatorConfig {
    /// How long the allocator (mimalloc) keeps memory freed before it returns it to the
    /// OS, milliseconds, in the processes that stay up (`serve`, `mcp`, `import
    /// --follow`); 0 returns it at once, at most 3 600 000 (an hour). mimalloc's own
    /// delay, 1 000, keeps what the last second of a burst of searches, a catch-up or
    /// ingest freed resident after it: at 132 646 documents the daemon held 306–315 MiB
    /// idle and 528–537 after searches and embedding with it, 238–239 and 397–400 with 0.
    /// The cost of 0, measured on 2 cores: hybrid searches at eight clients 4–16 % slower
    /// at the median (one client the same), durable ingest over NATS ~12 % lower
    /// (docs/benchmarks.md). Batch jobs keep mimalloc's delay. `MIMALLOC_PURGE_DELAY` in
    /// the environment wins. Default 0.
    pub purge_delay_ms: u64,
}
