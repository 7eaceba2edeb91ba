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
//! them pending, then back to back while full batches (`[indexing] batch_events`)
//! wait, and after the window again once it caught up — at most
//! [`PROJECTS_PER_ROUND`] projects per round, the least recently served first. A
//! project waits while its last proposal is published and the chain head it follows
//! stands; a proposal that does not show up is made again after [`RETRY_AFTER`], one
//! the log did not take is sent again (not made again) after [`PUBLISH_RETRY`], a
//! failed engine run is tried again after [`RETRY_AFTER`] (the LLM engine falls back to
//! the heuristic one itself, so that is rare; one that panicked is built anew). While
//! the holder's own indexing agent is more than [`MAX_AGENT_LAG`] entries behind (a
//! rebuild, a new holder replaying), its chains are stale and it proposes nothing.
//!
//! What the model says is bounded three times: the engine drops what it cannot ground,
//! the holder redacts every text with the cluster's key (the model reads redacted
//! events, but may make up something shaped like a secret; replicas store a derived
//! event as its holder wrote it) and keeps a proposal under [`MAX_PROPOSAL_BYTES`] as
//! the log carries it (halving the events it covers until it fits), and every replica
//! validates the change set before anything is stored. The lease is checked before each
//! engine run and each publish; the engine runs apart from the renewals.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream;
use memory_ideas::{
    ChangeSet, ExtractBatch, IdeaExtractor, IdeasProposal, MAX_PROPOSAL_BYTES, ProposalChain,
};
use memory_projections::{
    EngineFactory, IDEAS_METRICS, INDEXING_AGENT, IdeaGraph, proposal_batch, proposal_chains,
};
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
use tracing::{Instrument, info, info_span, warn};

use crate::derived::{publish, seal};
use crate::lease::{Tenure, still_held};
use crate::metrics::REPLICA_METRICS;

/// Most projects proposed for in one round.
pub const PROJECTS_PER_ROUND: usize = 4;
/// How long a published proposal may take to show up in the store, and how long a
/// failed engine run waits, before the project is proposed for again.
pub const RETRY_AFTER: Duration = Duration::from_secs(120);
/// How long a proposal the log did not take waits before it is sent again.
pub const PUBLISH_RETRY: Duration = Duration::from_secs(10);
/// How far the holder's own indexing agent may be behind its store before the holder
/// stops proposing: its chains are that stale (a rebuild or a new holder replaying),
/// and what it proposed would follow heads long gone.
pub const MAX_AGENT_LAG: u64 = 10_000;
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
    /// Projects not to propose for until then: a proposal published (or not sent)
    /// after the chain head it names (`Some`) that has not moved since, or an engine
    /// run that failed (`None`).
    waiting: BTreeMap<String, (Option<Option<String>>, Instant)>,
    /// When each project was last proposed for: the least recently served go first.
    last_proposed: BTreeMap<String, Instant>,
    /// Proposals made but not published (the log did not take them), with the chain
    /// head they follow: sent again, not made again, while that head stands.
    unsent: BTreeMap<String, (Option<String>, Event)>,
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

async fn propose_round(
    context: &jetstream::Context,
    store: &Store,
    key: &[u8],
    (group, ideas, engine): (&str, &ModelIdeas, &Engine),
    watch: &watch::Receiver<Option<Tenure>>,
    rounds: &mut Rounds,
) {
    let reading = store.clone();
    let read = tokio::task::spawn_blocking(move || {
        let lag = reading
            .head()
            .0
            .saturating_sub(reading.cursor(INDEXING_AGENT)?.0);
        Ok::<_, memory_projections::ConsumerError>((lag, proposal_chains(&reading)?))
    })
    .await;
    let (lag, chains) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(err)) => {
            warn!(error = %err, "cannot read the projects' proposal chains");
            return;
        }
        Err(err) => {
            warn!(error = %err, "reading the projects' proposal chains panicked");
            return;
        }
    };
    if lag > MAX_AGENT_LAG {
        info!(
            lag,
            "the indexing agent is catching up: no ideas proposals until it has"
        );
        return;
    }
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
        let (event, full) = match rounds.unsent.remove(&project) {
            Some((after, event)) if after == chain.head => (event, true),
            _ => {
                let lease = (group, epoch, tenure);
                let made = make_proposal(
                    store,
                    &project,
                    &chain,
                    (ideas, engine),
                    (watch, rounds.tenure),
                )
                .await
                .and_then(|made| {
                    made.map(|(proposal, full)| {
                        ideas_proposed(&project, &proposal, lease, key)
                            .map(|event| (event, full))
                            .ok_or_else(|| "the proposal cannot be written as JSON".to_owned())
                    })
                    .transpose()
                });
                match made {
                    Ok(Some(made)) => made,
                    Ok(None) => {
                        // Pending, yet none of its events is there to propose (they
                        // were forgotten): look again later, not every round.
                        rounds
                            .waiting
                            .insert(project, (None, Instant::now() + RETRY_AFTER));
                        continue;
                    }
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
                }
            }
        };
        // The engine may have outlived the lease.
        if !still_held(watch, rounds.tenure) {
            break;
        }
        let now = Instant::now();
        match publish(context, &event).await {
            Ok(()) => {
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["published"])
                    .inc();
                rounds
                    .waiting
                    .insert(project.clone(), (Some(chain.head), now + RETRY_AFTER));
                rounds.last_proposed.insert(project.clone(), now);
                if !full {
                    // Caught up with the project: what comes next waits the window, as
                    // the single-mode agent lingers once it has caught up.
                    rounds.pending_since.insert(project, now);
                }
            }
            Err(err) => {
                warn!(project_id = %project, error = %err, "the log did not take an ideas_proposed; sent again later");
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["unsent"])
                    .inc();
                rounds.waiting.insert(
                    project.clone(),
                    (Some(chain.head.clone()), now + PUBLISH_RETRY),
                );
                rounds.unsent.insert(project, (chain.head, event));
            }
        }
    }
}

