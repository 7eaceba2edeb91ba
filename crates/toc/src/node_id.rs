//! Ids of TOC nodes (`toc:day:2026-01-30`) and grips (`grip:<ts_ms>:<ULID>`).
//!
//! Ids are the keys of the TOC and grip projections and appear in every query reply,
//! so their text form is a contract: `Display` and `FromStr` round-trip exactly, and
//! parsing accepts only the canonical form (four-digit years, two-digit months, weeks
//! and days, uppercase ULIDs) so one period never has two keys.
//!
//! Segment and grip ULIDs are *derived*, not random: the timestamp part is the first
//! event's time and the random part is a stable hash of what identifies the thing: the
//! project, the first event's time and id (and, for a grip, its offset). A rebuild of
//! the TOC from the event log therefore writes the very same ids, and bullets,
//! citations and caches that point at them stay valid. Event ids are unique within a
//! project only, so the project is hashed too (since TOC format 2; the format-1
//! derivation survives as `legacy_*` for translating old `toc_summary` events).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use chrono_tz::Tz;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ulid::Ulid;

use crate::calendar;
use crate::error::{TocError, echo_input};
use crate::level::TocLevel;

/// A ULID in canonical form: 26 uppercase Crockford base32 characters (no `I`, `L`,
/// `O`, `U`), the first at most `7`. Used in the schema patterns.
macro_rules! ulid_pattern {
    () => {
        "[0-7][0-9A-HJKMNP-TV-Z]{25}"
    };
}

/// `YYYY-MM-DD` with month 01..=12 and day 01..=31.
macro_rules! date_pattern {
    () => {
        "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    };
}

/// The id of a node of the time table of contents.
///
/// Ordering (derived): by level from coarse to fine, then chronologically within a
/// level (segments of one day by ULID, i.e. by first-event time). This is *not* the
/// lexicographic order of the text form, which sorts `day` before `month`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TocNodeId {
    /// `toc:year:2026`.
    Year(i32),
    /// `toc:month:2026-01`.
    Month {
        /// Calendar year.
        year: i32,
        /// 1..=12.
        month: u32,
    },
    /// `toc:week:2026-W05`.
    Week {
        /// ISO week-numbering year (can differ from the calendar year near New Year).
        iso_year: i32,
        /// 1..=52 or 1..=53.
        week: u32,
    },
    /// `toc:day:2026-01-30`, a local date in the configured time zone.
    Day(NaiveDate),
    /// `toc:segment:2026-01-30:<ULID>`, filed under the day of its first event.
    Segment {
        /// The local day of the segment's first event.
        day: NaiveDate,
        /// Derived by [`TocNodeId::segment_for`]; its timestamp is the first event's.
        ulid: Ulid,
    },
}

