//! Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) as
//! events.
//!
//! A rollout says most things twice: the model's items (`response_item`) and the UI's
//! events (`event_msg`: `user_message`, `agent_message`, `agent_reasoning`). The items
//! are read — they hold tool calls and outputs too — and the UI events are skipped as
//! duplicates. What an item becomes:
//! - `session_meta` → `session_start` (its `cwd` and git branch name the project);
//! - a `user` message → `user_message`, unless it is a context wrapper the CLI writes
//!   (`<environment_context>`, `# AGENTS.md instructions`, `<user_instructions>`, …);
//! - an `assistant` message → `assistant_message`; `developer` messages are left out;
//! - `function_call` / `custom_tool_call` → `tool_call`, their outputs → `tool_result`
//!   (`call_id` names both);
//! - `reasoning` (a summary, or only `encrypted_content`) is left out;
//! - `turn_context` changes the working directory; everything else is skipped and counted.

use std::collections::HashMap;

use memory_types::{EventKind, EventV1, TimestampV1};
use serde_json::Value;

use crate::draft::{
    Draft, MAX_MESSAGE_CHARS, MAX_TOOL_TEXT_CHARS, Occurrences, Skipped, ToolRef, before_since,
    name_key, session_key, tool_call_text,
};
use crate::projects::Projects;

/// `source` metadata and agent id of Codex's events.
pub const SOURCE: &str = "codex";
/// Event id prefix.
pub(crate) const PREFIX: &str = "cx";

/// Texts the CLI sends as user messages that the human did not type.
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
];

pub use crate::draft::Scope;

/// Reads the lines of one rollout in order.
pub struct RolloutReader<'a> {
    occurrences: &'a mut Occurrences,
    projects: &'a mut Projects,
    scope: Scope,
    since_ms: Option<u64>,
    state: RolloutState,
    events: Vec<EventV1>,
    skipped: Skipped,
}

/// What a reader knows of one rollout between reads (`--follow` reads in slices): the
/// session, its project and branch (said once, at the top), the calls whose outputs may
/// come later.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RolloutState {
    session_id: Option<String>,
    project: Option<String>,
    git_branch: String,
    tools: HashMap<String, ToolRef>,
}

impl RolloutState {
    /// A rollout not read yet, whose file name gives `session_hint` (the id at its end),
    /// used until `session_meta` names the session.
    #[must_use]
    pub fn starting(session_hint: Option<String>) -> RolloutState {
        RolloutState {
            session_id: session_hint,
            ..RolloutState::default()
        }
    }
}

