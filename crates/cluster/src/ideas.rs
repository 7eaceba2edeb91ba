//! The lease holder's ideas: with the LLM indexing engine (`[indexing] engine = "llm"`,
//! or `"auto"` with `[llm] enabled`), a cluster's replicas do not run the engine — two
//! calls to a model answer differently, and so would two replicas' graphs. Every
//! replica's indexing agent follows the log instead (`memory_projections`' proposals:
//! it marks each project's conversation events as seen and applies `ideas_proposed`
//! events), and the group's lease holder alone runs the engine: per project, over the
//! conversation events its chain does not cover yet ([`proposal_batch`]), against the
//! graph as the chain left it, and publishes the change set as a sealed
//! `ideas_proposed` that names the events, the proposal it follows and the record
//! time. Every replica, the holder included, validates and applies it where it stands
//! in the log.
//!
//! When: a project is proposed for once its events have waited the engine's window
//! (`[indexing] llm_window_ms`, as the single-mode agent lingers) since this holder saw
//! them pending, then each round while it stays pending — at most
//! [`PROJECTS_PER_ROUND`] projects per round, `[indexing] batch_events` events each.
//! A project waits while its last proposal is published and not yet applied here; a
//! proposal that does not show up (lost, or ignored as stale) is made again after
//! [`RETRY_AFTER`]; a failed engine run is tried again after [`RETRY_AFTER`] too (the
//! LLM engine falls back to the heuristic one itself, so that is rare).
//!
//! What the model says is bounded three times: the engine drops what it cannot ground,
//! the holder redacts every text with the cluster's key (the model reads redacted
//! events, but may make up something shaped like a secret) and keeps a proposal under
//! [`MAX_PROPOSAL_BYTES`] (halving the events it covers until it fits), and every
//! replica validates the change set before anything is stored. The lease is checked
//! before each engine run and each publish; the engine runs apart from the renewals.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream;
use memory_ideas::{
    ChangeSet, ExtractBatch, IdeaExtractor, IdeasProposal, MAX_PROPOSAL_BYTES, ProposalChain,
};
use memory_projections::{EngineFactory, IDEAS_METRICS, IdeaGraph, proposal_batch};
use memory_redact::Redactor;
use memory_store::Store;
use memory_types::{
    DERIVED_SEAL, Event, EventKind, IDEAS_PROPOSED_SESSION, LEASE_EPOCH, LEASE_GROUP,
    LEASE_REVISION, Role,
};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::derived::{publish, seal};
use crate::lease::Tenure;
use crate::metrics::REPLICA_METRICS;

/// Most projects proposed for in one round.
pub const PROJECTS_PER_ROUND: usize = 4;
/// How long a published proposal may take to show up in the store, and how long a
/// failed engine run waits, before the project is proposed for again.
pub const RETRY_AFTER: Duration = Duration::from_secs(120);
/// The pause between rounds.
const ROUND: Duration = Duration::from_secs(1);

/// The engine the holder runs, and how.
#[derive(Clone)]
pub struct ModelIdeas {
    /// Builds the engine (the LLM engine with its heuristic fallback).
    pub engine: EngineFactory,
    /// The cluster's redactor (the gateway's).
    pub redactor: Redactor,
    /// How long a project's events wait before the first proposal
    /// (`[indexing] llm_window_ms`).
    pub window: Duration,
    /// Most events per proposal (`[indexing] batch_events`).
    pub batch_events: usize,
}

impl std::fmt::Debug for ModelIdeas {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ModelIdeas")
            .field("window", &self.window)
            .field("batch_events", &self.batch_events)
            .finish_non_exhaustive()
    }
}

/// What one tenure remembers between rounds.
#[derive(Default)]
struct Rounds {
    /// The tenure it belongs to.
    tenure: Option<(u64, u64)>,
    /// Since when each project has been seen pending.
    pending_since: BTreeMap<String, Instant>,
    /// Projects not to propose for until then: a proposal published (by its id) and
    /// not yet applied here, or an engine run that failed (no id).
    waiting: BTreeMap<String, (Option<String>, Instant)>,
}

type Engine = Arc<Mutex<Box<dyn IdeaExtractor>>>;

/// Runs rounds while this node holds the lease, until `shutdown`.
pub(crate) async fn run(
    context: jetstream::Context,
    store: Store,
    key: Vec<u8>,
    (group, ideas): (String, ModelIdeas),
    mut tenure: watch::Receiver<Option<Tenure>>,
    shutdown: CancellationToken,
) {
    let engine: Engine = Arc::new(Mutex::new((ideas.engine)()));
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
                let span = info_span!("idea_proposals", group = %group, tenure = current.1);
                let round = propose_round(
                    &context,
                    &store,
                    &key,
                    (&group, &ideas, &engine),
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
                REPLICA_METRICS.ideas_pending_projects.set(0);
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(ROUND) => {}
        }
    }
}

