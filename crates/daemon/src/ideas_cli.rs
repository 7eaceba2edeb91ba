//! The ideas graph commands: `ideas search|get|open-questions|open-todos|decisions`,
//! `entities search|ideas`, `spans list`, `timeline` and `session-context` — each the
//! query call of the same name, in embedded mode or over NATS (`--nats-url`), printed
//! one line per idea (intent, validity, content, a superseded marker) or as the call's
//! JSON with `--json`.

use std::path::Path;
use std::process::ExitCode;

use memory_config::Config;
use memory_query::ideas_api::{
    EntitiesSearchResponse, IdeaGetResponse, IdeaListResponse, IdeaResult, IdeasSearchResponse,
    SessionContextResponse, SpansListResponse, TimelineResponse,
};
use serde_json::{Value, json};

use crate::embedded::init_tool_tracing;
use crate::ideas_args::{
    EntitiesCommand, IdeasCommand, OpenItemsArgs, SessionContextArgs, SpansCommand, TimelineArgs,
};
use crate::query_cli::{QueryClient, call_or_print, decode, one_line, print_event, strip_nulls};
use crate::query_target::QueryTarget;
use crate::say;

/// One of the commands of this module.
#[derive(Debug)]
pub enum IdeasCli {
    /// `ideas …`.
    Ideas(IdeasCommand),
    /// `entities …`.
    Entities(EntitiesCommand),
    /// `spans …`.
    Spans(SpansCommand),
    /// `timeline …`.
    Timeline(TimelineArgs),
    /// `session-context …`.
    SessionContext(SessionContextArgs),
}

/// A command as the call it makes.
#[derive(Debug)]
struct Call {
    target: QueryTarget,
    method: &'static str,
    body: Value,
}

/// A time argument as the wire takes it: digits are epoch milliseconds, anything else
/// text (RFC 3339 or a date), checked by the service.
fn time_arg(text: Option<String>) -> Value {
    match text {
        None => Value::Null,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(ms) => json!(ms),
            Err(_) => json!(text),
        },
    }
}

/// `true` as itself, `false` left out (the service's default).
fn flag(value: bool) -> Value {
    if value { json!(true) } else { Value::Null }
}

impl IdeasCli {
    /// The call this command makes.
    fn call(self) -> Call {
        let (target, method, mut body) = match self {
            IdeasCli::Ideas(IdeasCommand::Search {
                query,
                intent,
                entity,
                sector,
                session,
                include_superseded,
                as_of,
                min_salience,
                limit,
                token_budget,
                target,
            }) => (
                target,
                "ideas.search",
                json!({"query": query, "intent": intent, "entity": entity, "sector": sector,
                       "session_id": session, "include_superseded": flag(include_superseded),
                       "as_of": time_arg(as_of), "min_salience": min_salience,
                       "limit": limit, "token_budget": token_budget}),
            ),
            IdeasCli::Ideas(IdeasCommand::Get { idea_id, target }) => {
                (target, "ideas.get", json!({"idea_id": idea_id}))
            }
            IdeasCli::Ideas(IdeasCommand::OpenQuestions(args)) => {
                open_items(args, "ideas.open_questions")
            }
            IdeasCli::Ideas(IdeasCommand::OpenTodos(args)) => open_items(args, "ideas.open_todos"),
            IdeasCli::Ideas(IdeasCommand::Decisions {
                entity,
                as_of,
                include_superseded,
                limit,
                target,
            }) => (
                target,
                "ideas.decisions",
                json!({"entity": entity, "as_of": time_arg(as_of),
                       "include_superseded": flag(include_superseded), "limit": limit}),
            ),
            IdeasCli::Entities(EntitiesCommand::Search {
                query,
                entity_type,
                limit,
                target,
            }) => (
                target,
                "entities.search",
                json!({"query": query, "type": entity_type, "limit": limit}),
            ),
            IdeasCli::Entities(EntitiesCommand::Ideas {
                entity_id,
                limit,
                target,
            }) => (
                target,
                "entities.ideas",
                json!({"entity_id": entity_id, "limit": limit}),
            ),
            IdeasCli::Spans(SpansCommand::List { session, target }) => {
                (target, "spans.list", json!({"session_id": session}))
            }
            IdeasCli::Timeline(args) => {
                let anchor = match (args.event_id, args.idea_id, args.at) {
                    (Some(event_id), _, _) => json!({"event_id": event_id}),
                    (None, Some(idea_id), _) => json!({"idea_id": idea_id}),
                    (None, None, at) => json!({"timestamp": time_arg(at)}),
                };
                (
                    args.target,
                    "timeline",
                    json!({"anchor": anchor, "before": args.before, "after": args.after}),
                )
            }
            IdeasCli::SessionContext(args) => (
                args.target,
                "session_context",
                json!({"session_id": args.session}),
            ),
        };
        strip_nulls(&mut body);
        Call {
            target,
            method,
            body,
        }
    }
}

