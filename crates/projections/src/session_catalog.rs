//! `SessionCatalog`: the reference outbox consumer — per (project, session), the first and
//! last event time and the event count. Small, but a real projection: `status` and
//! session listings read it, and the tests use it to exercise the runner (cursor
//! atomicity, replay, reset, poison entries). Upstream: outbox events. Downstream: none.

use std::collections::BTreeMap;

use memory_store::{FeedItem, Keyspace, OutboxSeq, Store, codec};
use memory_types::Event;
use serde::{Deserialize, Serialize};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::keys::project_scoped_key;

/// The consumer's name: cursor key and metrics label.
pub const SESSION_CATALOG: &str = "session_catalog";
const RECORD_VERSION: u8 = 1;

/// One session as the catalog knows it (format v1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The project.
    pub project_id: String,
    /// The session.
    pub session_id: String,
    /// Earliest event time, epoch ms.
    pub first_timestamp_ms: u64,
    /// Latest event time, epoch ms.
    pub last_timestamp_ms: u64,
    /// Events seen.
    pub num_events: u64,
    /// Highest outbox position applied, so a replayed item is not counted twice.
    pub last_seq: u64,
}

/// A predicate that makes the catalog fail on some events with the error it returns:
/// tests use it to plant poison (bad input, or a fault that retrying may clear).
pub type RejectEvent = std::sync::Arc<dyn Fn(&Event) -> Option<ConsumerError> + Send + Sync>;

/// The consumer.
pub struct SessionCatalog {
    keyspace: Keyspace,
    reject: Option<RejectEvent>,
}

impl SessionCatalog {
    /// Opens the catalog's keyspace.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store) -> Result<Self, ConsumerError> {
        Ok(SessionCatalog {
            keyspace: store.projection_keyspace(SESSION_CATALOG)?,
            reject: None,
        })
    }

    /// A catalog that fails on events for which `reject` returns an error (tests only).
    ///
    /// # Errors
    /// Store failures.
    pub fn with_reject(store: &Store, reject: RejectEvent) -> Result<Self, ConsumerError> {
        Ok(SessionCatalog {
            keyspace: store.projection_keyspace(SESSION_CATALOG)?,
            reject: Some(reject),
        })
    }

    /// Every session of a project, by session id.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn sessions(store: &Store, project_id: &str) -> Result<Vec<SessionSummary>, ConsumerError> {
        let keyspace = store.projection_keyspace(SESSION_CATALOG)?;
        let prefix = project_scoped_key(project_id, "");
        let mut out = Vec::new();
        for guard in keyspace.prefix(prefix) {
            let (_, value) = guard.into_inner().map_err(memory_store::StoreError::from)?;
            out.push(codec::decode("session summary", RECORD_VERSION, &value)?);
        }
        Ok(out)
    }

    /// One session, `None` when the catalog has not seen it.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn session(
        store: &Store,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<SessionSummary>, ConsumerError> {
        let keyspace = store.projection_keyspace(SESSION_CATALOG)?;
        Ok(codec::get_record(
            &keyspace,
            project_scoped_key(project_id, session_id),
            "session summary",
            RECORD_VERSION,
        )?)
    }

    fn load(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<SessionSummary>, ConsumerError> {
        Ok(codec::get_record(
            &self.keyspace,
            project_scoped_key(project_id, session_id),
            "session summary",
            RECORD_VERSION,
        )?)
    }
}

impl OutboxConsumer for SessionCatalog {
    fn name(&self) -> &str {
        SESSION_CATALOG
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let mut touched: BTreeMap<Vec<u8>, SessionSummary> = BTreeMap::new();
        for item in items {
            let FeedItem::Event { seq, event } = item else {
                continue;
            };
            if !event.kind.is_conversation() {
                continue;
            }
            if let Some(err) = self.reject.as_ref().and_then(|reject| reject(event)) {
                return Err(err);
            }
            let id = project_scoped_key(&event.project_id, &event.session_id);
            let summary = match touched.remove(&id) {
                Some(summary) => Some(summary),
                None => self.load(&event.project_id, &event.session_id)?,
            };
            let updated = match summary {
                Some(summary) if summary.last_seq >= seq.0 => summary,
                Some(mut summary) => {
                    summary.first_timestamp_ms = summary.first_timestamp_ms.min(event.timestamp_ms);
                    summary.last_timestamp_ms = summary.last_timestamp_ms.max(event.timestamp_ms);
                    summary.num_events += 1;
                    summary.last_seq = seq.0;
                    summary
                }
                None => SessionSummary {
                    project_id: event.project_id.clone(),
                    session_id: event.session_id.clone(),
                    first_timestamp_ms: event.timestamp_ms,
                    last_timestamp_ms: event.timestamp_ms,
                    num_events: 1,
                    last_seq: seq.0,
                },
            };
            touched.insert(id, updated);
        }
        let mut batch = store.projection_batch();
        for (id, summary) in &touched {
            batch.insert(
                &self.keyspace,
                id,
                codec::encode("session summary", RECORD_VERSION, summary)?,
            );
        }
        batch.set_cursor(SESSION_CATALOG, up_to);
        store.commit_projection(batch)?;
        Ok(())
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.keyspace
            .clear()
            .map_err(memory_store::StoreError::from)?;
        store.set_cursor(SESSION_CATALOG, start)?;
        Ok(())
    }
}
