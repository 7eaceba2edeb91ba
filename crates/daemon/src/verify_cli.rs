//! `admin verify`: checks a stopped daemon's data dir against its own log, without
//! changing it — every consumer caught up (cursor at the outbox head), both indexes
//! healthy, every projection equal to a rebuild from the log, and each index holding
//! exactly the documents the log implies. Exits 1 on any of them failing, so scripts
//! (the crash soak, `benches/run-soak.sh`) and operators can rely on it.
//!
//! The rebuild runs in a scratch directory (`--scratch-dir`, default the system's temp
//! dir, removed afterwards): the store is copied from one pinned view
//! ([`memory_store::Store::view`]), every consumer's cursor there is set to the head
//! and the outbox truncated, so the copy holds the log and nothing derived from it,
//! and the projections are rebuilt the way `admin rebuild` does it
//! ([`memory_actors::Pipeline::rebuild_toc`], `rebuild_ideas`, a reset of the session
//! catalog), replaying the events from the log itself. The copy's accelerator indexes
//! are not built: the documents an index must hold are computed from the rebuilt
//! projections ([`memory_projections::implied_documents`], the walk the BM25 rebuild
//! adds), so no document is embedded. The data dir is only read: its store is opened
//! (which takes its lock, so a running daemon makes verify refuse), the BM25 index is
//! opened read-only, and the vector index is read through hard links of its committed
//! files in the scratch dir (opening an index removes files its manifest does not
//! name).
//!
//! Compared exactly: the session catalog; closed and open segments and the segmenter's
//! lease fences; grips, each segment's grips and the grip extractor's
//! document-frequency table; TOC nodes, their membership index, the rollup builder's
//! document-frequency table and the log's model summaries; the ideas graph; each index's
//! set of documents (by project, type and id), and what the BM25 index stores of each
//! (session, level, text, time). What is not a function of the log is left out, and the
//! report says so when it applies:
//! - when this process applied an open segment's last event (a wall-clock time) and an
//!   idea's record time;
//! - model output: with `[llm]` summaries in single mode, the nodes' titles, summaries,
//!   bullets and keywords (their structure is compared; the rebuild writes extractive
//!   ones), and with the LLM indexing engine in single mode the whole ideas graph (two
//!   answers of a model differ). A cluster replica's model output comes from its log
//!   (`toc_summary`, `ideas_proposed`), so there everything is compared;
//! - in single mode, the TOC of a project with a segment closed after `toc.segment_gap_secs`
//!   of wall-clock silence (close reason `idle`): the log does not say where the silence
//!   fell, and grips and keywords depend on the order segments closed in, so the
//!   project's segments, grips, nodes, their tables and their index documents are
//!   skipped (its catalog, ideas, event and idea documents are still compared);
//! - index documents a lifecycle prune may have removed (their kind was pruned, and
//!   they are older than the index's last prune), counted as pruned.
//!
//! After `admin backfill-ideas`, the graph is the backfill's (one session at a time),
//! which may link sessions differently from the log-order rebuild
//! (docs/operations.md); verify then reports the ideas graph as diverged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use memory_config::{Config, IndexingEngine};
use memory_projections::verify::{
    DocumentComparison, DumpOptions, HeldDocuments, PartComparison, ProjectionDump, StoredDoc,
    compare_documents, compare_dumps,
};
use memory_projections::{
    BM25_INDEXER, Bm25Handle, GRIP_EXTRACTOR, INDEXING_AGENT, PruneReport, ROLLUP_BUILDER,
    SEGMENTER, SESSION_CATALOG, VECTOR_INDEXER, implied_documents, read_committed_vectors,
};
use memory_store::Store;
use serde::Serialize;

use crate::cli::VerifyArgs;
use crate::embedded::{open_store, start_pipeline_with};
use crate::query_cli::print_json;
use crate::say;
use crate::settings::{as_cluster_replica, bm25_settings, store_options};

/// How long the rebuild may take to catch up: a year of events takes seconds.
const REBUILD_TIMEOUT: Duration = Duration::from_secs(6 * 3_600);