impl TocNodeId {
    /// The shape of the text form as a regular expression (ECMA 262 and Rust `regex`
    /// alike), as published in the JSON Schemas: every id [`Display`](fmt::Display)
    /// writes matches it. It checks the shape, not the calendar: `toc:day:2026-02-30`
    /// matches but does not parse.
    pub const PATTERN: &'static str = concat!(
        "^toc:(year:[0-9]{4}",
        "|month:[0-9]{4}-(0[1-9]|1[0-2])",
        "|week:[0-9]{4}-W(0[1-9]|[1-4][0-9]|5[0-3])",
        "|day:",
        date_pattern!(),
        "|segment:",
        date_pattern!(),
        ":",
        ulid_pattern!(),
        ")$"
    );

    /// A month id, checked.
    pub fn month(year: i32, month: u32) -> crate::Result<TocNodeId> {
        let node_id = TocNodeId::Month { year, month };
        node_id.validate()?;
        Ok(node_id)
    }

    /// An ISO week id, checked (week 53 exists only in some ISO years).
    pub fn week(iso_year: i32, week: u32) -> crate::Result<TocNodeId> {
        let node_id = TocNodeId::Week { iso_year, week };
        node_id.validate()?;
        Ok(node_id)
    }

    /// The id of `project_id`'s segment whose first event is `first_event_id` at
    /// `first_event_ts_ms`, filed under `day` (normally
    /// [`calendar::day_of`]`(first_event_ts_ms, tz)`).
    ///
    /// Deterministic: the ULID's timestamp is `first_event_ts_ms` (its low 48 bits, which
    /// covers every time until the year 10889) and its 80 random bits are a stable hash
    /// of the project, the timestamp and the event id, so rebuilding the TOC from the log
    /// yields identical segment ids. Event ids are unique within a project only, so the
    /// project is part of the hash: one conversation recorded into two projects gives
    /// each its own segment, instead of one key both projects' records would fight over.
    #[must_use]
    pub fn segment_for(
        project_id: &str,
        day: NaiveDate,
        first_event_ts_ms: u64,
        first_event_id: &str,
    ) -> TocNodeId {
        TocNodeId::hashed_segment(
            day,
            first_event_ts_ms,
            &[
                SEGMENT_HASH_DOMAIN,
                project_id.as_bytes(),
                &first_event_ts_ms.to_le_bytes(),
                first_event_id.as_bytes(),
            ],
        )
    }

    /// The id [`TocNodeId::segment_for`] gave the same segment before ids carried the
    /// project (TOC format 1): the hash of the timestamp and the event id alone.
    ///
    /// Only for reading what format 1 left in the log: `toc_summary` events a model wrote
    /// name the segment by this id, and a rebuild translates it to the current one.
    /// Never use it as a key.
    #[must_use]
    pub fn legacy_segment_for(
        day: NaiveDate,
        first_event_ts_ms: u64,
        first_event_id: &str,
    ) -> TocNodeId {
        TocNodeId::hashed_segment(
            day,
            first_event_ts_ms,
            &[
                LEGACY_SEGMENT_HASH_DOMAIN,
                &first_event_ts_ms.to_le_bytes(),
                first_event_id.as_bytes(),
            ],
        )
    }

    /// A segment id whose ULID has the first event's time and the hash of `parts`.
    fn hashed_segment(day: NaiveDate, first_event_ts_ms: u64, parts: &[&[u8]]) -> TocNodeId {
        TocNodeId::Segment {
            day,
            ulid: Ulid::from_parts(first_event_ts_ms, stable_random_80_bits(parts)),
        }
    }

    /// The level of the node.
    #[must_use]
    pub fn level(&self) -> TocLevel {
        match self {
            TocNodeId::Year(_) => TocLevel::Year,
            TocNodeId::Month { .. } => TocLevel::Month,
            TocNodeId::Week { .. } => TocLevel::Week,
            TocNodeId::Day(_) => TocLevel::Day,
            TocNodeId::Segment { .. } => TocLevel::Segment,
        }
    }

    /// Checks that the id names a real, supported period: year in 1..=9999, month in
    /// 1..=12, a week its ISO year has. Parsed ids and ids from the constructors and
    /// [`calendar`] always pass; the variants are public, so hand-built ones may not.
    pub fn validate(&self) -> crate::Result<()> {
        match *self {
            TocNodeId::Year(year) => calendar::check_year(year),
            TocNodeId::Month { year, month } => {
                calendar::check_year(year)?;
                calendar::check_month(month)
            }
            TocNodeId::Week { iso_year, week } => calendar::check_week(iso_year, week),
            TocNodeId::Day(day) | TocNodeId::Segment { day, .. } => {
                calendar::check_year(day.year())
            }
        }
    }

    /// The node this one is filed under: segment → its day, day → its ISO week, week →
    /// the month holding its Thursday, month → its year; `None` for a year (years hang
    /// off the root) and for a week that fails [`TocNodeId::validate`].
    #[must_use]
    pub fn parent(&self) -> Option<TocNodeId> {
        match *self {
            TocNodeId::Year(_) => None,
            TocNodeId::Month { year, .. } => Some(TocNodeId::Year(year)),
            TocNodeId::Week { iso_year, week } => calendar::month_of_week(iso_year, week)
                .ok()
                .map(|(year, month)| TocNodeId::Month { year, month }),
            TocNodeId::Day(day) => {
                let (iso_year, week) = calendar::week_of(day);
                Some(TocNodeId::Week { iso_year, week })
            }
            TocNodeId::Segment { day, .. } => Some(TocNodeId::Day(day)),
        }
    }

    /// The chain `day` is filed under, finest first: `[day, week, month, year]`.
    ///
    /// The week's month and year can differ from the day's own (2024-12-30 → `2025-W01`
    /// → `2025-01` → `2025`), because a week is filed whole under the month of its
    /// Thursday ([`calendar::filing_month_of`]). Never fails.
    #[must_use]
    pub fn day_and_ancestors(day: NaiveDate) -> [TocNodeId; 4] {
        let (iso_year, week) = calendar::week_of(day);
        let (year, month) = calendar::filing_month_of(day);
        [
            TocNodeId::Day(day),
            TocNodeId::Week { iso_year, week },
            TocNodeId::Month { year, month },
            TocNodeId::Year(year),
        ]
    }

    /// The node's ancestors, nearest first, ending with its year (empty for a year).
    #[must_use]
    pub fn ancestors(&self) -> Vec<TocNodeId> {
        let mut chain = Vec::with_capacity(4);
        let mut current_opt = self.parent();
        while let Some(current) = current_opt {
            current_opt = current.parent();
            chain.push(current);
        }
        chain
    }

    /// The children the calendar alone determines, in order: a year's twelve months, a
    /// month's four or five ISO weeks, a week's seven days. Empty for days (their
    /// children are segments, which only the data knows), segments, and invalid ids.
    ///
    /// Navigation uses it to walk periods that have no stored node yet.
    #[must_use]
    pub fn calendar_children(&self) -> Vec<TocNodeId> {
        if self.validate().is_err() {
            return Vec::new();
        }
        match *self {
            TocNodeId::Year(year) => (1..=12)
                .map(|month| TocNodeId::Month { year, month })
                .collect(),
            TocNodeId::Month { year, month } => calendar::weeks_of_month(year, month)
                .unwrap_or_default()
                .into_iter()
                .map(|(iso_year, week)| TocNodeId::Week { iso_year, week })
                .collect(),
            TocNodeId::Week { iso_year, week } => calendar::days_of_week(iso_year, week)
                .map(|days| days.into_iter().map(TocNodeId::Day).collect())
                .unwrap_or_default(),
            TocNodeId::Day(_) | TocNodeId::Segment { .. } => Vec::new(),
        }
    }

    /// The previous period at the same level (`None` for segments, whose neighbours only
    /// the data knows, and at the edge of the supported years). Used to try siblings
    /// when a navigation finds nothing.
    #[must_use]
    pub fn previous(&self) -> Option<TocNodeId> {
        self.step(-1)
    }

    /// The next period at the same level; see [`TocNodeId::previous`].
    #[must_use]
    pub fn next(&self) -> Option<TocNodeId> {
        self.step(1)
    }

    /// The first and last local day of the node's own calendar period (a segment: its
    /// day). For months and years this is the calendar month or year, not the span of
    /// the weeks filed under it; see [`TocNodeId::covering_range`].
    pub fn first_and_last_day(&self) -> crate::Result<(NaiveDate, NaiveDate)> {
        self.validate()?;
        let unrepresentable = TocError::Unrepresentable {
            what: "the first or last day of the period",
        };
        match *self {
            TocNodeId::Year(year) => {
                let first = NaiveDate::from_ymd_opt(year, 1, 1).ok_or(unrepresentable.clone())?;
                let last = NaiveDate::from_ymd_opt(year, 12, 31).ok_or(unrepresentable)?;
                Ok((first, last))
            }
            TocNodeId::Month { year, month } => {
                let first =
                    NaiveDate::from_ymd_opt(year, month, 1).ok_or(unrepresentable.clone())?;
                let first_of_next = if month == 12 {
                    NaiveDate::from_ymd_opt(year + 1, 1, 1)
                } else {
                    NaiveDate::from_ymd_opt(year, month + 1, 1)
                }
                .ok_or(unrepresentable)?;
                Ok((first, calendar::subtract_days(first_of_next, 1)?))
            }
            TocNodeId::Week { iso_year, week } => {
                let monday = calendar::monday_of_week(iso_year, week)?;
                Ok((monday, calendar::add_days(monday, 6)?))
            }
            TocNodeId::Day(day) | TocNodeId::Segment { day, .. } => Ok((day, day)),
        }
    }

    /// The node's own period as a half-open UTC range `[start, end)`, with day
    /// boundaries in `tz`: a local day; Monday 00:00 to the next Monday 00:00 for a
    /// week; the local calendar month or year for months and years; the day it is filed
    /// under for a segment (its exact span lives in its stored node).
    ///
    /// Never fails: for an id that fails [`TocNodeId::validate`] it returns the empty
    /// range at the Unix epoch, which contains nothing. Use
    /// [`TocNodeId::try_start_end`] to see the error instead.
    #[must_use]
    pub fn start_end(&self, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
        self.try_start_end(tz).unwrap_or(EMPTY_RANGE)
    }

    /// [`TocNodeId::start_end`], with the reason when the id is invalid.
    pub fn try_start_end(&self, tz: Tz) -> crate::Result<(DateTime<Utc>, DateTime<Utc>)> {
        let (first_day, last_day) = self.first_and_last_day()?;
        let day_after_last = calendar::add_days(last_day, 1)?;
        Ok((
            calendar::day_start(first_day, tz)?,
            calendar::day_start(day_after_last, tz)?,
        ))
    }

    /// The half-open UTC range holding everything filed under the node.
    ///
    /// Equal to [`TocNodeId::start_end`] for weeks, days and segments. A month or year
    /// holds whole ISO weeks (those whose Thursday falls in it), so its range runs from
    /// the Monday of its first week to the end of its last week: month `2025-01` covers
    /// 2024-12-30 up to 2025-02-03, and year `2026` covers 2025-12-29 up to 2027-01-04.
    /// Empty at the Unix epoch for invalid ids, like `start_end`.
    #[must_use]
    pub fn covering_range(&self, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
        self.try_covering_range(tz).unwrap_or(EMPTY_RANGE)
    }

    /// [`TocNodeId::covering_range`], with the reason when the id is invalid.
    pub fn try_covering_range(&self, tz: Tz) -> crate::Result<(DateTime<Utc>, DateTime<Utc>)> {
        let first_and_last_week = match *self {
            TocNodeId::Year(year) => {
                calendar::check_year(year)?;
                ((year, 1), (year, calendar::num_weeks_in_iso_year(year)))
            }
            TocNodeId::Month { year, month } => {
                let weeks = calendar::weeks_of_month(year, month)?;
                match (weeks.first(), weeks.last()) {
                    (Some(&first), Some(&last)) => (first, last),
                    _ => {
                        return Err(TocError::Unrepresentable {
                            what: "the weeks of the month",
                        });
                    }
                }
            }
            TocNodeId::Week { .. } | TocNodeId::Day(_) | TocNodeId::Segment { .. } => {
                return self.try_start_end(tz);
            }
        };
        let ((first_iso_year, first_week), (last_iso_year, last_week)) = first_and_last_week;
        let first_monday = calendar::monday_of_week(first_iso_year, first_week)?;
        let monday_after_last =
            calendar::add_days(calendar::monday_of_week(last_iso_year, last_week)?, 7)?;
        Ok((
            calendar::day_start(first_monday, tz)?,
            calendar::day_start(monday_after_last, tz)?,
        ))
    }

    /// The same-level neighbour `direction` (−1 or +1) periods away, if valid.
    fn step(&self, direction: i32) -> Option<TocNodeId> {
        self.validate().ok()?;
        let neighbour = match *self {
            TocNodeId::Year(year) => TocNodeId::Year(year.checked_add(direction)?),
            TocNodeId::Month { year, month } => {
                let month_index =
                    i64::from(year) * 12 + i64::from(month) - 1 + i64::from(direction);
                TocNodeId::Month {
                    year: i32::try_from(month_index.div_euclid(12)).ok()?,
                    month: u32::try_from(month_index.rem_euclid(12) + 1).ok()?,
                }
            }
            TocNodeId::Week { iso_year, week } => {
                let monday = calendar::monday_of_week(iso_year, week).ok()?;
                let neighbour_monday = if direction < 0 {
                    calendar::subtract_days(monday, 7).ok()?
                } else {
                    calendar::add_days(monday, 7).ok()?
                };
                let (neighbour_iso_year, neighbour_week) = calendar::week_of(neighbour_monday);
                TocNodeId::Week {
                    iso_year: neighbour_iso_year,
                    week: neighbour_week,
                }
            }
            TocNodeId::Day(day) => TocNodeId::Day(if direction < 0 {
                calendar::subtract_days(day, 1).ok()?
            } else {
                calendar::add_days(day, 1).ok()?
            }),
            TocNodeId::Segment { .. } => return None,
        };
        neighbour.validate().ok()?;
        Some(neighbour)
    }
}

