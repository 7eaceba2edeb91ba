//! `serve`: the daemon. Start-up order: metrics/health endpoint, store, actors
//! (downstream first), NATS; shutdown in reverse: stop taking input, finish what is in
//! flight (commits, replies, acks), stop the actors, sync the store.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use memory_config::{Config, LogFormatConfig};
use memory_nats::{JetStreamIngest, RequestReplyIngest};
use memory_telemetry::{Health, LogFormat, TracingConfig};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::admin_cli::admin_subject;
use crate::cli::ServeArgs;
use crate::embedded::{open_store_answering, start_pipeline_with};
use crate::settings::limits;

/// Subject of the single-mode daemon's status call.
pub const ADMIN_STATUS_SUBJECT: &str = "memory.admin.status";

pub async fn run(
    mut config: Config,
    data_dir: PathBuf,
    args: ServeArgs,
) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.nats_url {
        config.nats.url = url;
    }
    if let Some(addr) = args.metrics_listen {
        config.telemetry.metrics_listen = addr;
    }
    let _tracing = memory_telemetry::init_tracing(&TracingConfig {
        log_filter: config.telemetry.log_filter.clone(),
        log_format: match config.telemetry.log_format {
            LogFormatConfig::Text => LogFormat::Text,
            LogFormatConfig::Json => LogFormat::Json,
        },
        otlp_endpoint: config.telemetry.otlp_endpoint.clone(),
        service_name: config.telemetry.service_name.clone(),
    })
    .context("cannot set up logging")?;
    crate::settings::apply_long_running_settings(&config);

    let mut sigterm = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut sigint = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let health = Health::new();
    health.set_ready("store", false, "opening");
    health.set_ready("nats", false, "connecting");
    health.set_ready(
        "instance",
        false,
        "not yet checked for another daemon on NATS",
    );
    let http_shutdown = CancellationToken::new();
    let http = memory_telemetry::serve(
        config.telemetry.metrics_listen,
        health.clone(),
        http_shutdown.clone().cancelled_owned(),
    )
    .await
    .context("cannot serve metrics")?;

    if args.cluster {
        let group = args.group.clone().unwrap_or_default();
        health.set_ready("store", false, "bootstrapping");
        // A download can take minutes: a signal meanwhile stops the start (what was
        // half restored is removed at the next start).
        let bootstrap = crate::snapshot_cli::bootstrap(&config, &data_dir, &group, args.bootstrap);
        let started = tokio::select! {
            started = bootstrap => started?,
            _ = sigterm.recv() => anyhow::bail!("SIGTERM while bootstrapping the data dir"),
            _ = sigint.recv() => anyhow::bail!("SIGINT while bootstrapping the data dir"),
        };
        info!(?started, "data dir ready");
    }
    let store = open_store_answering(&config, &data_dir)?;
    health.set_ready("store", true, data_dir.display().to_string());
    let poisoned = watch_writes(store.clone(), health.clone(), http_shutdown.clone());
    let pipeline = start_pipeline_with(&config, store.clone(), |pipeline| {
        // In cluster mode the group's lease holder closes idle segments, has the model
        // summarize and runs the LLM indexing engine, through the log.
        if args.cluster {
            crate::settings::as_cluster_replica(&config, pipeline);
        }
    })
    .await?;

    let nats_health = health.clone();
    let client = memory_nats::connect(&config.nats, move |up| {
        nats_health.set_ready(
            "nats",
            up,
            if up {
                "connected"
            } else {
                "disconnected; reconnecting"
            },
        );
    })
    .await?;
    if args.cluster {
        let (Some(node_id), Some(group)) = (args.node_id.clone(), args.group.clone()) else {
            anyhow::bail!("--cluster needs --node-id and --group");
        };
        let pipeline = Arc::new(pipeline);
        let snapshot_every = Duration::from_secs(args.snapshot_interval_secs);
        let result = serve_replica(
            &config,
            &client,
            &store,
            &pipeline,
            &health,
            (node_id, group),
            snapshot_every,
        )
        .await;
        let waited = match result {
            Ok(replica) => {
                let exit = tokio::select! {
                    _ = sigterm.recv() => { info!("SIGTERM: shutting down"); ExitCode::SUCCESS }
                    _ = sigint.recv() => { info!("SIGINT: shutting down"); ExitCode::SUCCESS }
                    () = poisoned.cancelled() => ExitCode::FAILURE,
                };
                health.set_ready("store", false, "shutting down");
                let (shutdown, replica, gateway, queries, admin, holder, recall_writer) = replica;
                shutdown.cancel();
                gateway.join().await;
                queries.join().await;
                holder.join().await;
                let _ = recall_writer.await;
                for call in admin {
                    let _ = call.await;
                }
                replica.join().await;
                Ok(exit)
            }
            Err(err) => Err(err),
        };
        match Arc::try_unwrap(pipeline) {
            Ok(pipeline) => pipeline.shutdown().await,
            Err(_) => warn!("pipeline still referenced at shutdown; not drained"),
        }
        finish(&client, &http_shutdown, http).await;
        return waited;
    }
    // Single mode: nothing is taken in or answered before this daemon knows it is the
    // only one on this NATS.
    let cluster = memory_cluster::is_initialised(&client).await;
    if !matches!(cluster, Ok(false)) {
        pipeline.shutdown().await;
        if let Err(err) = cluster {
            anyhow::bail!("cannot tell whether this NATS runs agent-memory in cluster mode: {err}");
        }
        anyhow::bail!(
            "this NATS runs agent-memory in cluster mode (`cluster init` was run on it): \
             start the daemon with --cluster --node-id N --group G, or give single mode a \
             NATS of its own"
        );
    }
    let instance = instance(&config, &data_dir);
    let registered = match memory_nats::claim_single(
        &client,
        &instance,
        &config.nats.query_subject_prefix,
        memory_nats::PING_WINDOW,
    )
    .await
    {
        Ok(registered) => registered,
        Err(err) => {
            pipeline.shutdown().await;
            return Err(err.into());
        }
    };
    let shutdown = CancellationToken::new();
    let request_reply = RequestReplyIngest::start(
        client.clone(),
        &config.nats,
        pipeline.ingest.clone(),
        limits(&config),
        shutdown.clone(),
    )
    .await?;
    let jetstream = config.nats.jetstream.enabled.then(|| {
        let (client, jetstream_config, sink, limits, shutdown) = (
            client.clone(),
            config.nats.jetstream.clone(),
            pipeline.ingest.clone(),
            limits(&config),
            shutdown.clone(),
        );
        let (first_attempt, attempted) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            // The server may not be reachable yet: keep trying until it is or we stop.
            let mut delay = Duration::from_millis(100);
            let mut first_attempt = Some(first_attempt);
            loop {
                let started = JetStreamIngest::start(
                    client.clone(),
                    &jetstream_config,
                    sink.clone(),
                    limits.clone(),
                    shutdown.clone(),
                )
                .await;
                if let Some(first) = first_attempt.take() {
                    let _ = first.send(());
                }
                match started {
                    Ok(ingest) => {
                        ingest.join().await;
                        return;
                    }
                    Err(err) => warn!(error = %err, "jetstream not ready; retrying"),
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        });
        (task, attempted)
    });
    // Ready means a producer can publish: the stream exists once the first attempt
    // succeeded (a server without JetStream keeps being retried, and does not hold
    // readiness past a few seconds).
    let jetstream = match jetstream {
        Some((task, attempted)) => {
            let _ = tokio::time::timeout(Duration::from_secs(5), attempted).await;
            Some(task)
        }
        None => None,
    };
    let (recall_sink, recall_writer) = crate::recall::start(
        crate::recall::RecallLog::Local(pipeline.ingest.clone()),
        shutdown.clone(),
    );
    let query_service = crate::query_cli::query_service(
        &config,
        store.clone(),
        config.toc.tz()?,
        pipeline.bm25.clone(),
        pipeline.vector.clone(),
    )
    .with_recall_sink(recall_sink);
    let hooks = crate::hook_http::start(
        &config,
        &data_dir,
        pipeline.ingest.clone(),
        query_service.clone(),
        shutdown.clone(),
    )
    .await?;
    let queries = registered
        .serve(
            Arc::new(QueryAdapter(query_service)),
            memory_query::METHODS,
            crate::settings::query_admission(&config),
            shutdown.clone(),
        )
        .await?;
    let pipeline = Arc::new(pipeline);
    let admin = spawn_admin_calls(&client, &store, &pipeline, &config, None, &shutdown).await?;
    // Ready once every call is answered too: a client told "ready" that then got "no
    // responders" from `memory.admin.status` had been told too early.
    confirm_subscriptions(&client).await;
    health.set_ready("instance", true, "the only daemon in single mode on NATS");
    info!(
        data_dir = %data_dir.display(),
        nats_url = %config.nats.url,
        metrics = %http.local_addr(),
        "memory-daemon serving"
    );

    let exit = tokio::select! {
        _ = sigterm.recv() => { info!("SIGTERM: shutting down"); ExitCode::SUCCESS }
        _ = sigint.recv() => { info!("SIGINT: shutting down"); ExitCode::SUCCESS }
        () = poisoned.cancelled() => ExitCode::FAILURE,
    };
    health.set_ready("store", false, "shutting down");
    shutdown.cancel();
    request_reply.join().await;
    if let Some(hooks) = hooks {
        hooks.join().await;
    }
    if let Some(jetstream) = jetstream {
        let _ = jetstream.await;
    }
    for call in admin {
        let _ = call.await;
    }
    let _ = recall_writer.await;
    queries.join().await;
    match Arc::try_unwrap(pipeline) {
        Ok(pipeline) => pipeline.shutdown().await,
        Err(_) => warn!("pipeline still referenced at shutdown; not drained"),
    }
    finish(&client, &http_shutdown, http).await;
    Ok(exit)
}

