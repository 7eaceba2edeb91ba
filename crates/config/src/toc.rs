//! `[toc]`: the time table of contents and its time zone.

use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};

/// `[toc]`: the time table of contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TocConfig {
    /// IANA time zone whose local dates bound days, weeks, months and years, e.g.
    /// `Europe/Berlin`. Default `UTC`.
    pub timezone: String,
    /// A session's segment closes when the next event comes this much later, or after
    /// this much wall-clock silence, seconds. Default 1800.
    pub segment_gap_secs: u64,
    /// A segment closes at this token estimate (characters / 4). Default 4000.
    pub segment_max_tokens: u64,
    /// Tokens of a closed segment's tail carried into the next as context. Default 400.
    pub segment_overlap_tokens: u64,
    /// Most grips (verbatim excerpts) kept per segment. Default 8.
    pub grips_per_segment: usize,
    /// Longest grip excerpt, characters. Default 280.
    pub grip_max_chars: usize,
    /// Most events one index-free (TOC tier) search reads: when a time range holds
    /// more, only the segments whose summaries match best are read: reading an event
    /// costs a few microseconds, so 5000 keeps a search near 100 ms on two cores
    /// (docs/benchmarks.md). Default 5000.
    pub search_scan_budget_events: usize,
}

impl Default for TocConfig {
    fn default() -> Self {
        TocConfig {
            timezone: "UTC".into(),
            segment_gap_secs: 1_800,
            segment_max_tokens: 4_000,
            segment_overlap_tokens: 400,
            grips_per_segment: 8,
            grip_max_chars: 280,
            search_scan_budget_events: 5_000,
        }
    }
}

impl TocConfig {
    /// The configured zone.
    ///
    /// # Errors
    /// When `timezone` is not an IANA zone name.
    pub fn tz(&self) -> Result<chrono_tz::Tz> {
        self.timezone
            .parse::<chrono_tz::Tz>()
            .map_err(|_| ConfigError::Invalid {
                key: "toc.timezone",
                message: format!(
                    "{:?} is not an IANA time zone such as \"UTC\" or \"Europe/Berlin\"",
                    self.timezone
                ),
            })
    }
}
