//! `TocLevel`: the five levels of the time hierarchy, coarse to fine.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{TocError, echo_input};

/// A level of the time table of contents.
///
/// Ordering follows the hierarchy from coarse to fine, `Year < Month < Week < Day <
/// Segment`, so "is `a` above `b`" is `a < b` and sorting a mixed list of nodes by level
/// puts the roots first. On the wire it is the lowercase name (`"week"`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TocLevel {
    /// A calendar year (in the tree: the ISO weeks whose Thursday falls in it).
    Year,
    /// A calendar month (in the tree: the ISO weeks whose Thursday falls in it).
    Month,
    /// An ISO week, Monday to Sunday.
    Week,
    /// A local calendar day in the configured time zone.
    Day,
    /// A run of one session's events: the leaf, filed under the day of its first event.
    Segment,
}

impl TocLevel {
    /// Every level, coarse to fine.
    pub const ALL: [TocLevel; 5] = [
        TocLevel::Year,
        TocLevel::Month,
        TocLevel::Week,
        TocLevel::Day,
        TocLevel::Segment,
    ];

    /// The wire and id name: `year`, `month`, `week`, `day`, `segment`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TocLevel::Year => "year",
            TocLevel::Month => "month",
            TocLevel::Week => "week",
            TocLevel::Day => "day",
            TocLevel::Segment => "segment",
        }
    }

    /// The level above, `None` for [`TocLevel::Year`] (the years hang off the root).
    #[must_use]
    pub fn parent(self) -> Option<TocLevel> {
        match self {
            TocLevel::Year => None,
            TocLevel::Month => Some(TocLevel::Year),
            TocLevel::Week => Some(TocLevel::Month),
            TocLevel::Day => Some(TocLevel::Week),
            TocLevel::Segment => Some(TocLevel::Day),
        }
    }

    /// The level below, `None` for [`TocLevel::Segment`] (below a segment are grips and
    /// events, which are not TOC nodes).
    #[must_use]
    pub fn child(self) -> Option<TocLevel> {
        match self {
            TocLevel::Year => Some(TocLevel::Month),
            TocLevel::Month => Some(TocLevel::Week),
            TocLevel::Week => Some(TocLevel::Day),
            TocLevel::Day => Some(TocLevel::Segment),
            TocLevel::Segment => None,
        }
    }
}

impl fmt::Display for TocLevel {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl FromStr for TocLevel {
    type Err = TocError;

    /// Parses a level name, ignoring ASCII case so `--level Month` on the command line
    /// works; surrounding whitespace is not accepted.
    fn from_str(input: &str) -> crate::Result<TocLevel> {
        TocLevel::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(input))
            .ok_or_else(|| TocError::UnknownLevel {
                input: echo_input(input),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_display_and_from_str() {
        for level in TocLevel::ALL {
            let parsed: TocLevel = level.to_string().parse().expect("own name parses");
            assert_eq!(parsed, level);
        }
        assert_eq!("WEEK".parse::<TocLevel>(), Ok(TocLevel::Week));
    }

    #[test]
    fn unknown_names_are_rejected_with_the_input() {
        let error = "fortnight".parse::<TocLevel>().expect_err("not a level");
        assert_eq!(
            error,
            TocError::UnknownLevel {
                input: "fortnight".to_string()
            }
        );
        assert!(" day".parse::<TocLevel>().is_err());
        assert!("".parse::<TocLevel>().is_err());
    }

    #[test]
    fn parent_and_child_walk_the_hierarchy_in_order() {
        for pair in TocLevel::ALL.windows(2) {
            let (coarser, finer) = (pair[0], pair[1]);
            assert!(coarser < finer);
            assert_eq!(coarser.child(), Some(finer));
            assert_eq!(finer.parent(), Some(coarser));
        }
        assert_eq!(TocLevel::Year.parent(), None);
        assert_eq!(TocLevel::Segment.child(), None);
    }

    #[test]
    fn serde_uses_snake_case_names() {
        let json = serde_json::to_string(&TocLevel::Segment).expect("serializes");
        assert_eq!(json, "\"segment\"");
        let level: TocLevel = serde_json::from_str("\"month\"").expect("deserializes");
        assert_eq!(level, TocLevel::Month);
    }
}
