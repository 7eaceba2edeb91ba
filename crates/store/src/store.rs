//! [`Store`]: the event log, its indexes, the outbox, cursors and dead letters in one
//! fjall database, so that an event and its index entries are written in one atomic
//! batch, and a projection's writes with its derived outbox entries and cursor.

mod append;
mod dead_letters;
mod feed;
mod forget;
mod handle;
mod log_reads;
mod options;
mod projection;
mod replica;
mod snapshot;
mod write_buffer;

pub use forget::ForgetBatch;
pub(crate) use handle::META_FORGET_PENDING;
pub use handle::{STORE_FORMAT_VERSION, Store, StoreStatus};
pub use options::{Durability, StoreOptions};
pub use projection::ProjectionBatch;
pub use snapshot::{StoreCopy, StoreView};

#[cfg(test)]
#[path = "store_tests.rs"]
mod store_tests;
