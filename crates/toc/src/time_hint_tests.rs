//! Unit and property tests of [`crate::parse_time_hint`].

use chrono::TimeZone;
use chrono_tz::{America, Asia, Europe};
use proptest::prelude::*;

use super::*;

/// 2026-02-04T10:00:00Z, a Wednesday.
fn now() -> DateTime<Utc> {
    utc("2026-02-04T10:00:00Z")
}

fn utc(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("valid test instant")
        .with_timezone(&Utc)
}

fn hint_at(query: &str, now: DateTime<Utc>, tz: Tz) -> TimeHint {
    parse_time_hint(query, now, tz).unwrap_or_else(|| panic!("no hint in {query:?}"))
}

fn hint(query: &str) -> TimeHint {
    hint_at(query, now(), Tz::UTC)
}

fn node_of(query: &str) -> String {
    hint(query).node.to_string()
}

fn assert_no_hint(query: &str) {
    let found_opt = parse_time_hint(query, now(), Tz::UTC);
    assert!(found_opt.is_none(), "{query:?} gave {found_opt:?}");
}

#[test]
fn today_and_yesterday() {
    let today = hint("what did we do today");
    assert_eq!(today.node.to_string(), "toc:day:2026-02-04");
    assert_eq!(today.from, utc("2026-02-04T00:00:00Z"));
    assert_eq!(today.to, utc("2026-02-05T00:00:00Z"));
    assert_eq!(today.matched, "today");
    assert_eq!(today.remainder, "what did we do");
    let yesterday = hint("Yesterday, we fixed the JWT bug");
    assert_eq!(yesterday.node.to_string(), "toc:day:2026-02-03");
    assert_eq!(yesterday.matched, "Yesterday");
    assert_eq!(yesterday.remainder, "we fixed the JWT bug");
    assert_eq!(node_of("YESTERDAY"), "toc:day:2026-02-03");
    assert_eq!(hint("yesterday?").remainder, "");
    assert_eq!(hint("Today. What broke").remainder, "What broke");
    let possessive = hint("what about yesterday's standup?");
    assert_eq!(possessive.node.to_string(), "toc:day:2026-02-03");
    assert_eq!(possessive.matched, "yesterday's");
    assert_eq!(possessive.remainder, "what about standup?");
    let before_yesterday = hint("what happened the day before yesterday?");
    assert_eq!(before_yesterday.node.to_string(), "toc:day:2026-02-02");
    assert_eq!(before_yesterday.matched, "the day before yesterday");
    assert_eq!(before_yesterday.remainder, "what happened?");
    assert_eq!(node_of("errors tonight"), "toc:day:2026-02-04");
    assert_eq!(node_of("this morning"), "toc:day:2026-02-04");
    assert_eq!(node_of("last night's deploy"), "toc:day:2026-02-03");
}

#[test]
fn this_and_last_periods() {
    let last_week = hint("what did we decide about JWT expiry last week?");
    assert_eq!(last_week.node.to_string(), "toc:week:2026-W05");
    assert_eq!(last_week.from, utc("2026-01-26T00:00:00Z"));
    assert_eq!(last_week.to, utc("2026-02-02T00:00:00Z"));
    assert_eq!(last_week.matched, "last week");
    assert_eq!(last_week.remainder, "what did we decide about JWT expiry?");
    assert_eq!(node_of("this week"), "toc:week:2026-W06");
    assert_eq!(node_of("the previous week"), "toc:week:2026-W05");
    assert_eq!(node_of("this month"), "toc:month:2026-02");
    let last_month = hint("bugs from last month");
    assert_eq!(last_month.node.to_string(), "toc:month:2026-01");
    assert_eq!(last_month.from, utc("2026-01-01T00:00:00Z"));
    assert_eq!(last_month.to, utc("2026-02-01T00:00:00Z"));
    assert_eq!(last_month.matched, "from last month");
    assert_eq!(last_month.remainder, "bugs");
    assert_eq!(node_of("this year"), "toc:year:2026");
    let last_year = hint("Last Year");
    assert_eq!(last_year.node.to_string(), "toc:year:2025");
    assert_eq!(last_year.from, utc("2025-01-01T00:00:00Z"));
    assert_eq!(last_year.to, utc("2026-01-01T00:00:00Z"));
    let over = hint("over the last week");
    assert_eq!(over.matched, "over the last week");
    assert_eq!(over.remainder, "");
    assert_eq!(hint("earlier this week, ok?").remainder, "earlier, ok?");
}

