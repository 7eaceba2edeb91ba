//! Tests of [`Bm25Index`] against real indexes, in RAM and on disk.

use super::*;
use crate::query::{NASTY_QUERIES, NASTY_TERMLESS_QUERIES};

const BUDGET: usize = 20_000_000;

fn doc(
    doc_type: DocType,
    doc_id: &str,
    project_id: &str,
    text: &str,
    timestamp_ms: u64,
) -> SearchDoc {
    SearchDoc {
        doc_type,
        doc_id: doc_id.to_owned(),
        project_id: project_id.to_owned(),
        session_id: Some("s1".to_owned()),
        level: None,
        text: text.to_owned(),
        keywords: Vec::new(),
        timestamp_ms,
    }
}

fn corpus() -> Vec<SearchDoc> {
    let mut node = doc(
        DocType::TocNode,
        "toc:segment:2026-01-30:01",
        "alpha",
        "Session about authentication refactoring",
        3_000,
    );
    node.level = Some("segment".to_owned());
    node.session_id = None;
    node.keywords = vec!["jwt".to_owned(), "auth".to_owned()];
    vec![
        doc(
            DocType::Event,
            "evt-code",
            "alpha",
            "fn refresh() { let t = getUserToken(); }",
            1_000,
        ),
        doc(
            DocType::Grip,
            "grip:2:a",
            "alpha",
            "We store the refresh tokens in Redis",
            2_000,
        ),
        node,
        doc(
            DocType::Event,
            "evt-other-tenant",
            "beta",
            "beta also talks about tokens and getUserToken",
            4_000,
        ),
        doc(
            DocType::Event,
            "evt-plan",
            "alpha",
            "Caroline's plan: adopt a dog next spring",
            5_000,
        ),
    ]
}

fn index_with(docs: &[SearchDoc]) -> Result<Bm25Index> {
    let index = Bm25Index::create_in_ram(BUDGET)?;
    let mut writer = index.writer()?;
    for doc in docs {
        writer.upsert(doc)?;
    }
    writer.commit_with_payload("1")?;
    Ok(index)
}

fn ids(index: &Bm25Index, query: &Bm25Query) -> Result<Vec<String>> {
    Ok(index
        .search(query, 10)?
        .hits
        .into_iter()
        .map(|hit| hit.doc_id)
        .collect())
}

fn query(text: &str, project_id: &str) -> Result<Bm25Query> {
    Bm25Query::new(text, project_id)
}

#[test]
fn finds_identifier_parts_and_stems() -> Result<()> {
    let index = index_with(&corpus())?;
    // "token" is a part of getUserToken and the stem of "tokens".
    let found = ids(&index, &query("token", "alpha")?)?;
    assert!(found.contains(&"evt-code".to_owned()), "{found:?}");
    assert!(found.contains(&"grip:2:a".to_owned()), "{found:?}");
    // The exact identifier ranks its document first.
    let found = ids(&index, &query("getUserToken", "alpha")?)?;
    assert_eq!(found.first().map(String::as_str), Some("evt-code"));
    // snake_case and plural in the query.
    let found = ids(&index, &query("user_tokens", "alpha")?)?;
    assert_eq!(found.first().map(String::as_str), Some("evt-code"));
    // Stemming both ways: "stored" finds "store".
    assert_eq!(ids(&index, &query("stored", "alpha")?)?, ["grip:2:a"]);
    // The apostrophe question finds the plan.
    assert_eq!(
        ids(&index, &query("What's Caroline's plan?", "alpha")?)?,
        ["evt-plan"]
    );
    Ok(())
}

#[test]
fn keywords_are_searched_and_boosted() -> Result<()> {
    let index = index_with(&corpus())?;
    let results = index.search(&query("jwt", "alpha")?, 10)?;
    assert_eq!(results.total_hits, 1);
    let hit = &results.hits[0];
    assert_eq!(hit.doc_id, "toc:segment:2026-01-30:01");
    assert_eq!(hit.doc_type, DocType::TocNode);
    assert_eq!(hit.level.as_deref(), Some("segment"));
    assert_eq!(hit.session_id, None);
    assert_eq!(hit.project_id, "alpha");
    assert_eq!(hit.timestamp_ms, 3_000);
    assert!(hit.score > 0.0);
    Ok(())
}

