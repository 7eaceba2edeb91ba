//! Hook inputs (one JSON object on a hook's stdin, or the body of Claude Code's `http`
//! hook) as events.
//!
//! Claude Code and Codex send the same shape: `session_id` and `hook_event_name`, and per
//! event `prompt`, `tool_name` / `tool_input` / `tool_response` / `tool_use_id`,
//! `last_assistant_message`, `source`, `reason`, `trigger`, with `cwd` and
//! `transcript_path`. Every field but the first two is optional (inputs captured in
//! mid-2025 lack some). What each becomes:
//! - `SessionStart` → `session_start`;
//! - `UserPromptSubmit` → `user_message`;
//! - `PostToolUse` → `tool_call` + `tool_result`;
//! - `Stop`, `SubagentStop` → the assistant turns written to the transcript since the
//!   last hook (read from `transcript_path` at the offset [`HookState`] keeps), else
//!   `last_assistant_message`;
//! - `PreCompact` → the same read, then a `note` marking the compaction;
//! - `SessionEnd` → the same read, then `session_end`;
//! - anything else → nothing.
//!
//! Codex's legacy `notify` payload (`type: agent-turn-complete`) is read too: its
//! `input-messages` and `last-assistant-message`.
//!
//! Ids follow [`crate::draft`], so a turn that arrives by a hook and again by an import
//! is stored once.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use memory_types::{EventKind, EventV1, TimestampV1};
use serde_json::Value;

use crate::claude_code::{self, SessionBook, TranscriptReader};
use crate::codex::{self, RolloutReader};
use crate::draft::{
    Draft, MAX_MESSAGE_CHARS, MAX_TOOL_TEXT_CHARS, ToolRef, name_key, session_key, tool_call_text,
};
use crate::projects::Projects;

/// The agent whose hook fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Agent {
    /// The `source` metadata and agent id.
    #[must_use]
    pub fn source(self) -> &'static str {
        match self {
            Agent::ClaudeCode => claude_code::SOURCE,
            Agent::Codex => codex::SOURCE,
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Agent::ClaudeCode => claude_code::PREFIX,
            Agent::Codex => codex::PREFIX,
        }
    }
}

/// What a session's hooks remember between runs (one small file per session).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct HookState {
    /// Hooks seen in this session; names markers that have no id of their own.
    #[serde(default)]
    pub seq: u64,
    /// Bytes of the transcript already read for assistant turns.
    #[serde(default)]
    pub transcript_offset: u64,
    /// Prompt occurrences and responses already sent.
    #[serde(default)]
    pub book: SessionBook,
    /// What the transcript reader knew at the last hook: a response still being written
    /// then (a subagent's, read by `SubagentStop`) is finished by a later hook, not lost.
    #[serde(default)]
    pub transcript: crate::claude_code::FileState,
    /// The same for a Codex rollout.
    #[serde(default)]
    pub rollout: Option<crate::codex::RolloutState>,
}

/// Why a hook input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Not a JSON object.
    #[error("the hook input is not a JSON object: {0}")]
    NotJson(String),
    /// A required field is missing or not a string.
    #[error("the hook input has no `{0}`")]
    Missing(&'static str),
}

/// The events of one hook input.
#[derive(Debug)]
pub struct HookEvents {
    /// The session.
    pub session_id: String,
    /// `hook_event_name` (or `notify` for Codex's legacy payload).
    pub hook_event_name: String,
    /// The project of the input's `cwd` (None: the daemon's default).
    pub project: Option<String>,
    /// The events, in order.
    pub events: Vec<EventV1>,
}

/// The session id and event name of a hook input, before its state is loaded.
///
/// # Errors
/// [`HookError`] when the input is not an object or lacks them.
pub fn identify(input: &Value) -> Result<(String, String), HookError> {
    if !input.is_object() {
        return Err(HookError::NotJson("not an object".to_owned()));
    }
    if input.get("type").and_then(Value::as_str) == Some("agent-turn-complete") {
        let thread = input
            .get("thread-id")
            .and_then(Value::as_str)
            .ok_or(HookError::Missing("thread-id"))?;
        return Ok((thread.to_owned(), "notify".to_owned()));
    }
    let session = input
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or(HookError::Missing("session_id"))?;
    let name = input
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or(HookError::Missing("hook_event_name"))?;
    Ok((session.to_owned(), name.to_owned()))
}

