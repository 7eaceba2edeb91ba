//! The vector tier's bench data: real all-MiniLM-L6-v2 embeddings of 100 000 distinct
//! short texts, for `benches/benches/vector.rs` and `vector_quality`.
//!
//! - **Documents** ([`corpus`]): the sentences of [`crate::year`]'s default year, in
//!   timestamp order — every event's text but the session start and end markers, split
//!   into lines and sentences, trimmed, at least two words and 12 characters, each
//!   distinct text once. Conversations are redundant the way real sessions are (tool
//!   output that differs only in numbers, templates of the same topic), so neighbours
//!   are often near-duplicates.
//! - **Queries**, held out (never a document): [`QueryKind::Question`], natural-language
//!   questions made from the words of the sentences that follow the documents
//!   ([`crate::questions::question_from`]); and [`QueryKind::Sentence`], those following
//!   sentences themselves (a query from the documents' own distribution, as ANN
//!   benchmarks use).
//! - **Vectors** ([`embed_cached`]): embedded once with `memory_embed` and cached as raw
//!   little-endian `f32` under `target/bench-data/`, keyed by a hash of the texts, the
//!   model directory and the model file's size, so reruns skip the half hour of
//!   embedding (on two busy cores).
//! - **Index** ([`build_like_indexer`]): the documents written into a
//!   [`VectorIndex`] the way the daemon's vector indexer does (`memory_actors::
//!   VectorHandle`): upserts in batches of 256, a seal whenever the buffer holds
//!   `seal_threshold` documents, after each seal at most one merge, a commit after each
//!   seal and at the end.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memory_embed::{Embedder, EmbedderConfig, MINILM_DIMS};
use memory_vector::{BuiltSegment, DocSelector, DocType, VectorConfig, VectorDoc, VectorIndex};

use crate::questions::{QUESTION_SEED, question_from};
use crate::year::{Rng, YearSpec, generate};

/// Documents of the full-size bench.
pub const CORPUS_DOCS: usize = 100_000;
/// Held-out sentences the queries are drawn from, after the documents.
const HELD_OUT_SENTENCES: usize = 5_000;
/// Feed items per vector indexer step (the runner's default `batch_size`).
pub const INDEXER_BATCH: usize = 256;
/// The project of every document in [`ProjectMode::One`].
pub const ONE_PROJECT: &str = "bench";

/// One document: a sentence of an event.
#[derive(Clone, Debug)]
pub struct CorpusDoc {
    /// The event's project.
    pub project: &'static str,
    /// The event's session number.
    pub session: u32,
    /// The event's time.
    pub timestamp_ms: u64,
    /// The sentence.
    pub text: String,
}

/// What a query is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryKind {
    /// A question made from a held-out sentence's words.
    Question,
    /// A held-out sentence.
    Sentence,
}

impl QueryKind {
    /// `question` or `sentence`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QueryKind::Question => "question",
            QueryKind::Sentence => "sentence",
        }
    }
}

/// One held-out query.
#[derive(Clone, Debug)]
pub struct CorpusQuery {
    /// What it is.
    pub kind: QueryKind,
    /// The project of the sentence it comes from.
    pub project: &'static str,
    /// The text embedded.
    pub text: String,
}

/// Documents and queries.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// The documents, in timestamp order.
    pub docs: Vec<CorpusDoc>,
    /// `num_queries` questions, then `num_queries` sentences.
    pub queries: Vec<CorpusQuery>,
    /// Events of the year generated.
    pub num_events: usize,
}

/// The sentences of one event text: lines, then sentences ending in `.`, `?` or `!`
/// before a space; trimmed; at least two words and 12 characters.
#[must_use]
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for at in 0..bytes.len() {
            let ends = matches!(bytes[at], b'.' | b'?' | b'!')
                && bytes.get(at + 1).is_some_and(|next| *next == b' ');
            if ends || at + 1 == bytes.len() {
                let piece = line[start..=at].trim();
                if piece.len() >= 12 && piece.split_whitespace().nth(1).is_some() {
                    out.push(piece);
                }
                start = at + 1;
            }
        }
    }
    out
}

