//! The lease holder's work: what one node of a group does for all of them because it
//! is not a pure function of the log, published to the log as derived events so every
//! replica applies the same result at the same point instead of deciding for itself.
//!
//! Today that is idle segment closes: a live session that falls silent closes its open
//! segment after the TOC's gap of wall-clock time. A replica's own clock (and when it
//! happened to apply the last event) would close it at different points on different
//! replicas — or never, for one replaying the log — so in cluster mode the holder looks
//! at its store ([`Segmenter::idle_segments`]) and publishes a `segment_close` for each
//! idle segment, once per tenure, stamped with its group, the lease bucket's epoch and
//! its tenure, and sealed with the cluster's key. The lease is checked before each
//! publish, not once per round.
//! With `[llm] summaries` on, the holder also has the model summarize final TOC nodes
//! and publishes each answer as a `toc_summary` ([`crate::summaries`]), in a task of its
//! own: a model call can take longer than a renewal period.
//! `memory_recalled` events need no lease: the replica that answered the search
//! publishes them (the daemon's recall writer).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_nats::jetstream;
use memory_projections::{IdleSegment, Segmenter};
use memory_store::Store;
use memory_types::{
    DERIVED_SEAL, Event, EventKind, LEASE_EPOCH, LEASE_GROUP, LEASE_REVISION, Role, SEGMENT_EVENTS,
    SEGMENT_FIRST_EVENT,
};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::derived::{publish, seal};
use crate::ideas::ModelIdeas;
use crate::layout::LEASE_TTL;
use crate::lease::{Lease, Tenure};
use crate::metrics::REPLICA_METRICS;
use crate::summaries::ModelSummaries;

/// How the holder works.
#[derive(Clone, Debug)]
pub struct HolderConfig {
    /// This node.
    pub node_id: String,
    /// Its group: the lease's key.
    pub group: String,
    /// Wall-clock silence after which a session's open segment closes (the TOC's gap).
    pub gap: Duration,
    /// The model that summarizes final TOC nodes, when `[llm] summaries` is on.
    pub summaries: Option<ModelSummaries>,
    /// The indexing engine whose change sets the holder proposes, with the LLM engine
    /// (every replica's agent then follows the log's proposals).
    pub ideas: Option<ModelIdeas>,
}

/// The running lease work of a node.
pub struct LeaseHolder {
    task: JoinHandle<()>,
    holding: Arc<AtomicBool>,
}

impl LeaseHolder {
    /// Competes for the group's lease every third of its time to live and, while it
    /// holds it, publishes what the group needs; gives it back at `shutdown`.
    #[must_use]
    pub fn start(
        client: async_nats::Client,
        store: Store,
        key: Vec<u8>,
        config: HolderConfig,
        shutdown: CancellationToken,
    ) -> LeaseHolder {
        let holding = Arc::new(AtomicBool::new(false));
        let flag = holding.clone();
        let (tenure_tx, tenure_rx) = watch::channel(None::<Tenure>);
        let ideas = config.ideas.clone().map(|ideas| {
            tokio::spawn(crate::ideas::run(
                jetstream::new(client.clone()),
                store.clone(),
                key.clone(),
                (config.group.clone(), ideas),
                tenure_tx.subscribe(),
                shutdown.clone(),
            ))
        });
        let summaries = config.summaries.clone().map(|summaries| {
            tokio::spawn(crate::summaries::run(
                jetstream::new(client.clone()),
                store.clone(),
                key.clone(),
                (config.group.clone(), summaries),
                tenure_rx,
                shutdown.clone(),
            ))
        });
        let task = tokio::spawn(async move {
            let mut lease: Option<Lease> = None;
            let context = jetstream::new(client.clone());
            // The closes published in the current tenure (each is published once).
            let mut published = BTreeSet::new();
            loop {
                if lease.is_none() {
                    match Lease::open(&client, &config.group, &config.node_id).await {
                        Ok(opened) => lease = Some(opened),
                        Err(err) => warn!(error = %err, "cannot open the group's lease"),
                    }
                }
                if let Some(lease) = lease.as_mut() {
                    let held = tokio::select! {
                        () = shutdown.cancelled() => break,
                        held = lease.hold() => held,
                    };
                    REPLICA_METRICS.lease_held.set(i64::from(held.is_some()));
                    flag.store(held.is_some(), Ordering::Relaxed);
                    tenure_tx.send_replace(lease.tenure());
                    if held.is_none() {
                        published.clear();
                    }
                    if let Some((_, tenure)) = held {
                        let span = info_span!("lease_work", group = %config.group, tenure);
                        let work =
                            close_idle(&context, &store, &key, &config, lease, &mut published);
                        tokio::select! {
                            () = shutdown.cancelled() => break,
                            () = work.instrument(span) => {}
                        }
                    }
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(LEASE_TTL / 3) => {}
                }
            }
            tenure_tx.send_replace(None);
            if let Some(summaries) = summaries {
                let _ = summaries.await;
            }
            if let Some(ideas) = ideas {
                let _ = ideas.await;
            }
            if let Some(mut lease) = lease {
                lease.release().await;
            }
            REPLICA_METRICS.lease_held.set(0);
            flag.store(false, Ordering::Relaxed);
        });
        LeaseHolder { task, holding }
    }

