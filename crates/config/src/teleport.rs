//! `[teleport]`: the accelerator indexes (BM25 and vector) behind `search` and how their lists are fused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `[teleport]`: the accelerator indexes behind `search`. They are projections of the
/// log, optional and disposable: with them off, missing or broken, `search` answers from
/// the time table of contents. Changes take effect at the next start (no hot reload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeleportConfig {
    /// Master switch of every teleport index. Default true.
    pub enabled: bool,
    /// The BM25 keyword index.
    pub bm25: Bm25Config,
    /// The vector (semantic) index.
    pub vector: VectorIndexConfig,
    /// How `search` fuses the keyword and vector lists of its phrases.
    pub fusion: FusionMethod,
    /// The weights of `fusion = "salience"`.
    pub ranking: RankingConfig,
    /// Whether `search` expands a query offline into key-term and entity phrases when
    /// the caller passes no `phrases`. Default false: measured, it lowered recall on the
    /// LoCoMo dev slice (docs/benchmarks.md).
    pub expand_query: bool,
    /// Whether `search` asks the `[llm]` model for search phrases (the search-first
    /// spec) when the caller passes none; callers can ask per search with `phrases:
    /// "llm"`. Default false: it adds the model's latency (up to
    /// `llm_phrases_timeout_ms`) to every search.
    pub llm_phrases: bool,
    /// The hard time budget of the model's phrases, milliseconds; past it the search
    /// goes on without them. Default 1500.
    pub llm_phrases_timeout_ms: u64,
}

impl Default for TeleportConfig {
    fn default() -> Self {
        TeleportConfig {
            enabled: true,
            bm25: Bm25Config::default(),
            vector: VectorIndexConfig::default(),
            fusion: FusionMethod::default(),
            ranking: RankingConfig::default(),
            expand_query: false,
            llm_phrases: false,
            llm_phrases_timeout_ms: 1_500,
        }
    }
}

/// `[teleport] fusion`: how ranked lists become one (docs/benchmarks.md compares them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMethod {
    /// Scores relative to each list's best, weighted by tier and phrase (default).
    #[default]
    Score,
    /// Reciprocal Rank Fusion with k = 60.
    Rrf,
    /// The hybrid search spec's ranking: semantic, keyword, salience and recency
    /// terms weighted by `[teleport.ranking]`, times the idea's sector boost.
    Salience,
}

/// `[teleport.ranking]`: the weights of `fusion = "salience"` (the hybrid search spec's
/// defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RankingConfig {
    /// Weight of the cosine similarity. Default 0.4.
    pub semantic: f32,
    /// Weight of the BM25 score (divided by 10, capped at 1). Default 0.25.
    pub keyword: f32,
    /// Weight of the idea's salience. Default 0.2.
    pub salience: f32,
    /// Weight of recency, `exp(-recency_decay_per_day · days)`. Default 0.15.
    pub recency: f32,
    /// Recency decay per day. Default 0.05.
    pub recency_decay_per_day: f32,
    /// Boosts of the sectors reflective, semantic, procedural, emotional, episodic.
    /// Default 1.2, 1.1, 1.0, 0.9, 0.8.
    pub sector_boosts: [f32; 5],
    /// Salience of evidence no idea stands for (raw turns, grips, TOC nodes). Default 0.3.
    pub default_salience: f32,
}

impl Default for RankingConfig {
    fn default() -> Self {
        RankingConfig {
            semantic: 0.4,
            keyword: 0.25,
            salience: 0.2,
            recency: 0.15,
            recency_decay_per_day: 0.05,
            sector_boosts: [1.2, 1.1, 1.0, 0.9, 0.8],
            default_salience: 0.3,
        }
    }
}

impl TeleportConfig {
    /// Whether the BM25 index runs: both switches on.
    #[must_use]
    pub fn bm25_enabled(&self) -> bool {
        self.enabled && self.bm25.enabled
    }

    /// Whether the vector index runs: both switches on.
    #[must_use]
    pub fn vector_enabled(&self) -> bool {
        self.enabled && self.vector.enabled
    }
}

