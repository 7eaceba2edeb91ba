//! The configuration tree. Each field's doc comment states its meaning, default and unit.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::error::{ConfigError, Result};

/// Prefix of environment overrides.
pub const ENV_PREFIX: &str = "AGENT_MEMORY_";

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the store lives. Default: the OS data dir (`$XDG_DATA_HOME/agent-memory`,
    /// usually `~/.local/share/agent-memory`). The CLI's `--data-dir` wins over this.
    pub data_dir: Option<PathBuf>,
    /// The event log.
    pub store: StoreConfig,
    /// Validation limits and group commit.
    pub ingest: IngestConfig,
    /// The NATS connection and subjects.
    pub nats: NatsConfig,
    /// Outbox consumers (every projection actor).
    pub consumers: ConsumerConfig,
    /// The time table of contents.
    pub toc: TocConfig,
    /// The optional LLM summarizer.
    pub llm: LlmConfig,
    /// The accelerator indexes (BM25 now, vectors later) behind `search`.
    pub teleport: TeleportConfig,
    /// Logs, traces and metrics.
    pub telemetry: TelemetryConfig,
}

/// When an acknowledged event counts as durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DurabilityConfig {
    /// fsync before every acknowledgement (default): survives power loss.
    #[default]
    SyncAll,
    /// fdatasync before every acknowledgement.
    SyncData,
    /// OS buffers only: survives kill -9, not power loss.
    Buffer,
}

/// `[store]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sync_all` (default), `sync_data` or `buffer`.
    pub durability: DurabilityConfig,
    /// Block cache size in MiB. Default 64.
    pub cache_size_mb: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durability: DurabilityConfig::SyncAll,
            cache_size_mb: 64,
        }
    }
}

/// `[ingest]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IngestConfig {
    /// Largest accepted payload (one request, message or file line), bytes. Default 1048576.
    pub max_payload_bytes: usize,
    /// Largest accepted single event, bytes. Default 1048576.
    pub max_event_bytes: usize,
    /// How far ahead of this machine's clock a timestamp may be, seconds. Default 86400.
    pub max_future_skew_secs: u64,
    /// Most events one group commit writes; larger queues are split. Default 10000.
    pub max_batch_events: usize,
    /// Most events waiting for a commit before new requests are refused with
    /// `unavailable` (backpressure instead of unbounded memory). Default 200000.
    pub max_pending_events: usize,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            max_payload_bytes: 1 << 20,
            max_event_bytes: 1 << 20,
            max_future_skew_secs: 86_400,
            max_batch_events: 10_000,
            max_pending_events: 200_000,
        }
    }
}

/// `[nats]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsConfig {
    /// Server URL(s), comma-separated. Default `nats://127.0.0.1:4222`.
    pub url: String,
    /// Client name shown by the server. Default `agent-memory`.
    pub client_name: String,
    /// Token authentication. Default none.
    pub token: Option<String>,
    /// User for user/password authentication. Default none.
    pub user: Option<String>,
    /// Password for user/password authentication. Default none.
    pub password: Option<String>,
    /// NKey seed (`SU…`) for nkey authentication. Default none.
    pub nkey_seed: Option<String>,
    /// Path of a `.creds` file (JWT + nkey). Default none.
    pub credentials_file: Option<PathBuf>,
    /// Require TLS. Default false (TLS is still used when the URL is `tls://`).
    pub tls_required: bool,
    /// CA certificate (PEM) to trust. Default none (system roots).
    pub tls_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS. Default none.
    pub tls_cert_file: Option<PathBuf>,
    /// Client key (PEM) for mutual TLS. Default none.
    pub tls_key_file: Option<PathBuf>,
    /// Queue group the daemon's subscriptions join, so replicas share the load.
    /// Default `agent-memory`.
    pub queue_group: String,
    /// Subject prefix of request/reply ingest; the project is the next token.
    /// Default `memory.ingest`.
    pub ingest_subject_prefix: String,
    /// Subject prefix of queries. Default `memory.query`.
    pub query_subject_prefix: String,
    /// Timeout of a CLI request to a running daemon, seconds. Default 10.
    pub request_timeout_secs: u64,
    /// JetStream ingest.
    pub jetstream: JetStreamConfig,
}

