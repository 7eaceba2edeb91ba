//! `admin`: back up and restore (`backup`, `restore`: `crate::backup_cli`), check a
//! stopped daemon's data dir against its log (`verify`: `crate::verify_cli`, offline
//! only), rebuild the TOC or the ideas graph (`rebuild --projection toc|ideas`),
//! backfill the ideas graph (`backfill-ideas`), rebuild an accelerator index
//! (`rebuild-index`), prune the BM25 and vector indexes (`prune-index`). Each works on the data dir in
//! this process (embedded mode) or asks a running daemon (`--nats-url`), which answers on
//! `memory.admin.rebuild` and `memory.admin.prune` — in cluster mode one node at a time
//! (`--node N`: `memory.admin.<node>.rebuild`, …), since each replica keeps its own
//! projections and indexes.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memory_actors::Pipeline;
use memory_config::Config;
use memory_projections::{BackfillProgress, IndexPruneReport, PruneKind, RebuildReport};
use memory_query::api::TeleportStatusResponse;
use serde_json::{Value, json};

use crate::cli::AdminCommand;
use crate::embedded::{init_tool_tracing, open_store, start_pipeline};
use crate::query_cli::{print_json, remote_call, remote_call_within};
use crate::say;

/// The operators' status call: `{}` → the status report.
pub const ADMIN_STATUS: &str = "status";
/// The operators' rebuild call: `{"projection": "toc"}` or `{"index_type": "bm25"}`.
pub const ADMIN_REBUILD: &str = "rebuild";
/// The operators' prune call: `{}` (configured retention) or
/// `{"age_days": N, "level": "segment|grip|event|day|week|month|year|all"}`.
pub const ADMIN_PRUNE: &str = "prune";
/// The ideas backfill: `{"project_id": "P"}` or `{}` (every project); the reply is the
/// final progress once done.
pub const ADMIN_BACKFILL_IDEAS: &str = "backfill_ideas";
/// The running backfill's progress: `{}` → the progress, or `null` when no backfill ran
/// since the daemon started.
pub const ADMIN_BACKFILL_PROGRESS: &str = "backfill_ideas.progress";
/// A cluster node's snapshot: `{}` → the snapshot it took and uploaded as its group's
/// latest (cluster mode only).
pub const ADMIN_SNAPSHOT: &str = "snapshot";
/// Every admin call a daemon answers; a node id may not be one of them (its subjects
/// would be read as a single-mode call's).
pub const ADMIN_CALLS: &[&str] = &[
    ADMIN_STATUS,
    ADMIN_REBUILD,
    ADMIN_PRUNE,
    ADMIN_BACKFILL_IDEAS,
    ADMIN_BACKFILL_PROGRESS,
    ADMIN_SNAPSHOT,
    crate::backup_cli::ADMIN_BACKUP,
];

/// The subject of admin call `call`: `memory.admin.<call>` for the single-mode daemon,
/// `memory.admin.<node>.<call>` for one node of a cluster.
#[must_use]
pub fn admin_subject(node: Option<&str>, call: &str) -> String {
    match node {
        Some(node) => format!("memory.admin.{node}.{call}"),
        None => format!("memory.admin.{call}"),
    }
}

impl crate::cli::RemoteArgs {
    /// The subject of `call` at the daemon (or node) these arguments name.
    #[must_use]
    pub fn subject(&self, call: &str) -> String {
        admin_subject(self.node.as_deref(), call)
    }
}
/// A rebuild of a year of data takes seconds; a remote caller waits this long.
const REBUILD_TIMEOUT: Duration = Duration::from_secs(3_600);

/// `admin …`.
pub async fn run(
    config: &Config,
    data_dir: &Path,
    command: AdminCommand,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    match command {
        AdminCommand::Rebuild { projection, remote } => {
            rebuild_projection(config, data_dir, &projection, remote).await
        }
        AdminCommand::BackfillIdeas {
            project,
            remote,
            json,
        } => backfill_ideas(config, data_dir, project, remote, json).await,
        AdminCommand::RebuildIndex {
            index,
            remote,
            json,
        } => rebuild_index(config, data_dir, &index, remote, json).await,
        AdminCommand::PruneIndex {
            age_days,
            level,
            remote,
            json,
        } => prune(config, data_dir, age_days, &level, remote, json).await,
        AdminCommand::Forget(args) => crate::forget_cli::run(config, data_dir, args).await,
        AdminCommand::Backup { to, remote, json } => {
            crate::backup_cli::backup(config, data_dir, to, remote, json).await
        }
        AdminCommand::Verify(args) => crate::verify_cli::run(config, data_dir, args).await,
        AdminCommand::Restore { from, json } => {
            crate::backup_cli::restore(config, data_dir, &from, json)
        }
    }
}

