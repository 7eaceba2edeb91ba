//! `hook claude-code|codex` (one hook input on stdin → events → the daemon, or the
//! spool) and `spool flush`.
//!
//! A hook runs inside the agent's turn, so it must never hold the agent up or make it
//! fail: it sends with a deadline (`[capture] hook_timeout_ms`, 50 ms end to end) and
//! when no daemon answers in time it appends the events to the spool and exits 0. The
//! next hook that gets an answer, or `spool flush`, sends the spool. Events that wait in
//! the spool are redacted first, with the data dir's key, so no secret sits in it.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use memory_agents::{Agent, Projects, SpoolDir, SpooledEvent, hook_events};
use memory_config::Config;
use memory_types::{DEFAULT_PROJECT, ProjectScope, parse_single};
use serde_json::Value;

use crate::capture_sink::{Delivery, spooled};
use crate::cli::{AgentArg, HookArgs, SpoolFlushArgs};
use crate::settings::limits;

/// Largest hook input read from stdin; Claude Code's carry a tool's whole input and
/// response, which the events cap anyway.
const MAX_INPUT_BYTES: u64 = 16 << 20;

impl From<AgentArg> for Agent {
    fn from(agent: AgentArg) -> Agent {
        match agent {
            AgentArg::ClaudeCode => Agent::ClaudeCode,
            AgentArg::Codex => Agent::Codex,
        }
    }
}

/// The hooks' directory: `[capture] spool_dir`, else `<data_dir>/spool`.
pub fn spool_dir(config: &Config, data_dir: &Path) -> SpoolDir {
    SpoolDir::new(
        config
            .capture
            .spool_dir
            .clone()
            .unwrap_or_else(|| data_dir.join("spool")),
    )
}

/// `hook <agent>`: never fails the agent. Bad input is reported on stderr with exit 1
/// (a non-blocking error for both agents); everything else exits 0.
pub async fn run(config: &Config, data_dir: &Path, args: HookArgs) -> ExitCode {
    let started = Instant::now();
    let budget = Duration::from_millis(args.timeout_ms.unwrap_or(config.capture.hook_timeout_ms));
    let mut input = Vec::new();
    if let Some(payload) = &args.payload {
        input.extend_from_slice(payload.as_bytes());
    } else if let Err(err) = std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_end(&mut input)
    {
        eprintln!("agent-memory hook: cannot read the hook input: {err}");
        return ExitCode::from(1);
    }
    let input: Value = match serde_json::from_slice(&input) {
        Ok(value) => value,
        Err(err) => {
            eprintln!("agent-memory hook: the hook input is not JSON: {err}");
            return ExitCode::from(1);
        }
    };
    let agent = Agent::from(args.agent);
    let spool = spool_dir(config, data_dir);
    let Captured {
        events: captured,
        hook_event_name,
        project,
    } = match capture(config, &spool, agent, &input) {
        Ok(captured) => captured,
        Err(err) => {
            eprintln!("agent-memory hook: {err:#}");
            return ExitCode::from(1);
        }
    };
    let code = deliver(config, data_dir, &args, &spool, captured, started, budget).await;
    if hook_event_name == "SessionStart" && config.capture.context_tokens > 0 {
        // Printed on stdout, which both agents put in front of the model at session
        // start. It has its own, longer wait: once per session, after the capture.
        if let Some(text) =
            session_context(config, args.nats_url.as_deref(), project.as_deref()).await
        {
            println!("{text}");
        }
    }
    code
}

