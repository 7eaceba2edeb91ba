//! The libraries' settings from the configuration: the store, validation, the pipeline
//! and the indexes. Plain translations with no I/O, so `serve`, every tool and the demo
//! read `[store]`, `[ingest]`, `[toc]` and `[teleport]` the same way.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memory_actors::{Backoff, PipelineConfig, RunnerConfig};
use memory_config::{Config, DurabilityConfig, IndexingEngine};
use memory_projections::{
    Bm25Settings, EngineFactory, IndexingSettings, PruneKind, Retention, RollupConfig,
    SegmenterConfig, SessionCatalog,
};
use memory_store::{Durability, StoreOptions};
use memory_summarize::grips::GripConfig;
use memory_types::ValidationLimits;

/// Store options from config.
pub fn store_options(config: &Config) -> StoreOptions {
    StoreOptions {
        durability: match config.store.durability {
            DurabilityConfig::SyncAll => Durability::SyncAll,
            DurabilityConfig::SyncData => Durability::SyncData,
            DurabilityConfig::Buffer => Durability::Buffer,
        },
        cache_size_mb: config.store.cache_size_mb,
        min_free_mb: config.store.min_free_mb,
        write_buffer_mb: config.store.write_buffer_mb,
    }
}

/// Validation limits from config.
pub fn limits(config: &Config) -> ValidationLimits {
    ValidationLimits {
        max_payload_bytes: config.ingest.max_payload_bytes,
        max_event_bytes: config.ingest.max_event_bytes,
        max_future_skew_ms: config.ingest.max_future_skew_secs.saturating_mul(1000),
        derived_events: false,
    }
}

/// How long documents stay in the accelerator indexes: `[teleport.bm25.retention_days]`
/// (the vector index keeps the same documents as long).
pub fn retention(config: &Config) -> Retention {
    let days = &config.teleport.bm25.retention_days;
    Retention {
        days: [
            (PruneKind::Segment, days.segment),
            (PruneKind::Grip, days.grip),
            (PruneKind::Event, days.event),
            (PruneKind::Day, days.day),
            (PruneKind::Week, days.week),
            (PruneKind::Month, days.month),
            (PruneKind::Year, days.year),
        ]
        .into_iter()
        .collect(),
    }
}

/// The BM25 index's settings from `[teleport.bm25]`, `None` when it is disabled.
pub fn bm25_settings(config: &Config, data_dir: &Path) -> Option<Bm25Settings> {
    if !config.teleport.bm25_enabled() {
        return None;
    }
    let bm25 = &config.teleport.bm25;
    Some(Bm25Settings {
        index_dir: bm25.resolve_index_path(data_dir),
        memory_budget_bytes: usize::try_from(bm25.memory_budget_mb)
            .unwrap_or(usize::MAX / (1 << 20))
            .saturating_mul(1 << 20),
        commit_interval: Duration::from_secs(bm25.commit_interval_secs),
        index_events: bm25.index_events,
        stale_after: Duration::from_secs(bm25.stale_after_secs),
        retention: retention(config),
        clock: memory_types::Clock::system(),
    })
}

/// Applies what a process that stays up (`serve`, `mcp`, `import --follow`) needs before
/// its store opens: the allocator's purge delay (`[allocator] purge_delay_ms`), so what
/// its bursts of searches, catch-ups and ingest free goes back to the OS instead of
/// staying resident for as long as it runs, and the resident-memory gauge. A batch job
/// keeps mimalloc's delay: it exits soon, and its commit path ran ~10 % faster with
/// freed pages kept for reuse (docs/benchmarks.md, "Memory with vectors on: freed memory
/// returned at once").
pub fn apply_long_running_settings(config: &Config) {
    let delay_ms = memory_alloc::set_purge_delay(config.allocator.purge_delay_ms);
    if u64::try_from(delay_ms).ok() != Some(config.allocator.purge_delay_ms) {
        tracing::info!(
            delay_ms,
            configured_ms = config.allocator.purge_delay_ms,
            "the allocator's purge delay comes from MIMALLOC_PURGE_DELAY (or is capped)"
        );
    }
    memory_alloc::register_metrics();
}

