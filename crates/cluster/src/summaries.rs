//! The lease holder's model summaries: with `[llm] summaries` on, a cluster's replicas
//! write every TOC node with the extractive summarizer (a function of the log), and the
//! group's lease holder alone asks the model — once per node version — and publishes
//! each answer to the log as a sealed `toc_summary` event. Every replica, the holder
//! included, applies it when it reaches the node in the log (see the rollup builder),
//! so they all show the same summary and none calls the model itself.
//!
//! What is asked for: the nodes that are final — closed segments, and parents with no
//! open segment under them — and show no model summary of their version
//! ([`RollupBuilder::awaiting_model_summary`]), bottom up: a parent waits while one of
//! its children still awaits a summary that is coming (not asked yet, or published and
//! not yet in the store), so a day is summarized from its segments' model summaries; a
//! child the model failed on does not hold it back. A node asked for (published or
//! failed) is asked again after [`RETRY_AFTER`] if it still shows none (the model was
//! down, or every replica refused the answer). At most [`NODES_PER_ROUND`] nodes per
//! round, at most [`SEGMENTS_PER_ROUND`] of them segments so that parents are not
//! starved by a steady stream of closing segments; the TOC is read at most every
//! [`SCAN_EVERY`] unless the last round published something. The lease is checked
//! before each call and each publish: the model can be slow, so this runs apart from
//! the renewals, on the tenure they share ([`Tenure`]).
//!
//! What the model says is bounded twice: the summarizer rejects an answer out of bounds
//! or citing a grip it was not shown, and after redaction with the cluster's key (the
//! model reads redacted events, but may still make up something shaped like a secret)
//! the holder checks it against the node's grips as every replica will
//! ([`memory_summarize::check_summary`]); each replica checks it again before a node
//! shows it, and of two summaries of one node version shows the first that passes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use memory_projections::RollupBuilder;
use memory_redact::Redactor;
use memory_store::Store;
use memory_summarize::{Summarizer, Summary, check_summary};
use memory_toc::{TocLevel, TocNode};
use memory_types::{
    DERIVED_SEAL, Event, EventKind, LEASE_EPOCH, LEASE_GROUP, LEASE_REVISION, Role, TOC_NODE,
    TOC_NODE_VERSION, TOC_SUMMARY_SESSION,
};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::derived::{publish, seal};
use crate::lease::{Tenure, still_held};
use crate::metrics::REPLICA_METRICS;

/// Most nodes asked for in one round.
pub const NODES_PER_ROUND: usize = 8;
/// Most segments among them (the rest are parents, when any is ready).
pub const SEGMENTS_PER_ROUND: usize = 6;
/// How long a node asked for waits before it is asked for again, if it still shows no
/// model summary.
pub const RETRY_AFTER: Duration = Duration::from_secs(120);
/// The longest the TOC goes unread while the holder has nothing in flight.
pub const SCAN_EVERY: Duration = Duration::from_secs(10);
/// The pause between rounds.
const ROUND: Duration = Duration::from_secs(3);

/// The model the holder asks, and the redactor its answers go through.
#[derive(Clone)]
pub struct ModelSummaries {
    /// A summarizer that fails rather than falling back (`LlmSummarizer::without_fallback`):
    /// only what the model wrote is worth publishing.
    pub summarizer: Arc<dyn Summarizer>,
    /// The cluster's redactor (the gateway's).
    pub redactor: Redactor,
}

impl std::fmt::Debug for ModelSummaries {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ModelSummaries")
            .field("summarizer", &self.summarizer.name())
            .finish_non_exhaustive()
    }
}

/// A node version: project, node, version.
type NodeVersion = (String, String, u64);

fn node_version(node: &TocNode) -> NodeVersion {
    (
        node.project_id.clone(),
        node.node_id.to_string(),
        node.version,
    )
}

/// What one tenure remembers between rounds.
#[derive(Default)]
struct Rounds {
    /// The tenure it belongs to.
    tenure: Option<(u64, u64)>,
    /// Asked for in this tenure, with when to ask again.
    asked: BTreeMap<NodeVersion, Instant>,
    /// Of those, the ones the model failed on (they hold no parent back).
    failed: BTreeSet<NodeVersion>,
    /// The rollup builder's cursor at the last round that found nothing to ask for:
    /// until it moves (or an asked node's time comes) there is nothing new, and the
    /// TOC is not read again.
    idle_at: Option<memory_store::OutboxSeq>,
    /// When the TOC was last read, and whether that round published anything.
    scanned: Option<(Instant, bool)>,
}