/// `[teleport.vector]`: the vector index — all-MiniLM-L6-v2 embeddings of TOC nodes,
/// grips and raw events, searched by meaning and fused with BM25 in `search`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VectorIndexConfig {
    /// Whether the vector index is built and searched. Default true. Embedding a large
    /// backfill takes a while on a small machine (docs/benchmarks.md); meanwhile
    /// `search` is hybrid over what is embedded and BM25 covers the rest.
    pub enabled: bool,
    /// Where the index lives; a relative path is under the data dir. Default
    /// `<data dir>/vector-index`.
    pub index_path: Option<PathBuf>,
    /// The model directory (the model files below and the tokenizer files). Default:
    /// the `MEMORY_EMBED_MODEL_DIR` variable (`.tools/env`), else this checkout's
    /// `.tools/`.
    pub model_dir: Option<PathBuf>,
    /// The ONNX file in `model_dir` documents are embedded with. Default
    /// `model_int8.onnx`, the 8-bit copy of the float32 `model.onnx`: 70–90 MiB less
    /// memory and 10–15 % faster embedding, with retrieval as good as float32's on the
    /// LoCoMo dev slice and three knowledge-update sets (docs/benchmarks.md, "The 8-bit
    /// document model as the default"); an 8-bit model embeds one text per call, so a
    /// vector never depends on its batch-mates. Vectors of two models are not
    /// comparable: an index embedded with another file (an index built before this
    /// default, with `model.onnx`) is emptied at the next start and embedded again from
    /// the log (the commit records the model); `model.onnx` keeps float32.
    pub model_file: String,
    /// The ONNX file in `model_dir` questions are embedded with. Default
    /// `model_int8.onnx`, the 8-bit copy of the float32 model `scripts/setup.sh`
    /// writes: a question is embedded on every search's critical path, and the copy
    /// takes about 60 % of the time (docs/benchmarks.md). Set it to `model.onnx` for
    /// float32 questions, or to `model_file` when pointing `model_dir` at another model.
    pub query_model_file: String,
    /// `libonnxruntime.so`. Default: the `MEMORY_ORT_DYLIB` variable, else this
    /// checkout's `.tools/`.
    pub ort_dylib_path: Option<PathBuf>,
    /// Embed raw events too, not only TOC nodes and grips. Default true.
    pub index_events: bool,
    /// Documents per sealed HNSW segment. Default 2000.
    pub seal_threshold: usize,
    /// Longest time embedded documents wait for a commit while busy, seconds. Default 60.
    pub commit_interval_secs: u64,
    /// ONNX Runtime threads of the indexing embedder. Default: one under `serve`, so
    /// queries keep a core while a backlog is embedded; every core for `ingest --file`
    /// and `admin rebuild-index`, which serve no queries.
    pub index_threads: Option<usize>,
    /// Candidates one HNSW graph search keeps (instant-distance's `ef_search`): higher
    /// finds more of the true nearest neighbours and takes longer. It applies to every
    /// segment when the index opens, so a change needs a restart, not a rebuild.
    /// Default 200 (docs/benchmarks.md, "Vector tier at 100 000 documents").
    pub ef_search: usize,
    /// ONNX Runtime threads of the query embedder. Default 1: on two cores a second
    /// thread embeds a question faster (7 ms against 9) but ONNX Runtime's spinning
    /// workers then slow the vector search that follows (8.6 ms against 5.2), so a
    /// hybrid search is slower overall (docs/benchmarks.md). More cores change that.
    pub query_threads: usize,
    /// Cosine similarity below which a vector hit is no hit (the search-first spec's
    /// floor, 0.40 for MiniLM): a search on a topic the memory never saw returns nothing
    /// rather than its nearest strangers. 0 keeps every hit. Default: see
    /// docs/benchmarks.md, "Cosine floor".
    pub min_similarity: f32,
}

/// The default of `[teleport.vector] min_similarity`.
pub const DEFAULT_MIN_SIMILARITY: f32 = 0.30;