/// What an index holds: each document's key and what it stores of it, and its last
/// prune.
type HeldWithPrune = (HeldDocuments, Option<PruneReport>);

/// One consumer's place against the head.
#[derive(Clone, Debug, Serialize)]
pub struct ConsumerState {
    /// Its name.
    pub name: String,
    /// Its durable cursor (an index's: its last commit's).
    pub cursor: u64,
    /// Whether the cursor is at the head.
    pub caught_up: bool,
}

/// One index's health.
#[derive(Clone, Debug, Serialize)]
pub struct IndexState {
    /// `bm25` or `vector`.
    pub index: String,
    /// Whether it opens and reads.
    pub healthy: bool,
    /// Why not.
    pub error: Option<String>,
    /// Live documents.
    pub num_docs: usize,
}

/// What `admin verify` found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// The data dir checked.
    pub data_dir: PathBuf,
    /// The outbox head.
    pub head: u64,
    /// Events in the log.
    pub events: u64,
    /// Entries parked in dead letters (the rebuild parks the same ones).
    pub dead_letters: u64,
    /// Every consumer the configuration runs.
    pub consumers: Vec<ConsumerState>,
    /// Every enabled index.
    pub indexes: Vec<IndexState>,
    /// Each projection part against the rebuild.
    pub parts: Vec<PartComparison>,
    /// Each index's documents against the log's.
    pub documents: Vec<DocumentComparison>,
    /// What was not compared, and why.
    pub not_compared: Vec<String>,
    /// Seconds the rebuild took.
    pub rebuild_secs: f64,
}

impl VerifyReport {
    /// The parts and indexes whose contents differ from the rebuild.
    #[must_use]
    pub fn diverged(&self) -> Vec<String> {
        self.parts
            .iter()
            .filter(|part| !part.is_equal())
            .map(|part| part.part.clone())
            .chain(
                self.documents
                    .iter()
                    .filter(|documents| !documents.is_equal())
                    .map(|documents| format!("{}_documents", documents.index)),
            )
            .collect()
    }

    /// Consumers behind the head.
    #[must_use]
    pub fn behind(&self) -> Vec<String> {
        self.consumers
            .iter()
            .filter(|consumer| !consumer.caught_up)
            .map(|consumer| consumer.name.clone())
            .collect()
    }

    /// Indexes that are not healthy.
    #[must_use]
    pub fn unhealthy(&self) -> Vec<String> {
        self.indexes
            .iter()
            .filter(|index| !index.healthy)
            .map(|index| index.index.clone())
            .collect()
    }

    /// Whether everything checked out.
    #[must_use]
    pub fn ok(&self) -> bool {
        self.diverged().is_empty() && self.behind().is_empty() && self.unhealthy().is_empty()
    }
}

