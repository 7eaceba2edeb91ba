//! Embedded mode: the store and the actors in this process, for the tools that work on a
//! data dir directly. The commands build on these; nothing here knows a command.

use std::path::Path;

use anyhow::Context;
use memory_actors::Pipeline;
use memory_config::Config;
use memory_store::Store;
use memory_telemetry::{LogFormat, TracingConfig, TracingGuard};

use crate::settings::{pipeline_config, store_options};

/// Opens the store with a message that says which data dir failed, for a command that
/// answers no requests while it runs: background work may take every core unless
/// `[consumers] background_spare_cores` says otherwise.
///
/// Sets the priority of background work (`[consumers] background_nice`,
/// `background_idle`, `background_spare_cores`) before anything starts. The store's own
/// flush and compaction workers keep the daemon's priority: an append that meets too
/// many unflushed memtables waits for them (fjall's write stall), so lowering them would
/// make ingest wait behind everything else.
pub fn open_store(config: &Config, data_dir: &Path) -> anyhow::Result<Store> {
    open_store_for(config, data_dir, Answers::NoOne)
}

/// [`open_store`] for `serve` and `mcp`, which answer requests: background work keeps
/// off one core unless `[consumers] background_spare_cores` says otherwise
/// (`memory_actors::background`'s module doc says why).
pub fn open_store_answering(config: &Config, data_dir: &Path) -> anyhow::Result<Store> {
    open_store_for(config, data_dir, Answers::Requests)
}

/// Whether the process answers requests while its background work runs.
#[derive(Clone, Copy)]
enum Answers {
    Requests,
    NoOne,
}

/// The cores background work keeps off: the configured number, else one for a process
/// that answers requests and none for one that does not.
fn spare_cores(config: &Config, answers: Answers) -> usize {
    config
        .consumers
        .background_spare_cores
        .unwrap_or(match answers {
            Answers::Requests => memory_actors::background::DEFAULT_SPARE_CORES,
            Answers::NoOne => 0,
        })
}

fn open_store_for(config: &Config, data_dir: &Path, answers: Answers) -> anyhow::Result<Store> {
    memory_actors::background::set_nice(config.consumers.background_nice);
    memory_actors::background::set_idle(config.consumers.background_idle);
    memory_actors::background::set_spare_cores(spare_cores(config, answers));
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

/// The redactor every event passes before it is stored, with the data dir's tag key
/// (`redaction.key`, made at first start).
pub fn redactor(data_dir: &std::path::Path) -> anyhow::Result<memory_redact::Redactor> {
    let key = memory_redact::load_or_create_key(&data_dir.join(REDACTION_KEY_FILE))
        .map_err(|err| anyhow::anyhow!("cannot start redaction: {err}"))?;
    memory_redact::Redactor::shipped(&key).map_err(|err| anyhow::anyhow!("{err}"))
}

/// The tag key's file in the data dir.
pub const REDACTION_KEY_FILE: &str = "redaction.key";

/// Starts the actors over `store` for a tool run. On a cluster replica's data dir (its
/// store has applied the replicated log) the projections are written as the replica
/// writes them (`settings::as_cluster_replica`: the TOC extractive and closed only by
/// the log, ideas from the log's proposals with the LLM engine), so that a tool's
/// rebuild cannot make this replica differ from the others of its group.
pub async fn start_pipeline(config: &Config, store: Store) -> anyhow::Result<Pipeline> {
    let replica = store.applied_stream_seq().unwrap_or(0) > 0;
    start_pipeline_with(config, store, |pipeline| {
        if replica {
            crate::settings::as_cluster_replica(config, pipeline);
        }
    })
    .await
}

/// [`start_pipeline`] with the pipeline's configuration adjusted by `adjust` (cluster
/// mode closes idle segments through the log, not on this process's clock).
pub async fn start_pipeline_with(
    config: &Config,
    store: Store,
    adjust: impl FnOnce(&mut memory_actors::PipelineConfig),
) -> anyhow::Result<Pipeline> {
    let mut config = pipeline_config(config, store.path());
    config.redactor = Some(redactor(store.path())?);
    adjust(&mut config);
    Pipeline::start(store, config)
        .await
        .map_err(|err| anyhow::anyhow!("cannot start the actors: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_process_that_answers_requests_keeps_a_core_spare_unless_configured() {
        let mut config = Config::default();
        assert_eq!(spare_cores(&config, Answers::Requests), 1);
        assert_eq!(spare_cores(&config, Answers::NoOne), 0);
        config.consumers.background_spare_cores = Some(0);
        assert_eq!(spare_cores(&config, Answers::Requests), 0);
        config.consumers.background_spare_cores = Some(2);
        assert_eq!(spare_cores(&config, Answers::NoOne), 2);
    }
}