/// The last steps of every shutdown: what is queued for NATS flushed (bounded: NATS
/// may be gone), then the observability server stopped.
async fn finish(
    client: &async_nats::Client,
    http_shutdown: &CancellationToken,
    http: memory_telemetry::ServerHandle,
) {
    match tokio::time::timeout(Duration::from_secs(2), client.flush()).await {
        Ok(Err(err)) => warn!(error = %err, "nats flush at shutdown failed"),
        Err(_) => warn!("nats flush at shutdown timed out"),
        Ok(Ok(())) => {}
    }
    http_shutdown.cancel();
    if let Err(err) = http.stopped().await {
        error!(error = %err, "metrics server stopped with an error");
    }
    info!("memory-daemon stopped");
}

/// Starts applying the group's partitions of the replicated log, the ingest gateway
/// and the partitions' queries (cluster mode).
async fn serve_replica(
    config: &Config,
    client: &async_nats::Client,
    store: &memory_store::Store,
    pipeline: &Arc<memory_actors::Pipeline>,
    health: &Health,
    (node_id, group): (String, String),
    snapshot_every: Duration,
) -> anyhow::Result<(
    CancellationToken,
    memory_cluster::Replica,
    RequestReplyIngest,
    memory_cluster::PartitionQueries,
    Vec<tokio::task::JoinHandle<()>>,
    memory_cluster::LeaseHolder,
    tokio::task::JoinHandle<()>,
)> {
    // Everything that can fail on configuration alone, before anything starts.
    let tz = config.toc.tz()?;
    let model_summaries = crate::settings::cluster_model_summaries(config, store.path())?;
    let model_ideas = crate::settings::cluster_model_ideas(config, store.path());
    let valid = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !valid(&node_id) || !valid(&group) {
        anyhow::bail!("--node-id and --group take letters, digits, '-' and '_'");
    }
    if crate::admin_cli::ADMIN_CALLS
        .iter()
        .any(|call| call.split('.').next() == Some(node_id.as_str()))
    {
        anyhow::bail!(
            "--node-id {node_id} is the name of an admin call (memory.admin.{node_id}); \
             choose another"
        );
    }
    let me = instance(config, store.path());
    let node = memory_cluster::NodeRecord {
        node_id: node_id.clone(),
        group: group.clone(),
        host: me.host,
        pid: me.pid,
        data_dir: me.data_dir,
        started_ms: me.started_ms,
        version: me.version,
        ..memory_cluster::NodeRecord::default()
    };
    memory_cluster::nodes::claim(client, &node).await?;
    let shutdown = CancellationToken::new();
    let replica = memory_cluster::Replica::start(
        client.clone(),
        store.clone(),
        memory_cluster::ReplicaConfig {
            node_id: node_id.clone(),
            group: group.clone(),
            fetch_batch: config.nats.jetstream.fetch_batch,
            ack_wait: Duration::from_secs(config.nats.jetstream.ack_wait_secs),
            limits: limits(config),
        },
        shutdown.clone(),
    )
    .await?;
    // The gateway: any daemon answers `memory.ingest.<project>` by publishing to the
    // log; the replicas of the project's group store it.
    let gateway = async {
        let (_, _, key) = memory_cluster::read_cluster(client).await?;
        let redactor =
            memory_redact::Redactor::shipped(&key).map_err(|err| anyhow::anyhow!("{err}"))?;
        let sink = memory_cluster::GatewaySink::new(client.clone(), redactor);
        let gateway = RequestReplyIngest::start(
            client.clone(),
            &config.nats,
            sink.clone(),
            limits(config),
            shutdown.clone(),
        )
        .await?;
        anyhow::Ok((gateway, sink, key))
    }
    .await;
    let (gateway, sink, key) = match gateway {
        Ok(gateway) => gateway,
        Err(err) => {
            // The replica runs already: stop it before giving up.
            shutdown.cancel();
            replica.join().await;
            return Err(err);
        }
    };
    // Its partitions' queries, while caught up. What a search recalled goes to the log
    // as `memory_recalled` events (through the gateway), so every replica of the group
    // applies the same reinforcement.
    let (recall_sink, recall_writer) =
        crate::recall::start(crate::recall::RecallLog::Cluster(sink), shutdown.clone());
    let query_service = crate::query_cli::query_service(
        config,
        store.clone(),
        tz,
        pipeline.bm25.clone(),
        pipeline.vector.clone(),
    )
    .with_recall_sink(recall_sink);
    // Work that is not a function of the log, by the group's lease holder. The
    // gateway's key made a redactor already: this one cannot fail.
    let redactor = memory_redact::Redactor::shipped(&key).ok();
    let summaries = match (model_summaries, redactor.clone()) {
        (Some(summarizer), Some(redactor)) => Some(memory_cluster::ModelSummaries {
            summarizer,
            redactor,
        }),
        _ => None,
    };
    let ideas = match (model_ideas, redactor) {
        (Some(engine), Some(redactor)) => Some(memory_cluster::ModelIdeas {
            engine,
            redactor,
            window: Duration::from_millis(config.indexing.llm_window_ms),
            batch_events: config.indexing.batch_events,
        }),
        _ => None,
    };
    let holder = memory_cluster::LeaseHolder::start(
        client.clone(),
        store.clone(),
        key,
        memory_cluster::HolderConfig {
            node_id: node_id.clone(),
            group: group.clone(),
            gap: Duration::from_secs(config.toc.segment_gap_secs),
            summaries,
            ideas,
        },
        shutdown.clone(),
    );
    let queries = memory_cluster::PartitionQueries::start(
        client.clone(),
        store.clone(),
        node,
        replica.partitions(),
        Arc::new(QueryAdapter(query_service)),
        crate::settings::query_admission(config),
        shutdown.clone(),
    );
    // Admin calls, this node's own: each replica keeps its own projections and indexes.
    // Snapshots: on request, and on a schedule while this node holds the lease.
    let snapshotter = crate::snapshot_cli::Snapshotter::new(
        client.clone(),
        pipeline.clone(),
        store.clone(),
        (node_id.clone(), group.clone()),
        replica.partitions(),
    );
    let admin = async {
        let mut admin =
            spawn_admin_calls(client, store, pipeline, config, Some(&node_id), &shutdown).await?;
        admin.push(
            spawn_snapshot_call(client.clone(), snapshotter.clone(), &node_id, &shutdown).await?,
        );
        if !snapshot_every.is_zero() {
            admin.push(snapshotter.schedule(holder.holding(), snapshot_every, shutdown.clone()));
        }
        anyhow::Ok(admin)
    }
    .await;
    let admin = match admin {
        Ok(admin) => admin,
        Err(err) => {
            shutdown.cancel();
            gateway.join().await;
            queries.join().await;
            holder.join().await;
            let _ = recall_writer.await;
            replica.join().await;
            return Err(err);
        }
    };
    // Ready once the admin calls are answered too, as in single mode.
    confirm_subscriptions(client).await;
    health.set_ready(
        "instance",
        true,
        format!(
            "cluster node {node_id}, group {group}, {} partitions",
            replica.partitions().borrow().len()
        ),
    );
    info!(node = %node_id, group = %group, "memory-daemon serving as a cluster replica");
    Ok((
        shutdown,
        replica,
        gateway,
        queries,
        admin,
        holder,
        recall_writer,
    ))
}