impl Default for NatsConfig {
    fn default() -> Self {
        NatsConfig {
            url: "nats://127.0.0.1:4222".into(),
            client_name: "agent-memory".into(),
            token: None,
            user: None,
            password: None,
            nkey_seed: None,
            credentials_file: None,
            tls_required: false,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            queue_group: "agent-memory".into(),
            ingest_subject_prefix: "memory.ingest".into(),
            query_subject_prefix: "memory.query".into(),
            request_timeout_secs: 10,
            jetstream: JetStreamConfig::default(),
        }
    }
}

/// `[nats.jetstream]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JetStreamConfig {
    /// Consume the durable stream. Default true.
    pub enabled: bool,
    /// Stream name. Default `MEMORY_EVENTS`.
    pub stream: String,
    /// Subjects the stream captures; producers publish one event per message to
    /// `memory.events.<project>`. Default `["memory.events.>"]`.
    pub subjects: Vec<String>,
    /// Create the stream when it does not exist. Default true.
    pub create_stream: bool,
    /// Durable consumer name; replicas sharing it share the work. Default `memory-daemon`.
    pub durable_name: String,
    /// Messages fetched per pull. Default 500.
    pub fetch_batch: usize,
    /// Unacknowledged messages the server allows in flight. Default 10000.
    pub max_ack_pending: i64,
    /// Seconds before an unacknowledged message is redelivered. Default 30.
    pub ack_wait_secs: u64,
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        JetStreamConfig {
            enabled: true,
            stream: "MEMORY_EVENTS".into(),
            subjects: vec!["memory.events.>".into()],
            create_stream: true,
            durable_name: "memory-daemon".into(),
            fetch_batch: 500,
            max_ack_pending: 10_000,
            ack_wait_secs: 30,
        }
    }
}

/// `[consumers]`: how every outbox consumer reads, retries and parks entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsumerConfig {
    /// Entries read per step. Default 256.
    pub batch_size: usize,
    /// Attempts at one entry before it is parked in the dead-letter partition. Default 5.
    pub max_attempts: u32,
    /// First retry delay, milliseconds; doubles per attempt. Default 100.
    pub retry_base_ms: u64,
    /// Longest retry delay, milliseconds. Default 30000.
    pub retry_max_ms: u64,
    /// Safety-net poll when no append notification arrives, milliseconds. Default 1000.
    pub poll_interval_ms: u64,
    /// After catching up, wait this long before applying more, so a trickle of appends
    /// is applied in batches, milliseconds. Default 20.
    pub linger_ms: u64,
    /// First restart delay of a crashed actor, milliseconds; doubles per crash. Default 100.
    pub restart_base_ms: u64,
    /// Longest restart delay, milliseconds. Default 30000.
    pub restart_max_ms: u64,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            batch_size: 256,
            max_attempts: 5,
            retry_base_ms: 100,
            retry_max_ms: 30_000,
            poll_interval_ms: 1_000,
            linger_ms: 20,
            restart_base_ms: 100,
            restart_max_ms: 30_000,
        }
    }
}

/// `[toc]`: the time table of contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TocConfig {
    /// IANA time zone whose local dates bound days, weeks, months and years, e.g.
    /// `Europe/Berlin`. Default `UTC`.
    pub timezone: String,
    /// A session's segment closes when the next event comes this much later, or after
    /// this much wall-clock silence, seconds. Default 1800.
    pub segment_gap_secs: u64,
    /// A segment closes at this token estimate (characters / 4). Default 4000.
    pub segment_max_tokens: u64,
    /// Tokens of a closed segment's tail carried into the next as context. Default 400.
    pub segment_overlap_tokens: u64,
    /// Most grips (verbatim excerpts) kept per segment. Default 8.
    pub grips_per_segment: usize,
    /// Longest grip excerpt, characters. Default 280.
    pub grip_max_chars: usize,
    /// Most events one index-free (TOC tier) search reads: when a time range holds
    /// more, only the segments whose summaries match best are read: reading an event
    /// costs a few microseconds, so 5000 keeps a search near 100 ms on two cores
    /// (docs/benchmarks.md). Default 5000.
    pub search_scan_budget_events: usize,
}

