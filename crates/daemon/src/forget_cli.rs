//! `admin forget --event ID… | --session S | --match REGEX | --resume`: what slipped past
//! redaction, removed from everything the data dir holds.
//!
//! The order is what makes it safe to stop at any point:
//! 1. the plan: every event and dead letter the selector touches;
//! 2. the store rewrites them in place and appends one `memory_forgotten` tombstone per
//!    project, atomically, with the store marked *forget pending* and the forget
//!    written down beside the mark: from then on nothing opens the store but
//!    `admin forget`, and `--resume` repeats every later step;
//! 3. the hooks' spool and the sessions' hook state are rewritten;
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
use memory_agents::Agent;
use memory_config::Config;
use memory_redact::{ForgetSelector, ForgetSpec, Forgetter};
use memory_store::{CompactReport, ForgetBatch, OutboxSeq, Store, StoreError};
use memory_types::DEFAULT_PROJECT;
use serde::Serialize;
use serde_json::Value;
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
    /// Sessions' hook states rewritten.
    session_states: usize,
    /// The index directories deleted to be rebuilt.
    indexes_deleted: Vec<String>,
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
    // A replica's events are copies of the replicated log's, which keeps them (deny
    // delete and purge); rewriting one replica would leave the log and its peers with
    // the text, make this replica differ from them, and — with the LLM engine — break
    // the chain of ideas proposals it replays.
    if store.applied_stream_seq()? > 0 && store.forget_pending()?.is_none() {
        anyhow::bail!(
            "{} is a cluster replica's data dir: its events come from the replicated log \
             (MEMORY_LOG), which keeps them, so forgetting them here would leave the log and \
             the other replicas with the text and make this replica differ. Forgetting in \
             cluster mode is not built",
            data_dir.display()
        );
    }
    let key = memory_redact::load_or_create_key(&data_dir.join(REDACTION_KEY_FILE))
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let pending = match store.forget_pending()? {
        Some(bytes) => {
            let spec: ForgetSpec = serde_json::from_slice(&bytes)
                .context("the pending forget's record does not parse")?;
            Some(Forgetter::from_spec(&spec, &key).map_err(|err| anyhow::anyhow!("{err}"))?)
        }
        None => None,
    };
    let mut report = ForgetReport {
        dry_run: args.dry_run,
        ..ForgetReport::default()
    };
    let spool = crate::hook_cli::spool_dir(config, data_dir);
    let forgetter = match (selector(&args.selector)?, pending) {
        (Some(_), Some(pending)) => anyhow::bail!(
            "an earlier forget ({} {}) did not finish: run `admin forget --resume` first",
            pending.selector().name(),
            pending.tombstone_id()
        ),
        (None, None) => {
            say!(
                "no forget is pending: nothing to finish (a forget interrupted before it \
                 changed the store did nothing there; run it again)"
            );
            return Ok(ExitCode::SUCCESS);
        }
        (None, Some(pending)) => {
            report.selector = "resume".to_owned();
            report.resumed = true;
            report.tombstone_id = Some(pending.tombstone_id().to_owned());
            pending
        }
        (Some(selector), None) => {
            report.selector = selector.name().to_owned();
            let id = format!("forget-{}", ulid::Ulid::new());
            let forgetter = Forgetter::new(selector, args.project.clone(), &key, id);
            let mut batch = plan(&store, &forgetter, &mut report)?;
            if args.dry_run {
                (report.spooled, report.session_states) = scrub_spool(&spool, &forgetter, true)?;
                return finish(&report, args.json);
            }
            if batch.rewrites.is_empty() && batch.dead_letters.is_empty() {
                (report.spooled, report.session_states) = scrub_spool(&spool, &forgetter, false)?;
                if report.spooled + report.session_states == 0 {
                    say!("nothing matched: nothing changed");
                    return Ok(ExitCode::SUCCESS);
                }
                return finish(&report, args.json);
            }
            batch.resume = serde_json::to_vec(&forgetter.spec())?;
            store.forget(&batch).context("cannot rewrite the log")?;
            report.tombstone_id = Some(forgetter.tombstone_id().to_owned());
            forgetter
        }
    };
    // Every step from here is idempotent, and `--resume` repeats them all.
    (report.spooled, report.session_states) = scrub_spool(&spool, &forgetter, false)?;
    drop(store);
    for index in [
        config.teleport.bm25.resolve_index_path(data_dir),
        config.teleport.vector.resolve_index_path(data_dir),
    ] {
        delete_index(&index, data_dir)?;
        report.indexes_deleted.push(index.display().to_string());
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

/// Deletes an index directory, refusing one that is the data dir or holds it (a
/// misconfigured `index_path` must not take the store with it).
fn delete_index(index: &Path, data_dir: &Path) -> anyhow::Result<()> {
    if !index.exists() {
        return Ok(());
    }
    let (index_abs, data_abs) = (index.canonicalize()?, data_dir.canonicalize()?);
    if data_abs.starts_with(&index_abs) {
        anyhow::bail!(
            "the index path {} is the data dir or holds it: fix `index_path` before \
             forgetting (nothing was deleted; the forget is pending, `--resume` finishes it)",
            index.display()
        );
    }
    std::fs::remove_dir_all(index)
        .with_context(|| format!("cannot delete the index at {}", index.display()))
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

/// Rewrites what `forgetter` touches in the hooks' directory: spooled events (they
/// reach the log at the next flush; a line that does not parse is rewritten as bytes)
/// and the sessions' hook state (a response still being written, which a later hook
/// stores). Returns how many spooled events and session states were (or, with
/// `dry_run`, would be) rewritten.
fn scrub_spool(
    spool: &memory_agents::SpoolDir,
    forgetter: &Forgetter,
    dry_run: bool,
) -> anyhow::Result<(usize, usize)> {
    let mut spooled = 0;
    if let Some(mut lock) = spool.take().context("cannot read the hooks' spool")? {
        for item in &mut lock.events {
            let event = &mut item.event;
            let project = item
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
                spooled += 1;
                if event.text.is_some() {
                    event.text = Some(text);
                }
                event.metadata = Some(metadata);
            }
        }
        let mut raw = std::mem::take(&mut lock.unreadable_lines);
        for line in &mut raw {
            if let Some(rewritten) = forgetter.rewrite_bytes(line.as_bytes()) {
                *line = String::from_utf8_lossy(&rewritten).into_owned();
                spooled += 1;
            }
        }
        if spooled > 0 && !dry_run {
            let events = std::mem::take(&mut lock.events);
            lock.keep_lines(&events, &raw)
                .context("cannot rewrite the hooks' spool")?;
            warn!(spooled, "admin forget rewrote spooled events");
        }
    }
    let mut states = 0;
    let session_files: Vec<std::path::PathBuf> = match forgetter.selector() {
        ForgetSelector::Session(session) => [Agent::ClaudeCode, Agent::Codex]
            .into_iter()
            .map(|agent| spool.session_path(agent, session))
            .filter(|path| path.exists())
            .collect(),
        ForgetSelector::Match { .. } => spool.session_files()?,
        ForgetSelector::Events(_) => Vec::new(),
    };
    for path in session_files {
        let rewrite = |state: &mut Value| match forgetter.selector() {
            // The session's reader state goes whole: what it holds is an unfinished
            // response of the forgotten session.
            ForgetSelector::Session(_) => state.as_object_mut().is_some_and(|object| {
                let transcript = object.remove("transcript").is_some();
                let rollout = object.remove("rollout").is_some();
                transcript || rollout
            }),
            _ => rewrite_strings(state, forgetter),
        };
        let rewritten = if dry_run {
            let bytes = std::fs::read(&path)?;
            let mut state: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            rewrite(&mut state)
        } else {
            spool
                .rewrite_session_file(&path, rewrite)
                .with_context(|| format!("cannot rewrite {}", path.display()))?
        };
        states += usize::from(rewritten);
    }
    Ok((spooled, states))
}

/// Every string in `value` through the pattern; true when one changed.
fn rewrite_strings(value: &mut Value, forgetter: &Forgetter) -> bool {
    match value {
        Value::String(text) => match forgetter.rewrite_text(text) {
            Some(rewritten) => {
                *text = rewritten;
                true
            }
            None => false,
        },
        // Every element is visited: `any` would stop at the first change.
        Value::Array(items) => {
            items
                .iter_mut()
                .map(|item| rewrite_strings(item, forgetter))
                .filter(|changed| *changed)
                .count()
                > 0
        }
        Value::Object(fields) => {
            fields
                .values_mut()
                .map(|item| rewrite_strings(item, forgetter))
                .filter(|changed| *changed)
                .count()
                > 0
        }
        _ => false,
    }
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
             letter(s), {} spooled event(s) and {} session state(s); nothing changed",
            report.spans,
            report.events.len(),
            report.dead_letters,
            report.spooled,
            report.session_states
        );
        for (project, ids) in &report.events {
            say!("  {project}: {}", ids.join(", "));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if report.resumed {
        say!(
            "finishing the forget an earlier run left pending ({})",
            report.tombstone_id.as_deref().unwrap_or_default()
        );
    }
    if report.resumed {
        say!(
            "rewrote {} spooled event(s) and {} session state(s)",
            report.spooled,
            report.session_states
        );
    } else if let Some(id) = &report.tombstone_id {
        say!(
            "forgot {} span(s) in {events} event(s), {} dead letter(s), {} spooled \
             event(s) and {} session state(s); tombstone {id} in {} project(s)",
            report.spans,
            report.dead_letters,
            report.spooled,
            report.session_states,
            report.events.len().max(1)
        );
    } else {
        say!(
            "nothing in the store matched; rewrote {} spooled event(s) and {} session \
             state(s)",
            report.spooled,
            report.session_states
        );
    }
    if let Some(compaction) = &report.compaction {
        say!(
            "store compacted: {} records of {} keyspaces copied into a fresh database; \
             indexes deleted ({}); projections and indexes rebuilt in {:.1} s{}",
            compaction.records,
            compaction.keyspaces,
            report.indexes_deleted.join(", "),
            report.rebuild_secs,
            if report.caught_up {
                ""
            } else {
                " (not all caught up within --wait-timeout-secs: `status` shows what \
                 lags; it resumes at the daemon's next start)"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
