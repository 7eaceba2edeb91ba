//! [`Pipeline`]: the supervised set of actors one process runs over one store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memory_store::Store;
use memory_summarize::grips::GripConfig;
use ractor::{Actor, ActorRef, SpawnErr};
use tracing::info;

use memory_projections::{
    BM25_INDEXER, BackfillProgress, Bm25Handle, Bm25Indexer, Bm25Settings, ConsumerError,
    ConsumerFactory, GRIP_EXTRACTOR, GripExtractor, INDEXING_AGENT, IndexPruneReport,
    IndexingAgent, IndexingSettings, OutboxConsumer, PruneKind, ROLLUP_BUILDER, RebuildReport,
    Retention, RollupBuilder, RollupConfig, SEGMENTER, SESSION_CATALOG, Segmenter, SegmenterConfig,
    SessionCatalog, TOC_FORMAT_VERSION, VECTOR_INDEXER, VectorHandle, VectorIndexer,
    VectorSettings, mark_toc_format, mark_unbuilt_toc_format, prune_indexes, toc_format,
    toc_is_unbuilt,
};

use crate::consumer::{
    ConsumerActor, ConsumerArgs, ConsumerCounters, ConsumerHandle, RunnerConfig,
};
use crate::error::ActorError;
use crate::ingest::{IngestActor, IngestArgs, IngestHandle};
use crate::pruner::{IndexPruner, IndexPrunerArgs};
use crate::supervisor::{Backoff, ChildSpec, Supervisor, SupervisorArgs, SupervisorMsg};

/// Tuning of the whole pipeline.
#[derive(Clone)]
pub struct PipelineConfig {
    /// Most events per group commit.
    pub max_batch_events: usize,
    /// Most events waiting for a commit.
    pub max_pending_events: usize,
    /// The consumer runner's tuning.
    pub runner: RunnerConfig,
    /// Restart delays of crashed actors.
    pub restart_backoff: Backoff,
    /// Builds the session catalog (tests plant poison through it).
    pub session_catalog: ConsumerFactory<SessionCatalog>,
    /// When segments close.
    pub segmenter: SegmenterConfig,
    /// How many grips, how long.
    pub grips: GripConfig,
    /// How TOC nodes are written (the summarizer); their zone is the segmenter's.
    pub rollup: RollupConfig,
    /// The BM25 index, `None` when disabled.
    pub bm25: Option<Bm25Settings>,
    /// When the accelerator indexes (BM25 and vector) are pruned, in the segmenter's
    /// zone, with the BM25 settings' retention (the default retention when BM25 is
    /// disabled); `None` never.
    pub bm25_prune_schedule: Option<croner::Cron>,
    /// The vector index, `None` when disabled.
    pub vector: Option<VectorSettings>,
    /// The indexing agent (ideas graph), `None` when disabled.
    pub indexing: Option<IndexingSettings>,
    /// The agent's continuous-mode batch window: after catching up it waits this long,
    /// so one batch holds the turns of several sessions (1.5 s by default: a turn is an
    /// idea within 2 s at p99).
    pub indexing_window: Duration,
    /// Most events per continuous batch.
    pub indexing_batch_events: usize,
    /// Takes secrets out of every event before it is stored (and out of dead-letter
    /// payloads); the daemon always sets it, `None` only in tests of other things.
    pub redactor: Option<memory_redact::Redactor>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        PipelineConfig {
            max_batch_events: 10_000,
            max_pending_events: 200_000,
            runner: RunnerConfig::default(),
            restart_backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(30)),
            session_catalog: Arc::new(SessionCatalog::open),
            segmenter: SegmenterConfig::default(),
            grips: GripConfig::default(),
            rollup: RollupConfig::default(),
            bm25: None,
            bm25_prune_schedule: None,
            vector: None,
            indexing: None,
            indexing_window: Duration::from_millis(1_500),
            indexing_batch_events: 1_024,
            redactor: None,
        }
    }
}

