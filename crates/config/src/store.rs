//! `[store]`: the event log's durability and cache.

use serde::{Deserialize, Serialize};

/// When an acknowledged event counts as durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurabilityConfig {
    /// fsync before every acknowledgement (default): survives power loss.
    #[default]
    SyncAll,
    /// fdatasync before every acknowledgement.
    SyncData,
    /// OS buffers only: survives kill -9, not power loss.
    Buffer,
}

/// `[store]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sync_all` (default), `sync_data` or `buffer`.
    pub durability: DurabilityConfig,
    /// Block cache size in MiB. Default 64.
    pub cache_size_mb: u64,
    /// Free space kept on the data dir's filesystem, in MiB. Ingest answers
    /// `unavailable` (and `/readyz` turns 503) while less is free; projections may go
    /// on down to half of it; the rest is for the store's flushes and compactions. A
    /// write that fails on a full disk would poison the store until a restart, so the
    /// store stops short of it and resumes by itself once space is freed. 0 turns the
    /// check off. Default 1024.
    pub min_free_mb: u64,
    /// What the store's memtables (writes not yet flushed to tables) may hold in all,
    /// MiB: over it the largest are flushed. Bounds the store's memory and what an open
    /// replays from the journal. 0: only fjall's own limit, 64 MiB per keyspace.
    /// Default 256.
    pub write_buffer_mb: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durability: DurabilityConfig::SyncAll,
            cache_size_mb: 64,
            min_free_mb: 1024,
            write_buffer_mb: 256,
        }
    }
}
