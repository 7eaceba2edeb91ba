//! "A year of data": deterministic, realistic coding-agent conversations over 365 days
//! and several projects, for the time-table-of-contents benches (`toc_query`, `loadgen
//! gen-file --dataset year`, `loadgen query`).
//!
//! Sessions of 20–80 events (user and assistant messages, tool calls and their results)
//! framed by `session_start`/`session_end`, on weekdays mostly, in working hours, on
//! one main topic each with a detour now and then: auth/JWT, databases and migrations,
//! CI, deploys, performance, refactors, flaky tests, caching, observability, dependency
//! upgrades, API design, incidents. Texts are filled from templates with identifiers,
//! file paths (per project), tickets, PR numbers, commit hashes and numbers, so the
//! vocabulary varies the way real sessions do. About one session in ten has a lunch
//! break longer than the segmenter's 30-minute gap, and long sessions pass the 4K-token
//! segment budget, so days hold segments of every closing kind.
//!
//! Everything comes from one seed: the same spec yields the same events, ids included.

mod rng;
mod session;
mod topics;

use serde_json::{Value, json};

pub use rng::Rng;
use session::{Session, style};
use topics::TOPICS;

/// First instant of the data: 2025-11-01T00:00:00Z. The 365 days end on 2026-10-31, before
/// the reference machine's clock (so the daemon's future-skew check accepts them), and
/// `toc:year:2026` holds ten months.
pub const YEAR_START_MS: u64 = 1_761_955_200_000;
/// Days of data.
pub const YEAR_DAYS: u64 = 365;
/// `now` of the fixed query mix: the day after the data ends.
pub const YEAR_NOW: &str = "2026-11-01T09:00:00Z";
/// Projects, with the share of sessions each gets.
pub const YEAR_PROJECTS: &[(&str, u32)] = &[
    ("webapp", 40),
    ("ingest-pipeline", 25),
    ("mobile-app", 20),
    ("infra", 15),
];
const DAY_MS: u64 = 86_400_000;

/// What to generate.
#[derive(Clone, Debug)]
pub struct YearSpec {
    /// Seed of everything.
    pub seed: u64,
    /// Events to generate, about (whole sessions are kept).
    pub events: usize,
}

impl Default for YearSpec {
    fn default() -> Self {
        YearSpec {
            seed: 2026,
            events: 100_000,
        }
    }
}

/// One generated event, compact until it is turned into the wire JSON.
#[derive(Clone, Debug)]
pub struct YearEvent {
    /// Project id.
    pub project: &'static str,
    /// Session number, unique within the data set.
    pub session: u32,
    /// Position in the session.
    pub turn: u32,
    /// Epoch milliseconds.
    pub timestamp_ms: u64,
    /// Wire kind.
    pub kind: &'static str,
    /// Content.
    pub text: String,
    /// Git branch of the session (metadata).
    pub branch: String,
}

impl YearEvent {
    /// The event as producers send it (wire format v1).
    #[must_use]
    pub fn to_json(&self) -> Value {
        json!({
            "event_id": format!("{}-s{}-t{}", self.project, self.session, self.turn),
            "session_id": format!("{}-session-{:05}", self.project, self.session),
            "project_id": self.project,
            "agent_id": "claude-code",
            "timestamp": self.timestamp_ms,
            "kind": self.kind,
            "text": self.text,
            "metadata": {"cwd": format!("/home/dev/src/{}", self.project), "git_branch": self.branch},
        })
    }
}

fn is_weekend(day: u64) -> bool {
    // Day 0 of the epoch was a Thursday.
    let weekday = (YEAR_START_MS / DAY_MS + day + 3) % 7; // 0 = Monday
    weekday >= 5
}

/// Relative activity of `project` on `day` (0..=1): weekends and two holiday stretches
/// are quiet, `mobile-app` starts in March, `ingest-pipeline` winds down after summer.
fn activity(project: &str, day: u64) -> f64 {
    let mut weight: f64 = if is_weekend(day) { 0.2 } else { 1.0 };
    if (52..=63).contains(&day) || (270..=283).contains(&day) {
        weight *= 0.15; // end-of-year and summer holidays
    }
    match project {
        "mobile-app" if day < 120 => weight * 0.05,
        "ingest-pipeline" if day > 300 => weight * 0.4,
        _ => weight,
    }
}