/// The first `num_docs` distinct sentences of the default year (grown when it is too
/// small) and `num_queries` queries of each kind from the sentences after them.
#[must_use]
pub fn corpus(num_docs: usize, num_queries: usize) -> Corpus {
    let mut spec = YearSpec::default();
    loop {
        let events = generate(&spec);
        let num_events = events.len();
        let mut seen: HashSet<String> = HashSet::new();
        let mut docs = Vec::with_capacity(num_docs);
        let mut held_out: Vec<(&'static str, String)> = Vec::new();
        'events: for event in &events {
            if matches!(event.kind, "session_start" | "session_end") {
                continue;
            }
            for sentence in sentences(&event.text) {
                if !seen.insert(sentence.to_owned()) {
                    continue;
                }
                if docs.len() < num_docs {
                    docs.push(CorpusDoc {
                        project: event.project,
                        session: event.session,
                        timestamp_ms: event.timestamp_ms,
                        text: sentence.to_owned(),
                    });
                } else if held_out.len() < HELD_OUT_SENTENCES {
                    held_out.push((event.project, sentence.to_owned()));
                } else {
                    break 'events;
                }
            }
        }
        if docs.len() < num_docs || held_out.len() < HELD_OUT_SENTENCES.min(num_queries * 4) {
            spec.events += spec.events / 2;
            continue;
        }
        let mut rng = Rng::new(QUESTION_SEED);
        let mut queries = Vec::with_capacity(num_queries * 2);
        let mut asked: HashSet<String> = HashSet::new();
        while queries.len() < num_queries {
            let (project, sentence) = rng.pick(&held_out);
            let Some(text) = question_from(&mut rng, sentence, queries.len()) else {
                continue;
            };
            if seen.contains(&text) || !asked.insert(text.clone()) {
                continue;
            }
            queries.push(CorpusQuery {
                kind: QueryKind::Question,
                project,
                text,
            });
        }
        let mut used: HashSet<usize> = HashSet::new();
        while queries.len() < num_queries * 2 {
            let at = (rng.next_u64() % held_out.len() as u64) as usize;
            if used.insert(at) {
                let (project, sentence) = &held_out[at];
                queries.push(CorpusQuery {
                    kind: QueryKind::Sentence,
                    project,
                    text: sentence.clone(),
                });
            }
        }
        return Corpus {
            docs,
            queries,
            num_events,
        };
    }
}

/// 64-bit FNV-1a, for cache keys (stable across Rust versions, unlike `DefaultHasher`).
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// Adds a string and a separator.
    pub fn write_str(&mut self, text: &str) {
        self.write(text.as_bytes());
        self.write(&[0]);
    }

    /// The hash.
    #[must_use]
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// `target/bench-data` of this workspace (or `$CARGO_TARGET_DIR/bench-data`), or
/// `$VECTOR_BENCH_DATA`.
#[must_use]
pub fn bench_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("VECTOR_BENCH_DATA") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    target.join("bench-data")
}

/// The cache key of `texts` embedded with `config`'s model.
#[must_use]
pub fn embedding_key(texts: &[&str], config: &EmbedderConfig) -> u64 {
    let mut hash = Fnv::default();
    hash.write_str("memory-embed minilm f32le v1");
    hash.write_str(&config.model_dir.display().to_string());
    let model_len = fs::metadata(config.model_dir.join("model.onnx")).map_or(0, |m| m.len());
    hash.write(&model_len.to_le_bytes());
    hash.write(&(config.max_tokens as u64).to_le_bytes());
    hash.write(&(texts.len() as u64).to_le_bytes());
    for text in texts {
        hash.write_str(text);
    }
    hash.finish()
}

/// How [`embed_cached`] got its vectors.
#[derive(Clone, Debug)]
pub struct EmbedOutcome {
    /// `texts.len() × 384` values, one normalized vector per text, in order.
    pub vectors: Vec<f32>,
    /// The cache file.
    pub path: PathBuf,
    /// `None` when read from the cache; else how long embedding took.
    pub embedded_in: Option<Duration>,
}