/// What the infallible range functions return for an invalid id: empty, so it contains
/// no instant and no filter built from it matches anything.
const EMPTY_RANGE: (DateTime<Utc>, DateTime<Utc>) = (DateTime::UNIX_EPOCH, DateTime::UNIX_EPOCH);

impl fmt::Display for TocNodeId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TocNodeId::Year(year) => write!(formatter, "toc:year:{year:04}"),
            TocNodeId::Month { year, month } => write!(formatter, "toc:month:{year:04}-{month:02}"),
            TocNodeId::Week { iso_year, week } => {
                write!(formatter, "toc:week:{iso_year:04}-W{week:02}")
            }
            TocNodeId::Day(day) => {
                formatter.write_str("toc:day:")?;
                write_date(formatter, *day)
            }
            TocNodeId::Segment { day, ulid } => {
                formatter.write_str("toc:segment:")?;
                write_date(formatter, *day)?;
                write!(formatter, ":{ulid}")
            }
        }
    }
}

/// `YYYY-MM-DD` with the fields written out, independent of chrono's `Display` (which
/// switches to a signed form outside years 0..=9999).
fn write_date(formatter: &mut fmt::Formatter<'_>, day: NaiveDate) -> fmt::Result {
    write!(
        formatter,
        "{:04}-{:02}-{:02}",
        day.year(),
        day.month(),
        day.day()
    )
}

