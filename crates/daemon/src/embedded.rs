//! Embedded mode: the store and the actors in this process, and the demo.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use memory_actors::{
    Backoff, Bm25Settings, Pipeline, PipelineConfig, PruneKind, Retention, RollupConfig,
    RunnerConfig, SegmenterConfig, SessionCatalog,
};
use memory_config::{Config, DurabilityConfig};
use memory_store::{Durability, Store, StoreOptions};
use memory_telemetry::{LogFormat, TracingConfig, TracingGuard};
use memory_toc::grips::GripConfig;
use memory_types::ValidationLimits;

use crate::cli::{DemoArgs, ExportArgs, IngestArgs};

/// The bundled sample conversations, so `demo` works from any directory.
const SAMPLE_CONVERSATIONS: &str = include_str!("../../../sample/conversations.jsonl");

/// Store options from config.
pub fn store_options(config: &Config) -> StoreOptions {
    StoreOptions {
        durability: match config.store.durability {
            DurabilityConfig::SyncAll => Durability::SyncAll,
            DurabilityConfig::SyncData => Durability::SyncData,
            DurabilityConfig::Buffer => Durability::Buffer,
        },
        cache_size_mb: config.store.cache_size_mb,
    }
}

/// Validation limits from config.
pub fn limits(config: &Config) -> ValidationLimits {
    ValidationLimits {
        max_payload_bytes: config.ingest.max_payload_bytes,
        max_event_bytes: config.ingest.max_event_bytes,
        max_future_skew_ms: config.ingest.max_future_skew_secs.saturating_mul(1000),
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
    })
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
pub fn vector_settings(config: &Config, data_dir: &Path) -> Option<memory_actors::VectorSettings> {
    if !config.teleport.vector_enabled() {
        return None;
    }
    let vector = &config.teleport.vector;
    let mut embedder = memory_embed::EmbedderConfig::from_env_or_repo();
    if let Some(model_dir) = &vector.model_dir {
        embedder.model_dir.clone_from(model_dir);
    }
    if let Some(ort_dylib) = &vector.ort_dylib_path {
        embedder.ort_dylib.clone_from(ort_dylib);
    }
    embedder.model_file.clone_from(&vector.model_file);
    Some(memory_actors::VectorSettings {
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

/// Pipeline tuning from config; the BM25 index lives under `data_dir` unless
/// configured elsewhere.
pub fn pipeline_config(config: &Config, data_dir: &Path) -> PipelineConfig {
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
        },
        grips: GripConfig {
            max_grips: config.toc.grips_per_segment,
            max_excerpt_chars: config.toc.grip_max_chars,
            ..GripConfig::default()
        },
        rollup: RollupConfig {
            summarizer: summarizer(config),
        },
        bm25: bm25_settings(config, data_dir),
        vector: vector_settings(config, data_dir),
        // Validated when the configuration was loaded.
        bm25_prune_schedule: config.teleport.bm25.prune_schedule.parse().ok(),
    }
}

/// The configured summarizer: extractive unless `[llm]` is enabled. The LLM one falls
/// back to extractive per item on any failure, so a model that is down never stalls the
/// pipeline; a configuration it cannot even start from is reported and replaced.
fn summarizer(config: &Config) -> Arc<dyn memory_toc::Summarizer> {
    match memory_llm::summarizer_for(&config.llm) {
        Ok(summarizer) => Arc::from(summarizer),
        Err(err) => {
            tracing::error!(error = %err, "cannot use the configured LLM; summaries are extractive");
            Arc::new(memory_toc::ExtractiveSummarizer::default())
        }
    }
}

/// Opens the store with a message that says which data dir failed.
pub fn open_store(config: &Config, data_dir: &Path) -> anyhow::Result<Store> {
    Store::open(data_dir, &store_options(config))
        .with_context(|| format!("cannot open the store at {}", data_dir.display()))
}

/// Logs for tools: warnings only unless asked, so output stays readable.
pub fn init_tool_tracing(config: &Config, log_level: Option<&str>) -> Option<TracingGuard> {
    let tracing_config = TracingConfig {
        log_filter: log_level.unwrap_or("warn").to_owned(),
        log_format: match config.telemetry.log_format {
            memory_config::LogFormatConfig::Text => LogFormat::Text,
            memory_config::LogFormatConfig::Json => LogFormat::Json,
        },
        otlp_endpoint: None,
        service_name: config.telemetry.service_name.clone(),
    };
    memory_telemetry::init_tracing(&tracing_config).ok()
}

/// `demo`: a temporary data dir, the sample conversations, status and an export.
pub async fn demo(
    config: &Config,
    args: DemoArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let workdir = tempfile_dir()?;
    let data_dir = workdir.join("data");
    let sample_path = match args.file {
        Some(path) => path,
        None => {
            let path = workdir.join("conversations.jsonl");
            std::fs::write(&path, SAMPLE_CONVERSATIONS).context("cannot write the sample")?;
            path
        }
    };
    println!(
        "== ingest {} into {}",
        sample_path.display(),
        data_dir.display()
    );
    let ingest_args = IngestArgs {
        file: sample_path,
        project: memory_types::DEFAULT_PROJECT.into(),
        wait: true,
        wait_timeout_secs: crate::cli::DEFAULT_WAIT_TIMEOUT_SECS,
        json: false,
    };
    let code = crate::ingest_file::ingest_into(config, &data_dir, &ingest_args).await?;
    println!("\n== status");
    crate::status::print_embedded(config, &data_dir, false)?;
    println!("\n== first events of the newest webapp session");
    let store = open_store(config, &data_dir)?;
    let newest = SessionCatalog::sessions(&store, "webapp")
        .map_err(|err| anyhow::anyhow!("{err}"))?
        .into_iter()
        .max_by_key(|session| session.last_timestamp_ms);
    drop(store);
    if let Some(session) = newest {
        let export_args = ExportArgs {
            project: "webapp".into(),
            session: Some(session.session_id),
            from: None,
            to: None,
        };
        crate::export::write_events(config, &data_dir, &export_args, Some(5))?;
    }
    demo_queries(config, &data_dir)?;
    let _ = std::fs::remove_dir_all(&workdir);
    Ok(code)
}

/// The time table of contents of the sample: the tree, a navigation, a search by each
/// tier.
fn demo_queries(config: &Config, data_dir: &Path) -> anyhow::Result<()> {
    let store = open_store(config, data_dir)?;
    let bm25 = bm25_settings(config, data_dir).map(memory_actors::Bm25Handle::open);
    let vector = vector_settings(config, data_dir).map(memory_actors::VectorHandle::open);
    let service = crate::query_cli::query_service(config, store, config.toc.tz()?, bm25, vector);
    let fail = |err: memory_query::QueryError| {
        anyhow::anyhow!("{}", memory_types::ServiceError::from(err))
    };
    println!("\n== the time table of contents of webapp");
    for year in service.toc_root("webapp").map_err(fail)?.years {
        crate::query_cli::print_node_line(&year);
        let request = memory_query::api::TocBrowseRequest {
            node_id: Some(year.node_id.to_string()),
            limit: None,
            page_token: None,
        };
        for month in service
            .toc_browse("webapp", &request)
            .map_err(fail)?
            .children
        {
            crate::query_cli::print_node_line(&month);
        }
    }
    println!("\n== navigate \"what did we decide about JWT expiry last month?\" (now: 2026-02-20)");
    let navigation = service
        .navigate(
            "webapp",
            &memory_query::api::NavigateRequest {
                query: "what did we decide about JWT expiry last month?".into(),
                now: Some(memory_query::api::TimeArg::Text("2026-02-20".into())),
                token_budget: Some(400),
                ..Default::default()
            },
        )
        .map_err(fail)?;
    for step in &navigation.path {
        println!("  {:<8} {}", step.action, step.reason);
    }
    println!("\n== teleport status");
    println!("  {}", service.teleport_status().map_err(fail)?.message);
    use memory_query::api::SearchMode;
    for (mode, label, query) in [
        (
            SearchMode::Auto,
            "auto: the best healthy tier",
            "why were iOS users logged out?",
        ),
        (
            SearchMode::Semantic,
            "semantic: by meaning alone, no shared keyword",
            "how long do login credentials stay valid?",
        ),
        (
            SearchMode::Toc,
            "toc: no index",
            "why were iOS users logged out?",
        ),
    ] {
        println!("\n== search {query:?} (mode {label})");
        let search = service.search(
            "webapp",
            &memory_query::api::SearchRequest {
                query: query.into(),
                token_budget: Some(300),
                mode: Some(mode),
                ..Default::default()
            },
        );
        match search {
            Ok(search) => crate::query_cli::print_search(&search),
            // A forced tier that cannot answer says why (e.g. no model installed).
            Err(err) if mode != SearchMode::Auto => println!("  {err}"),
            Err(err) => return Err(fail(err)),
        }
    }
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "agent-memory-demo-{}-{}",
        std::process::id(),
        memory_types::now_ms()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// Starts the actors over `store` for a tool run.
pub async fn start_pipeline(config: &Config, store: Store) -> anyhow::Result<Pipeline> {
    let config = pipeline_config(config, store.path());
    Pipeline::start(store, config)
        .await
        .map_err(|err| anyhow::anyhow!("cannot start the actors: {err}"))
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
