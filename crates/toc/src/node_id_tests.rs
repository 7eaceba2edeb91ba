//! Unit and property tests of [`crate::TocNodeId`] and [`crate::GripId`].

use chrono_tz::{America, Europe};
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

fn parse(text: &str) -> TocNodeId {
    text.parse().expect("valid node id")
}

fn parse_error(text: &str) -> String {
    match text.parse::<TocNodeId>() {
        Ok(node_id) => panic!("{text} parsed as {node_id:?}"),
        Err(TocError::InvalidNodeId { reason, .. }) => reason,
        Err(other) => panic!("{text}: unexpected error {other:?}"),
    }
}

const SAMPLE_ULID: &str = "01KGA6Z5V8J8Q6V8T4R2M1N0PZ";

#[test]
fn display_matches_the_architecture_formats() {
    let ulid = Ulid::from_string(SAMPLE_ULID).expect("valid ulid");
    assert_eq!(TocNodeId::Year(2026).to_string(), "toc:year:2026");
    assert_eq!(
        TocNodeId::Month {
            year: 2026,
            month: 1
        }
        .to_string(),
        "toc:month:2026-01"
    );
    assert_eq!(
        TocNodeId::Week {
            iso_year: 2026,
            week: 5
        }
        .to_string(),
        "toc:week:2026-W05"
    );
    assert_eq!(
        TocNodeId::Day(date(2026, 1, 30)).to_string(),
        "toc:day:2026-01-30"
    );
    assert_eq!(
        TocNodeId::Segment {
            day: date(2026, 1, 30),
            ulid
        }
        .to_string(),
        format!("toc:segment:2026-01-30:{SAMPLE_ULID}")
    );
    assert_eq!(
        TocNodeId::Day(date(33, 2, 3)).to_string(),
        "toc:day:0033-02-03"
    );
}

#[test]
fn canonical_forms_round_trip() {
    for text in [
        "toc:year:2026",
        "toc:year:0001",
        "toc:year:9999",
        "toc:month:2026-01",
        "toc:month:2025-12",
        "toc:week:2026-W05",
        "toc:week:2020-W53",
        "toc:day:2026-01-30",
        "toc:day:2024-02-29",
        &format!("toc:segment:2026-01-30:{SAMPLE_ULID}"),
    ] {
        assert_eq!(parse(text).to_string(), text);
    }
}

#[test]
fn parse_errors_name_the_wrong_part() {
    assert_eq!(parse_error("year:2026"), "expected the prefix `toc:`");
    assert_eq!(parse_error("toc:2026"), "expected `toc:<level>:<key>`");
    assert_eq!(
        parse_error("toc:decade:2020"),
        "unknown level `decade` (expected year, month, week, day or segment)"
    );
    assert_eq!(
        parse_error("toc:Year:2026"),
        "unknown level `Year` (expected year, month, week, day or segment)"
    );
    assert_eq!(
        parse_error("toc:year:26"),
        "the year `26` is not four digits"
    );
    assert_eq!(
        parse_error("toc:year:+202"),
        "the year `+202` is not four digits"
    );
    assert_eq!(
        parse_error("toc:year:0000"),
        "year 0 is outside the supported range 1..=9999"
    );
    assert_eq!(
        parse_error("toc:month:2026-1"),
        "the month `1` is not two digits"
    );
    assert_eq!(
        parse_error("toc:month:2026-13"),
        "month 13 does not exist (expected 1..=12)"
    );
    assert_eq!(parse_error("toc:month:202601"), "a month key is `YYYY-MM`");
    assert_eq!(
        parse_error("toc:week:2026-05"),
        "a week key is `YYYY-Www`, e.g. `2026-W05`"
    );
    assert_eq!(
        parse_error("toc:week:2026-W5"),
        "the week `5` is not two digits"
    );
    assert_eq!(
        parse_error("toc:week:2025-W53"),
        "ISO year 2025 has no week 53 (it has 52)"
    );
    assert_eq!(
        parse_error("toc:week:2026-W00"),
        "ISO year 2026 has no week 0 (it has 53)"
    );
    assert_eq!(
        parse_error("toc:day:2026-02-30"),
        "day 30 does not exist in 2026-02"
    );
    assert_eq!(
        parse_error("toc:day:2026-00-10"),
        "month 0 does not exist (expected 1..=12)"
    );
    assert_eq!(
        parse_error("toc:day:2026-01-30x"),
        "the day `30x` is not two digits"
    );
    assert_eq!(
        parse_error("toc:day:2026-01"),
        "the date `2026-01` is not `YYYY-MM-DD`"
    );
    assert_eq!(
        parse_error("toc:segment:2026-01-30"),
        "a segment key is `YYYY-MM-DD:<ULID>`"
    );
    assert!(parse_error("toc:segment:2026-01-30:nope").starts_with("`nope` is not a ULID"));
    assert!(
        parse_error(&format!(
            "toc:segment:2026-01-30:{}",
            SAMPLE_ULID.to_lowercase()
        ))
        .contains("not in canonical form")
    );
    assert!(
        parse_error("toc:segment:2026-01-30:81KGA6Z5V8J8Q6V8T4R2M1N0PZ")
            .contains("not in canonical form")
    );
}