fn open_items(args: OpenItemsArgs, method: &'static str) -> (QueryTarget, &'static str, Value) {
    (
        args.target,
        method,
        json!({"session_id": args.session, "since": time_arg(args.since), "limit": args.limit}),
    )
}

/// Runs one command.
pub async fn run(
    config: &Config,
    data_dir: &Path,
    command: IdeasCli,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let Call {
        target,
        method,
        body,
    } = command.call();
    let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
    let value = match call_or_print(&client, &target, method, &body).await? {
        Ok(value) => value,
        Err(code) => return Ok(code),
    };
    print_reply(method, value)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a reply for a person.
fn print_reply(method: &str, value: Value) -> anyhow::Result<()> {
    match method {
        "ideas.search" => {
            let response: IdeasSearchResponse = decode(value)?;
            say!(
                "{} ideas · ~{} tokens",
                response.results.len(),
                response.token_estimate
            );
            response.results.iter().for_each(print_idea);
        }
        "ideas.get" => print_get(&decode(value)?),
        "ideas.open_questions" | "ideas.open_todos" | "ideas.decisions" | "entities.ideas" => {
            let response: IdeaListResponse = decode(value)?;
            if response.results.is_empty() {
                say!("(none)");
            }
            response.results.iter().for_each(print_idea);
        }
        "entities.search" => {
            let response: EntitiesSearchResponse = decode(value)?;
            if response.results.is_empty() {
                say!("(none)");
            }
            for entity in &response.results {
                let aliases = if entity.aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (also {})", entity.aliases.join(", "))
                };
                say!(
                    "{}  {:<10}  {}{}  · {} idea{}",
                    entity.entity_id,
                    entity.entity_type.as_str(),
                    entity.name,
                    aliases,
                    entity.idea_count,
                    if entity.idea_count == 1 { "" } else { "s" }
                );
            }
        }
        "spans.list" => {
            let response: SpansListResponse = decode(value)?;
            if response.spans.is_empty() {
                say!("session {} has no topic spans", response.session_id);
            }
            for span in &response.spans {
                say!(
                    "{}  {} → {}  {}",
                    span.span_id,
                    short_time(&span.first_at),
                    short_time(&span.last_at),
                    span.name
                );
                say!("    {}", one_line(&span.summary, 140));
                say!(
                    "    ({}; events {} … {})",
                    span.reason,
                    span.first_event_id,
                    span.last_event_id
                );
            }
        }
        "timeline" => print_timeline(&decode(value)?),
        _ => print_session_context(&decode(value)?),
    }
    Ok(())
}

/// `2026-03-02T09:02:00.000Z` → `2026-03-02 09:02`.
fn short_time(rfc3339: &str) -> String {
    rfc3339.get(..16).unwrap_or(rfc3339).replace('T', " ")
}

/// One line: id, intent, validity, content, and a marker when superseded.
fn print_idea(idea: &IdeaResult) {
    let validity = match &idea.valid_until {
        Some(until) => format!("{} → {}", short_time(&idea.valid_from), short_time(until)),
        None => format!("{} →", short_time(&idea.valid_from)),
    };
    let marker = match (&idea.superseded_by, idea.is_superseded) {
        (Some(newer), _) => format!(
            "  [superseded by {}: {}]",
            newer.idea_id,
            one_line(&newer.content, 60)
        ),
        (None, true) => "  [superseded]".to_owned(),
        (None, false) => String::new(),
    };
    let open = match (&idea.resolution, idea.intent.as_str()) {
        (None, "question" | "problem" | "todo") => "  [open]",
        _ => "",
    };
    say!(
        "{}  {:<10}  {:<35}  {}{}{}",
        idea.idea_id,
        idea.intent.as_str(),
        validity,
        one_line(&idea.content, 110),
        open,
        marker
    );
}