/// The running actors.
pub struct Pipeline {
    supervisor: ActorRef<SupervisorMsg>,
    /// Where events go.
    pub ingest: IngestHandle,
    /// The reference consumer.
    pub session_catalog: ConsumerHandle<SessionCatalog>,
    /// Cuts sessions into segments.
    pub segmenter: ConsumerHandle<Segmenter>,
    /// Picks each segment's grips.
    pub grip_extractor: ConsumerHandle<GripExtractor>,
    /// Writes the TOC tree.
    pub rollup_builder: ConsumerHandle<RollupBuilder>,
    /// The BM25 index, when enabled: searched by queries, written by its indexer.
    pub bm25: Option<Bm25Handle>,
    /// Keeps the BM25 index up to date, when enabled.
    pub bm25_indexer: Option<ConsumerHandle<Bm25Indexer>>,
    /// The vector index and the embedding model, when enabled.
    pub vector: Option<VectorHandle>,
    /// Keeps the vector index up to date, when enabled.
    pub vector_indexer: Option<ConsumerHandle<VectorIndexer>>,
    /// Keeps the ideas graph, when enabled.
    pub indexing_agent: Option<ConsumerHandle<IndexingAgent>>,
    store: Store,
}

static NEXT_PIPELINE: AtomicU64 = AtomicU64::new(0);

