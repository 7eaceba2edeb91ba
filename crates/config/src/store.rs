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
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durability: DurabilityConfig::SyncAll,
            cache_size_mb: 64,
        }
    }
}