/// `config` for a tool run that serves no queries (`ingest --file`, `admin`): the
/// indexing embedder gets every core unless `[teleport.vector] index_threads` says
/// otherwise, since nothing else waits for the CPU.
#[must_use]
pub fn for_batch_job(mut config: Config) -> Config {
    let vector = &mut config.teleport.vector;
    if vector.index_threads.is_none() {
        vector.index_threads = std::thread::available_parallelism()
            .ok()
            .map(std::num::NonZeroUsize::get);
    }
    config
}

/// The vector index's settings from `[teleport.vector]`, `None` when it is disabled.
pub fn vector_settings(
    config: &Config,
    data_dir: &Path,
) -> Option<memory_projections::VectorSettings> {
    if !config.teleport.vector_enabled() {
        return None;
    }
    let vector = &config.teleport.vector;
    let embedder = embedder_config(config);
    Some(memory_projections::VectorSettings {
        index_dir: vector.resolve_index_path(data_dir),
        embedder,
        commit_interval: Duration::from_secs(vector.commit_interval_secs),
        index_events: vector.index_events,
        seal_threshold: vector.seal_threshold,
        ef_search: vector.ef_search,
        index_threads: vector.index_threads.unwrap_or(1),
        query_threads: vector.query_threads,
        query_model_file: vector.query_model_file.clone(),
    })
}

/// How many queries the daemon answers at once and lets wait (`[nats] query_max_*`).
pub fn query_admission(config: &Config) -> memory_nats::Admission {
    let mut limits = memory_nats::QueryLimits::for_this_machine();
    if let Some(max_in_flight) = config.nats.query_max_in_flight {
        limits.max_in_flight = max_in_flight;
    }
    limits.max_queued = config.nats.query_max_queued;
    limits.max_wait = Duration::from_millis(config.nats.query_max_wait_ms);
    memory_nats::Admission::new(limits)
}

/// Makes `pipeline` write what a cluster replica writes, so that every replica of a
/// group — and a tool run on a replica's data dir — holds the same projections: the TOC
/// extractive (the lease holder publishes model summaries, [`cluster_model_summaries`])
/// with segments closed idle only by the log's `segment_close` events, and, with the
/// LLM indexing engine, ideas only from the log's `ideas_proposed` events (the lease
/// holder runs the engine, [`cluster_model_ideas`]). The heuristic engine is a function
/// of the log and runs on every replica.
pub fn as_cluster_replica(config: &Config, pipeline: &mut PipelineConfig) {
    pipeline.segmenter.idle_close_by_clock = false;
    pipeline.rollup = RollupConfig::default();
    if uses_llm_engine(config) {
        if let Some(indexing) = pipeline.indexing.as_mut() {
            indexing.follow_proposals = true;
        }
        // The agent only applies what the log says: no model window to wait for.
        pipeline.indexing_window = Duration::from_millis(config.indexing.window_ms);
    }
}

/// In cluster mode with the LLM indexing engine, the engine the group's lease holder
/// runs over each project's new events, publishing its change sets to the log for
/// every replica to validate and apply (`None` with the heuristic engine, which every
/// replica runs itself, or with `[indexing]` disabled). Like single mode, a model that
/// cannot be used leaves the heuristic engine, here proposed through the log all the
/// same.
pub fn cluster_model_ideas(config: &Config, data_dir: &Path) -> Option<EngineFactory> {
    if !uses_llm_engine(config) {
        return None;
    }
    indexing_settings(config, &llm_spend(config, data_dir)).map(|settings| settings.engine)
}

/// In cluster mode the TOC is written with the extractive summarizer on every replica;
/// with `[llm] summaries` on, the group's lease holder has the model summarize final
/// nodes and publishes its answers to the log. The model it asks: `None` when summaries
/// are off.
///
/// # Errors
/// A model configuration that cannot be used (a bad `base_url`).
pub fn cluster_model_summaries(
    config: &Config,
    data_dir: &Path,
) -> anyhow::Result<Option<Arc<dyn memory_summarize::Summarizer>>> {
    if !(config.llm.enabled && config.llm.summaries) {
        return Ok(None);
    }
    let client = memory_llm::ChatClient::new(&config.llm)
        .map_err(|err| anyhow::anyhow!("[llm] cannot be used for summaries: {err}"))?
        .with_spend(llm_spend(config, data_dir));
    Ok(Some(Arc::new(
        memory_llm::LlmSummarizer::from_client(client).without_fallback(),
    )))
}

