//! The daemon's [`RecallSink`]: the ideas each `search` returned become
//! `memory_recalled` events in the log (session `memory-recall`), batched and appended
//! off the search's path. The ideas projection raises their salience from them, so
//! reinforcement is part of the log and survives a rebuild.
//!
//! A search only puts its ids on a bounded channel (`try_send`); when the channel is
//! full (the log cannot keep up) the recall is dropped and counted, never waited for.
//!
//! In cluster mode the recalls go to the replicated log through the gateway (the
//! replica that answered the search is the only one that saw it), and every replica of
//! the group applies them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use memory_actors::IngestHandle;
use memory_projections::RECALL_SESSION;
use memory_query::RecallSink;
use memory_types::{Event, EventKind, RECALLED_IDEA_IDS, Role};
use prometheus::IntCounterVec;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// Recalls waiting to be written, at most.
const QUEUE: usize = 4_096;
/// How long recalls gather before one append.
const BATCH_WINDOW: Duration = Duration::from_millis(500);
/// Longest query text kept on a recall event, characters.
const MAX_QUERY_CHARS: usize = 500;

struct Recall {
    project_id: String,
    query: String,
    idea_ids: Vec<String>,
    at_ms: u64,
}

/// Where recalls are written.
pub(crate) enum RecallLog {
    /// This daemon's own log (single mode).
    Local(IngestHandle),
    /// The replicated log, through the gateway (cluster mode).
    Cluster(memory_cluster::GatewaySink),
}

/// Hands recalls to the writer task.
pub(crate) struct RecallWriter {
    sender: mpsc::Sender<Recall>,
}

fn outcomes() -> &'static IntCounterVec {
    static OUTCOMES: std::sync::LazyLock<IntCounterVec> = std::sync::LazyLock::new(|| {
        memory_metrics::counter_vec(
            "memory_recall_events_total",
            "memory_recalled events by outcome (appended, dropped when the queue was full, failed)",
            &["outcome"],
        )
    });
    &OUTCOMES
}

impl RecallSink for RecallWriter {
    fn recalled(&self, project_id: &str, query: &str, idea_ids: Vec<String>) {
        let recall = Recall {
            project_id: project_id.to_owned(),
            query: memory_text::truncate_chars(query, MAX_QUERY_CHARS).to_owned(),
            idea_ids,
            at_ms: memory_types::now_ms(),
        };
        if self.sender.try_send(recall).is_err() {
            outcomes().with_label_values(&["dropped"]).inc();
        }
    }
}

/// Starts the writer task; it appends through `ingest` until `shutdown`, then writes
/// what is queued.
pub(crate) fn start(
    ingest: RecallLog,
    shutdown: CancellationToken,
) -> (Arc<RecallWriter>, tokio::task::JoinHandle<()>) {
    let (sender, mut receiver) = mpsc::channel::<Recall>(QUEUE);
    let task = tokio::spawn(async move {
        loop {
            let first = tokio::select! {
                () = shutdown.cancelled() => None,
                recall = receiver.recv() => recall,
            };
            let Some(first) = first else { break };
            let mut batch = vec![first];
            let deadline = tokio::time::sleep(BATCH_WINDOW);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    () = &mut deadline => break,
                    recall = receiver.recv() => match recall {
                        Some(recall) => batch.push(recall),
                        None => break,
                    },
                }
            }
            append(&ingest, batch).await;
        }
        receiver.close();
        let mut rest = Vec::new();
        while let Ok(recall) = receiver.try_recv() {
            rest.push(recall);
        }
        if !rest.is_empty() {
            append(&ingest, rest).await;
        }
    });
    (Arc::new(RecallWriter { sender }), task)
}

/// One event per recall (the ids of one search together).
fn events(batch: Vec<Recall>) -> Vec<Event> {
    batch
        .into_iter()
        .map(|recall| Event {
            event_id: format!("recall-{}", ulid::Ulid::new()),
            session_id: RECALL_SESSION.to_owned(),
            project_id: recall.project_id,
            agent_id: Some("memory-daemon".to_owned()),
            timestamp_ms: recall.at_ms,
            kind: EventKind::MemoryRecalled,
            role: Role::System,
            text: recall.query,
            metadata: BTreeMap::from([(RECALLED_IDEA_IDS.to_owned(), recall.idea_ids.join(","))]),
        })
        .collect()
}

async fn append(log: &RecallLog, batch: Vec<Recall>) {
    let events = events(batch);
    let count = events.len() as u64;
    let appended = match log {
        RecallLog::Local(ingest) => ingest
            .append(events)
            .await
            .map(|_| ())
            .map_err(|err| err.to_string()),
        RecallLog::Cluster(gateway) => {
            use memory_types::EventSink as _;
            gateway
                .ingest(events.into_iter().map(Ok).collect())
                .await
                .map(|_| ())
                .map_err(|err| err.to_string())
        }
    };
    match appended {
        Ok(()) => outcomes().with_label_values(&["appended"]).inc_by(count),
        Err(err) => {
            outcomes().with_label_values(&["failed"]).inc_by(count);
            warn!(error = %err, recalls = count, "cannot append memory_recalled events");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_events_are_valid_events() {
        let events = events(vec![Recall {
            project_id: "p".into(),
            query: "what did we decide".into(),
            idea_ids: vec![
                "idea-0123456789abcdef".into(),
                "idea-fedcba9876543210".into(),
            ],
            at_ms: 1_769_764_500_000,
        }]);
        let ids = memory_types::recalled_idea_ids(&events[0].metadata).expect("valid ids");
        assert_eq!(ids.len(), 2);
        assert_eq!(events[0].kind, EventKind::MemoryRecalled);
        assert!(!events[0].kind.is_conversation());
        // The wire form passes ingest validation too.
        let wire = serde_json::to_vec(&events[0].to_wire()).expect("json");
        let parsed = memory_types::parse_single(
            &wire,
            memory_types::ProjectScope::Subject("p"),
            &memory_types::ValidationLimits::default(),
            None,
        );
        assert!(parsed.is_ok(), "{parsed:?}");
    }
}
