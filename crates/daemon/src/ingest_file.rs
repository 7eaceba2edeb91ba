//! `ingest --file`: a JSONL file straight into the data dir, with group commits of up to
//! `max_batch_events` and two batches in flight, so parsing overlaps the fsync.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memory_actors::{AppendReply, IngestHandle};
use memory_config::Config;
use memory_types::{Event, EventError, IngestReply, ProjectScope, parse_single};
use serde::Serialize;
use tokio::task::JoinHandle;

use crate::cli::IngestArgs;
use crate::embedded::{init_tool_tracing, open_store, start_pipeline};
use crate::settings::limits;

/// One rejected line.
#[derive(Debug, Serialize)]
pub struct RejectedLine {
    /// 1-based line number.
    pub line: u64,
    /// Why.
    pub error: EventError,
}

/// What an ingest run did.
#[derive(Debug, Default, Serialize)]
pub struct IngestSummary {
    /// Newly stored events.
    pub accepted: u64,
    /// Events already stored (or repeated in the file).
    pub duplicates: u64,
    /// Lines refused.
    pub rejected: Vec<RejectedLine>,
    /// Highest outbox position assigned.
    pub last_seq: u64,
    /// Wall time.
    pub elapsed_ms: u64,
}

/// Batches committing at once; two lets the next batch parse while one commits.
const MAX_BATCHES_IN_FLIGHT: usize = 2;

pub async fn run(
    config: &Config,
    data_dir: &Path,
    args: IngestArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    ingest_into(config, data_dir, &args).await
}

/// Ingests `args.file` into `data_dir` and prints the summary.
pub async fn ingest_into(
    config: &Config,
    data_dir: &Path,
    args: &IngestArgs,
) -> anyhow::Result<ExitCode> {
    let store = open_store(config, data_dir)?;
    let pipeline = start_pipeline(config, store).await?;
    let (reader, size): (Box<dyn Read + Send>, Option<u64>) = if args.file.as_os_str() == "-" {
        (Box::new(std::io::stdin()), None)
    } else {
        let file = std::fs::File::open(&args.file)
            .with_context(|| format!("cannot open {}", args.file.display()))?;
        let size = file.metadata().ok().map(|m| m.len());
        (Box::new(file), size)
    };
    let result = ingest_reader(config, &pipeline.ingest, reader, size, &args.project).await;
    let timeout = Duration::from_secs(args.wait_timeout_secs);
    if result.is_ok() && args.wait && !pipeline.wait_caught_up(timeout).await {
        eprintln!(
            "warning: projections did not catch up within {} s; they resume on the next start",
            args.wait_timeout_secs
        );
    }
    pipeline.shutdown().await;
    let summary = result?;
    print_summary(&summary, &args.file.display().to_string(), args.json);
    Ok(if summary.rejected.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn ingest_reader(
    config: &Config,
    ingest: &IngestHandle,
    reader: Box<dyn Read + Send>,
    size: Option<u64>,
    default_project: &str,
) -> anyhow::Result<IngestSummary> {
    let started = Instant::now();
    let limits = limits(config);
    let batch_size = config.ingest.max_batch_events;
    let progress = progress_bar(size);
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let mut summary = IngestSummary::default();
    let mut in_flight: VecDeque<JoinHandle<AppendReply>> = VecDeque::new();
    let mut batch: Vec<Event> = Vec::with_capacity(batch_size);
    let mut line = Vec::with_capacity(4096);
    let mut line_number = 0u64;
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .context("cannot read the input")?;
        if read == 0 {
            break;
        }
        line_number += 1;
        progress.inc(read as u64);
        let content = line.trim_ascii();
        if content.is_empty() {
            continue;
        }
        match parse_single(
            content,
            ProjectScope::Default(default_project),
            &limits,
            None,
        ) {
            Ok(event) => batch.push(event),
            Err(error) => summary.rejected.push(RejectedLine {
                line: line_number,
                error,
            }),
        }
        if batch.len() >= batch_size {
            if in_flight.len() >= MAX_BATCHES_IN_FLIGHT
                && let Some(oldest) = in_flight.pop_front()
            {
                fold(&mut summary, oldest.await)?;
            }
            let events = std::mem::replace(&mut batch, Vec::with_capacity(batch_size));
            let handle = ingest.clone();
            in_flight.push_back(tokio::spawn(async move { handle.append(events).await }));
        }
    }
    if !batch.is_empty() {
        let handle = ingest.clone();
        in_flight.push_back(tokio::spawn(async move { handle.append(batch).await }));
    }
    while let Some(oldest) = in_flight.pop_front() {
        fold(&mut summary, oldest.await)?;
    }
    progress.finish_and_clear();
    summary.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(summary)
}

fn fold(
    summary: &mut IngestSummary,
    joined: Result<AppendReply, tokio::task::JoinError>,
) -> anyhow::Result<()> {
    let outcomes = joined
        .context("ingest task failed")?
        .context("cannot store events")?;
    let batch = IngestReply::assemble(Vec::new(), &outcomes);
    summary.accepted += batch.accepted;
    summary.duplicates += batch.duplicates;
    summary.last_seq = summary.last_seq.max(batch.last_seq);
    Ok(())
}

fn progress_bar(size: Option<u64>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(size, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {bytes}/{total_bytes} {bar:30} {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn print_summary(summary: &IngestSummary, source: &str, json: bool) {
    if json {
        println!("{}", serde_json::to_string(summary).unwrap_or_default());
        return;
    }
    println!(
        "ingested {source}: {} accepted, {} duplicates, {} rejected in {:.2} s",
        summary.accepted,
        summary.duplicates,
        summary.rejected.len(),
        summary.elapsed_ms as f64 / 1000.0
    );
    const SHOWN: usize = 100;
    for rejected in summary.rejected.iter().take(SHOWN) {
        let field = if rejected.error.field.is_empty() {
            String::new()
        } else {
            format!(" ({})", rejected.error.field)
        };
        println!(
            "  line {}: {}{field}: {}",
            rejected.line,
            rejected.error.code.as_str(),
            rejected.error.message
        );
    }
    if summary.rejected.len() > SHOWN {
        println!(
            "  … and {} more rejected lines (use --json for all)",
            summary.rejected.len() - SHOWN
        );
    }
}