#[test]
fn parse_errors_do_not_echo_huge_inputs() {
    let huge_input = format!("toc:day:{}", "9".repeat(100_000));
    let message = huge_input
        .parse::<TocNodeId>()
        .expect_err("invalid")
        .to_string();
    assert!(message.len() < 400, "{message}");
}

#[test]
fn levels_and_parents() {
    let segment = TocNodeId::segment_for("proj", date(2026, 1, 30), 1_769_767_200_000, "evt-1");
    assert_eq!(segment.level(), TocLevel::Segment);
    assert_eq!(segment.parent(), Some(parse("toc:day:2026-01-30")));
    assert_eq!(
        parse("toc:day:2026-01-30").parent(),
        Some(parse("toc:week:2026-W05"))
    );
    assert_eq!(
        parse("toc:week:2026-W05").parent(),
        Some(parse("toc:month:2026-01"))
    );
    assert_eq!(
        parse("toc:week:2025-W01").parent(),
        Some(parse("toc:month:2025-01"))
    );
    assert_eq!(
        parse("toc:month:2026-01").parent(),
        Some(parse("toc:year:2026"))
    );
    assert_eq!(parse("toc:year:2026").parent(), None);
    assert_eq!(
        TocNodeId::Week {
            iso_year: 2026,
            week: 60
        }
        .parent(),
        None
    );
    assert_eq!(
        segment.ancestors(),
        vec![
            parse("toc:day:2026-01-30"),
            parse("toc:week:2026-W05"),
            parse("toc:month:2026-01"),
            parse("toc:year:2026"),
        ]
    );
    assert_eq!(parse("toc:day:2026-01-30").level(), TocLevel::Day);
    assert_eq!(parse("toc:week:2026-W05").level(), TocLevel::Week);
    assert_eq!(parse("toc:month:2026-01").level(), TocLevel::Month);
    assert_eq!(parse("toc:year:2026").level(), TocLevel::Year);
}

