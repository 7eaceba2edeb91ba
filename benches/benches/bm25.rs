//! BM25 "teleport" search in process: our tantivy index (`memory-search`) against SQLite
//! FTS5 (what the TypeScript seed used), over the same documents and the same questions.
//!
//! 1. Corpus: [`memory_benches::year`]'s default year (~100 000 events, four projects),
//!    generated once; a size of N takes its first N events that the indexer indexes (all
//!    but the session start and end markers) as [`DocType::Event`] documents, grown when
//!    the year is too small.
//! 2. Questions: 200 natural-language questions made deterministically from the words of
//!    the first 10 000 documents (2–4 content words of one document in a question
//!    template, some with apostrophes, colons, parentheses or a code identifier or path
//!    of that document), each asked in its document's project. The same list for every
//!    size and engine.
//! 3. Build: both engines index the N documents into a fresh on-disk index in a tempdir,
//!    final commit included: tantivy through `Bm25Writer::upsert` and
//!    `commit_with_payload` with the daemon's 50 MiB budget; FTS5 as one table filled in
//!    one transaction (WAL). Median of a few builds, in docs/s. Then the index settles
//!    (tantivy: merges finish; SQLite: the WAL is checkpointed), untimed, and its size on
//!    disk is measured.
//! 4. Latency percentiles: every question, top 10 in its project, ids and stored text
//!    returned, timed one by one over a few rounds after one warm-up round; p50/p99
//!    printed. Criterion reports means, not percentiles. An extra FTS5 row runs the same
//!    questions without stopwords, to show what the stopwords cost it (not the anchor).
//! 5. Criterion: one question per iteration, round-robin over the list, per engine and
//!    size.
//!
//! `cargo bench -p memory-benches --bench bm25`. `BM25_BENCH_SIZES=10000` (comma-separated)
//! chooses the sizes (default `10000,100000`), `BM25_BENCH_ROUNDS` the rounds of the
//! percentile pass (default 5), `BM25_BENCH_BUILDS` the builds per engine and size
//! (default 3). Under `cargo test` (no `--bench`) it runs 2 000 documents, 20 questions,
//! one round and one build, so the test suite stays fast.

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use memory_benches::questions::{QUESTION_SEED, question_from};
use memory_benches::year::{Rng, YearEvent, YearSpec, generate};
use memory_benches::{disk_size, percentile};
use memory_search::analyzer::analyze;
use memory_search::{Bm25Index, Bm25Query, DocType, SearchDoc};
use memory_text::is_stopword;
use rusqlite::{Connection, params};

/// The indexer's memory budget, the daemon's default (`[teleport.bm25] memory_budget_mb = 50`).
const MEMORY_BUDGET_BYTES: usize = 50 << 20;
/// Hits per question.
const LIMIT: usize = 10;
/// Questions made from the first this many documents, so every size holds their sources.
const QUESTION_SOURCE_DOCS: usize = 10_000;

/// The FTS5 table of the TypeScript seed.
const FTS5_SCHEMA: &str = "CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, \
     project_id UNINDEXED, text, tokenize='porter unicode61')";
const FTS5_INSERT: &str = "INSERT INTO docs(doc_id, project_id, text) VALUES (?1, ?2, ?3)";
const FTS5_SEARCH: &str = "SELECT doc_id, text FROM docs WHERE docs MATCH ?1 AND project_id = ?2 \
     ORDER BY bm25(docs) LIMIT 10";

/// Whether criterion will measure (`cargo bench`), not just smoke-test (`cargo test`).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok()
}

fn sizes(full: bool) -> Vec<usize> {
    match std::env::var("BM25_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|size| size.trim().replace('_', ""))
            .filter(|size| !size.is_empty())
            .map(|size| {
                size.parse()
                    .expect("BM25_BENCH_SIZES: numbers separated by commas")
            })
            .collect(),
        Err(_) if full => vec![10_000, 100_000],
        Err(_) => vec![2_000],
    }
}

