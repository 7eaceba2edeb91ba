//! Unit and property tests of [`crate::search`].

use serde_json::json;

use super::*;
use crate::node::TocBullet;

const TS_MS: u64 = 1_769_767_200_000;
const DAY_MS: u64 = 86_400_000;

fn node(node_id: &str, title: &str) -> TocNode {
    let node_id: TocNodeId = node_id.parse().expect("valid node id");
    TocNode {
        node_id,
        project_id: "default".to_string(),
        level: node_id.level(),
        title: title.to_string(),
        summary: None,
        bullets: Vec::new(),
        keywords: Vec::new(),
        start_ms: TS_MS,
        end_ms: TS_MS,
        child_ids: Vec::new(),
        num_events: 1,
        version: 1,
    }
}

fn day(date: &str, title: &str, start_ms: u64) -> TocNode {
    TocNode {
        start_ms,
        end_ms: start_ms,
        ..node(&format!("toc:day:{date}"), title)
    }
}

fn grip(offset: usize) -> GripId {
    GripId::derive("default", TS_MS, "evt-1", offset)
}

fn bullet(text: &str, grip_ids: Vec<GripId>) -> TocBullet {
    TocBullet {
        text: text.to_string(),
        grip_ids,
    }
}

fn fields_and_texts(matches: &[NodeMatch]) -> Vec<(SearchField, &str)> {
    matches
        .iter()
        .map(|found| (found.field, found.text.as_str()))
        .collect()
}

fn result_ids(page: &SearchChildrenPage) -> Vec<String> {
    page.results
        .iter()
        .map(|result| result.node_id.to_string())
        .collect()
}

// search_node: the plan's tests, translated

#[test]
fn search_node_title_match() {
    let node = node("toc:day:2026-01-30", "JWT Token Debugging Session");
    let matches = search_node(&node, "jwt debugging", &[SearchField::Title]);
    assert_eq!(matches.len(), 1);
    assert_eq!(matches[0].field, SearchField::Title);
    assert_eq!(matches[0].text, "JWT Token Debugging Session");
    assert_eq!(matches[0].score, 1.0);
    assert!(matches[0].grip_ids.is_empty());
}

#[test]
fn search_node_bullet_with_grips() {
    let node = TocNode {
        bullets: vec![bullet("Fixed JWT expiration bug", vec![grip(123)])],
        ..node("toc:day:2026-01-30", "Session")
    };
    let matches = search_node(&node, "jwt bug", &[SearchField::Bullets]);
    assert_eq!(matches.len(), 1);
    assert_eq!(matches[0].grip_ids, vec![grip(123)]);
    assert_eq!(matches[0].score, 1.0);
}

#[test]
fn short_terms_filtered() {
    // The plan drops words under three letters; here "the" is a stopword, so it
    // neither matches nor counts against "jwt".
    let node = node("toc:day:2026-01-30", "The JWT Token");
    let matches = search_node(&node, "the jwt", &[SearchField::Title]);
    assert!(!matches.is_empty());
    assert_eq!(matches[0].score, 1.0);
}

// search_node: whole terms, stemming, identifiers

#[test]
fn jwt_does_not_match_inside_another_word() {
    let node = TocNode {
        bullets: vec![bullet("ajwt and jwtauth cleanup", Vec::new())],
        keywords: vec!["jwtx".to_string()],
        ..node("toc:day:2026-01-30", "jwtx refactor")
    };
    assert!(search_node(&node, "jwt", &[]).is_empty());
    let page = search_children(std::slice::from_ref(&node), "jwt", &[], 10, None);
    assert!(page.results.is_empty());
    assert!(!page.has_more);
}

#[test]
fn tokens_matches_a_bullet_about_token_rotation() {
    let node = TocNode {
        bullets: vec![bullet("Added token rotation", vec![grip(1)])],
        ..node("toc:day:2026-01-30", "Auth work")
    };
    let matches = search_node(&node, "tokens", &[]);
    assert_eq!(
        fields_and_texts(&matches),
        [(SearchField::Bullets, "Added token rotation")]
    );
    assert_eq!(matches[0].score, 1.0);
    assert_eq!(matches[0].grip_ids, vec![grip(1)]);
}