#[test]
fn start_end_uses_local_calendar_boundaries() {
    let berlin = Europe::Berlin;
    assert_eq!(
        parse("toc:day:2026-01-30").start_end(berlin),
        (utc("2026-01-29T23:00:00Z"), utc("2026-01-30T23:00:00Z"))
    );
    // Week 2026-W05: Monday 2026-01-26 00:00 to Monday 2026-02-02 00:00, Berlin time.
    assert_eq!(
        parse("toc:week:2026-W05").start_end(berlin),
        (utc("2026-01-25T23:00:00Z"), utc("2026-02-01T23:00:00Z"))
    );
    // March 2026 in Berlin: starts in winter time, ends in summer time.
    assert_eq!(
        parse("toc:month:2026-03").start_end(berlin),
        (utc("2026-02-28T23:00:00Z"), utc("2026-03-31T22:00:00Z"))
    );
    assert_eq!(
        parse("toc:year:2026").start_end(America::New_York),
        (utc("2026-01-01T05:00:00Z"), utc("2027-01-01T05:00:00Z"))
    );
    assert_eq!(
        parse("toc:month:2025-12").start_end(Tz::UTC),
        (utc("2025-12-01T00:00:00Z"), utc("2026-01-01T00:00:00Z"))
    );
    let segment = TocNodeId::segment_for("proj", date(2026, 1, 30), 1_769_767_200_000, "evt-1");
    assert_eq!(
        segment.start_end(berlin),
        parse("toc:day:2026-01-30").start_end(berlin)
    );
}

#[test]
fn covering_range_extends_months_and_years_to_whole_weeks() {
    assert_eq!(
        parse("toc:month:2025-01").covering_range(Tz::UTC),
        (utc("2024-12-30T00:00:00Z"), utc("2025-02-03T00:00:00Z"))
    );
    assert_eq!(
        parse("toc:year:2026").covering_range(Tz::UTC),
        (utc("2025-12-29T00:00:00Z"), utc("2027-01-04T00:00:00Z"))
    );
    assert_eq!(
        parse("toc:year:2020").covering_range(Tz::UTC),
        (utc("2019-12-30T00:00:00Z"), utc("2021-01-04T00:00:00Z"))
    );
    let week = parse("toc:week:2026-W05");
    assert_eq!(week.covering_range(Tz::UTC), week.start_end(Tz::UTC));
}

#[test]
fn invalid_hand_built_ids_give_errors_or_empty_ranges() {
    let bad_month = TocNodeId::Month {
        year: 2026,
        month: 13,
    };
    assert_eq!(
        bad_month.validate(),
        Err(TocError::MonthOutOfRange { month: 13 })
    );
    assert!(bad_month.try_start_end(Tz::UTC).is_err());
    let (start, end) = bad_month.start_end(Tz::UTC);
    assert_eq!(start, end);
    assert_eq!(
        TocNodeId::Year(i32::MAX).covering_range(Tz::UTC),
        EMPTY_RANGE
    );
    assert!(TocNodeId::Year(i32::MIN).calendar_children().is_empty());
    assert!(
        TocNodeId::Day(NaiveDate::MAX)
            .try_start_end(Tz::UTC)
            .is_err()
    );
    assert_eq!(TocNodeId::Year(9999).next(), None);
    assert_eq!(TocNodeId::Year(1).previous(), None);
    assert_eq!(
        TocNodeId::month(2026, 0),
        Err(TocError::MonthOutOfRange { month: 0 })
    );
    assert!(TocNodeId::week(2021, 53).is_err());
    assert_eq!(TocNodeId::week(2020, 53), Ok(parse("toc:week:2020-W53")));
}

#[test]
fn calendar_children_and_siblings() {
    let months = parse("toc:year:2026").calendar_children();
    assert_eq!(months.len(), 12);
    assert_eq!(months[0], parse("toc:month:2026-01"));
    let weeks = parse("toc:month:2026-01").calendar_children();
    assert_eq!(weeks.first(), Some(&parse("toc:week:2026-W01")));
    assert_eq!(weeks.last(), Some(&parse("toc:week:2026-W05")));
    let days = parse("toc:week:2026-W01").calendar_children();
    assert_eq!(days.first(), Some(&parse("toc:day:2025-12-29")));
    assert_eq!(days.last(), Some(&parse("toc:day:2026-01-04")));
    assert!(parse("toc:day:2026-01-04").calendar_children().is_empty());

    assert_eq!(
        parse("toc:month:2026-01").previous(),
        Some(parse("toc:month:2025-12"))
    );
    assert_eq!(
        parse("toc:month:2025-12").next(),
        Some(parse("toc:month:2026-01"))
    );
    assert_eq!(
        parse("toc:week:2021-W01").previous(),
        Some(parse("toc:week:2020-W53"))
    );
    assert_eq!(
        parse("toc:week:2020-W53").next(),
        Some(parse("toc:week:2021-W01"))
    );
    assert_eq!(
        parse("toc:day:2026-03-01").previous(),
        Some(parse("toc:day:2026-02-28"))
    );
    assert_eq!(parse("toc:year:2026").next(), Some(parse("toc:year:2027")));
    let segment = TocNodeId::segment_for("proj", date(2026, 1, 30), 1, "e");
    assert_eq!(segment.next(), None);
}

