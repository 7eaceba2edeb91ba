//! How often the heuristic engine *sees* a knowledge update: over the knowledge-update
//! set (`benches/knowledge_updates/`, `generate.py`'s `events.jsonl`), each case's
//! events through the engine (one batch per session, validated and applied as the agent
//! does), then per case whether a statement of the old value became an idea, whether
//! the update became one, and whether an old-value idea ended superseded. Search can
//! only hide or halve a stale value the graph knows was replaced, so this bounds what
//! the ideas graph can do for `score.py`'s ranking.
//!
//! `cargo run --release -p memory-benches --bin ku_supersession -- [EVENTS] [--verbose]`
//! (default `benches/knowledge_updates/data/events.jsonl`; `--verbose` lists the ideas
//! taken from the case's initial and update turns).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use memory_ideas::{
    BatchMode, ExtractBatch, HeuristicEngine, IdeaExtractor, Lexicon, MemoryGraph, SessionEvents,
    apply_changes, validate,
};
use memory_types::{Event, ProjectScope, ValidationLimits, parse_single};

struct CaseEvent {
    event: Event,
    role: String,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|arg| arg == "--verbose");
    let path = args
        .iter()
        .find(|arg| !arg.starts_with("--"))
        .cloned()
        .unwrap_or_else(|| {
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/knowledge_updates/data/events.jsonl"
            )
            .to_owned()
        });
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {path} (run benches/knowledge_updates/generate.py)"))?;
    let limits = ValidationLimits::default();
    let mut cases: BTreeMap<String, Vec<CaseEvent>> = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let json: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{path}:{}", number + 1))?;
        let case = json["metadata"]["case"].as_str().unwrap_or("").to_owned();
        let role = json["metadata"]["role_in_case"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        let event = parse_single(
            line.as_bytes(),
            ProjectScope::Default("default"),
            &limits,
            None,
        )
        .map_err(|err| anyhow::anyhow!("{path}:{}: {err}", number + 1))?;
        cases
            .entry(case)
            .or_default()
            .push(CaseEvent { event, role });
    }
    let (mut initial_ideas, mut update_ideas, mut superseded) = (0, 0, 0);
    for (case, events) in &cases {
        let graph = index_case(events)?;
        let role_of = |event_id: &str| {
            events
                .iter()
                .find(|case_event| case_event.event.event_id == event_id)
                .map_or("", |case_event| case_event.role.as_str())
        };
        let (mut has_initial, mut has_update, mut has_superseded) = (false, false, false);
        for idea in graph.ideas() {
            let role = role_of(&idea.source.event_id);
            match role {
                "initial" => {
                    has_initial = true;
                    has_superseded |= idea.is_superseded();
                }
                "update" => has_update = true,
                _ => continue,
            }
            if verbose {
                println!(
                    "{case} {role:<7} {:<10} {} {}",
                    format!("{:?}", idea.intent).to_lowercase(),
                    if idea.is_superseded() {
                        "superseded"
                    } else {
                        "in force  "
                    },
                    idea.content
                );
            }
        }
        initial_ideas += usize::from(has_initial);
        update_ideas += usize::from(has_update);
        superseded += usize::from(has_superseded);
    }
    let total = cases.len().max(1);
    let share = |count: usize| 100.0 * count as f64 / total as f64;
    println!(
        "{} cases: old value an idea {initial_ideas} ({:.0} %), update an idea {update_ideas} \
         ({:.0} %), old idea superseded {superseded} ({:.0} %)",
        cases.len(),
        share(initial_ideas),
        share(update_ideas),
        share(superseded)
    );
    Ok(())
}

/// One case through the engine: a batch per session, in log order.
fn index_case(events: &[CaseEvent]) -> Result<MemoryGraph> {
    let mut graph = MemoryGraph::default();
    let mut engine = HeuristicEngine::new();
    let mut sessions: Vec<SessionEvents> = Vec::new();
    for (seq, case_event) in events.iter().enumerate() {
        let event = &case_event.event;
        match sessions.last_mut() {
            Some(session) if session.session_id == event.session_id => {
                session.events.push(event.clone());
                session.seqs.push(seq as u64 + 1);
            }
            _ => sessions.push(SessionEvents {
                project_id: event.project_id.clone(),
                session_id: event.session_id.clone(),
                events: vec![event.clone()],
                seqs: vec![seq as u64 + 1],
                context: Vec::new(),
            }),
        }
    }
    for session in sessions {
        let batch = ExtractBatch {
            mode: BatchMode::Continuous,
            sessions: vec![session],
        };
        let changes = engine.extract(&batch, &graph)?;
        let valid = validate(&changes, &batch, &graph, 0)?;
        apply_changes(&mut graph, Lexicon::shipped(), &valid)?;
    }
    Ok(graph)
}
