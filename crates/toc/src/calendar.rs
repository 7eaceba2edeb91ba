//! Calendar rules of the time hierarchy: local days, ISO weeks, and which month a week
//! belongs to.
//!
//! The rules (ARCHITECTURE §1), in one place so every actor files events identically:
//! - a **day** is a local calendar date in the configured time zone; it starts at the
//!   first instant whose local date is that date (usually local midnight; on days whose
//!   midnight is skipped by a DST jump, the end of the jump), so a day can last 23, 24 or
//!   25 hours, or even 0 (Pacific/Apia skipped 2011-12-30);
//! - a **week** is an ISO 8601 week, Monday to Sunday, numbered within its ISO year;
//! - a week belongs to the **month** holding its Thursday, and that month to its
//!   **year**, so `2024-12-30` (a Monday) files under `2025-W01` → `2025-01` → `2025`.
//!
//! Because of the last rule a month *node* holds whole weeks and so can reach a few
//! days into the neighbouring months; [`crate::TocNodeId::covering_range`] gives that
//! span, while [`crate::TocNodeId::start_end`] stays the plain calendar month.

use chrono::{DateTime, Datelike, Days, LocalResult, NaiveDate, NaiveTime, TimeZone, Utc, Weekday};
use chrono_tz::Tz;

use crate::error::TocError;

/// The first year a TOC node can name. Ids print years with four digits.
pub const FIRST_SUPPORTED_YEAR: i32 = 1;

/// The last year a TOC node can name. Ids print years with four digits; ingest rejects
/// far-future timestamps long before this.
pub const LAST_SUPPORTED_YEAR: i32 = 9999;

/// The first day a node can name (the fallback arm is unreachable: the date is valid).
const FIRST_SUPPORTED_DAY: NaiveDate = match NaiveDate::from_ymd_opt(FIRST_SUPPORTED_YEAR, 1, 1) {
    Some(day) => day,
    None => NaiveDate::MIN,
};

/// The last day a node can name (the fallback arm is unreachable: the date is valid).
const LAST_SUPPORTED_DAY: NaiveDate = match NaiveDate::from_ymd_opt(LAST_SUPPORTED_YEAR, 12, 31) {
    Some(day) => day,
    None => NaiveDate::MAX,
};

/// How far (seconds) around a skipped local midnight to look for the instant the day
/// begins; UTC offsets stay within ±26 h, so two days either side always contain it.
const DAY_START_SEARCH_WINDOW_SECS: i64 = 2 * 24 * 3600;

/// Checks that `year` is in [`FIRST_SUPPORTED_YEAR`]..=[`LAST_SUPPORTED_YEAR`].
pub fn check_year(year: i32) -> crate::Result<()> {
    if (FIRST_SUPPORTED_YEAR..=LAST_SUPPORTED_YEAR).contains(&year) {
        Ok(())
    } else {
        Err(TocError::YearOutOfRange { year })
    }
}

/// Checks that `month` is in 1..=12.
pub fn check_month(month: u32) -> crate::Result<()> {
    if (1..=12).contains(&month) {
        Ok(())
    } else {
        Err(TocError::MonthOutOfRange { month })
    }
}

/// Checks that ISO year `iso_year` is supported and has a week `week`.
pub fn check_week(iso_year: i32, week: u32) -> crate::Result<()> {
    check_year(iso_year)?;
    let num_weeks_in_year = num_weeks_in_iso_year(iso_year);
    if (1..=num_weeks_in_year).contains(&week) {
        Ok(())
    } else {
        Err(TocError::WeekOutOfRange {
            iso_year,
            week,
            num_weeks_in_year,
        })
    }
}

/// The local date of an instant given in epoch milliseconds: the day an event is filed
/// under.
///
/// Never fails: an instant past 9999-12-31 (local) files under 9999-12-31, so a
/// corrupt timestamp cannot make the TOC builder stop. Ingest rejects such timestamps
/// long before they get here.
#[must_use]
pub fn day_of(ts_ms: u64, tz: Tz) -> NaiveDate {
    let instant_opt = i64::try_from(ts_ms)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis);
    match instant_opt {
        Some(instant) => day_of_instant(instant, tz),
        None => LAST_SUPPORTED_DAY,
    }
}