impl Pipeline {
    /// Starts every actor under one supervisor: consumers first (downstream), the ingest
    /// actor last (the source), each having read its durable cursor in `pre_start`.
    ///
    /// # Errors
    /// When an actor cannot start (its `pre_start` failed).
    pub async fn start(store: Store, config: PipelineConfig) -> Result<Pipeline, SpawnErr> {
        let prefix = format!(
            "memory-{}-{}",
            std::process::id(),
            NEXT_PIPELINE.fetch_add(1, Ordering::Relaxed)
        );
        // Before any consumer runs, so that what the segmenter applies next does not
        // make a new store look like one that needs a rebuild.
        let toc_needs_upgrade =
            toc_needs_upgrade(&store).map_err(|err| SpawnErr::StartupFailed(Box::new(err)))?;
        let catalog_spec = consumer_spec(
            SESSION_CATALOG,
            &store,
            config.session_catalog.clone(),
            &config.runner,
        );
        let segmenter_config = config.segmenter.clone();
        let segmenter_factory: ConsumerFactory<Segmenter> =
            Arc::new(move |store: &Store| Segmenter::open(store, segmenter_config.clone()));
        let segmenter_spec = consumer_spec(SEGMENTER, &store, segmenter_factory, &config.runner);
        let grip_config = config.grips.clone();
        let grip_factory: ConsumerFactory<GripExtractor> =
            Arc::new(move |store: &Store| GripExtractor::open(store, grip_config.clone()));
        let grip_spec = consumer_spec(GRIP_EXTRACTOR, &store, grip_factory, &config.runner);
        let (rollup_config, timezone) = (config.rollup.clone(), config.segmenter.timezone);
        let rollup_factory: ConsumerFactory<RollupBuilder> = Arc::new(move |store: &Store| {
            RollupBuilder::open(store, rollup_config.clone(), timezone)
        });
        let rollup_spec = consumer_spec(ROLLUP_BUILDER, &store, rollup_factory, &config.runner);
        // Opened once, here: the indexer restarted after a panic reuses it (and its
        // writer lock), queries share it.
        let bm25 = match config.bm25.clone() {
            Some(settings) => Some(
                crate::background::spawn_blocking(move || Bm25Handle::open(settings))
                    .await
                    .map_err(|err| SpawnErr::StartupFailed(Box::new(err)))?,
            ),
            None => None,
        };
        let vector = match config.vector.clone() {
            Some(settings) => Some(
                open_vector_handle(settings)
                    .await
                    .map_err(|err| SpawnErr::StartupFailed(Box::new(err)))?,
            ),
            None => None,
        };
        let mut index_specs = Vec::new();
        if let Some(settings) = config.indexing.clone() {
            let factory: ConsumerFactory<IndexingAgent> =
                Arc::new(move |store: &Store| IndexingAgent::open(store, settings.clone()));
            let runner = RunnerConfig {
                batch_size: config.indexing_batch_events.max(1),
                linger: config.indexing_window,
                ..config.runner.clone()
            };
            // Before the indexes: they index the ideas it announces.
            index_specs.push(consumer_spec(INDEXING_AGENT, &store, factory, &runner));
        }
        if let Some(handle) = &vector {
            let indexer_handle = handle.clone();
            let factory: ConsumerFactory<VectorIndexer> =
                Arc::new(move |_: &Store| Ok(VectorIndexer::new(indexer_handle.clone())));
            index_specs.push(consumer_spec(
                VECTOR_INDEXER,
                &store,
                factory,
                &config.runner,
            ));
        }
        if let Some(handle) = &bm25 {
            let indexer_handle = handle.clone();
            let factory: ConsumerFactory<Bm25Indexer> =
                Arc::new(move |_: &Store| Ok(Bm25Indexer::new(indexer_handle.clone())));
            index_specs.push(consumer_spec(BM25_INDEXER, &store, factory, &config.runner));
        }
        if let Some(schedule) = config.bm25_prune_schedule.clone()
            && (bm25.is_some() || vector.is_some())
        {
            let args = IndexPrunerArgs {
                bm25: bm25.clone(),
                vector: vector.clone(),
                store: store.clone(),
                retention: config
                    .bm25
                    .as_ref()
                    .map_or_else(Retention::default, |settings| settings.retention.clone()),
                schedule,
                timezone: config.segmenter.timezone,
                clock: config.segmenter.clock.clone(),
            };
            index_specs.push(pruner_spec(args));
        }
        let ingest_spec = {
            let store = store.clone();
            let (max_batch_events, max_pending_events) =
                (config.max_batch_events, config.max_pending_events);
            ChildSpec::new("ingest", move |name, supervisor| {
                let args = IngestArgs {
                    store: store.clone(),
                    max_batch_events,
                    max_pending_events,
                };
                async move {
                    Actor::spawn_linked(Some(name), IngestActor, args, supervisor)
                        .await
                        .map(|(actor, _)| actor.get_cell())
                }
            })
        };
        let args = SupervisorArgs {
            prefix: prefix.clone(),
            children: index_specs
                .into_iter()
                .chain([
                    catalog_spec,
                    rollup_spec,
                    grip_spec,
                    segmenter_spec,
                    ingest_spec,
                ])
                .collect(),
            backoff: config.restart_backoff,
            healthy_after: Duration::from_secs(60),
        };
        let (supervisor, _) =
            Actor::spawn(Some(format!("{prefix}/supervisor")), Supervisor, args).await?;
        info!(prefix = %prefix, "pipeline started");
        let pipeline = Pipeline {
            supervisor,
            ingest: IngestHandle::new(Supervisor::child_name(&prefix, "ingest"), store.clone())
                .with_redactor(config.redactor.clone()),
            session_catalog: ConsumerHandle::new(Supervisor::child_name(&prefix, SESSION_CATALOG)),
            segmenter: ConsumerHandle::new(Supervisor::child_name(&prefix, SEGMENTER)),
            grip_extractor: ConsumerHandle::new(Supervisor::child_name(&prefix, GRIP_EXTRACTOR)),
            rollup_builder: ConsumerHandle::new(Supervisor::child_name(&prefix, ROLLUP_BUILDER)),
            bm25_indexer: bm25
                .as_ref()
                .map(|_| ConsumerHandle::new(Supervisor::child_name(&prefix, BM25_INDEXER))),
            bm25,
            vector_indexer: vector
                .as_ref()
                .map(|_| ConsumerHandle::new(Supervisor::child_name(&prefix, VECTOR_INDEXER))),
            vector,
            indexing_agent: config
                .indexing
                .as_ref()
                .map(|_| ConsumerHandle::new(Supervisor::child_name(&prefix, INDEXING_AGENT))),
            store,
        };
        if toc_needs_upgrade {
            let from = toc_format(&pipeline.store)
                .map_err(|err| SpawnErr::StartupFailed(Box::new(err)))?
                .unwrap_or(1);
            info!(
                from,
                to = TOC_FORMAT_VERSION,
                "upgrading the toc: rebuilding it from the log"
            );
            // As `admin rebuild` does, the TOC's backlog lands first (nothing is ingested
            // yet, so its consumers go idle): a reset while the segmenter still announced
            // segments would have the grip extractor and rollup builder read
            // announcements of segments the reset had deleted. A failure stops the
            // start; the next start tries again, as after a crash.
            pipeline
                .wait_toc_caught_up(std::time::Duration::from_secs(60))
                .await;
            if let Err(err) = pipeline.reset_toc().await {
                pipeline.shutdown().await;
                return Err(SpawnErr::StartupFailed(Box::new(err)));
            }
        }
        Ok(pipeline)
    }

