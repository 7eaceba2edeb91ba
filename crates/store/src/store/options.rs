//! How a store is opened: [`Durability`] and [`StoreOptions`].

use fjall::PersistMode;
use serde::{Deserialize, Serialize};

/// When an append counts as durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// `fsync` the journal (data and metadata) before acknowledging. Survives power loss.
    #[default]
    SyncAll,
    /// `fdatasync` the journal before acknowledging; enough on most Linux file systems.
    SyncData,
    /// Hand the journal to the OS before acknowledging: survives a process crash
    /// (kill -9), not a power loss or kernel panic.
    Buffer,
}

impl Durability {
    pub(super) fn persist_mode(self) -> PersistMode {
        match self {
            Durability::SyncAll => PersistMode::SyncAll,
            Durability::SyncData => PersistMode::SyncData,
            Durability::Buffer => PersistMode::Buffer,
        }
    }
}

/// How to open a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// When an append counts as durable. Default [`Durability::SyncAll`].
    pub durability: Durability,
    /// Block cache, in MiB. Default 64.
    pub cache_size_mb: u64,
    /// Free space kept on the data dir's filesystem, in MiB: ingest is refused below
    /// it, derived work below half of it (see [`crate::WriteShare`]). 0 turns the check
    /// off. Default 1024.
    pub min_free_mb: u64,
    /// What all memtables together may hold, in MiB, before the largest are flushed
    /// (see `write_buffer.rs`): bounds the store's memory and what an open replays.
    /// 0 leaves only fjall's per-keyspace limit (64 MiB each). Default 256.
    pub write_buffer_mb: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            durability: Durability::SyncAll,
            cache_size_mb: 64,
            min_free_mb: 1024,
            write_buffer_mb: 256,
        }
    }
}