#[test]
fn identifier_query_matches_the_identifier_best() {
    let node = TocNode {
        bullets: vec![
            bullet("get the token of a user", Vec::new()),
            bullet("Renamed `getUserToken()` in auth.rs", vec![grip(7)]),
        ],
        ..node("toc:day:2026-01-30", "Refactoring")
    };
    let matches = search_node(&node, "getUserToken", &[]);
    assert_eq!(
        fields_and_texts(&matches),
        [
            (SearchField::Bullets, "Renamed `getUserToken()` in auth.rs"),
            (SearchField::Bullets, "get the token of a user"),
        ]
    );
    assert_eq!(matches[0].score, 1.0);
    // get, user, token of get, user, token, getusertoken.
    assert_eq!(matches[1].score, 0.75);
}

#[test]
fn keywords_match_on_their_stems_and_score_by_overlap() {
    let node = TocNode {
        keywords: vec![
            "token".to_string(),
            "jwtx".to_string(),
            "Redis Cluster".to_string(),
            "getUserToken".to_string(),
            "the".to_string(),
        ],
        ..node("toc:day:2026-01-30", "Session")
    };
    let matches = search_node(&node, "tokens redis", &[SearchField::Keywords]);
    assert_eq!(
        fields_and_texts(&matches),
        [
            (SearchField::Keywords, "token"),
            (SearchField::Keywords, "Redis Cluster"),
            (SearchField::Keywords, "getUserToken"),
        ]
    );
    // One of two query terms each; the plan would have given every keyword 1.0.
    assert!(matches.iter().all(|found| found.score == 0.5));
    assert!(search_node(&node, "jwt", &[SearchField::Keywords]).is_empty());
    assert!(search_node(&node, "the", &[SearchField::Keywords]).is_empty());
}

#[test]
fn summary_is_searched_when_present() {
    let with_summary = TocNode {
        summary: Some("Moved refresh tokens to Redis".to_string()),
        ..node("toc:day:2026-01-30", "Session")
    };
    let matches = search_node(&with_summary, "redis", &[]);
    assert_eq!(
        fields_and_texts(&matches),
        [(SearchField::Summary, "Moved refresh tokens to Redis")]
    );
    let without_summary = TocNode {
        summary: None,
        ..with_summary
    };
    assert!(search_node(&without_summary, "redis", &[]).is_empty());
}

#[test]
fn matches_sort_by_score_then_field_order() {
    let node = TocNode {
        summary: Some("Rotated the JWT signing keys".to_string()),
        bullets: vec![
            bullet("jwt one", Vec::new()),
            bullet("redis only", Vec::new()),
            bullet("jwt rotation done", Vec::new()),
            bullet("jwt two", Vec::new()),
        ],
        keywords: vec!["jwt".to_string()],
        ..node("toc:day:2026-01-30", "JWT")
    };
    let matches = search_node(&node, "jwt rotation", &[]);
    assert_eq!(
        fields_and_texts(&matches),
        [
            (SearchField::Bullets, "jwt rotation done"),
            (SearchField::Title, "JWT"),
            (SearchField::Summary, "Rotated the JWT signing keys"),
            (SearchField::Bullets, "jwt one"),
            (SearchField::Bullets, "jwt two"),
            (SearchField::Keywords, "jwt"),
        ]
    );
    let scores: Vec<f32> = matches.iter().map(|found| found.score).collect();
    assert_eq!(scores, [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]);
}