fn print_get(response: &IdeaGetResponse) {
    let idea = &response.idea;
    print_idea(idea);
    say!(
        "  {} · {} · confidence {:.2} · importance {:.2} · salience {:.2}",
        idea.intent.as_str(),
        idea.sector.as_str(),
        idea.confidence,
        idea.importance,
        idea.salience
    );
    say!(
        "  said in session {} by event {} at {}",
        idea.source.session_id,
        idea.source.event_id,
        short_time(&idea.source.timestamp)
    );
    if !idea.entities.is_empty() {
        say!("  entities: {}", idea.entities.join(", "));
    }
    if let Some(resolution) = &idea.resolution {
        say!(
            "  resolved at {} by event {}: {}",
            short_time(&resolution.timestamp),
            resolution.event_id,
            one_line(&resolution.summary, 120)
        );
    }
    for relation in &response.relations {
        let arrow = match relation.direction {
            memory_query::ideas_api::RelationDirection::Outgoing => "→",
            memory_query::ideas_api::RelationDirection::Incoming => "←",
        };
        say!(
            "  {arrow} {:<11} {}  {:<10}  {}",
            relation.relation_type.as_str(),
            relation.other.idea_id,
            relation.other.intent.as_str(),
            one_line(&relation.other.content, 90)
        );
    }
}

fn print_timeline(response: &TimelineResponse) {
    for idea in &response.before {
        print_idea(idea);
    }
    let anchor = &response.anchor;
    say!("── {} ──", short_time(&anchor.timestamp));
    if let Some(event) = &anchor.event {
        print_event(event, "  ");
    }
    if let Some(idea) = &anchor.idea {
        print_idea(idea);
    }
    for idea in anchor.ideas.iter().filter(|idea| {
        anchor
            .idea
            .as_ref()
            .is_none_or(|own| own.idea_id != idea.idea_id)
    }) {
        print_idea(idea);
    }
    say!("──");
    for idea in &response.after {
        print_idea(idea);
    }
    if !response.sessions.is_empty() {
        say!("\nsessions:");
    }
    for (session_id, session) in &response.sessions {
        say!(
            "  {session_id}  {} → {}  {}",
            session
                .started_at
                .as_deref()
                .map_or_else(|| "?".to_owned(), short_time),
            session
                .ended_at
                .as_deref()
                .map_or_else(|| "?".to_owned(), short_time),
            one_line(session.summary.as_deref().unwrap_or(""), 100)
        );
    }
}