#[test]
fn project_filter_isolates_tenants() -> Result<()> {
    let index = index_with(&corpus())?;
    let alpha = ids(&index, &query("tokens getUserToken", "alpha")?)?;
    assert!(!alpha.contains(&"evt-other-tenant".to_owned()));
    assert_eq!(
        ids(&index, &query("beta tokens", "beta")?)?,
        ["evt-other-tenant"]
    );
    assert!(ids(&index, &query("tokens", "gamma")?)?.is_empty());
    Ok(())
}

#[test]
fn filters_by_type_level_session_and_time() -> Result<()> {
    let index = index_with(&corpus())?;
    let tokens = query("tokens authentication", "alpha")?;
    assert_eq!(
        ids(&index, &tokens.clone().doc_type(DocType::Grip))?,
        ["grip:2:a"]
    );
    assert_eq!(
        ids(&index, &tokens.clone().level("segment"))?,
        ["toc:segment:2026-01-30:01"]
    );
    assert!(ids(&index, &tokens.clone().level("day"))?.is_empty());
    let in_session = ids(&index, &tokens.clone().session_id("s1"))?;
    assert_eq!(in_session.len(), 2, "{in_session:?}");
    assert_eq!(
        ids(&index, &tokens.clone().time_range(Some(1_500), Some(3_000)))?,
        ["grip:2:a"]
    );
    let from = ids(&index, &tokens.clone().time_range(Some(2_500), None))?;
    assert_eq!(from, ["toc:segment:2026-01-30:01"]);
    let until = ids(&index, &tokens.time_range(None, Some(2_000)))?;
    assert_eq!(until, ["evt-code"]);
    Ok(())
}

#[test]
fn filters_do_not_change_scores() -> Result<()> {
    let index = index_with(&corpus())?;
    let plain = index.search(&query("tokens", "alpha")?, 10)?;
    let filtered = index.search(&query("tokens", "alpha")?.doc_type(DocType::Grip), 10)?;
    let plain_grip = plain.hits.iter().find(|hit| hit.doc_id == "grip:2:a");
    assert_eq!(
        plain_grip.map(|hit| hit.score),
        Some(filtered.hits[0].score)
    );
    Ok(())
}

#[test]
fn upsert_replaces_and_delete_removes() -> Result<()> {
    let index = index_with(&corpus())?;
    let mut writer = index.writer()?;
    let mut replaced = doc(
        DocType::Grip,
        "grip:2:a",
        "alpha",
        "We store the refresh tokens in Postgres now",
        2_000,
    );
    writer.upsert(&replaced)?;
    writer.upsert(&replaced)?;
    writer.commit_with_payload("2")?;
    assert_eq!(ids(&index, &query("postgres", "alpha")?)?, ["grip:2:a"]);
    assert!(ids(&index, &query("redis", "alpha")?)?.is_empty());
    let found = ids(&index, &query("refresh tokens", "alpha")?)?;
    assert_eq!(found.iter().filter(|id| *id == "grip:2:a").count(), 1);
    assert_eq!(index.num_docs(), 5);

    replaced.text = "changed again".to_owned();
    writer.upsert(&replaced)?;
    writer.delete("alpha", DocType::Event, "evt-plan");
    writer.commit_with_payload("3")?;
    assert!(ids(&index, &query("Caroline", "alpha")?)?.is_empty());
    assert_eq!(index.num_docs(), 4);
    // Every live document as stored: the replaced one once, with its latest text, and
    // the deleted one gone.
    let documents = index.documents()?;
    assert_eq!(documents.len(), 4);
    let grips: Vec<&Hit> = documents
        .iter()
        .filter(|hit| hit.doc_id == "grip:2:a")
        .collect();
    assert_eq!(grips.len(), 1);
    assert_eq!(grips[0].text, "changed again");
    assert!(documents.iter().all(|hit| hit.doc_id != "evt-plan"));
    Ok(())
}

#[test]
fn doc_counts_by_type() -> Result<()> {
    let index = index_with(&corpus())?;
    let counts = index.doc_counts()?;
    assert_eq!(
        counts,
        DocCounts {
            num_toc_nodes: 1,
            num_grips: 1,
            num_events: 3,
            num_ideas: 0
        }
    );
    assert_eq!(counts.total(), 5);
    assert_eq!(counts.get(DocType::Event), 3);
    Ok(())
}

#[test]
fn limit_and_total_hits() -> Result<()> {
    let index = index_with(&corpus())?;
    let tokens = query("tokens getUserToken", "alpha")?;
    let results = index.search(&tokens, 1)?;
    assert_eq!(results.hits.len(), 1);
    assert_eq!(results.total_hits, 2);
    let counted = index.search(&tokens, 0)?;
    assert!(counted.hits.is_empty());
    assert_eq!(counted.total_hits, 2);
    Ok(())
}

