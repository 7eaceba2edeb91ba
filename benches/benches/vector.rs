//! The vector index (`memory-vector`) with real all-MiniLM-L6-v2 embeddings: query
//! latency at 10 000 and 100 000 documents, and the seal of one 2 000-document segment.
//!
//! 1. Data ([`memory_benches::vector_corpus`]): the first N of 100 000 distinct sentences
//!    of the year of coding sessions, embedded once and cached under
//!    `target/bench-data/` (about half an hour on two busy cores the first time, a second
//!    after);
//!    200 held-out questions and 200 held-out sentences as queries.
//! 2. Index: built the way the daemon's vector indexer builds it (production
//!    `VectorConfig::new(384)`: seal at 2 000 documents, merge factor 4,
//!    `ef_construction` 100, its `ef_search`; batches of 256, at most one merge after
//!    each seal), every
//!    document in one project, and kept under `target/bench-data/vector-index-*` keyed by
//!    the vectors and the configuration, so a rerun opens it instead of spending minutes
//!    building HNSW graphs. `vector_quality` (`src/bin/vector_quality.rs`) times that
//!    build and measures recall.
//! 3. `vector_search/<N>`: `search(query, project, 10)`, one query per iteration,
//!    round-robin over the questions or the sentences; `exact_scan` is the brute-force
//!    top 10 over the same N vectors (what a search would cost without graphs).
//! 4. `vector_seal/2000`: `SealJob::build` of the first 2 000 vectors (HNSW graph and
//!    file bytes; rayon's pool, all cores). With `VECTOR_BENCH_MERGE=1`, also
//!    `vector_merge/4x2000`: `MergeJob::build` of four such segments.
//!
//! `source .tools/env; cargo bench -p memory-benches --bench vector`.
//! `VECTOR_BENCH_SIZES=100000` (comma-separated) chooses the sizes (default
//! `10000,100000`). Under `cargo test` (no `--bench`) it runs 300 documents and 10 queries
//! of each kind in a temporary index, so the test suite stays fast (it needs the model of
//! `scripts/setup.sh`, like memory-embed's own tests).

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use memory_benches::vector_corpus::{
    CORPUS_DOCS, Corpus, ProjectMode, QueryKind, build_like_indexer, corpus, embed_cached,
    embedding_key, exact_top, index_cache, index_cached, mark_index_cached, vector_doc,
};
use memory_embed::{EmbedderConfig, MINILM_DIMS};
use memory_vector::{VectorConfig, VectorIndex};

/// Hits per search.
const LIMIT: usize = 10;
/// Documents of the sealed segment.
const SEAL_DOCS: usize = 2_000;

/// Whether criterion will measure (`cargo bench`), not just smoke-test (`cargo test`).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn sizes(full: bool) -> Vec<usize> {
    match std::env::var("VECTOR_BENCH_SIZES") {
        Ok(list) if full => list
            .split(',')
            .map(|size| size.trim().replace('_', ""))
            .filter(|size| !size.is_empty())
            .map(|size| {
                size.parse()
                    .expect("VECTOR_BENCH_SIZES: numbers separated by commas")
            })
            .collect(),
        _ if full => vec![10_000, CORPUS_DOCS],
        _ => vec![300],
    }
}

fn production_config() -> VectorConfig {
    VectorConfig::new(MINILM_DIMS)
}

/// The index of the first `size` documents: opened from the cache when its key matches
/// (`vector_quality` leaves it there too), else built (the indexer's way) and kept.
/// Under `cargo test`, built in `temp`.
fn index_of(
    data: &Corpus,
    vectors: &[f32],
    vectors_key: u64,
    size: usize,
    temp: Option<&Path>,
) -> VectorIndex {
    let config = production_config();
    let (cached_dir, key) = index_cache(vectors_key, size, &config, ProjectMode::One);
    let dir: PathBuf = temp.map_or(cached_dir, |temp| temp.join(format!("index-{size}")));
    if temp.is_none() && index_cached(&dir, &key) {
        let index = VectorIndex::open(&dir, config).expect("open the cached index");
        println!(
            "vector: {size} documents from {} ({} segments)",
            dir.display(),
            index.status().segments.len()
        );
        return index;
    }
    VectorIndex::destroy(&dir).expect("remove a stale index");
    let mut index = VectorIndex::open(&dir, config).expect("create the index");
    let report = build_like_indexer(&mut index, &data.docs[..size], vectors, ProjectMode::One)
        .expect("build the index");
    mark_index_cached(&dir, &key).expect("write the cache marker");
    println!(
        "vector: built {size} documents in {:.1} s ({} seals, {} merges) into {}",
        report.total.as_secs_f64(),
        report.seals.len(),
        report.merges.len(),
        dir.display()
    );
    index
}