impl Default for TocConfig {
    fn default() -> Self {
        TocConfig {
            timezone: "UTC".into(),
            segment_gap_secs: 1_800,
            segment_max_tokens: 4_000,
            segment_overlap_tokens: 400,
            grips_per_segment: 8,
            grip_max_chars: 280,
            search_scan_budget_events: 5_000,
        }
    }
}

impl TocConfig {
    /// The configured zone.
    ///
    /// # Errors
    /// When `timezone` is not an IANA zone name.
    pub fn tz(&self) -> Result<chrono_tz::Tz> {
        self.timezone
            .parse::<chrono_tz::Tz>()
            .map_err(|_| ConfigError::Invalid {
                key: "toc.timezone",
                message: format!(
                    "{:?} is not an IANA time zone such as \"UTC\" or \"Europe/Berlin\"",
                    self.timezone
                ),
            })
    }
}

/// `[llm]`: the optional LLM summarizer of TOC nodes, over any OpenAI-compatible chat
/// completions API (OpenAI, Ollama, vLLM, llama.cpp server). When disabled, or for any
/// item the model cannot summarize in time, the extractive summarizer writes the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmConfig {
    /// Summarize TOC nodes with the model. Default false (extractive summaries only).
    pub enabled: bool,
    /// Base URL of the OpenAI-compatible API, up to and including `/v1`; requests go to
    /// `<base_url>/chat/completions`. Default `http://127.0.0.1:11434/v1` (Ollama).
    pub base_url: String,
    /// Model name sent with every request. Default `llama3.1:8b`.
    pub model: String,
    /// API key sent as `Authorization: Bearer <key>`. A secret: `config show` masks it.
    /// Default none (then `api_key_env` is read; local servers need no key).
    pub api_key: Option<String>,
    /// Environment variable read at start for the API key when `api_key` is unset.
    /// Default `OPENAI_API_KEY`.
    pub api_key_env: String,
    /// Time limit of one request (connect, send, answer), milliseconds. Default 20000.
    pub timeout_ms: u64,
    /// Retries of a request after a connection error, timeout, 429 or 5xx answer (never
    /// after another 4xx), with exponential backoff. Default 2.
    pub max_retries: u32,
    /// Most tokens the model may generate per answer. Default 400.
    pub max_tokens: u32,
    /// Sampling temperature, 0 to 2; 0 is the most repeatable. Default 0.0.
    pub temperature: f64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            enabled: false,
            base_url: "http://127.0.0.1:11434/v1".into(),
            model: "llama3.1:8b".into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_ms: 20_000,
            max_retries: 2,
            max_tokens: 400,
            temperature: 0.0,
        }
    }
}

impl LlmConfig {
    /// The API key to send: `api_key` when set, else the non-empty value of the
    /// environment variable named by `api_key_env`, else `None`.
    #[must_use]
    pub fn resolve_api_key(&self) -> Option<String> {
        if let Some(api_key) = &self.api_key {
            return Some(api_key.clone());
        }
        if self.api_key_env.is_empty() {
            return None;
        }
        std::env::var(&self.api_key_env)
            .ok()
            .filter(|value| !value.trim().is_empty())
    }
}

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
    /// Whether `search` expands a query offline into key-term and entity phrases when
    /// the caller passes no `phrases`. Default false: measured, it lowered recall on the
    /// LoCoMo dev slice (docs/benchmarks.md).
    pub expand_query: bool,
}