/// Who this daemon is, as the others on NATS see it.
fn instance(config: &Config, data_dir: &std::path::Path) -> memory_nats::Instance {
    let nats = &config.nats;
    let jetstream = if nats.jetstream.enabled {
        format!(
            ", stream {} (durable {})",
            nats.jetstream.stream, nats.jetstream.durable_name
        )
    } else {
        String::new()
    };
    memory_nats::Instance {
        instance_id: ulid::Ulid::new().to_string(),
        mode: "single".to_owned(),
        host: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|host| host.trim().to_owned())
            .unwrap_or_default(),
        pid: std::process::id(),
        data_dir: std::fs::canonicalize(data_dir)
            .unwrap_or_else(|_| data_dir.to_path_buf())
            .display()
            .to_string(),
        started_ms: memory_types::now_ms(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        subjects: format!(
            "{}.*, {}.*.<method>{jetstream}",
            nats.ingest_subject_prefix, nats.query_subject_prefix
        ),
    }
}

/// The query crate behind the NATS micro service.
struct QueryAdapter(memory_query::QueryService);

impl memory_nats::QueryHandler for QueryAdapter {
    fn handle(
        &self,
        project_id: &str,
        method: &str,
        payload: &[u8],
    ) -> Result<serde_json::Value, memory_types::ServiceError> {
        self.0.call(project_id, method, payload)
    }
}