#[test]
fn fields_filter_selects_where_to_look() {
    let node = TocNode {
        summary: Some("jwt summary".to_string()),
        bullets: vec![bullet("jwt bullet", vec![grip(1)])],
        keywords: vec!["jwt".to_string()],
        ..node("toc:day:2026-01-30", "jwt title")
    };
    let field_list = |fields: &[SearchField]| -> Vec<SearchField> {
        search_node(&node, "jwt", fields)
            .iter()
            .map(|found| found.field)
            .collect()
    };
    assert_eq!(field_list(&[]), SearchField::ALL);
    assert_eq!(field_list(&SearchField::ALL), SearchField::ALL);
    assert_eq!(
        field_list(&[SearchField::Keywords]),
        [SearchField::Keywords]
    );
    assert_eq!(
        field_list(&[
            SearchField::Keywords,
            SearchField::Title,
            SearchField::Keywords
        ]),
        [SearchField::Title, SearchField::Keywords]
    );
    let page = search_children(
        std::slice::from_ref(&node),
        "jwt",
        &[SearchField::Summary],
        10,
        None,
    );
    assert_eq!(
        fields_and_texts(&page.results[0].matches),
        [(SearchField::Summary, "jwt summary")]
    );
}

#[test]
fn empty_query_matches_nothing() {
    let node = TocNode {
        summary: Some("what did we do about it".to_string()),
        ..node("toc:day:2026-01-30", "The and of")
    };
    for query in ["", "   ", "?!", "what did we do about it, and why?"] {
        assert!(search_node(&node, query, &[]).is_empty(), "{query:?}");
        let page = search_children(std::slice::from_ref(&node), query, &[], 10, Some(100));
        assert_eq!(page, SearchChildrenPage::default(), "{query:?}");
    }
}

#[test]
fn node_match_token_estimate_counts_grip_ids() {
    assert_eq!(grip(1).to_string().len(), 45);
    let found = NodeMatch {
        field: SearchField::Bullets,
        text: "jwt bug".to_string(),
        grip_ids: vec![grip(1)],
        score: 1.0,
    };
    // 7 + 45 characters.
    assert_eq!(found.token_estimate(), 13);
    let keyword = NodeMatch {
        field: SearchField::Keywords,
        text: "jwt".to_string(),
        grip_ids: Vec::new(),
        score: 1.0,
    };
    assert_eq!(keyword.token_estimate(), 1);
}

// search_children: the plan's integration tests, on in-memory nodes

fn months_with_weeks() -> (Vec<TocNode>, Vec<TocNode>) {
    let january = TocNode {
        summary: Some("Authentication rework: JWT expiry, refresh tokens".to_string()),
        child_ids: vec![
            "toc:week:2026-W04".parse().expect("valid id"),
            "toc:week:2026-W05".parse().expect("valid id"),
        ],
        ..node("toc:month:2026-01", "Auth and search")
    };
    let february = TocNode {
        summary: Some("Vector index and benchmarks".to_string()),
        ..node("toc:month:2026-02", "Search quality")
    };
    let week_4 = TocNode {
        bullets: vec![bullet("Debugged JWT expiry", Vec::new())],
        ..node("toc:week:2026-W04", "JWT debugging")
    };
    let week_5 = node("toc:week:2026-W05", "BM25 tuning");
    (vec![january, february], vec![week_4, week_5])
}

#[test]
fn search_children_finds_matching_months() {
    let (months, _) = months_with_weeks();
    let page = search_children(&months, "authentication", &[], 5, None);
    assert_eq!(result_ids(&page), ["toc:month:2026-01"]);
    assert!(page.results[0].relevance_score > 0.0);
    assert_eq!(page.results[0].level, TocLevel::Month);
    assert!(!page.has_more);
}

#[test]
fn search_drill_down() {
    let (months, weeks) = months_with_weeks();
    let month_page = search_children(&months, "jwt", &[], DEFAULT_SEARCH_LIMIT, None);
    let best_month = &month_page.results[0];
    assert_eq!(best_month.node_id.to_string(), "toc:month:2026-01");
    let month = months
        .iter()
        .find(|month| month.node_id == best_month.node_id)
        .expect("the result is one of the children");
    let month_weeks: Vec<TocNode> = weeks
        .into_iter()
        .filter(|week| month.child_ids.contains(&week.node_id))
        .collect();
    let week_page = search_children(&month_weeks, "jwt", &[], DEFAULT_SEARCH_LIMIT, None);
    assert_eq!(result_ids(&week_page), ["toc:week:2026-W04"]);
    assert_eq!(week_page.results[0].matches.len(), 2);
}