#[test]
fn snippets_highlight_terms() -> Result<()> {
    let long_text = format!(
        "{} the Redis decision was made here {}",
        "filler ".repeat(60),
        "more ".repeat(60)
    );
    let index = index_with(&[doc(DocType::Event, "e", "p", &long_text, 1)])?;
    let results = index.search(&query("redis", "p")?.snippets(60), 1)?;
    let text = &results.hits[0].text;
    assert!(text.len() <= 60 && text.contains("Redis"), "{text:?}");
    let full = index.search(&query("redis", "p")?, 1)?;
    assert_eq!(full.hits[0].text, long_text);
    Ok(())
}

#[test]
fn nasty_queries_run_against_a_real_index() -> Result<()> {
    let index = index_with(&corpus())?;
    for text in NASTY_QUERIES {
        match Bm25Query::new(text, "alpha") {
            Ok(query) => {
                index.search(&query.clone().snippets(100), 10)?;
                index.search(
                    &query
                        .doc_type(DocType::Event)
                        .time_range(Some(0), Some(u64::MAX)),
                    10,
                )?;
            }
            Err(SearchError::EmptyQuery) => {
                assert!(NASTY_TERMLESS_QUERIES.contains(text), "{text:?}")
            }
            Err(other) => return Err(other),
        }
    }
    let found = ids(
        &index,
        &query("fn main() { println!(\"x\"); } getUserToken()", "alpha")?,
    )?;
    assert_eq!(found.first().map(String::as_str), Some("evt-code"));
    Ok(())
}

#[test]
fn payload_and_docs_survive_reopen() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|error| SearchError::OpenDirectory {
        path: "tempdir".into(),
        message: error.to_string(),
    })?;
    let path = dir.path().join("bm25");
    {
        let index = Bm25Index::open_or_create(&path, BUDGET)?;
        assert_eq!(index.last_payload()?, None);
        assert_eq!(index.num_docs(), 0);
        let mut writer = index.writer()?;
        assert!(index.writer().is_err(), "one writer at a time");
        for doc in corpus() {
            writer.upsert(&doc)?;
        }
        writer.commit_with_payload("{\"outbox_seq\":41}")?;
        writer.upsert(&doc(
            DocType::Event,
            "uncommitted",
            "alpha",
            "lost on crash",
            9,
        ))?;
        // dropped without commit: a crash before commit
    }
    for round in 0..3_u64 {
        let index = Bm25Index::open_or_create(&path, BUDGET)?;
        let expected = if round == 0 {
            "{\"outbox_seq\":41}".to_owned()
        } else {
            format!("seq {}", round - 1)
        };
        assert_eq!(index.last_payload()?.as_deref(), Some(expected.as_str()));
        assert_eq!(index.num_docs(), 5);
        assert!(ids(&index, &query("crash", "alpha")?)?.is_empty());
        let found = ids(&index, &query("getUserToken", "alpha")?)?;
        assert_eq!(found.first().map(String::as_str), Some("evt-code"));
        let mut writer = index.writer()?;
        writer.upsert(&corpus()[0])?;
        writer.commit_with_payload(&format!("seq {round}"))?;
        writer.wait_merging_threads()?;
    }
    Ok(())
}

#[test]
fn same_id_in_two_projects_or_types_are_two_documents() -> Result<()> {
    let mut alpha_day = doc(
        DocType::TocNode,
        "toc:day:2026-01-30",
        "alpha",
        "jwt rotation",
        1,
    );
    alpha_day.level = Some("day".to_owned());
    let mut beta_day = alpha_day.clone();
    beta_day.project_id = "beta".to_owned();
    beta_day.text = "jwt in beta".to_owned();
    let event_with_node_id = doc(
        DocType::Event,
        "toc:day:2026-01-30",
        "alpha",
        "jwt event",
        2,
    );
    let index = index_with(&[alpha_day.clone(), beta_day, event_with_node_id])?;
    assert_eq!(index.num_docs(), 3);
    let mut writer = index.writer()?;
    alpha_day.text = "jwt rotation, revised".to_owned();
    writer.upsert(&alpha_day)?;
    writer.commit_with_payload("2")?;
    assert_eq!(index.num_docs(), 3);
    assert_eq!(ids(&index, &query("jwt", "beta")?)?, ["toc:day:2026-01-30"]);
    writer.delete("beta", DocType::TocNode, "toc:day:2026-01-30");
    writer.commit_with_payload("3")?;
    assert!(ids(&index, &query("jwt", "beta")?)?.is_empty());
    assert_eq!(ids(&index, &query("jwt", "alpha")?)?.len(), 2);
    Ok(())
}