fn to_doc(event: YearEvent) -> SearchDoc {
    SearchDoc {
        doc_type: DocType::Event,
        doc_id: format!("{}-s{}-t{}", event.project, event.session, event.turn),
        project_id: event.project.to_owned(),
        session_id: Some(format!("{}-session-{:05}", event.project, event.session)),
        level: None,
        text: event.text,
        keywords: Vec::new(),
        timestamp_ms: event.timestamp_ms,
    }
}

/// The first `num_docs` events of the default year (grown when it is too small) that the
/// indexer indexes (`memory_search::documents::event_doc`: text, and not a session start
/// or end marker), as documents.
fn corpus(num_docs: usize) -> Vec<SearchDoc> {
    let mut spec = YearSpec::default();
    spec.events = spec.events.max(num_docs);
    loop {
        let docs: Vec<SearchDoc> = generate(&spec)
            .into_iter()
            .filter(|event| {
                !event.text.trim().is_empty()
                    && !matches!(event.kind, "session_start" | "session_end")
            })
            .take(num_docs)
            .map(to_doc)
            .collect();
        if docs.len() >= num_docs {
            return docs;
        }
        spec.events += num_docs - docs.len() + 1_000;
    }
}

/// One question, asked in one project.
struct Question {
    project_id: String,
    text: String,
}

/// `num` questions from the words of random documents of `docs`, deterministic.
fn questions(docs: &[SearchDoc], num: usize) -> Vec<Question> {
    let mut rng = Rng::new(QUESTION_SEED);
    let mut out = Vec::with_capacity(num);
    while out.len() < num {
        let doc = rng.pick(docs);
        let Some(text) = question_from(&mut rng, &doc.text, out.len()) else {
            continue;
        };
        if Bm25Query::new(&text, doc.project_id.as_str()).is_err() || fts5_match(&text).is_empty() {
            continue;
        }
        out.push(Question {
            project_id: doc.project_id.clone(),
            text,
        });
    }
    out
}

/// The FTS5 query of the TypeScript seed: every alphanumeric run of the question,
/// lowercased, double-quoted, joined with `OR`.
fn fts5_match(question: &str) -> String {
    fts5_match_of(question, |_| true)
}

/// The same without stopwords (the terms our analyzer would search, unstemmed).
fn fts5_match_without_stopwords(question: &str) -> String {
    fts5_match_of(question, |word| !is_stopword(word))
}