/// The vectors of `texts`: from `bench_data_dir()/<name>-<n>-<key>.f32` when there,
/// else embedded (all cores, 64 texts per ONNX Runtime call, progress on stderr) and
/// written there.
///
/// # Errors
/// A model that does not load or fails, or a cache that cannot be written.
pub fn embed_cached(
    name: &str,
    texts: &[&str],
    config: &EmbedderConfig,
) -> anyhow::Result<EmbedOutcome> {
    let key = embedding_key(texts, config);
    let dir = bench_data_dir();
    let path = dir.join(format!("{name}-{}-{key:016x}.f32", texts.len()));
    let expected = texts.len() * MINILM_DIMS * 4;
    if let Ok(mut file) = fs::File::open(&path)
        && file.metadata().is_ok_and(|m| m.len() == expected as u64)
    {
        let mut bytes = Vec::with_capacity(expected);
        file.read_to_end(&mut bytes)?;
        let vectors = bytes
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect();
        return Ok(EmbedOutcome {
            vectors,
            path,
            embedded_in: None,
        });
    }
    let mut config = config.clone();
    config.intra_threads = None;
    let mut embedder = Embedder::load(&config)?;
    let started = Instant::now();
    let mut vectors = Vec::with_capacity(texts.len() * MINILM_DIMS);
    for (number, chunk) in texts.chunks(2_048).enumerate() {
        for vector in embedder.embed(chunk)? {
            vectors.extend_from_slice(&vector);
        }
        let done = (number * 2_048 + chunk.len()).min(texts.len());
        if number % 5 == 4 || done == texts.len() {
            eprintln!(
                "embedded {done}/{} texts in {:.0} s",
                texts.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    let embedded_in = started.elapsed();
    fs::create_dir_all(&dir)?;
    let temporary = path.with_extension("f32.tmp");
    {
        let mut out = std::io::BufWriter::new(fs::File::create(&temporary)?);
        for value in &vectors {
            out.write_all(&value.to_le_bytes())?;
        }
        out.flush()?;
    }
    fs::rename(&temporary, &path)?;
    Ok(EmbedOutcome {
        vectors,
        path,
        embedded_in: Some(embedded_in),
    })
}

/// Which project each document is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProjectMode {
    /// All in [`ONE_PROJECT`]: every search may match every document (the approximate
    /// search's hardest case, and a single-project install).
    One,
    /// The year's four projects (40/25/20/15 %); a query searches its own project.
    Year,
}

impl ProjectMode {
    /// The project of a document or query of `project`.
    #[must_use]
    pub fn project(self, project: &'static str) -> &'static str {
        match self {
            ProjectMode::One => ONE_PROJECT,
            ProjectMode::Year => project,
        }
    }

    /// `one` or `year`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectMode::One => "one",
            ProjectMode::Year => "year",
        }
    }

    /// The filter of a query of `project`.
    #[must_use]
    pub fn filter(self, project: &'static str) -> DocSelector {
        DocSelector::in_project(self.project(project))
    }
}

/// Bumped when the way [`build_like_indexer`] builds an index changes.
const INDEX_CACHE_VERSION: &str = "vector-bench index v2";
/// The file of a kept index that holds its key.
const INDEX_CACHE_MARKER: &str = "BENCH_KEY";

/// Where the index of the first `size` documents (vectors of cache key `vectors_key`,
/// built by [`build_like_indexer`] with `config` and `mode`) is kept, and its key: the
/// criterion bench opens it instead of spending minutes building graphs, and
/// `vector_quality` builds there. Only what shapes the built index enters the key (dims,
/// seal threshold, merge factor, `ef_construction`, seed): the search-time settings
/// (`ef_search`, exact-scan and parallel-search thresholds) apply when it is opened.
#[must_use]
pub fn index_cache(
    vectors_key: u64,
    size: usize,
    config: &VectorConfig,
    mode: ProjectMode,
) -> (PathBuf, String) {
    let mut hash = Fnv::default();
    hash.write_str(INDEX_CACHE_VERSION);
    hash.write_str(&format!(
        "dims {} seal {} merge {} ef_construction {} seed {}",
        config.dims,
        config.seal_threshold,
        config.merge_factor,
        config.ef_construction,
        config.seed
    ));
    hash.write_str(mode.as_str());
    hash.write(&vectors_key.to_le_bytes());
    hash.write(&(size as u64).to_le_bytes());
    let key = format!("{:016x}", hash.finish());
    let dir = bench_data_dir().join(format!("vector-index-{}-{size}-{key}", mode.as_str()));
    (dir, key)
}

/// Whether `dir` holds a complete index of `key` ([`index_cache`]).
#[must_use]
pub fn index_cached(dir: &Path, key: &str) -> bool {
    fs::read_to_string(dir.join(INDEX_CACHE_MARKER)).is_ok_and(|found| found == key)
}

/// Marks `dir` as a complete index of `key`.
///
/// # Errors
/// When the marker cannot be written.
pub fn mark_index_cached(dir: &Path, key: &str) -> std::io::Result<()> {
    fs::write(dir.join(INDEX_CACHE_MARKER), key)
}

/// Document `i`'s id.
#[must_use]
pub fn doc_id(i: usize) -> String {
    format!("d{i:06}")
}

/// Document `i` as the index takes it.
#[must_use]
pub fn vector_doc(i: usize, doc: &CorpusDoc, vector: &[f32], mode: ProjectMode) -> VectorDoc {
    VectorDoc {
        doc_type: DocType::Event,
        doc_id: doc_id(i),
        project_id: mode.project(doc.project).to_owned(),
        session_id: Some(format!("{}-session-{:05}", doc.project, doc.session)),
        level: None,
        timestamp_ms: doc.timestamp_ms,
        vector: vector.to_vec(),
    }
}

/// One seal or merge of a build.
#[derive(Clone, Debug)]
pub struct JobTiming {
    /// Documents in the segment built.
    pub num_docs: usize,
    /// Segments merged (0 for a seal).
    pub num_inputs: usize,
    /// `SealJob::build` / `MergeJob::build`: the HNSW graph and the file's bytes.
    pub build: Duration,
    /// `VectorIndex::install`: the file written and fsynced, bookkeeping.
    pub install: Duration,
}

/// What [`build_like_indexer`] did.
#[derive(Clone, Debug, Default)]
pub struct BuildReport {
    /// Everything, from the first upsert to the end of the final commit.
    pub total: Duration,
    /// All upserts.
    pub upserts: Duration,
    /// Seals, in order.
    pub seals: Vec<JobTiming>,
    /// Merges, in order.
    pub merges: Vec<JobTiming>,
    /// All commits.
    pub commits: Duration,
    /// Number of commits.
    pub num_commits: usize,
}

/// Writes `docs` (with `vectors`, 384 values each) into `index` the way the vector
/// indexer does: upserts in batches of [`INDEXER_BATCH`]; after each batch, when the
/// buffer holds `seal_threshold` documents, a seal (prepare, build, install), then at
/// most one merge, then a commit; a final commit. Every job is built on the calling
/// thread (the graph build itself uses rayon's pool, all cores), as the indexer's
/// blocking task does.
///
/// # Errors
/// Whatever the index returns.
pub fn build_like_indexer(
    index: &mut VectorIndex,
    docs: &[CorpusDoc],
    vectors: &[f32],
    mode: ProjectMode,
) -> anyhow::Result<BuildReport> {
    let mut report = BuildReport::default();
    let started = Instant::now();
    let commit = |index: &mut VectorIndex, report: &mut BuildReport, at: usize| {
        let begun = Instant::now();
        let result = index.commit(&format!("vector:{at}"));
        report.commits += begun.elapsed();
        report.num_commits += 1;
        result
    };
    for (batch_number, batch) in docs.chunks(INDEXER_BATCH).enumerate() {
        let first = batch_number * INDEXER_BATCH;
        let begun = Instant::now();
        for (offset, doc) in batch.iter().enumerate() {
            let i = first + offset;
            let vector = &vectors[i * MINILM_DIMS..(i + 1) * MINILM_DIMS];
            index.upsert(vector_doc(i, doc, vector, mode))?;
        }
        report.upserts += begun.elapsed();
        let Some(job) = index.prepare_seal() else {
            continue;
        };
        let num_docs = job.num_docs();
        report
            .seals
            .push(install_timed(index, job.build()?, (num_docs, 0))?);
        if let Some(merge) = index.prepare_merge() {
            let sizes = (merge.num_docs(), merge.input_segment_ids().len());
            report
                .merges
                .push(install_timed(index, merge.build()?, sizes)?);
        }
        commit(index, &mut report, first + batch.len())?;
    }
    commit(index, &mut report, docs.len())?;
    report.total = started.elapsed();
    Ok(report)
}

/// Installs a built seal or merge of `(num_docs, num_inputs)` and times it.
fn install_timed(
    index: &mut VectorIndex,
    built: BuiltSegment,
    (num_docs, num_inputs): (usize, usize),
) -> anyhow::Result<JobTiming> {
    let build = built.build_duration();
    let begun = Instant::now();
    index.install(built)?;
    Ok(JobTiming {
        num_docs,
        num_inputs,
        build,
        install: begun.elapsed(),
    })
}

/// The exact top `limit` of `query` among the first `num_docs` documents that `filter`
/// of `mode` lets through: `(score, doc index)`, best first, ties by id as the index
/// breaks them.
#[must_use]
pub fn exact_top(
    query: &[f32],
    vectors: &[f32],
    docs: &[CorpusDoc],
    project: Option<&str>,
    limit: usize,
) -> Vec<(f32, usize)> {
    let mut scored: Vec<(f32, usize)> = docs
        .iter()
        .enumerate()
        .filter(|(_, doc)| project.is_none_or(|project| doc.project == project))
        .map(|(i, _)| {
            let vector = &vectors[i * MINILM_DIMS..(i + 1) * MINILM_DIMS];
            (memory_vector::dot(query, vector), i)
        })
        .collect();
    let by_score = |left: &(f32, usize), right: &(f32, usize)| {
        right.0.total_cmp(&left.0).then(left.1.cmp(&right.1))
    };
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, by_score);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(by_score);
    scored
}

/// `VmRSS` and `VmHWM` of this process, KiB, from `/proc/self/status`.
#[must_use]
pub fn rss_kib() -> (u64, u64) {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_split_lines_and_sentences() {
        assert_eq!(
            sentences("I fixed the bug. All tests pass now!\nHTTP 401 bad token\nok"),
            vec![
                "I fixed the bug.",
                "All tests pass now!",
                "HTTP 401 bad token"
            ]
        );
        assert_eq!(
            sentences("v1.2.3 is out. e.g. this"),
            vec!["v1.2.3 is out."]
        );
    }
}
