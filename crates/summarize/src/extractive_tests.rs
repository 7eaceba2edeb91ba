//! Unit and property tests of [`crate::extractive`].

use std::collections::HashMap;

use chrono::NaiveDate;
use memory_text::query_terms;
use memory_toc::{Grip, TocNode};
use proptest::prelude::*;

use super::analysis::{DECISION_ANCHOR_STEMS, SOLUTION_ANCHOR_STEMS, lowercase_for_phrases};
use super::*;
use crate::SummaryEvent;
use crate::signals::{DECISION_PHRASES, SOLUTION_PHRASES, has_decision, has_solution};

const TS_MS: u64 = 1_769_767_200_000;

fn segment_id() -> TocNodeId {
    let day = NaiveDate::from_ymd_opt(2026, 1, 30).expect("valid date");
    TocNodeId::segment_for("default", day, TS_MS, "e1")
}

fn event<'a>(event_id: &'a str, role: &'a str, text: &'a str) -> SummaryEvent<'a> {
    SummaryEvent {
        event_id,
        timestamp_ms: TS_MS,
        role,
        text,
    }
}

/// A grip on `excerpt`, which must be in the event's text.
fn grip(event: &SummaryEvent<'_>, excerpt: &str) -> Grip {
    let offset = event.text.find(excerpt).expect("excerpt is in the event");
    Grip {
        grip_id: GripId::derive("default", event.timestamp_ms, event.event_id, offset),
        project_id: "default".to_string(),
        session_id: "session-1".to_string(),
        excerpt: excerpt.to_string(),
        event_id_start: event.event_id.to_string(),
        event_id_end: event.event_id.to_string(),
        timestamp_ms: event.timestamp_ms,
        segment_id: segment_id(),
    }
}

fn no_corpus(_: &str) -> u32 {
    0
}