    /// Every consumer's counters.
    pub async fn consumer_counters(&self) -> Vec<ConsumerCounters> {
        let mut counters: Vec<ConsumerCounters> =
            self.session_catalog.counters().await.into_iter().collect();
        counters.extend(self.segmenter.counters().await);
        counters.extend(self.grip_extractor.counters().await);
        counters.extend(self.rollup_builder.counters().await);
        if let Some(indexer) = &self.bm25_indexer {
            counters.extend(indexer.counters().await);
        }
        if let Some(indexer) = &self.vector_indexer {
            counters.extend(indexer.counters().await);
        }
        if let Some(agent) = &self.indexing_agent {
            counters.extend(agent.counters().await);
        }
        counters
    }

    /// Deletes the ideas graph (and the indexes' idea documents) and extracts it again
    /// from the whole log in log order: `admin rebuild --projection ideas`.
    ///
    /// # Errors
    /// When the agent is disabled or the reset fails.
    pub async fn rebuild_ideas(&self) -> Result<(), ActorError> {
        let Some(agent) = &self.indexing_agent else {
            return Err(ActorError::Disabled("ideas"));
        };
        agent.reset().await
    }

    /// Re-extracts the ideas of `project_id` (all projects when `None`) session by
    /// session, oldest first (the design's backfill mode); `progress` hears after each
    /// session. Continuous indexing waits meanwhile.
    ///
    /// # Errors
    /// When the agent is disabled or not running, or the backfill failed.
    pub async fn backfill_ideas(
        &self,
        project_id: Option<String>,
        mut progress: impl FnMut(&BackfillProgress) + Send + 'static,
    ) -> Result<BackfillProgress, ActorError> {
        let Some(agent) = &self.indexing_agent else {
            return Err(ActorError::Disabled("ideas"));
        };
        let result: Result<BackfillProgress, ConsumerError> = agent
            .exclusive(move |agent: &mut IndexingAgent, store: &Store| {
                agent.backfill(store, project_id.as_deref(), &mut progress)
            })
            .await?;
        result.map_err(ActorError::from)
    }

    /// Deletes the vector index and embeds the whole log again (the index is rebuilt in
    /// place; hybrid search uses BM25 alone for what is not embedded yet).
    ///
    /// # Errors
    /// When the index is disabled or the reset fails.
    pub async fn rebuild_vector(&self) -> Result<(), ActorError> {
        let Some(indexer) = &self.vector_indexer else {
            return Err(ActorError::Disabled("vector"));
        };
        indexer.reset().await
    }