/// Whether `[indexing]` asks for the LLM engine (`llm`, or `auto` with a model).
fn uses_llm_engine(config: &Config) -> bool {
    match config.indexing.engine {
        IndexingEngine::Heuristic => false,
        IndexingEngine::Llm => true,
        IndexingEngine::Auto => config.llm.enabled,
    }
}

/// Pipeline tuning from config; the BM25 index lives under `data_dir` unless
/// configured elsewhere.
pub fn pipeline_config(config: &Config, data_dir: &Path) -> PipelineConfig {
    let spend = llm_spend(config, data_dir);
    let consumers = &config.consumers;
    PipelineConfig {
        max_batch_events: config.ingest.max_batch_events,
        max_pending_events: config.ingest.max_pending_events,
        runner: RunnerConfig {
            batch_size: consumers.batch_size,
            max_attempts: consumers.max_attempts,
            retry_backoff: Backoff::new(
                Duration::from_millis(consumers.retry_base_ms),
                Duration::from_millis(consumers.retry_max_ms),
            ),
            poll_interval: Duration::from_millis(consumers.poll_interval_ms),
            linger: Duration::from_millis(consumers.linger_ms),
        },
        restart_backoff: Backoff::new(
            Duration::from_millis(consumers.restart_base_ms),
            Duration::from_millis(consumers.restart_max_ms),
        ),
        session_catalog: Arc::new(SessionCatalog::open),
        segmenter: SegmenterConfig {
            gap: Duration::from_secs(config.toc.segment_gap_secs),
            max_tokens: config.toc.segment_max_tokens,
            overlap_tokens: config.toc.segment_overlap_tokens,
            // Validated when the configuration was loaded.
            timezone: config.toc.tz().unwrap_or(chrono_tz::Tz::UTC),
            ..SegmenterConfig::default()
        },
        grips: GripConfig {
            max_grips: config.toc.grips_per_segment,
            max_excerpt_chars: config.toc.grip_max_chars,
            ..GripConfig::default()
        },
        rollup: RollupConfig {
            summarizer: summarizer(config, &spend),
        },
        bm25: bm25_settings(config, data_dir),
        vector: vector_settings(config, data_dir),
        indexing: indexing_settings(config, &spend),
        // The LLM engine's longer window only when it will run: a model that cannot be
        // used leaves the heuristic engine, which wants its own.
        indexing_window: Duration::from_millis(
            if uses_llm_engine(config) && memory_llm::ChatClient::new(&config.llm).is_ok() {
                config.indexing.llm_window_ms
            } else {
                config.indexing.window_ms
            },
        ),
        indexing_batch_events: config.indexing.batch_events,
        // Validated when the configuration was loaded.
        bm25_prune_schedule: config.teleport.bm25.prune_schedule.parse().ok(),
        // Needs the data dir's key file: `embedded::start_pipeline` sets it.
        redactor: None,
    }
}

/// The embedding model of `[teleport.vector]`: its files from the config, else from
/// the environment or this checkout's `.tools/`.
fn embedder_config(config: &Config) -> memory_embed::EmbedderConfig {
    let vector = &config.teleport.vector;
    let mut embedder = memory_embed::EmbedderConfig::from_env_or_repo();
    if let Some(model_dir) = &vector.model_dir {
        embedder.model_dir.clone_from(model_dir);
    }
    if let Some(ort_dylib) = &vector.ort_dylib_path {
        embedder.ort_dylib.clone_from(ort_dylib);
    }
    embedder.model_file.clone_from(&vector.model_file);
    embedder
}

