//! `admin forget --event ID… | --session S | --match REGEX | --resume`: what slipped past
//! redaction, removed from everything the data dir holds.
//!
//! The order is what makes it safe to stop at any point:
//! 1. the plan: every event, dead letter and spooled event the selector touches;
//! 2. the hooks' spool is rewritten (it is not the store, so a resume cannot redo it);
//! 3. the store rewrites the events and dead letters in place and appends one
//!    `memory_forgotten` tombstone per project, atomically, and marks itself *forget
//!    pending*: from then on nothing opens it but `admin forget` (`--resume`);
//! 4. the BM25 and vector indexes are deleted (they hold the old text and are rebuilt);
//! 5. the store's current values are copied into a fresh database without projections,
//!    outbox and cursors, which is swapped in — this also ends the pending state;
//! 6. the actors rebuild the TOC, grips, catalog, ideas and both indexes from the log.
//!
//! It runs offline: a daemon holds the data dir, and rewriting under running actors
//! would race their reads. Hooks spool meanwhile and send at the next run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use memory_config::Config;
use memory_redact::{ForgetSelector, Forgetter};
use memory_store::{CompactReport, ForgetBatch, OutboxSeq, Store, StoreError};
use memory_types::DEFAULT_PROJECT;
use serde::Serialize;
use tracing::warn;

use crate::cli::{ForgetArgs, ForgetSelectorArgs};
use crate::embedded::{REDACTION_KEY_FILE, start_pipeline};
use crate::query_cli::print_json;
use crate::say;
use crate::settings::store_options;

/// What `admin forget` did (or, with `--dry-run`, would do).
#[derive(Debug, Default, Serialize)]
struct ForgetReport {
    /// `event`, `session`, `match` or `resume`.
    selector: String,
    /// Nothing was changed.
    dry_run: bool,
    /// Rewritten events by project, with their ids.
    events: BTreeMap<String, Vec<String>>,
    /// Spans replaced in them.
    spans: u64,
    /// Dead letters rewritten.
    dead_letters: usize,
    /// Spooled events rewritten.
    spooled: usize,
    /// The tombstones' event id (one per project above).
    tombstone_id: Option<String>,
    /// Finished a forget an earlier run left pending.
    resumed: bool,
    /// The store's compaction.
    compaction: Option<CompactReport>,
    /// Seconds to rebuild the projections and indexes.
    rebuild_secs: f64,
    /// Every projection and index had caught up when the command ended.
    caught_up: bool,
}

