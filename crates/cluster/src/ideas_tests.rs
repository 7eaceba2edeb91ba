use memory_ideas::{Intent, NewIdea};
use memory_types::Event;

use super::*;
use crate::derived::sealed;

fn chain(head: Option<&str>, covered: u64, seen: u64) -> ProposalChain {
    ProposalChain {
        head: head.map(str::to_owned),
        covered_seq: covered,
        seen_seq: seen,
    }
}

fn proposal(content: &str) -> IdeasProposal {
    IdeasProposal {
        after: Some("ideas-proposed-1".to_owned()),
        events: vec!["e1".to_owned(), "e2".to_owned()],
        recorded_ms: 1_769_764_600_000,
        changes: ChangeSet {
            ideas: vec![NewIdea {
                source_event_id: "e2".to_owned(),
                content: content.to_owned(),
                intent: Intent::Decision,
                confidence: 0.9,
                importance: None,
                entities: Vec::new(),
                related_to: Vec::new(),
            }],
            ..ChangeSet::default()
        },
    }
}

#[test]
fn an_ideas_proposed_is_sealed_over_its_text_and_valid_only_where_derived_events_are() {
    let key = b"cluster key";
    let event: Event =
        ideas_proposed("webapp", &proposal("Use Postgres"), ("g1", 7, 3), key).expect("event");
    assert_eq!(event.kind, EventKind::IdeasProposed);
    assert_eq!(event.session_id, IDEAS_PROPOSED_SESSION);
    assert!(sealed(&event, key));
    let mut changed = event.clone();
    changed.text = changed.text.replace("Postgres", "SQLite");
    assert!(!sealed(&changed, key), "the seal covers the change set");
    assert_eq!(
        ideas_proposed("webapp", &proposal("Use Postgres"), ("g1", 7, 3), key)
            .map(|event| event.event_id),
        Some(event.event_id.clone()),
        "a retry in the tenure is the same message"
    );
    let mut later = proposal("Use Postgres");
    later.after = Some("ideas-proposed-2".to_owned());
    assert_ne!(
        ideas_proposed("webapp", &later, ("g1", 7, 3), key).map(|event| event.event_id),
        Some(event.event_id.clone()),
        "a proposal after another is another event"
    );
    crate::derived::assert_valid_only_where_derived_events_are(&event);
}

#[test]
fn projects_wait_their_window_and_for_their_published_proposal() {
    let window = Duration::from_secs(60);
    let start = Instant::now();
    let mut rounds = Rounds::default();
    let mut chains = BTreeMap::from([
        ("a".to_owned(), chain(None, 0, 5)),
        ("b".to_owned(), chain(None, 0, 0)),
    ]);
    assert!(
        next_projects(&chains, &mut rounds, window, start).is_empty(),
        "pending, within the window"
    );
    assert_eq!(rounds.pending_since.len(), 1, "b has nothing pending");
    let later = start + window;
    assert_eq!(next_projects(&chains, &mut rounds, window, later), ["a"]);
    // Published after the chain's start, not applied yet: a waits.
    rounds
        .waiting
        .insert("a".to_owned(), (Some(None), later + RETRY_AFTER));
    assert!(next_projects(&chains, &mut rounds, window, later).is_empty());
    // Applied (the head moved) and more events came meanwhile: its window has passed,
    // it goes again.
    chains.insert("a".to_owned(), chain(Some("ideas-proposed-9"), 5, 8));
    assert_eq!(next_projects(&chains, &mut rounds, window, later), ["a"]);
    // A proposal that never shows up is made again after RETRY_AFTER.
    let after_nine = Some(Some("ideas-proposed-9".to_owned()));
    rounds
        .waiting
        .insert("a".to_owned(), (after_nine.clone(), later + RETRY_AFTER));
    assert!(next_projects(&chains, &mut rounds, window, later).is_empty());
    assert_eq!(
        next_projects(&chains, &mut rounds, window, later + RETRY_AFTER),
        ["a"]
    );
    // Another proposal took the head (a stale holder's, first in the log): this one
    // is stale, the project is due at once.
    rounds
        .waiting
        .insert("a".to_owned(), (after_nine, later + RETRY_AFTER));
    chains.insert(
        "a".to_owned(),
        chain(Some("ideas-proposed-elsewhere"), 6, 8),
    );
    assert_eq!(next_projects(&chains, &mut rounds, window, later), ["a"]);
    // A failed engine run waits its time whatever the head does.
    rounds
        .waiting
        .insert("a".to_owned(), (None, later + RETRY_AFTER));
    chains.insert("a".to_owned(), chain(Some("ideas-proposed-10"), 7, 8));
    assert!(next_projects(&chains, &mut rounds, window, later).is_empty());
    rounds.waiting.clear();
    // Covered: nothing pending, nothing remembered.
    chains.insert("a".to_owned(), chain(Some("ideas-proposed-10"), 8, 8));
    assert!(next_projects(&chains, &mut rounds, window, later + RETRY_AFTER).is_empty());
    assert!(rounds.pending_since.is_empty());
}