/// Whether the lease is surely still held in `tenure`.
fn still_held(watch: &watch::Receiver<Option<Tenure>>, tenure: Option<(u64, u64)>) -> bool {
    let current = watch.borrow().and_then(|held| held.current());
    current.is_some() && current == tenure
}

async fn propose_round(
    context: &jetstream::Context,
    store: &Store,
    key: &[u8],
    (group, ideas, engine): (&str, &ModelIdeas, &Engine),
    watch: &watch::Receiver<Option<Tenure>>,
    rounds: &mut Rounds,
) {
    let reading = store.clone();
    let chains =
        match tokio::task::spawn_blocking(move || memory_projections::proposal_chains(&reading))
            .await
        {
            Ok(Ok(chains)) => chains,
            Ok(Err(err)) => {
                warn!(error = %err, "cannot read the projects' proposal chains");
                return;
            }
            Err(err) => {
                warn!(error = %err, "reading the projects' proposal chains panicked");
                return;
            }
        };
    let now = Instant::now();
    let due = next_projects(&chains, rounds, ideas.window, now);
    let Some((epoch, tenure)) = rounds.tenure else {
        return;
    };
    for project in due {
        if !still_held(watch, rounds.tenure) {
            break;
        }
        let chain = chains.get(&project).cloned().unwrap_or_default();
        let made = make_proposal(store, &project, &chain, ideas, engine).await;
        let proposal = match made {
            Ok(Some(proposal)) => proposal,
            Ok(None) => continue,
            Err(err) => {
                warn!(project_id = %project, error = %err, "no ideas proposal; tried again later");
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["failed"])
                    .inc();
                rounds
                    .waiting
                    .insert(project, (None, Instant::now() + RETRY_AFTER));
                continue;
            }
        };
        let Some(event) = ideas_proposed(&project, &proposal, (group, epoch, tenure), key) else {
            continue;
        };
        // The engine may have outlived the lease.
        if !still_held(watch, rounds.tenure) {
            break;
        }
        match publish(context, &event).await {
            Ok(()) => {
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["published"])
                    .inc();
                rounds.waiting.insert(
                    project,
                    (Some(event.event_id), Instant::now() + RETRY_AFTER),
                );
            }
            Err(err) => {
                warn!(project_id = %project, error = %err, "cannot publish an ideas_proposed; next round");
            }
        }
    }
}

/// The projects to propose for now, longest pending first: pending ones whose window
/// has passed and that wait for nothing, at most [`PROJECTS_PER_ROUND`]. Updates what
/// `rounds` remembers from `chains`: a proposal applied (or another in its place) ends
/// the wait, as does its time.
fn next_projects(
    chains: &BTreeMap<String, ProposalChain>,
    rounds: &mut Rounds,
    window: Duration,
    now: Instant,
) -> Vec<String> {
    rounds
        .pending_since
        .retain(|project, _| chains.get(project).is_some_and(ProposalChain::pending));
    for (project, chain) in chains {
        if chain.pending() {
            rounds.pending_since.entry(project.clone()).or_insert(now);
        }
    }
    rounds.waiting.retain(|project, (published, until)| {
        let head = chains.get(project).and_then(|chain| chain.head.as_ref());
        // Published and not yet the head, within its time.
        *until > now && published.as_ref().is_none_or(|id| head != Some(id))
    });
    REPLICA_METRICS
        .ideas_pending_projects
        .set(i64::try_from(rounds.pending_since.len()).unwrap_or(i64::MAX));
    let mut due: Vec<(&Instant, &String)> = rounds
        .pending_since
        .iter()
        .filter(|(project, since)| {
            now.duration_since(**since) >= window && !rounds.waiting.contains_key(*project)
        })
        .map(|(project, since)| (since, project))
        .collect();
    due.sort();
    due.into_iter()
        .take(PROJECTS_PER_ROUND)
        .map(|(_, project)| project.clone())
        .collect()
}