impl Default for VectorIndexConfig {
    fn default() -> Self {
        VectorIndexConfig {
            enabled: true,
            index_path: None,
            model_dir: None,
            model_file: "model_int8.onnx".to_owned(),
            query_model_file: "model_int8.onnx".to_owned(),
            ort_dylib_path: None,
            index_events: true,
            seal_threshold: 2_000,
            commit_interval_secs: 60,
            ef_search: 200,
            index_threads: None,
            query_threads: 1,
            min_similarity: DEFAULT_MIN_SIMILARITY,
        }
    }
}

impl VectorIndexConfig {
    /// The index directory: `index_path` (relative to `data_dir` when relative), else
    /// `<data_dir>/vector-index`.
    #[must_use]
    pub fn resolve_index_path(&self, data_dir: &Path) -> PathBuf {
        match &self.index_path {
            Some(path) if path.is_absolute() => path.clone(),
            Some(path) => data_dir.join(path),
            None => data_dir.join("vector-index"),
        }
    }
}

/// `[teleport.bm25]`: the tantivy index of TOC nodes, grips and raw events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bm25Config {
    /// Whether the BM25 index is built and searched. Default true.
    pub enabled: bool,
    /// Where the index lives; a relative path is under the data dir. Default
    /// `<data dir>/bm25-index`.
    pub index_path: Option<PathBuf>,
    /// Memory of the index writer, MiB; tantivy needs at least 15. Default 50.
    pub memory_budget_mb: u64,
    /// Longest time indexed changes wait for a commit while the indexer is busy, seconds.
    /// Whenever it catches up with the log it commits at once (at most once a second),
    /// so a fresh event is searchable within a second or two. Default 60.
    pub commit_interval_secs: u64,
    /// Index raw events too, not only TOC nodes and grips, so detail no summary kept is
    /// still found. Default true (docs/benchmarks.md has the measurement).
    pub index_events: bool,
    /// `search` treats the index as stale, and answers from the time table of contents,
    /// when it has been behind the log for longer than this, seconds. Default 30.
    pub stale_after_secs: u64,
    /// When lifecycle pruning runs: a five-field cron expression in `toc.timezone`.
    /// Default `0 3 * * *` (03:00 daily).
    pub prune_schedule: String,
    /// How long documents stay in the index, per kind.
    pub retention_days: RetentionDays,
}

impl Default for Bm25Config {
    fn default() -> Self {
        Bm25Config {
            enabled: true,
            index_path: None,
            memory_budget_mb: 50,
            commit_interval_secs: 60,
            index_events: true,
            stale_after_secs: 30,
            prune_schedule: "0 3 * * *".into(),
            retention_days: RetentionDays::default(),
        }
    }
}

impl Bm25Config {
    /// The index directory: `index_path` (relative to `data_dir` when relative), else
    /// `<data_dir>/bm25-index`.
    #[must_use]
    pub fn resolve_index_path(&self, data_dir: &Path) -> PathBuf {
        match &self.index_path {
            Some(path) if path.is_absolute() => path.clone(),
            Some(path) => data_dir.join(path),
            None => data_dir.join("bm25-index"),
        }
    }
}

/// `[teleport.bm25.retention_days]`: lifecycle pruning. Documents older than this many
/// days are removed from the BM25 index by the scheduled prune (never from the log or
/// the TOC, which keep everything); 0 keeps them forever. Fine-grained documents go
/// first because their day, week and month rollups stay searchable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionDays {
    /// Segment nodes. Default 30.
    pub segment: u32,
    /// Grips (they belong to segments). Default 30.
    pub grip: u32,
    /// Raw events. Default 30.
    pub event: u32,
    /// Day nodes. Default 180.
    pub day: u32,
    /// Week nodes. Default 1825 (5 years).
    pub week: u32,
    /// Month nodes. Default 0 (kept).
    pub month: u32,
    /// Year nodes. Default 0 (kept).
    pub year: u32,
}

impl Default for RetentionDays {
    fn default() -> Self {
        RetentionDays {
            segment: 30,
            grip: 30,
            event: 30,
            day: 180,
            week: 1_825,
            month: 0,
            year: 0,
        }
    }
}
