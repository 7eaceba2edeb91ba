//! `status`: what is stored and how far each projection has got.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use memory_config::Config;
use memory_projections::SessionCatalog;
use memory_store::Store;
use serde::{Deserialize, Serialize};

use crate::cli::StatusArgs;
use crate::embedded::{init_tool_tracing, open_store};

/// The status report, the same in embedded mode and from a running daemon.
#[derive(Debug, Serialize, Deserialize)]
pub struct StatusReport {
    /// The data directory.
    pub data_dir: String,
    /// Per project: events and sessions.
    pub projects: BTreeMap<String, ProjectStatus>,
    /// Highest durable outbox position.
    pub outbox_head: u64,
    /// Lowest position still in the outbox.
    pub outbox_low: u64,
    /// Each consumer's cursor and lag.
    pub consumers: Vec<ConsumerStatus>,
    /// Parked entries.
    pub dead_letters: u64,
    /// Bytes on disk.
    pub disk_bytes: u64,
    /// An ideas backfill that has not finished (running, or cut short and carried on
    /// by the indexing agent): how far it is, and the failures of the batch it is at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ideas_backfill: Option<memory_projections::UnfinishedBackfill>,
}

/// One project.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProjectStatus {
    /// Stored events.
    pub events: u64,
    /// Sessions known to the session catalog.
    pub sessions: u64,
}

/// One consumer.
#[derive(Debug, Serialize, Deserialize)]
pub struct ConsumerStatus {
    /// Its name.
    pub name: String,
    /// Its durable cursor.
    pub cursor: u64,
    /// Outbox entries it has yet to apply.
    pub lag: u64,
}

/// Builds the report from an open store.
pub fn report(store: &Store) -> anyhow::Result<StatusReport> {
    let status = store.status().context("cannot read store status")?;
    let mut projects = BTreeMap::new();
    for (project, events) in &status.events_by_project {
        let sessions = SessionCatalog::sessions(store, project)
            .map(|s| s.len() as u64)
            .unwrap_or(0);
        projects.insert(
            project.clone(),
            ProjectStatus {
                events: *events,
                sessions,
            },
        );
    }
    let consumers = status
        .cursors
        .iter()
        .map(|(name, cursor)| ConsumerStatus {
            name: name.clone(),
            cursor: *cursor,
            lag: status.outbox_head.saturating_sub(*cursor),
        })
        .collect();
    Ok(StatusReport {
        data_dir: store.path().display().to_string(),
        projects,
        outbox_head: status.outbox_head,
        outbox_low: status.outbox_low,
        consumers,
        dead_letters: status.dead_letters,
        disk_bytes: status.disk_bytes,
        ideas_backfill: memory_projections::unfinished_backfill(store)
            .context("cannot read the ideas backfill's progress")?,
    })
}

pub async fn run(
    config: &Config,
    data_dir: &Path,
    args: &StatusArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    match &args.remote.nats_url {
        Some(url) => {
            // The configured credentials and TLS apply; only the URL comes from the flag.
            let mut nats = config.nats.clone();
            nats.url.clone_from(url);
            let client = memory_nats::connect(&nats, |_| {}).await?;
            let timeout = Duration::from_secs(config.nats.request_timeout_secs);
            let subject = args.remote.subject(crate::admin_cli::ADMIN_STATUS);
            let reply = tokio::time::timeout(timeout, client.request(subject.clone(), "{}".into()))
                .await
                .context("the daemon did not answer in time")?
                .with_context(|| format!("no daemon answers {subject}"))?;
            let report: StatusReport =
                serde_json::from_slice(&reply.payload).context("unexpected status reply")?;
            print_report(&report, args.json);
        }
        None => print_embedded(config, data_dir, args.json)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the data dir and prints its report.
pub fn print_embedded(config: &Config, data_dir: &Path, json: bool) -> anyhow::Result<()> {
    let store = open_store(config, data_dir)?;
    print_report(&report(&store)?, json);
    Ok(())
}

fn print_report(report: &StatusReport, json: bool) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        );
        return;
    }
    let total: u64 = report.projects.values().map(|p| p.events).sum();
    println!("data dir:     {}", report.data_dir);
    println!(
        "events:       {total} in {} project(s)",
        report.projects.len()
    );
    for (project, status) in &report.projects {
        println!(
            "  {project:<24} {:>8} events {:>6} sessions",
            status.events, status.sessions
        );
    }
    println!(
        "outbox:       head {}, low {}",
        report.outbox_head, report.outbox_low
    );
    println!("consumers:");
    for consumer in &report.consumers {
        println!(
            "  {:<24} cursor {:>8}  lag {}",
            consumer.name, consumer.cursor, consumer.lag
        );
    }
    if let Some(backfill) = &report.ideas_backfill {
        println!(
            "ideas backfill: unfinished, {} of {} sessions done",
            backfill.progress.sessions_done, backfill.progress.sessions_total
        );
        if let Some(error) = &backfill.last_error {
            println!(
                "  its batch failed {} time(s), last: {error}",
                backfill.failed_attempts
            );
        }
    }
    println!("dead letters: {}", report.dead_letters);
    println!(
        "disk:         {:.1} MiB",
        report.disk_bytes as f64 / (1024.0 * 1024.0)
    );
}