/// The daemon's one model spend (`[llm] requests_per_minute`, `daily_token_cap`), its
/// day count kept in `<data_dir>/llm-spend.json`: summaries, the indexing agent and
/// search phrases count against it together (one per data dir and process, however
/// many parts of the daemon ask).
pub fn llm_spend(config: &Config, data_dir: &Path) -> Arc<memory_llm::Spend> {
    static SPENDS: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, Arc<memory_llm::Spend>>>,
    > = std::sync::OnceLock::new();
    let ledger = data_dir.join("llm-spend.json");
    let mut spends = SPENDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(spends.entry(ledger.clone()).or_insert_with(|| {
        Arc::new(memory_llm::Spend::with_ledger(
            memory_llm::SpendLimits::from_config(&config.llm),
            ledger,
        ))
    }))
}

/// The indexing agent's settings, `None` when `[indexing]` is disabled. The heuristic
/// engine judges meaning with the vector index's embedding model when both the index
/// and `[indexing] similarity` (off by default) are on. The LLM engine (`engine = "llm"`,
/// or `"auto"` with `[llm] enabled`) keeps a heuristic engine to fall back on.
pub fn indexing_settings(
    config: &Config,
    spend: &Arc<memory_llm::Spend>,
) -> Option<IndexingSettings> {
    if !config.indexing.enabled {
        return None;
    }
    let similarity = (config.indexing.similarity && config.teleport.vector_enabled())
        .then(|| memory_projections::model_similarity(embedder_config(config)));
    let heuristic = move || -> Box<dyn memory_ideas::IdeaExtractor> {
        let engine = memory_ideas::HeuristicEngine::new();
        Box::new(match &similarity {
            Some(embed) => engine.with_similarity(Arc::clone(embed)),
            None => engine,
        })
    };
    let client = if uses_llm_engine(config) {
        match memory_llm::ChatClient::new(&config.llm) {
            Ok(client) => Some(client.with_spend(Arc::clone(spend))),
            Err(err) => {
                tracing::error!(error = %err, "cannot use the configured LLM; ideas come from the heuristic engine");
                None
            }
        }
    } else {
        None
    };
    let engine: EngineFactory = match client {
        None => Arc::new(heuristic),
        Some(client) => {
            let indexing = &config.indexing;
            let llm_settings = memory_indexer::LlmEngineSettings {
                max_tool_calls: indexing.llm_max_tool_calls,
                continuous_tokens: indexing.llm_batch_tokens,
                backfill_tokens: indexing.llm_backfill_batch_tokens,
                protocol: config.llm.tool_protocol,
                cooldown: Duration::from_secs(indexing.llm_cooldown_secs),
                max_answer_tokens: indexing.llm_max_answer_tokens,
            };
            Arc::new(move || {
                Box::new(memory_indexer::LlmEngine::with_fallback(
                    client.clone(),
                    llm_settings.clone(),
                    heuristic(),
                ))
            })
        }
    };
    let mut settings = IndexingSettings::new(engine);
    settings.backfill_batch_events = config.indexing.backfill_batch_events;
    Some(settings)
}

/// The configured summarizer: extractive unless `[llm]` is enabled (and `summaries`).
/// The LLM one falls back to extractive per item on any failure, so a model that is
/// down never stalls the pipeline; a configuration it cannot even start from is
/// reported and replaced.
fn summarizer(
    config: &Config,
    spend: &Arc<memory_llm::Spend>,
) -> Arc<dyn memory_summarize::Summarizer> {
    match memory_llm::summarizer_for(&config.llm, Some(Arc::clone(spend))) {
        Ok(summarizer) => Arc::from(summarizer),
        Err(err) => {
            tracing::error!(error = %err, "cannot use the configured LLM; summaries are extractive");
            Arc::new(memory_summarize::ExtractiveSummarizer::default())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_jobs_embed_on_every_core_unless_configured() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let batch = for_batch_job(Config::default());
        assert_eq!(batch.teleport.vector.index_threads, Some(cores));
        let settings = vector_settings(&batch, Path::new("/data")).expect("vectors on");
        assert_eq!(settings.index_threads, cores);
        // `serve` keeps the default: one indexing thread, queries keep a core.
        let served = vector_settings(&Config::default(), Path::new("/data")).expect("vectors on");
        assert_eq!(settings.query_threads, served.query_threads);
        assert_eq!(served.index_threads, 1);
        let mut pinned = Config::default();
        pinned.teleport.vector.index_threads = Some(1);
        assert_eq!(for_batch_job(pinned).teleport.vector.index_threads, Some(1));
    }
}
