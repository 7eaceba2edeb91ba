//! Single mode's one rule: one daemon per NATS (account). Two daemons in single mode on
//! one NATS do not share load, they shard at random: request/reply ingest and queries
//! are queue groups, so one session's events land in two stores, and every query sees
//! half the data; both bind the same JetStream durable, so messages split. So a daemon
//! in single mode refuses to start when another one answers `$SRV.PING.memory-query`,
//! and names it.
//!
//! Two daemons starting at the same moment could both find nobody, so the check runs
//! twice: once before this daemon's query service is registered, and once after (the
//! registration flushed first). By the second ping every daemon that passed its first
//! is registered, so whichever pings second sees the other. Every daemon that sees
//! another at its second ping steps down and tries again after a random pause; one of
//! them then finds the other serving at its first ping and refuses. The service is
//! registered without endpoints until then: it answers discovery, never a call, and
//! ingest starts only after the check.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::Client;
use async_nats::service::PingResponse;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::NatsError;
use crate::query::{QUERY_SERVICE_NAME, RegisteredQueryService};

/// How long a discovery ping collects answers. Daemons answer in about a millisecond on
/// one host or LAN; a quarter of a second leaves room for a slow link.
pub const PING_WINDOW: Duration = Duration::from_millis(250);

/// Who a daemon is, as its query service's metadata tells the others.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    /// Unique per start (a ULID).
    pub instance_id: String,
    /// `single` (cluster mode will say `cluster`).
    pub mode: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Its data dir.
    pub data_dir: String,
    /// When it started, epoch ms.
    pub started_ms: u64,
    /// Its version.
    pub version: String,
    /// The subjects it serves: request/reply ingest and queries prefixes, JetStream
    /// stream and durable (empty when JetStream is off).
    pub subjects: String,
}

impl Instance {
    /// The micro service metadata.
    #[must_use]
    pub fn metadata(&self) -> HashMap<String, String> {
        HashMap::from([
            ("instance_id".to_owned(), self.instance_id.clone()),
            ("mode".to_owned(), self.mode.clone()),
            ("host".to_owned(), self.host.clone()),
            ("pid".to_owned(), self.pid.to_string()),
            ("data_dir".to_owned(), self.data_dir.clone()),
            ("started_ms".to_owned(), self.started_ms.to_string()),
            ("version".to_owned(), self.version.clone()),
            ("subjects".to_owned(), self.subjects.clone()),
        ])
    }

    /// Reads the metadata back; None for a service that is not one of ours (or older
    /// than this check).
    #[must_use]
    pub fn from_metadata(metadata: &HashMap<String, String>) -> Option<Instance> {
        let field = |name: &str| metadata.get(name).cloned();
        Some(Instance {
            instance_id: field("instance_id")?,
            mode: field("mode")?,
            host: field("host").unwrap_or_default(),
            pid: field("pid").and_then(|pid| pid.parse().ok()).unwrap_or(0),
            data_dir: field("data_dir").unwrap_or_default(),
            started_ms: field("started_ms")
                .and_then(|ms| ms.parse().ok())
                .unwrap_or(0),
            version: field("version").unwrap_or_default(),
            subjects: field("subjects").unwrap_or_default(),
        })
    }
}

/// One answer to the discovery ping.
#[derive(Clone, Debug)]
pub struct Peer {
    /// The micro service id.
    pub service_id: String,
    /// Its version.
    pub version: String,
    /// Who it is, when it says.
    pub instance: Option<Instance>,
}

impl Peer {
    /// For an error message: where it runs and what it serves.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.instance {
            Some(other) => format!(
                "instance {} ({} mode) on host {}, pid {}, data dir {}, started at {} ms, \
                 version {}, serving {}",
                other.instance_id,
                other.mode,
                other.host,
                other.pid,
                other.data_dir,
                other.started_ms,
                other.version,
                other.subjects
            ),
            None => format!(
                "service {} version {} (a daemon too old to say where it runs)",
                self.service_id, self.version
            ),
        }
    }
}