impl FromStr for TocNodeId {
    type Err = TocError;

    /// Parses the canonical text form; the error names the part that is wrong.
    fn from_str(input: &str) -> crate::Result<TocNodeId> {
        let invalid = |reason: String| TocError::InvalidNodeId {
            input: echo_input(input),
            reason,
        };
        let after_prefix = input
            .strip_prefix("toc:")
            .ok_or_else(|| invalid("expected the prefix `toc:`".to_string()))?;
        let (level_name, key) = after_prefix
            .split_once(':')
            .ok_or_else(|| invalid("expected `toc:<level>:<key>`".to_string()))?;
        let level = TocLevel::ALL
            .into_iter()
            .find(|level| level.as_str() == level_name)
            .ok_or_else(|| {
                invalid(format!(
                    "unknown level `{}` (expected year, month, week, day or segment)",
                    echo_input(level_name)
                ))
            })?;
        let node_id = match level {
            TocLevel::Year => TocNodeId::Year(parse_year(key).map_err(invalid)?),
            TocLevel::Month => {
                let (year_text, month_text) = key
                    .split_once('-')
                    .ok_or_else(|| invalid("a month key is `YYYY-MM`".to_string()))?;
                let year = parse_year(year_text).map_err(invalid)?;
                let month = parse_two_digits(month_text, "month").map_err(invalid)?;
                TocNodeId::Month { year, month }
            }
            TocLevel::Week => {
                let (year_text, week_text) = key.split_once("-W").ok_or_else(|| {
                    invalid("a week key is `YYYY-Www`, e.g. `2026-W05`".to_string())
                })?;
                let iso_year = parse_year(year_text).map_err(invalid)?;
                let week = parse_two_digits(week_text, "week").map_err(invalid)?;
                TocNodeId::Week { iso_year, week }
            }
            TocLevel::Day => TocNodeId::Day(parse_date(key).map_err(invalid)?),
            TocLevel::Segment => {
                let (date_text, ulid_text) = key
                    .split_once(':')
                    .ok_or_else(|| invalid("a segment key is `YYYY-MM-DD:<ULID>`".to_string()))?;
                TocNodeId::Segment {
                    day: parse_date(date_text).map_err(invalid)?,
                    ulid: parse_canonical_ulid(ulid_text).map_err(invalid)?,
                }
            }
        };
        node_id
            .validate()
            .map_err(|error| invalid(error.to_string()))?;
        Ok(node_id)
    }
}