    /// Rebuilds the BM25 index from the store into a new generation and swaps it in;
    /// searches use the old one meanwhile. Progress is in the handle's status.
    ///
    /// # Errors
    /// When the index is disabled, or the rebuild fails (the old index then stays).
    pub async fn rebuild_bm25(&self) -> Result<RebuildReport, ActorError> {
        let (Some(handle), Some(indexer)) = (&self.bm25, &self.bm25_indexer) else {
            return Err(ActorError::Disabled("bm25"));
        };
        let started = std::time::Instant::now();
        // The TOC first, so the rebuild sees every node the log implies.
        self.wait_caught_up(Duration::from_secs(60)).await;
        indexer.reset_from(self.store.head()).await?;
        let status = handle.status(self.store.head());
        let elapsed = started.elapsed();
        Ok(RebuildReport {
            num_docs: status.num_docs,
            duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            docs_per_sec: status.num_docs as f64 / elapsed.as_secs_f64().max(1e-9),
            cursor: status.cursor,
        })
    }

    /// Prunes the enabled accelerator indexes now with `cutoffs` (each kind with the
    /// time before which its documents go), as the scheduled prune does: `admin prune`.
    /// Each index is pruned and committed on its own; see [`IndexPruneReport`].
    pub async fn prune(&self, cutoffs: Vec<(PruneKind, u64)>) -> IndexPruneReport {
        let (store, bm25, vector) = (self.store.clone(), self.bm25.clone(), self.vector.clone());
        tokio::task::spawn_blocking(move || {
            prune_indexes(&store, bm25.as_ref(), vector.as_ref(), &cutoffs)
        })
        .await
        .unwrap_or_else(|err| IndexPruneReport {
            errors: [("prune".to_owned(), format!("prune panicked: {err}"))].into(),
            ..IndexPruneReport::default()
        })
    }

    /// Deletes the whole time table of contents (segments, grips, nodes) and rebuilds it
    /// from the event log. The segmenter replays the log from the start; the grip
    /// extractor and the rollup builder restart at the current head, so they see only
    /// the segments the replay announces, never the old announcements again. The
    /// indexes drop every TOC node and grip document at the rollup builder's
    /// `toc_cleared` and index what the replay announces. Records the TOC format as
    /// current: `Pipeline::start` runs the same resets on a TOC of an older format.
    ///
    /// # Errors
    /// When a reset fails or an actor does not answer.
    pub async fn rebuild_toc(&self) -> Result<(), ActorError> {
        // Let in-flight announcements land first, so none arrives after the resets.
        self.wait_caught_up(std::time::Duration::from_secs(60))
            .await;
        self.reset_toc().await
    }

    /// The resets of [`Pipeline::rebuild_toc`], then the TOC format recorded as
    /// current: the rebuild writes ids of this build's format. The rollup builder's
    /// reset announces `toc_cleared`, so the indexes drop every TOC node and grip
    /// document before the replay announces the new ones. A crash before the format is
    /// recorded repeats the resets at the next start (they are idempotent); after it, the
    /// replay resumes from the segmenter's cursor like any other work.
    async fn reset_toc(&self) -> Result<(), ActorError> {
        let head = self.store.head();
        self.rollup_builder.reset_from(head).await?;
        self.grip_extractor.reset_from(head).await?;
        self.segmenter.reset().await?;
        let store = self.store.clone();
        crate::background::spawn_blocking(move || mark_toc_format(&store))
            .await
            .map_err(|err| ActorError::NotRunning(format!("toc format marker: {err}")))??;
        Ok(())
    }

    /// Waits until every consumer has applied everything up to the current head, or
    /// `timeout` passes; true when caught up.
    pub async fn wait_caught_up(&self, timeout: Duration) -> bool {
        self.wait_up_to_head(timeout, true).await
    }

    /// [`Pipeline::wait_caught_up`] for the TOC's consumers only (segmenter, grip
    /// extractor, rollup builder): the indexes may still be behind.
    async fn wait_toc_caught_up(&self, timeout: Duration) -> bool {
        self.wait_up_to_head(timeout, false).await
    }