#[test]
fn last_week_in_the_first_week_of_a_year() {
    let found = hint_at("last week", utc("2026-01-01T12:00:00Z"), Tz::UTC);
    assert_eq!(found.node.to_string(), "toc:week:2025-W52");
    let found = hint_at("last month", utc("2026-01-01T12:00:00Z"), Tz::UTC);
    assert_eq!(found.node.to_string(), "toc:month:2025-12");
    let found = hint_at("this week", utc("2021-01-02T12:00:00Z"), Tz::UTC);
    assert_eq!(found.node.to_string(), "toc:week:2020-W53");
}

#[test]
fn counts_ago() {
    assert_eq!(node_of("3 days ago"), "toc:day:2026-02-01");
    assert_eq!(node_of("a day ago"), "toc:day:2026-02-03");
    assert_eq!(node_of("Two Weeks Ago"), "toc:week:2026-W04");
    assert_eq!(node_of("one week ago"), "toc:week:2026-W05");
    assert_eq!(node_of("twelve days ago"), "toc:day:2026-01-23");
    assert_eq!(node_of("2 months ago"), "toc:month:2025-12");
    assert_eq!(node_of("a month ago"), "toc:month:2026-01");
    assert_eq!(node_of("13 months ago"), "toc:month:2025-01");
    assert_eq!(node_of("five years ago"), "toc:year:2021");
    assert_eq!(node_of("an hour ago"), "toc:day:2026-02-04");
    assert_eq!(node_of("11 hours ago"), "toc:day:2026-02-03");
    assert_eq!(node_of("90 minutes ago"), "toc:day:2026-02-04");
    assert_eq!(node_of("0 days ago"), "toc:day:2026-02-04");
    let found = hint("the fix from 10 days ago, remember?");
    assert_eq!(found.node.to_string(), "toc:day:2026-01-25");
    assert_eq!(found.matched, "from 10 days ago");
    assert_eq!(found.remainder, "the fix, remember?");
    assert_no_hint("9999999 days ago");
    assert_no_hint("3 days later");
    assert_no_hint("a few days ago");
    assert_no_hint("in 30 days");
}

#[test]
fn weekdays_are_the_most_recent_past_one() {
    // now is Wednesday 2026-02-04.
    assert_eq!(node_of("last monday"), "toc:day:2026-02-02");
    assert_eq!(node_of("last Wednesday"), "toc:day:2026-01-28");
    assert_eq!(node_of("last thursday"), "toc:day:2026-01-29");
    assert_eq!(node_of("last fri"), "toc:day:2026-01-30");
    assert_eq!(node_of("monday"), "toc:day:2026-02-02");
    assert_eq!(node_of("what broke on Sunday?"), "toc:day:2026-02-01");
    assert_eq!(hint("what broke on Sunday?").matched, "on Sunday");
    assert_eq!(hint("what broke on Sunday?").remainder, "what broke?");
    assert_eq!(node_of("wednesday"), "toc:day:2026-01-28");
    assert_eq!(node_of("this monday"), "toc:day:2026-02-02");
    assert_eq!(node_of("this wednesday"), "toc:day:2026-02-04");
    assert_eq!(node_of("this friday"), "toc:day:2026-01-30");
    assert_no_hint("sat on the sun");
}

#[test]
fn month_names_and_abbreviations() {
    let january = hint("what did we decide in January about caching");
    assert_eq!(january.node.to_string(), "toc:month:2026-01");
    assert_eq!(january.from, utc("2026-01-01T00:00:00Z"));
    assert_eq!(january.to, utc("2026-02-01T00:00:00Z"));
    assert_eq!(january.matched, "in January");
    assert_eq!(january.remainder, "what did we decide about caching");
    assert_eq!(node_of("in jan"), "toc:month:2026-01");
    assert_eq!(node_of("in Feb"), "toc:month:2026-02");
    assert_eq!(node_of("in march"), "toc:month:2025-03");
    assert_eq!(node_of("during Sept."), "toc:month:2025-09");
    assert_eq!(node_of("December"), "toc:month:2025-12");
    assert_eq!(node_of("January 2025"), "toc:month:2025-01");
    assert_eq!(node_of("in May 2024"), "toc:month:2024-05");
    assert_eq!(node_of("last january"), "toc:month:2026-01");
    assert_eq!(node_of("last february"), "toc:month:2025-02");
    assert_eq!(node_of("the 2026-01 release"), "toc:month:2026-01");
}