/// `admin verify`.
pub async fn run(config: &Config, data_dir: &Path, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let report = verify(config, data_dir, &args).await?;
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("ok".to_owned(), report.ok().into());
            object.insert("diverged".to_owned(), report.diverged().into());
            object.insert("behind".to_owned(), report.behind().into());
            object.insert("unhealthy".to_owned(), report.unhealthy().into());
        }
        print_json(&value)?;
    } else {
        print_report(&report);
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whether `[indexing]` asks for the LLM engine (`llm`, or `auto` with a model).
fn llm_engine(config: &Config) -> bool {
    match config.indexing.engine {
        IndexingEngine::Heuristic => false,
        IndexingEngine::Llm => true,
        IndexingEngine::Auto => config.llm.enabled,
    }
}

/// Checks `data_dir` as the module docs say.
///
/// # Errors
/// A store that does not open (a running daemon holds it), a scratch dir that cannot
/// be made, or a rebuild that fails or does not finish.
pub async fn verify(
    config: &Config,
    data_dir: &Path,
    args: &VerifyArgs,
) -> anyhow::Result<VerifyReport> {
    let store = open_store(config, data_dir)?;
    let status = store.status()?;
    let head = store.head();
    let replica = store.applied_stream_seq().unwrap_or(0) > 0;
    let scratch_parent = args.scratch_dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&scratch_parent)
        .with_context(|| format!("cannot create {}", scratch_parent.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix("memory-verify-")
        .tempdir_in(&scratch_parent)
        .with_context(|| format!("cannot make a scratch dir in {}", scratch_parent.display()))?;
    let mut report = VerifyReport {
        data_dir: data_dir.to_path_buf(),
        head: head.0,
        events: status.events_by_project.values().sum(),
        dead_letters: status.dead_letters,
        ..VerifyReport::default()
    };

    // Every consumer the configuration runs, against the head.
    let mut names = vec![SESSION_CATALOG, SEGMENTER, GRIP_EXTRACTOR, ROLLUP_BUILDER];
    if config.indexing.enabled {
        names.push(INDEXING_AGENT);
    }
    for name in names {
        let cursor = status.cursors.get(name).copied().unwrap_or(0);
        report.consumers.push(ConsumerState {
            name: name.to_owned(),
            cursor,
            caught_up: cursor == head.0,
        });
    }
    // An unfinished ideas backfill: the graph is the sessions it reached, not yet what
    // it will be (the restarted agent carries it on) — behind, not diverged.
    if let Some(backfill) = memory_projections::unfinished_backfill(&store)
        .context("cannot read the ideas backfill's progress")?
    {
        report.consumers.push(ConsumerState {
            name: format!(
                "ideas_backfill ({} of {} sessions)",
                backfill.progress.sessions_done, backfill.progress.sessions_total
            ),
            cursor: backfill.progress.sessions_done as u64,
            caught_up: false,
        });
    }
    let index_state = |index: &str, result: Result<usize, String>| match result {
        Ok(num_docs) => IndexState {
            index: index.to_owned(),
            healthy: true,
            error: None,
            num_docs,
        },
        Err(error) => IndexState {
            index: index.to_owned(),
            healthy: false,
            error: Some(error),
            num_docs: 0,
        },
    };
    let mut actual_bm25: Option<HeldWithPrune> = None;
    if let Some(settings) = bm25_settings(config, data_dir) {
        let handle = Bm25Handle::open_read_only(settings);
        let status = handle.status(head);
        report.consumers.push(ConsumerState {
            name: BM25_INDEXER.to_owned(),
            cursor: handle.committed_cursor().0,
            caught_up: handle.committed_cursor() == head,
        });
        let documents = match (handle.error(), handle.documents()) {
            (Some(error), _) => Err(error),
            (None, None) => Err("no index is open".to_owned()),
            (None, Some(Err(err))) => Err(format!("its documents do not read: {err}")),
            (None, Some(Ok(hits))) => Ok(hits),
        };
        report.indexes.push(index_state(
            "bm25",
            documents.as_ref().map(Vec::len).map_err(Clone::clone),
        ));
        if let Ok(hits) = documents {
            let mut held = HeldDocuments::new();
            for hit in &hits {
                held.entry((hit.project_id.clone(), hit.doc_type, hit.doc_id.clone()))
                    .or_default()
                    .push(Some(StoredDoc::of_hit(hit)));
            }
            actual_bm25 = Some((held, status.last_prune));
        }
    }
    let mut actual_vector: Option<HeldWithPrune> = None;
    if config.teleport.vector_enabled() {
        let index_dir = config.teleport.vector.resolve_index_path(data_dir);
        let committed = read_committed_vectors(&index_dir, &scratch.path().join("vector-index"));
        let committed = match committed {
            Ok(Some(committed)) => Ok(committed),
            Ok(None) => Err(format!("no vector index at {}", index_dir.display())),
            Err(err) => Err(err.to_string()),
        };
        if let Ok(committed) = &committed {
            report.consumers.push(ConsumerState {
                name: VECTOR_INDEXER.to_owned(),
                cursor: committed.cursor.0,
                caught_up: committed.cursor == head,
            });
        }
        report.indexes.push(index_state(
            "vector",
            committed
                .as_ref()
                .map(|committed| committed.doc_keys.len())
                .map_err(Clone::clone),
        ));
        if let Ok(committed) = committed {
            let held = committed
                .doc_keys
                .into_iter()
                .map(|key| ((key.project_id, key.doc_type, key.doc_id), vec![None]))
                .collect();
            actual_vector = Some((held, committed.last_prune));
        }
    }

    // What the models wrote in single mode cannot be rebuilt.
    let mask_summaries = !replica && config.llm.enabled && config.llm.summaries;
    if mask_summaries {
        report.not_compared.push(
            "the TOC nodes' titles, summaries, bullets and keywords: a model wrote them \
             ([llm] summaries); their structure is compared"
                .to_owned(),
        );
    }
    let ideas = config.indexing.enabled && (replica || !llm_engine(config));
    if config.indexing.enabled && !ideas {
        report.not_compared.push(
            "the ideas graph: the LLM indexing engine wrote it ([indexing] engine)".to_owned(),
        );
    }
    let options = DumpOptions {
        mask_summaries,
        ideas,
    };

    // The rebuild, in the scratch dir.
    let started = Instant::now();
    let rebuilt = rebuild(
        config,
        &store,
        &scratch.path().join("store"),
        replica,
        ideas,
    )
    .await?;
    report.rebuild_secs = started.elapsed().as_secs_f64();

    let incremental = ProjectionDump::capture(&store, options)?;
    let rebuilt_dump = ProjectionDump::capture(&rebuilt, options)?;
    let skip: BTreeSet<String> = if replica {
        BTreeSet::new()
    } else {
        incremental.idle_closed().keys().cloned().collect()
    };
    for (project, count) in incremental.idle_closed() {
        if skip.contains(project) {
            report.not_compared.push(format!(
                "project {project}'s TOC (segments, grips, nodes and their documents): {count} \
                 segments closed on the wall clock after the segment gap, which the log \
                 does not record"
            ));
        }
    }
    report.parts = compare_dumps(&incremental, &rebuilt_dump, &skip, args.examples);
    for (name, actual, index_events) in [
        ("bm25", actual_bm25, config.teleport.bm25.index_events),
        ("vector", actual_vector, config.teleport.vector.index_events),
    ] {
        let Some((held, last_prune)) = actual else {
            continue;
        };
        let expected = implied_documents(&rebuilt, index_events)?;
        report.documents.push(compare_documents(
            name,
            &expected,
            &held,
            last_prune.as_ref(),
            &skip,
            args.examples,
        ));
    }
    drop(rebuilt);
    if args.keep_scratch {
        let kept = scratch.keep();
        report
            .not_compared
            .push(format!("(the scratch dir is kept: {})", kept.display()));
    }
    Ok(report)
}

/// Copies `store` into `scratch` without what is derived from the log and rebuilds every
/// projection there; returns the rebuilt store.
async fn rebuild(
    config: &Config,
    store: &Store,
    scratch: &Path,
    replica: bool,
    ideas: bool,
) -> anyhow::Result<Store> {
    store
        .view()
        .write_to(scratch)
        .with_context(|| format!("cannot copy the store into {}", scratch.display()))?;
    let copy = Store::open(scratch, &store_options(config))?;
    // Every consumer at the head, then the outbox truncated below them: the copy holds
    // the log and nothing derived from it, and a consumer reset to the start replays
    // the events from the log itself.
    let head = copy.head();
    for name in copy.cursors()?.into_keys() {
        copy.set_cursor(&name, head)?;
    }
    copy.truncate_outbox()?;
    let pipeline = start_pipeline_with(config, copy.clone(), |pipeline| {
        if replica {
            as_cluster_replica(config, pipeline);
        }
        pipeline.bm25 = None;
        pipeline.vector = None;
        pipeline.bm25_prune_schedule = None;
        // A replay applies every event at once: no wall-clock silence to close on.
        pipeline.segmenter.idle_close_by_clock = false;
        // Extractive: a model's summaries are masked (single mode) or come from the log
        // (a replica).
        pipeline.rollup = memory_projections::RollupConfig::default();
        if !ideas {
            pipeline.indexing = None;
        }
    })
    .await?;
    let result = async {
        pipeline.session_catalog.reset().await?;
        pipeline.rebuild_toc().await?;
        if pipeline.indexing_agent.is_some() {
            pipeline.rebuild_ideas().await?;
        }
        anyhow::Ok(pipeline.wait_caught_up(REBUILD_TIMEOUT).await)
    }
    .await;
    pipeline.shutdown().await;
    let caught_up = result.map_err(|err| anyhow::anyhow!("the rebuild failed: {err}"))?;
    anyhow::ensure!(
        caught_up,
        "the rebuild did not catch up within {REBUILD_TIMEOUT:?}"
    );
    Ok(copy)
}

/// At most `width` characters of `text` around character `at`.
fn window(text: &str, at: usize, width: usize) -> String {
    let start = at.saturating_sub(width / 4);
    let chars: String = text.chars().skip(start).take(width).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if text.chars().count() > start + width {
        "…"
    } else {
        ""
    };
    format!("{before}{chars}{after}")
}

/// The two values around where they first differ.
fn show_difference(incremental: Option<&str>, rebuilt: Option<&str>) -> (String, String) {
    const WIDTH: usize = 160;
    let at = match (incremental, rebuilt) {
        (Some(a), Some(b)) => a
            .chars()
            .zip(b.chars())
            .position(|(x, y)| x != y)
            .unwrap_or_else(|| a.chars().count().min(b.chars().count())),
        _ => 0,
    };
    let show = |value: Option<&str>| value.map_or("(none)".to_owned(), |v| window(v, at, WIDTH));
    (show(incremental), show(rebuilt))
}

fn print_report(report: &VerifyReport) {
    say!(
        "verify {}: log head {}, {} events, {} dead letters; rebuilt from the log in {:.1} s",
        report.data_dir.display(),
        report.head,
        report.events,
        report.dead_letters,
        report.rebuild_secs
    );
    for consumer in &report.consumers {
        say!(
            "  consumer {:<16} cursor {:>10}  {}",
            consumer.name,
            consumer.cursor,
            if consumer.caught_up {
                "caught up".to_owned()
            } else {
                format!("BEHIND by {}", report.head.saturating_sub(consumer.cursor))
            }
        );
    }
    for index in &report.indexes {
        match &index.error {
            None => say!(
                "  index    {:<16} healthy, {} documents",
                index.index,
                index.num_docs
            ),
            Some(error) => say!("  index    {:<16} UNHEALTHY: {error}", index.index),
        }
    }
    for part in &report.parts {
        let skipped = if part.skipped > 0 {
            format!(" ({} skipped)", part.skipped)
        } else {
            String::new()
        };
        if part.is_equal() {
            say!(
                "  {:<20} {:>8} records  equal{skipped}",
                part.part,
                part.num_incremental
            );
            continue;
        }
        say!(
            "  {:<20} {:>8} records  DIFFER: {} differ, {} only incremental, {} only rebuilt \
             (rebuild holds {}){skipped}",
            part.part,
            part.num_incremental,
            part.differing,
            part.only_incremental,
            part.only_rebuilt,
            part.num_rebuilt
        );
        for example in &part.examples {
            let (incremental, rebuilt) =
                show_difference(example.incremental.as_deref(), example.rebuilt.as_deref());
            say!("      {} | {}", example.project, example.key);
            say!("        incremental: {incremental}");
            say!("        rebuilt:     {rebuilt}");
        }
    }
    for documents in &report.documents {
        let pruned = if documents.pruned > 0 {
            format!(", {} pruned", documents.pruned)
        } else {
            String::new()
        };
        if documents.is_equal() {
            say!(
                "  {:<20} {:>8} documents  equal to the log's{pruned}",
                format!("{} documents", documents.index),
                documents.num_actual
            );
            continue;
        }
        say!(
            "  {:<20} {:>8} documents  DIFFER from the log's {}: {} missing, {} extra, {} stale, {} doubled{pruned}",
            format!("{} documents", documents.index),
            documents.num_actual,
            documents.num_expected,
            documents.missing,
            documents.extra,
            documents.stale,
            documents.doubled
        );
        for example in &documents.examples {
            say!("      {example}");
        }
    }
    for reason in &report.not_compared {
        say!("  not compared: {reason}");
    }
    let (diverged, behind, unhealthy) = (report.diverged(), report.behind(), report.unhealthy());
    if report.ok() {
        say!(
            "ok: every consumer caught up, every index healthy, the projections equal a rebuild from the log"
        );
    } else {
        say!(
            "FAILED: diverged [{}], behind [{}], unhealthy [{}]",
            diverged.join(", "),
            behind.join(", "),
            unhealthy.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use memory_store::OutboxSeq;

    use super::*;
    use crate::cli::IngestArgs;

    /// The bundled sample ingested into `dir` the way `ingest --file --wait` does, with
    /// the BM25 index and the ideas graph; the vector index off (embedding is slow and
    /// needs the model; its document comparison is the BM25 one without content).
    async fn sample_data_dir(dir: &Path) -> Config {
        let mut config = Config::default();
        config.teleport.vector.enabled = false;
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sample/conversations.jsonl");
        let args = IngestArgs {
            file: sample,
            project: memory_types::DEFAULT_PROJECT.to_owned(),
            wait: true,
            wait_timeout_secs: 120,
            json: true,
        };
        let code = crate::ingest_file::ingest_into(&config, dir, &args)
            .await
            .expect("ingest");
        assert_eq!(code, ExitCode::SUCCESS);
        config
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_healthy_data_dir_passes_and_a_damaged_projection_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = sample_data_dir(dir.path()).await;
        let args = VerifyArgs {
            scratch_dir: Some(dir.path().join("scratch")),
            examples: 3,
            ..VerifyArgs::default()
        };
        let report = verify(&config, dir.path(), &args).await.expect("verify");
        assert!(report.ok(), "{report:#?}");
        assert!(report.events > 500);
        let nodes = report
            .parts
            .iter()
            .find(|part| part.part == "toc_nodes")
            .expect("nodes compared");
        assert!(nodes.num_incremental > 20, "{nodes:?}");
        assert!(
            report
                .parts
                .iter()
                .any(|part| part.part == "ideas" && part.num_incremental > 0)
        );
        let bm25 = &report.documents[0];
        assert_eq!(bm25.index, "bm25");
        assert!(bm25.num_actual > 500, "{bm25:?}");
        assert!(
            std::fs::read_dir(dir.path().join("scratch"))
                .expect("scratch parent")
                .next()
                .is_none(),
            "the scratch dir is removed"
        );

        // Damage: a TOC node's title changed, a grip gone, the catalog's cursor set
        // back.
        {
            let store = open_store(&config, dir.path()).expect("store");
            let nodes = store.projection_keyspace("toc_nodes").expect("nodes");
            let (key, value) = nodes
                .first_key_value()
                .expect("a node")
                .into_inner()
                .expect("read");
            let mut node: memory_toc::TocNode =
                memory_store::codec::decode("toc node", 1, &value).expect("decode");
            node.title.push_str(" (damaged)");
            let value = memory_store::codec::encode("toc node", 1, &node).expect("encode");
            nodes.insert(key, value).expect("write");
            let grips = store.projection_keyspace("grips").expect("grips");
            let (grip, _) = grips
                .first_key_value()
                .expect("a grip")
                .into_inner()
                .expect("read");
            grips.remove(grip).expect("remove");
            store
                .set_cursor(SESSION_CATALOG, OutboxSeq(store.head().0 - 1))
                .expect("cursor");
            store.sync().expect("sync");
        }
        let report = verify(&config, dir.path(), &args).await.expect("verify");
        assert!(!report.ok());
        let diverged = report.diverged();
        for part in ["toc_nodes", "grips"] {
            assert!(diverged.iter().any(|name| name == part), "{diverged:?}");
        }
        assert_eq!(report.behind(), [SESSION_CATALOG]);
        let nodes = report
            .parts
            .iter()
            .find(|part| part.part == "toc_nodes")
            .expect("nodes compared");
        assert_eq!(nodes.differing, 1, "{nodes:?}");
        let example = &nodes.examples[0];
        assert!(
            example
                .incremental
                .as_deref()
                .is_some_and(|node| node.contains("(damaged)")),
            "{example:?}"
        );
    }

    /// Writes the TOC node and the grips of one segment again under the ids TOC format 1
    /// gave them (no project in the hash) and announces them to the indexes, as a data
    /// dir built before format 2 holds them; returns the legacy ids' text.
    ///
    /// Format 1 hashed each grip's byte offset, which no record keeps, so the grips'
    /// legacy ids take their position instead: they are stale documents either way.
    fn add_format_1_records(store: &Store) -> Vec<String> {
        use memory_projections::{GRIPS_EXTRACTED, GripExtractor, RollupBuilder, TOC_NODE_WRITTEN};
        use memory_store::{DerivedEntry, codec};
        use memory_toc::{GripId, TocNode, TocNodeId};

        let segment = memory_projections::Segmenter::all_segments(store)
            .expect("segments")
            .into_iter()
            .next()
            .expect("a segment");
        let first = store
            .event(OutboxSeq(segment.events[0].seq))
            .expect("read")
            .expect("first event");
        let node_id: TocNodeId = segment.segment_id.parse().expect("segment id");
        let TocNodeId::Segment { day, .. } = node_id else {
            panic!("{node_id} is a segment id");
        };
        let legacy_id = TocNodeId::legacy_segment_for(day, first.timestamp_ms, &first.event_id);
        let node = RollupBuilder::node(store, &segment.project_id, &node_id)
            .expect("read node")
            .expect("segment node");
        let grips = GripExtractor::segment_grips(store, &segment.segment_id).expect("grips");
        assert!(!grips.is_empty());
        let legacy_grips: Vec<memory_toc::Grip> = grips
            .iter()
            .enumerate()
            .map(|(position, grip)| memory_toc::Grip {
                grip_id: GripId::legacy_derive(grip.timestamp_ms, &grip.event_id_start, position),
                segment_id: legacy_id,
                ..grip.clone()
            })
            .collect();
        let legacy_node = TocNode {
            node_id: legacy_id,
            ..node
        };
        let mut batch = store.projection_batch();
        let nodes = store.projection_keyspace("toc_nodes").expect("nodes");
        let mut node_key = segment.project_id.as_bytes().to_vec();
        node_key.push(0);
        node_key.extend_from_slice(legacy_id.to_string().as_bytes());
        batch.insert(
            &nodes,
            node_key,
            codec::encode("toc node", 1, &legacy_node).expect("encode"),
        );
        let grip_records = store.projection_keyspace("grips").expect("grips");
        for grip in &legacy_grips {
            batch.insert(
                &grip_records,
                grip.grip_id.to_string(),
                codec::encode("grip", 1, grip).expect("encode"),
            );
        }
        let grip_ids: Vec<String> = legacy_grips.iter().map(|g| g.grip_id.to_string()).collect();
        let segment_grips = store.projection_keyspace("segment_grips").expect("lists");
        batch.insert(
            &segment_grips,
            legacy_id.to_string(),
            codec::encode("segment grips", 1, &grip_ids).expect("encode"),
        );
        for kind in [TOC_NODE_WRITTEN, GRIPS_EXTRACTED] {
            batch.append_derived(DerivedEntry {
                kind: kind.to_owned(),
                project_id: segment.project_id.clone(),
                key: legacy_id.to_string(),
            });
        }
        store.commit_projection(batch).expect("commit");
        let mut legacy_ids = grip_ids;
        legacy_ids.push(legacy_id.to_string());
        legacy_ids
    }

    /// The BM25 document ids of a running pipeline, once it has caught up.
    async fn bm25_doc_ids(pipeline: &memory_actors::Pipeline) -> BTreeSet<String> {
        assert!(pipeline.wait_caught_up(REBUILD_TIMEOUT).await, "caught up");
        pipeline
            .bm25
            .as_ref()
            .expect("bm25 on")
            .documents()
            .expect("an open index")
            .expect("documents")
            .into_iter()
            .map(|hit| hit.doc_id)
            .collect()
    }

    /// A data dir whose TOC predates segment and grip ids with the project in them
    /// (TOC format 1, no format recorded): the next start rebuilds the TOC once, the old
    /// ids' documents leave the BM25 index (the events' documents stay), and `admin
    /// verify` finds it equal to a rebuild from the log. A later start rebuilds nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_format_1_toc_is_rebuilt_once_at_start_and_its_documents_go() {
        use memory_projections::{TOC_CLEARED, TOC_FORMAT_VERSION, toc_format};
        use memory_store::FeedItem;

        let dir = tempfile::tempdir().expect("tempdir");
        let config = sample_data_dir(dir.path()).await;
        let args = VerifyArgs {
            scratch_dir: Some(dir.path().join("scratch")),
            examples: 3,
            ..VerifyArgs::default()
        };
        // The old ids' records and documents, indexed by a daemon that still runs with
        // them (format recorded as current, so this start rebuilds nothing).
        let store = open_store(&config, dir.path()).expect("store");
        assert_eq!(
            toc_format(&store).expect("format"),
            Some(TOC_FORMAT_VERSION)
        );
        let legacy_ids = add_format_1_records(&store);
        let pipeline = start_pipeline_with(&config, store.clone(), |_| {})
            .await
            .expect("start");
        let held = bm25_doc_ids(&pipeline).await;
        assert!(
            legacy_ids.iter().all(|id| held.contains(id)),
            "{legacy_ids:?}"
        );
        pipeline.shutdown().await;
        // What an old build leaves: no format recorded.
        store
            .projection_keyspace("toc_format")
            .expect("format keyspace")
            .remove("format")
            .expect("remove");
        store.sync().expect("sync");
        drop(store);
        let report = verify(&config, dir.path(), &args).await.expect("verify");
        assert!(!report.ok(), "the old ids differ from a rebuild");

        // The upgrade.
        let store = open_store(&config, dir.path()).expect("store");
        let head_before = store.head();
        let pipeline = start_pipeline_with(&config, store.clone(), |_| {})
            .await
            .expect("start");
        assert_eq!(
            toc_format(&store).expect("format"),
            Some(TOC_FORMAT_VERSION)
        );
        let held = bm25_doc_ids(&pipeline).await;
        pipeline.shutdown().await;
        for legacy_id in &legacy_ids {
            assert!(!held.contains(legacy_id), "{legacy_id} is still indexed");
        }
        assert!(held.iter().any(|id| id.starts_with("toc:segment:")));
        assert!(held.iter().any(|id| id.starts_with("grip:")));
        let num_cleared = |store: &Store, after: OutboxSeq| {
            store
                .read_feed(after, usize::MAX)
                .expect("feed")
                .iter()
                .filter(|item| {
                    matches!(item, FeedItem::Derived { entry, .. } if entry.kind == TOC_CLEARED)
                })
                .count()
        };
        assert_eq!(num_cleared(&store, head_before), 1, "one rebuild");
        let head_after = store.head();
        drop(store);
        let report = verify(&config, dir.path(), &args).await.expect("verify");
        assert!(report.ok(), "{report:#?}");

        // Once: the next start finds the format current.
        let store = open_store(&config, dir.path()).expect("store");
        let pipeline = start_pipeline_with(&config, store.clone(), |_| {})
            .await
            .expect("start");
        assert!(pipeline.wait_caught_up(REBUILD_TIMEOUT).await);
        pipeline.shutdown().await;
        assert_eq!(num_cleared(&store, head_after), 0, "no second rebuild");
    }

    #[test]
    fn differences_are_shown_where_they_start() {
        let (a, b) = show_difference(Some("same same X tail"), Some("same same Y tail"));
        assert!(a.contains('X') && b.contains('Y'), "{a} / {b}");
        let (a, b) = show_difference(None, Some("only here"));
        assert_eq!((a.as_str(), b.as_str()), ("(none)", "only here"));
    }
}