/// `admin forget …`.
pub async fn run(config: &Config, data_dir: &Path, args: ForgetArgs) -> anyhow::Result<ExitCode> {
    let options = store_options(config);
    let store = Store::open_allowing_forget(data_dir, &options).map_err(|err| match err {
        StoreError::Locked { path } => anyhow::anyhow!(
            "a daemon holds {}: stop it first. `admin forget` rewrites the store and \
             rebuilds every projection offline; hooks spool meanwhile and send at their \
             next run",
            path.display()
        ),
        other => anyhow::Error::new(other)
            .context(format!("cannot open the store at {}", data_dir.display())),
    })?;
    let key = memory_redact::load_or_create_key(&data_dir.join(REDACTION_KEY_FILE))
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let pending = store.forget_pending()?;
    let mut report = ForgetReport {
        dry_run: args.dry_run,
        resumed: pending,
        ..ForgetReport::default()
    };
    let forgetter = match selector(&args.selector)? {
        Some(selector) => {
            report.selector = selector.name().to_owned();
            let id = format!("forget-{}", ulid::Ulid::new());
            Some(Forgetter::new(selector, args.project.clone(), &key, id))
        }
        None => {
            report.selector = "resume".to_owned();
            None
        }
    };
    let spool = crate::hook_cli::spool_dir(config, data_dir);
    let mut batch = ForgetBatch::default();
    if let Some(forgetter) = &forgetter {
        batch = plan(&store, forgetter, &mut report)?;
        report.spooled = scrub_spool(&spool, forgetter, args.dry_run)?;
    }
    if args.dry_run {
        return finish(&report, args.json);
    }
    if batch.rewrites.is_empty() && batch.dead_letters.is_empty() && !pending {
        if report.spooled == 0 {
            say!("nothing matched: nothing changed");
        } else {
            say!(
                "{} spooled event(s) rewritten; nothing in the store matched",
                report.spooled
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !batch.rewrites.is_empty() || !batch.dead_letters.is_empty() {
        store.forget(&batch).context("cannot rewrite the log")?;
        report.tombstone_id = forgetter.as_ref().map(|f| f.tombstone_id().to_owned());
    }
    drop(store);

    for index in [
        config.teleport.bm25.resolve_index_path(data_dir),
        config.teleport.vector.resolve_index_path(data_dir),
    ] {
        if index.exists() {
            std::fs::remove_dir_all(&index)
                .with_context(|| format!("cannot delete the index at {}", index.display()))?;
        }
    }
    report.compaction = Some(
        memory_store::compact_after_forget(data_dir, &options)
            .context("cannot compact the store")?,
    );

    let started = Instant::now();
    let store = Store::open(data_dir, &options)?;
    let pipeline = start_pipeline(config, store).await?;
    report.caught_up = pipeline
        .wait_caught_up(Duration::from_secs(args.wait_timeout_secs))
        .await;
    pipeline.shutdown().await;
    report.rebuild_secs = started.elapsed().as_secs_f64();
    finish(&report, args.json)
}

fn selector(args: &ForgetSelectorArgs) -> anyhow::Result<Option<ForgetSelector>> {
    let selector = if !args.events.is_empty() {
        ForgetSelector::events(args.events.iter().cloned())
    } else if let Some(session) = &args.session {
        ForgetSelector::session(session)
    } else if let Some(pattern) = &args.pattern {
        ForgetSelector::pattern(pattern)
    } else {
        return Ok(None);
    };
    selector.map(Some).map_err(|err| anyhow::anyhow!("{err}"))
}

/// Every event and dead letter `forgetter` rewrites, and a tombstone per project.
fn plan(
    store: &Store,
    forgetter: &Forgetter,
    report: &mut ForgetReport,
) -> anyhow::Result<ForgetBatch> {
    let mut batch = ForgetBatch::default();
    for item in store.log_events(OutboxSeq::ZERO) {
        let (seq, event) = item?;
        if let Some(rewritten) = forgetter.rewrite_event(&event) {
            report.spans += u64::from(rewritten.spans);
            report
                .events
                .entry(event.project_id.clone())
                .or_default()
                .push(event.event_id.clone());
            batch.rewrites.push((seq, rewritten.event));
        }
    }
    for item in store.all_dead_letters() {
        let (id, mut dead_letter) = item?;
        let payload = forgetter.rewrite_bytes(&dead_letter.payload);
        let error = forgetter.rewrite_bytes(dead_letter.error.as_bytes());
        if payload.is_none() && error.is_none() {
            continue;
        }
        if let Some(payload) = payload {
            dead_letter.payload = payload;
        }
        if let Some(error) = error {
            dead_letter.error = String::from_utf8_lossy(&error).into_owned();
        }
        batch.dead_letters.push((id, dead_letter));
    }
    report.dead_letters = batch.dead_letters.len();
    let now = memory_types::now_ms();
    if report.events.is_empty() && !batch.dead_letters.is_empty() {
        batch.tombstones.push(forgetter.tombstone(
            DEFAULT_PROJECT,
            &[],
            batch.dead_letters.len(),
            now,
        ));
    }
    for (project, ids) in &report.events {
        batch
            .tombstones
            .push(forgetter.tombstone(project, ids, batch.dead_letters.len(), now));
    }
    Ok(batch)
}

/// Rewrites the spooled events `forgetter` touches (they reach the log at the next
/// flush); how many.
fn scrub_spool(
    spool: &memory_agents::SpoolDir,
    forgetter: &Forgetter,
    dry_run: bool,
) -> anyhow::Result<usize> {
    let Some(mut lock) = spool.take().context("cannot read the hooks' spool")? else {
        return Ok(0);
    };
    let mut rewritten = 0;
    for spooled in &mut lock.events {
        let event = &mut spooled.event;
        let project = spooled
            .project
            .clone()
            .or_else(|| event.project_id.clone())
            .unwrap_or_else(|| DEFAULT_PROJECT.to_owned());
        let mut text = event.text.clone().unwrap_or_default();
        let mut metadata = event.metadata.clone().unwrap_or_default();
        let spans = forgetter.rewrite_parts(
            (
                &project,
                event.event_id.as_deref().unwrap_or_default(),
                &event.session_id,
            ),
            &mut text,
            &mut metadata,
        );
        if spans > 0 {
            rewritten += 1;
            if event.text.is_some() {
                event.text = Some(text);
            }
            event.metadata = Some(metadata);
        }
    }
    if rewritten > 0 && !dry_run {
        let events = std::mem::take(&mut lock.events);
        lock.keep(&events)
            .context("cannot rewrite the hooks' spool")?;
        warn!(rewritten, "admin forget rewrote spooled events");
    }
    Ok(rewritten)
}

fn finish(report: &ForgetReport, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(&serde_json::to_value(report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let events: usize = report.events.values().map(Vec::len).sum();
    if report.dry_run {
        say!(
            "would forget {} span(s) in {events} event(s) of {} project(s), {} dead \
             letter(s) and {} spooled event(s); nothing changed",
            report.spans,
            report.events.len(),
            report.dead_letters,
            report.spooled
        );
        for (project, ids) in &report.events {
            say!("  {project}: {}", ids.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if report.resumed {
        say!("finished the forget an earlier run left pending");
    }
    if let Some(id) = &report.tombstone_id {
        say!(
            "forgot {} span(s) in {events} event(s), {} dead letter(s) and {} spooled \
             event(s); tombstone {id} in {} project(s)",
            report.spans,
            report.dead_letters,
            report.spooled,
            report.events.len().max(1)
        );
    }
    if let Some(compaction) = &report.compaction {
        say!(
            "store compacted: {} records of {} keyspaces copied into a fresh database; \
             projections and indexes rebuilt in {:.1} s{}",
            compaction.records,
            compaction.keyspaces,
            report.rebuild_secs,
            if report.caught_up {
                ""
            } else {
                " (the vector index is still embedding: it resumes at the next start)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