#[test]
fn may_and_other_words_need_context() {
    assert_no_hint("we may need to revisit the cache");
    assert_no_hint("May I ask about the parser?");
    assert_no_hint("march through the list");
    assert_no_hint("split on the sep character, then dec the counter");
    assert_no_hint("Jan said the build is red");
    assert_eq!(node_of("what happened in May"), "toc:month:2025-05");
    assert_eq!(node_of("since may"), "toc:month:2025-05");
    assert_eq!(node_of("during March"), "toc:month:2025-03");
    assert_eq!(node_of("may 2024"), "toc:month:2024-05");
    assert_eq!(node_of("may 5"), "toc:day:2025-05-05");
    assert_eq!(node_of("on 5 may"), "toc:day:2025-05-05");
    assert_eq!(node_of("5th may"), "toc:day:2025-05-05");
    assert_eq!(node_of("5 of may"), "toc:day:2025-05-05");
    assert_eq!(node_of("5 may 2024"), "toc:day:2024-05-05");
    assert_eq!(node_of("5 January"), "toc:day:2026-01-05");
    assert_no_hint("version 2 may break the build");
    assert_no_hint("retry 3 mar times");
    assert_eq!(node_of("in dec"), "toc:month:2025-12");
}

#[test]
fn explicit_dates() {
    let iso = hint("what happened on 2026-01-30?");
    assert_eq!(iso.node.to_string(), "toc:day:2026-01-30");
    assert_eq!(iso.matched, "on 2026-01-30");
    assert_eq!(iso.remainder, "what happened?");
    assert_eq!(node_of("30 January 2026"), "toc:day:2026-01-30");
    let day_first = hint("notes from the 30th of January please");
    assert_eq!(day_first.node.to_string(), "toc:day:2026-01-30");
    assert_eq!(day_first.matched, "from the 30th of January");
    assert_eq!(day_first.remainder, "notes please");
    assert_eq!(node_of("January 30"), "toc:day:2026-01-30");
    assert_eq!(node_of("Jan 30th"), "toc:day:2026-01-30");
    let with_year = hint("on Jan 30th, 2025 we shipped");
    assert_eq!(with_year.node.to_string(), "toc:day:2025-01-30");
    assert_eq!(with_year.matched, "on Jan 30th, 2025");
    assert_eq!(with_year.remainder, "we shipped");
    assert_eq!(node_of("December 25"), "toc:day:2025-12-25");
    assert_eq!(node_of("Feb 4"), "toc:day:2026-02-04");
    assert_eq!(node_of("Feb 5"), "toc:day:2025-02-05");
    assert_eq!(node_of("February 29"), "toc:day:2024-02-29");
    assert_eq!(node_of("1st march"), "toc:day:2025-03-01");
    assert_no_hint("February 30");
    assert_no_hint("2026-13-01");
    assert_no_hint("2026-02-30");
    assert_no_hint("on the 5th");
}

#[test]
fn years_after_a_preposition() {
    assert_eq!(node_of("what did we ship in 2025?"), "toc:year:2025");
    assert_eq!(node_of("since 2024"), "toc:year:2024");
    assert_no_hint("a buffer of 2048 bytes");
    assert_no_hint("in 2048 bytes");
    assert_no_hint("in 1200 ms");
    assert_no_hint("2025");
}

#[test]
fn the_first_hint_wins() {
    assert_eq!(node_of("yesterday and last week"), "toc:day:2026-02-03");
    let found = hint("last week, not in January");
    assert_eq!(found.node.to_string(), "toc:week:2026-W05");
    assert_eq!(found.remainder, "not in January");
    assert_eq!(node_of("in January or yesterday"), "toc:month:2026-01");
}

#[test]
fn queries_without_hints() {
    for query in [
        "",
        "   ",
        "how does the JWT refresh work",
        "weekly report of monthly metrics",
        "next week",
        "tomorrow",
        "lastweek",
        "this",
        "last",
        "in",
        "the",
        "?!",
    ] {
        assert_no_hint(query);
    }
}

#[test]
fn day_boundaries_follow_the_time_zone() {
    let tokyo = hint_at("today", now(), Asia::Tokyo);
    assert_eq!(tokyo.node.to_string(), "toc:day:2026-02-04");
    assert_eq!(tokyo.from, utc("2026-02-03T15:00:00Z"));
    assert_eq!(tokyo.to, utc("2026-02-04T15:00:00Z"));
    // 03:00 UTC is still the 3rd in Los Angeles.
    let early_utc = utc("2026-02-04T03:00:00Z");
    let los_angeles = hint_at("what did we do today", early_utc, America::Los_Angeles);
    assert_eq!(los_angeles.node.to_string(), "toc:day:2026-02-03");
    assert_eq!(los_angeles.from, utc("2026-02-03T08:00:00Z"));
    assert_eq!(los_angeles.to, utc("2026-02-04T08:00:00Z"));
    assert_eq!(
        hint_at("yesterday", early_utc, America::Los_Angeles)
            .node
            .to_string(),
        "toc:day:2026-02-02"
    );
    let berlin = hint_at("last week", now(), Europe::Berlin);
    assert_eq!(berlin.from, utc("2026-01-25T23:00:00Z"));
    assert_eq!(berlin.to, utc("2026-02-01T23:00:00Z"));
    let new_york = hint_at("in march", now(), America::New_York);
    assert_eq!(new_york.node.to_string(), "toc:month:2025-03");
    assert_eq!(new_york.from, utc("2025-03-01T05:00:00Z"));
    assert_eq!(new_york.to, utc("2025-04-01T04:00:00Z"));
}