#[test]
fn ordering_is_coarse_to_fine_then_chronological() {
    let mut node_ids = [
        parse("toc:day:2026-01-30"),
        parse("toc:year:2026"),
        parse("toc:week:2026-W05"),
        parse("toc:day:2026-01-29"),
        parse("toc:month:2025-12"),
        parse("toc:year:2025"),
    ];
    node_ids.sort();
    let texts: Vec<String> = node_ids.iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "toc:year:2025",
            "toc:year:2026",
            "toc:month:2025-12",
            "toc:week:2026-W05",
            "toc:day:2026-01-29",
            "toc:day:2026-01-30"
        ]
    );
}

#[test]
fn serde_uses_the_text_form() {
    let node_id = parse("toc:week:2026-W05");
    let json = serde_json::to_string(&node_id).expect("serializes");
    assert_eq!(json, "\"toc:week:2026-W05\"");
    assert_eq!(
        serde_json::from_str::<TocNodeId>(&json).expect("deserializes"),
        node_id
    );
    assert!(serde_json::from_str::<TocNodeId>("\"toc:week:2026-W99\"").is_err());
    let grip_id = GripId::derive("proj", 1_769_767_200_000, "evt-1", 0);
    let json = serde_json::to_string(&grip_id).expect("serializes");
    assert_eq!(
        serde_json::from_str::<GripId>(&json).expect("deserializes"),
        grip_id
    );
}

#[test]
fn segment_ids_are_deterministic_and_distinct() {
    let day = date(2026, 1, 30);
    let first = TocNodeId::segment_for("proj", day, 1_769_767_200_000, "evt-1");
    let again = TocNodeId::segment_for("proj", day, 1_769_767_200_000, "evt-1");
    assert_eq!(first, again);
    assert_eq!(first.to_string(), again.to_string());
    let TocNodeId::Segment { ulid, .. } = first else {
        panic!("segment_for builds a segment");
    };
    assert_eq!(ulid.timestamp_ms(), 1_769_767_200_000);
    assert_ne!(
        first,
        TocNodeId::segment_for("proj", day, 1_769_767_200_000, "evt-2")
    );
    assert_ne!(
        first,
        TocNodeId::segment_for("proj", day, 1_769_767_200_001, "evt-1")
    );
    assert_ne!(
        TocNodeId::segment_for("proj", day, 5, "ab"),
        TocNodeId::segment_for("proj", day, 5, "ba")
    );
}

#[test]
fn grip_ids_are_deterministic_and_distinct() {
    let grip_id = GripId::derive("proj", 1_769_767_200_000, "evt-1", 42);
    assert_eq!(
        grip_id,
        GripId::derive("proj", 1_769_767_200_000, "evt-1", 42)
    );
    assert_eq!(grip_id.ts_ms(), 1_769_767_200_000);
    assert_eq!(grip_id.ulid().timestamp_ms(), 1_769_767_200_000);
    assert_ne!(
        grip_id,
        GripId::derive("proj", 1_769_767_200_000, "evt-1", 43)
    );
    assert_ne!(
        grip_id,
        GripId::derive("proj", 1_769_767_200_000, "evt-2", 42)
    );
    assert_ne!(
        grip_id,
        GripId::derive("proj", 1_769_767_200_001, "evt-1", 42)
    );
    // A grip and a segment built from the same bytes do not share a ULID.
    let TocNodeId::Segment {
        ulid: segment_ulid, ..
    } = TocNodeId::segment_for("proj", date(2026, 1, 30), 1_769_767_200_000, "evt-1")
    else {
        panic!("segment_for builds a segment");
    };
    assert_ne!(
        GripId::derive("proj", 1_769_767_200_000, "evt-1", 0).ulid(),
        segment_ulid
    );
}

