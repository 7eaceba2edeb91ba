//! [`IdeasProposal`]: what a cluster's lease holder publishes as an `ideas_proposed`
//! event — one engine run over a project's events, for every replica to validate and
//! apply at the same point of the log instead of running the engine (a model) itself.
//!
//! Proposals of a project form a chain: each names the one it was computed after, and a
//! replica applies it only when that is the last one it applied for the project. Two
//! proposals computed from the same state (a holder that lost its lease and the next
//! one, or a retry) therefore never both apply, and the first in the log wins on every
//! replica alike. What a proposal says is checked on arrival like any engine's output
//! ([`crate::validate()`]): a model still cannot corrupt the graph through the log.

use memory_types::Event;
use serde::{Deserialize, Serialize};

use crate::change_set::ChangeSet;
use crate::extractor::{BatchMode, ExtractBatch, SessionEvents};

/// Largest proposal (its JSON) the holder publishes: the log takes events up to the
/// NATS payload limit (1 MiB by default), and the event's own fields need room.
pub const MAX_PROPOSAL_BYTES: usize = 768 * 1024;

/// One engine run over a project's events, as the log carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdeasProposal {
    /// The event id of the project's proposal this one was computed after; `None` for
    /// the project's first.
    pub after: Option<String>,
    /// The conversation events it covers, by id, in log order: every event of the
    /// project after those the previous proposal covered, up to the last one here.
    pub events: Vec<String>,
    /// Record time of the ideas it creates (the single-mode agent's clock reading).
    pub recorded_ms: u64,
    /// What the engine proposed.
    pub changes: ChangeSet,
}

/// Where a project's chain of proposals stands on this replica.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalChain {
    /// The last proposal applied (its event id).
    pub head: Option<String>,
    /// Log position (this store's) of the last event the applied proposals cover.
    pub covered_seq: u64,
    /// Log position of the project's last conversation event the agent has passed.
    pub seen_seq: u64,
}

impl ProposalChain {
    /// Whether conversation events wait for a proposal.
    #[must_use]
    pub fn pending(&self) -> bool {
        self.seen_seq > self.covered_seq
    }
}

impl ExtractBatch {
    /// A continuous batch of `events` (each with its log position, in log order),
    /// grouped per session in first-seen order — how the single-mode agent groups its
    /// feed, and how the holder and every replica group a proposal's events.
    #[must_use]
    pub fn continuous(events: impl IntoIterator<Item = (u64, Event)>) -> ExtractBatch {
        let mut sessions: Vec<SessionEvents> = Vec::new();
        for (seq, event) in events {
            let found = sessions.iter().position(|session| {
                session.project_id == event.project_id && session.session_id == event.session_id
            });
            let index = found.unwrap_or_else(|| {
                sessions.push(SessionEvents {
                    project_id: event.project_id.clone(),
                    session_id: event.session_id.clone(),
                    events: Vec::new(),
                    seqs: Vec::new(),
                    context: Vec::new(),
                });
                sessions.len() - 1
            });
            sessions[index].events.push(event);
            sessions[index].seqs.push(seq);
        }
        ExtractBatch {
            mode: BatchMode::Continuous,
            sessions,
        }
    }
}

#[cfg(test)]
mod tests {
    use memory_types::{EventKind, Role};

    use super::*;

    fn event(id: &str, session: &str) -> Event {
        Event {
            event_id: id.to_owned(),
            session_id: session.to_owned(),
            project_id: "webapp".to_owned(),
            agent_id: None,
            timestamp_ms: 1,
            kind: EventKind::UserMessage,
            role: Role::User,
            text: id.to_owned(),
            metadata: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn sessions_keep_first_seen_order_and_positions() {
        let batch = ExtractBatch::continuous([
            (3, event("a", "s2")),
            (5, event("b", "s1")),
            (9, event("c", "s2")),
        ]);
        let shape: Vec<(&str, Vec<u64>)> = batch
            .sessions
            .iter()
            .map(|session| (session.session_id.as_str(), session.seqs.clone()))
            .collect();
        assert_eq!(shape, vec![("s2", vec![3, 9]), ("s1", vec![5])]);
        assert_eq!(batch.len(), 3);
    }

    #[test]
    fn a_proposal_round_trips_and_refuses_unknown_fields() {
        let proposal = IdeasProposal {
            after: Some("ideas-1".to_owned()),
            events: vec!["e1".to_owned()],
            recorded_ms: 7,
            changes: ChangeSet::default(),
        };
        let json = serde_json::to_string(&proposal).expect("json");
        assert_eq!(
            serde_json::from_str::<IdeasProposal>(&json).expect("back"),
            proposal
        );
        let extra = json.replacen('{', r#"{"extra":1,"#, 1);
        assert!(serde_json::from_str::<IdeasProposal>(&extra).is_err());
    }
}
