//! Unit and property tests of the grip rules: [`crate::grips`], [`crate::sentences`] and [`crate::signals`].

use super::*;
use crate::signals::is_identifier_word;
use proptest::prelude::*;

fn event<'a>(event_id: &'a str, role: &'a str, text: &'a str) -> GripSourceEvent<'a> {
    GripSourceEvent {
        event_id,
        timestamp_ms: 1_769_767_200_000,
        role,
        kind: "message",
        text,
    }
}

fn no_corpus(_: &str) -> u32 {
    0
}

fn extract(events: &[GripSourceEvent<'_>]) -> Vec<GripCandidate> {
    extract_grips(events, &no_corpus, 0, &GripConfig::default())
}

fn excerpts(grips: &[GripCandidate]) -> Vec<&str> {
    grips.iter().map(|grip| grip.excerpt.as_str()).collect()
}

fn assert_verbatim(events: &[GripSourceEvent<'_>], grips: &[GripCandidate]) {
    for grip in grips {
        let source = events
            .iter()
            .find(|event| event.event_id == grip.event_id_start)
            .expect("grip names an input event");
        assert_eq!(grip.event_id_start, grip.event_id_end);
        assert_eq!(grip.timestamp_ms, source.timestamp_ms);
        assert!(source.text.is_char_boundary(grip.excerpt_start));
        assert_eq!(
            source
                .text
                .get(grip.excerpt_start..grip.excerpt_start + grip.excerpt.len()),
            Some(grip.excerpt.as_str())
        );
    }
}

fn coding_session() -> Vec<GripSourceEvent<'static>> {
    vec![
        event(
            "e1",
            "user",
            "The login tests started failing after the refresh change. Can you look at src/auth/jwt.ts?",
        ),
        event(
            "e2",
            "tool",
            "FAIL tests/auth.test.ts\n  refresh rejects expired tokens\n    Error: TokenExpiredError: jwt expired at 2026-01-30T10:00:00Z\n      at getUserToken (src/auth/jwt.ts:42:13)",
        ),
        event(
            "e3",
            "assistant",
            "The root cause is that getUserToken reads the expiry in seconds but compares it with Date.now() in milliseconds. I fixed it in src/auth/jwt.ts by converting exp to milliseconds. The tests pass now.",
        ),
        event(
            "e4",
            "user",
            "Should we also shorten the access token lifetime?",
        ),
        event(
            "e5",
            "assistant",
            "Good point. We decided to set the JWT access token expiry to 15 minutes and keep refresh tokens for 7 days. Ok.",
        ),
    ]
}

#[test]
fn coding_session_yields_decision_error_fix_and_question() {
    let events = coding_session();
    let grips = extract(&events);
    assert_verbatim(&events, &grips);
    let texts = excerpts(&grips);
    for expected in [
        "We decided to set the JWT access token expiry to 15 minutes and keep refresh tokens for 7 days.",
        "Error: TokenExpiredError: jwt expired at 2026-01-30T10:00:00Z",
        "I fixed it in src/auth/jwt.ts by converting exp to milliseconds.",
        "Should we also shorten the access token lifetime?",
    ] {
        assert!(texts.contains(&expected), "{expected:?} not in {texts:#?}");
    }
    let decision = grips
        .iter()
        .find(|grip| grip.excerpt.starts_with("We decided"))
        .expect("decision grip");
    assert_eq!(decision.event_id_start, "e5");
    assert!(decision.signals.contains(&Salience::Decision));
    assert!(decision.signals.contains(&Salience::Number));
    let fix = grips
        .iter()
        .find(|grip| grip.excerpt.starts_with("I fixed"))
        .expect("fix grip");
    assert!(fix.signals.contains(&Salience::Solution));
    assert!(fix.signals.contains(&Salience::FilePath));
    let root_cause = grips
        .iter()
        .find(|grip| grip.excerpt.starts_with("The root cause"))
        .expect("root cause grip");
    assert!(root_cause.signals.contains(&Salience::Identifier));
    // Short filler is never a grip.
    assert!(!texts.contains(&"Ok."));
    assert!(!texts.contains(&"Good point."));
    // Event order, then offset.
    let positions: Vec<(usize, usize)> = grips
        .iter()
        .map(|grip| {
            let event_index = events
                .iter()
                .position(|event| event.event_id == grip.event_id_start)
                .expect("known event");
            (event_index, grip.excerpt_start)
        })
        .collect();
    let mut sorted_positions = positions.clone();
    sorted_positions.sort_unstable();
    assert_eq!(positions, sorted_positions);
}

#[test]
fn user_question_is_kept_even_when_short() {
    let events = [
        event("e1", "user", "Why Redis?"),
        event("e2", "assistant", "It keeps the session cache in memory."),
    ];
    let grips = extract(&events);
    assert_eq!(excerpts(&grips)[0], "Why Redis?");
    assert!(grips[0].signals.contains(&Salience::Question));
    // The same question from the assistant scores lower.
    let assistant_question = [event("e1", "assistant", "Why Redis?")];
    let assistant_grips = extract(&assistant_question);
    assert!(assistant_grips[0].salience < grips[0].salience);
}

#[test]
fn duplicates_collapse_to_the_first() {
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
    let grips = extract(&events);
    let texts = excerpts(&grips);
    assert_eq!(
        texts,
        [
            "We decided to use Redis for the session cache.",
            "The build fails with a linker error on macOS."
        ]
    );
}

#[test]
fn max_grips_is_respected_and_spread_across_events() {
    let many_decisions: String = (0..20)
        .map(|index| format!("We decided to use backend{index} for shard {index}x. "))
        .collect();
    let events = [
        event("e1", "assistant", &many_decisions),
        event("e2", "user", "The deploy fails with a timeout error."),
    ];
    for max_grips in [0, 1, 3, 5] {
        let config = GripConfig {
            max_grips,
            ..GripConfig::default()
        };
        let grips = extract_grips(&events, &no_corpus, 0, &config);
        assert!(grips.len() <= max_grips);
        assert_verbatim(&events, &grips);
    }
    let config = GripConfig {
        max_grips: 4,
        ..GripConfig::default()
    };
    let grips = extract_grips(&events, &no_corpus, 0, &config);
    // Three from the long event, then the other event, although every decision
    // outscores the problem.
    assert_eq!(grips.len(), 4);
    assert_eq!(
        grips
            .iter()
            .filter(|grip| grip.event_id_start == "e1")
            .count(),
        3
    );
    assert_eq!(grips[3].event_id_start, "e2");
    // With room to spare, the long event fills up past three.
    let grips = extract_grips(&events, &no_corpus, 0, &GripConfig::default());
    assert_eq!(grips.len(), 8);
}

#[test]
fn empty_input_yields_nothing() {
    assert!(extract(&[]).is_empty());
    assert!(extract(&[event("e1", "user", "")]).is_empty());
    assert!(extract(&[event("e1", "user", " \n\n  ")]).is_empty());
}

#[test]
fn sentences_do_not_split_inside_paths_versions_or_decimals() {
    let text = "Upgrade to tokio 1.2.3 in crates/toc/Cargo.toml. The ratio is 0.5 now! Use Date.now() e.g. here.\nnext line";
    let sentences: Vec<&str> = sentence_ranges(text)
        .into_iter()
        .map(|(start, end)| &text[start..end])
        .collect();
    assert_eq!(
        sentences,
        [
            "Upgrade to tokio 1.2.3 in crates/toc/Cargo.toml.",
            "The ratio is 0.5 now!",
            "Use Date.now() e.g. here.",
            "next line"
        ]
    );
}

#[test]
fn code_lines_and_list_markers() {
    let text = "```rust\nlet x = a. b; let y = 2. z;\n```\n- First point. Second point.\n    indented. code here";
    let sentences: Vec<&str> = sentence_ranges(text)
        .into_iter()
        .map(|(start, end)| &text[start..end])
        .collect();
    assert_eq!(
        sentences,
        [
            "let x = a. b; let y = 2. z;",
            "First point.",
            "Second point.",
            "indented. code here"
        ]
    );
}

#[test]
fn long_excerpts_are_cut_on_a_word_boundary() {
    assert_eq!(trim_to_max_chars("alpha beta gamma", 8), "alpha");
    assert_eq!(trim_to_max_chars("alpha beta gamma", 10), "alpha beta");
    assert_eq!(trim_to_max_chars("alpha beta gamma", 11), "alpha beta");
    assert_eq!(trim_to_max_chars("alpha beta", 50), "alpha beta");
    assert_eq!(trim_to_max_chars("ééééé", 3), "ééé");
    assert_eq!(trim_to_max_chars("abc", 0), "");
    let long = format!("We decided to {}", "retry ".repeat(100));
    let grips = extract(&[event("e1", "user", &long)]);
    assert!(grips[0].excerpt.chars().count() <= 280);
    assert!(grips[0].excerpt.ends_with("retry"));
}

#[test]
fn signal_detectors() {
    assert!(is_identifier_word("getUserToken"));
    assert!(is_identifier_word("snake_case_name"));
    assert!(is_identifier_word("Foo::bar"));
    assert!(!is_identifier_word("Hello"));
    assert!(!is_identifier_word("__"));
    assert!(has_identifier("call `x + 1` here"));
    assert!(has_identifier("then run refresh() again"));
    assert!(!has_identifier("a plain (parenthetical) sentence"));
    for path in [
        "src/auth/jwt.ts",
        "./x",
        "*.rs",
        "Cargo.toml",
        "(src/a.rs:42:13)",
    ] {
        assert!(has_file_path(path), "{path}");
    }
    for not_path in [
        "and/or",
        "https://example.com/a.html",
        "e.g.",
        "1/2/3",
        "done.",
    ] {
        assert!(!has_file_path(not_path), "{not_path}");
    }
    for number in ["15 minutes", "30%", "2.5s", "512 mb", "tokio 1.2.3"] {
        assert!(has_number_with_unit(number), "{number}");
    }
    for not_number in ["sha256 hash", "v2 api", "line 42", "0.5"] {
        assert!(!has_number_with_unit(not_number), "{not_number}");
    }
    for date in [
        "on 2026-01-30",
        "last week",
        "since monday",
        "may 4",
        "in january",
    ] {
        assert!(has_date(date), "{date}");
    }
    assert!(!has_date("it may work"));
    assert!(has_problem("tests are failing"));
    assert!(has_problem("at foo (src/a.js:1:2)"));
    assert!(!has_problem("we debugged it"));
    assert!(has_conclusion("so the cache was stale"));
    assert!(!has_conclusion("it is also fine"));
    assert!(has_decision("let's go with postgres"));
    assert!(has_decision(
        "let\u{2019}s go with postgres"
            .replace('\u{2019}', "'")
            .as_str()
    ));
    assert!(!has_decision("we disagreed"));
}

#[test]
fn corpus_rarity_marks_rare_terms() {
    let events = [event(
        "e1",
        "assistant",
        "The kubernetes ingress controller handles the traffic for everyone.",
    )];
    let common_everywhere = |_: &str| 100;
    let grips = extract_grips(&events, &common_everywhere, 100, &GripConfig::default());
    assert!(grips.is_empty());
    let rare = |stem: &str| {
        if stem == "kubernet" || stem == "ingress" {
            1
        } else {
            100
        }
    };
    let grips = extract_grips(&events, &rare, 100, &GripConfig::default());
    assert_eq!(grips.len(), 1);
    assert_eq!(grips[0].signals, [Salience::RareTerm]);
}

#[test]
fn salience_serializes_snake_case() {
    let json =
        serde_json::to_string(&[Salience::RareTerm, Salience::FilePath]).expect("serializes");
    assert_eq!(json, r#"["rare_term","file_path"]"#);
}

fn arbitrary_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9 .?!/_`:;{}()*'\"\n\t#>-]{0,300}",
        "[a-zé東😀 .?\n]{0,200}",
        "[a-z ]{0,2000}",
        "[a-zA-Z]{500,1500}",
        Just(String::new()),
        Just("We decided. Why? é.\n\n```\n".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn excerpts_are_verbatim_and_extraction_is_deterministic(
        texts in proptest::collection::vec(arbitrary_text(), 0..6),
        roles in proptest::collection::vec(
            prop_oneof![Just("user"), Just("assistant"), Just("tool"), Just("system")],
            6,
        ),
        max_grips in 0usize..10,
        max_excerpt_chars in 0usize..300,
        min_excerpt_chars in 0usize..40,
        num_corpus_documents in 0u32..10,
    ) {
        let event_ids: Vec<String> = (0..texts.len()).map(|index| format!("e{index}")).collect();
        let events: Vec<GripSourceEvent<'_>> = texts
            .iter()
            .enumerate()
            .map(|(index, text)| GripSourceEvent {
                event_id: &event_ids[index],
                timestamp_ms: index as u64,
                role: roles[index],
                kind: "message",
                text,
            })
            .collect();
        let config = GripConfig { max_grips, max_excerpt_chars, min_excerpt_chars };
        let document_frequency = |stem: &str| (stem.len() % 7) as u32;
        let grips = extract_grips(&events, &document_frequency, num_corpus_documents, &config);
        prop_assert!(grips.len() <= max_grips);
        let mut previous_position: Option<(usize, usize)> = None;
        for grip in &grips {
            let event_index = event_ids
                .iter()
                .position(|event_id| *event_id == grip.event_id_start);
            prop_assert!(event_index.is_some());
            let event_index = event_index.unwrap_or(0);
            let text = &texts[event_index];
            prop_assert_eq!(&grip.event_id_start, &grip.event_id_end);
            prop_assert!(!grip.excerpt.is_empty());
            prop_assert!(grip.excerpt.chars().count() <= max_excerpt_chars);
            prop_assert!(text.is_char_boundary(grip.excerpt_start));
            prop_assert_eq!(
                text.get(grip.excerpt_start..grip.excerpt_start + grip.excerpt.len()),
                Some(grip.excerpt.as_str())
            );
            prop_assert!(grip.salience.is_finite() && grip.salience > 0.0);
            let position = (event_index, grip.excerpt_start);
            prop_assert!(previous_position.is_none_or(|previous| previous < position));
            previous_position = Some(position);
        }
        let again = extract_grips(&events, &document_frequency, num_corpus_documents, &config);
        prop_assert_eq!(grips, again);
    }
}