/// Waits until the server has every subscription this connection made so far: it
/// handles one connection's messages in order, so a message this connection sends to a
/// fresh inbox of its own comes back only after every earlier subscription is in place.
/// (`flush` only writes the client's buffer to the socket.) Bounded, so a server that
/// is away cannot hold the start: it then logs and goes on, and `/readyz` still says
/// `nats` is not connected.
async fn confirm_subscriptions(client: &async_nats::Client) {
    const WITHIN: Duration = Duration::from_secs(5);
    let round_trip = async {
        let inbox = client.new_inbox();
        let mut echo = client.subscribe(inbox.clone()).await?;
        client.publish(inbox, bytes::Bytes::new()).await?;
        echo.next().await.context("the echo subscription closed")?;
        anyhow::Ok(())
    };
    match tokio::time::timeout(WITHIN, round_trip).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => warn!(error = %err, "cannot confirm the subscriptions with nats"),
        Err(_) => warn!(
            within_secs = WITHIN.as_secs(),
            "nats did not confirm the subscriptions in time; turning ready anyway"
        ),
    }
}

/// Answers every admin call (status, rebuild, backfill, prune) on `memory.admin.<call>`,
/// or on `memory.admin.<node>.<call>` for a node of a cluster, until `shutdown`.
async fn spawn_admin_calls(
    client: &async_nats::Client,
    store: &memory_store::Store,
    pipeline: &Arc<memory_actors::Pipeline>,
    config: &Config,
    node: Option<&str>,
    shutdown: &CancellationToken,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let status = spawn_admin(client.clone(), store.clone(), node, shutdown.clone()).await?;
    let rebuild = spawn_rebuild(client.clone(), pipeline.clone(), node, shutdown.clone()).await?;
    let (backfill, progress) =
        spawn_backfill(client.clone(), pipeline.clone(), node, shutdown.clone()).await?;
    let prune = spawn_prune(
        client.clone(),
        pipeline.clone(),
        Arc::new(config.clone()),
        node,
        shutdown.clone(),
    )
    .await?;
    let backup = {
        let (store, pipeline) = (store.clone(), pipeline.clone());
        spawn_admin_responder(
            client.clone(),
            admin_subject(node, crate::backup_cli::ADMIN_BACKUP),
            shutdown.clone(),
            move |payload| {
                let (store, pipeline) = (store.clone(), pipeline.clone());
                async move { crate::backup_cli::answer_backup_call(store, pipeline, &payload).await }
            },
        )
        .await?
    };
    Ok(vec![status, rebuild, backfill, progress, prune, backup])
}