impl Default for TeleportConfig {
    fn default() -> Self {
        TeleportConfig {
            enabled: true,
            bm25: Bm25Config::default(),
            vector: VectorIndexConfig::default(),
            fusion: FusionMethod::default(),
            expand_query: false,
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
    /// The ONNX file in `model_dir` documents are embedded with. Default `model.onnx`
    /// (float32). Changing it makes the stored vectors incomparable with new ones:
    /// rebuild the index (`admin rebuild-index --index vector`).
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
}

impl Default for VectorIndexConfig {
    fn default() -> Self {
        VectorIndexConfig {
            enabled: true,
            index_path: None,
            model_dir: None,
            model_file: "model.onnx".to_owned(),
            query_model_file: "model_int8.onnx".to_owned(),
            ort_dylib_path: None,
            index_events: true,
            seal_threshold: 2_000,
            commit_interval_secs: 60,
            ef_search: 200,
            index_threads: None,
            query_threads: 1,
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

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormatConfig {
    /// Human-readable (default).
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `[telemetry]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Address of `/metrics`, `/healthz`, `/readyz` under `serve`. Default `127.0.0.1:9464`.
    pub metrics_listen: SocketAddr,
    /// Log filter (`RUST_LOG` syntax; `RUST_LOG` wins when set). Default `info`.
    pub log_filter: String,
    /// `text` (default) or `json`.
    pub log_format: LogFormatConfig,
    /// OTLP/HTTP traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`. Default none
    /// (no export).
    pub otlp_endpoint: Option<String>,
    /// `service.name` of exported spans. Default `agent-memory`.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            metrics_listen: SocketAddr::from(([127, 0, 0, 1], 9464)),
            log_filter: "info".into(),
            log_format: LogFormatConfig::Text,
            otlp_endpoint: None,
            service_name: "agent-memory".into(),
        }
    }
}

impl Config {
    /// Defaults, then `path` (or the user's `agent-memory/config.toml` when `path` is
    /// `None` and that file exists), then `AGENT_MEMORY_*` variables, validated.
    ///
    /// # Errors
    /// A missing explicit file, unknown keys, wrong types, or a value that breaks a rule.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        Config::load_from(path, Env::prefixed(ENV_PREFIX).split("__"))
    }

    fn load_from(path: Option<&Path>, env: Env) -> Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        match path {
            Some(path) if !path.exists() => {
                return Err(ConfigError::Missing {
                    path: path.to_path_buf(),
                });
            }
            Some(path) => figment = figment.merge(Toml::file_exact(path)),
            None => {
                if let Some(user_file) = Config::user_file().filter(|p| p.exists()) {
                    figment = figment.merge(Toml::file_exact(user_file));
                }
            }
        }
        let config: Config = figment.merge(env).extract()?;
        config.validate()?;
        Ok(config)
    }

    /// Parses TOML text alone (no environment), validated. For tests and tools.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn from_toml_str(text: &str) -> Result<Config> {
        let config: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()?;
        config.validate()?;
        Ok(config)
    }

    /// `$XDG_CONFIG_HOME/agent-memory/config.toml`.
    #[must_use]
    pub fn user_file() -> Option<PathBuf> {
        dirs::config_dir().map(|dir| dir.join("agent-memory").join("config.toml"))
    }

    /// The data dir: `cli` if given, else `data_dir`, else the OS data dir.
    #[must_use]
    pub fn resolve_data_dir(&self, cli: Option<&Path>) -> PathBuf {
        cli.map(Path::to_path_buf)
            .or_else(|| self.data_dir.clone())
            .or_else(|| dirs::data_dir().map(|dir| dir.join("agent-memory")))
            .unwrap_or_else(|| PathBuf::from(".agent-memory"))
    }