fn print_session_context(response: &SessionContextResponse) {
    say!(
        "session {}  {} → {}  {} events",
        response.session_id,
        response
            .started_at
            .as_deref()
            .map_or_else(|| "?".to_owned(), short_time),
        response
            .ended_at
            .as_deref()
            .map_or_else(|| "?".to_owned(), short_time),
        response.event_count
    );
    if let Some(summary) = &response.summary {
        say!("  {}", one_line(summary, 200));
    }
    for (intent, ideas) in &response.ideas_by_intent {
        say!("\n{intent} ({})", ideas.len());
        ideas.iter().for_each(print_idea);
    }
    for (label, ideas) in [
        ("questions opened", &response.questions_opened),
        ("questions closed", &response.questions_closed),
        ("todos opened", &response.todos_opened),
        ("todos closed", &response.todos_closed),
    ] {
        say!("\n{label}: {}", ideas.len());
        if label.ends_with("closed") {
            ideas.iter().for_each(print_idea);
        }
    }
    if !response.skipped_events.is_empty() {
        let skipped: Vec<String> = response
            .skipped_events
            .iter()
            .map(|skipped| format!("{} ({})", skipped.event_id, skipped.reason))
            .collect();
        say!("\nskipped: {}", skipped.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn call_of(args: &[&str]) -> Call {
        let cli = Cli::try_parse_from(std::iter::once("memory-daemon").chain(args.iter().copied()))
            .unwrap_or_else(|err| panic!("{args:?}: {err}"));
        let command = match cli.command {
            Command::Ideas { command } => IdeasCli::Ideas(command),
            Command::Entities { command } => IdeasCli::Entities(command),
            Command::Spans { command } => IdeasCli::Spans(command),
            Command::Timeline(args) => IdeasCli::Timeline(args),
            Command::SessionContext(args) => IdeasCli::SessionContext(args),
            other => panic!("not an ideas command: {other:?}"),
        };
        command.call()
    }

    #[test]
    fn each_command_sends_its_call() {
        let search = call_of(&[
            "ideas",
            "search",
            "ledger database",
            "--project",
            "webapp",
            "--include-superseded",
            "--as-of",
            "2026-03-03",
            "--intent",
            "decision",
            "--entity",
            "pg",
            "--sector",
            "reflective",
            "--session",
            "s1",
            "--limit",
            "5",
            "--json",
        ]);
        assert_eq!(search.method, "ideas.search");
        assert_eq!(search.target.project, "webapp");
        assert!(search.target.json);
        assert_eq!(
            search.body,
            json!({"query": "ledger database", "include_superseded": true,
                   "as_of": "2026-03-03", "intent": "decision", "entity": "pg",
                   "sector": "reflective", "session_id": "s1", "limit": 5})
        );
        let list = call_of(&["ideas", "search", "--intent", "todo"]);
        assert_eq!(list.body, json!({"query": "", "intent": "todo"}));
        assert_eq!(list.target.project, memory_types::DEFAULT_PROJECT);

        for (args, method, body) in [
            (
                vec!["ideas", "get", "idea-0123456789abcdef"],
                "ideas.get",
                json!({"idea_id": "idea-0123456789abcdef"}),
            ),
            (
                vec![
                    "ideas",
                    "open-questions",
                    "--session",
                    "s1",
                    "--since",
                    "1772442000000",
                ],
                "ideas.open_questions",
                json!({"session_id": "s1", "since": 1_772_442_000_000_u64}),
            ),
            (vec!["ideas", "open-todos"], "ideas.open_todos", json!({})),
            (
                vec![
                    "ideas",
                    "decisions",
                    "--entity",
                    "Postgres",
                    "--as-of",
                    "2026-03-03",
                ],
                "ideas.decisions",
                json!({"entity": "Postgres", "as_of": "2026-03-03"}),
            ),
            (
                vec!["entities", "search", "pg", "--type", "technology"],
                "entities.search",
                json!({"query": "pg", "type": "technology"}),
            ),
            (
                vec!["entities", "ideas", "ent-0123456789abcdef", "--limit", "3"],
                "entities.ideas",
                json!({"entity_id": "ent-0123456789abcdef", "limit": 3}),
            ),
            (
                vec!["spans", "list", "--session", "s1"],
                "spans.list",
                json!({"session_id": "s1"}),
            ),
            (
                vec![
                    "timeline",
                    "--event-id",
                    "e42",
                    "--before",
                    "2",
                    "--after",
                    "3",
                ],
                "timeline",
                json!({"anchor": {"event_id": "e42"}, "before": 2, "after": 3}),
            ),
            (
                vec!["timeline", "--idea-id", "idea-0123456789abcdef"],
                "timeline",
                json!({"anchor": {"idea_id": "idea-0123456789abcdef"}}),
            ),
            (
                vec!["timeline", "--at", "2026-03-03T10:00:00Z"],
                "timeline",
                json!({"anchor": {"timestamp": "2026-03-03T10:00:00Z"}}),
            ),
            (
                vec![
                    "session-context",
                    "--session",
                    "s2",
                    "--nats-url",
                    "nats://x:4222",
                ],
                "session_context",
                json!({"session_id": "s2"}),
            ),
        ] {
            let call = call_of(&args);
            assert_eq!((call.method, &call.body), (method, &body), "{args:?}");
        }
    }

    #[test]
    fn a_timeline_needs_exactly_one_anchor() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("memory-daemon").chain(args.iter().copied()))
        };
        assert!(parse(&["timeline"]).is_err());
        assert!(parse(&["timeline", "--event-id", "e1", "--at", "2026-03-03"]).is_err());
        assert!(parse(&["timeline", "--at", "2026-03-03"]).is_ok());
    }

    #[test]
    fn times_are_shortened_for_people() {
        assert_eq!(short_time("2026-03-02T09:02:00.000Z"), "2026-03-02 09:02");
        assert_eq!(short_time("soon"), "soon");
    }
}