/// Runs rounds while this node holds the lease, until `shutdown`.
pub(crate) async fn run(
    context: jetstream::Context,
    store: Store,
    key: Vec<u8>,
    (group, summaries): (String, ModelSummaries),
    mut tenure: watch::Receiver<Option<Tenure>>,
    shutdown: CancellationToken,
) {
    let mut rounds = Rounds::default();
    loop {
        let held = tenure.borrow_and_update().and_then(|held| held.current());
        match held {
            Some(current) => {
                if rounds.tenure != Some(current) {
                    rounds = Rounds {
                        tenure: Some(current),
                        ..Rounds::default()
                    };
                }
                let span = info_span!("model_summaries", group = %group, tenure = current.1);
                let round = summarize_round(
                    &context,
                    &store,
                    &key,
                    &group,
                    &summaries,
                    &tenure,
                    &mut rounds,
                );
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = round.instrument(span) => {}
                }
            }
            None => {
                rounds = Rounds::default();
                REPLICA_METRICS.model_summaries_awaiting.set(0);
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(ROUND) => {}
        }
    }
}

async fn summarize_round(
    context: &jetstream::Context,
    store: &Store,
    key: &[u8],
    group: &str,
    summaries: &ModelSummaries,
    watch: &watch::Receiver<Option<Tenure>>,
    rounds: &mut Rounds,
) {
    let cursor = store.cursor(memory_projections::ROLLUP_BUILDER).ok();
    let now = Instant::now();
    let retry_due = rounds.asked.values().any(|retry| *retry <= now);
    let idle = cursor.is_some() && cursor == rounds.idle_at;
    let scanned_lately = rounds
        .scanned
        .is_some_and(|(at, published)| !published && now.duration_since(at) < SCAN_EVERY);
    if !retry_due && (idle || scanned_lately) {
        return;
    }
    let reading = store.clone();
    let awaiting =
        tokio::task::spawn_blocking(move || RollupBuilder::awaiting_model_summary(&reading)).await;
    let awaiting = match awaiting {
        Ok(Ok(awaiting)) => awaiting,
        Ok(Err(err)) => {
            warn!(error = %err, "cannot read the TOC nodes awaiting a model summary");
            return;
        }
        Err(err) => {
            warn!(error = %err, "reading the TOC nodes awaiting a model summary panicked");
            return;
        }
    };
    REPLICA_METRICS
        .model_summaries_awaiting
        .set(i64::try_from(awaiting.len()).unwrap_or(i64::MAX));
    // What shows a summary needs no memory.
    let versions: BTreeSet<NodeVersion> = awaiting.iter().map(node_version).collect();
    rounds.asked.retain(|node, _| versions.contains(node));
    rounds.failed.retain(|node| versions.contains(node));
    let Some((epoch, tenure)) = rounds.tenure else {
        return;
    };
    let asked = next_nodes(&awaiting, rounds, now);
    rounds.idle_at = (asked.is_empty() && rounds.asked.is_empty())
        .then_some(cursor)
        .flatten();
    let mut published_any = false;
    for node in asked {
        if !still_held(watch, rounds.tenure) {
            break;
        }
        let version = node_version(&node);
        rounds
            .asked
            .insert(version.clone(), Instant::now() + RETRY_AFTER);
        let (reading, asked, summarizer) = (
            store.clone(),
            node.clone(),
            Arc::clone(&summaries.summarizer),
        );
        let redactor = summaries.redactor.clone();
        // The model's answer, redacted, and checked as every replica will check it.
        let answer = tokio::task::spawn_blocking(move || {
            let summary = RollupBuilder::summarize_node(&reading, &asked, summarizer.as_ref())
                .map_err(|err| err.to_string())?;
            let summary = redacted(summary, &redactor);
            let grips =
                RollupBuilder::summary_grips(&reading, &asked).map_err(|err| err.to_string())?;
            check_summary(&summary, &grips)
                .map_err(|reason| format!("after redaction: {reason}"))?;
            Ok::<_, String>(summary)
        })
        .await
        .unwrap_or_else(|err| Err(format!("the model summary panicked: {err}")));
        let summary = match answer {
            Ok(summary) => summary,
            Err(err) => {
                warn!(node_id = %node.node_id, error = %err, "no model summary; tried again later");
                REPLICA_METRICS
                    .model_summaries
                    .with_label_values(&["failed"])
                    .inc();
                rounds.failed.insert(version);
                continue;
            }
        };
        let Some(event) = toc_summary(&node, &summary, (group, epoch, tenure), key) else {
            continue;
        };
        // The call may have outlived the lease.
        if !still_held(watch, rounds.tenure) {
            break;
        }
        match publish(context, &event).await {
            Ok(()) => {
                REPLICA_METRICS
                    .model_summaries
                    .with_label_values(&["published"])
                    .inc();
                rounds.failed.remove(&version);
                published_any = true;
            }
            Err(err) => {
                warn!(node_id = %node.node_id, error = %err, "cannot publish a toc_summary; next round");
                rounds.asked.remove(&version);
            }
        }
    }
    rounds.scanned = Some((now, published_any));
}