impl Serialize for TocNodeId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TocNodeId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<TocNodeId, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// On the wire a node id is its text form, so its schema is a string with the shape of
/// every level's key. The pattern checks the shape only: calendar validity (no
/// `2026-02-30`, week 53 only in years that have one, no year `0000`) is left to parsing.
impl JsonSchema for TocNodeId {
    fn schema_name() -> Cow<'static, str> {
        "TocNodeId".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "memory_toc::TocNodeId".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The id of a node of the time table of contents: `toc:year:YYYY`, \
                `toc:month:YYYY-MM`, `toc:week:YYYY-Www` (ISO week), `toc:day:YYYY-MM-DD` or \
                `toc:segment:YYYY-MM-DD:<ULID>` (26 uppercase Crockford base32 characters).",
            "type": "string",
            "pattern": TocNodeId::PATTERN,
            "examples": [
                "toc:year:2026",
                "toc:month:2026-01",
                "toc:week:2026-W05",
                "toc:day:2026-01-30",
                "toc:segment:2026-01-30:01KG75GS80TNRFP1SNRFQZ3CTM"
            ]
        })
    }
}

/// The id of a grip: `grip:<ts_ms>:<ULID>`, where `ts_ms` is the time of the grip's
/// first event.
///
/// Ordering: by `ts_ms`, then ULID, i.e. chronological.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GripId {
    ts_ms: u64,
    ulid: Ulid,
}

