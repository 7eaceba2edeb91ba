//! What the producers send and what the daemon acknowledged: realistic coding sessions
//! from [`memory_benches::year`] dealt out one session per producer at a time, and the
//! ledger of every event sent with whether its ingest was acknowledged.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Mutex;

use memory_benches::year::{YearEvent, YearSpec, generate};

/// One session's events, in order, and how many were taken.
pub(super) struct Session {
    events: Vec<YearEvent>,
    next: usize,
}

impl Session {
    /// The next `count` events (fewer at the end); empty when the session is done.
    pub(super) fn take(&mut self, count: usize) -> Vec<YearEvent> {
        let end = (self.next + count).min(self.events.len());
        let taken = self.events[self.next..end].to_vec();
        self.next = end;
        taken
    }

    /// Whether every event was taken.
    pub(super) fn is_done(&self) -> bool {
        self.next >= self.events.len()
    }
}

/// Sessions not started yet, in the order the generator made them (random days, so the
/// TOC grows everywhere at once, as when several agents work).
pub(super) struct Feed {
    sessions: Mutex<VecDeque<Session>>,
}

impl Feed {
    /// About `events` events of sessions generated from `seed`.
    pub(super) fn new(seed: u64, events: usize) -> Feed {
        let mut by_session: BTreeMap<u32, Vec<YearEvent>> = BTreeMap::new();
        for event in generate(&YearSpec { seed, events }) {
            by_session.entry(event.session).or_default().push(event);
        }
        let sessions = by_session
            .into_values()
            .map(|mut events| {
                events.sort_by_key(|event| event.turn);
                Session { events, next: 0 }
            })
            .collect();
        Feed {
            sessions: Mutex::new(sessions),
        }
    }

    /// The next session, `None` when every one was dealt.
    pub(super) fn next_session(&self) -> Option<Session> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front()
    }

    /// Sessions not dealt yet.
    pub(super) fn remaining(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// An event's identity: project and event id (ids are unique within a project only).
pub(super) type EventKey = (String, String);

/// The wire id of a generated event, as [`YearEvent::to_json`] writes it.
pub(super) fn key_of(event: &YearEvent) -> EventKey {
    let json = event.to_json();
    (
        event.project.to_owned(),
        json["event_id"].as_str().unwrap_or_default().to_owned(),
    )
}

/// One event sent: its text, and whether its ingest was acknowledged.
struct Sent {
    text: String,
    acked: bool,
}

/// Every event sent, by key.
#[derive(Default)]
pub(super) struct Ledger {
    sent: HashMap<EventKey, Sent>,
    projects: BTreeSet<String>,
}

impl Ledger {
    /// Notes events as sent (not acknowledged yet).
    pub(super) fn sent(&mut self, events: &[YearEvent]) {
        for event in events {
            self.projects.insert(event.project.to_owned());
            self.sent.entry(key_of(event)).or_insert_with(|| Sent {
                text: event.text.clone(),
                acked: false,
            });
        }
    }

    /// Notes an event's ingest as acknowledged.
    pub(super) fn acked(&mut self, key: &EventKey) {
        if let Some(sent) = self.sent.get_mut(key) {
            sent.acked = true;
        }
    }

    /// Events whose ingest was acknowledged.
    pub(super) fn num_acked(&self) -> usize {
        self.sent.values().filter(|sent| sent.acked).count()
    }

    /// Every acknowledged event with its text.
    pub(super) fn acked_events(&self) -> impl Iterator<Item = (&EventKey, &str)> {
        self.sent
            .iter()
            .filter(|(_, sent)| sent.acked)
            .map(|(key, sent)| (key, sent.text.as_str()))
    }

    /// Projects events were sent to.
    pub(super) fn projects(&self) -> &BTreeSet<String> {
        &self.projects
    }
}