#[test]
fn the_least_recently_served_first_and_a_bounded_round() {
    let window = Duration::from_secs(1);
    let start = Instant::now();
    let mut rounds = Rounds::default();
    let mut chains = BTreeMap::new();
    for (i, project) in ["p5", "p4", "p3", "p2", "p1"].iter().enumerate() {
        chains.insert((*project).to_owned(), chain(None, 0, 1));
        next_projects(
            &chains,
            &mut rounds,
            window,
            start + Duration::from_millis(i as u64),
        );
    }
    let due = next_projects(&chains, &mut rounds, window, start + window * 2);
    assert_eq!(
        due,
        ["p5", "p4", "p3", "p2"],
        "at most PROJECTS_PER_ROUND, oldest first"
    );
    // Served: p5..p2 were just proposed for (and stay busy); p1 goes first now.
    for (i, project) in due.iter().enumerate() {
        rounds.last_proposed.insert(
            project.clone(),
            start + window * 2 + Duration::from_millis(i as u64),
        );
    }
    let due = next_projects(&chains, &mut rounds, window, start + window * 3);
    assert_eq!(due, ["p1", "p5", "p4", "p3"], "busy projects take turns");
}

#[test]
fn the_change_set_is_redacted_before_it_reaches_the_log() {
    let redactor = Redactor::shipped(b"cluster key").expect("redactor");
    let secret = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789";
    let clean = redacted(
        proposal(&format!("Rotate the token {secret}")).changes,
        &redactor,
    )
    .expect("redacted");
    let content = &clean.ideas[0].content;
    assert!(!content.contains(secret), "{content}");
    assert!(content.starts_with("Rotate the token"), "{content}");
    assert_eq!(
        clean.ideas[0].source_event_id, "e2",
        "ids without secrets stay"
    );
}

#[test]
fn a_batch_is_cut_to_its_first_events() {
    let event = |id: &str, session: &str| Event {
        event_id: id.to_owned(),
        session_id: session.to_owned(),
        project_id: "webapp".to_owned(),
        agent_id: None,
        timestamp_ms: 1,
        kind: EventKind::UserMessage,
        role: Role::User,
        text: id.to_owned(),
        metadata: BTreeMap::new(),
    };
    let batch = ExtractBatch::continuous([
        (1, event("e1", "s1")),
        (2, event("e2", "s2")),
        (3, event("e3", "s1")),
        (4, event("e4", "s3")),
    ]);
    let cut = first_events(&batch, &["e1".to_owned(), "e2".to_owned()]);
    let shape: Vec<(&str, Vec<u64>)> = cut
        .sessions
        .iter()
        .map(|session| (session.session_id.as_str(), session.seqs.clone()))
        .collect();
    assert_eq!(shape, vec![("s1", vec![1]), ("s2", vec![2])]);
}
