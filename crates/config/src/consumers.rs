//! `[consumers]`: how outbox consumers read, retry, park entries and restart.

use serde::{Deserialize, Serialize};

/// `[consumers]`: how every outbox consumer reads, retries and parks entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsumerConfig {
    /// Entries read per step. Default 256.
    pub batch_size: usize,
    /// Attempts at one entry before it is parked in the dead-letter partition. Default 5.
    pub max_attempts: u32,
    /// First retry delay, milliseconds; doubles per attempt. Default 100.
    pub retry_base_ms: u64,
    /// Longest retry delay, milliseconds. Default 30000.
    pub retry_max_ms: u64,
    /// Safety-net poll when no append notification arrives, milliseconds. Default 1000.
    pub poll_interval_ms: u64,
    /// After catching up, wait this long before applying more, so a trickle of appends
    /// is applied in batches, milliseconds. Default 20.
    pub linger_ms: u64,
    /// First restart delay of a crashed actor, milliseconds; doubles per crash. Default 100.
    pub restart_base_ms: u64,
    /// Longest restart delay, milliseconds. Default 30000.
    pub restart_max_ms: u64,
    /// The nice value (0–19) of the threads background work runs on: what consumers
    /// apply (indexing, embedding, the TOC), index opens and rebuilds, the prune.
    /// Under load they then leave the CPU to ingest and queries, and still use every
    /// idle cycle. 0 runs them at the daemon's priority. Default 10.
    pub background_nice: i32,
    /// Also run those threads in Linux's `SCHED_IDLE` class: they get only CPU time no
    /// other thread of the machine wants, and a waking ingest or query thread takes
    /// the core from them at once (a nice value only shares it). Under a load that
    /// keeps every core busy for good, background work then waits until the load
    /// ends. Ignored elsewhere than Linux. Default true.
    pub background_idle: bool,
    /// Cores kept free of those threads (the lowest numbered the daemon may use; never
    /// all of them). On a small virtual machine a busy core, even busy with idle-class
    /// work, delays the disk's flushes and with them every acknowledgement; a core
    /// background work never takes can go idle. 0 lets background work use every
    /// core (a faster catch-up when nothing else runs). Ignored elsewhere than Linux.
    /// Default: 1 under `serve` and `mcp`, which answer requests; 0 for every other
    /// command (`ingest --file`, `admin`, queries on a data dir), which answer no one.
    pub background_spare_cores: Option<usize>,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            batch_size: 256,
            max_attempts: 5,
            retry_base_ms: 100,
            retry_max_ms: 30_000,
            poll_interval_ms: 1_000,
            linger_ms: 20,
            restart_base_ms: 100,
            restart_max_ms: 30_000,
            background_nice: 10,
            background_idle: true,
            background_spare_cores: None,
        }
    }
}