impl GripId {
    /// The shape of the text form as a regular expression, as published in the JSON
    /// Schemas: every id [`Display`](fmt::Display) writes matches it (the pattern cannot
    /// say that the timestamp fits in 64 bits).
    pub const PATTERN: &'static str = concat!("^grip:(0|[1-9][0-9]*):", ulid_pattern!(), "$");

    /// A grip id from its parts, as read back from storage.
    #[must_use]
    pub fn new(ts_ms: u64, ulid: Ulid) -> GripId {
        GripId { ts_ms, ulid }
    }

    /// The id of `project_id`'s grip whose excerpt starts at byte
    /// `excerpt_start_offset` of event `event_id_start`, which happened at `ts_ms`.
    ///
    /// Deterministic like [`TocNodeId::segment_for`], and like it carries the project:
    /// a rebuild extracts the same grips and so writes the same ids, the bullets citing
    /// them stay valid, and the same event in two projects gives two grips. Two grips
    /// of one event differ by their offset.
    #[must_use]
    pub fn derive(
        project_id: &str,
        ts_ms: u64,
        event_id_start: &str,
        excerpt_start_offset: usize,
    ) -> GripId {
        let offset_u64 = u64::try_from(excerpt_start_offset).unwrap_or(u64::MAX);
        GripId::hashed(
            ts_ms,
            &[
                GRIP_HASH_DOMAIN,
                project_id.as_bytes(),
                &ts_ms.to_le_bytes(),
                &offset_u64.to_le_bytes(),
                event_id_start.as_bytes(),
            ],
        )
    }