    /// Checks rules the types cannot express.
    ///
    /// # Errors
    /// The first broken rule, with its key.
    pub fn validate(&self) -> Result<()> {
        let invalid = |key: &'static str, message: &str| {
            Err(ConfigError::Invalid {
                key,
                message: message.to_owned(),
            })
        };
        if self.ingest.max_payload_bytes == 0 {
            return invalid("ingest.max_payload_bytes", "must be greater than 0");
        }
        if self.ingest.max_event_bytes == 0 {
            return invalid("ingest.max_event_bytes", "must be greater than 0");
        }
        if self.ingest.max_batch_events == 0 {
            return invalid("ingest.max_batch_events", "must be greater than 0");
        }
        if self.ingest.max_pending_events < self.ingest.max_batch_events {
            return invalid(
                "ingest.max_pending_events",
                "must be at least ingest.max_batch_events",
            );
        }
        if self.consumers.batch_size == 0 {
            return invalid("consumers.batch_size", "must be greater than 0");
        }
        if self.consumers.max_attempts == 0 {
            return invalid("consumers.max_attempts", "must be at least 1");
        }
        if self.consumers.retry_base_ms > self.consumers.retry_max_ms {
            return invalid(
                "consumers.retry_base_ms",
                "must not exceed consumers.retry_max_ms",
            );
        }
        if self.consumers.restart_base_ms > self.consumers.restart_max_ms {
            return invalid(
                "consumers.restart_base_ms",
                "must not exceed consumers.restart_max_ms",
            );
        }
        self.toc.tz()?;
        if self.toc.segment_gap_secs == 0 {
            return invalid("toc.segment_gap_secs", "must be greater than 0");
        }
        if self.toc.segment_max_tokens == 0 {
            return invalid("toc.segment_max_tokens", "must be greater than 0");
        }
        if self.toc.grip_max_chars < 40 {
            return invalid("toc.grip_max_chars", "must be at least 40");
        }
        if self.toc.segment_overlap_tokens >= self.toc.segment_max_tokens {
            return invalid(
                "toc.segment_overlap_tokens",
                "must be less than toc.segment_max_tokens",
            );
        }
        let llm = &self.llm;
        if !(llm.base_url.starts_with("http://") || llm.base_url.starts_with("https://")) {
            return invalid("llm.base_url", "must be an http:// or https:// URL");
        }
        if llm.model.trim().is_empty() {
            return invalid("llm.model", "must not be empty");
        }
        if llm.timeout_ms == 0 {
            return invalid("llm.timeout_ms", "must be greater than 0");
        }
        if llm.max_tokens == 0 {
            return invalid("llm.max_tokens", "must be greater than 0");
        }
        if !(0.0..=2.0).contains(&llm.temperature) {
            return invalid("llm.temperature", "must be between 0 and 2");
        }
        let bm25 = &self.teleport.bm25;
        if bm25.memory_budget_mb < 15 {
            return invalid(
                "teleport.bm25.memory_budget_mb",
                "must be at least 15 (tantivy's smallest indexing arena)",
            );
        }
        if bm25.commit_interval_secs == 0 {
            return invalid(
                "teleport.bm25.commit_interval_secs",
                "must be greater than 0",
            );
        }
        if let Err(err) = bm25.prune_schedule.parse::<croner::Cron>() {
            return invalid(
                "teleport.bm25.prune_schedule",
                &format!("{:?} is not a cron expression: {err}", bm25.prune_schedule),
            );
        }
        if self.teleport.vector.seal_threshold == 0 {
            return invalid("teleport.vector.seal_threshold", "must be greater than 0");
        }
        if self.teleport.vector.ef_search == 0 {
            return invalid("teleport.vector.ef_search", "must be greater than 0");
        }
        if self.teleport.vector.index_threads == Some(0) {
            return invalid("teleport.vector.index_threads", "must be greater than 0");
        }
        if self.teleport.vector.query_threads == 0 {
            return invalid("teleport.vector.query_threads", "must be greater than 0");
        }
        for (key, file) in [
            (
                "teleport.vector.model_file",
                &self.teleport.vector.model_file,
            ),
            (
                "teleport.vector.query_model_file",
                &self.teleport.vector.query_model_file,
            ),
        ] {
            if file.trim().is_empty() {
                return invalid(key, "must name a file in model_dir");
            }
        }
        if self.teleport.vector.commit_interval_secs == 0 {
            return invalid(
                "teleport.vector.commit_interval_secs",
                "must be greater than 0",
            );
        }
        if self.nats.url.trim().is_empty() {
            return invalid("nats.url", "must not be empty");
        }
        for (key, prefix) in [
            (
                "nats.ingest_subject_prefix",
                &self.nats.ingest_subject_prefix,
            ),
            ("nats.query_subject_prefix", &self.nats.query_subject_prefix),
        ] {
            if prefix.is_empty() || prefix.contains(['*', '>', ' ']) || prefix.ends_with('.') {
                return invalid(
                    key,
                    "must be a literal subject without wildcards or a trailing dot",
                );
            }
        }
        if self.nats.user.is_some() != self.nats.password.is_some() {
            return invalid("nats.user", "user and password must be set together");
        }
        if self.nats.tls_cert_file.is_some() != self.nats.tls_key_file.is_some() {
            return invalid(
                "nats.tls_cert_file",
                "tls_cert_file and tls_key_file must be set together",
            );
        }
        let jetstream = &self.nats.jetstream;
        if jetstream.enabled {
            if jetstream.stream.is_empty() || jetstream.stream.contains(['.', '*', '>', ' ']) {
                return invalid(
                    "nats.jetstream.stream",
                    "must be a name without '.', '*', '>' or spaces",
                );
            }
            if jetstream.subjects.is_empty() {
                return invalid("nats.jetstream.subjects", "must name at least one subject");
            }
            if jetstream.fetch_batch == 0 {
                return invalid("nats.jetstream.fetch_batch", "must be greater than 0");
            }
        }
        Ok(())
    }

    /// The configuration as TOML with secrets masked, for `config show`.
    #[must_use]
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        let mask = |secret: &mut Option<String>| {
            if secret.is_some() {
                *secret = Some("********".into());
            }
        };
        mask(&mut shown.nats.token);
        mask(&mut shown.nats.password);
        mask(&mut shown.nats.nkey_seed);
        mask(&mut shown.llm.api_key);
        toml::to_string_pretty(&shown)
            .unwrap_or_else(|err| format!("# cannot render config: {err}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed_default_toml() -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
        std::fs::read_to_string(path).expect("config/default.toml exists")
    }

    #[test]
    fn committed_default_toml_is_exactly_the_defaults() {
        let parsed = Config::from_toml_str(&committed_default_toml()).expect("default.toml parses");
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn committed_default_toml_documents_every_key() {
        let documented = committed_default_toml();
        let rendered = toml::to_string_pretty(&Config::default()).expect("render");
        for line in rendered.lines() {
            let key = match line.split_once(" = ") {
                Some((key, _)) => key.trim(),
                None => continue,
            };
            assert!(
                documented.contains(&format!("{key} =")),
                "config/default.toml lacks {key}"
            );
        }
        for optional in [
            "data_dir",
            "token",
            "user",
            "password",
            "nkey_seed",
            "credentials_file",
            "tls_ca_file",
            "tls_cert_file",
            "tls_key_file",
            "otlp_endpoint",
            "api_key",
            "index_path",
            "model_dir",
            "ort_dylib_path",
            "index_threads",
        ] {
            assert!(
                documented.contains(&format!("# {optional} =")),
                "config/default.toml lacks {optional}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_refused_with_their_name() {
        let err = Config::from_toml_str("[ingest]\nmax_payload = 5\n").expect_err("unknown key");
        assert!(err.to_string().contains("max_payload"), "{err}");
        let err = Config::from_toml_str("[ingset]\n").expect_err("unknown table");
        assert!(err.to_string().contains("ingset"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = Config::from_toml_str("[ingest]\nmax_payload_bytes = 0\n").expect_err("zero");
        assert!(
            err.to_string().contains("ingest.max_payload_bytes"),
            "{err}"
        );
        let err = Config::from_toml_str("[store]\ndurability = \"sometimes\"\n").expect_err("enum");
        assert!(err.to_string().contains("sometimes"), "{err}");
        let err = Config::from_toml_str("[nats]\nuser = \"u\"\n").expect_err("pair");
        assert!(err.to_string().contains("nats.user"), "{err}");
    }

    #[test]
    fn time_zone_is_checked() {
        let config =
            Config::from_toml_str("[toc]\ntimezone = \"Europe/Berlin\"\n").expect("valid zone");
        assert_eq!(config.toc.tz().expect("zone"), chrono_tz::Europe::Berlin);
        let err =
            Config::from_toml_str("[toc]\ntimezone = \"Mars/Olympus\"\n").expect_err("bad zone");
        assert!(err.to_string().contains("toc.timezone"), "{err}");
    }

    #[test]
    fn teleport_settings_are_checked() {
        let config = Config::from_toml_str(
            "[teleport]\nenabled = false\n[teleport.bm25]\nindex_path = \"idx\"\n\
             [teleport.bm25.retention_days]\nsegment = 7\n",
        )
        .expect("valid");
        assert!(!config.teleport.bm25_enabled());
        assert_eq!(config.teleport.bm25.retention_days.segment, 7);
        assert_eq!(
            config.teleport.bm25.resolve_index_path(Path::new("/data")),
            Path::new("/data/idx")
        );
        assert_eq!(
            Config::default()
                .teleport
                .bm25
                .resolve_index_path(Path::new("/data")),
            Path::new("/data/bm25-index")
        );
        let err = Config::from_toml_str("[teleport.bm25]\nprune_schedule = \"at three\"\n")
            .expect_err("bad cron");
        assert!(err.to_string().contains("prune_schedule"), "{err}");
        let err = Config::from_toml_str("[teleport.bm25]\nmemory_budget_mb = 5\n")
            .expect_err("small budget");
        assert!(err.to_string().contains("memory_budget_mb"), "{err}");
        for key in [
            "ef_search",
            "index_threads",
            "query_threads",
            "seal_threshold",
        ] {
            let err = Config::from_toml_str(&format!("[teleport.vector]\n{key} = 0\n"))
                .expect_err("zero");
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
        let tuned = Config::from_toml_str(
            "[teleport.vector]\nef_search = 400\nindex_threads = 2\nquery_threads = 1\n",
        )
        .expect("valid");
        assert_eq!(tuned.teleport.vector.ef_search, 400);
        assert_eq!(tuned.teleport.vector.index_threads, Some(2));
        assert_eq!(tuned.teleport.vector.query_threads, 1);
        let defaults = Config::default().teleport.vector;
        assert_eq!(
            (
                defaults.model_file.as_str(),
                defaults.query_model_file.as_str()
            ),
            ("model.onnx", "model_int8.onnx")
        );
        for key in ["model_file", "query_model_file"] {
            let err = Config::from_toml_str(&format!("[teleport.vector]\n{key} = \" \"\n"))
                .expect_err("empty file name");
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let err =
            Config::load(Some(Path::new("/nonexistent/agent-memory.toml"))).expect_err("missing");
        assert!(matches!(err, ConfigError::Missing { .. }));
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn environment_overrides_the_file() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "c.toml",
                "[nats]\nurl = \"nats://file:4222\"\n[ingest]\nmax_batch_events = 50\n",
            )?;
            jail.set_env("AGENT_MEMORY_NATS__URL", "nats://env:4222");
            jail.set_env("AGENT_MEMORY_STORE__DURABILITY", "buffer");
            let config = Config::load(Some(Path::new("c.toml"))).map_err(|e| e.to_string())?;
            assert_eq!(config.nats.url, "nats://env:4222");
            assert_eq!(config.store.durability, DurabilityConfig::Buffer);
            assert_eq!(config.ingest.max_batch_events, 50);
            jail.set_env("AGENT_MEMORY_NATS__URLL", "typo");
            let err = Config::load(Some(Path::new("c.toml"))).expect_err("unknown env key");
            assert!(err.to_string().contains("urll"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn show_masks_secrets() {
        let mut config = Config::default();
        config.nats.token = Some("s3cret".into());
        config.llm.api_key = Some("sk-llm-s3cret".into());
        let shown = config.to_masked_toml();
        assert!(!shown.contains("s3cret"));
        assert!(shown.contains("********"));
        let reparsed: Config = toml::from_str(&shown).expect("masked toml parses");
        assert_eq!(reparsed.llm.api_key.as_deref(), Some("********"));
    }

    #[test]
    fn llm_section_parses_and_is_validated() {
        let config = Config::from_toml_str(
            "[llm]\nenabled = true\nbase_url = \"https://api.openai.com/v1\"\nmodel = \"gpt-4o-mini\"\n\
             timeout_ms = 5000\nmax_retries = 0\ntemperature = 0.2\n",
        )
        .expect("valid llm section");
        assert!(config.llm.enabled);
        assert_eq!(config.llm.base_url, "https://api.openai.com/v1");
        assert_eq!(config.llm.model, "gpt-4o-mini");
        assert_eq!(config.llm.timeout_ms, 5_000);
        assert_eq!(config.llm.max_retries, 0);
        assert!((config.llm.temperature - 0.2).abs() < 1e-9);
        assert_eq!(config.llm.max_tokens, 400, "unset keys keep their default");

        for (toml_text, key) in [
            ("[llm]\nbase_url = \"127.0.0.1:11434/v1\"\n", "llm.base_url"),
            ("[llm]\nmodel = \" \"\n", "llm.model"),
            ("[llm]\ntimeout_ms = 0\n", "llm.timeout_ms"),
            ("[llm]\nmax_tokens = 0\n", "llm.max_tokens"),
            ("[llm]\ntemperature = 3.5\n", "llm.temperature"),
        ] {
            let err = Config::from_toml_str(toml_text).expect_err(toml_text);
            assert!(err.to_string().contains(key), "{toml_text}: {err}");
        }
        let err = Config::from_toml_str("[llm]\ntimeout_secs = 3\n").expect_err("unknown key");
        assert!(err.to_string().contains("timeout_secs"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn llm_environment_overrides_and_api_key_resolution() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("AGENT_MEMORY_LLM__MODEL", "qwen2.5:7b");
            jail.set_env("AGENT_MEMORY_LLM__ENABLED", "true");
            jail.set_env("AGENT_MEMORY_LLM__TIMEOUT_MS", "1500");
            jail.create_file("c.toml", "")?;
            let config = Config::load(Some(Path::new("c.toml"))).map_err(|e| e.to_string())?;
            assert_eq!(config.llm.model, "qwen2.5:7b");
            assert!(config.llm.enabled);
            assert_eq!(config.llm.timeout_ms, 1_500);

            let mut llm = LlmConfig {
                api_key_env: "AGENT_MEMORY_TEST_LLM_KEY".into(),
                ..LlmConfig::default()
            };
            assert_eq!(llm.resolve_api_key(), None, "variable unset");
            jail.set_env("AGENT_MEMORY_TEST_LLM_KEY", " ");
            assert_eq!(llm.resolve_api_key(), None, "blank variable");
            jail.set_env("AGENT_MEMORY_TEST_LLM_KEY", "sk-from-env");
            assert_eq!(llm.resolve_api_key().as_deref(), Some("sk-from-env"));
            llm.api_key = Some("sk-from-file".into());
            assert_eq!(llm.resolve_api_key().as_deref(), Some("sk-from-file"));
            Ok(())
        });
    }
}