/// The derivation is a storage format: changing it renames every segment and grip
/// on rebuild. If this test fails, the change was not meant to happen.
#[test]
fn derived_ids_are_pinned() {
    assert_eq!(
        TocNodeId::segment_for("proj", date(2026, 1, 30), 1_769_767_200_000, "evt-1").to_string(),
        PINNED_SEGMENT_ID
    );
    assert_eq!(
        GripId::derive("proj", 1_769_767_200_000, "evt-1", 42).to_string(),
        PINNED_GRIP_ID
    );
    // Format 1's ids, as every data dir before TOC format 2 holds them and old
    // `toc_summary` events name them: the legacy derivation must keep producing them.
    assert_eq!(
        TocNodeId::legacy_segment_for(date(2026, 1, 30), 1_769_767_200_000, "evt-1").to_string(),
        PINNED_LEGACY_SEGMENT_ID
    );
    assert_eq!(
        GripId::legacy_derive(1_769_767_200_000, "evt-1", 42).to_string(),
        PINNED_LEGACY_GRIP_ID
    );
}

const PINNED_SEGMENT_ID: &str = "toc:segment:2026-01-30:01KG75GS8008RQBP2CGJZBY2TS";
const PINNED_GRIP_ID: &str = "grip:1769767200000:01KG75GS803KKEY38PGBS87YBC";
const PINNED_LEGACY_SEGMENT_ID: &str = "toc:segment:2026-01-30:01KG75GS80TNRFP1SNRFQZ3CTM";
const PINNED_LEGACY_GRIP_ID: &str = "grip:1769767200000:01KG75GS80XK3VEHCQ4WS299A0";

/// Event ids are unique within a project only: the same event id at the same time in
/// two projects (one conversation recorded into both) must give two segments and two
/// grips, or the later project's records overwrite the earlier's under the shared key.
#[test]
fn equal_event_ids_and_times_in_two_projects_get_different_ids() {
    let day = date(2026, 1, 30);
    let alpha = TocNodeId::segment_for("alpha", day, 1_769_767_200_000, "evt-1");
    let beta = TocNodeId::segment_for("beta", day, 1_769_767_200_000, "evt-1");
    assert_ne!(alpha, beta);
    let (
        TocNodeId::Segment {
            ulid: alpha_ulid, ..
        },
        TocNodeId::Segment {
            ulid: beta_ulid, ..
        },
    ) = (alpha, beta)
    else {
        panic!("segment_for builds segments");
    };
    // Ordering is unchanged: both still sort by the first event's time.
    assert_eq!(alpha_ulid.timestamp_ms(), beta_ulid.timestamp_ms());
    assert_ne!(
        GripId::derive("alpha", 1_769_767_200_000, "evt-1", 0),
        GripId::derive("beta", 1_769_767_200_000, "evt-1", 0)
    );
    // Length-prefixed parts: moving bytes between project and event id changes the id.
    assert_ne!(
        TocNodeId::segment_for("ab", day, 5, "c"),
        TocNodeId::segment_for("a", day, 5, "bc")
    );
    // And a current id never equals the legacy one of the same segment or grip.
    assert_ne!(
        TocNodeId::segment_for("", day, 5, "e"),
        TocNodeId::legacy_segment_for(day, 5, "e")
    );
    assert_ne!(
        GripId::derive("", 5, "e", 0),
        GripId::legacy_derive(5, "e", 0)
    );
}