/// The projects to propose for now: pending ones whose window has passed and that wait
/// for nothing, the least recently proposed for first (then the longest pending), at
/// most [`PROJECTS_PER_ROUND`] — so busy projects take turns with the others. Updates
/// what `rounds` remembers from `chains`: a proposal applied (or another in its place)
/// ends the wait (as does its time).
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
    rounds.waiting.retain(|project, (after, until)| {
        let head = chains.get(project).and_then(|chain| chain.head.clone());
        // Within its time, and for a published proposal while the head it was computed
        // after stays: once it moves, the proposal applied (or another did, and this
        // one is stale) and the project's next events are due.
        *until > now && after.as_ref().is_none_or(|after| *after == head)
    });
    REPLICA_METRICS
        .ideas_pending_projects
        .set(i64::try_from(rounds.pending_since.len()).unwrap_or(i64::MAX));
    rounds
        .unsent
        .retain(|project, _| rounds.pending_since.contains_key(project));
    let mut due: Vec<(Option<&Instant>, &Instant, &String)> = rounds
        .pending_since
        .iter()
        .filter(|(project, since)| {
            now.duration_since(**since) >= window && !rounds.waiting.contains_key(*project)
        })
        .map(|(project, since)| (rounds.last_proposed.get(project), since, project))
        .collect();
    due.sort();
    due.into_iter()
        .take(PROJECTS_PER_ROUND)
        .map(|(_, _, project)| project.clone())
        .collect()
}

/// Runs the engine over the project's next events and returns the proposal, redacted
/// and small enough for the log, with whether the batch was full (more events wait);
/// `None` when nothing is pending after all. Stops when the lease is lost; an engine
/// that panicked is built anew.
async fn make_proposal(
    store: &Store,
    project: &str,
    chain: &ProposalChain,
    (ideas, engine): (&ModelIdeas, &Engine),
    (watch, tenure): (&watch::Receiver<Option<Tenure>>, Option<(u64, u64)>),
) -> Result<Option<(IdeasProposal, bool)>, String> {
    let (reading, project, chain) = (store.clone(), project.to_owned(), chain.clone());
    let (running, redactor, limit, watch) = (
        Arc::clone(engine),
        ideas.redactor.clone(),
        ideas.batch_events,
        watch.clone(),
    );
    let made = tokio::task::spawn_blocking(move || {
        let Some((mut batch, mut ids)) =
            proposal_batch(&reading, &project, &chain, limit).map_err(|err| err.to_string())?
        else {
            return Ok(None);
        };
        let full = ids.len() >= limit;
        let graph = IdeaGraph::open(&reading).map_err(|err| err.to_string())?;
        loop {
            if !still_held(&watch, tenure) {
                return Err("the lease was lost".to_owned());
            }
            let changes = redacted(extract(&running, &batch, &graph)?, &redactor)?;
            let proposal = IdeasProposal {
                after: chain.head.clone(),
                events: ids.clone(),
                recorded_ms: memory_types::Clock::system().now_ms(),
                changes,
            };
            let size = wire_size(&proposal);
            if size <= MAX_PROPOSAL_BYTES {
                return Ok(Some((proposal, full)));
            }
            if ids.len() == 1 {
                // One event whose ideas do not fit: covered, with none.
                warn!(project_id = %project, event_id = %ids[0], size, "an ideas proposal too large for one event; it is covered without ideas");
                REPLICA_METRICS
                    .idea_proposals
                    .with_label_values(&["too_large"])
                    .inc();
                return Ok(Some((
                    IdeasProposal {
                        changes: ChangeSet::default(),
                        ..proposal
                    },
                    full,
                )));
            }
            ids.truncate(ids.len() / 2);
            batch = first_events(&batch, &ids);
        }
    })
    .await;
    match made {
        Ok(made) => made,
        Err(err) => {
            *engine.lock().unwrap_or_else(PoisonError::into_inner) = (ideas.engine)();
            Err(format!("the engine panicked (built anew): {err}"))
        }
    }
}

/// The size of a proposal as the log carries it: its JSON, escaped again as the event's
/// text.
fn wire_size(proposal: &IdeasProposal) -> usize {
    serde_json::to_string(proposal)
        .and_then(|text| serde_json::to_string(&text))
        .map_or(usize::MAX, |text| text.len())
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
///
/// # Errors
/// A change set that does not survive its JSON (a confidence that is not a number).
fn redacted(changes: ChangeSet, redactor: &Redactor) -> Result<ChangeSet, String> {
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
    let mut value = serde_json::to_value(&changes).map_err(|err| err.to_string())?;
    walk(&mut value, redactor);
    serde_json::from_value(value).map_err(|err| format!("the redacted change set: {err}"))
}

/// The `ideas_proposed` of `project` by the holder of `group`'s lease (bucket `epoch`,
/// `tenure`): its id derives from everything it says and the tenure (the same proposal
/// sent again is one message in the log's duplicate window; another answer for the
/// same events is another event, which the chain keeps from applying twice), its seal
/// from everything it says. `None` when the proposal cannot be written as JSON.
#[must_use]
pub fn ideas_proposed(
    project: &str,
    proposal: &IdeasProposal,
    (group, epoch, tenure): (&str, u64, u64),
    key: &[u8],
) -> Option<Event> {
    let text = serde_json::to_string(proposal).ok()?;
    let digest =
        Sha256::digest(format!("{project}\n{group}\n{epoch}\n{tenure}\n{text}").as_bytes());
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