/// Every `memory-query` service that answers `$SRV.PING.memory-query` within `window`.
///
/// # Errors
/// When the ping cannot be sent.
pub async fn ping_query_services(
    client: &Client,
    window: Duration,
) -> Result<Vec<Peer>, NatsError> {
    let subject = format!("$SRV.PING.{QUERY_SERVICE_NAME}");
    let failed = |err: &dyn std::fmt::Display| NatsError::Subscribe {
        subject: subject.clone(),
        detail: err.to_string(),
    };
    let inbox = client.new_inbox();
    let mut replies = client
        .subscribe(inbox.clone())
        .await
        .map_err(|err| failed(&err))?;
    client
        .publish_with_reply(subject.clone(), inbox, "".into())
        .await
        .map_err(|err| failed(&err))?;
    client.flush().await.map_err(|err| failed(&err))?;
    let mut peers = Vec::new();
    let deadline = tokio::time::Instant::now() + window;
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, replies.next()).await {
        match serde_json::from_slice::<PingResponse>(&message.payload) {
            Ok(pong) => peers.push(Peer {
                instance: Instance::from_metadata(&pong.metadata),
                service_id: pong.id,
                version: pong.version,
            }),
            Err(err) => warn!(error = %err, "unreadable answer to the discovery ping"),
        }
    }
    Ok(peers)
}

/// Registers this daemon's query service (without endpoints) once no other daemon
/// answers, and checks again after. See the module doc.
///
/// # Errors
/// [`NatsError::AnotherInstance`] naming the other daemon; NATS failures.
pub async fn claim_single(
    client: &Client,
    me: &Instance,
    query_prefix: &str,
    window: Duration,
) -> Result<RegisteredQueryService, NatsError> {
    let another = |peer: &Peer| NatsError::AnotherInstance {
        other: peer.describe(),
    };
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        if let Some(peer) = ping_query_services(client, window).await?.first() {
            return Err(another(peer));
        }
        let registered =
            RegisteredQueryService::register(client, &me.version, query_prefix, me.metadata())
                .await?;
        // Registered on the server before the second ping goes out.
        client.flush().await.map_err(|err| NatsError::Subscribe {
            subject: query_prefix.to_owned(),
            detail: err.to_string(),
        })?;
        let peers = ping_query_services(client, window).await?;
        let other = peers.into_iter().find(|peer| {
            peer.instance
                .as_ref()
                .is_none_or(|other| other.instance_id != me.instance_id)
        });
        let Some(other) = other else {
            info!(instance_id = %me.instance_id, "the only daemon in single mode on this NATS");
            return Ok(registered);
        };
        // Both saw each other, or only this one did: everyone who sees another steps
        // down and tries again after a random pause, so one of them finds the other
        // already serving at its first ping and refuses.
        registered.stop().await;
        if attempt >= MAX_ATTEMPTS {
            return Err(another(&other));
        }
        let pause = 100 + u64::from(jitter()) % 500;
        warn!(attempt, pause_ms = pause, other = %other.describe(), "another daemon is starting on this NATS; trying again");
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
}

/// Claims tried before giving up to another daemon that keeps starting alongside.
const MAX_ATTEMPTS: u32 = 6;

/// A few random bits for the pause (the process id and the clock's nanoseconds: two
/// daemons starting together differ in both).
fn jitter() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    nanos.wrapping_mul(2_654_435_761) ^ std::process::id().wrapping_mul(40_503)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(id: &str, started_ms: u64) -> Instance {
        Instance {
            instance_id: id.to_owned(),
            mode: "single".to_owned(),
            host: "h".to_owned(),
            pid: 7,
            data_dir: "/d".to_owned(),
            started_ms,
            version: "0.1.0".to_owned(),
            subjects: "memory.ingest.*".to_owned(),
        }
    }

    #[test]
    fn metadata_round_trips_and_strangers_have_none() {
        let me = instance("a", 5);
        assert_eq!(Instance::from_metadata(&me.metadata()), Some(me));
        assert_eq!(Instance::from_metadata(&HashMap::new()), None);
    }
}
