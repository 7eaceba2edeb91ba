//! Cluster mode with a model: the indexing agent **follows** the log's `ideas_proposed`
//! events instead of running an engine. A model's answers differ from one call to the
//! next, so replicas that each asked it would hold different graphs; instead the
//! group's lease holder runs the engine over a project's events not yet covered
//! ([`proposal_batch`]) and publishes what it proposes (`memory-cluster`'s ideas
//! module), and every replica — the holder included — applies it here, at the point of
//! the log where it stands.
//!
//! A proposal applies when it follows the last one applied for its project (the chain,
//! [`ProposalChain`]) and names events of the project, in log order, after those the
//! chain covers and before itself; anything else is ignored and counted, never an
//! error, so a bad proposal cannot stop the feed. Its change set goes through the same
//! [`validate`] as a local engine's, against the graph as the proposal finds it (the
//! write buffer of the batch, so the result does not depend on how the feed was
//! batched), with the record time the proposal carries: every replica, and a rebuild,
//! arrives at the same graph.

use std::collections::BTreeMap;

use memory_ideas::{
    ApplyReport, ExtractBatch, IdeasProposal, Lexicon, ProposalChain, Rejection, apply_changes,
    apply_recall, validate,
};
use memory_store::{FeedItem, OutboxSeq, Store};
use memory_types::{Event, EventKind, IDEAS_PROPOSED_SESSION};
use tracing::warn;

use crate::consumer::ConsumerError;
use crate::ideas::graph::{GraphTxn, IdeaGraph};
use crate::ideas::metrics::IDEAS_METRICS;
use crate::ideas::reads::{read_context, recall_of};

/// The engine label of what proposals stored (metrics).
pub const PROPOSAL_ENGINE: &str = "proposal";

/// What following one feed batch did, for the agent's commit and metrics.
#[derive(Default)]
pub(super) struct Followed {
    /// What the applied proposals stored.
    pub report: ApplyReport,
    /// What validation dropped from them.
    pub rejected: Vec<Rejection>,
    /// Recalls applied, and naming ideas the graph does not have.
    pub recalls: (u64, u64),
}

/// Applies a feed batch in follow mode into `txn`: conversation events move their
/// project's `seen` mark, recalls apply, proposals apply when they hold.
///
/// # Errors
/// Store failures, or a malformed recall (bad input, as in single mode).
pub(super) fn follow(
    txn: &mut GraphTxn<'_>,
    store: &Store,
    items: &[FeedItem],
) -> Result<Followed, ConsumerError> {
    let graph_err = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
    let mut followed = Followed::default();
    // The projects' marks as this batch moves them, written once at the end.
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for item in items {
        let FeedItem::Event { seq, event } = item else {
            continue;
        };
        match event.kind {
            EventKind::MemoryRecalled => {
                let (project_id, idea_ids) = recall_of(event)?;
                let found = apply_recall(txn, &project_id, &idea_ids).map_err(graph_err)?;
                followed.recalls.0 += found.len() as u64;
                followed.recalls.1 += (idea_ids.len() - found.len()) as u64;
            }
            EventKind::IdeasProposed => {
                // A proposal reads the chain as the events before it left it.
                flush_seen(txn, &mut seen).map_err(graph_err)?;
                let outcome = apply_proposal(txn, store, *seq, event, &mut followed)?;
                IDEAS_METRICS
                    .proposals
                    .with_label_values(&[outcome.label()])
                    .inc();
                if let Outcome::Ignored(label, reason) = outcome {
                    warn!(event_id = %event.event_id, project_id = %event.project_id, outcome = label, %reason, "an ideas_proposed not applied");
                }
            }
            kind if kind.is_conversation() => {
                seen.insert(event.project_id.clone(), seq.0);
            }
            _ => {}
        }
    }
    flush_seen(txn, &mut seen).map_err(graph_err)?;
    Ok(followed)
}

fn flush_seen(
    txn: &mut GraphTxn<'_>,
    seen: &mut BTreeMap<String, u64>,
) -> Result<(), memory_ideas::GraphError> {
    for (project_id, seq) in std::mem::take(seen) {
        let mut chain = txn.chain(&project_id)?;
        chain.seen_seq = chain.seen_seq.max(seq);
        txn.set_chain(&project_id, &chain)?;
    }
    Ok(())
}

/// What became of one proposal.
enum Outcome {
    Applied,
    /// Not applied: the label (`stale`, `malformed`, `misplaced`) and why.
    Ignored(&'static str, String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::Applied => "applied",
            Outcome::Ignored(label, _) => label,
        }
    }
}

