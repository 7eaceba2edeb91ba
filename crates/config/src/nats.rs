//! `[nats]` and `[nats.jetstream]`: the NATS connection, subjects and JetStream ingest.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[nats]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NatsConfig {
    /// Server URL(s), comma-separated. Default `nats://127.0.0.1:4222`.
    pub url: String,
    /// Client name shown by the server. Default `agent-memory`.
    pub client_name: String,
    /// Token authentication. Default none.
    pub token: Option<String>,
    /// User for user/password authentication. Default none.
    pub user: Option<String>,
    /// Password for user/password authentication. Default none.
    pub password: Option<String>,
    /// NKey seed (`SU…`) for nkey authentication. Default none.
    pub nkey_seed: Option<String>,
    /// Path of a `.creds` file (JWT + nkey). Default none.
    pub credentials_file: Option<PathBuf>,
    /// Require TLS. Default false (TLS is still used when the URL is `tls://`).
    pub tls_required: bool,
    /// CA certificate (PEM) to trust. Default none (system roots).
    pub tls_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) for mutual TLS. Default none.
    pub tls_cert_file: Option<PathBuf>,
    /// Client key (PEM) for mutual TLS. Default none.
    pub tls_key_file: Option<PathBuf>,
    /// Prefix of the subjects replies come back on. Default none (`_INBOX`). With
    /// tenants sharing a server, give each its own (`_INBOX_webapp`) and let it
    /// subscribe to that prefix only: on the shared `_INBOX.>` a tenant could read the
    /// replies to another's queries (`deploy/nats-server.conf`).
    pub inbox_prefix: Option<String>,
    /// Queue group of the daemon's request/reply subscriptions. Single mode allows one
    /// daemon per NATS, so nothing shares it yet. Default `agent-memory`.
    pub queue_group: String,
    /// Subject prefix of request/reply ingest; the project is the next token.
    /// Default `memory.ingest`.
    pub ingest_subject_prefix: String,
    /// Subject prefix of queries. Default `memory.query`.
    pub query_subject_prefix: String,
    /// Timeout of a CLI request to a running daemon, seconds. Default 10.
    pub request_timeout_secs: u64,
    /// Queries the daemon answers at once. Default four per core, at least 8.
    pub query_max_in_flight: Option<usize>,
    /// Queries that may wait for one of those places; beyond, a query is answered
    /// `unavailable` at once (load shedding). Default 512.
    pub query_max_queued: usize,
    /// The longest a query waits for a place before it is answered `unavailable`,
    /// milliseconds. Default 1000.
    pub query_max_wait_ms: u64,
    /// JetStream ingest.
    pub jetstream: JetStreamConfig,
}

impl Default for NatsConfig {
    fn default() -> Self {
        NatsConfig {
            url: "nats://127.0.0.1:4222".into(),
            client_name: "agent-memory".into(),
            token: None,
            user: None,
            password: None,
            nkey_seed: None,
            credentials_file: None,
            tls_required: false,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            inbox_prefix: None,
            queue_group: "agent-memory".into(),
            ingest_subject_prefix: "memory.ingest".into(),
            query_subject_prefix: "memory.query".into(),
            request_timeout_secs: 10,
            query_max_in_flight: None,
            query_max_queued: 512,
            query_max_wait_ms: 1_000,
            jetstream: JetStreamConfig::default(),
        }
    }
}

/// `[nats.jetstream]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JetStreamConfig {
    /// Consume the durable stream. Default true.
    pub enabled: bool,
    /// Stream name. Default `MEMORY_EVENTS`.
    pub stream: String,
    /// Subjects the stream captures; producers publish one event per message to
    /// `memory.events.<project>`. Default `["memory.events.>"]`.
    pub subjects: Vec<String>,
    /// Create the stream when it does not exist. Default true.
    pub create_stream: bool,
    /// Durable consumer name; compared with the configuration at start, never inherited.
    /// Default `memory-daemon`.
    pub durable_name: String,
    /// Messages fetched per pull. Default 500.
    pub fetch_batch: usize,
    /// Unacknowledged messages the server allows in flight. Default 10000.
    pub max_ack_pending: i64,
    /// Seconds before an unacknowledged message is redelivered. Default 30.
    pub ack_wait_secs: u64,
}

impl Default for JetStreamConfig {
    fn default() -> Self {
        JetStreamConfig {
            enabled: true,
            stream: "MEMORY_EVENTS".into(),
            subjects: vec!["memory.events.>".into()],
            create_stream: true,
            durable_name: "memory-daemon".into(),
            fetch_batch: 500,
            max_ack_pending: 10_000,
            ack_wait_secs: 30,
        }
    }
}
