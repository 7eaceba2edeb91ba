//! `memory-summarize`: what goes into a TOC node — the [`Summarizer`] trait, the
//! default [`ExtractiveSummarizer`], and the grip rules.
//!
//! When a segment closes, the grip extractor picks its salient verbatim excerpts
//! ([`grips`]) and the rollup builder asks a [`Summarizer`] for the node's title,
//! summary, bullets citing those grips, and keywords; a day, week, month or year node is
//! summarized from its children alone.
//! - [`Summarizer`] with its inputs ([`SegmentInput`], [`ParentInput`], [`SummaryEvent`])
//!   and output ([`Summary`]): the seam the LLM summarizer of `memory-llm` implements;
//! - [`extractive`]: [`ExtractiveSummarizer`], the default summarizer: keywords by
//!   tf × idf, bullets citing grips, a headline title, deterministic and offline;
//! - [`grips`]: [`grips::extract_grips`], picking a segment's salient excerpts
//!   (decisions, problems, fixes, questions, identifiers, paths, numbers, dates, rare
//!   terms) deterministically, each a substring of its event's text; the sentence and
//!   signal rules it shares with the extractive summarizer live in private modules.
//!
//! ```
//! use chrono::NaiveDate;
//! use memory_summarize::grips::{GripConfig, GripSourceEvent, extract_grips};
//! use memory_summarize::{ExtractiveSummarizer, SegmentInput, Summarizer, SummaryEvent};
//! use memory_toc::TocNodeId;
//!
//! let text = "Login fails after the refresh change. We decided to set the JWT expiry to 15 minutes.";
//! let source = GripSourceEvent { event_id: "e1", timestamp_ms: 0, role: "assistant", kind: "assistant_message", text };
//! let grips = extract_grips(&[source], &|_| 0, 0, &GripConfig::default());
//! assert!(grips.iter().any(|grip| grip.excerpt == "We decided to set the JWT expiry to 15 minutes."));
//!
//! let day = NaiveDate::from_ymd_opt(2026, 1, 30).unwrap();
//! let segment_id = TocNodeId::segment_for("default", day, 0, "e1");
//! let events = [SummaryEvent { event_id: "e1", timestamp_ms: 0, role: "assistant", text }];
//! let summary = ExtractiveSummarizer::default()
//!     .summarize_segment(&SegmentInput {
//!         segment_id: &segment_id,
//!         project_id: "default",
//!         session_id: "s1",
//!         events: &events,
//!         grips: &[],
//!         corpus_document_frequency: &|_| 0,
//!         num_corpus_documents: 0,
//!     })
//!     .unwrap();
//! // The headline is the decision, prefixed with a top keyword it lacks.
//! assert_eq!(summary.title, "change: We decided to set the JWT expiry to 15 minutes");
//! ```
//!
//! It is not:
//! - the TOC model: nodes, bullets, grips and their ids are `memory-toc`'s records,
//!   read and written here but defined there;
//! - storage or scheduling: the grip extractor and rollup builder actors load inputs,
//!   store grips and nodes, and decide which parents to refresh and when;
//! - a model client: the LLM summarizer and its HTTP client are `memory-llm`'s; it
//!   falls back to [`ExtractiveSummarizer`] here.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod bounds;
mod error;
pub mod extractive;
pub mod grips;
mod sentences;
mod signals;
mod summarizer;

pub use bounds::check_summary;
pub use error::{Result, SummarizeError};
pub use extractive::{ExtractiveConfig, ExtractiveSummarizer};
pub use summarizer::{ParentInput, SegmentInput, Summarizer, Summary, SummaryEvent};
