//! Follow mode: the holder's side ([`proposal_batch`] and an engine) simulated in the
//! test, its proposals appended to the log as a replica would receive them.

use memory_ideas::{GraphView, IdeaExtractor, IdeasProposal, ProposalChain};
use memory_store::{OutboxSeq, Store};
use memory_types::{Event, EventKind, IDEAS_PROPOSED_SESSION, Role};

use super::{proposal_batch, proposal_chains};
use crate::consumer::OutboxConsumer;
use crate::ideas::graph::IdeaGraph;
use crate::ideas::test_support::{PrefixEngine, conversation, event, open_store, run, settings};
use crate::ideas::{INDEXING_AGENT, IndexingAgent, IndexingSettings};

/// The proposals' record time: not the agent's clock (1 000).
const RECORDED_MS: u64 = 777;

fn following() -> IndexingSettings {
    let mut settings = settings();
    settings.follow_proposals = true;
    settings
}

fn proposed(id: &str, project: &str, proposal: &IdeasProposal) -> Event {
    Event {
        event_id: id.to_owned(),
        session_id: IDEAS_PROPOSED_SESSION.to_owned(),
        project_id: project.to_owned(),
        agent_id: Some("memory-daemon".to_owned()),
        timestamp_ms: proposal.recorded_ms,
        kind: EventKind::IdeasProposed,
        role: Role::System,
        text: serde_json::to_string(proposal).expect("json"),
        metadata: std::collections::BTreeMap::new(),
    }
}

/// What the lease holder does for project `p`: the next batch after the chain, the
/// engine over it against the graph, the proposal appended to the log. Returns its id.
fn propose(store: &Store, number: usize, limit: usize) -> Option<String> {
    let chain = proposal_chains(store)
        .expect("chains")
        .remove("p")
        .unwrap_or_default();
    let (batch, events) = proposal_batch(store, "p", &chain, limit).expect("batch")?;
    let graph = IdeaGraph::open(store).expect("graph");
    let changes = PrefixEngine.extract(&batch, &graph).expect("extract");
    let proposal = IdeasProposal {
        after: chain.head,
        events,
        recorded_ms: RECORDED_MS,
        changes,
    };
    let id = format!("ideas-proposed-{number}");
    store
        .append_events(&[proposed(&id, "p", &proposal)])
        .expect("append");
    Some(id)
}

/// The conversation, proposed for in parts of `limit` events as the holder would,
/// following each proposal before the next (the holder waits for it).
fn build(limit: usize) -> (tempfile::TempDir, Store) {
    let (dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, following()).expect("open");
    run(&store, &mut agent, 100);
    let mut number = 0;
    while propose(&store, number, limit).is_some() {
        number += 1;
        run(&store, &mut agent, 100);
    }
    (dir, store)
}

fn dump(store: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
    IdeaGraph::open(store).expect("graph").dump().expect("dump")
}

#[test]
fn proposals_give_the_graph_the_engine_gives_and_cover_every_event() {
    // The engine run by the agent itself, in one batch.
    let (_local_dir, local) = open_store();
    local.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&local, settings()).expect("open");
    run(&local, &mut agent, 100);

    let (_dir, store) = build(100);
    assert!(!dump(&store).is_empty());
    assert_eq!(dump(&store), dump(&local), "one proposal of every event");
    let chain = proposal_chains(&store)
        .expect("chains")
        .remove("p")
        .expect("chain");
    assert_eq!(chain.head.as_deref(), Some("ideas-proposed-0"));
    assert!(!chain.pending(), "{chain:?}");
    assert_eq!(
        store.cursor(INDEXING_AGENT).expect("cursor"),
        store.head(),
        "cursor committed with the graph"
    );

    // In parts of two events, chained: every event covered once, the answer and the
    // supersession resolved across proposals.
    let (_dir, parts) = build(2);
    let chain = proposal_chains(&parts)
        .expect("chains")
        .remove("p")
        .expect("chain");
    assert_eq!(chain.head.as_deref(), Some("ideas-proposed-2"));
    assert!(!chain.pending());
    let graph = IdeaGraph::open(&parts).expect("graph");
    let ideas = graph.all_ideas("p").expect("ideas");
    assert_eq!(ideas.len(), 4, "{ideas:?}");
    let postgres = graph
        .idea("p", &memory_ideas::idea_id("p", "e2", "use postgres"))
        .expect("read")
        .expect("stored");
    assert_eq!(
        postgres.valid_until_ms,
        Some(50),
        "superseded by a later proposal"
    );
    assert!(
        ideas.iter().all(|idea| idea.recorded_at_ms == RECORDED_MS),
        "record time from the proposal, not the replica's clock"
    );
}

#[test]
fn replicas_and_a_rebuild_agree_however_the_feed_is_batched() {
    let (_dir, source) = build(2);
    let log: Vec<Event> = source
        .log_events(OutboxSeq::ZERO)
        .map(|item| item.expect("event").1)
        .collect();
    let expected = dump(&source);
    for batch in [1, 2, 3, 100] {
        let (_dir, replica) = open_store();
        replica.append_events(&log).expect("append");
        let mut agent = IndexingAgent::open(&replica, following()).expect("open");
        run(&replica, &mut agent, batch);
        assert_eq!(dump(&replica), expected, "feed batches of {batch}");
        // A rebuild replays the same proposals to the same graph.
        agent.reset(&replica, OutboxSeq::ZERO).expect("reset");
        assert!(dump(&replica).is_empty());
        run(&replica, &mut agent, batch);
        assert_eq!(dump(&replica), expected, "rebuilt, feed batches of {batch}");
    }
}

