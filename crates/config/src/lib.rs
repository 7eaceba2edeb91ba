//! `memory-config`: the daemon's configuration — defaults, then a TOML file, then
//! `AGENT_MEMORY_*` environment variables (nested keys joined by `__`, e.g.
//! `AGENT_MEMORY_NATS__URL`), validated into plain structs. Every field's doc comment is
//! the user documentation; `config/default.toml` repeats them with their defaults and a
//! test keeps the two equal.
//!
//! ```
//! let config = memory_config::Config::load(None).unwrap();
//! assert_eq!(config.ingest.max_payload_bytes, 1 << 20);
//! ```
//!
//! It is not: hot-reloadable (restart to apply), or a place for secrets to be logged
//! (`config show` masks credentials).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod allocator;
mod capture;
mod consumers;
mod error;
mod indexing;
mod ingest;
mod llm;
mod model;
mod nats;
mod store;
mod telemetry;
mod teleport;
mod toc;

pub use allocator::AllocatorConfig;
pub use capture::CaptureConfig;
pub use consumers::ConsumerConfig;
pub use error::{ConfigError, Result};
pub use indexing::{IndexingConfig, IndexingEngine};
pub use ingest::IngestConfig;
pub use llm::{LlmConfig, ToolProtocol};
pub use model::Config;
pub use nats::{JetStreamConfig, NatsConfig};
pub use store::{DurabilityConfig, StoreConfig};
pub use telemetry::{LogFormatConfig, TelemetryConfig};
pub use teleport::{FusionMethod, RankingConfig};
pub use toc::TocConfig;