/// Runs the engine over the project's next events and returns the proposal, redacted
/// and within [`MAX_PROPOSAL_BYTES`]; `None` when nothing is pending after all.
async fn make_proposal(
    store: &Store,
    project: &str,
    chain: &ProposalChain,
    ideas: &ModelIdeas,
    engine: &Engine,
) -> Result<Option<IdeasProposal>, String> {
    let (reading, project, chain) = (store.clone(), project.to_owned(), chain.clone());
    let (engine, redactor, limit) = (
        Arc::clone(engine),
        ideas.redactor.clone(),
        ideas.batch_events,
    );
    tokio::task::spawn_blocking(move || {
        let Some((mut batch, mut ids)) =
            proposal_batch(&reading, &project, &chain, limit).map_err(|err| err.to_string())?
        else {
            return Ok(None);
        };
        let graph = IdeaGraph::open(&reading).map_err(|err| err.to_string())?;
        loop {
            let changes = extract(&engine, &batch, &graph)?;
            let proposal = IdeasProposal {
                after: chain.head.clone(),
                events: ids.clone(),
                recorded_ms: memory_types::Clock::system().now_ms(),
                changes: redacted(changes, &redactor),
            };
            let size = serde_json::to_vec(&proposal).map_or(usize::MAX, |json| json.len());
            if size <= MAX_PROPOSAL_BYTES {
                return Ok(Some(proposal));
            }
            if ids.len() == 1 {
                // One event whose ideas do not fit: covered, with none.
                warn!(project_id = %project, event_id = %ids[0], size, "an ideas proposal too large for one event; it is covered without ideas");
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["too_large"])
                    .inc();
                return Ok(Some(IdeasProposal {
                    changes: ChangeSet::default(),
                    ..proposal
                }));
            }
            ids.truncate(ids.len() / 2);
            batch = first_events(&batch, &ids);
        }
    })
    .await
    .unwrap_or_else(|err| Err(format!("the engine panicked: {err}")))
}

/// Runs the engine over `batch` against `graph`, counting the run as the single-mode
/// agent does.
fn extract(engine: &Engine, batch: &ExtractBatch, graph: &IdeaGraph) -> Result<ChangeSet, String> {
    let mut engine = engine.lock().unwrap_or_else(PoisonError::into_inner);
    let result = engine.extract(batch, graph);
    let (label, outcome) = match &result {
        Ok(_) => engine.last_run(),
        Err(_) => (engine.engine(), "error"),
    };
    IDEAS_METRICS
        .batches
        .with_label_values(&[label, "continuous", outcome])
        .inc();
    result.map_err(|err| err.to_string())
}

/// `batch` cut to the events named in `ids` (a prefix of it in log order).
fn first_events(batch: &ExtractBatch, ids: &[String]) -> ExtractBatch {
    let keep: std::collections::BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    let mut cut = batch.clone();
    for session in &mut cut.sessions {
        let (events, seqs): (Vec<_>, Vec<_>) = session
            .events
            .drain(..)
            .zip(session.seqs.drain(..))
            .filter(|(event, _)| keep.contains(event.event_id.as_str()))
            .unzip();
        session.events = events;
        session.seqs = seqs;
    }
    cut.sessions.retain(|session| !session.events.is_empty());
    cut
}

/// `changes` with the cluster's redactor run over every text in it (ids included: an
/// id that changes no longer resolves, and validation drops what names it).
fn redacted(changes: ChangeSet, redactor: &Redactor) -> ChangeSet {
    fn walk(value: &mut serde_json::Value, redactor: &Redactor) {
        match value {
            serde_json::Value::String(text) => {
                if let std::borrow::Cow::Owned(clean) = redactor.redact_text(text).0 {
                    *text = clean;
                }
            }
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|item| walk(item, redactor))
            }
            serde_json::Value::Object(fields) => {
                fields.values_mut().for_each(|field| walk(field, redactor));
            }
            _ => {}
        }
    }
    let Ok(mut value) = serde_json::to_value(&changes) else {
        return ChangeSet::default();
    };
    walk(&mut value, redactor);
    // Only strings changed: the shape still fits; should it not, nothing is proposed.
    serde_json::from_value(value).unwrap_or_default()
}

/// The `ideas_proposed` of `project` by the holder of `group`'s lease (bucket `epoch`,
/// `tenure`): its id derives from what it follows, the events it covers and the tenure
/// (a retry is one message in the log's duplicate window), its seal from everything it
/// says. `None` when the proposal cannot be written as JSON.
#[must_use]
pub fn ideas_proposed(
    project: &str,
    proposal: &IdeasProposal,
    (group, epoch, tenure): (&str, u64, u64),
    key: &[u8],
) -> Option<Event> {
    let text = serde_json::to_string(proposal).ok()?;
    let digest = Sha256::digest(
        format!(
            "{project}\n{}\n{}\n{}\n{group}\n{epoch}\n{tenure}",
            proposal.after.as_deref().unwrap_or_default(),
            proposal.events.first().map_or("", String::as_str),
            proposal.events.last().map_or("", String::as_str),
        )
        .as_bytes(),
    );
    let mut event = Event {
        event_id: format!("ideas-proposed-{}", crate::to_hex(&digest[..16])),
        session_id: IDEAS_PROPOSED_SESSION.to_owned(),
        project_id: project.to_owned(),
        agent_id: Some("memory-daemon".to_owned()),
        timestamp_ms: proposal.recorded_ms,
        kind: EventKind::IdeasProposed,
        role: Role::System,
        text,
        metadata: BTreeMap::from([
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
#[path = "ideas_tests.rs"]
mod tests;