fn vector(c: &mut Criterion) {
    let full = measuring();
    let sizes = sizes(full);
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let (num_docs, num_queries) = if full {
        (CORPUS_DOCS.max(largest), 200)
    } else {
        (largest.max(SEAL_DOCS.min(300)), 10)
    };
    let data = corpus(num_docs, num_queries);
    let embedder = EmbedderConfig::from_env_or_repo();
    let texts: Vec<&str> = data.docs.iter().map(|doc| doc.text.as_str()).collect();
    let vectors_key = embedding_key(&texts, &embedder);
    let vectors = embed_cached("minilm", &texts, &embedder)
        .expect("embed the documents (run scripts/setup.sh for the model)")
        .vectors;
    let query_texts: Vec<&str> = data.queries.iter().map(|q| q.text.as_str()).collect();
    let query_vectors = embed_cached("minilm-queries", &query_texts, &embedder)
        .expect("embed the queries")
        .vectors;
    let queries_of = |kind: QueryKind| -> Vec<&[f32]> {
        data.queries
            .iter()
            .enumerate()
            .filter(|(_, query)| query.kind == kind)
            .map(|(at, _)| &query_vectors[at * MINILM_DIMS..(at + 1) * MINILM_DIMS])
            .collect()
    };
    let questions = queries_of(QueryKind::Question);
    let sentences = queries_of(QueryKind::Sentence);
    let temp = (!full).then(|| tempfile::tempdir().expect("temp dir"));
    let filter = ProjectMode::One.filter("any");

    for &size in &sizes {
        let index = index_of(
            &data,
            &vectors,
            vectors_key,
            size,
            temp.as_ref().map(|t| t.path()),
        );
        let mut group = c.benchmark_group(format!("vector_search/{size}"));
        group
            .sample_size(if full { 50 } else { 10 })
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(if full { 5 } else { 1 }));
        for (name, list) in [("question", &questions), ("sentence", &sentences)] {
            let mut next = 0usize;
            group.bench_function(name, |b| {
                b.iter(|| {
                    next += 1;
                    index
                        .search(list[next % list.len()], &filter, LIMIT)
                        .expect("search")
                });
            });
        }
        let docs = &data.docs[..size];
        let mut next = 0usize;
        group.bench_function("exact_scan", |b| {
            b.iter(|| {
                next += 1;
                exact_top(
                    questions[next % questions.len()],
                    &vectors,
                    docs,
                    None,
                    LIMIT,
                )
            });
        });
        group.finish();
    }

    // Sealing one segment: the graph build of SEAL_DOCS vectors.
    let seal_docs = if full { SEAL_DOCS } else { 300 };
    let seal_dir = tempfile::tempdir().expect("temp dir");
    let mut index =
        VectorIndex::open(seal_dir.path().join("seal"), production_config()).expect("open");
    for (i, doc) in data.docs[..seal_docs].iter().enumerate() {
        let vector = &vectors[i * MINILM_DIMS..(i + 1) * MINILM_DIMS];
        index
            .upsert(vector_doc(i, doc, vector, ProjectMode::One))
            .expect("upsert");
    }
    let mut group = c.benchmark_group("vector_seal");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(if full { 60 } else { 1 }));
    group.bench_function(seal_docs.to_string(), |b| {
        b.iter_batched(
            || index.prepare_seal_forced().expect("a seal job"),
            |job| job.build().expect("seal"),
            BatchSize::PerIteration,
        );
    });
    group.finish();

    if full && std::env::var_os("VECTOR_BENCH_MERGE").is_some() {
        // Four sealed segments, then their merge (not installed, so it can run again).
        for _ in 0..3 {
            index.seal_now(true).expect("seal");
            for (i, doc) in data.docs[..seal_docs].iter().enumerate() {
                let vector = &vectors[i * MINILM_DIMS..(i + 1) * MINILM_DIMS];
                let mut doc = vector_doc(i, doc, vector, ProjectMode::One);
                doc.doc_id = format!("{}-{}", doc.doc_id, index.status().segments.len());
                index.upsert(doc).expect("upsert");
            }
        }
        index.seal_now(true).expect("seal");
        let mut group = c.benchmark_group("vector_merge");
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(200));
        group.bench_function(format!("4x{seal_docs}"), |b| {
            b.iter_batched(
                || index.prepare_merge().expect("a merge job"),
                |job| job.build().expect("merge"),
                BatchSize::PerIteration,
            );
        });
        group.finish();
    }
}

criterion_group!(benches, vector);
criterion_main!(benches);
