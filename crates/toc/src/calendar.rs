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
use crate::node_id::TocNodeId;

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

/// The chain a day is filed under, finest first: `[day, week, month, year]`.
///
/// The week's month and year can differ from the day's own (2024-12-30 → `2025-W01` →
/// `2025-01` → `2025`), because a week is filed whole under the month of its Thursday.
/// For dates outside the supported years whose Thursday chrono cannot represent, the
/// day's own month is used, so this never fails.
#[must_use]
pub fn ancestors(day: NaiveDate) -> [TocNodeId; 4] {
    let (iso_year, week) = week_of(day);
    let (year, month) = match thursday_of_week_containing(day) {
        Some(thursday) => (thursday.year(), thursday.month()),
        None => (day.year(), day.month()),
    };
    [
        TocNodeId::Day(day),
        TocNodeId::Week { iso_year, week },
        TocNodeId::Month { year, month },
        TocNodeId::Year(year),
    ]
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
mod tests {
    use chrono::TimeDelta;
    use chrono_tz::{America, Asia, Europe, Pacific};
    use proptest::prelude::*;

    use super::*;

    fn date(year: i32, month: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(year, month, day).expect("valid test date")
    }

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .expect("valid test instant")
            .with_timezone(&Utc)
    }

    fn ms(text: &str) -> u64 {
        u64::try_from(utc(text).timestamp_millis()).expect("after 1970")
    }

    fn ids(day: NaiveDate) -> [String; 4] {
        ancestors(day).map(|node_id| node_id.to_string())
    }

    fn day_length_hours(day: NaiveDate, tz: Tz) -> i64 {
        let (start, end) = day_range(day, tz).expect("day range");
        (end - start).num_hours()
    }

    #[test]
    fn day_of_uses_the_configured_time_zone() {
        let late_utc = ms("2026-01-30T23:30:00Z");
        assert_eq!(day_of(late_utc, Tz::UTC), date(2026, 1, 30));
        assert_eq!(day_of(late_utc, Asia::Tokyo), date(2026, 1, 31));
        assert_eq!(day_of(late_utc, America::New_York), date(2026, 1, 30));
        assert_eq!(
            day_of(ms("2026-01-31T04:59:59.999Z"), America::New_York),
            date(2026, 1, 30)
        );
        assert_eq!(
            day_of(ms("2026-01-31T05:00:00Z"), America::New_York),
            date(2026, 1, 31)
        );
    }

    #[test]
    fn day_of_never_fails_on_extreme_timestamps() {
        assert_eq!(day_of(0, Tz::UTC), date(1970, 1, 1));
        assert_eq!(day_of(0, America::New_York), date(1969, 12, 31));
        assert_eq!(day_of(u64::MAX, Tz::UTC), date(9999, 12, 31));
        assert_eq!(day_of(i64::MAX as u64, Asia::Tokyo), date(9999, 12, 31));
        assert_eq!(
            day_of(ms("9999-12-31T23:00:00Z"), Asia::Tokyo),
            date(9999, 12, 31)
        );
    }

    #[test]
    fn ancestors_across_year_boundaries() {
        // 2020 is a 53-week ISO year: 2020-12-31 is a Thursday.
        assert_eq!(num_weeks_in_iso_year(2020), 53);
        assert_eq!(num_weeks_in_iso_year(2021), 52);
        assert_eq!(
            ids(date(2020, 12, 31)),
            [
                "toc:day:2020-12-31",
                "toc:week:2020-W53",
                "toc:month:2020-12",
                "toc:year:2020"
            ]
        );
        // 2021-01-01 (Friday) is still in 2020-W53, so it files under December 2020.
        assert_eq!(
            ids(date(2021, 1, 1)),
            [
                "toc:day:2021-01-01",
                "toc:week:2020-W53",
                "toc:month:2020-12",
                "toc:year:2020"
            ]
        );
        assert_eq!(
            ids(date(2021, 1, 4)),
            [
                "toc:day:2021-01-04",
                "toc:week:2021-W01",
                "toc:month:2021-01",
                "toc:year:2021"
            ]
        );
        // 2026-01-01 is a Thursday: its week starts on Monday 2025-12-29.
        assert_eq!(
            ids(date(2026, 1, 1)),
            [
                "toc:day:2026-01-01",
                "toc:week:2026-W01",
                "toc:month:2026-01",
                "toc:year:2026"
            ]
        );
        assert_eq!(
            ids(date(2025, 12, 29)),
            [
                "toc:day:2025-12-29",
                "toc:week:2026-W01",
                "toc:month:2026-01",
                "toc:year:2026"
            ]
        );
        // The example from the brief: 2024-12-30 is in 2025-W01, Thursday 2025-01-02.
        assert_eq!(
            ids(date(2024, 12, 30)),
            [
                "toc:day:2024-12-30",
                "toc:week:2025-W01",
                "toc:month:2025-01",
                "toc:year:2025"
            ]
        );
    }

    #[test]
    fn ancestors_match_parent_chain() {
        let mut day = date(2019, 12, 1);
        while day < date(2027, 2, 1) {
            let chain = ancestors(day);
            for pair in chain.windows(2) {
                assert_eq!(pair[0].parent().as_ref(), Some(&pair[1]), "{day}");
            }
            day = add_days(day, 1).expect("next day");
        }
    }

    #[test]
    fn month_of_week_follows_the_thursday() {
        assert_eq!(month_of_week(2025, 1), Ok((2025, 1)));
        assert_eq!(month_of_week(2026, 5), Ok((2026, 1))); // Mon 01-26 .. Sun 02-01, Thu 01-29
        assert_eq!(month_of_week(2026, 6), Ok((2026, 2)));
        assert_eq!(month_of_week(2020, 53), Ok((2020, 12)));
        assert_eq!(
            month_of_week(2021, 53),
            Err(TocError::WeekOutOfRange {
                iso_year: 2021,
                week: 53,
                num_weeks_in_year: 52
            })
        );
        assert!(month_of_week(2026, 0).is_err());
        assert_eq!(
            month_of_week(0, 1),
            Err(TocError::YearOutOfRange { year: 0 })
        );
    }

    #[test]
    fn weeks_of_month_partition_every_iso_year() {
        for year in [2019, 2020, 2021, 2024, 2025, 2026] {
            let mut weeks_from_months = Vec::new();
            for month in 1..=12 {
                let weeks = weeks_of_month(year, month).expect("valid month");
                for &(iso_year, week) in &weeks {
                    assert_eq!(month_of_week(iso_year, week), Ok((year, month)));
                }
                weeks_from_months.extend(weeks);
            }
            let all_weeks: Vec<(i32, u32)> = (1..=num_weeks_in_iso_year(year))
                .map(|week| (year, week))
                .collect();
            assert_eq!(weeks_from_months, all_weeks, "{year}");
        }
        assert_eq!(
            weeks_of_month(2026, 1),
            Ok(vec![(2026, 1), (2026, 2), (2026, 3), (2026, 4), (2026, 5)])
        );
        assert_eq!(
            weeks_of_month(2026, 13),
            Err(TocError::MonthOutOfRange { month: 13 })
        );
    }

    #[test]
    fn days_of_week_run_monday_to_sunday() {
        let days = days_of_week(2025, 1).expect("valid week");
        assert_eq!(days[0], date(2024, 12, 30));
        assert_eq!(days[6], date(2025, 1, 5));
        assert!(days.iter().all(|&day| week_of(day) == (2025, 1)));
        assert_eq!(monday_of_week(2020, 53), Ok(date(2020, 12, 28)));
    }

    #[test]
    fn dst_days_last_23_and_25_hours() {
        assert_eq!(day_length_hours(date(2026, 3, 28), Europe::Berlin), 24);
        assert_eq!(day_length_hours(date(2026, 3, 29), Europe::Berlin), 23);
        assert_eq!(day_length_hours(date(2026, 10, 25), Europe::Berlin), 25);
        assert_eq!(day_length_hours(date(2026, 3, 8), America::New_York), 23);
        assert_eq!(day_length_hours(date(2026, 11, 1), America::New_York), 25);
        let (start, end) = day_range(date(2026, 3, 29), Europe::Berlin).expect("range");
        assert_eq!(start, utc("2026-03-28T23:00:00Z"));
        assert_eq!(end, utc("2026-03-29T22:00:00Z"));
        let (start, end) = day_range(date(2026, 11, 1), America::New_York).expect("range");
        assert_eq!(start, utc("2026-11-01T04:00:00Z"));
        assert_eq!(end, utc("2026-11-02T05:00:00Z"));
    }

    #[test]
    fn skipped_midnight_starts_the_day_where_the_jump_lands() {
        // Brazil sprang forward at 00:00 → 01:00 on 2018-11-04 (UTC-3 → UTC-2).
        let sao_paulo = America::Sao_Paulo;
        assert_eq!(
            day_start(date(2018, 11, 4), sao_paulo),
            Ok(utc("2018-11-04T03:00:00Z"))
        );
        assert_eq!(day_length_hours(date(2018, 11, 4), sao_paulo), 23);
        // ... and fell back at 00:00 → 23:00 on 2019-02-17, so 2019-02-16 had 25 hours.
        assert_eq!(day_length_hours(date(2019, 2, 16), sao_paulo), 25);
        // Samoa skipped 2011-12-30 entirely: an empty day.
        let (start, end) = day_range(date(2011, 12, 30), Pacific::Apia).expect("range");
        assert_eq!(start, end);
        assert_eq!(start, utc("2011-12-30T10:00:00Z"));
    }

    #[test]
    fn every_quarter_hour_around_transitions_lies_in_its_day() {
        let windows = [
            (Pacific::Apia, "2011-12-28T00:00:00Z"),
            (America::Sao_Paulo, "2018-11-02T00:00:00Z"),
            (America::Sao_Paulo, "2019-02-15T00:00:00Z"),
            (Europe::Berlin, "2026-03-27T00:00:00Z"),
            (Europe::Berlin, "2026-10-23T00:00:00Z"),
            (America::New_York, "2026-03-06T00:00:00Z"),
            (America::New_York, "2026-10-30T00:00:00Z"),
        ];
        for (tz, window_start) in windows {
            let first_ms = ms(window_start);
            for step in 0..(5 * 24 * 4) {
                let ts_ms = first_ms + step * 15 * 60 * 1000;
                let instant =
                    DateTime::<Utc>::from_timestamp_millis(i64::try_from(ts_ms).expect("small"))
                        .expect("in range");
                let (start, end) = day_range(day_of(ts_ms, tz), tz).expect("day range");
                assert!(start <= instant && instant < end, "{tz} {instant}");
            }
        }
    }

    #[test]
    fn check_functions_reject_out_of_range_values() {
        assert_eq!(check_year(0), Err(TocError::YearOutOfRange { year: 0 }));
        assert_eq!(
            check_year(10_000),
            Err(TocError::YearOutOfRange { year: 10_000 })
        );
        assert_eq!(check_month(0), Err(TocError::MonthOutOfRange { month: 0 }));
        assert!(check_week(2020, 53).is_ok());
        assert!(check_week(2026, 54).is_err());
    }

    #[test]
    fn extreme_dates_give_errors_not_panics() {
        let last_representable_ms =
            u64::try_from(DateTime::<Utc>::MAX_UTC.timestamp_millis()).expect("positive");
        for tz in [Asia::Tokyo, Pacific::Kiritimati, America::New_York] {
            assert_eq!(day_of(last_representable_ms, tz), date(9999, 12, 31));
            assert_eq!(day_of_instant(DateTime::<Utc>::MIN_UTC, tz), date(1, 1, 1));
            assert_eq!(
                day_start(NaiveDate::MAX, tz),
                Err(TocError::YearOutOfRange {
                    year: NaiveDate::MAX.year()
                })
            );
            assert!(day_start(NaiveDate::MIN, tz).is_err());
            assert!(day_range(date(10_000, 1, 10), tz).is_ok());
            assert!(TocNodeId::Year(9999).try_covering_range(tz).is_ok());
            assert!(TocNodeId::Day(date(1, 1, 1)).try_start_end(tz).is_ok());
            let [day_id, ..] = ancestors(NaiveDate::MAX);
            assert_eq!(day_id, TocNodeId::Day(NaiveDate::MAX));
        }
    }

    const ZONES: [Tz; 9] = [
        Tz::UTC,
        Europe::Berlin,
        America::New_York,
        Asia::Tokyo,
        Asia::Kolkata,
        Asia::Kathmandu,
        America::Sao_Paulo,
        Pacific::Apia,
        Pacific::Chatham,
    ];

    /// 1970-01-01 .. 2100-01-01 in milliseconds.
    const LAST_TEST_TS_MS: u64 = 4_102_444_800_000;

    fn contains(range: (DateTime<Utc>, DateTime<Utc>), instant: DateTime<Utc>) -> bool {
        range.0 <= instant && instant < range.1
    }

    proptest! {
        #[test]
        fn every_timestamp_lies_inside_its_ancestors(
            ts_ms in 0..LAST_TEST_TS_MS,
            zone_index in 0..ZONES.len(),
        ) {
            let tz = ZONES[zone_index];
            let instant = DateTime::<Utc>::from_timestamp_millis(i64::try_from(ts_ms).expect("small"))
                .expect("in range");
            let day = day_of(ts_ms, tz);
            let [day_id, week_id, month_id, year_id] = ancestors(day);
            // Day and week: their own range.
            prop_assert!(contains(day_id.try_start_end(tz).expect("day"), instant));
            prop_assert!(contains(week_id.try_start_end(tz).expect("week"), instant));
            // Month and year of the week: the span of the weeks filed under them.
            prop_assert!(contains(month_id.try_covering_range(tz).expect("month"), instant));
            prop_assert!(contains(year_id.try_covering_range(tz).expect("year"), instant));
            // The day's own calendar month and year: their calendar range.
            let calendar_month = TocNodeId::Month { year: day.year(), month: day.month() };
            prop_assert!(contains(calendar_month.try_start_end(tz).expect("month"), instant));
            prop_assert!(contains(TocNodeId::Year(day.year()).try_start_end(tz).expect("year"), instant));
            // Every node is inside the range of its parent's subtree.
            for pair in [day_id, week_id, month_id, year_id].windows(2) {
                let child = pair[0].try_covering_range(tz).expect("child");
                let parent = pair[1].try_covering_range(tz).expect("parent");
                prop_assert!(parent.0 <= child.0 && child.1 <= parent.1);
            }
        }

        #[test]
        fn a_week_is_exactly_the_union_of_its_days(
            ts_ms in 0..LAST_TEST_TS_MS,
            zone_index in 0..ZONES.len(),
        ) {
            let tz = ZONES[zone_index];
            let (iso_year, week) = week_of(day_of(ts_ms, tz));
            let week_range = TocNodeId::Week { iso_year, week }.try_start_end(tz).expect("week");
            let days = days_of_week(iso_year, week).expect("days");
            let mut covered_until = week_range.0;
            let mut total = TimeDelta::zero();
            for day in days {
                let (start, end) = day_range(day, tz).expect("day");
                prop_assert_eq!(start, covered_until, "days are contiguous");
                prop_assert!(start <= end);
                total += end - start;
                covered_until = end;
            }
            prop_assert_eq!(covered_until, week_range.1);
            prop_assert_eq!(total, week_range.1 - week_range.0);
        }
    }
}