/// Turns one hook input into events, updating the session's `state`; `now_ms` stamps
/// events the agent gave no time.
///
/// # Errors
/// [`HookError`] when the input lacks `session_id` or `hook_event_name`.
pub fn hook_events(
    agent: Agent,
    input: &Value,
    state: &mut HookState,
    projects: &mut Projects,
    now_ms: u64,
) -> Result<HookEvents, HookError> {
    let (session_id, hook_event_name) = identify(input)?;
    state.seq += 1;
    let text = |key: &str| input.get(key).and_then(Value::as_str).unwrap_or("");
    let cwd = text("cwd");
    let project = if cwd.is_empty() {
        projects.last()
    } else {
        Some(projects.of(cwd))
    };
    let mut builder = Builder {
        agent,
        session_id: &session_id,
        project: project.clone(),
        now_ms,
        events: Vec::new(),
    };
    let prefix = agent.prefix();
    let session = session_key(&session_id);
    match hook_event_name.as_str() {
        "SessionStart" => {
            state.book.started.insert(session_id.clone());
            let draft = builder
                .draft(format!("{prefix}:{session}:start"), EventKind::SessionStart)
                .meta("start_source", text("source"))
                .meta("model", text("model"));
            builder.push(draft);
        }
        "UserPromptSubmit" => {
            let prompt = text("prompt");
            if !prompt.trim().is_empty() {
                builder.said(&mut state.book.occurrences, "p", prompt);
            }
        }
        "PostToolUse" => builder.tool(input, state.seq),
        "Stop" | "SubagentStop" | "PreCompact" | "SessionEnd" => {
            let read =
                read_transcript_tail(agent, input, state, projects, &session_id, &hook_event_name);
            let fallback = text("last_assistant_message");
            match read {
                Some(events) => builder.events.extend(events),
                // No readable transcript: the hook's own copy of the last answer.
                None if !fallback.trim().is_empty() && hook_event_name.ends_with("Stop") => {
                    builder.said(&mut state.book.occurrences, "a", fallback);
                }
                _ => {}
            }
            if hook_event_name == "PreCompact" {
                let trigger = text("trigger");
                let draft = builder
                    .draft(
                        format!("{prefix}:{session}:compact:{}", state.seq),
                        EventKind::Note,
                    )
                    .text(
                        &format!(
                            "{} compacted the conversation ({})",
                            agent.source(),
                            if trigger.is_empty() {
                                "manual"
                            } else {
                                trigger
                            }
                        ),
                        MAX_MESSAGE_CHARS,
                    )
                    .meta("marker", "pre_compact");
                builder.push(draft);
            }
            if hook_event_name == "SessionEnd" {
                let draft = builder
                    .draft(
                        format!("{prefix}:{session}:end:{}", state.seq),
                        EventKind::SessionEnd,
                    )
                    .meta("end_reason", text("reason"));
                builder.push(draft);
            }
        }
        "notify" => {
            if let Some(messages) = input.get("input-messages").and_then(Value::as_array) {
                for message in messages.iter().filter_map(Value::as_str) {
                    if message.trim().is_empty() {
                        continue;
                    }
                    builder.said(&mut state.book.occurrences, "p", message);
                }
            }
            let last = text("last-assistant-message");
            if !last.trim().is_empty() {
                builder.said(&mut state.book.occurrences, "a", last);
            }
        }
        _ => {}
    }
    let events = builder.events;
    Ok(HookEvents {
        session_id,
        hook_event_name,
        project,
        events,
    })
}

struct Builder<'a> {
    agent: Agent,
    session_id: &'a str,
    project: Option<String>,
    now_ms: u64,
    events: Vec<EventV1>,
}

