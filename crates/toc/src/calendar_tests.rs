//! Unit and property tests of [`crate::calendar`].

use chrono::TimeDelta;
use chrono_tz::{America, Asia, Europe, Pacific};
use proptest::prelude::*;

use super::*;
use crate::node_id::TocNodeId;

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
    TocNodeId::day_and_ancestors(day).map(|node_id| node_id.to_string())
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
        let chain = TocNodeId::day_and_ancestors(day);
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
        let [day_id, ..] = TocNodeId::day_and_ancestors(NaiveDate::MAX);
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
        let [day_id, week_id, month_id, year_id] = TocNodeId::day_and_ancestors(day);
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