#[test]
fn proposals_that_do_not_hold_change_nothing() {
    let (_dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, following()).expect("open");
    run(&store, &mut agent, 100);
    let changes = {
        let chain: ProposalChain = proposal_chains(&store)
            .expect("chains")
            .remove("p")
            .expect("chain");
        assert_eq!(chain.head, None);
        let (batch, _) = proposal_batch(&store, "p", &chain, 100)
            .expect("batch")
            .expect("some");
        PrefixEngine
            .extract(&batch, &IdeaGraph::open(&store).expect("graph"))
            .expect("extract")
    };
    assert!(!changes.ideas.is_empty());
    let good = |events: &[&str]| IdeasProposal {
        after: None,
        events: events.iter().map(|id| (*id).to_owned()).collect(),
        recorded_ms: 1_000,
        changes: changes.clone(),
    };
    let mut bad = Vec::new();
    // Follows a proposal that was never applied.
    let mut stale = good(&["e1", "e2", "e3", "e4", "e5"]);
    stale.after = Some("ideas-proposed-elsewhere".to_owned());
    bad.push(proposed("stale", "p", &stale));
    // Events out of log order, unknown, or the proposal naming itself.
    bad.push(proposed("unordered", "p", &good(&["e2", "e1"])));
    bad.push(proposed("unknown", "p", &good(&["e1", "e9"])));
    bad.push(proposed("itself", "p", &good(&["e1", "itself"])));
    bad.push(proposed("empty", "p", &good(&[])));
    // Not JSON of a proposal; in another session.
    let mut malformed = proposed("malformed", "p", &good(&["e1"]));
    malformed.text = r#"{"ideas": []}"#.to_owned();
    bad.push(malformed);
    let mut misplaced = proposed("misplaced", "p", &good(&["e1", "e2"]));
    misplaced.session_id = "s1".to_owned();
    bad.push(misplaced);
    // Another project's events, by ids this project does not have.
    bad.push(proposed("foreign", "q", &good(&["e1"])));
    store.append_events(&bad).expect("append");
    run(&store, &mut agent, 100);
    let graph = IdeaGraph::open(&store).expect("graph");
    assert!(graph.all_ideas("p").expect("ideas").is_empty());
    let chains = proposal_chains(&store).expect("chains");
    assert_eq!(chains["p"].head, None);
    assert!(chains["p"].pending(), "the events still wait");
    assert!(!chains.contains_key("q") || chains["q"].head.is_none());

    // The right one applies; the same one again, now stale, does not.
    let right = proposed("right", "p", &good(&["e1", "e2", "e3", "e4", "e5"]));
    let again = proposed("again", "p", &good(&["e1", "e2", "e3", "e4", "e5"]));
    store.append_events(&[right, again]).expect("append");
    run(&store, &mut agent, 100);
    let chain = proposal_chains(&store)
        .expect("chains")
        .remove("p")
        .expect("chain");
    assert_eq!(chain.head.as_deref(), Some("right"));
    assert!(!chain.pending());
    assert_eq!(graph.all_ideas("p").expect("ideas").len(), 4);
}

#[test]
fn the_holders_batch_is_the_projects_next_events_up_to_what_the_agent_passed() {
    let (_dir, store) = open_store();
    let mut other = event("o1", "s9", 5, "D: other project");
    other.project_id = "q".to_owned();
    store.append_events(&[other]).expect("append");
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, following()).expect("open");
    run(&store, &mut agent, 100);
    // Passed by the agent after the run only.
    store
        .append_events(&[event("e6", "s1", 60, "D: not yet passed")])
        .expect("append");
    let chains = proposal_chains(&store).expect("chains");
    let (batch, ids) = proposal_batch(&store, "p", &chains["p"], 3)
        .expect("batch")
        .expect("some");
    assert_eq!(ids, ["e1", "e2", "e3"]);
    assert_eq!(batch.len(), 3);
    let (_, all) = proposal_batch(&store, "p", &chains["p"], 100)
        .expect("batch")
        .expect("some");
    assert_eq!(all, ["e1", "e2", "e3", "e4", "e5"], "e6 is not passed yet");
    let (_, other) = proposal_batch(&store, "q", &chains["q"], 100)
        .expect("batch")
        .expect("some");
    assert_eq!(other, ["o1"]);
}

#[test]
fn a_following_agent_refuses_a_backfill() {
    let (_dir, store) = open_store();
    store.append_events(&conversation()).expect("append");
    let mut agent = IndexingAgent::open(&store, following()).expect("open");
    run(&store, &mut agent, 100);
    let err = agent
        .backfill(&store, Some("p"), &mut |_| {})
        .expect_err("refused");
    assert!(err.to_string().contains("rebuild"), "{err}");
}