impl Builder<'_> {
    fn draft(&self, id: String, kind: EventKind) -> Draft {
        Draft::new(
            self.agent.source(),
            id,
            self.session_id,
            kind,
            TimestampV1::EpochMillis(self.now_ms),
        )
        .project(self.project.as_deref())
    }

    fn push(&mut self, draft: Draft) {
        self.events.push(draft.build());
    }

    /// A prompt (`kind` `p`) or an assistant turn (`a`) without an id of its own: named
    /// by its text's occurrence in the session, as an import of the transcript names it.
    fn said(&mut self, occurrences: &mut crate::Occurrences, kind: &str, text: &str) {
        let id = occurrences.next_id(self.agent.prefix(), self.session_id, kind, text);
        let event_kind = if kind == "p" {
            EventKind::UserMessage
        } else {
            EventKind::AssistantMessage
        };
        let draft = self.draft(id, event_kind).text(text, MAX_MESSAGE_CHARS);
        self.push(draft);
    }

    fn tool(&mut self, input: &Value, seq: u64) {
        let name = input
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("tool");
        if crate::draft::is_own_tool(name) {
            return;
        }
        let tool_input = input.get("tool_input").cloned().unwrap_or(Value::Null);
        let prefix = self.agent.prefix();
        let key = match input.get("tool_use_id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => name_key(id),
            _ => format!("{}:tool:{seq}", session_key(self.session_id)),
        };
        let tool = ToolRef::of(name, &tool_input);
        let call = self
            .draft(format!("{prefix}:{key}:call"), EventKind::ToolCall)
            .text(&tool_call_text(name, &tool_input), MAX_TOOL_TEXT_CHARS)
            .tool(&tool);
        self.push(call);
        let response = response_text(input.get("tool_response").unwrap_or(&Value::Null));
        let response = if response.trim().is_empty() {
            "(no output)".to_owned()
        } else {
            response
        };
        let result = self
            .draft(format!("{prefix}:{key}:result"), EventKind::ToolResult)
            .text(&response, MAX_TOOL_TEXT_CHARS)
            .tool(&tool);
        self.push(result);
    }
}

/// A tool response's text: a string as is; Bash's `stdout` and `stderr`; a read file's
/// content; a written file's content; else the object as JSON.
fn response_text(response: &Value) -> String {
    match response {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Object(map) => {
            if map.contains_key("stdout") || map.contains_key("stderr") {
                let out = map.get("stdout").and_then(Value::as_str).unwrap_or("");
                let err = map.get("stderr").and_then(Value::as_str).unwrap_or("");
                return match (out.is_empty(), err.is_empty()) {
                    (_, true) => out.to_owned(),
                    (true, false) => err.to_owned(),
                    (false, false) => format!("{out}\n{err}"),
                };
            }
            if let Some(content) = response
                .pointer("/file/content")
                .or_else(|| map.get("content"))
                .and_then(Value::as_str)
            {
                return content.to_owned();
            }
            response.to_string()
        }
        other => other.to_string(),
    }
}

/// The assistant turns appended to the transcript since `state.transcript_offset`; moves
/// the offset past the complete lines read. None when there is no readable transcript.
fn read_transcript_tail(
    agent: Agent,
    input: &Value,
    state: &mut HookState,
    projects: &mut Projects,
    session_id: &str,
    hook_event_name: &str,
) -> Option<Vec<EventV1>> {
    let path = input.get("transcript_path").and_then(Value::as_str)?;
    let mut file = std::fs::File::open(Path::new(path)).ok()?;
    let len = file.metadata().ok()?.len();
    if len < state.transcript_offset {
        // Rewritten or truncated: read it again from the start; ids keep it idempotent.
        state.transcript_offset = 0;
    }
    file.seek(SeekFrom::Start(state.transcript_offset)).ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    // Only complete lines: a line being written is read by the next hook.
    let complete = bytes
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |i| i + 1);
    let lines = &bytes[..complete];
    state.transcript_offset += complete as u64;
    // The turn is over at `Stop` and `SessionEnd`: an open response is complete. At
    // `SubagentStop` and `PreCompact` the main response may still be being written: it
    // stays open in the state for the next hook.
    let turn_over = matches!(hook_event_name, "Stop" | "SessionEnd");
    let events = match agent {
        Agent::ClaudeCode => {
            let known = std::mem::take(&mut state.transcript);
            let mut reader = TranscriptReader::resume(
                &mut state.book,
                projects,
                claude_code::Scope::AssistantOnly,
                None,
                known,
            );
            for line in lines.split(|byte| *byte == b'\n') {
                reader.line(line);
            }
            if turn_over {
                reader.flush_idle();
            }
            let (events, _skipped, known) = reader.suspend();
            state.transcript = known;
            events
        }
        Agent::Codex => {
            let known = state
                .rollout
                .take()
                .unwrap_or_else(|| codex::RolloutState::starting(Some(session_id.to_owned())));
            let mut reader = RolloutReader::resume(
                &mut state.book.occurrences,
                projects,
                codex::Scope::AssistantOnly,
                None,
                known,
            );
            for line in lines.split(|byte| *byte == b'\n') {
                reader.line(line);
            }
            let (events, _skipped, known) = reader.suspend();
            state.rollout = Some(known);
            events
        }
    };
    Some(events)
}