    /// Waits until the TOC's consumers, and with `all` every other consumer and index,
    /// have applied everything up to the current head, or `timeout` passes.
    async fn wait_up_to_head(&self, timeout: Duration, all: bool) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // Consumers append derived entries, so the head can move while we wait.
            let head = self.store.head();
            let remaining = || deadline.saturating_duration_since(std::time::Instant::now());
            let toc_caught_up = self.segmenter.wait_for(head, remaining()).await
                && self.grip_extractor.wait_for(head, remaining()).await
                && self.rollup_builder.wait_for(head, remaining()).await;
            let caught_up = toc_caught_up
                && (!all
                    || (self.session_catalog.wait_for(head, remaining()).await
                        && self.wait_bm25_committed(head, remaining()).await
                        && self.wait_vector_committed(head, remaining()).await
                        && self.wait_agent(head, remaining()).await));
            if !caught_up {
                return false;
            }
            if self.store.head() == head {
                return true;
            }
        }
    }

    /// Waits until the indexing agent has applied everything up to `seq`; true at once
    /// when it is disabled.
    async fn wait_agent(&self, seq: memory_store::OutboxSeq, timeout: Duration) -> bool {
        match &self.indexing_agent {
            Some(agent) => agent.wait_for(seq, timeout).await,
            None => true,
        }
    }

    /// Waits until the BM25 index has *committed* (searchable) everything up to `seq`;
    /// true at once when it is disabled or broken (a broken index waits for a rebuild).
    async fn wait_bm25_committed(&self, seq: memory_store::OutboxSeq, timeout: Duration) -> bool {
        match (&self.bm25, &self.bm25_indexer) {
            (Some(handle), Some(indexer)) => {
                wait_committed(indexer, seq, timeout, || {
                    handle.committed_cursor() >= seq || handle.error().is_some()
                })
                .await
            }
            _ => true,
        }
    }

    /// Waits until the vector index has committed everything up to `seq`; true at once
    /// when it is disabled or unhealthy.
    async fn wait_vector_committed(&self, seq: memory_store::OutboxSeq, timeout: Duration) -> bool {
        match (&self.vector, &self.vector_indexer) {
            (Some(handle), Some(indexer)) => {
                wait_committed(indexer, seq, timeout, || {
                    handle.committed_cursor() >= seq || handle.error().is_some()
                })
                .await
            }
            _ => true,
        }
    }

    /// Drains in-flight commits, then stops every actor (sources first).
    pub async fn shutdown(self) {
        self.ingest.flush().await;
        let _ = self
            .supervisor
            .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(30)))
            .await;
        // Graceful shutdown commits what the indexers applied (PRD FR-04), both at once
        // and each for at most FINAL_COMMIT_WAIT: a step the stop gave up on still
        // holds its index's writer, and waiting for it would hold the SIGTERM for as
        // long as it runs. What is not committed is replayed at the next start.
        let vector = self.vector.clone().map(|handle| {
            let store = self.store.clone();
            tokio::task::spawn_blocking(move || handle.commit(&store))
        });
        let bm25 = self.bm25.clone().map(|handle| {
            let store = self.store.clone();
            tokio::task::spawn_blocking(move || handle.commit(&store))
        });
        let deadline = tokio::time::Instant::now() + FINAL_COMMIT_WAIT;
        for (index, commit) in [("vector", vector), ("bm25", bm25)] {
            let Some(commit) = commit else { continue };
            match tokio::time::timeout_at(deadline, commit).await {
                Ok(Ok(Ok(_))) => {}
                Ok(Ok(Err(err))) => {
                    tracing::warn!(index, error = %err, "final index commit failed; the indexer replays at the next start");
                }
                Ok(Err(err)) => {
                    tracing::warn!(index, error = %err, "final index commit panicked; the indexer replays at the next start");
                }
                Err(_) => {
                    tracing::warn!(index, wait = ?FINAL_COMMIT_WAIT, "final index commit still waits for a running step; the indexer replays at the next start");
                }
            }
        }
        let _ = self.store.sync();
        info!("pipeline stopped");
    }
}