fn fts5_match_of(question: &str, keep: impl Fn(&str) -> bool) -> String {
    question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| keep(word))
        .map(|word| format!("\"{word}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Hits as both engines return them: ids and stored text, best first.
type Hits = Vec<(String, String)>;

struct Tantivy {
    index: Bm25Index,
    dir: tempfile::TempDir,
}

impl Tantivy {
    /// A fresh on-disk index holding `docs`, and the time to the end of its commit.
    fn build(docs: &[SearchDoc]) -> (Self, Duration) {
        let dir = tempfile::tempdir().expect("tempdir");
        let started = Instant::now();
        let index = Bm25Index::open_or_create(&dir.path().join("bm25"), MEMORY_BUDGET_BYTES)
            .expect("open tantivy index");
        let mut writer = index.writer().expect("writer");
        for doc in docs {
            writer.upsert(doc).expect("upsert");
        }
        writer.commit_with_payload("bench").expect("commit");
        let elapsed = started.elapsed();
        writer.wait_merging_threads().expect("merges");
        index.reload().expect("reload");
        assert_eq!(index.num_docs(), docs.len() as u64);
        (Self { index, dir }, elapsed)
    }

    fn search(&self, question: &Question) -> Hits {
        self.search_with_total(question).0
    }

    /// The hits and how many documents of the project match.
    fn search_with_total(&self, question: &Question) -> (Hits, u64) {
        let query = Bm25Query::new(&question.text, question.project_id.as_str()).expect("query");
        let results = self.index.search(&query, LIMIT).expect("search");
        let hits = results
            .hits
            .into_iter()
            .map(|hit| (hit.doc_id, hit.text))
            .collect();
        (hits, results.total_hits)
    }

    fn size(&self) -> u64 {
        disk_size(self.dir.path())
    }
}

struct Fts5 {
    connection: Connection,
    dir: tempfile::TempDir,
}

impl Fts5 {
    fn path(dir: &Path) -> PathBuf {
        dir.join("fts5.sqlite")
    }

    /// A fresh on-disk table holding `docs`, and the time to the end of its commit.
    fn build(docs: &[SearchDoc]) -> (Self, Duration) {
        let dir = tempfile::tempdir().expect("tempdir");
        let started = Instant::now();
        let mut connection = Connection::open(Self::path(dir.path())).expect("open sqlite");
        let mode: String = connection
            .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
            .expect("journal mode");
        assert_eq!(mode, "wal");
        connection.execute_batch(FTS5_SCHEMA).expect("create table");
        let transaction = connection.transaction().expect("begin");
        {
            let mut insert = transaction.prepare(FTS5_INSERT).expect("prepare insert");
            for doc in docs {
                insert
                    .execute(params![doc.doc_id, doc.project_id, doc.text])
                    .expect("insert");
            }
        }
        transaction.commit().expect("commit");
        let elapsed = started.elapsed();
        connection
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoint");
        let count: i64 = connection
            .query_row("SELECT count(*) FROM docs", [], |row| row.get(0))
            .expect("count");
        assert_eq!(count as usize, docs.len());
        (Self { connection, dir }, elapsed)
    }

    fn search_match(&self, match_expression: &str, project_id: &str) -> Hits {
        let mut statement = self
            .connection
            .prepare_cached(FTS5_SEARCH)
            .expect("prepare search");
        statement
            .query_map(params![match_expression, project_id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .expect("search")
            .collect::<rusqlite::Result<Hits>>()
            .expect("rows")
    }

    fn search(&self, question: &Question) -> Hits {
        self.search_match(&fts5_match(&question.text), &question.project_id)
    }

    /// How many rows match the question: in its project, and in all projects (FTS5 finds
    /// and scores these before the `project_id` filter, an unindexed column, drops some).
    fn matches(&self, question: &Question) -> (u64, u64) {
        let count = |sql: &str, project_opt: Option<&str>| -> u64 {
            let match_expression = fts5_match(&question.text);
            let count: i64 = match project_opt {
                Some(project_id) => {
                    self.connection
                        .query_row(sql, params![match_expression, project_id], |row| row.get(0))
                }
                None => self
                    .connection
                    .query_row(sql, params![match_expression], |row| row.get(0)),
            }
            .expect("count");
            count as u64
        };
        (
            count(
                "SELECT count(*) FROM docs WHERE docs MATCH ?1 AND project_id = ?2",
                Some(&question.project_id),
            ),
            count("SELECT count(*) FROM docs WHERE docs MATCH ?1", None),
        )
    }

    fn search_without_stopwords(&self, question: &Question) -> Hits {
        self.search_match(
            &fts5_match_without_stopwords(&question.text),
            &question.project_id,
        )
    }

    fn size(&self) -> u64 {
        disk_size(self.dir.path())
    }
}

/// `runs` builds; the median time and the last index. Prints every build's time.
fn median_build<T>(engine: &str, runs: usize, build: impl Fn() -> (T, Duration)) -> (T, Duration) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        drop(last.take()); // free the previous index before the next build
        let (built, elapsed) = build();
        times.push(elapsed);
        last = Some(built);
    }
    let each: Vec<String> = times
        .iter()
        .map(|time| format!("{:.3}", time.as_secs_f64()))
        .collect();
    println!("bm25:   builds {engine:<8} {} s", each.join(", "));
    times.sort_unstable();
    (last.expect("one build"), times[times.len() / 2])
}

/// Per-question latencies over `rounds` rounds after a warm-up round: (p50, p99) in ms.
fn latencies(
    questions: &[Question],
    rounds: usize,
    mut search: impl FnMut(&Question) -> Hits,
) -> (f64, f64) {
    for question in questions {
        std::hint::black_box(search(question));
    }
    let mut nanos = Vec::with_capacity(questions.len() * rounds);
    for _ in 0..rounds {
        for question in questions {
            let started = Instant::now();
            std::hint::black_box(search(question));
            nanos.push(started.elapsed().as_nanos() as u64);
        }
    }
    nanos.sort_unstable();
    let ms = |ns: u64| ns as f64 / 1e6;
    (ms(percentile(&nanos, 50.0)), ms(percentile(&nanos, 99.0)))
}

/// One line of the summary table.
struct Row {
    engine: &'static str,
    size: usize,
    p50_ms: f64,
    p99_ms: f64,
    build_docs_per_s: Option<f64>,
    size_bytes: Option<u64>,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Builds both engines on `docs`, prints and returns their rows, then runs criterion.
fn bench_size(
    c: &mut Criterion,
    docs: &[SearchDoc],
    questions: &[Question],
    rounds: usize,
    builds: usize,
) -> Vec<Row> {
    let size = docs.len();
    let text_bytes: usize = docs.iter().map(|doc| doc.text.len()).sum();
    println!(
        "bm25: {size} documents, {:.1} MiB of text; {builds} build(s) per engine",
        mib(text_bytes as u64)
    );
    // A share of tantivy's build: the analyzer's work, one thread, no index.
    let analyzed = Instant::now();
    let num_terms: usize = docs.iter().map(|doc| analyze(&doc.text).len()).sum();
    println!(
        "bm25:   memory_en analysis alone: {:.3} s on one thread, {num_terms} terms",
        analyzed.elapsed().as_secs_f64()
    );
    let (tantivy, tantivy_build) = median_build("tantivy", builds, || Tantivy::build(docs));
    let (fts5, fts5_build) = median_build("fts5", builds, || Fts5::build(docs));
    let per_second = |elapsed: Duration| size as f64 / elapsed.as_secs_f64();
    for (engine, elapsed, bytes) in [
        ("tantivy", tantivy_build, tantivy.size()),
        ("fts5", fts5_build, fts5.size()),
    ] {
        println!(
            "bm25:   build {engine:<8} {:>7.3} s = {:>8.0} docs/s; on disk {:.1} MiB",
            elapsed.as_secs_f64(),
            per_second(elapsed),
            mib(bytes)
        );
    }

    // What both return, as a check that they answer the same questions.
    let (mut tantivy_hits, mut fts5_hits, mut shared_hits) = (0usize, 0usize, 0usize);
    let (mut tantivy_empty, mut fts5_empty) = (0usize, 0usize);
    let (mut tantivy_matches, mut fts5_matches, mut fts5_all_matches) = (0u64, 0u64, 0u64);
    for question in questions {
        let (ours, total) = tantivy.search_with_total(question);
        let theirs = fts5.search(question);
        let (in_project, in_all) = fts5.matches(question);
        tantivy_matches += total;
        fts5_matches += in_project;
        fts5_all_matches += in_all;
        let our_ids: HashSet<&String> = ours.iter().map(|(id, _)| id).collect();
        shared_hits += theirs.iter().filter(|(id, _)| our_ids.contains(id)).count();
        tantivy_hits += ours.len();
        fts5_hits += theirs.len();
        tantivy_empty += usize::from(ours.is_empty());
        fts5_empty += usize::from(theirs.is_empty());
    }
    let per_question = |n: usize| n as f64 / questions.len() as f64;
    println!(
        "bm25:   hits per question: tantivy {:.1} ({tantivy_empty} empty), fts5 {:.1} \
         ({fts5_empty} empty); {:.1} of the top {LIMIT} shared",
        per_question(tantivy_hits),
        per_question(fts5_hits),
        per_question(shared_hits)
    );
    println!(
        "bm25:   matching documents per question: tantivy {:.0} in the project (stopwords \
         dropped); fts5 {:.0} in the project, {:.0} in all projects",
        per_question(tantivy_matches as usize),
        per_question(fts5_matches as usize),
        per_question(fts5_all_matches as usize)
    );

    let (tantivy_p50, tantivy_p99) = latencies(questions, rounds, |q| tantivy.search(q));
    let (fts5_p50, fts5_p99) = latencies(questions, rounds, |q| fts5.search(q));
    let (bare_p50, bare_p99) = latencies(questions, rounds, |q| fts5.search_without_stopwords(q));
    println!(
        "bm25:   latency over {} questions x {rounds} rounds, top {LIMIT}, one at a time:",
        questions.len()
    );
    for (engine, p50, p99) in [
        ("tantivy", tantivy_p50, tantivy_p99),
        ("fts5", fts5_p50, fts5_p99),
        ("fts5 (no stopwords)", bare_p50, bare_p99),
    ] {
        println!("bm25:     {engine:<20} p50 {p50:>8.3} ms  p99 {p99:>8.3} ms");
    }

    let mut group = c.benchmark_group(format!("bm25_search/{size}"));
    group
        .sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut next = 0usize;
    group.bench_function("tantivy", |b| {
        b.iter(|| {
            next += 1;
            tantivy.search(&questions[next % questions.len()])
        });
    });
    let mut next = 0usize;
    group.bench_function("fts5", |b| {
        b.iter(|| {
            next += 1;
            fts5.search(&questions[next % questions.len()])
        });
    });
    group.finish();

    vec![
        Row {
            engine: "tantivy (memory-search)",
            size,
            p50_ms: tantivy_p50,
            p99_ms: tantivy_p99,
            build_docs_per_s: Some(per_second(tantivy_build)),
            size_bytes: Some(tantivy.size()),
        },
        Row {
            engine: "SQLite FTS5",
            size,
            p50_ms: fts5_p50,
            p99_ms: fts5_p99,
            build_docs_per_s: Some(per_second(fts5_build)),
            size_bytes: Some(fts5.size()),
        },
        Row {
            engine: "SQLite FTS5, stopwords dropped",
            size,
            p50_ms: bare_p50,
            p99_ms: bare_p99,
            build_docs_per_s: None,
            size_bytes: None,
        },
    ]
}

fn bm25(c: &mut Criterion) {
    let full = measuring();
    let sizes = sizes(full);
    let rounds = env_usize("BM25_BENCH_ROUNDS").unwrap_or(if full { 5 } else { 1 });
    let builds = env_usize("BM25_BENCH_BUILDS").unwrap_or(if full { 3 } else { 1 });
    let num_questions = if full { 200 } else { 20 };
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let smallest = sizes.iter().copied().min().unwrap_or(0);

    let generated = Instant::now();
    let docs = corpus(largest);
    let questions = questions(
        &docs[..QUESTION_SOURCE_DOCS.min(smallest).min(docs.len())],
        num_questions,
    );
    println!(
        "bm25: generated {} documents and {} questions in {:.2} s; e.g. {:?}, {:?}, {:?}",
        docs.len(),
        questions.len(),
        generated.elapsed().as_secs_f64(),
        questions[0].text,
        questions[6].text,
        questions[9].text,
    );

    let mut rows = Vec::new();
    for &size in &sizes {
        rows.extend(bench_size(c, &docs[..size], &questions, rounds, builds));
    }

    println!("bm25: summary");
    println!("| engine | docs | p50 | p99 | build | on disk |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {} | {:.3} ms | {:.3} ms | {} | {} |",
            row.engine,
            row.size,
            row.p50_ms,
            row.p99_ms,
            row.build_docs_per_s
                .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.0} docs/s")),
            row.size_bytes
                .map_or_else(|| "-".to_owned(), |bytes| format!("{:.1} MiB", mib(bytes))),
        );
    }
}

criterion_group!(benches, bm25);
criterion_main!(benches);