async fn connect(config: &Config, url: String) -> anyhow::Result<async_nats::Client> {
    let mut nats = config.nats.clone();
    nats.url = url;
    Ok(memory_nats::connect(&nats, |_| {}).await?)
}

/// `admin rebuild --projection toc|ideas`.
async fn rebuild_projection(
    config: &Config,
    data_dir: &Path,
    projection: &str,
    remote: crate::cli::RemoteArgs,
) -> anyhow::Result<ExitCode> {
    if projection != "toc" && projection != "ideas" {
        anyhow::bail!(
            "unknown projection {projection:?}; projections: toc, ideas (for the bm25 index \
             use `admin rebuild-index`)"
        );
    }
    if let Some(url) = remote.nats_url.clone() {
        let client = connect(config, url).await?;
        let value = remote_call(
            &client,
            remote.subject(ADMIN_REBUILD),
            &json!({"projection": projection}),
        )
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
        print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    let started = std::time::Instant::now();
    let store = open_store(config, data_dir)?;
    let pipeline = start_pipeline(config, store.clone()).await?;
    if projection == "ideas" {
        let result = pipeline.rebuild_ideas().await;
        let caught_up = pipeline.wait_caught_up(Duration::from_secs(3_600)).await;
        pipeline.shutdown().await;
        result.map_err(|err| anyhow::anyhow!("rebuild failed: {err}"))?;
        let graph = memory_projections::IdeaGraph::open(&store)?;
        let mut ideas = 0;
        for project in store.status()?.events_by_project.keys() {
            ideas += graph
                .all_ideas(project)
                .map_err(|err| anyhow::anyhow!("{err}"))?
                .len();
        }
        say!(
            "rebuilt the ideas graph from the event log: {ideas} ideas in {:.1} s{}",
            started.elapsed().as_secs_f64(),
            if caught_up {
                ""
            } else {
                " (still catching up)"
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    pipeline
        .rebuild_toc()
        .await
        .map_err(|err| anyhow::anyhow!("rebuild failed: {err}"))?;
    let caught_up = pipeline.wait_caught_up(Duration::from_secs(3_600)).await;
    pipeline.shutdown().await;
    let nodes = memory_projections::RollupBuilder::all_nodes(&store)
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    say!(
        "rebuilt the TOC from the event log: {} nodes in {:.1} s{}",
        nodes.len(),
        started.elapsed().as_secs_f64(),
        if caught_up {
            ""
        } else {
            " (still catching up)"
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `admin backfill-ideas [--project P]`, with a progress bar on stderr.
async fn backfill_ideas(
    config: &Config,
    data_dir: &Path,
    project: Option<String>,
    remote: crate::cli::RemoteArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let progress = progress_bar();
    let show = |bar: &ProgressBar, state: &BackfillProgress| {
        bar.set_message(format!(
            "backfilling ideas: {}/{} sessions, {} events, {} ideas",
            state.sessions_done, state.sessions_total, state.events, state.ideas
        ));
    };
    let report: BackfillProgress = if let Some(url) = remote.nats_url.clone() {
        let client = connect(config, url).await?;
        let poller = {
            let (client, progress) = (client.clone(), progress.clone());
            let progress_subject = remote.subject(ADMIN_BACKFILL_PROGRESS);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    if let Ok(value) =
                        remote_call(&client, progress_subject.clone(), &json!({})).await
                        && let Ok(state) = serde_json::from_value::<BackfillProgress>(value)
                    {
                        show(&progress, &state);
                    }
                }
            })
        };
        let answer = remote_call_within(
            &client,
            remote.subject(ADMIN_BACKFILL_IDEAS),
            &json!({"project_id": project}),
            REBUILD_TIMEOUT,
        )
        .await;
        poller.abort();
        progress.finish_and_clear();
        let value = answer.map_err(|err| anyhow::anyhow!("{err}"))?;
        serde_json::from_value(value).context("unexpected backfill reply")?
    } else {
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store).await?;
        // Let the continuous mode catch up first: the backfill redoes what it passed.
        pipeline.wait_caught_up(Duration::from_secs(3_600)).await;
        let bar = progress.clone();
        let result = pipeline
            .backfill_ideas(project, move |state| show(&bar, state))
            .await;
        pipeline.wait_caught_up(Duration::from_secs(3_600)).await;
        pipeline.shutdown().await;
        progress.finish_and_clear();
        result.map_err(|err| anyhow::anyhow!("backfill failed: {err}"))?
    };
    if json {
        print_json(&serde_json::to_value(&report)?)?;
    } else {
        say!(
            "backfilled the ideas graph: {} sessions, {} events, {} ideas in {:.1} s",
            report.sessions_done,
            report.events,
            report.ideas,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `admin rebuild-index [--index bm25]`, with progress on stderr.
async fn rebuild_index(
    config: &Config,
    data_dir: &Path,
    index: &str,
    remote: crate::cli::RemoteArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if index == "vector" {
        return rebuild_vector(config, data_dir, remote, json).await;
    }
    if index != "bm25" {
        anyhow::bail!("unknown index {index:?}; indexes: bm25, vector");
    }
    let report: RebuildReport = if let Some(url) = remote.nats_url.clone() {
        let client = connect(config, url).await?;
        let progress = progress_bar();
        // Progress is in `teleport.status`, a query; a cluster routes queries by
        // project, not to the node asked, so a node's rebuild shows none.
        let poller = remote.node.is_none().then(|| {
            let (client, progress) = (client.clone(), progress.clone());
            let subject = format!(
                "{}.{}.teleport.status",
                config.nats.query_subject_prefix,
                memory_types::DEFAULT_PROJECT
            );
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let subject = subject.clone();
                    if let Ok(value) = remote_call(&client, subject, &json!({})).await
                        && let Ok(status) = serde_json::from_value::<TeleportStatusResponse>(value)
                        && let Some(rebuild) = status.bm25_rebuild
                    {
                        show_progress(
                            &progress,
                            &rebuild.phase,
                            rebuild.num_docs,
                            rebuild.num_events_total,
                        );
                    }
                }
            })
        });
        let answer = remote_call_within(
            &client,
            remote.subject(ADMIN_REBUILD),
            &json!({"index_type": index}),
            REBUILD_TIMEOUT,
        )
        .await;
        if let Some(poller) = poller {
            poller.abort();
        }
        progress.finish_and_clear();
        let value = answer.map_err(|err| anyhow::anyhow!("{err}"))?;
        serde_json::from_value(value).context("unexpected rebuild reply")?
    } else {
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store).await?;
        let result = rebuild_with_progress(&pipeline).await;
        pipeline.shutdown().await;
        result?
    };
    if json {
        print_json(&serde_json::to_value(&report)?)?;
    } else {
        say!(
            "rebuilt the bm25 index: {} documents in {:.1} s ({:.0} docs/s), up to log position {}",
            report.num_docs,
            report.duration_ms as f64 / 1_000.0,
            report.docs_per_sec,
            report.cursor
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `admin rebuild-index --index vector`: empties the vector index; the indexer embeds
/// the whole log again (in the background under `serve`; here, until it is done).
async fn rebuild_vector(
    config: &Config,
    data_dir: &Path,
    remote: crate::cli::RemoteArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let value = if let Some(url) = remote.nats_url.clone() {
        let client = connect(config, url).await?;
        remote_call_within(
            &client,
            remote.subject(ADMIN_REBUILD),
            &json!({"index_type": "vector"}),
            REBUILD_TIMEOUT,
        )
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?
    } else {
        let started = std::time::Instant::now();
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store).await?;
        let result = pipeline.rebuild_vector().await;
        let caught_up = pipeline
            .wait_caught_up(Duration::from_secs(24 * 3_600))
            .await;
        let num_docs = pipeline.vector.as_ref().map_or(0, |vector| {
            vector.status(memory_store::OutboxSeq::ZERO).num_docs
        });
        pipeline.shutdown().await;
        result.map_err(|err| anyhow::anyhow!("rebuild failed: {err}"))?;
        json!({"index_type": "vector", "status": if caught_up { "rebuilt" } else { "embedding" },
               "num_docs": num_docs, "duration_ms": started.elapsed().as_millis() as u64})
    };
    if json {
        print_json(&value)?;
    } else {
        say!("vector index: {value}");
    }
    Ok(ExitCode::SUCCESS)
}

async fn rebuild_with_progress(pipeline: &Pipeline) -> anyhow::Result<RebuildReport> {
    let handle = pipeline
        .bm25
        .clone()
        .context("the bm25 index is disabled ([teleport] / [teleport.bm25] enabled = false)")?;
    let progress = progress_bar();
    let poller = {
        let progress = progress.clone();
        let handle = handle.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if let Some(rebuild) = handle.status(memory_store::OutboxSeq::ZERO).rebuild {
                    show_progress(
                        &progress,
                        &rebuild.phase,
                        rebuild.num_docs,
                        rebuild.num_events_total,
                    );
                }
            }
        })
    };
    let result = pipeline.rebuild_bm25().await;
    poller.abort();
    progress.finish_and_clear();
    result.map_err(|err| anyhow::anyhow!("rebuild failed: {err}"))
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} rebuilding bm25: {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

fn show_progress(bar: &ProgressBar, phase: &str, num_docs: u64, num_events_total: u64) {
    bar.set_message(format!(
        "{phase}, {num_docs} documents (the log holds {num_events_total} events)"
    ));
}

/// `admin prune-index [--age-days N --level L]`: both accelerator indexes.
async fn prune(
    config: &Config,
    data_dir: &Path,
    age_days: Option<u32>,
    level: &str,
    remote: crate::cli::RemoteArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let kinds = PruneKind::parse_level(level).with_context(|| {
        format!(
            "unknown level {level:?}; levels: segment, grip, event, day, week, month, year, all"
        )
    })?;
    let report: IndexPruneReport = if let Some(url) = remote.nats_url.clone() {
        let client = connect(config, url).await?;
        let body = match age_days {
            Some(days) => json!({"age_days": days, "level": level}),
            None => json!({}),
        };
        let value =
            remote_call_within(&client, remote.subject(ADMIN_PRUNE), &body, REBUILD_TIMEOUT)
                .await
                .map_err(|err| anyhow::anyhow!("{err}"))?;
        serde_json::from_value(value).context("unexpected prune reply")?
    } else {
        anyhow::ensure!(
            config.teleport.bm25_enabled() || config.teleport.vector_enabled(),
            "{NO_INDEX}"
        );
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store.clone()).await?;
        pipeline.wait_caught_up(Duration::from_secs(300)).await;
        let report = pipeline
            .prune(prune_cutoffs(config, age_days, &kinds))
            .await;
        pipeline.shutdown().await;
        report
    };
    if json {
        print_json(&serde_json::to_value(&report)?)?;
    } else {
        for (name, index) in [("bm25", &report.bm25), ("vector", &report.vector)] {
            let Some(index) = index else { continue };
            say!("pruned {} documents from the {name} index", index.total());
            for (kind, count) in &index.pruned {
                say!("  {kind:<8} {count}");
            }
        }
        for (name, error) in &report.errors {
            say!("the {name} index was not pruned: {error}");
        }
    }
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Why nothing can be pruned.
pub const NO_INDEX: &str =
    "no accelerator index is enabled ([teleport], [teleport.bm25], [teleport.vector])";

/// The cut-off time of each kind: `kinds` older than `age_days`, or every kind by the
/// configured retention.
pub fn prune_cutoffs(
    config: &Config,
    age_days: Option<u32>,
    kinds: &[PruneKind],
) -> Vec<(PruneKind, u64)> {
    let now = memory_types::now_ms();
    match age_days {
        Some(days) => {
            let before = now.saturating_sub(u64::from(days) * 86_400_000);
            kinds.iter().map(|kind| (*kind, before)).collect()
        }
        None => crate::settings::retention(config).cutoffs(now),
    }
}

/// Parses an `admin.prune` request body: `{}` or `{"age_days", "level"}`.
pub fn parse_prune_request(body: &[u8]) -> Result<(Option<u32>, Vec<PruneKind>), String> {
    let value: Value = if body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(body).map_err(|err| format!("request is not JSON: {err}"))?
    };
    let age_days = match value.get("age_days") {
        None | Some(Value::Null) => None,
        Some(days) => Some(
            days.as_u64()
                .and_then(|days| u32::try_from(days).ok())
                .ok_or_else(|| format!("age_days {days} is not a whole number of days"))?,
        ),
    };
    let level = value.get("level").and_then(Value::as_str).unwrap_or("all");
    let kinds = PruneKind::parse_level(level).ok_or_else(|| {
        format!(
            "unknown level {level:?}; levels: segment, grip, event, day, week, month, year, all"
        )
    })?;
    Ok((age_days, kinds))
}