/// Sends the events within what is left of `budget`, else spools them.
async fn deliver(
    config: &Config,
    data_dir: &Path,
    args: &HookArgs,
    spool: &SpoolDir,
    captured: Vec<SpooledEvent>,
    started: Instant,
    budget: Duration,
) -> ExitCode {
    if captured.is_empty() {
        return ExitCode::SUCCESS;
    }
    let remaining = budget.saturating_sub(started.elapsed());
    let sent = tokio::time::timeout(remaining, async {
        let delivery = Delivery::remote(config, args.nats_url.as_deref(), remaining).await?;
        let delivered = delivery.send(&captured).await?;
        Ok::<_, anyhow::Error>((delivery, delivered))
    })
    .await;
    match sent {
        Ok(Ok((delivery, delivered))) => {
            for (id, error) in &delivered.rejected {
                eprintln!("agent-memory hook: event {id} refused: {}", error.message);
            }
            // The daemon answers: send some of what earlier hooks spooled, if time is
            // left and no flush holds the spool; `spool flush` sends the rest.
            let left = budget.saturating_sub(started.elapsed());
            if spool.has_events() && !left.is_zero() {
                let _ = tokio::time::timeout(left, flush_some(spool, &delivery)).await;
            }
            delivery.close().await;
        }
        Ok(Err(_)) | Err(_) => {
            if let Err(err) = spool_events(data_dir, spool, captured, config) {
                eprintln!("agent-memory hook: no daemon answered and the spool failed: {err:#}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// What one hook input gave.
struct Captured {
    events: Vec<SpooledEvent>,
    hook_event_name: String,
    project: Option<String>,
}

/// The project's brief (`context.brief`) from the daemon, within
/// `[capture] context_timeout_ms`; None when no daemon answers in time or the project
/// has no memory yet.
async fn session_context(
    config: &Config,
    nats_url: Option<&str>,
    project: Option<&str>,
) -> Option<String> {
    let timeout = Duration::from_millis(config.capture.context_timeout_ms);
    let project = project.unwrap_or(DEFAULT_PROJECT);
    let body = serde_json::json!({ "token_budget": config.capture.context_tokens });
    let asked = tokio::time::timeout(timeout, async {
        let mut nats = config.nats.clone();
        if let Some(url) = nats_url {
            url.clone_into(&mut nats.url);
        }
        let client = memory_nats::connect(&nats, |_| {}).await.ok()?;
        let subject = format!("{}.{project}.context.brief", nats.query_subject_prefix);
        let payload = serde_json::to_vec(&body).ok()?;
        let reply = client.request(subject, payload.into()).await.ok()?;
        let value: Value = serde_json::from_slice(&reply.payload).ok()?;
        value
            .get("text")
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    })
    .await;
    asked.ok().flatten()
}

/// The hook input's events, with the session's hook state updated under its lock.
fn capture(
    config: &Config,
    spool: &SpoolDir,
    agent: Agent,
    input: &Value,
) -> anyhow::Result<Captured> {
    let (session_id, _) = memory_agents::hook::identify(input)?;
    let mut lock = spool.session(agent, &session_id)?;
    let mut projects = Projects::new(config.capture.project.clone());
    let out = hook_events(
        agent,
        input,
        &mut lock.state,
        &mut projects,
        memory_types::now_ms(),
    )?;
    lock.save()?;
    Ok(Captured {
        events: spooled(out.project.as_deref(), out.events),
        hook_event_name: out.hook_event_name,
        project: out.project,
    })
}

/// Redacts `events` (the daemon's rules and key) and appends them to the spool.
fn spool_events(
    data_dir: &Path,
    spool: &SpoolDir,
    events: Vec<SpooledEvent>,
    config: &Config,
) -> anyhow::Result<()> {
    let redactor = crate::embedded::redactor(data_dir)?;
    let limits = limits(config);
    let mut redacted = Vec::with_capacity(events.len());
    for item in events {
        let project = item.project.clone();
        let bytes = serde_json::to_vec(&item.event)?;
        let scope = ProjectScope::Default(project.as_deref().unwrap_or(DEFAULT_PROJECT));
        match parse_single(&bytes, scope, &limits, None) {
            Ok(mut event) => {
                redactor.redact_event(&mut event);
                redacted.push(SpooledEvent {
                    project,
                    event: event.to_wire(),
                });
            }
            Err(error) => eprintln!(
                "agent-memory hook: event {} refused: {}",
                item.event.event_id.unwrap_or_default(),
                error.message
            ),
        }
    }
    spool.append(&redacted)?;
    Ok(())
}

/// Most spooled events one hook sends on its way out: a bounded slice, so a long spool
/// drains over the next hooks instead of timing out whole in every one.
const HOOK_FLUSH_EVENTS: usize = 200;

/// Sends the oldest [`HOOK_FLUSH_EVENTS`] of the spool and keeps the rest; nothing when
/// another process holds the spool.
async fn flush_some(spool: &SpoolDir, delivery: &Delivery) -> anyhow::Result<()> {
    let Some(taken) = spool.try_take()? else {
        return Ok(());
    };
    let events = taken.events.clone();
    let slice = events.len().min(HOOK_FLUSH_EVENTS);
    if delivery.send(&events[..slice]).await.is_ok() {
        taken.keep(&events[slice..])?;
    }
    Ok(())
}

/// Sends the spool; keeps what was not delivered.
async fn flush(spool: &SpoolDir, delivery: &Delivery) -> anyhow::Result<FlushReport> {
    let Some(taken) = spool.take()? else {
        return Ok(FlushReport::default());
    };
    let mut report = FlushReport {
        unreadable: taken.unreadable,
        ..FlushReport::default()
    };
    let events = taken.events.clone();
    match delivery.send(&events).await {
        Ok(delivered) => {
            report.accepted = delivered.accepted;
            report.duplicates = delivered.duplicates;
            report.rejected = delivered.rejected.len();
            taken.keep(&[])?;
        }
        Err(err) => {
            // Nothing is rewritten: the spool stays as it was (its lock goes with
            // `taken`), and a crash here cannot empty it.
            report.kept = events.len();
            report.error = Some(format!("{err:#}"));
        }
    }
    Ok(report)
}

/// What `spool flush` did.
#[derive(Debug, Default, serde::Serialize)]
pub struct FlushReport {
    /// Newly stored.
    pub accepted: u64,
    /// Already stored.
    pub duplicates: u64,
    /// Refused by validation (dropped: they would never be taken).
    pub rejected: usize,
    /// Still in the spool (no daemon answered).
    pub kept: usize,
    /// Spool lines that were not events (dropped).
    pub unreadable: usize,
    /// Why events were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `spool flush`: sends the spool to the daemon (`--nats-url`) or, with `--embedded`,
/// straight into the data dir.
pub async fn flush_command(
    config: &Config,
    data_dir: &Path,
    args: SpoolFlushArgs,
) -> anyhow::Result<ExitCode> {
    let spool = spool_dir(config, data_dir);
    let delivery = if args.embedded {
        Delivery::embedded(config, data_dir).await?
    } else {
        Delivery::remote(
            config,
            args.nats_url.as_deref(),
            Duration::from_secs(config.nats.request_timeout_secs.max(1)),
        )
        .await?
    };
    let report = flush(&spool, &delivery).await?;
    delivery.close().await;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "spool {}: {} accepted, {} duplicates, {} rejected, {} kept",
            spool.root().display(),
            report.accepted,
            report.duplicates,
            report.rejected,
            report.kept
        );
        if let Some(error) = &report.error {
            println!("  kept because: {error}");
        }
    }
    Ok(if report.kept == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
