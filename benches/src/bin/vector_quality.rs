//! The vector tier at 100 000 documents: recall@10 of `memory_vector::VectorIndex`
//! against an exact scan, query latency, seal and merge times, build time, RSS, and the
//! embedding throughput of `memory_embed`. Prints the tables of docs/benchmarks.md
//! ("Vector tier at 100 000 documents").
//!
//! ```sh
//! source .tools/env
//! cargo run --release -p memory-benches --bin vector_quality
//! ```
//!
//! 1. Data ([`memory_benches::vector_corpus`]): 100 000 distinct sentences of the year of
//!    coding sessions, embedded once with all-MiniLM-L6-v2 and cached under
//!    `target/bench-data/` (30 minutes on a busy 2-core machine the first time); 200
//!    held-out questions and 200 held-out sentences as queries, each embedded alone with
//!    the production query embedder (one ONNX Runtime thread), timed.
//! 2. Ground truth: the exact top 10 of every query among the documents its filter lets
//!    through, by a brute-force scan (timed too: that is what an index without graphs
//!    would cost).
//! 3. Per `--projects` mode (`one`: every document in one project; `year`: the year's
//!    four projects, each query in its own): a fresh index in
//!    `target/bench-data/vector-index-<mode>-<docs>-<key>/` (left there for the
//!    criterion bench, `benches/benches/vector.rs`) with the production
//!    configuration (`VectorConfig::new(384)`: `seal_threshold` 2 000, merge factor 4,
//!    `ef_construction` 100), searched with each `--ef-search` (a search-time
//!    setting), filled the way the daemon's
//!    vector indexer fills it (batches of 256, seal when full, at most one merge after
//!    each seal, a commit after each seal); then recall@10 of `search(query, project,
//!    10)`, latency percentiles (one search at a time, one thread, `--rounds` rounds
//!    after a warm-up round) and what each search touched (`search_with_stats`).
//! 4. RSS: a child process (this binary, `--rss-probe`) loads the daemon's two
//!    embedders, opens the first index built, embeds and searches 100 queries, and reads
//!    `VmRSS`/`VmHWM` from /proc/self/status at each step.
//! 5. Embedding throughput with the indexer's settings (one thread, 64 texts per ONNX
//!    Runtime call, up to 256 texts per `embed` call) and with all cores: short
//!    sentences, the year's event texts as the indexer embeds them, and long coding turns
//!    (consecutive events of a session joined to 700+ characters, truncated by the model
//!    at 128 tokens).
//!
//! Recall is given two ways: by ids (the fraction of the exact top 10's documents
//! returned) and by distance as ann-benchmarks counts it (a returned document counts
//! when its cosine distance is within 0.1 % of the exact 10th's), since the corpus has
//! clusters of near-identical sentences whose order is decided by noise.

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use memory_benches::vector_corpus::{
    BuildReport, CORPUS_DOCS, CorpusDoc, CorpusQuery, INDEXER_BATCH, ProjectMode, QueryKind,
    build_like_indexer, corpus, doc_id, embed_cached, embedding_key, exact_top, index_cache,
    index_cached, mark_index_cached, rss_kib,
};
use memory_benches::year::{YearSpec, generate};
use memory_benches::{disk_size, percentile};
use memory_embed::{Embedder, EmbedderConfig, MINILM_DIMS};
use memory_vector::{DocSelector, SearchStats, VectorConfig, VectorIndex};

/// Hits per search.
const LIMIT: usize = 10;
/// ann-benchmarks' epsilon: a hit counts when its distance is at most (1 + ε) times the
/// exact 10th's.
const EPSILON: f32 = 1e-3;