/// Keeps `/readyz` honest about writes: not ready (503, with the store's error) while
/// its last write failed — refused under the free-space reserve, an I/O error — and
/// ready again once a write succeeds (or, for the reserve, once the space is there).
/// Checked every second until `stop`.
///
/// A store poisoned by a failed write refuses writes until it is opened anew, which
/// only a new process can do (every projection holds its handles): the returned token
/// fires then, and the daemon stops with a failure for its supervisor to restart it
/// (`Restart=on-failure` in the shipped unit) on the last durable batch — rather than
/// serve on without ever ingesting again.
fn watch_writes(
    store: memory_store::Store,
    health: Health,
    stop: CancellationToken,
) -> CancellationToken {
    health.set_ready("writes", true, "the last write succeeded");
    let poisoned = CancellationToken::new();
    let poisoned_out = poisoned.clone();
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            let poisoned_now = store.is_poisoned();
            match store.write_failure() {
                Some(reason) if poisoned_now => {
                    tracing::error!(%reason, "the store is poisoned by a failed write; \
                        stopping so the supervisor restarts the daemon on the last durable batch");
                    health.set_ready("writes", false, format!("the store cannot write: {reason}"));
                    poisoned.cancel();
                    return;
                }
                Some(reason) => {
                    if !failing {
                        tracing::error!(%reason, "the store cannot write; not ready until it can");
                    }
                    failing = true;
                    health.set_ready("writes", false, format!("the store cannot write: {reason}"));
                }
                None if failing => {
                    failing = false;
                    health.set_ready("writes", true, "the last write succeeded");
                }
                None => {}
            }
        }
    });
    poisoned_out
}