/// The local date of `instant` in `tz`, clamped to the supported years like [`day_of`].
#[must_use]
pub fn day_of_instant(instant: DateTime<Utc>, tz: Tz) -> NaiveDate {
    // Decided before converting: chrono panics computing the local time of an instant
    // at the very edge of its range, and offsets stay within a day, so inside these
    // bounds the local date is always a supported one.
    let first_safe_instant =
        add_days(FIRST_SUPPORTED_DAY, 1).map(|day| day.and_time(NaiveTime::MIN).and_utc());
    let last_safe_instant =
        subtract_days(LAST_SUPPORTED_DAY, 1).map(|day| day.and_time(NaiveTime::MIN).and_utc());
    match (first_safe_instant, last_safe_instant) {
        (Ok(first), _) if instant < first => FIRST_SUPPORTED_DAY,
        (_, Ok(last)) if instant > last => LAST_SUPPORTED_DAY,
        (Ok(_), Ok(_)) => instant
            .with_timezone(&tz)
            .date_naive()
            .clamp(FIRST_SUPPORTED_DAY, LAST_SUPPORTED_DAY),
        _ => LAST_SUPPORTED_DAY,
    }
}

/// The ISO week of `day` as `(iso_year, week)`; the ISO year differs from the calendar
/// year in the first and last days of some years (2021-01-01 is in `2020-W53`).
#[must_use]
pub fn week_of(day: NaiveDate) -> (i32, u32) {
    let iso_week = day.iso_week();
    (iso_week.year(), iso_week.week())
}

/// How many ISO weeks `iso_year` has: 53 when it starts or (in leap years) ends on a
/// Thursday, otherwise 52.
#[must_use]
pub fn num_weeks_in_iso_year(iso_year: i32) -> u32 {
    if NaiveDate::from_isoywd_opt(iso_year, 53, Weekday::Mon).is_some() {
        53
    } else {
        52
    }
}

/// The Monday that starts ISO week `week` of `iso_year`.
pub fn monday_of_week(iso_year: i32, week: u32) -> crate::Result<NaiveDate> {
    check_week(iso_year, week)?;
    NaiveDate::from_isoywd_opt(iso_year, week, Weekday::Mon).ok_or(TocError::Unrepresentable {
        what: "the Monday of the week",
    })
}

/// The seven days of ISO week `week` of `iso_year`, Monday first: a week node's
/// children.
pub fn days_of_week(iso_year: i32, week: u32) -> crate::Result<[NaiveDate; 7]> {
    let monday = monday_of_week(iso_year, week)?;
    let mut days = [monday; 7];
    for (offset_days, slot) in (0_u64..).zip(days.iter_mut()) {
        *slot = add_days(monday, offset_days)?;
    }
    Ok(days)
}

/// The `(year, month)` a week is filed under: the month holding its Thursday.
///
/// The year is always `iso_year`, by the definition of ISO years.
pub fn month_of_week(iso_year: i32, week: u32) -> crate::Result<(i32, u32)> {
    check_week(iso_year, week)?;
    let thursday = NaiveDate::from_isoywd_opt(iso_year, week, Weekday::Thu).ok_or(
        TocError::Unrepresentable {
            what: "the Thursday of the week",
        },
    )?;
    Ok((thursday.year(), thursday.month()))
}

/// The ISO weeks filed under a month (those whose Thursday falls in it), in order: a
/// month node's children. Always four or five weeks.
pub fn weeks_of_month(year: i32, month: u32) -> crate::Result<Vec<(i32, u32)>> {
    check_year(year)?;
    check_month(month)?;
    let first_day = NaiveDate::from_ymd_opt(year, month, 1).ok_or(TocError::Unrepresentable {
        what: "the first day of the month",
    })?;
    let days_until_thursday = (7 + 3 - u64::from(first_day.weekday().num_days_from_monday())) % 7;
    let mut thursday = add_days(first_day, days_until_thursday)?;
    let mut weeks = Vec::with_capacity(5);
    while thursday.month() == month && thursday.year() == year {
        weeks.push(week_of(thursday));
        thursday = add_days(thursday, 7)?;
    }
    debug_assert!((4..=5).contains(&weeks.len()));
    Ok(weeks)
}

/// The `(year, month)` a day's ISO week is filed under: the month holding the week's
/// Thursday, which can differ from the day's own (2024-12-30 is in `2025-W01`, filed
/// under January 2025). For dates outside the supported years whose Thursday chrono
/// cannot represent, the day's own month, so this never fails.
#[must_use]
pub fn filing_month_of(day: NaiveDate) -> (i32, u32) {
    match thursday_of_week_containing(day) {
        Some(thursday) => (thursday.year(), thursday.month()),
        None => (day.year(), day.month()),
    }
}