#[derive(Parser)]
#[command(about = "recall, latency, build and embedding numbers of the vector tier")]
struct Cli {
    /// Documents.
    #[arg(long, default_value_t = CORPUS_DOCS)]
    docs: usize,
    /// Queries of each kind (questions, sentences).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// Timed rounds over all queries.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Project modes, comma-separated: `one`, `year` (`none`: no index, only the data,
    /// the query embedding and the embedding throughput).
    #[arg(long, default_value = "one,year")]
    projects: String,
    /// `ef_search` values, comma-separated; one build each. Default: the production
    /// default (`VectorConfig::new(384).ef_search`).
    #[arg(long)]
    ef_search: Option<String>,
    /// Documents per sealed segment.
    #[arg(long, default_value_t = 2_000)]
    seal_threshold: usize,
    /// `exact_scan_max_docs` of the searches (it does not change the index built, only
    /// which segments keep their graphs in memory when it opens). Default: the
    /// production default.
    #[arg(long)]
    exact_scan_max_docs: Option<usize>,
    /// Open an index left by an earlier run with the same data and configuration
    /// instead of building it (no build times then): to measure search again.
    #[arg(long)]
    reuse_index: bool,
    /// Skip the embedding throughput section.
    #[arg(long)]
    skip_throughput: bool,
    /// Skip the RSS probe.
    #[arg(long)]
    skip_rss: bool,
    /// Internal: measure the RSS of a process holding the embedders and this index.
    #[arg(long, hide = true)]
    rss_probe: Option<PathBuf>,
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn us(duration: Duration) -> u64 {
    duration.as_micros() as u64
}

fn p(sorted_us: &[u64], q: f64) -> f64 {
    percentile(sorted_us, q) as f64 / 1e3
}

fn parse_list<T: std::str::FromStr>(list: &str, what: &str) -> anyhow::Result<Vec<T>> {
    list.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.parse()
                .map_err(|_| anyhow::anyhow!("{what}: cannot parse {item:?}"))
        })
        .collect()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cores} cores ({cpu}); load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let modes: Vec<ProjectMode> = parse_list::<String>(&cli.projects, "--projects")?
        .into_iter()
        .filter(|mode| mode != "none")
        .map(|mode| match mode.as_str() {
            "one" => Ok(ProjectMode::One),
            "year" => Ok(ProjectMode::Year),
            other => bail!("--projects: `one` or `year`, not {other:?}"),
        })
        .collect::<anyhow::Result<_>>()?;
    if let Some(dir) = &cli.rss_probe {
        return rss_probe(
            dir,
            modes.first().copied().unwrap_or(ProjectMode::One),
            cli.queries,
        );
    }
    let efs: Vec<usize> = match &cli.ef_search {
        Some(list) => parse_list(list, "--ef-search")?,
        None => vec![VectorConfig::new(MINILM_DIMS).ef_search],
    };
    println!("vector_quality: {}", machine());
    let started = Instant::now();

    // 1. Data.
    let generated = Instant::now();
    let corpus = corpus(cli.docs, cli.queries);
    let chars: usize = corpus.docs.iter().map(|doc| doc.text.len()).sum();
    let shapes: HashSet<String> = corpus
        .docs
        .iter()
        .map(|doc| doc.text.replace(|c: char| c.is_ascii_digit(), "#"))
        .collect();
    println!(
        "data: {} documents (distinct sentences of {} year events, {:.1} chars on average, \
         {} distinct once digits are masked) and {} queries, generated in {:.1} s",
        corpus.docs.len(),
        corpus.num_events,
        chars as f64 / corpus.docs.len() as f64,
        shapes.len(),
        corpus.queries.len(),
        generated.elapsed().as_secs_f64()
    );
    for kind in [QueryKind::Question, QueryKind::Sentence] {
        let examples: Vec<&str> = corpus
            .queries
            .iter()
            .filter(|query| query.kind == kind)
            .take(3)
            .map(|query| query.text.as_str())
            .collect();
        println!("data: {} queries, e.g. {examples:?}", kind.as_str());
    }
    let embedder_config = EmbedderConfig::from_env_or_repo();
    let texts: Vec<&str> = corpus.docs.iter().map(|doc| doc.text.as_str()).collect();
    let vectors_key = embedding_key(&texts, &embedder_config);
    let embedded = embed_cached("minilm", &texts, &embedder_config)?;
    match embedded.embedded_in {
        Some(took) => println!(
            "data: embedded {} documents in {:.0} s (all cores) into {}",
            texts.len(),
            took.as_secs_f64(),
            embedded.path.display()
        ),
        None => println!("data: document vectors from {}", embedded.path.display()),
    }
    let vectors = embedded.vectors;
    let (query_vectors, query_embed_us) = embed_queries(&embedder_config, &corpus.queries)?;

    // 2. Ground truth.
    let mut truths: HashMap<ProjectMode, Vec<Vec<(f32, usize)>>> = HashMap::new();
    let mut exact_us: Vec<u64> = Vec::new();
    for &mode in &modes {
        let mut per_query = Vec::with_capacity(corpus.queries.len());
        for (query, query_vector) in corpus.queries.iter().zip(&query_vectors) {
            let project = (mode == ProjectMode::Year).then_some(query.project);
            let begun = Instant::now();
            per_query.push(exact_top(
                query_vector,
                &vectors,
                &corpus.docs,
                project,
                LIMIT,
            ));
            if mode == ProjectMode::One {
                exact_us.push(us(begun.elapsed()));
            }
        }
        truths.insert(mode, per_query);
    }
    exact_us.sort_unstable();
    for (&mode, per_query) in &truths {
        for kind in [QueryKind::Question, QueryKind::Sentence] {
            let picked: Vec<&Vec<(f32, usize)>> = per_query
                .iter()
                .zip(&corpus.queries)
                .filter(|(_, query)| query.kind == kind)
                .map(|(truth, _)| truth)
                .collect();
            let mean = |at: usize| {
                picked
                    .iter()
                    .filter_map(|truth| truth.get(at).map(|(score, _)| f64::from(*score)))
                    .sum::<f64>()
                    / picked.len().max(1) as f64
            };
            println!(
                "truth [{} project(s)] {}s: mean cosine similarity of the exact 1st hit {:.3}, \
                 10th {:.3}",
                mode.as_str(),
                kind.as_str(),
                mean(0),
                mean(LIMIT - 1)
            );
        }
    }

    // 3. Builds, recall and latency.
    let mut results = Vec::new();
    for (round, &ef) in efs.iter().enumerate() {
        for &mode in &modes {
            // `ef_search` applies when the index opens: the first round builds (unless
            // `--reuse-index`), the later ones search the same indexes.
            let result = measure_index(
                &cli,
                (mode, ef, cli.reuse_index || round > 0),
                &corpus.docs,
                &vectors,
                &corpus.queries,
                &query_vectors,
                &truths[&mode],
                vectors_key,
            )?;
            results.push(result);
        }
    }

    // 4. RSS of a process holding the embedders and the index.
    let rss = if let Some(first) = results.first().filter(|_| !cli.skip_rss) {
        let dir = &first.dir;
        let output = Command::new(std::env::current_exe()?)
            .arg("--rss-probe")
            .arg(dir)
            .arg("--projects")
            .arg(first.mode.as_str())
            .arg("--queries")
            .arg("100")
            .output()
            .context("cannot run the RSS probe")?;
        if !output.status.success() {
            bail!(
                "the RSS probe failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Some(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        None
    };

    // 5. Embedding throughput.
    let throughput = if cli.skip_throughput {
        Vec::new()
    } else {
        embedding_throughput(&embedder_config, &corpus.docs)?
    };

    // Summary.
    println!();
    println!(
        "## summary ({} documents, {} queries per kind, {} rounds; {:.0} s in all)",
        corpus.docs.len(),
        cli.queries,
        cli.rounds,
        started.elapsed().as_secs_f64()
    );
    println!();
    println!(
        "| projects | ef_search | queries | recall@10 (ids) | recall@10 (ε = 0.1 %) | \
         p50 | p99 | graph segments | exact segments | docs scored exactly |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for result in &results {
        for row in &result.rows {
            println!(
                "| {} | {} | {} | {:.3} | {:.3} | {:.3} ms | {:.3} ms | {:.1} | {:.1} | {:.0} |",
                result.mode.as_str(),
                result.ef,
                row.label,
                row.recall_ids,
                row.recall_eps,
                row.p50_ms,
                row.p99_ms,
                row.graph_segments,
                row.exact_segments,
                row.docs_scored
            );
        }
    }
    println!();
    println!(
        "exact scan of all {} documents (the ground truth, one thread): p50 {:.2} ms, \
         p99 {:.2} ms",
        corpus.docs.len(),
        p(&exact_us, 50.0),
        p(&exact_us, 99.0)
    );
    println!(
        "query embedding (one text, one thread, the 8-bit question model, as \
         `VectorHandle::embed_query`): p50 {:.2} ms, \
         p99 {:.2} ms over {} queries",
        p(&query_embed_us, 50.0),
        p(&query_embed_us, 99.0),
        query_embed_us.len()
    );
    println!();
    println!(
        "| projects | ef_search | build (upserts, seals, merges, commits) | seals | seal build \
         mean (min–max) | merges | segments after | on disk |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for result in results
        .iter()
        .filter(|result| !result.build.seals.is_empty())
    {
        let report = &result.build;
        let seal_ms: Vec<f64> = report.seals.iter().map(|job| ms(job.build)).collect();
        let mean = seal_ms.iter().sum::<f64>() / seal_ms.len().max(1) as f64;
        let min = seal_ms.iter().copied().fold(f64::INFINITY, f64::min);
        let max = seal_ms.iter().copied().fold(0.0, f64::max);
        let mut merges: Vec<String> = Vec::new();
        let mut by_size: Vec<(usize, Vec<f64>)> = Vec::new();
        for job in &report.merges {
            match by_size.iter_mut().find(|(size, _)| *size == job.num_docs) {
                Some((_, times)) => times.push(job.build.as_secs_f64()),
                None => by_size.push((job.num_docs, vec![job.build.as_secs_f64()])),
            }
        }
        for (size, times) in by_size {
            merges.push(format!(
                "{}× {size} docs {:.1} s",
                times.len(),
                times.iter().sum::<f64>() / times.len() as f64
            ));
        }
        println!(
            "| {} | {} | {:.1} s ({:.1} s, {:.1} s, {:.1} s, {:.1} s) | {} × {} docs | {:.0} ms \
             ({:.0}–{:.0}) | {} | {} | {:.0} MiB |",
            result.mode.as_str(),
            result.ef,
            report.total.as_secs_f64(),
            report.upserts.as_secs_f64(),
            report
                .seals
                .iter()
                .map(|job| (job.build + job.install).as_secs_f64())
                .sum::<f64>()
                + 0.0,
            report
                .merges
                .iter()
                .map(|job| (job.build + job.install).as_secs_f64())
                .sum::<f64>()
                + 0.0,
            report.commits.as_secs_f64(),
            report.seals.len(),
            report.seals.first().map_or(0, |job| job.num_docs),
            mean,
            min,
            max,
            merges.join(", "),
            result.layout,
            result.size_bytes as f64 / (1 << 20) as f64
        );
    }
    if let Some(rss) = rss {
        println!();
        for line in rss.lines() {
            println!("{line}");
        }
    }
    if !throughput.is_empty() {
        println!();
        println!(
            "| texts | count | mean chars | threads | texts/s | ms per {INDEXER_BATCH}-text call |"
        );
        println!("|---|---|---|---|---|---|");
        for row in &throughput {
            println!(
                "| {} | {} | {:.0} | {} | {:.0} | {:.0} |",
                row.label, row.count, row.mean_chars, row.threads, row.per_second, row.call_ms
            );
        }
    }
    Ok(())
}

/// Every query embedded alone with the production query embedder (one thread), after a
/// warm-up; the vectors and each embedding's time.
fn embed_queries(
    config: &EmbedderConfig,
    queries: &[CorpusQuery],
) -> anyhow::Result<(Vec<Vec<f32>>, Vec<u64>)> {
    let mut config = config.clone();
    config.intra_threads = Some(1);
    // The daemon's question model (`[teleport.vector] query_model_file`).
    memory_embed::QUANTIZED_MODEL_FILE.clone_into(&mut config.model_file);
    let mut embedder = Embedder::load(&config)?;
    embedder.embed(&["warm up the model"])?;
    let mut vectors = Vec::with_capacity(queries.len());
    let mut times = Vec::with_capacity(queries.len());
    for query in queries {
        let begun = Instant::now();
        let mut vector = embedder.embed(&[query.text.as_str()])?;
        times.push(us(begun.elapsed()));
        vectors.push(vector.pop().context("no vector")?);
    }
    times.sort_unstable();
    Ok((vectors, times))
}

struct Row {
    label: &'static str,
    recall_ids: f64,
    recall_eps: f64,
    p50_ms: f64,
    p99_ms: f64,
    graph_segments: f64,
    exact_segments: f64,
    docs_scored: f64,
}

struct IndexResult {
    mode: ProjectMode,
    ef: usize,
    dir: PathBuf,
    build: BuildReport,
    layout: String,
    size_bytes: u64,
    rows: Vec<Row>,
}

#[allow(clippy::too_many_arguments)]
fn measure_index(
    cli: &Cli,
    (mode, ef, reuse): (ProjectMode, usize, bool),
    docs: &[CorpusDoc],
    vectors: &[f32],
    queries: &[CorpusQuery],
    query_vectors: &[Vec<f32>],
    truths: &[Vec<(f32, usize)>],
    vectors_key: u64,
) -> anyhow::Result<IndexResult> {
    let mut config = VectorConfig::new(MINILM_DIMS);
    config.seal_threshold = cli.seal_threshold;
    config.ef_search = ef;
    if let Some(max_docs) = cli.exact_scan_max_docs {
        config.exact_scan_max_docs = max_docs;
    }
    let (dir, key) = index_cache(vectors_key, docs.len(), &config, mode);
    let reuse = reuse && index_cached(&dir, &key);
    if !reuse {
        VectorIndex::destroy(&dir)?;
    }
    println!(
        "build [{} project(s), ef_search {ef}]: {} documents {} {}",
        mode.as_str(),
        docs.len(),
        if reuse { "already in" } else { "into" },
        dir.display()
    );
    let mut index = VectorIndex::open(&dir, config)?;
    let build = if reuse {
        BuildReport::default()
    } else {
        let build = build_like_indexer(&mut index, docs, vectors, mode)?;
        mark_index_cached(&dir, &key)?;
        build
    };
    for (number, job) in build.seals.iter().enumerate() {
        if number < 3 || number + 1 == build.seals.len() {
            println!(
                "build:   seal {number:>2}: {} docs, build {:.0} ms, install {:.0} ms",
                job.num_docs,
                ms(job.build),
                ms(job.install)
            );
        }
    }
    for job in &build.merges {
        println!(
            "build:   merge of {} segments, {} docs: build {:.2} s, install {:.0} ms",
            job.num_inputs,
            job.num_docs,
            job.build.as_secs_f64(),
            ms(job.install)
        );
    }
    let status = index.status();
    let mut sizes: Vec<String> = status
        .segments
        .iter()
        .map(|segment| segment.num_docs.to_string())
        .collect();
    sizes.push(format!("buffer {}", status.num_buffered));
    let layout = format!("{} segments: {}", status.segments.len(), sizes.join(" + "));
    let size_bytes = disk_size(&dir);
    println!(
        "build:   total {:.1} s (upserts {:.2} s, {} commits {:.2} s); {layout}; {:.0} MiB on disk",
        build.total.as_secs_f64(),
        build.upserts.as_secs_f64(),
        build.num_commits,
        build.commits.as_secs_f64(),
        size_bytes as f64 / (1 << 20) as f64
    );

    let filters: Vec<DocSelector> = queries
        .iter()
        .map(|query| mode.filter(query.project))
        .collect();
    let mut rows = Vec::new();
    for (label, kind) in [
        ("questions", Some(QueryKind::Question)),
        ("sentences", Some(QueryKind::Sentence)),
        ("all", None),
    ] {
        let picked: Vec<usize> = (0..queries.len())
            .filter(|&at| kind.is_none_or(|kind| queries[at].kind == kind))
            .collect();
        let (mut recall_ids, mut recall_eps) = (0.0, 0.0);
        let mut totals = SearchStats::default();
        for &at in &picked {
            let (hits, stats) = index.search_with_stats(&query_vectors[at], &filters[at], LIMIT)?;
            let truth = &truths[at];
            let wanted: HashSet<String> = truth.iter().map(|(_, i)| doc_id(*i)).collect();
            let kth_distance = truth.last().map_or(0.0, |(score, _)| 1.0 - score);
            let found = hits
                .iter()
                .filter(|hit| wanted.contains(&hit.doc_id))
                .count();
            let close = hits
                .iter()
                .filter(|hit| 1.0 - hit.score <= kth_distance * (1.0 + EPSILON) + 1e-6)
                .count();
            let denominator = truth.len().max(1) as f64;
            recall_ids += found as f64 / denominator;
            recall_eps += (close.min(truth.len())) as f64 / denominator;
            totals.num_segments_graph += stats.num_segments_graph;
            totals.num_segments_exact += stats.num_segments_exact;
            totals.num_segment_docs_scored += stats.num_segment_docs_scored;
            totals.num_buffer_docs_scored += stats.num_buffer_docs_scored;
            totals.num_graph_fallbacks += stats.num_graph_fallbacks;
        }
        // One warm-up round, then the timed rounds.
        let mut times = Vec::with_capacity(picked.len() * cli.rounds);
        for round in 0..=cli.rounds {
            for &at in &picked {
                let begun = Instant::now();
                let hits = index.search(&query_vectors[at], &filters[at], LIMIT)?;
                let took = us(begun.elapsed());
                std::hint::black_box(hits);
                if round > 0 {
                    times.push(took);
                }
            }
        }
        times.sort_unstable();
        let n = picked.len().max(1) as f64;
        let row = Row {
            label,
            recall_ids: recall_ids / n,
            recall_eps: recall_eps / n,
            p50_ms: p(&times, 50.0),
            p99_ms: p(&times, 99.0),
            graph_segments: totals.num_segments_graph as f64 / n,
            exact_segments: totals.num_segments_exact as f64 / n,
            docs_scored: (totals.num_segment_docs_scored + totals.num_buffer_docs_scored) as f64
                / n,
        };
        println!(
            "search [{} project(s), ef_search {ef}] {label}: recall@10 {:.3} by id, {:.3} \
             within ε; p50 {:.3} ms, p99 {:.3} ms; per search {:.1} graph segments, {:.1} \
             exact, {:.0} docs scored exactly, {:.2} graph fallbacks",
            mode.as_str(),
            row.recall_ids,
            row.recall_eps,
            row.p50_ms,
            row.p99_ms,
            row.graph_segments,
            row.exact_segments,
            row.docs_scored,
            totals.num_graph_fallbacks as f64 / n
        );
        rows.push(row);
    }
    Ok(IndexResult {
        mode,
        ef,
        dir,
        build,
        layout,
        size_bytes,
        rows,
    })
}

/// The RSS probe: the daemon's two embedders (one thread each), the index at `dir` (of
/// `mode`), and `num_queries` questions embedded and searched.
fn rss_probe(dir: &Path, mode: ProjectMode, num_queries: usize) -> anyhow::Result<()> {
    let line = |step: &str| {
        let (rss, hwm) = rss_kib();
        println!(
            "rss: {step:<52} VmRSS {:>6.0} MiB  VmHWM {:>6.0} MiB",
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
    };
    line("process started");
    let mut config = EmbedderConfig::from_env_or_repo();
    config.intra_threads = Some(1);
    let mut index_embedder = Embedder::load(&config)?;
    let mut query_embedder = Embedder::load(&config)?;
    line("two embedders loaded (as VectorHandle::open)");
    let index = VectorIndex::open(dir, VectorConfig::new(MINILM_DIMS))?;
    line(&format!("index opened ({} docs)", index.num_docs()));
    let questions: Vec<(String, &'static str)> = corpus(20_000, num_queries)
        .queries
        .into_iter()
        .filter(|query| query.kind == QueryKind::Question)
        .map(|query| (query.text, query.project))
        .collect();
    for (question, project) in &questions {
        let vector = query_embedder
            .embed(&[question.as_str()])?
            .pop()
            .context("no vector")?;
        std::hint::black_box(index.search(&vector, &mode.filter(project), LIMIT)?);
    }
    line(&format!(
        "{} questions embedded and searched",
        questions.len()
    ));
    let batch: Vec<&str> = questions.iter().map(|(text, _)| text.as_str()).collect();
    std::hint::black_box(index_embedder.embed(&batch)?);
    line("one indexer batch embedded");
    Ok(())
}

struct Throughput {
    label: &'static str,
    count: usize,
    mean_chars: f64,
    threads: usize,
    per_second: f64,
    call_ms: f64,
}

/// Texts per second with the indexer's settings (one thread) and with all cores.
fn embedding_throughput(
    config: &EmbedderConfig,
    docs: &[CorpusDoc],
) -> anyhow::Result<Vec<Throughput>> {
    let short: Vec<String> = docs
        .iter()
        .take(2_048)
        .map(|doc| doc.text.clone())
        .collect();
    let events = generate(&YearSpec {
        events: 20_000,
        ..YearSpec::default()
    });
    let indexed: Vec<String> = events
        .iter()
        .filter(|event| !matches!(event.kind, "session_start" | "session_end"))
        .take(2_048)
        .map(|event| event.text.clone())
        .collect();
    // Long coding turns: consecutive events of one session joined until 700+ chars.
    let mut by_session: HashMap<u32, Vec<&str>> = HashMap::new();
    let mut long: Vec<String> = Vec::new();
    for event in &events {
        if matches!(event.kind, "session_start" | "session_end") || long.len() >= 512 {
            continue;
        }
        let parts = by_session.entry(event.session).or_default();
        parts.push(&event.text);
        if parts.iter().map(|part| part.len() + 1).sum::<usize>() >= 700 {
            long.push(parts.join("\n"));
            parts.clear();
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let mut rows = Vec::new();
    for threads in [1, cores] {
        let mut config = config.clone();
        config.intra_threads = Some(threads);
        let mut embedder = Embedder::load(&config)?;
        embedder.embed(&short[..64])?;
        for (label, texts) in [
            ("short sentences (the corpus)", &short),
            ("event texts as indexed", &indexed),
            ("long coding turns (700+ chars)", &long),
        ] {
            let begun = Instant::now();
            let mut calls = 0;
            for call in texts.chunks(INDEXER_BATCH) {
                std::hint::black_box(embedder.embed(call)?);
                calls += 1;
            }
            let took = begun.elapsed();
            let row = Throughput {
                label,
                count: texts.len(),
                mean_chars: texts.iter().map(String::len).sum::<usize>() as f64
                    / texts.len().max(1) as f64,
                threads,
                per_second: texts.len() as f64 / took.as_secs_f64(),
                call_ms: ms(took) / f64::from(calls),
            };
            println!(
                "embed: {label}: {} texts ({:.0} chars on average), {threads} thread(s): \
                 {:.0} texts/s, {:.0} ms per call of {INDEXER_BATCH}",
                row.count, row.mean_chars, row.per_second, row.call_ms
            );
            rows.push(row);
        }
        if threads == cores {
            break;
        }
    }
    Ok(rows)
}