/// `memory.admin.rebuild`: `{"projection": "toc"}` deletes and replays the TOC (the
/// reply comes once the replay is under way); `{"index_type": "bm25"}` rebuilds the BM25
/// index into a new generation and swaps it in (the reply is the report, once done;
/// progress is in `teleport.status` meanwhile).
async fn spawn_rebuild(
    client: async_nats::Client,
    pipeline: Arc<memory_actors::Pipeline>,
    node: Option<&str>,
    shutdown: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    spawn_admin_responder(
        client,
        admin_subject(node, crate::admin_cli::ADMIN_REBUILD),
        shutdown,
        move |payload| {
            let pipeline = pipeline.clone();
            async move {
                let request = serde_json::from_slice::<serde_json::Value>(&payload).ok();
                let field = |name: &str| {
                    request
                        .as_ref()
                        .and_then(|v| v.get(name).and_then(|p| p.as_str().map(str::to_string)))
                };
                let answer = match (field("projection").as_deref(), field("index_type").as_deref()) {
                    (Some("ideas"), None) => match pipeline.rebuild_ideas().await {
                        Ok(()) => serde_json::json!({"projection": "ideas", "status": "rebuilding"}),
                        Err(err) => serde_json::to_value(service_error(&err)).unwrap_or_default(),
                    },
                    (Some("toc"), None) => match pipeline.rebuild_toc().await {
                        Ok(()) => serde_json::json!({"projection": "toc", "status": "rebuilding"}),
                        Err(err) => serde_json::to_value(service_error(&err)).unwrap_or_default(),
                    },
                    (None, Some("vector")) => match pipeline.rebuild_vector().await {
                        Ok(()) => serde_json::json!({"index_type": "vector", "status": "embedding"}),
                        Err(err) => serde_json::to_value(service_error(&err)).unwrap_or_default(),
                    },
                    (None, Some("bm25")) => match pipeline.rebuild_bm25().await {
                        Ok(report) => serde_json::to_value(report).unwrap_or_default(),
                        Err(err) => serde_json::to_value(service_error(&err)).unwrap_or_default(),
                    },
                    (projection, index_type) => {
                        serde_json::to_value(memory_types::ServiceError::invalid_argument(format!(
                            "give either {{\"projection\": \"toc|ideas\"}} or {{\"index_type\": \"bm25\"}} \
                             (got projection {projection:?}, index_type {index_type:?})"
                        )))
                        .unwrap_or_default()
                    }
                };
                serde_json::to_vec(&answer).unwrap_or_default()
            }
        },
    )
    .await
}