    /// True while this node holds its group's lease (other lease work, such as the
    /// scheduled snapshots, follows it).
    #[must_use]
    pub fn holding(&self) -> Arc<AtomicBool> {
        self.holding.clone()
    }

    /// Waits until it has stopped (the lease given back).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Publishes a `segment_close` for every open segment idle for the gap on this replica
/// that this tenure did not publish yet, while the lease is surely held.
async fn close_idle(
    context: &jetstream::Context,
    store: &Store,
    key: &[u8],
    config: &HolderConfig,
    lease: &Lease,
    published: &mut BTreeSet<String>,
) {
    let (store, gap) = (store.clone(), config.gap);
    let idle = tokio::task::spawn_blocking(move || {
        Segmenter::idle_segments(&store, memory_types::now_ms(), gap)
    })
    .await;
    let idle = match idle {
        Ok(Ok(idle)) => idle,
        Ok(Err(err)) => {
            warn!(error = %err, "cannot read the open segments");
            return;
        }
        Err(err) => {
            warn!(error = %err, "reading the open segments panicked");
            return;
        }
    };
    let Some((epoch, tenure)) = lease.current() else {
        return;
    };
    let closes: Vec<Event> = idle
        .iter()
        .map(|segment| segment_close(segment, (&config.group, epoch, tenure), key))
        .collect();
    // What is no longer idle (closed, or moved on) needs no memory.
    published.retain(|id| closes.iter().any(|close| &close.event_id == id));
    for event in closes {
        if published.contains(&event.event_id) {
            continue;
        }
        // A round can take a while: the lease must still be surely ours.
        if lease.current() != Some((epoch, tenure)) {
            return;
        }
        match publish(context, &event).await {
            Ok(()) => {
                published.insert(event.event_id.clone());
            }
            Err(err) => warn!(error = %err, "cannot publish a segment_close; next round"),
        }
    }
}

/// The `segment_close` of `segment` by the holder of `group`'s lease (bucket `epoch`,
/// `tenure`): its id derives from the segment and the tenure (a retry is one message in
/// the log's duplicate window; another tenure's close is another event, so one fenced
/// as stale never shadows the current holder's), and its seal from everything it says.
#[must_use]
pub fn segment_close(
    segment: &IdleSegment,
    (group, epoch, tenure): (&str, u64, u64),
    key: &[u8],
) -> Event {
    let digest = Sha256::digest(
        format!(
            "{}\n{}\n{}\n{}\n{group}\n{epoch}\n{tenure}",
            segment.project_id, segment.session_id, segment.first_event_id, segment.events
        )
        .as_bytes(),
    );
    let id = crate::to_hex(&digest[..16]);
    let mut event = Event {
        event_id: format!("segment-close-{id}"),
        session_id: segment.session_id.clone(),
        project_id: segment.project_id.clone(),
        agent_id: Some("memory-daemon".to_owned()),
        timestamp_ms: segment.last_timestamp_ms,
        kind: EventKind::SegmentClose,
        role: Role::System,
        text: String::new(),
        metadata: BTreeMap::from([
            (
                SEGMENT_FIRST_EVENT.to_owned(),
                segment.first_event_id.clone(),
            ),
            (SEGMENT_EVENTS.to_owned(), segment.events.to_string()),
            (LEASE_GROUP.to_owned(), group.to_owned()),
            (LEASE_EPOCH.to_owned(), epoch.to_string()),
            (LEASE_REVISION.to_owned(), tenure.to_string()),
        ]),
    };
    let seal = seal(&event, key);
    event.metadata.insert(DERIVED_SEAL.to_owned(), seal);
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derived::{assert_valid_only_where_derived_events_are, sealed};

    #[test]
    fn a_segment_close_is_sealed_and_a_changed_one_is_not() {
        let segment = IdleSegment {
            project_id: "webapp".into(),
            session_id: "s1".into(),
            first_event_id: "e1".into(),
            events: 4,
            last_timestamp_ms: 1_790_000_000_000,
        };
        let key = b"cluster key";
        let event = segment_close(&segment, ("g1", 1_789_000_000_000, 17), key);
        assert!(sealed(&event, key));
        assert!(!sealed(&event, b"another key"));
        let mut forged = event.clone();
        forged
            .metadata
            .insert(LEASE_REVISION.to_owned(), "999999".to_owned());
        assert!(!sealed(&forged, key), "a raised revision breaks the seal");
        let mut unsealed = event.clone();
        unsealed.metadata.remove(DERIVED_SEAL);
        assert!(!sealed(&unsealed, key));
        // A retry in the same tenure is the same message; another tenure's is another.
        let tenure = ("g1", 1_789_000_000_000, 17);
        assert_eq!(
            segment_close(&segment, tenure, key).event_id,
            event.event_id
        );
        assert_ne!(
            segment_close(&segment, ("g1", 1_789_000_000_000, 18), key).event_id,
            event.event_id
        );
        assert_valid_only_where_derived_events_are(&event);
    }
}
