//! [`Pipeline`]: the supervised set of actors one process runs over one store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memory_store::Store;
use memory_toc::grips::GripConfig;
use ractor::{Actor, ActorRef, SpawnErr};
use tracing::info;

use crate::consumer::{
    ConsumerActor, ConsumerArgs, ConsumerCounters, ConsumerFactory, ConsumerHandle, OutboxConsumer,
    RunnerConfig,
};
use crate::grip_extractor::{GRIP_EXTRACTOR, GripExtractor};
use crate::ingest::{IngestActor, IngestArgs, IngestHandle};
use crate::rollup_builder::{ROLLUP_BUILDER, RollupBuilder, RollupConfig};
use crate::segmenter::{SEGMENTER, Segmenter, SegmenterConfig};
use crate::session_catalog::{SESSION_CATALOG, SessionCatalog};
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
            children: vec![
                catalog_spec,
                rollup_spec,
                grip_spec,
                segmenter_spec,
                ingest_spec,
            ],
            backoff: config.restart_backoff,
            healthy_after: Duration::from_secs(60),
        };
        let (supervisor, _) =
            Actor::spawn(Some(format!("{prefix}/supervisor")), Supervisor, args).await?;
        info!(prefix = %prefix, "pipeline started");
        Ok(Pipeline {
            supervisor,
            ingest: IngestHandle::new(Supervisor::child_name(&prefix, "ingest"), store.clone()),
            session_catalog: ConsumerHandle::new(Supervisor::child_name(&prefix, SESSION_CATALOG)),
            segmenter: ConsumerHandle::new(Supervisor::child_name(&prefix, SEGMENTER)),
            grip_extractor: ConsumerHandle::new(Supervisor::child_name(&prefix, GRIP_EXTRACTOR)),
            rollup_builder: ConsumerHandle::new(Supervisor::child_name(&prefix, ROLLUP_BUILDER)),
            store,
        })
    }

    /// Every consumer's counters.
    pub async fn consumer_counters(&self) -> Vec<ConsumerCounters> {
        let mut counters: Vec<ConsumerCounters> =
            self.session_catalog.counters().await.into_iter().collect();
        counters.extend(self.segmenter.counters().await);
        counters.extend(self.grip_extractor.counters().await);
        counters.extend(self.rollup_builder.counters().await);
        counters
    }

    /// Deletes the whole time table of contents (segments, grips, nodes) and rebuilds it
    /// from the event log. The segmenter replays the log from the start; the grip
    /// extractor and the rollup builder restart at the current head, so they see only
    /// the segments the replay announces, never the old announcements again.
    ///
    /// # Errors
    /// When a reset fails or an actor does not answer.
    pub async fn rebuild_toc(&self) -> Result<(), String> {
        // Let in-flight announcements land first, so none arrives after the resets.
        self.wait_caught_up(std::time::Duration::from_secs(60))
            .await;
        let head = self.store.head();
        self.rollup_builder.reset_from(head).await?;
        self.grip_extractor.reset_from(head).await?;
        self.segmenter.reset().await
    }

    /// Waits until every consumer has applied everything up to the current head, or
    /// `timeout` passes; true when caught up.
    pub async fn wait_caught_up(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // Consumers append derived entries, so the head can move while we wait.
            let head = self.store.head();
            let remaining = || deadline.saturating_duration_since(std::time::Instant::now());
            let caught_up = self.session_catalog.wait_for(head, remaining()).await
                && self.segmenter.wait_for(head, remaining()).await
                && self.grip_extractor.wait_for(head, remaining()).await
                && self.rollup_builder.wait_for(head, remaining()).await;
            if !caught_up {
                return false;
            }
            if self.store.head() == head {
                return true;
            }
        }
    }

    /// Drains in-flight commits, then stops every actor (sources first).
    pub async fn shutdown(self) {
        self.ingest.flush().await;
        let _ = self
            .supervisor
            .stop_and_wait(Some("shutdown".into()), Some(Duration::from_secs(30)))
            .await;
        let _ = self.store.sync();
        info!("pipeline stopped");
    }
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