/// `memory.admin.backfill_ideas`: `{"project_id": "P"}` or `{}` re-extracts the ideas
/// graph session by session; the reply is the final progress. The progress of the
/// running backfill answers on `memory.admin.backfill_ideas.progress`.
async fn spawn_backfill(
    client: async_nats::Client,
    pipeline: Arc<memory_actors::Pipeline>,
    node: Option<&str>,
    shutdown: CancellationToken,
) -> anyhow::Result<(tokio::task::JoinHandle<()>, tokio::task::JoinHandle<()>)> {
    let state: Arc<std::sync::Mutex<Option<memory_projections::BackfillProgress>>> = Arc::default();
    let progress_state = state.clone();
    let progress = spawn_admin_responder(
        client.clone(),
        admin_subject(node, crate::admin_cli::ADMIN_BACKFILL_PROGRESS),
        shutdown.clone(),
        move |_| {
            let state = progress_state.clone();
            async move {
                let current = state.lock().map(|guard| guard.clone()).unwrap_or_default();
                serde_json::to_vec(&current).unwrap_or_default()
            }
        },
    )
    .await?;
    let backfill = spawn_admin_responder(
        client,
        admin_subject(node, crate::admin_cli::ADMIN_BACKFILL_IDEAS),
        shutdown,
        move |payload| {
            let (pipeline, state) = (pipeline.clone(), state.clone());
            async move {
                let project = serde_json::from_slice::<serde_json::Value>(&payload)
                    .ok()
                    .and_then(|value| {
                        value
                            .get("project_id")
                            .and_then(|project| project.as_str().map(str::to_owned))
                    });
                let sink = state.clone();
                let result = pipeline
                    .backfill_ideas(project, move |progress| {
                        if let Ok(mut guard) = sink.lock() {
                            *guard = Some(progress.clone());
                        }
                    })
                    .await;
                match result {
                    Ok(report) => serde_json::to_vec(&report),
                    Err(err) => serde_json::to_vec(&service_error(&err)),
                }
                .unwrap_or_default()
            }
        },
    )
    .await?;
    Ok((backfill, progress))
}

/// `memory.admin.prune`: `{}` applies the configured retention to the BM25 and vector
/// indexes, as the scheduled prune does; `{"age_days": N, "level": "segment|…|all"}`
/// removes what is older than N days. The reply is the prune report of each index.
async fn spawn_prune(
    client: async_nats::Client,
    pipeline: Arc<memory_actors::Pipeline>,
    config: Arc<Config>,
    node: Option<&str>,
    shutdown: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    spawn_admin_responder(
        client,
        admin_subject(node, crate::admin_cli::ADMIN_PRUNE),
        shutdown,
        move |payload| {
            let (pipeline, config) = (pipeline.clone(), config.clone());
            async move {
                let enabled = pipeline.bm25.is_some() || pipeline.vector.is_some();
                let answer = match crate::admin_cli::parse_prune_request(&payload) {
                    _ if !enabled => Err(memory_types::ServiceError::unavailable(
                        crate::admin_cli::NO_INDEX,
                    )),
                    Err(message) => Err(memory_types::ServiceError::invalid_argument(message)),
                    Ok((age_days, kinds)) => Ok(pipeline
                        .prune(crate::admin_cli::prune_cutoffs(&config, age_days, &kinds))
                        .await),
                };
                match answer {
                    Ok(report) => serde_json::to_vec(&report),
                    Err(err) => serde_json::to_vec(&err),
                }
                .unwrap_or_default()
            }
        },
    )
    .await
}