// search_children: ranking

#[test]
fn relevance_is_the_mean_match_score() {
    let focused = node("toc:day:2026-01-29", "JWT and Redis");
    let scattered = TocNode {
        bullets: vec![
            bullet("jwt", Vec::new()),
            bullet("redis", Vec::new()),
            bullet("jwt again", Vec::new()),
        ],
        ..day("2026-01-30", "Session", TS_MS + DAY_MS)
    };
    let unrelated = day("2026-01-31", "Vector index", TS_MS + 2 * DAY_MS);
    let children = [scattered, focused, unrelated];
    let page = search_children(&children, "jwt redis", &[], 10, None);
    assert_eq!(
        result_ids(&page),
        ["toc:day:2026-01-29", "toc:day:2026-01-30"]
    );
    assert_eq!(page.results[0].relevance_score, 1.0);
    assert_eq!(page.results[1].relevance_score, 0.5);
    assert_eq!(page.results[1].matches.len(), 3);
    assert!(!page.has_more);
}

#[test]
fn ties_go_to_the_most_recent_then_the_larger_id() {
    let segment_day = chrono::NaiveDate::from_ymd_opt(2026, 1, 30).expect("valid date");
    let segment = |event_id: &str| {
        let node_id = TocNodeId::segment_for("default", segment_day, TS_MS, event_id);
        TocNode {
            node_id,
            level: TocLevel::Segment,
            ..node("toc:day:2026-01-30", "JWT")
        }
    };
    let older = day("2026-01-28", "JWT", TS_MS - DAY_MS);
    let newer = day("2026-01-29", "JWT", TS_MS + DAY_MS);
    let (first_segment, second_segment) = (segment("evt-a"), segment("evt-b"));
    let (larger_segment_id, smaller_segment_id) = if first_segment.node_id > second_segment.node_id
    {
        (first_segment.node_id, second_segment.node_id)
    } else {
        (second_segment.node_id, first_segment.node_id)
    };
    let children = [older, first_segment, newer, second_segment];
    let page = search_children(&children, "jwt", &[], 10, None);
    assert_eq!(
        result_ids(&page),
        [
            "toc:day:2026-01-29".to_string(),
            larger_segment_id.to_string(),
            smaller_segment_id.to_string(),
            "toc:day:2026-01-28".to_string(),
        ]
    );
}

#[test]
fn ordering_does_not_depend_on_input_order() {
    let mut children: Vec<TocNode> = (0..8_u64)
        .map(|index| {
            let title = if index % 3 == 0 {
                "JWT expiry"
            } else {
                "JWT notes"
            };
            TocNode {
                bullets: vec![bullet("refresh tokens expire", vec![grip(index as usize)])],
                ..day(
                    &format!("2026-01-{:02}", 10 + index),
                    title,
                    TS_MS + (index % 4) * DAY_MS,
                )
            }
        })
        .collect();
    let expected = search_children(&children, "jwt expiry", &[], 10, None);
    assert_eq!(expected.results.len(), 8);
    for pair in expected.results.windows(2) {
        assert!(pair[0].relevance_score >= pair[1].relevance_score);
    }
    for _ in 0..children.len() {
        children.rotate_left(3);
        assert_eq!(
            search_children(&children, "jwt expiry", &[], 10, None),
            expected
        );
        children.reverse();
        assert_eq!(
            search_children(&children, "jwt expiry", &[], 10, None),
            expected
        );
    }
}