impl<'a> RolloutReader<'a> {
    /// A reader for a rollout whose file name gives `session_hint` (the id at its end),
    /// used until `session_meta` names the session.
    pub fn new(
        occurrences: &'a mut Occurrences,
        projects: &'a mut Projects,
        scope: Scope,
        since_ms: Option<u64>,
        session_hint: Option<String>,
    ) -> RolloutReader<'a> {
        RolloutReader {
            occurrences,
            projects,
            scope,
            since_ms,
            state: RolloutState::starting(session_hint),
            events: Vec::new(),
            skipped: Skipped::default(),
        }
    }

    /// A reader continuing a rollout read before.
    pub fn resume(
        occurrences: &'a mut Occurrences,
        projects: &'a mut Projects,
        scope: Scope,
        since_ms: Option<u64>,
        state: RolloutState,
    ) -> RolloutReader<'a> {
        let mut reader = RolloutReader::new(occurrences, projects, scope, since_ms, None);
        reader.state = state;
        reader
    }

    /// Stops reading for now: the events, what was skipped, and the rollout's state.
    pub fn suspend(self) -> (Vec<EventV1>, Skipped, RolloutState) {
        (self.events, self.skipped, self.state)
    }

    /// Reads one line.
    pub fn line(&mut self, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            self.skipped.add("malformed_json");
            return;
        };
        let timestamp = value
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let payload = value.get("payload").unwrap_or(&Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "session_meta" => self.session_meta(payload, &timestamp),
            "turn_context" => {
                if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
                    self.state.project = Some(self.projects.of(cwd));
                }
            }
            "response_item" => self.item(payload, &timestamp),
            "event_msg" => {
                let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
                let reason = match kind {
                    "user_message" | "agent_message" | "agent_reasoning" => "duplicate_event_msg",
                    _ => "event_msg",
                };
                self.skipped.add(reason);
            }
            "" => self.skipped.add("no_type"),
            other => {
                let reason: String = format!("type:{other}").chars().take(48).collect();
                self.skipped.add(reason);
            }
        }
    }

    /// Ends the file.
    pub fn finish(self) -> (Vec<EventV1>, Skipped) {
        (self.events, self.skipped)
    }

    fn session_meta(&mut self, payload: &Value, timestamp: &str) {
        if let Some(id) = payload.get("id").and_then(Value::as_str) {
            self.state.session_id = Some(id.to_owned());
        }
        if let Some(cwd) = payload.get("cwd").and_then(Value::as_str) {
            self.state.project = Some(self.projects.of(cwd));
        }
        if let Some(branch) = payload.pointer("/git/branch").and_then(Value::as_str) {
            branch.clone_into(&mut self.state.git_branch);
        }
        if self.scope != Scope::All {
            return;
        }
        let Some(session) = self.state.session_id.clone() else {
            self.skipped.add("no_session");
            return;
        };
        let id = format!("{PREFIX}:{}:start", session_key(&session));
        let mut draft = self.draft(id, EventKind::SessionStart, timestamp);
        if let Some(version) = payload.get("cli_version").and_then(Value::as_str) {
            draft = draft.meta("cli_version", version);
        }
        self.push(draft, timestamp);
    }

    fn draft(&self, id: String, kind: EventKind, timestamp: &str) -> Draft {
        Draft::new(
            SOURCE,
            id,
            self.state.session_id.as_deref().unwrap_or(""),
            kind,
            TimestampV1::Rfc3339(timestamp.to_owned()),
        )
    }

    fn push(&mut self, draft: Draft, timestamp: &str) {
        if before_since(timestamp, self.since_ms) {
            self.skipped.add("before_since");
            return;
        }
        let draft = draft
            .project(self.state.project.as_deref())
            .meta("git_branch", self.state.git_branch.clone());
        self.events.push(draft.build());
    }

    fn item(&mut self, payload: &Value, timestamp: &str) {
        let Some(session) = self.state.session_id.clone() else {
            self.skipped.add("no_session");
            return;
        };
        if timestamp.is_empty() {
            self.skipped.add("no_timestamp");
            return;
        }
        let kind = payload.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message" => {
                let role = payload.get("role").and_then(Value::as_str).unwrap_or("");
                let text = message_text(payload);
                if text.trim().is_empty() {
                    self.skipped.add("empty_message");
                    return;
                }
                let (event_kind, letter) = match role {
                    "user"
                        if CONTEXT_PREFIXES
                            .iter()
                            .any(|p| text.trim_start().starts_with(p)) =>
                    {
                        self.skipped.add("context_message");
                        return;
                    }
                    "user" => (EventKind::UserMessage, "p"),
                    "assistant" => (EventKind::AssistantMessage, "a"),
                    _ => {
                        self.skipped.add("developer_message");
                        return;
                    }
                };
                if self.scope == Scope::AssistantOnly && event_kind != EventKind::AssistantMessage {
                    return;
                }
                let id = self.occurrences.next_id(PREFIX, &session, letter, &text);
                let mut draft = self
                    .draft(id, event_kind, timestamp)
                    .text(&text, MAX_MESSAGE_CHARS);
                if let Some(phase) = payload.get("phase").and_then(Value::as_str) {
                    draft = draft.meta("phase", phase);
                }
                self.push(draft, timestamp);
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                self.tool_call(payload, timestamp);
            }
            "function_call_output" | "custom_tool_call_output" => {
                self.tool_output(payload, timestamp);
            }
            "reasoning" => {
                let encrypted_only = payload
                    .get("summary")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty);
                self.skipped.add(if encrypted_only {
                    "reasoning_encrypted"
                } else {
                    "reasoning"
                });
            }
            other => {
                let reason: String = format!("item:{other}").chars().take(48).collect();
                self.skipped.add(reason);
            }
        }
    }

    fn tool_call(&mut self, payload: &Value, timestamp: &str) {
        if self.scope != Scope::All {
            return;
        }
        let Some(call_id) = payload.get("call_id").and_then(Value::as_str) else {
            self.skipped.add("tool_call_without_id");
            return;
        };
        let name = payload
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("shell")
            .to_owned();
        if crate::draft::is_own_tool(&name) {
            let tool = ToolRef::of(&name, &Value::Null);
            self.state.tools.insert(call_id.to_owned(), tool);
            self.skipped.add("own_tool");
            return;
        }
        // `arguments` is a JSON string (function calls); `input` is free text (custom
        // tools such as apply_patch); `action` is a local shell call's argv.
        let input = match (payload.get("arguments"), payload.get("input")) {
            (Some(Value::String(arguments)), _) => {
                serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.clone()))
            }
            (_, Some(input)) => input.clone(),
            _ => payload.get("action").cloned().unwrap_or(Value::Null),
        };
        let tool = ToolRef::of(&name, &input);
        let id = format!("{PREFIX}:{}:call", name_key(call_id));
        let draft = self
            .draft(id, EventKind::ToolCall, timestamp)
            .text(&tool_call_text(&name, &input), MAX_TOOL_TEXT_CHARS)
            .tool(&tool)
            .meta("call_id", call_id);
        self.state.tools.insert(call_id.to_owned(), tool);
        self.push(draft, timestamp);
    }

    fn tool_output(&mut self, payload: &Value, timestamp: &str) {
        if self.scope != Scope::All {
            return;
        }
        let Some(call_id) = payload.get("call_id").and_then(Value::as_str) else {
            self.skipped.add("tool_output_without_id");
            return;
        };
        let raw = match payload.get("output") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        // Older CLIs wrap the output as `{"output": …, "metadata": {"exit_code": …}}`.
        let (text, exit_code) = match serde_json::from_str::<Value>(&raw) {
            Ok(Value::Object(wrapper)) if wrapper.contains_key("output") => (
                wrapper
                    .get("output")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                wrapper
                    .get("metadata")
                    .and_then(|meta| meta.get("exit_code"))
                    .map(Value::to_string),
            ),
            _ => (raw, None),
        };
        if self
            .state
            .tools
            .get(call_id)
            .is_some_and(|tool| crate::draft::is_own_tool(&tool.name))
        {
            self.skipped.add("own_tool");
            return;
        }
        let id = format!("{PREFIX}:{}:result", name_key(call_id));
        let text = if text.trim().is_empty() {
            "(no output)".to_owned()
        } else {
            text
        };
        let mut draft = self
            .draft(id, EventKind::ToolResult, timestamp)
            .text(&text, MAX_TOOL_TEXT_CHARS)
            .meta("call_id", call_id);
        if let Some(code) = exit_code {
            draft = draft.meta("exit_code", code);
        }
        if let Some(tool) = self.state.tools.get(call_id) {
            draft = draft.tool(tool);
        }
        self.push(draft, timestamp);
    }
}

/// The text of a message item: its `input_text` / `output_text` / `text` parts.
fn message_text(payload: &Value) -> String {
    match payload.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The session id at the end of a rollout's file name (`rollout-<time>-<uuid>.jsonl`).
#[must_use]
pub fn session_from_file_name(name: &str) -> Option<String> {
    let stem = name.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    (id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4).then(|| id.to_owned())
}

/// Reads a whole rollout with a fresh reader.
pub fn read_rollout(
    bytes: &[u8],
    occurrences: &mut Occurrences,
    projects: &mut Projects,
    session_hint: Option<String>,
) -> (Vec<EventV1>, Skipped) {
    let mut reader = RolloutReader::new(occurrences, projects, Scope::All, None, session_hint);
    for line in bytes.split(|byte| *byte == b'\n') {
        reader.line(line);
    }
    reader.finish()
}