/// `memory.admin.<node>.snapshot`: `{}` → the snapshot this node took and uploaded as
/// its group's latest ([`crate::snapshot_cli::SnapshotReport`]).
async fn spawn_snapshot_call(
    client: async_nats::Client,
    snapshotter: crate::snapshot_cli::Snapshotter,
    node: &str,
    shutdown: &CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let stopping = shutdown.clone();
    spawn_admin_responder(
        client,
        admin_subject(Some(node), crate::admin_cli::ADMIN_SNAPSHOT),
        shutdown.clone(),
        move |_| {
            let (snapshotter, stopping) = (snapshotter.clone(), stopping.clone());
            async move {
                // Shutdown does not wait for an upload; the staging left behind is
                // cleared by the next snapshot or start.
                let taken = tokio::select! {
                    () = stopping.cancelled() => Err(anyhow::anyhow!("the node is shutting down")),
                    taken = snapshotter.take() => taken,
                };
                match taken {
                    Ok(report) => serde_json::to_vec(&report),
                    Err(err) => serde_json::to_vec(&memory_types::ServiceError::internal(format!(
                        "{err:#}"
                    ))),
                }
                .unwrap_or_default()
            }
        },
    )
    .await
}

/// `memory.admin.status`: the status report.
async fn spawn_admin(
    client: async_nats::Client,
    store: memory_store::Store,
    node: Option<&str>,
    shutdown: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    spawn_admin_responder(
        client,
        admin_subject(node, crate::admin_cli::ADMIN_STATUS),
        shutdown,
        move |_| {
            let store = store.clone();
            async move {
                tokio::task::spawn_blocking(move || crate::status::report(&store))
                    .await
                    .map_err(anyhow::Error::from)
                    .and_then(|r| r)
                    .and_then(|report| serde_json::to_vec(&report).map_err(anyhow::Error::from))
                    .unwrap_or_else(|err| {
                        serde_json::to_vec(&memory_types::ServiceError::internal(err.to_string()))
                            .unwrap_or_default()
                    })
            }
        },
    )
    .await
}

/// Answers requests on an operators' subject, one at a time, until shutdown.
async fn spawn_admin_responder<F, Fut>(
    client: async_nats::Client,
    subject: String,
    shutdown: CancellationToken,
    answer: F,
) -> anyhow::Result<tokio::task::JoinHandle<()>>
where
    F: Fn(bytes::Bytes) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Vec<u8>> + Send,
{
    let mut subscriber = client
        .subscribe(subject.clone())
        .await
        .with_context(|| format!("cannot subscribe to {subject}"))?;
    Ok(tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                () = shutdown.cancelled() => break,
                message = subscriber.next() => message,
            };
            let Some(message) = message else { break };
            let Some(reply) = message.reply else { continue };
            let body = answer(message.payload).await;
            if let Err(err) = client.publish(reply, body.into()).await {
                warn!(error = %err, subject = %subject, "cannot answer an admin request");
            }
        }
    }))
}

/// The service error an admin operation's failure answers with: `unavailable` when an
/// actor is gone or slow or the index disabled, `internal` when the work itself failed.
fn service_error(err: &memory_actors::ActorError) -> memory_types::ServiceError {
    if err.is_unavailable() {
        memory_types::ServiceError::unavailable(err.to_string())
    } else {
        memory_types::ServiceError::internal(err.to_string())
    }
}