#[test]
fn child_matches_are_the_search_node_matches() {
    let (months, _) = months_with_weeks();
    let page = search_children(&months, "jwt tokens", &[], 10, None);
    for result in &page.results {
        let child = months
            .iter()
            .find(|month| month.node_id == result.node_id)
            .expect("the result is one of the children");
        assert_eq!(result.matches, search_node(child, "jwt tokens", &[]));
        assert_eq!(result.title, child.title);
    }
}

// search_children: limit, token budget, has_more

/// Three children that each match "jwt" once, in their title, newest first:
/// 18 id chars + title twice (in the result and as its match).
fn three_titles() -> Vec<TocNode> {
    vec![
        day("2026-01-28", "JWT", TS_MS), // 18 + 3 + 3 = 24 → 6 tokens
        day("2026-01-30", "JWT rotation", TS_MS + 2 * DAY_MS), // 18 + 12 + 12 = 42 → 11
        day("2026-01-29", "JWT expiry", TS_MS + DAY_MS), // 18 + 10 + 10 = 38 → 10
    ]
}

#[test]
fn limit_cuts_and_sets_has_more() {
    let children = three_titles();
    let page = search_children(&children, "jwt", &[], 2, None);
    assert_eq!(
        result_ids(&page),
        ["toc:day:2026-01-30", "toc:day:2026-01-29"]
    );
    assert!(page.has_more);
    let page = search_children(&children, "jwt", &[], 3, None);
    assert_eq!(page.results.len(), 3);
    assert!(!page.has_more);
    let page = search_children(&children, "jwt", &[], 0, None);
    assert!(page.results.is_empty());
    assert!(page.has_more);
    assert_eq!(page.token_estimate, 0);
    let page = search_children(&children, "redis", &[], 0, None);
    assert!(!page.has_more);
}

#[test]
fn token_budget_keeps_the_sum_within_the_budget() {
    let children = three_titles();
    let unbudgeted = search_children(&children, "jwt", &[], 10, None);
    let estimates: Vec<usize> = unbudgeted
        .results
        .iter()
        .map(|result| result.token_estimate)
        .collect();
    assert_eq!(estimates, [11, 10, 6]);
    assert_eq!(unbudgeted.token_estimate, 27);
    assert!(!unbudgeted.has_more);

    let exact = search_children(&children, "jwt", &[], 10, Some(27));
    assert_eq!(exact, unbudgeted);

    let one_short = search_children(&children, "jwt", &[], 10, Some(26));
    assert_eq!(
        result_ids(&one_short),
        ["toc:day:2026-01-30", "toc:day:2026-01-29"]
    );
    assert_eq!(one_short.token_estimate, 21);
    assert!(one_short.has_more);

    // The second result does not fit; the smaller third is not promoted past it.
    let prefix_only = search_children(&children, "jwt", &[], 10, Some(17));
    assert_eq!(result_ids(&prefix_only), ["toc:day:2026-01-30"]);
    assert_eq!(prefix_only.token_estimate, 11);
    assert!(prefix_only.has_more);

    // Not even the top result fits: nothing, but the caller learns there is more.
    let too_small = search_children(&children, "jwt", &[], 10, Some(10));
    assert!(too_small.results.is_empty());
    assert_eq!(too_small.token_estimate, 0);
    assert!(too_small.has_more);
    let zero = search_children(&children, "jwt", &[], 10, Some(0));
    assert!(zero.results.is_empty());
    assert!(zero.has_more);

    // The limit applies before the budget.
    let limited = search_children(&children, "jwt", &[], 1, Some(1_000));
    assert_eq!(limited.token_estimate, 11);
    assert!(limited.has_more);
}