/// The tantivy reading of a selector selects what [`DocSelector::selects`] does (the
/// vector index's reading), condition by condition.
#[test]
fn selectors_count_what_they_select() -> Result<()> {
    let docs = corpus();
    let index = index_with(&docs)?;
    let selectors = [
        DocSelector::all(),
        DocSelector::in_project("alpha"),
        DocSelector::all().doc_types([DocType::Grip, DocType::TocNode]),
        DocSelector::in_project("alpha").doc_types([]),
        DocSelector::all().level("segment"),
        DocSelector::all().session_id("s1"),
        DocSelector::in_project("alpha").time_range(Some(2_000), Some(5_000)),
        DocSelector::new(DocType::Event).time_range(Some(4_000), None),
        DocSelector::new(DocType::Event).before_ms(4_000),
    ];
    for selector in selectors {
        let expected = docs
            .iter()
            .filter(|doc| {
                selector.selects(&memory_types::DocFields {
                    doc_type: doc.doc_type,
                    level: doc.level.as_deref(),
                    project_id: &doc.project_id,
                    session_id: doc.session_id.as_deref(),
                    timestamp_ms: doc.timestamp_ms,
                })
            })
            .count() as u64;
        assert_eq!(index.count_matching(&selector)?, expected, "{selector:?}");
    }
    Ok(())
}

/// A document added since the last commit goes with `delete_matching` too, also when the
/// committed index holds none it matches (a TOC reset right after the index's first
/// TOC documents, before any commit).
#[test]
fn delete_matching_removes_documents_added_since_the_last_commit() -> Result<()> {
    let index = index_with(&corpus())?;
    let toc_nodes = DocSelector::new(DocType::TocNode).level("month");
    assert_eq!(index.count_matching(&toc_nodes)?, 0);
    let mut writer = index.writer()?;
    let mut month = doc(
        DocType::TocNode,
        "toc:month:2026-01",
        "alpha",
        "month jwt",
        10,
    );
    month.level = Some("month".to_owned());
    writer.upsert(&month)?;
    assert_eq!(writer.delete_matching(&toc_nodes)?, 0, "none committed");
    writer.commit_with_payload("cleared")?;
    assert_eq!(index.count_matching(&toc_nodes)?, 0);
    Ok(())
}

#[test]
fn delete_matching_removes_by_type_level_and_age() -> Result<()> {
    let mut docs = corpus();
    let mut old_day = doc(
        DocType::TocNode,
        "toc:day:2020-01-01",
        "alpha",
        "old day jwt",
        500,
    );
    old_day.level = Some("day".to_owned());
    docs.push(old_day);
    let index = index_with(&docs)?;
    let old_segments = DocSelector::new(DocType::TocNode)
        .level("segment")
        .before_ms(3_001);
    assert_eq!(index.count_matching(&old_segments)?, 1);
    assert_eq!(
        index.count_matching(&DocSelector::new(DocType::Event).before_ms(1_001))?,
        1
    );
    assert_eq!(
        index.count_matching(&DocSelector::new(DocType::Event).project_id("beta"))?,
        1
    );
    let mut writer = index.writer()?;
    assert_eq!(writer.delete_matching(&old_segments)?, 1);
    assert_eq!(
        writer.delete_matching(&DocSelector::new(DocType::Event).before_ms(1_001))?,
        1
    );
    writer.commit_with_payload("pruned")?;
    writer.compact()?;
    assert_eq!(index.searcher().segment_readers().len(), 1);
    assert_eq!(
        index
            .searcher()
            .segment_readers()
            .iter()
            .map(|segment| segment.num_deleted_docs())
            .sum::<u32>(),
        0,
        "compaction drops deleted documents"
    );
    assert_eq!(index.last_payload()?.as_deref(), Some("pruned"));
    let counts = index.doc_counts()?;
    assert_eq!((counts.num_toc_nodes, counts.num_events), (1, 2));
    assert_eq!(
        ids(&index, &query("old day", "alpha")?)?,
        ["toc:day:2020-01-01"]
    );
    Ok(())
}

