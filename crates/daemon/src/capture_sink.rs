//! [`Delivery`]: where captured events (hooks, spool, imports) go — a running daemon over
//! NATS request/reply, or the data dir directly when none runs. Either way the daemon's
//! ingest path validates and redacts them before they are stored.

use std::time::Duration;

use anyhow::Context;
use memory_actors::Pipeline;
use memory_agents::SpooledEvent;
use memory_config::Config;
use memory_types::{
    DEFAULT_PROJECT, Event, EventError, IngestReply, ProjectScope, ServiceError, ValidationLimits,
    parse_single,
};

use crate::embedded::{open_store, start_pipeline};
use crate::settings::limits;

/// Most bytes of one ingest request: half the default payload limit, so a chunk is never
/// refused for its size.
const MAX_REQUEST_BYTES: usize = 512 * 1024;
/// Most events of one request or group commit.
const MAX_REQUEST_EVENTS: usize = 1_000;

/// What a delivery stored.
#[derive(Debug, Default, serde::Serialize)]
pub struct Delivered {
    /// Newly stored.
    pub accepted: u64,
    /// Already stored (sent before by a hook, an import or a flush).
    pub duplicates: u64,
    /// Refused, with the event's id and why; these are not retried.
    pub rejected: Vec<(String, EventError)>,
}

impl Delivered {
    fn add(&mut self, reply: &IngestReply, ids: &[String]) {
        self.accepted += reply.accepted;
        self.duplicates += reply.duplicates;
        for rejected in &reply.rejected {
            let id = ids.get(rejected.index).cloned().unwrap_or_default();
            self.rejected.push((id, rejected.error.clone()));
        }
    }
}

/// Where events go.
pub enum Delivery {
    /// A running daemon.
    Remote {
        /// The connection.
        client: async_nats::Client,
        /// `memory.ingest`.
        prefix: String,
        /// Longest wait for one reply.
        timeout: Duration,
    },
    /// The data dir, with the actors running in this process.
    Embedded {
        /// The actors.
        pipeline: Pipeline,
        /// Validation limits.
        limits: ValidationLimits,
    },
}

impl Delivery {
    /// Connects to the daemon at `url` (or the configured one).
    pub async fn remote(
        config: &Config,
        url: Option<&str>,
        timeout: Duration,
    ) -> anyhow::Result<Delivery> {
        let mut nats = config.nats.clone();
        if let Some(url) = url {
            url.clone_into(&mut nats.url);
        }
        let client = memory_nats::connect(&nats, |_| {}).await?;
        Ok(Delivery::Remote {
            client,
            prefix: config.nats.ingest_subject_prefix.clone(),
            timeout,
        })
    }

    /// Opens the data dir.
    pub async fn embedded(config: &Config, data_dir: &std::path::Path) -> anyhow::Result<Delivery> {
        let store = open_store(config, data_dir).with_context(|| {
            "is a daemon serving this data dir? Then send to it with --nats-url".to_owned()
        })?;
        let pipeline = start_pipeline(config, store).await?;
        Ok(Delivery::Embedded {
            pipeline,
            limits: limits(config),
        })
    }

    /// Sends `events` in order, grouped by project and in chunks.
    ///
    /// # Errors
    /// No reply in time, or the daemon refused a whole request (`unavailable`, …): the
    /// caller keeps the events (spool) and tries again later. Events sent before the
    /// failure may be stored; sending them again is harmless.
    pub async fn send(&self, events: &[SpooledEvent]) -> anyhow::Result<Delivered> {
        let mut delivered = Delivered::default();
        for chunk in chunks(events) {
            let project = chunk[0].project.as_deref().unwrap_or(DEFAULT_PROJECT);
            let ids: Vec<String> = chunk
                .iter()
                .map(|item| item.event.event_id.clone().unwrap_or_default())
                .collect();
            match self {
                Delivery::Remote {
                    client,
                    prefix,
                    timeout,
                } => {
                    let wire: Vec<_> = chunk.iter().map(|item| &item.event).collect();
                    let payload = serde_json::to_vec(&wire)?;
                    let subject = format!("{prefix}.{project}");
                    let reply =
                        tokio::time::timeout(*timeout, client.request(subject, payload.into()))
                            .await
                            .map_err(|_| {
                                anyhow::anyhow!(
                                    "no reply from the daemon within {} ms",
                                    timeout.as_millis()
                                )
                            })?
                            .map_err(|err| anyhow::anyhow!("ingest request failed: {err}"))?;
                    let reply: IngestReply = match serde_json::from_slice(&reply.payload) {
                        Ok(reply) => reply,
                        Err(_) => {
                            let error: ServiceError = serde_json::from_slice(&reply.payload)
                                .map_err(|err| anyhow::anyhow!("unreadable ingest reply: {err}"))?;
                            anyhow::bail!("the daemon refused the events: {error}");
                        }
                    };
                    delivered.add(&reply, &ids);
                }
                Delivery::Embedded { pipeline, limits } => {
                    let mut valid: Vec<Event> = Vec::with_capacity(chunk.len());
                    for item in chunk {
                        let bytes = serde_json::to_vec(&item.event)?;
                        match parse_single(&bytes, ProjectScope::Default(project), limits, None) {
                            Ok(event) => valid.push(event),
                            Err(error) => delivered
                                .rejected
                                .push((item.event.event_id.clone().unwrap_or_default(), error)),
                        }
                    }
                    if valid.is_empty() {
                        continue;
                    }
                    let outcomes = pipeline
                        .ingest
                        .append(valid)
                        .await
                        .context("cannot store events")?;
                    let reply = IngestReply::assemble(Vec::new(), &outcomes);
                    delivered.accepted += reply.accepted;
                    delivered.duplicates += reply.duplicates;
                }
            }
        }
        Ok(delivered)
    }

    /// Lets the actors finish (embedded) or flushes the connection.
    pub async fn close(self) {
        match self {
            Delivery::Remote { client, .. } => {
                let _ = client.flush().await;
            }
            Delivery::Embedded { pipeline, .. } => pipeline.shutdown().await,
        }
    }
}

/// Consecutive runs of one project, at most [`MAX_REQUEST_EVENTS`] events and
/// [`MAX_REQUEST_BYTES`] bytes each.
fn chunks(events: &[SpooledEvent]) -> Vec<&[SpooledEvent]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (index, item) in events.iter().enumerate() {
        // The size on the wire: text, metadata and JSON escaping.
        let size =
            serde_json::to_vec(&item.event).map_or(MAX_REQUEST_BYTES, |bytes| bytes.len()) + 2;
        let new_chunk = index > start
            && (events[start].project != item.project
                || index - start >= MAX_REQUEST_EVENTS
                || bytes + size > MAX_REQUEST_BYTES);
        if new_chunk {
            out.push(&events[start..index]);
            start = index;
            bytes = 0;
        }
        bytes += size;
    }
    if start < events.len() {
        out.push(&events[start..]);
    }
    out
}

/// Events as spooled items of their project.
pub fn spooled(project: Option<&str>, events: Vec<memory_types::EventV1>) -> Vec<SpooledEvent> {
    events
        .into_iter()
        .map(|event| SpooledEvent {
            project: event
                .project_id
                .clone()
                .or_else(|| project.map(str::to_owned)),
            event,
        })
        .collect()
}