/// The first instant of local date `day` in `tz`.
///
/// Usually local midnight. When a DST jump skips midnight (America/Sao_Paulo used to
/// spring forward at 00:00) the day starts where the jump lands; when a fall-back makes
/// midnight happen twice, the day starts at the first one; when a whole day is skipped
/// (Pacific/Apia, 2011-12-30) it starts and ends at the same instant.
pub fn day_start(day: NaiveDate, tz: Tz) -> crate::Result<DateTime<Utc>> {
    // The boundaries of supported periods end at most a few days into year 10000 (the
    // end of ISO week 9999-W52 is 10000-01-03); refusing anything farther keeps every
    // chrono call below far from the edge of its range, where it panics.
    let is_near_supported_years =
        (FIRST_SUPPORTED_YEAR..=LAST_SUPPORTED_YEAR + 1).contains(&day.year());
    if !is_near_supported_years {
        return Err(TocError::YearOutOfRange { year: day.year() });
    }
    let local_midnight = day.and_time(NaiveTime::MIN);
    match tz.from_local_datetime(&local_midnight) {
        LocalResult::Single(instant) => Ok(instant.with_timezone(&Utc)),
        LocalResult::Ambiguous(earliest, _latest) => Ok(earliest.with_timezone(&Utc)),
        LocalResult::None => first_instant_of_skipped_midnight(day, tz),
    }
}

/// The half-open UTC range `[start, end)` of local date `day` in `tz`.
pub fn day_range(day: NaiveDate, tz: Tz) -> crate::Result<(DateTime<Utc>, DateTime<Utc>)> {
    let next_day = add_days(day, 1)?;
    Ok((day_start(day, tz)?, day_start(next_day, tz)?))
}

/// `day + num_days`, as a calendar error when it leaves chrono's range.
pub(crate) fn add_days(day: NaiveDate, num_days: u64) -> crate::Result<NaiveDate> {
    day.checked_add_days(Days::new(num_days))
        .ok_or(TocError::Unrepresentable {
            what: "a date after adding days",
        })
}

/// `day - num_days`, as a calendar error when it leaves chrono's range.
pub(crate) fn subtract_days(day: NaiveDate, num_days: u64) -> crate::Result<NaiveDate> {
    day.checked_sub_days(Days::new(num_days))
        .ok_or(TocError::Unrepresentable {
            what: "a date after subtracting days",
        })
}

/// The Thursday of the ISO week containing `day`, if chrono can represent it.
fn thursday_of_week_containing(day: NaiveDate) -> Option<NaiveDate> {
    let days_from_monday = u64::from(day.weekday().num_days_from_monday());
    if days_from_monday <= 3 {
        day.checked_add_days(Days::new(3 - days_from_monday))
    } else {
        day.checked_sub_days(Days::new(days_from_monday - 3))
    }
}

/// Binary search for the first second whose local time is at or after `day`'s
/// midnight, used only when that midnight does not exist locally.
///
/// Local time is monotone around a forward jump, and tz database transitions fall on
/// whole seconds, so the search is exact.
fn first_instant_of_skipped_midnight(day: NaiveDate, tz: Tz) -> crate::Result<DateTime<Utc>> {
    let unrepresentable = TocError::Unrepresentable {
        what: "the start of a day whose midnight is skipped",
    };
    let local_midnight = day.and_time(NaiveTime::MIN);
    let midnight_read_as_utc_secs = local_midnight.and_utc().timestamp();
    let is_at_or_after_midnight = |epoch_secs: i64| -> Option<bool> {
        let instant = DateTime::<Utc>::from_timestamp(epoch_secs, 0)?;
        Some(instant.with_timezone(&tz).naive_local() >= local_midnight)
    };
    let mut before_secs = midnight_read_as_utc_secs
        .checked_sub(DAY_START_SEARCH_WINDOW_SECS)
        .ok_or(unrepresentable.clone())?;
    let mut at_or_after_secs = midnight_read_as_utc_secs
        .checked_add(DAY_START_SEARCH_WINDOW_SECS)
        .ok_or(unrepresentable.clone())?;
    let is_bracketed = is_at_or_after_midnight(before_secs) == Some(false)
        && is_at_or_after_midnight(at_or_after_secs) == Some(true);
    if !is_bracketed {
        return Err(unrepresentable);
    }
    while at_or_after_secs - before_secs > 1 {
        let middle_secs = before_secs + (at_or_after_secs - before_secs) / 2;
        if is_at_or_after_midnight(middle_secs).ok_or(unrepresentable.clone())? {
            at_or_after_secs = middle_secs;
        } else {
            before_secs = middle_secs;
        }
    }
    DateTime::<Utc>::from_timestamp(at_or_after_secs, 0).ok_or(unrepresentable)
}

#[cfg(test)]
#[path = "calendar_tests.rs"]
mod tests;