fn apply_proposal(
    txn: &mut GraphTxn<'_>,
    store: &Store,
    at: OutboxSeq,
    event: &Event,
    followed: &mut Followed,
) -> Result<Outcome, ConsumerError> {
    fail::fail_point!("ideas_follow", |_| Err(ConsumerError::Transient(format!(
        "injected ideas_follow failure on {}",
        event.event_id
    ))));
    let graph_err = |err: memory_ideas::GraphError| ConsumerError::Internal(err.to_string());
    if event.session_id != IDEAS_PROPOSED_SESSION {
        return Ok(Outcome::Ignored(
            "misplaced",
            format!("written to session {:?}", event.session_id),
        ));
    }
    let proposal: IdeasProposal = match serde_json::from_str(&event.text) {
        Ok(proposal) => proposal,
        Err(err) => return Ok(Outcome::Ignored("malformed", err.to_string())),
    };
    let project = &event.project_id;
    let mut chain = txn.chain(project).map_err(graph_err)?;
    if proposal.after != chain.head {
        return Ok(Outcome::Ignored(
            "stale",
            format!(
                "it follows {:?}, the project's last applied is {:?}",
                proposal.after, chain.head
            ),
        ));
    }
    let events = match covered_events(store, project, &proposal, &chain, at)? {
        Ok(events) => events,
        Err(reason) => return Ok(Outcome::Ignored("malformed", reason)),
    };
    let last = events.last().map_or(chain.covered_seq, |(seq, _)| *seq);
    let batch = ExtractBatch::continuous(events);
    let valid =
        validate(&proposal.changes, &batch, &*txn, proposal.recorded_ms).map_err(graph_err)?;
    let report = apply_changes(txn, Lexicon::shipped(), &valid).map_err(graph_err)?;
    followed.report.absorb(report);
    followed.rejected.extend(valid.rejected);
    chain.head = Some(event.event_id.clone());
    chain.covered_seq = last;
    chain.seen_seq = chain.seen_seq.max(last);
    txn.set_chain(project, &chain).map_err(graph_err)?;
    Ok(Outcome::Applied)
}

/// The events a proposal names, each with its log position: conversation events of the
/// project, in log order, after what the chain covers and before the proposal
/// (`at`). The inner error says why a proposal does not qualify.
fn covered_events(
    store: &Store,
    project: &str,
    proposal: &IdeasProposal,
    chain: &ProposalChain,
    at: OutboxSeq,
) -> Result<Result<Vec<(u64, Event)>, String>, ConsumerError> {
    if proposal.events.is_empty() {
        return Ok(Err("it covers no event".to_owned()));
    }
    let mut events = Vec::with_capacity(proposal.events.len());
    let mut previous = chain.covered_seq;
    for event_id in &proposal.events {
        let Some(seq) = store.seq_of_event_id(project, event_id)? else {
            return Ok(Err(format!("event {event_id:?} is not in the log")));
        };
        if seq.0 <= previous || seq >= at {
            return Ok(Err(format!(
                "event {event_id:?} is not after the covered events and the ones before it, \
                 and before the proposal"
            )));
        }
        let Some(event) = store.event(seq)? else {
            return Ok(Err(format!("event {event_id:?} is not in the log")));
        };
        if !event.kind.is_conversation() {
            return Ok(Err(format!(
                "event {event_id:?} is not a turn of the conversation"
            )));
        }
        previous = seq.0;
        events.push((seq.0, event));
    }
    Ok(Ok(events))
}

/// The next proposal's batch for `project` (the lease holder's): its conversation
/// events after what `chain` covers, in log order, at most `limit`, up to the last one
/// the agent has passed — grouped per session, each session with the turns just before
/// it — and their ids. `None` when there is none.
///
/// # Errors
/// Store failures.
pub fn proposal_batch(
    store: &Store,
    project: &str,
    chain: &ProposalChain,
    limit: usize,
) -> Result<Option<(ExtractBatch, Vec<String>)>, ConsumerError> {
    let mut events = Vec::new();
    for item in store.log_events(OutboxSeq(chain.covered_seq)) {
        let (seq, event) = item?;
        if seq.0 > chain.seen_seq || events.len() >= limit.max(1) {
            break;
        }
        if event.project_id == project && event.kind.is_conversation() {
            events.push((seq.0, event));
        }
    }
    if events.is_empty() {
        return Ok(None);
    }
    let ids = events
        .iter()
        .map(|(_, event)| event.event_id.clone())
        .collect();
    let mut batch = ExtractBatch::continuous(events);
    read_context(store, &mut batch)?;
    Ok(Some((batch, ids)))
}

/// Every project's chain as the graph stands (the holder's round reads it).
///
/// # Errors
/// Store or decoding failures.
pub fn proposal_chains(store: &Store) -> Result<BTreeMap<String, ProposalChain>, ConsumerError> {
    IdeaGraph::open(store)?
        .chains()
        .map_err(|err| ConsumerError::Internal(err.to_string()))
}

#[cfg(test)]
#[path = "proposals_tests.rs"]
mod tests;
