//! [`Backend`]: where the MCP server's calls go — a running daemon over NATS, or the data
//! dir in this process (embedded).
//!
//! Embedded, one store serves everything: the actors keep running for the server's life
//! (so a note stored by `remember` goes through the same ingest path as any event —
//! validated, redacted, group-committed — and reaches the TOC and the indexes), and the
//! queries read that store and the actors' index handles. The store has one owner per
//! data dir, so it is opened once, for both. Searches reinforce the ideas they return
//! (`memory_recalled` events), as the daemon's do.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use memory_config::Config;
use memory_store::Store;
use memory_types::{ServiceError, ValidationLimits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::capture_sink::{Delivered, Delivery};
use crate::embedded::{open_store_answering, start_pipeline};
use crate::query_cli::{QueryClient, REMOTE_TIMEOUT, query_service};
use crate::settings::limits;
use crate::status::StatusReport;

/// How long an embedded start waits for the projections to apply what a previous run
/// left before it serves; they go on catching up in the background after that.
const CATCH_UP_WAIT: Duration = Duration::from_secs(20);

/// Which way the server reaches the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The data dir, opened by this process.
    Embedded,
    /// A running daemon, over NATS.
    Daemon,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Embedded => "embedded",
            Mode::Daemon => "daemon",
        }
    }
}

/// What `remember` stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    /// A new event.
    New,
    /// The id was already stored (the same note sent twice).
    Duplicate,
}

/// The query client, the ingest path and the status source of one server.
pub(crate) struct Backend {
    mode: Mode,
    query: Arc<QueryClient>,
    delivery: Delivery,
    status: StatusSource,
    /// Embedded: the `memory_recalled` writer, stopped before the actors.
    recall: Option<(CancellationToken, tokio::task::JoinHandle<()>)>,
}

enum StatusSource {
    Embedded(Store),
    Daemon(async_nats::Client),
}

impl Backend {
    /// Connects to the daemon at `url` (the configured credentials and TLS apply).
    pub(crate) async fn daemon(config: &Config, url: &str) -> anyhow::Result<Backend> {
        let mut nats = config.nats.clone();
        url.clone_into(&mut nats.url);
        let client = memory_nats::connect(&nats, |_| {})
            .await
            .with_context(|| format!("cannot connect to NATS at {url}"))?;
        Ok(Backend {
            mode: Mode::Daemon,
            query: Arc::new(QueryClient::Remote(
                client.clone(),
                config.nats.query_subject_prefix.clone(),
            )),
            delivery: Delivery::Remote {
                client: client.clone(),
                prefix: config.nats.ingest_subject_prefix.clone(),
                timeout: REMOTE_TIMEOUT,
            },
            status: StatusSource::Daemon(client),
            recall: None,
        })
    }

    /// Opens the data dir and starts the actors over it.
    pub(crate) async fn embedded(
        config: &Config,
        data_dir: &std::path::Path,
    ) -> anyhow::Result<Backend> {
        let store = open_store_answering(config, data_dir).context(
            "is a daemon serving this data dir? Then run `memory-daemon mcp --nats-url URL`",
        )?;
        let pipeline = start_pipeline(config, store.clone()).await?;
        if !pipeline.wait_caught_up(CATCH_UP_WAIT).await {
            tracing::info!("projections are still catching up; they go on in the background");
        }
        let tz = config.toc.tz()?;
        let recall_shutdown = CancellationToken::new();
        let (recall_sink, recall_writer) = crate::recall::start(
            crate::recall::RecallLog::Local(pipeline.ingest.clone()),
            recall_shutdown.clone(),
        );
        let service = query_service(
            config,
            store.clone(),
            tz,
            pipeline.bm25.clone(),
            pipeline.vector.clone(),
        )
        .with_recall_sink(recall_sink);
        let limits: ValidationLimits = limits(config);
        Ok(Backend {
            mode: Mode::Embedded,
            query: Arc::new(QueryClient::Embedded(service)),
            delivery: Delivery::Embedded { pipeline, limits },
            status: StatusSource::Embedded(store),
            recall: Some((recall_shutdown, recall_writer)),
        })
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// One query call (`search`, `navigate`, `toc.node`, …). Embedded calls run on the
    /// blocking pool: they read the store and the indexes synchronously.
    pub(crate) async fn call(
        &self,
        project: &str,
        method: &str,
        body: Value,
    ) -> Result<Value, ServiceError> {
        if let QueryClient::Remote(..) = &*self.query {
            return self.query.call(project, method, &body).await;
        }
        let query = Arc::clone(&self.query);
        let (project, method) = (project.to_owned(), method.to_owned());
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            runtime.block_on(async { query.call(&project, &method, &body).await })
        })
        .await
        .map_err(|err| ServiceError::internal(format!("query task failed: {err}")))?
    }

    /// Stores one event through the daemon's ingest path (validated and redacted there).
    pub(crate) async fn remember(
        &self,
        project: &str,
        event: memory_types::EventV1,
    ) -> Result<Stored, ServiceError> {
        let events = crate::capture_sink::spooled(Some(project), vec![event]);
        let delivered: Delivered = self
            .delivery
            .send(&events)
            .await
            .map_err(|err| ServiceError::unavailable(format!("{err:#}")))?;
        if let Some((_, error)) = delivered.rejected.first() {
            let field = if error.field.is_empty() {
                String::new()
            } else {
                format!(" (field `{}`)", error.field)
            };
            return Err(ServiceError::invalid_argument(format!(
                "the note was refused{field}: {}",
                error.message
            )));
        }
        match (delivered.accepted, delivered.duplicates) {
            (1, _) => Ok(Stored::New),
            (0, 1) => Ok(Stored::Duplicate),
            (accepted, duplicates) => Err(ServiceError::internal(format!(
                "ingest answered {accepted} accepted and {duplicates} duplicates for one note"
            ))),
        }
    }

    /// What is stored and how far each projection has got.
    pub(crate) async fn status(&self) -> Result<StatusReport, ServiceError> {
        match &self.status {
            StatusSource::Embedded(store) => {
                let store = store.clone();
                tokio::task::spawn_blocking(move || crate::status::report(&store))
                    .await
                    .map_err(|err| ServiceError::internal(format!("status task failed: {err}")))?
                    .map_err(|err| ServiceError::internal(format!("{err:#}")))
            }
            StatusSource::Daemon(client) => {
                let reply = tokio::time::timeout(
                    REMOTE_TIMEOUT,
                    client.request(crate::serve::ADMIN_STATUS_SUBJECT, "{}".into()),
                )
                .await
                .map_err(|_| {
                    ServiceError::unavailable(format!(
                        "the daemon did not answer {} within {} s",
                        crate::serve::ADMIN_STATUS_SUBJECT,
                        REMOTE_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(|err| {
                    ServiceError::unavailable(format!(
                        "no daemon answers {}: {err}",
                        crate::serve::ADMIN_STATUS_SUBJECT
                    ))
                })?;
                serde_json::from_slice(&reply.payload).map_err(|err| {
                    ServiceError::internal(format!("unexpected status reply: {err}"))
                })
            }
        }
    }

    /// Lets the actors finish their work (embedded) or flushes the connection.
    pub(crate) async fn close(self) {
        if let Some((shutdown, writer)) = self.recall {
            shutdown.cancel();
            let _ = writer.await;
        }
        self.delivery.close().await;
    }
}