#[test]
fn token_budget_trims_the_last_result_to_its_best_matches() {
    let node = TocNode {
        bullets: vec![
            bullet("jwt one", vec![grip(1)]),
            bullet("jwt two", vec![grip(2)]),
            bullet("jwt three", vec![grip(3)]),
        ],
        ..day("2026-01-30", "JWT notes", TS_MS)
    };
    let children = [node];
    // 18 id + 9 title; matches: title 9, bullets 7 + 45, 7 + 45, 9 + 45.
    let whole = search_children(&children, "jwt", &[], 10, None);
    assert_eq!(whole.results[0].matches.len(), 4);
    assert_eq!(whole.token_estimate, 49); // 194 characters
    assert!(!whole.has_more);

    let trimmed = search_children(&children, "jwt", &[], 10, Some(30));
    let result = &trimmed.results[0];
    assert_eq!(
        fields_and_texts(&result.matches),
        [
            (SearchField::Title, "JWT notes"),
            (SearchField::Bullets, "jwt one")
        ]
    );
    assert_eq!(result.token_estimate, 22); // 18 + 9 + 9 + 52 = 88 characters
    assert_eq!(trimmed.token_estimate, 22);
    assert_eq!(result.relevance_score, 1.0);
    assert!(trimmed.has_more);

    let best_match_only = search_children(&children, "jwt", &[], 10, Some(9));
    assert_eq!(best_match_only.results[0].matches.len(), 1);
    assert_eq!(best_match_only.token_estimate, 9); // 36 characters
    assert!(best_match_only.has_more);

    let nothing_fits = search_children(&children, "jwt", &[], 10, Some(8));
    assert!(nothing_fits.results.is_empty());
    assert!(nothing_fits.has_more);
}

#[test]
fn budgeted_pages_are_prefixes_of_the_unbudgeted_ranking() {
    let children: Vec<TocNode> = (0..6_u64)
        .map(|index| TocNode {
            bullets: (0..index as usize)
                .map(|bullet_index| bullet("jwt detail", vec![grip(bullet_index)]))
                .collect(),
            ..day(
                &format!("2026-01-{:02}", 10 + index),
                "JWT",
                TS_MS + index * DAY_MS,
            )
        })
        .collect();
    let unbudgeted = search_children(&children, "jwt", &[], 10, None);
    for budget in 0..=unbudgeted.token_estimate + 1 {
        let page = search_children(&children, "jwt", &[], 10, Some(budget));
        assert!(page.token_estimate <= budget, "budget {budget}");
        let page_total: usize = page
            .results
            .iter()
            .map(|result| result.token_estimate)
            .sum();
        assert_eq!(page.token_estimate, page_total);
        assert_eq!(page.has_more, page != unbudgeted, "budget {budget}");
        for (returned, full) in page.results.iter().zip(&unbudgeted.results) {
            assert_eq!(returned.node_id, full.node_id);
            assert!(full.matches.starts_with(&returned.matches));
        }
    }
}

// wire format

#[test]
fn search_field_uses_snake_case_names() {
    let json = serde_json::to_string(&SearchField::ALL).expect("serializes");
    assert_eq!(json, r#"["title","summary","bullets","keywords"]"#);
    let field: SearchField = serde_json::from_str("\"bullets\"").expect("deserializes");
    assert_eq!(field, SearchField::Bullets);
    assert!(serde_json::from_str::<SearchField>("\"Bullets\"").is_err());
}

#[test]
fn search_children_page_json_has_stable_field_names_and_round_trips() {
    let node = TocNode {
        bullets: vec![bullet("Fixed JWT bug", vec![grip(1)])],
        ..day("2026-01-30", "Session", TS_MS)
    };
    let page = search_children(&[node], "jwt", &[], 10, None);
    let value = serde_json::to_value(&page).expect("serializes");
    let expected = json!({
        "results": [{
            "node_id": "toc:day:2026-01-30",
            "level": "day",
            "title": "Session",
            "matches": [{
                "field": "bullets",
                "text": "Fixed JWT bug",
                "grip_ids": [grip(1).to_string()],
                "score": 1.0,
            }],
            "relevance_score": 1.0,
            "token_estimate": 21,
        }],
        "has_more": false,
        "token_estimate": 21,
    });
    assert_eq!(value, expected);
    assert_eq!(
        serde_json::from_value::<SearchChildrenPage>(value).expect("deserializes"),
        page
    );
}