    /// The id [`GripId::derive`] gave the same grip before ids carried the project (TOC
    /// format 1). Only for translating the grip ids that `toc_summary` events of format
    /// 1 cite; never a key.
    #[must_use]
    pub fn legacy_derive(ts_ms: u64, event_id_start: &str, excerpt_start_offset: usize) -> GripId {
        let offset_u64 = u64::try_from(excerpt_start_offset).unwrap_or(u64::MAX);
        GripId::hashed(
            ts_ms,
            &[
                LEGACY_GRIP_HASH_DOMAIN,
                &ts_ms.to_le_bytes(),
                &offset_u64.to_le_bytes(),
                event_id_start.as_bytes(),
            ],
        )
    }

    /// A grip id whose ULID has the time `ts_ms` and the hash of `parts`.
    fn hashed(ts_ms: u64, parts: &[&[u8]]) -> GripId {
        GripId {
            ts_ms,
            ulid: Ulid::from_parts(ts_ms, stable_random_80_bits(parts)),
        }
    }

    /// Epoch milliseconds of the grip's first event.
    #[must_use]
    pub fn ts_ms(&self) -> u64 {
        self.ts_ms
    }

    /// The ULID part.
    #[must_use]
    pub fn ulid(&self) -> Ulid {
        self.ulid
    }
}

impl fmt::Display for GripId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "grip:{}:{}", self.ts_ms, self.ulid)
    }
}

impl FromStr for GripId {
    type Err = TocError;

    /// Parses `grip:<ts_ms>:<ULID>`: `ts_ms` in plain decimal without sign or leading
    /// zeros, the ULID in canonical uppercase.
    fn from_str(input: &str) -> crate::Result<GripId> {
        let invalid = |reason: String| TocError::InvalidGripId {
            input: echo_input(input),
            reason,
        };
        let after_prefix = input
            .strip_prefix("grip:")
            .ok_or_else(|| invalid("expected the prefix `grip:`".to_string()))?;
        let (ts_text, ulid_text) = after_prefix
            .split_once(':')
            .ok_or_else(|| invalid("expected `grip:<ts_ms>:<ULID>`".to_string()))?;
        let is_canonical_decimal = !ts_text.is_empty()
            && ts_text.bytes().all(|byte| byte.is_ascii_digit())
            && (ts_text == "0" || !ts_text.starts_with('0'));
        if !is_canonical_decimal {
            return Err(invalid(format!(
                "the timestamp `{}` is not plain decimal milliseconds",
                echo_input(ts_text)
            )));
        }
        let ts_ms = ts_text
            .parse::<u64>()
            .map_err(|_| invalid("the timestamp does not fit in 64 bits".to_string()))?;
        let ulid = parse_canonical_ulid(ulid_text).map_err(invalid)?;
        Ok(GripId { ts_ms, ulid })
    }
}

impl Serialize for GripId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GripId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<GripId, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// On the wire a grip id is its text form; see [`GripId::PATTERN`].
impl JsonSchema for GripId {
    fn schema_name() -> Cow<'static, str> {
        "GripId".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "memory_toc::GripId".into()
    }

    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The id of a grip: `grip:<ts_ms>:<ULID>`, the epoch milliseconds of \
                its first event in plain decimal and a ULID in canonical form.",
            "type": "string",
            "pattern": GripId::PATTERN,
            "examples": ["grip:1769767200000:01KG75GS80XK3VEHCQ4WS299A0"]
        })
    }
}

/// Domain separators, so a segment and a grip built from the same bytes differ, and a
/// change of the derivation bumps the version instead of colliding. v2 hashes the
/// project too (TOC format 2); v1 did not, and is kept only to translate the ids that
/// format-1 `toc_summary` events name.
const SEGMENT_HASH_DOMAIN: &[u8] = b"agent-memory/toc-segment/v2";
const GRIP_HASH_DOMAIN: &[u8] = b"agent-memory/grip/v2";
const LEGACY_SEGMENT_HASH_DOMAIN: &[u8] = b"agent-memory/toc-segment/v1";
const LEGACY_GRIP_HASH_DOMAIN: &[u8] = b"agent-memory/grip/v1";