#[test]
fn extreme_now_gives_no_hint_and_no_panic() {
    assert_eq!(
        parse_time_hint("today", DateTime::<Utc>::MAX_UTC, Asia::Tokyo),
        None
    );
    assert_eq!(
        parse_time_hint("today", DateTime::<Utc>::MIN_UTC, America::New_York),
        None
    );
    let early = Utc
        .with_ymd_and_hms(1, 1, 3, 0, 0, 0)
        .single()
        .expect("valid");
    assert_eq!(parse_time_hint("last year", early, Tz::UTC), None);
    assert!(parse_time_hint("today", early, Tz::UTC).is_some());
    let late = Utc
        .with_ymd_and_hms(9999, 12, 29, 0, 0, 0)
        .single()
        .expect("valid");
    assert_eq!(
        parse_time_hint("two weeks ago", late, Tz::UTC).map(|found| found.node.to_string()),
        Some("toc:week:9999-W50".to_string())
    );
}

#[test]
fn tokenizer_spans_and_words() {
    let tokens = tokenize("Yesterday's  2026-01-30, don't ÉTÉ 1-");
    let words: Vec<&str> = tokens.iter().map(|token| token.word.as_str()).collect();
    assert_eq!(words, ["yesterday", "2026-01-30", "don't", "été", "1"]);
    let query = "Yesterday's  2026-01-30, don't ÉTÉ 1-";
    assert_eq!(&query[tokens[3].start..tokens[3].end], "ÉTÉ");
}

const VOCABULARY: [&str; 48] = [
    "today",
    "yesterday",
    "last",
    "this",
    "previous",
    "week",
    "month",
    "year",
    "ago",
    "days",
    "day",
    "before",
    "a",
    "an",
    "two",
    "twelve",
    "12",
    "0",
    "in",
    "on",
    "the",
    "of",
    "since",
    "during",
    "january",
    "jan",
    "may",
    "march",
    "30th",
    "31",
    "29",
    "feb",
    "2026",
    "9999",
    "0001",
    "2026-01-30",
    "2025-02",
    "monday",
    "fri",
    "hours",
    "minutes",
    "JWT",
    ",",
    "?",
    "'s",
    "Ünïcödé",
    "-",
    "night",
];

const ZONES: [Tz; 5] = [
    Tz::UTC,
    Europe::Berlin,
    America::New_York,
    Asia::Tokyo,
    Asia::Kathmandu,
];

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(
        query in "\\PC{0,80}",
        now_ms in i64::MIN..i64::MAX,
        zone_index in 0..ZONES.len(),
    ) {
        if let Some(arbitrary_now) = DateTime::<Utc>::from_timestamp_millis(now_ms) {
            let _ = parse_time_hint(&query, arbitrary_now, ZONES[zone_index]);
        }
        let _ = parse_time_hint(&query, now(), ZONES[zone_index]);
    }

    #[test]
    fn hints_are_consistent(
        words in proptest::collection::vec(proptest::sample::select(VOCABULARY.to_vec()), 0..8),
        now_ms in 0_i64..4_102_444_800_000,
        zone_index in 0..ZONES.len(),
    ) {
        let query = words.join(" ");
        let tz = ZONES[zone_index];
        let arbitrary_now = DateTime::<Utc>::from_timestamp_millis(now_ms).expect("in range");
        if let Some(found) = parse_time_hint(&query, arbitrary_now, tz) {
            prop_assert!(found.from <= found.to);
            prop_assert_eq!(found.node.try_start_end(tz), Ok((found.from, found.to)));
            prop_assert!(query.contains(&found.matched));
            prop_assert!(!found.matched.is_empty());
            prop_assert_eq!(found.remainder.trim(), found.remainder.as_str());
            prop_assert!(!found.remainder.contains("  "));
            prop_assert!(found.remainder.len() < query.len());
        }
    }
}
