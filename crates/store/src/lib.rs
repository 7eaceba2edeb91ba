//! `memory-store`: agent-memory's source of truth — the immutable event log, its
//! idempotency and time indexes, the outbox (the change feed every projection consumes),
//! consumer cursors and the dead-letter partition, in one fjall database.
//!
//! An append writes each event and its index entries (the feed reads events from the
//! log itself; the outbox holds derived entries) in one atomic
//! batch and makes it durable before returning, so an acknowledged event survives
//! `kill -9`. Positions ([`OutboxSeq`]) follow commit order.
//!
//! ```
//! use memory_store::{AppendOutcome, Store, StoreOptions};
//! use memory_types::{parse_payload, ValidationLimits, OutboxSeq};
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
//! let payload = br#"{"event_id": "e1", "session_id": "s", "timestamp": 1, "kind": "note", "text": "x"}"#;
//! let events: Vec<_> = parse_payload(payload, "default", &ValidationLimits::default())
//!     .unwrap().into_iter().map(Result::unwrap).collect();
//! assert_eq!(store.append_events(&events).unwrap(), vec![AppendOutcome::Appended(OutboxSeq(1))]);
//! assert_eq!(store.append_events(&events).unwrap(), vec![AppendOutcome::Duplicate(OutboxSeq(1))]);
//! assert_eq!(store.read_feed(OutboxSeq::ZERO, 10).unwrap().len(), 1);
//! ```
//!
//! It is not:
//! - a projection: the TOC, indexes and graph live elsewhere and are rebuilt from here,
//! - shared between processes: one process opens a data dir at a time
//!   ([`StoreError::Locked`]),
//! - a place for mutable records: events are never changed or deleted, but for the one
//!   audited exception of `admin forget` ([`Store::forget`], [`compact_after_forget`]).

#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod codec;
mod compact;
mod error;
mod keys;
mod metrics;
mod records;
mod space;
mod store;

pub use compact::{
    CompactReport, DATA_DIR_LOCK_FILE, DataDirLock, compact_after_forget, lock_data_dir,
};
pub use error::{Result, StoreError};
pub use fjall::Keyspace;
pub use memory_types::{AppendOutcome, OutboxSeq};
pub use metrics::{STORE_METRICS, StoreMetrics};
pub use records::{DeadLetter, DerivedEntry, FeedItem};
pub use space::WriteShare;
pub use store::{
    Durability, ForgetBatch, ProjectionBatch, STORE_FORMAT_VERSION, Store, StoreCopy, StoreOptions,
    StoreStatus, StoreView,
};