/// The nodes to ask for now, in the order given (segments first, then days, weeks,
/// months, years): those not asked for, or asked for and due again; a parent only when
/// none of its children still awaits a summary that is coming (a child not asked for
/// yet, or published and not yet shown — a child the model failed on does not count).
/// At most [`NODES_PER_ROUND`], at most [`SEGMENTS_PER_ROUND`] of them segments.
fn next_nodes(awaiting: &[TocNode], rounds: &Rounds, now: Instant) -> Vec<TocNode> {
    let due = |node: &TocNode| {
        rounds
            .asked
            .get(&node_version(node))
            .is_none_or(|retry| *retry <= now)
    };
    // Children that hold their parent back, by (project, node id).
    let coming: BTreeSet<(&str, String)> = awaiting
        .iter()
        .filter(|node| !rounds.failed.contains(&node_version(node)))
        .map(|node| (node.project_id.as_str(), node.node_id.to_string()))
        .collect();
    let mut picked = Vec::new();
    let mut segments = 0;
    for node in awaiting {
        if picked.len() == NODES_PER_ROUND {
            break;
        }
        if !due(node) {
            continue;
        }
        if node.level == TocLevel::Segment {
            if segments == SEGMENTS_PER_ROUND {
                continue;
            }
            segments += 1;
        } else if node
            .child_ids
            .iter()
            .any(|child| coming.contains(&(node.project_id.as_str(), child.to_string())))
        {
            continue;
        }
        picked.push(node.clone());
    }
    picked
}

/// `summary` with the cluster's redactor run over every text in it.
fn redacted(summary: Summary, redactor: &Redactor) -> Summary {
    let clean = |text: String| redactor.redact_text(&text).0.into_owned();
    Summary {
        title: clean(summary.title),
        summary: summary.summary.map(clean),
        bullets: summary
            .bullets
            .into_iter()
            .map(|bullet| memory_toc::TocBullet {
                text: clean(bullet.text),
                grip_ids: bullet.grip_ids,
            })
            .collect(),
        keywords: summary.keywords.into_iter().map(clean).collect(),
    }
}

/// The `toc_summary` of `node` by the holder of `group`'s lease (bucket `epoch`,
/// `tenure`): its id derives from the node version and the tenure (a retry is one
/// message in the log's duplicate window), its seal from everything it says, summary
/// included. `None` when the summary cannot be written as JSON.
#[must_use]
pub fn toc_summary(
    node: &TocNode,
    summary: &Summary,
    (group, epoch, tenure): (&str, u64, u64),
    key: &[u8],
) -> Option<Event> {
    let text = serde_json::to_string(summary).ok()?;
    let digest = Sha256::digest(
        format!(
            "{}\n{}\n{}\n{group}\n{epoch}\n{tenure}",
            node.project_id, node.node_id, node.version
        )
        .as_bytes(),
    );
    let mut event = Event {
        event_id: format!("toc-summary-{}", crate::to_hex(&digest[..16])),
        session_id: TOC_SUMMARY_SESSION.to_owned(),
        project_id: node.project_id.clone(),
        agent_id: Some("memory-daemon".to_owned()),
        timestamp_ms: node.end_ms,
        kind: EventKind::TocSummary,
        role: Role::System,
        text,
        metadata: BTreeMap::from([
            (TOC_NODE.to_owned(), node.node_id.to_string()),
            (TOC_NODE_VERSION.to_owned(), node.version.to_string()),
            (LEASE_GROUP.to_owned(), group.to_owned()),
            (LEASE_EPOCH.to_owned(), epoch.to_string()),
            (LEASE_REVISION.to_owned(), tenure.to_string()),
        ]),
    };
    let seal = seal(&event, key);
    event.metadata.insert(DERIVED_SEAL.to_owned(), seal);
    Some(event)
}

#[cfg(test)]
mod tests {
    use memory_toc::{GripId, TocBullet, TocNodeId};