#[test]
fn grip_id_text_form_and_errors() {
    let grip_id = GripId::new(
        1_769_767_200_000,
        Ulid::from_string(SAMPLE_ULID).expect("ulid"),
    );
    let text = format!("grip:1769767200000:{SAMPLE_ULID}");
    assert_eq!(grip_id.to_string(), text);
    assert_eq!(text.parse::<GripId>(), Ok(grip_id));
    let reason = |text: &str| match text.parse::<GripId>() {
        Err(TocError::InvalidGripId { reason, .. }) => reason,
        other => panic!("{text}: {other:?}"),
    };
    assert_eq!(reason("toc:1:X"), "expected the prefix `grip:`");
    assert_eq!(reason("grip:17"), "expected `grip:<ts_ms>:<ULID>`");
    assert_eq!(
        reason(&format!("grip:+17:{SAMPLE_ULID}")),
        "the timestamp `+17` is not plain decimal milliseconds"
    );
    assert_eq!(
        reason(&format!("grip:017:{SAMPLE_ULID}")),
        "the timestamp `017` is not plain decimal milliseconds"
    );
    assert_eq!(
        reason(&format!("grip:99999999999999999999:{SAMPLE_ULID}")),
        "the timestamp does not fit in 64 bits"
    );
    assert!(reason("grip:17:short").contains("is not a ULID"));
    assert_eq!(
        format!("grip:0:{SAMPLE_ULID}")
            .parse::<GripId>()
            .map(|id| id.ts_ms()),
        Ok(0)
    );
}

fn matches(pattern: &str, text: &str) -> bool {
    regex::Regex::new(pattern)
        .expect("the pattern compiles")
        .is_match(text)
}

#[test]
fn schemas_are_patterned_strings_that_match_the_text_forms() {
    for (schema, pattern) in [
        (schemars::schema_for!(TocNodeId), TocNodeId::PATTERN),
        (schemars::schema_for!(GripId), GripId::PATTERN),
    ] {
        assert_eq!(schema.get("type"), Some(&serde_json::json!("string")));
        assert_eq!(schema.get("pattern"), Some(&serde_json::json!(pattern)));
        let examples = schema.get("examples").and_then(|e| e.as_array());
        for example in examples.expect("examples") {
            let text = example.as_str().expect("a string example");
            assert!(matches(pattern, text), "{text}");
            let round_trip = match text.parse::<TocNodeId>() {
                Ok(node_id) => node_id.to_string(),
                Err(_) => text.parse::<GripId>().expect("an id").to_string(),
            };
            assert_eq!(round_trip, text);
        }
    }
    for text in [
        "toc:year:2026",
        "toc:week:2020-W53",
        "toc:day:2024-02-29",
        PINNED_SEGMENT_ID,
    ] {
        assert!(matches(TocNodeId::PATTERN, text), "{text}");
    }
    for text in [
        "toc:year:26",
        "toc:month:2026-13",
        "toc:week:2026-W5",
        "toc:week:2026-W54",
        "toc:day:2026-1-30",
        "toc:segment:2026-01-30:01kg75gs80tnrfp1snrfqz3ctm",
        "toc:segment:2026-01-30:81KG75GS80TNRFP1SNRFQZ3CTM",
        "toc:hour:2026-01-30T09",
        " toc:year:2026",
        PINNED_GRIP_ID,
    ] {
        assert!(!matches(TocNodeId::PATTERN, text), "{text}");
    }
    assert!(matches(GripId::PATTERN, PINNED_GRIP_ID));
    assert!(matches(GripId::PATTERN, &format!("grip:0:{SAMPLE_ULID}")));
    for text in [
        format!("grip:017:{SAMPLE_ULID}"),
        format!("grip:+17:{SAMPLE_ULID}"),
        format!("grip:17:{}", SAMPLE_ULID.to_lowercase()),
        "grip:17:short".to_string(),
        PINNED_SEGMENT_ID.to_string(),
    ] {
        assert!(!matches(GripId::PATTERN, &text), "{text}");
    }
}

