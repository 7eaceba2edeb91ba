//! The one error type of `memory-toc`.
//!
//! Every variant says exactly what was wrong, because these errors reach callers as
//! `invalid_argument` replies (a node id typed into the CLI, a `toc.node` request) and
//! the person reading them should not have to guess which part of `toc:week:2026-W60`
//! was rejected.

use memory_text::truncate_chars;

/// Why a level, an id or a calendar period was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TocError {
    /// A string that is not one of `year`, `month`, `week`, `day`, `segment`.
    #[error("unknown toc level `{input}` (expected year, month, week, day or segment)")]
    UnknownLevel {
        /// The rejected text, shortened to at most [`MAX_ECHOED_INPUT_CHARS`] characters.
        input: String,
    },

    /// A string that is not a well-formed `toc:<level>:<key>` node id.
    #[error("invalid toc node id `{input}`: {reason}")]
    InvalidNodeId {
        /// The rejected text, shortened to at most [`MAX_ECHOED_INPUT_CHARS`] characters.
        input: String,
        /// Which part is wrong and what was expected.
        reason: String,
    },

    /// A string that is not a well-formed `grip:<ts_ms>:<ULID>` grip id.
    #[error("invalid grip id `{input}`: {reason}")]
    InvalidGripId {
        /// The rejected text, shortened to at most [`MAX_ECHOED_INPUT_CHARS`] characters.
        input: String,
        /// Which part is wrong and what was expected.
        reason: String,
    },

    /// A year outside [`crate::calendar::FIRST_SUPPORTED_YEAR`]..=[`crate::calendar::LAST_SUPPORTED_YEAR`].
    ///
    /// Ids print years with exactly four digits, so a wider range could not round-trip.
    #[error("year {year} is outside the supported range 1..=9999")]
    YearOutOfRange {
        /// The rejected year.
        year: i32,
    },

    /// A month number outside 1..=12.
    #[error("month {month} does not exist (expected 1..=12)")]
    MonthOutOfRange {
        /// The rejected month number.
        month: u32,
    },

    /// An ISO week number that the ISO year does not have (every ISO year has 52 or 53).
    #[error("ISO year {iso_year} has no week {week} (it has {num_weeks_in_year})")]
    WeekOutOfRange {
        /// The ISO week-numbering year.
        iso_year: i32,
        /// The rejected week number.
        week: u32,
        /// How many weeks `iso_year` has.
        num_weeks_in_year: u32,
    },

    /// A calendar computation left the range chrono can represent.
    ///
    /// Only reachable for periods built by hand at the edge of the supported years (for
    /// example the local midnight of 9999-12-31 in a zone far east of UTC is fine, but a
    /// `TocNodeId::Year(i32::MAX)` is not).
    #[error("{what} is outside the representable calendar range")]
    Unrepresentable {
        /// What could not be computed, for the message.
        what: &'static str,
    },
}

/// `Result` with [`TocError`], used as `crate::Result<T>`.
pub type Result<T> = std::result::Result<T, TocError>;

/// How much of a rejected input an error message repeats; a megabyte of garbage sent
/// as a node id should produce a short error, not echo the megabyte back.
pub const MAX_ECHOED_INPUT_CHARS: usize = 96;

/// The input shortened for an error message (on a character boundary, with `…` when cut).
pub(crate) fn echo_input(input: &str) -> String {
    let mut shortened = truncate_chars(input, MAX_ECHOED_INPUT_CHARS).to_owned();
    if shortened.len() < input.len() {
        shortened.push('…');
    }
    shortened
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_input_keeps_short_inputs_and_cuts_long_ones_on_char_boundaries() {
        assert_eq!(echo_input("toc:year:20x6"), "toc:year:20x6");
        let long_input = "é".repeat(500);
        let echoed = echo_input(&long_input);
        assert_eq!(echoed.chars().count(), MAX_ECHOED_INPUT_CHARS + 1);
        assert!(echoed.ends_with('…'));
    }

    #[test]
    fn messages_name_the_offending_value() {
        let error = TocError::WeekOutOfRange {
            iso_year: 2021,
            week: 53,
            num_weeks_in_year: 52,
        };
        assert_eq!(
            error.to_string(),
            "ISO year 2021 has no week 53 (it has 52)"
        );
    }
}