    use super::*;
    use crate::derived::sealed;

    fn node(id: &str, level: TocLevel, version: u64) -> TocNode {
        let node_id: TocNodeId = id.parse().expect("node id");
        TocNode {
            node_id,
            project_id: "webapp".to_owned(),
            level,
            title: "extractive".to_owned(),
            summary: None,
            bullets: Vec::new(),
            keywords: Vec::new(),
            start_ms: 1_769_764_500_000,
            end_ms: 1_769_764_600_000,
            child_ids: Vec::new(),
            num_events: 3,
            version,
        }
    }

    #[test]
    fn a_toc_summary_is_sealed_over_its_text_and_valid_only_where_derived_events_are() {
        let key = b"cluster key";
        let summary = Summary {
            title: "Merges stall on the writer lock".to_owned(),
            summary: None,
            bullets: vec![TocBullet {
                text: "Commit every 5 s".to_owned(),
                grip_ids: vec![GripId::derive("proj", 1, "e1", 0)],
            }],
            keywords: vec!["tantivy".to_owned()],
        };
        let day = node("toc:day:2026-01-30", TocLevel::Day, 4);
        let event = toc_summary(&day, &summary, ("g1", 7, 3), key).expect("event");
        assert!(sealed(&event, key));
        let mut changed = event.clone();
        changed.text = changed.text.replace("writer lock", "reader lock");
        assert!(!sealed(&changed, key), "the seal covers the summary");
        assert_eq!(
            toc_summary(&day, &summary, ("g1", 7, 3), key).map(|e| e.event_id),
            Some(event.event_id.clone()),
            "a retry in the tenure is the same message"
        );
        assert_ne!(
            toc_summary(
                &node("toc:day:2026-01-30", TocLevel::Day, 5),
                &summary,
                ("g1", 7, 3),
                key
            )
            .map(|e| e.event_id),
            Some(event.event_id.clone()),
            "another version is another event"
        );
        crate::derived::assert_valid_only_where_derived_events_are(&event);
    }

    #[test]
    fn parents_wait_for_children_that_are_coming_not_for_failed_ones() {
        let segment = |i: usize| {
            let mut node = node(
                &format!("toc:segment:2026-01-30:01KG4Q6D7J8ZTE0V3N5H2J6K{i:02}"),
                TocLevel::Segment,
                4,
            );
            node.end_ms += i as u64;
            node
        };
        let segments: Vec<TocNode> = (0..10).map(segment).collect();
        let mut day = node("toc:day:2026-01-30", TocLevel::Day, 40);
        day.child_ids = segments.iter().map(|node| node.node_id).collect();
        // Another day, whose segments all show their summaries already.
        let mut other_day = node("toc:day:2026-01-29", TocLevel::Day, 9);
        other_day.child_ids = vec![
            "toc:segment:2026-01-29:01KG4Q6D7J8ZTE0V3N5H2J6K00"
                .parse()
                .expect("id"),
        ];
        let mut awaiting = segments.clone();
        awaiting.extend([day.clone(), other_day.clone()]);
        let now = Instant::now();
        let mut rounds = Rounds::default();
        // At most SEGMENTS_PER_ROUND segments: the ready day gets its turn too.
        let first = next_nodes(&awaiting, &rounds, now);
        let mut expected = segments[..SEGMENTS_PER_ROUND].to_vec();
        expected.push(other_day.clone());
        assert_eq!(first, expected);
        for node in &first {
            rounds.asked.insert(node_version(node), now + RETRY_AFTER);
        }
        // The rest of the segments; the day waits while its segments are coming.
        assert_eq!(
            next_nodes(&awaiting, &rounds, now),
            segments[SEGMENTS_PER_ROUND..]
        );
        for node in &segments[SEGMENTS_PER_ROUND..] {
            rounds.asked.insert(node_version(node), now + RETRY_AFTER);
        }
        assert!(next_nodes(&awaiting, &rounds, now).is_empty());
        // All shown but one the model failed on: the day goes.
        let failed = segments[3].clone();
        rounds.failed.insert(node_version(&failed));
        let left = vec![failed.clone(), day.clone()];
        assert_eq!(next_nodes(&left, &rounds, now), [day.clone()]);
        // One published but not shown yet holds the day back.
        rounds.failed.clear();
        assert!(next_nodes(&left, &rounds, now).is_empty());
        // When its time comes, a node still without a summary is asked for again.
        let later = now + RETRY_AFTER + Duration::from_secs(1);
        assert_eq!(next_nodes(&left, &rounds, later), [failed]);
    }
}