const FNV1A_128_OFFSET_BASIS: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV1A_128_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// 80 bits derived from `parts` by a hash whose output is fixed forever: FNV-1a 128
/// over the length-prefixed parts (so `["ab", "c"]` and `["a", "bc"]` differ), then the
/// SplitMix64 finaliser on each half so every input bit moves the top bits.
///
/// Written out rather than `std::hash::DefaultHasher`, whose output may change between
/// Rust releases and would silently rename every segment and grip on upgrade. The
/// `derived_ids_are_pinned` test guards the output.
fn stable_random_80_bits(parts: &[&[u8]]) -> u128 {
    let mut hash = FNV1A_128_OFFSET_BASIS;
    for part in parts {
        let length_prefix = (part.len() as u64).to_le_bytes();
        for &byte in length_prefix.iter().chain(part.iter()) {
            hash ^= u128::from(byte);
            hash = hash.wrapping_mul(FNV1A_128_PRIME);
        }
    }
    let high_half = (hash >> 64) as u64;
    let low_half = hash as u64;
    let mixed_high = splitmix64_finalize(high_half);
    let mixed_low = splitmix64_finalize(low_half ^ mixed_high);
    (u128::from(mixed_high) << 16) | u128::from(mixed_low >> 48)
}

/// The SplitMix64 output function (Steele, Lea, Flood 2014).
fn splitmix64_finalize(value: u64) -> u64 {
    let mut mixed = value;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^ (mixed >> 31)
}

/// Exactly four ASCII digits, as a supported year.
fn parse_year(text: &str) -> Result<i32, String> {
    if text.len() != 4 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "the year `{}` is not four digits",
            echo_input(text)
        ));
    }
    let year: i32 = text
        .parse()
        .map_err(|_| format!("the year `{text}` is not a number"))?;
    calendar::check_year(year).map_err(|error| error.to_string())?;
    Ok(year)
}

/// Exactly two ASCII digits (`what` names the field for the message).
fn parse_two_digits(text: &str, what: &str) -> Result<u32, String> {
    if text.len() != 2 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "the {what} `{}` is not two digits",
            echo_input(text)
        ));
    }
    text.parse()
        .map_err(|_| format!("the {what} `{text}` is not a number"))
}

/// `YYYY-MM-DD`, naming the wrong part.
fn parse_date(text: &str) -> Result<NaiveDate, String> {
    let mut fields = text.split('-');
    let (Some(year_text), Some(month_text), Some(day_text), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err(format!(
            "the date `{}` is not `YYYY-MM-DD`",
            echo_input(text)
        ));
    };
    let year = parse_year(year_text)?;
    let month = parse_two_digits(month_text, "month")?;
    let day = parse_two_digits(day_text, "day")?;
    calendar::check_month(month).map_err(|error| error.to_string())?;
    NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| format!("day {day} does not exist in {year:04}-{month:02}"))
}

/// A ULID in its canonical 26-character uppercase Crockford form only, so a key has one
/// spelling (the `ulid` crate also accepts lowercase and `I`/`L`/`O` aliases, and
/// silently drops the overflow of a first character above `7`).
fn parse_canonical_ulid(text: &str) -> Result<Ulid, String> {
    let ulid = Ulid::from_string(text)
        .map_err(|error| format!("`{}` is not a ULID: {error}", echo_input(text)))?;
    if ulid.to_string() != text {
        return Err(format!(
            "the ULID `{}` is not in canonical form (26 uppercase Crockford base32 characters, first at most 7)",
            echo_input(text)
        ));
    }
    Ok(ulid)
}

#[cfg(test)]
#[path = "node_id_tests.rs"]
mod tests;