/// The data set, in timestamp order.
#[must_use]
pub fn generate(spec: &YearSpec) -> Vec<YearEvent> {
    let mut rng = Rng::new(spec.seed);
    let total_weight: u32 = YEAR_PROJECTS.iter().map(|(_, w)| w).sum();
    let mut events = Vec::with_capacity(spec.events + 100);
    let mut session_number = 0u32;
    while events.len() < spec.events {
        session_number += 1;
        let mut roll = rng.range(0, u64::from(total_weight) - 1) as u32;
        let project = YEAR_PROJECTS
            .iter()
            .find(|(_, w)| {
                if roll < *w {
                    true
                } else {
                    roll -= w;
                    false
                }
            })
            .map_or("webapp", |(p, _)| *p);
        let day = loop {
            let day = rng.range(0, YEAR_DAYS - 1);
            if rng.chance(activity(project, day)) {
                break day;
            }
        };
        // Working hours (UTC), a few evening sessions.
        let hour = if rng.chance(0.1) {
            rng.range(19, 22)
        } else {
            rng.range(7, 17)
        };
        let mut ts = YEAR_START_MS + day * DAY_MS + hour * 3_600_000 + rng.range(0, 3_599_999);
        let topic = rng.pick(TOPICS);
        let branch = format!(
            "{}/{}-{}",
            rng.pick(&["fix", "feat", "chore", "perf"]),
            topic.name,
            rng.range(1, 999)
        );
        let turns = rng.range(20, 80) as u32;
        let break_at = rng
            .chance(0.1)
            .then(|| rng.range(8, u64::from(turns) - 4) as u32);
        let mut session = Session {
            rng: &mut rng,
            project,
            style: style(project),
            topic,
            branch,
            last_call: 0,
            last_topic: topic,
        };
        let push = |events: &mut Vec<YearEvent>,
                    session: &Session<'_>,
                    turn: u32,
                    timestamp_ms: u64,
                    kind: &'static str,
                    text: String| {
            events.push(YearEvent {
                project: session.project,
                session: session_number,
                turn,
                timestamp_ms,
                kind,
                text,
                branch: session.branch.clone(),
            });
        };
        let opening = format!(
            "session started in /home/dev/src/{project} on branch {}",
            session.branch
        );
        push(&mut events, &session, 0, ts, "session_start", opening);
        let mut kind = "user_message";
        let mut pending_tools = 0u64;
        for turn in 1..=turns {
            ts += match kind {
                "user_message" => session.rng.range(15_000, 240_000),
                "assistant_message" => session.rng.range(4_000, 30_000),
                "tool_call" => session.rng.range(1_000, 6_000),
                _ => session.rng.range(1_000, 45_000),
            };
            if break_at == Some(turn) {
                ts += session.rng.range(35, 120) * 60_000; // lunch: longer than the 30 min gap
            }
            let text = session.say(kind);
            push(&mut events, &session, turn, ts, kind, text);
            kind = match kind {
                "user_message" => "assistant_message",
                "assistant_message" => {
                    if pending_tools == 0 && session.rng.chance(0.5) {
                        pending_tools = session.rng.range(1, 3);
                    }
                    if pending_tools > 0 {
                        pending_tools -= 1;
                        "tool_call"
                    } else {
                        "user_message"
                    }
                }
                "tool_call" => "tool_result",
                _ => "assistant_message",
            };
        }
        ts += session.rng.range(5_000, 60_000);
        push(
            &mut events,
            &session,
            turns + 1,
            ts,
            "session_end",
            String::from("session ended"),
        );
    }
    events.sort_by_key(|event| (event.timestamp_ms, event.session, event.turn));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_sized_and_in_range() {
        let spec = YearSpec {
            seed: 7,
            events: 5_000,
        };
        let (a, b) = (generate(&spec), generate(&spec));
        assert_eq!(a.len(), b.len());
        assert!(a.len() >= 5_000 && a.len() < 5_100);
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| x.text == y.text && x.timestamp_ms == y.timestamp_ms)
        );
        let end = YEAR_START_MS + (YEAR_DAYS + 1) * DAY_MS;
        assert!(
            a.iter()
                .all(|e| (YEAR_START_MS..end).contains(&e.timestamp_ms))
        );
        assert!(
            a.iter()
                .all(|e| !e.text.contains("{file}") && !e.text.contains("{ident}"))
        );
    }
}
