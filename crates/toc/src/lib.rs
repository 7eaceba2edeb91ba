//! `memory-toc`: the calendar and identity rules of the time table of contents.
//!
//! agent-memory files every conversation under a time hierarchy, year → month → ISO
//! week → day → segment (ARCHITECTURE §1). This crate is the pure logic of that
//! hierarchy, shared by the rollup builder that writes the tree and the query side that
//! walks it:
//! - [`TocLevel`] and [`TocNodeId`] (`toc:week:2026-W05`): parsing, parents, calendar
//!   children, and each node's UTC range with day boundaries in the configured zone;
//! - [`GripId`] (`grip:<ts_ms>:<ULID>`) and deterministic segment and grip ids, so a
//!   rebuild from the event log writes the same keys;
//! - [`calendar`]: local days, ISO weeks, "a week belongs to the month holding its
//!   Thursday";
//! - [`parse_time_hint`]: "yesterday", "last week", "in January", "2026-01-30" found
//!   anywhere in a question, as a range and the narrowest node that covers it;
//! - [`TocNode`], [`TocBullet`] and [`Grip`]: the records of the tree as stored and as
//!   sent in `toc.node` replies, with token estimates for reply budgets
//!   ([`memory_text::estimate_tokens`]);
//! - [`search`]: `toc.search_node` and `toc.search_children`, the index-free search that
//!   finds where a query matches in a node and ranks a node's children within a limit
//!   and a token budget, on the terms of [`memory_text`].
//!
//! ```
//! use chrono::{NaiveDate, TimeZone, Utc};
//! use memory_toc::{calendar, parse_time_hint, TocLevel, TocNodeId};
//!
//! let tz: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
//! // 2024-12-30 23:30 UTC is already the 31st in Berlin; that Tuesday is in ISO week
//! // 2025-W01, whose Thursday (2025-01-02) files it under January 2025.
//! let ts_ms = Utc.with_ymd_and_hms(2024, 12, 30, 23, 30, 0).unwrap().timestamp_millis() as u64;
//! let day = calendar::day_of(ts_ms, tz);
//! assert_eq!(day, NaiveDate::from_ymd_opt(2024, 12, 31).unwrap());
//! let chain = TocNodeId::day_and_ancestors(day).map(|node_id| node_id.to_string());
//! assert_eq!(chain, ["toc:day:2024-12-31", "toc:week:2025-W01", "toc:month:2025-01", "toc:year:2025"]);
//!
//! let week: TocNodeId = "toc:week:2025-W01".parse().unwrap();
//! assert_eq!(week.level(), TocLevel::Week);
//! let (start, end) = week.start_end(tz); // Monday 00:00 to the next Monday 00:00, Berlin
//! assert_eq!(start, Utc.with_ymd_and_hms(2024, 12, 29, 23, 0, 0).unwrap());
//! assert_eq!(end, Utc.with_ymd_and_hms(2025, 1, 5, 23, 0, 0).unwrap());
//!
//! let now = Utc.with_ymd_and_hms(2026, 2, 4, 10, 0, 0).unwrap();
//! let hint = parse_time_hint("what did we decide about JWT expiry last week?", now, tz).unwrap();
//! assert_eq!(hint.node.to_string(), "toc:week:2026-W05");
//! assert_eq!(hint.matched, "last week");
//! assert_eq!(hint.remainder, "what did we decide about JWT expiry?");
//! ```
//!
//! It is not:
//! - storage: the node and grip records are plain data here; keys on disk, reading and
//!   writing them belong to the store and the rollup builder;
//! - an actor or anything that does I/O or reads the clock: `now` and the time zone
//!   are always arguments, so every answer is reproducible in a test;
//! - the navigator: [`search`] scores the nodes it is given, but loading them, choosing
//!   where to drill in and walking the tree is the query side's job;
//! - text analysis or summarizing: terms and token estimates are `memory-text`'s, the
//!   grip rules, the `Summarizer` trait and the extractive summarizer `memory-summarize`'s.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod calendar;
mod error;
mod level;
mod node;
mod node_id;
pub mod search;
mod time_hint;

pub use chrono_tz::Tz;
pub use error::{MAX_ECHOED_INPUT_CHARS, Result, TocError};
pub use level::TocLevel;
pub use node::{Grip, TocBullet, TocNode};
pub use node_id::{GripId, TocNodeId};
pub use search::{
    ChildResult, DEFAULT_SEARCH_LIMIT, NodeMatch, SearchChildrenPage, SearchField, search_children,
    search_node,
};
pub use time_hint::{TimeHint, parse_time_hint};