#[test]
fn add_does_not_replace() -> Result<()> {
    let index = Bm25Index::create_in_ram(BUDGET)?;
    let mut writer = index.writer()?;
    let doc = doc(DocType::Event, "e1", "alpha", "bulk loaded", 1);
    writer.add(&doc)?;
    writer.commit_with_payload("1")?;
    assert_eq!(index.num_docs(), 1);
    // An upsert after a bulk load still replaces.
    writer.upsert(&doc)?;
    writer.commit_with_payload("2")?;
    assert_eq!(index.num_docs(), 1);
    Ok(())
}

#[test]
fn a_tie_at_the_cut_is_settled_by_time_and_id_not_by_index_order() -> Result<()> {
    // Twelve documents with the same text score the same; a limit of 5 cuts through
    // them. Two indexes holding them in opposite orders, one in many segments, agree
    // on which five and in which order: the newest, then by id.
    let docs: Vec<SearchDoc> = (0..12_u64)
        .map(|n| {
            doc(
                DocType::Event,
                &format!("evt-{n:02}"),
                "alpha",
                "we decided the jwt expiry",
                1_000 + (n % 4) * 10,
            )
        })
        .collect();
    let forward = index_with(&docs)?;
    let backward = Bm25Index::create_in_ram(BUDGET)?;
    let mut writer = backward.writer()?;
    for (n, doc) in docs.iter().rev().enumerate() {
        writer.upsert(doc)?;
        writer.commit_with_payload(&n.to_string())?;
    }
    let jwt = query("jwt expiry", "alpha")?;
    let settled = |index: &Bm25Index| -> Result<Vec<String>> {
        Ok(index
            .search(&jwt, 5)?
            .hits
            .into_iter()
            .map(|hit| hit.doc_id)
            .collect())
    };
    // Timestamps 1030 (n = 3, 7, 11), then 1020 (n = 2, 6, 10): ids ascending within.
    let expected = ["evt-03", "evt-07", "evt-11", "evt-02", "evt-06"];
    assert_eq!(settled(&forward)?, expected);
    assert_eq!(settled(&backward)?, expected);
    Ok(())
}

/// The situation `Bm25Writer::spend_commit_opstamp` explains: a reopened writer's first
/// operation upserts a document of a segment the last commit deleted from, and the merge
/// its first flush starts would bring the old version back beside the new one.
#[test]
fn an_upsert_right_after_reopening_survives_a_merge_started_by_its_own_flush() -> Result<()> {
    fn event(id: &str, text: &str) -> SearchDoc {
        doc(DocType::Event, id, "alpha", text, 1)
    }
    fn copies(index: &Bm25Index, id: &str) -> Result<Vec<String>> {
        index.reload()?;
        Ok(index
            .documents()?
            .into_iter()
            .filter(|hit| hit.doc_id == id)
            .map(|hit| hit.text)
            .collect())
    }
    let index = Bm25Index::create_in_ram(BUDGET)?;
    {
        // Ten committed segments of one merge level, none merged yet: the first holds
        // the document upserted later, the second is the largest (the merge's first).
        let mut writer = index.writer()?;
        writer
            .writer
            .set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        writer.upsert(&event("x", "old words"))?;
        writer.upsert(&event("y", "first"))?;
        writer.upsert(&event("z", "filler"))?;
        writer.commit_with_payload("1")?;
        for number in 0..6 {
            writer.upsert(&event(&format!("big-{number}"), "filler"))?;
        }
        writer.commit_with_payload("2")?;
        for segment in 3..10 {
            writer.upsert(&event(&format!("a-{segment}"), "filler"))?;
            writer.upsert(&event(&format!("b-{segment}"), "filler"))?;
            writer.commit_with_payload(&segment.to_string())?;
        }
        // The last commit deletes from the first segment (its delete opstamp is now the
        // commit's).
        writer.upsert(&event("y", "second"))?;
        writer.commit_with_payload("10")?;
        writer.wait_merging_threads()?;
    }
    assert_eq!(index.searcher().segment_readers().len(), 10);
    let mut writer = index.writer()?;
    writer.upsert(&event("x", "new words"))?;
    writer.commit_with_payload("11")?;
    writer.wait_merging_threads()?;
    index.reload()?;
    assert!(
        index.searcher().segment_readers().len() < 10,
        "the first flush started a merge"
    );
    assert_eq!(copies(&index, "x")?, ["new words"]);
    assert_eq!(copies(&index, "y")?, ["second"]);
    Ok(())
}