/// How long a shutdown waits for the indexes' final commits.
const FINAL_COMMIT_WAIT: Duration = Duration::from_secs(5);

/// Whether the store's TOC was built with ids of an older format and must be rebuilt:
/// no format recorded (or an older one) while the segmenter has built something. A
/// store whose segmenter has built nothing is marked current at once (with a
/// `toc_cleared` for the indexes when its log is not empty: `mark_unbuilt_toc_format`).
fn toc_needs_upgrade(store: &Store) -> Result<bool, ConsumerError> {
    match toc_format(store)? {
        Some(found) if found >= TOC_FORMAT_VERSION => {
            if found > TOC_FORMAT_VERSION {
                return Err(ConsumerError::Internal(format!(
                    "the toc has format {found}; this build writes format \
                     {TOC_FORMAT_VERSION}: a newer build wrote it, run that one"
                )));
            }
            Ok(false)
        }
        Some(_) | None => {
            if toc_is_unbuilt(store)? {
                mark_unbuilt_toc_format(store)?;
                return Ok(false);
            }
            Ok(true)
        }
    }
}

/// Waits until an index's consumer has applied everything up to `seq` and then until
/// `committed` holds (the index keeps its cursor in its own commits, which follow the
/// runner's cursor); false when `timeout` passes first.
async fn wait_committed<C: OutboxConsumer>(
    indexer: &ConsumerHandle<C>,
    seq: memory_store::OutboxSeq,
    timeout: Duration,
    committed: impl Fn() -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    if !indexer.wait_for(seq, timeout).await {
        return false;
    }
    loop {
        if committed() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The supervised pruner; a restart starts it again with the same arguments.
fn pruner_spec(args: IndexPrunerArgs) -> ChildSpec {
    ChildSpec::new("index_pruner", move |name, supervisor| {
        let args = IndexPrunerArgs {
            bm25: args.bm25.clone(),
            vector: args.vector.clone(),
            store: args.store.clone(),
            retention: args.retention.clone(),
            schedule: args.schedule.clone(),
            timezone: args.timezone,
            clock: args.clock.clone(),
        };
        async move {
            Actor::spawn_linked(Some(name), IndexPruner, args, supervisor)
                .await
                .map(|(actor, _)| actor.get_cell())
        }
    })
}

/// A supervised child running `C` on the consumer runner.
fn consumer_spec<C: OutboxConsumer>(
    name: &str,
    store: &Store,
    factory: ConsumerFactory<C>,
    runner: &RunnerConfig,
) -> ChildSpec {
    let (store, runner) = (store.clone(), runner.clone());
    ChildSpec::new(name, move |registered_name, supervisor| {
        let args = ConsumerArgs {
            store: store.clone(),
            factory: factory.clone(),
            config: runner.clone(),
        };
        async move {
            Actor::spawn_linked(
                Some(registered_name),
                ConsumerActor::<C>::default(),
                args,
                supervisor,
            )
            .await
            .map(|(actor, _)| actor.get_cell())
        }
    })
}

/// Opens the vector tier with each embedder's ONNX Runtime threads at the priority of
/// the work they do: the indexing embedder is loaded on a background thread (its
/// intra-op threads, started by the load, inherit the lower priority and no longer
/// compete with the commit path), the query embedder and the index on a thread at the
/// daemon's priority (a question's threads must not wait behind a backfill).
///
/// # Errors
/// A load that panicked.
pub async fn open_vector_handle(
    settings: VectorSettings,
) -> Result<VectorHandle, tokio::task::JoinError> {
    let index_embedder = {
        let settings = settings.clone();
        crate::background::spawn_blocking(move || VectorHandle::load_index_embedder(&settings))
            .await?
    };
    tokio::task::spawn_blocking(move || VectorHandle::open_with(settings, index_embedder)).await
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