proptest! {
    #[test]
    fn every_id_written_matches_its_schema_pattern(
        days_since_epoch in -700_000_i64..2_900_000,
        ts_ms in 0_u64..(1 << 48),
        event_id in "\\PC{1,16}",
    ) {
        let Some(day) = NaiveDate::from_ymd_opt(1970, 1, 1)
            .and_then(|epoch| epoch.checked_add_signed(chrono::TimeDelta::days(days_since_epoch)))
        else {
            return Ok(());
        };
        let mut node_ids = TocNodeId::day_and_ancestors(day).to_vec();
        node_ids.push(TocNodeId::Day(day));
        node_ids.push(TocNodeId::segment_for("proj", day, ts_ms, &event_id));
        for node_id in node_ids {
            if node_id.validate().is_ok() {
                let text = node_id.to_string();
                prop_assert!(matches(TocNodeId::PATTERN, &text), "{}", text);
            }
        }
        let grip_text = GripId::derive("proj", ts_ms, &event_id, 0).to_string();
        prop_assert!(matches(GripId::PATTERN, &grip_text), "{}", grip_text);
    }

    #[test]
    fn valid_days_and_weeks_round_trip(days_since_epoch in -700_000_i64..2_900_000) {
        let Some(day) = NaiveDate::from_ymd_opt(1970, 1, 1)
            .and_then(|epoch| epoch.checked_add_signed(chrono::TimeDelta::days(days_since_epoch)))
        else {
            return Ok(());
        };
        for node_id in TocNodeId::day_and_ancestors(day) {
            if node_id.validate().is_ok() {
                prop_assert_eq!(node_id.to_string().parse::<TocNodeId>(), Ok(node_id));
            }
        }
    }

    #[test]
    fn arbitrary_hand_built_ids_never_panic(
        year in any::<i32>(),
        month_or_week in any::<u32>(),
        days_from_ce in any::<i32>(),
        ulid_bits in any::<u128>(),
    ) {
        let day = NaiveDate::from_num_days_from_ce_opt(days_from_ce).unwrap_or(NaiveDate::MAX);
        let node_ids = [
            TocNodeId::Year(year),
            TocNodeId::Month { year, month: month_or_week },
            TocNodeId::Week { iso_year: year, week: month_or_week },
            TocNodeId::Day(day),
            TocNodeId::Segment { day, ulid: Ulid(ulid_bits) },
        ];
        for node_id in node_ids {
            let is_valid = node_id.validate().is_ok();
            let _ = node_id.start_end(Tz::UTC);
            let _ = node_id.covering_range(chrono_tz::Pacific::Kiritimati);
            let _ = node_id.parent();
            let _ = node_id.ancestors();
            let _ = node_id.calendar_children();
            let _ = (node_id.previous(), node_id.next());
            let text = node_id.to_string();
            if is_valid {
                prop_assert_eq!(text.parse::<TocNodeId>(), Ok(node_id));
                prop_assert!(node_id.try_start_end(America::New_York).is_ok());
            }
        }
    }

    #[test]
    fn parsing_arbitrary_text_never_panics(text in "\\PC{0,40}") {
        let _ = text.parse::<TocNodeId>();
        let _ = text.parse::<GripId>();
        let _ = format!("toc:{text}").parse::<TocNodeId>();
        let _ = format!("grip:{text}").parse::<GripId>();
    }

    #[test]
    fn derived_ids_round_trip(ts_ms in 0_u64..(1 << 48), event_id in "\\PC{1,32}", offset in 0_usize..10_000) {
        let grip_id = GripId::derive("proj", ts_ms, &event_id, offset);
        prop_assert_eq!(grip_id.to_string().parse::<GripId>(), Ok(grip_id));
        let segment = TocNodeId::segment_for("proj", calendar::day_of(ts_ms, Tz::UTC), ts_ms, &event_id);
        prop_assert_eq!(segment.to_string().parse::<TocNodeId>(), Ok(segment));
    }
}