fn summarize_with(
    summarizer: &ExtractiveSummarizer,
    events: &[SummaryEvent<'_>],
    grips: &[Grip],
    corpus_document_frequency: &dyn Fn(&str) -> u32,
    num_corpus_documents: u32,
) -> Summary {
    let segment_id = segment_id();
    let input = SegmentInput {
        segment_id: &segment_id,
        project_id: "default",
        session_id: "session-1",
        events,
        grips,
        corpus_document_frequency,
        num_corpus_documents,
    };
    summarizer
        .summarize_segment(&input)
        .expect("the extractive summarizer never fails")
}

fn summarize(events: &[SummaryEvent<'_>], grips: &[Grip]) -> Summary {
    summarize_with(
        &ExtractiveSummarizer::default(),
        events,
        grips,
        &no_corpus,
        0,
    )
}

fn coding_session() -> Vec<SummaryEvent<'static>> {
    vec![
        event(
            "e1",
            "user",
            "The login tests started failing after the refresh change. Can you look at src/auth/jwt.ts?",
        ),
        event(
            "e2",
            "tool",
            "FAIL tests/auth.test.ts\n  refresh rejects expired tokens\n    Error: TokenExpiredError: jwt expired",
        ),
        event(
            "e3",
            "assistant",
            "getUserToken compares the JWT expiry in seconds with Date.now() in milliseconds. I converted the expiry to milliseconds in getUserToken.",
        ),
        event(
            "e4",
            "user",
            "Should we also shorten the access token lifetime?",
        ),
        event(
            "e5",
            "assistant",
            "Good point. We decided to set the access token expiry to 15 minutes. Refresh tokens stay valid for 7 days.",
        ),
    ]
}

// Segments: determinism

#[test]
fn same_input_gives_the_same_summary_whatever_the_hash_map_order() {
    let events = coding_session();
    let grips = [
        grip(&events[0], "Can you look at src/auth/jwt.ts?"),
        grip(
            &events[4],
            "We decided to set the access token expiry to 15 minutes.",
        ),
    ];
    let stems = ["jwt", "token", "expiry", "refresh", "getusertoken", "login"];
    let forward: HashMap<String, u32> = stems
        .iter()
        .zip(1..)
        .map(|(stem, df)| ((*stem).to_string(), df))
        .collect();
    let mut backward: HashMap<String, u32> = HashMap::with_capacity(1000);
    for (stem, df) in stems.iter().zip(1..).collect::<Vec<_>>().into_iter().rev() {
        backward.insert((*stem).to_string(), df);
    }
    let forward_frequency = |stem: &str| forward.get(stem).copied().unwrap_or(0);
    let backward_frequency = |stem: &str| backward.get(stem).copied().unwrap_or(0);
    let summarizer = ExtractiveSummarizer::default();
    let first = summarize_with(&summarizer, &events, &grips, &forward_frequency, 10);
    let again = summarize_with(&summarizer, &events, &grips, &forward_frequency, 10);
    let other_map = summarize_with(
        &ExtractiveSummarizer::new(ExtractiveConfig::default()),
        &events,
        &grips,
        &backward_frequency,
        10,
    );
    assert_eq!(first, again);
    assert_eq!(first, other_map);
    assert!(!first.keywords.is_empty());
}

// Segments: keywords

#[test]
fn keywords_prefer_corpus_rare_terms() {
    let events = [
        event("e1", "user", "Move the redis cache next to tantivy."),
        event(
            "e2",
            "assistant",
            "Tantivy and redis both run on the box now.",
        ),
    ];
    let redis_common = |stem: &str| match stem {
        "redis" => 90,
        "tantivy" => 1,
        _ => 10,
    };
    let summary = summarize_with(
        &ExtractiveSummarizer::default(),
        &events,
        &[],
        &redis_common,
        100,
    );
    assert_eq!(summary.keywords[0], "tantivy");
    let position = |keyword: &str| summary.keywords.iter().position(|k| k == keyword);
    assert!(position("redis") > position("tantivy"));
    let tantivy_common = |stem: &str| match stem {
        "redis" => 1,
        "tantivy" => 90,
        _ => 10,
    };
    let summary = summarize_with(
        &ExtractiveSummarizer::default(),
        &events,
        &[],
        &tantivy_common,
        100,
    );
    assert_eq!(summary.keywords[0], "redis");
}

#[test]
fn keywords_are_tf_idf_ranked_surface_forms() {
    let events = [event(
        "e1",
        "user",
        "Tokens, tokens and one token: getUserToken returns tokens on 2026-01-30 via v2 x.",
    )];
    let summary = summarize(&events, &[]);
    // "token" occurs 5 times (with getUserToken's part), written "tokens" most often;
    // ties of one occurrence go by stem text. Numbers and tokens of one or two
    // characters ("x", "v2") are left out.
    assert_eq!(
        summary.keywords,
        [
            "tokens",
            "get",
            "getusertoken",
            "one",
            "returns",
            "user",
            "via"
        ]
    );
}

#[test]
fn surface_form_ties_go_to_the_smallest_token() {
    let events = [event("e1", "user", "token tokens")];
    assert_eq!(summarize(&events, &[]).keywords, ["token"]);
    let events = [event("e1", "user", "tokens tokens token")];
    assert_eq!(summarize(&events, &[]).keywords, ["tokens"]);
}

#[test]
fn keyword_count_follows_the_config() {
    let events = coding_session();
    let config = ExtractiveConfig {
        max_keywords_segment: 3,
        ..ExtractiveConfig::default()
    };
    let summary = summarize_with(
        &ExtractiveSummarizer::new(config),
        &events,
        &[],
        &no_corpus,
        0,
    );
    assert_eq!(summary.keywords.len(), 3);
    let config = ExtractiveConfig {
        max_keywords_segment: 0,
        ..ExtractiveConfig::default()
    };
    let summary = summarize_with(
        &ExtractiveSummarizer::new(config),
        &events,
        &[],
        &no_corpus,
        0,
    );
    assert!(summary.keywords.is_empty());
}

// Segments: bullets

#[test]
fn bullets_cite_grips_in_order_and_merge_near_duplicates() {
    let events = [
        event(
            "e1",
            "assistant",
            "We decided to use Redis for the session cache.",
        ),
        event(
            "e2",
            "user",
            "Agreed, we decided to use Redis for the session cache!",
        ),
        event(
            "e3",
            "assistant",
            "The build fails with a linker error on macOS.",
        ),
    ];
    let grips = [
        grip(&events[0], "We decided to use Redis for the session cache."),
        grip(
            &events[1],
            "Agreed, we decided to use Redis for the session cache!",
        ),
        grip(&events[2], "The build fails with a linker error on macOS."),
    ];
    let summary = summarize(&events, &grips);
    assert_eq!(
        summary.bullets,
        [
            TocBullet {
                text: "We decided to use Redis for the session cache.".to_string(),
                grip_ids: vec![grips[0].grip_id, grips[1].grip_id],
            },
            TocBullet {
                text: "The build fails with a linker error on macOS.".to_string(),
                grip_ids: vec![grips[2].grip_id],
            },
        ]
    );
}

#[test]
fn bullets_collapse_whitespace_and_are_cut_on_a_word_boundary() {
    let long_text = format!("We decided\n\n  to {}", "retry the upload ".repeat(30));
    let events = [event("e1", "user", &long_text)];
    let grips = [grip(&events[0], long_text.trim_end())];
    let summary = summarize(&events, &grips);
    let text = &summary.bullets[0].text;
    assert!(text.starts_with("We decided to retry the upload retry"));
    assert!(text.ends_with("upload…") || text.ends_with("retry…") || text.ends_with("the…"));
    assert!(text.chars().count() <= DEFAULT_MAX_BULLET_CHARS);
    assert_eq!(summary.bullets[0].grip_ids, [grips[0].grip_id]);
}

#[test]
fn without_grips_bullets_are_the_best_sentences_in_order() {
    let events = coding_session();
    let summary = summarize(&events, &[]);
    assert!(!summary.bullets.is_empty());
    assert!(summary.bullets.len() <= MAX_FALLBACK_BULLETS);
    assert!(
        summary
            .bullets
            .iter()
            .all(|bullet| bullet.grip_ids.is_empty())
    );
    let all_text: String = events
        .iter()
        .map(|event| event.text.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(" ");
    let positions: Vec<usize> = summary
        .bullets
        .iter()
        .map(|bullet| all_text.find(&bullet.text).expect("a bullet is a sentence"))
        .collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
}

// Segments: titles

#[test]
fn title_prefers_the_decision_sentence() {
    let summary = summarize(&coding_session(), &[]);
    // The top keywords are "token", which the headline holds, and "expired", which it
    // does not.
    assert_eq!(summary.keywords[..2], ["token", "expired"]);
    assert_eq!(
        summary.title,
        "expired: We decided to set the access token expiry to 15 minutes"
    );
}

#[test]
fn title_prefixes_the_top_keywords_the_headline_lacks() {
    let events = [
        event(
            "e1",
            "user",
            "Tantivy tantivy tantivy segments merge slowly.",
        ),
        event(
            "e2",
            "assistant",
            "We decided to raise the merge budget to 8 threads.",
        ),
    ];
    let summary = summarize(&events, &[]);
    assert_eq!(summary.keywords[..2], ["tantivy", "merge"]);
    assert_eq!(
        summary.title,
        "tantivy: We decided to raise the merge budget to 8 threads"
    );
}

#[test]
fn title_without_outcome_is_the_first_user_request() {
    let events = [
        event(
            "e1",
            "assistant",
            "Hello there, the weather in Lisbon is sunny.",
        ),
        event(
            "e2",
            "user",
            "Please summarize the Kafka consumer lag dashboard.",
        ),
        event("e3", "user", "Can you also check the broker disk usage?"),
    ];
    let summary = summarize(&events, &[]);
    assert!(
        summary
            .title
            .ends_with("Please summarize the Kafka consumer lag dashboard"),
        "{}",
        summary.title
    );
}

#[test]
fn title_is_never_empty() {
    assert_eq!(summarize(&[], &[]).title, FALLBACK_SEGMENT_TITLE);
    assert_eq!(
        summarize(&[event("e1", "user", "?! ... --")], &[]).title,
        FALLBACK_SEGMENT_TITLE
    );
    let only_numbers = summarize(&[event("e1", "tool", "42 17 2026")], &[]);
    assert_eq!(only_numbers.title, "42 17 2026");
    assert!(only_numbers.keywords.is_empty());
    let tiny = ExtractiveSummarizer::new(ExtractiveConfig {
        max_title_chars: 0,
        ..ExtractiveConfig::default()
    });
    let summary = summarize_with(&tiny, &coding_session(), &[], &no_corpus, 0);
    assert_eq!(summary.title, "…");
}

#[test]
fn tool_output_is_a_headline_only_when_nothing_else_is_said() {
    let events = [
        event(
            "e1",
            "tool",
            "Switch to the fallback replica instead of the primary db.",
        ),
        event(
            "e2",
            "assistant",
            "The replica lag stays under two seconds.",
        ),
    ];
    let title = summarize(&events, &[]).title;
    assert!(
        title.ends_with(": The replica lag stays under two seconds"),
        "{title}"
    );
}

// Segments: summaries

#[test]
fn summary_is_chronological_without_title_repeats_and_within_limits() {
    let events = coding_session();
    let summary = summarize(&events, &[]);
    let text = summary.summary.expect("a five-event segment has a summary");
    assert!(text.chars().count() <= DEFAULT_MAX_SUMMARY_CHARS);
    assert!(!text.contains("We decided"), "{text}");
    let config = ExtractiveConfig {
        max_summary_chars: 40,
        max_summary_sentences: 1,
        ..ExtractiveConfig::default()
    };
    let short = summarize_with(
        &ExtractiveSummarizer::new(config),
        &events,
        &[],
        &no_corpus,
        0,
    );
    let short_text = short.summary.expect("still a summary");
    assert!(short_text.chars().count() <= 40);
    assert!(short_text.ends_with('…'));
}

#[test]
fn summary_is_none_for_one_sentence_or_a_repeat_of_the_title() {
    let one = [event("e1", "user", "We decided to use Redis for sessions.")];
    assert_eq!(summarize(&one, &[]).summary, None);
    let repeated = [
        event("e1", "user", "We decided to use Redis for sessions."),
        event("e2", "assistant", "We decided to use Redis for sessions!"),
    ];
    assert_eq!(summarize(&repeated, &[]).summary, None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn limits_hold_for_any_text(
        texts in proptest::collection::vec(
            prop_oneof![
                any::<String>(),
                "[a-zA-Z0-9 .?!/_`:;,'\n-]{0,300}",
                "[a-zé東😀 .?\n]{0,200}",
                Just("We decided to ship it. So it works now? Please check.".to_string()),
            ],
            0..6,
        ),
        roles in proptest::collection::vec(
            prop_oneof![Just("user"), Just("assistant"), Just("tool"), Just("system")],
            6,
        ),
        grip_spans in proptest::collection::vec((0usize..6, 0usize..400, 0usize..120), 0..6),
        max_title_chars in 0usize..120,
        max_bullet_chars in 0usize..220,
        max_summary_chars in 0usize..500,
        max_summary_sentences in 0usize..4,
    ) {
        let event_ids: Vec<String> = (0..texts.len()).map(|index| format!("e{index}")).collect();
        let events: Vec<SummaryEvent<'_>> = texts
            .iter()
            .enumerate()
            .map(|(index, text)| event(&event_ids[index], roles[index], text))
            .collect();
        let grips: Vec<Grip> = grip_spans
            .iter()
            .filter_map(|&(event_index, start, len)| {
                let event = events.get(event_index)?;
                let start = (0..=start.min(event.text.len()))
                    .rev()
                    .find(|&at| event.text.is_char_boundary(at))?;
                let end = (start..=(start + len).min(event.text.len()))
                    .rev()
                    .find(|&at| event.text.is_char_boundary(at))?;
                Some(grip(event, &event.text[start..end]))
            })
            .collect();
        let config = ExtractiveConfig {
            max_title_chars,
            max_bullet_chars,
            max_summary_chars,
            max_summary_sentences,
            ..ExtractiveConfig::default()
        };
        let summarizer = ExtractiveSummarizer::new(config);
        let document_frequency = |stem: &str| (stem.len() % 5) as u32;
        let summary = summarize_with(&summarizer, &events, &grips, &document_frequency, 4);
        prop_assert!(!summary.title.is_empty());
        prop_assert!(summary.title.chars().count() <= max_title_chars.max(1));
        for bullet in &summary.bullets {
            prop_assert!(!bullet.text.is_empty());
            prop_assert!(bullet.text.chars().count() <= max_bullet_chars);
            for grip_id in &bullet.grip_ids {
                prop_assert!(grips.iter().any(|grip| grip.grip_id == *grip_id));
            }
        }
        if let Some(text) = &summary.summary {
            prop_assert!(!text.is_empty());
            prop_assert!(text.chars().count() <= max_summary_chars);
        }
        prop_assert!(summary.keywords.len() <= DEFAULT_MAX_KEYWORDS_SEGMENT);
        let again = summarize_with(&summarizer, &events, &grips, &document_frequency, 4);
        prop_assert_eq!(summary, again);
    }
}

// Signals

#[test]
fn every_decision_and_solution_phrase_has_an_anchor_stem_in_its_sentence() {
    for (phrases, anchors_opt, detector) in [
        (
            DECISION_PHRASES,
            DECISION_ANCHOR_STEMS.as_ref(),
            has_decision as fn(&str) -> bool,
        ),
        (
            SOLUTION_PHRASES,
            SOLUTION_ANCHOR_STEMS.as_ref(),
            has_solution,
        ),
    ] {
        let anchors = anchors_opt.expect("every phrase has a term");
        for phrase in phrases {
            let sentence = format!("Then {phrase} the plan");
            assert!(detector(&lowercase_for_phrases(&sentence)), "{phrase}");
            let terms = query_terms(&sentence);
            assert!(
                anchors.iter().any(|anchor| terms.contains(anchor)),
                "{phrase}: no anchor in {terms:?}"
            );
        }
    }
}

// Parents

fn child(node_id: &str, title: &str, keywords: &[&str], num_events: u64) -> TocNode {
    let node_id: TocNodeId = node_id.parse().expect("valid id");
    TocNode {
        node_id,
        project_id: "default".to_string(),
        level: node_id.level(),
        title: title.to_string(),
        summary: None,
        bullets: Vec::new(),
        keywords: keywords
            .iter()
            .map(|keyword| (*keyword).to_string())
            .collect(),
        start_ms: TS_MS,
        end_ms: TS_MS,
        child_ids: Vec::new(),
        num_events,
        version: 1,
    }
}

fn summarize_parent_with(
    summarizer: &ExtractiveSummarizer,
    node_id: &str,
    children: &[TocNode],
) -> Summary {
    let node_id: TocNodeId = node_id.parse().expect("valid id");
    summarizer
        .summarize_parent(&ParentInput {
            node_id: &node_id,
            project_id: "default",
            children,
        })
        .expect("the extractive summarizer never fails")
}

fn summarize_parent(node_id: &str, children: &[TocNode]) -> Summary {
    summarize_parent_with(&ExtractiveSummarizer::default(), node_id, children)
}

#[test]
fn parent_titles_label_the_period_for_every_level() {
    let keywords = ["jwt", "tantivy", "segmenter", "redis"];
    for (node_id, child_id, expected) in [
        (
            "toc:year:2026",
            "toc:month:2026-01",
            "2026: jwt, tantivy, segmenter",
        ),
        (
            "toc:month:2026-01",
            "toc:week:2026-W05",
            "January 2026: jwt, tantivy, segmenter",
        ),
        (
            "toc:week:2026-W05",
            "toc:day:2026-01-30",
            "Week 5 of 2026 (26 Jan – 1 Feb): jwt, tantivy, segmenter",
        ),
        (
            "toc:week:2026-W01",
            "toc:day:2025-12-30",
            "Week 1 of 2026 (29 Dec 2025 – 4 Jan 2026): jwt, tantivy, segmenter",
        ),
        (
            "toc:week:2026-W53",
            "toc:day:2026-12-30",
            "Week 53 of 2026 (28 Dec 2026 – 3 Jan 2027): jwt, tantivy, segmenter",
        ),
        (
            "toc:day:2026-01-30",
            "toc:day:2026-01-30",
            "Friday 30 January 2026: jwt, tantivy, segmenter",
        ),
    ] {
        let children = [child(child_id, "Some work", &keywords, 10)];
        assert_eq!(summarize_parent(node_id, &children).title, expected);
    }
    assert_eq!(
        summarize_parent("toc:month:2026-02", &[]).title,
        "February 2026"
    );
}

#[test]
fn parent_bullets_keep_the_largest_children_in_order() {
    let children = [
        child("toc:day:2026-01-26", "Monday work", &[], 5),
        child("toc:day:2026-01-27", "Tuesday work", &[], 50),
        child("toc:day:2026-01-28", "Wednesday work", &[], 7),
        child("toc:day:2026-01-29", "Thursday work", &[], 50),
        child("toc:day:2026-01-30", "Friday work", &[], 7),
    ];
    let summarizer = ExtractiveSummarizer::new(ExtractiveConfig {
        max_bullets_parent: 3,
        ..ExtractiveConfig::default()
    });
    let summary = summarize_parent_with(&summarizer, "toc:week:2026-W05", &children);
    let texts: Vec<&str> = summary
        .bullets
        .iter()
        .map(|bullet| bullet.text.as_str())
        .collect();
    // The two 50s, then the earlier of the two 7s, in chronological order.
    assert_eq!(texts, ["Tuesday work", "Wednesday work", "Thursday work"]);
    let all = summarize_parent("toc:week:2026-W05", &children);
    assert_eq!(all.bullets.len(), 5);
}

#[test]
fn parent_bullets_cite_the_grips_of_the_first_two_child_bullets() {
    let grip_id = |offset: usize| GripId::derive("default", TS_MS, "e1", offset);
    let bullet = |offsets: &[usize]| TocBullet {
        text: "x".to_string(),
        grip_ids: offsets.iter().map(|&offset| grip_id(offset)).collect(),
    };
    let mut segment = child("toc:day:2026-01-30", "Fixed the JWT expiry", &["jwt"], 3);
    segment.bullets = vec![bullet(&[1, 2]), bullet(&[2, 3, 4, 5]), bullet(&[6])];
    let summary = summarize_parent("toc:week:2026-W05", &[segment]);
    assert_eq!(
        summary.bullets,
        [TocBullet {
            text: "Fixed the JWT expiry".to_string(),
            grip_ids: vec![grip_id(1), grip_id(2), grip_id(3), grip_id(4)],
        }]
    );
}

#[test]
fn parent_keywords_weigh_child_size_and_rank() {
    let children = [
        child("toc:day:2026-01-26", "a", &["jwt", "redis"], 10),
        child(
            "toc:day:2026-01-27",
            "b",
            &["redis", "tantivy", "Beta", "alpha"],
            10,
        ),
        child("toc:day:2026-01-28", "c", &["huge"], 100_000),
    ];
    let summary = summarize_parent("toc:week:2026-W05", &children);
    // w = 1 + ln 11: redis w/2 + w, jwt w, huge (1 + ln 100001) > 1.5 w,
    // tantivy w/2, beta w/3 and alpha w/4, lowercased.
    assert_eq!(
        summary.keywords,
        ["huge", "redis", "jwt", "tantivy", "beta", "alpha"]
    );
    // Equal weights (redis: two halves) go by text.
    let tied = [
        child("toc:day:2026-01-26", "a", &["zeta", "redis"], 1),
        child("toc:day:2026-01-27", "b", &["alpha", "redis"], 1),
    ];
    assert_eq!(
        summarize_parent("toc:week:2026-W05", &tied).keywords,
        ["alpha", "redis", "zeta"]
    );
}

#[test]
fn parent_keywords_add_up_forms_of_one_stem() {
    let children = [
        child("toc:day:2026-01-26", "a", &["tokens", "redis"], 10),
        child("toc:day:2026-01-27", "b", &["token", "tantivy"], 10),
        child("toc:day:2026-01-28", "c", &["tokens"], 10),
    ];
    let summary = summarize_parent("toc:week:2026-W05", &children);
    // One place for token/tokens, shown in the form that weighs most.
    assert_eq!(summary.keywords, ["tokens", "redis", "tantivy"]);
}

#[test]
fn parent_summary_counts_events_and_names_the_children() {
    let children = [
        child("toc:day:2026-01-29", "a", &["jwt", "redis"], 400),
        child("toc:day:2026-01-30", "b", &["tantivy"], 12),
    ];
    assert_eq!(
        summarize_parent("toc:week:2026-W05", &children)
            .summary
            .as_deref(),
        // tantivy: 1 + ln 13 = 3.56 outweighs redis: (1 + ln 401) / 2 = 3.50.
        Some("412 events in 2 days. Topics: jwt, tantivy, redis.")
    );
    let one = [child("toc:month:2026-01", "a", &[], 1)];
    assert_eq!(
        summarize_parent("toc:year:2026", &one).summary.as_deref(),
        Some("1 event in 1 month.")
    );
    let weeks = [child("toc:week:2026-W05", "a", &[], 3)];
    assert_eq!(
        summarize_parent("toc:month:2026-01", &weeks)
            .summary
            .as_deref(),
        Some("3 events in 1 week.")
    );
    assert_eq!(summarize_parent("toc:day:2026-01-30", &[]).summary, None);
}

// Config and helpers

#[test]
fn config_defaults_and_rejects_unknown_fields() {
    let config: ExtractiveConfig = serde_json::from_str("{}").expect("all fields default");
    assert_eq!(config, ExtractiveConfig::default());
    let config: ExtractiveConfig =
        serde_json::from_str(r#"{"max_title_chars": 60}"#).expect("one field set");
    assert_eq!(config.max_title_chars, 60);
    assert_eq!(config.max_keywords_segment, DEFAULT_MAX_KEYWORDS_SEGMENT);
    assert!(serde_json::from_str::<ExtractiveConfig>(r#"{"max_titel_chars": 60}"#).is_err());
    assert_eq!(ExtractiveSummarizer::default().name(), "extractive");
}

#[test]
fn cut_to_chars_cuts_on_a_word_boundary_with_an_ellipsis() {
    assert_eq!(cut_to_chars("alpha beta gamma", 16), "alpha beta gamma");
    assert_eq!(cut_to_chars("alpha beta gamma", 15), "alpha beta…");
    assert_eq!(cut_to_chars("alpha, beta gamma", 12), "alpha, beta…");
    assert_eq!(cut_to_chars("alpha, beta gamma", 8), "alpha…");
    assert_eq!(cut_to_chars("abcdefgh", 4), "abc…");
    assert_eq!(cut_to_chars("éééé", 3), "éé…");
    assert_eq!(cut_to_chars("abc", 1), "…");
    assert_eq!(cut_to_chars("abc", 0), "");
    assert_eq!(cut_to_chars("", 0), "");
}
