//! Claude Code transcripts (`~/.claude/projects/<dir>/<session>.jsonl` and its subagent
//! files) as events.
//!
//! What a transcript line becomes:
//! - a human prompt (`type: user`, content a string or text blocks, not `isMeta`, not
//!   `isCompactSummary`) → `user_message`, the first line of a session also a
//!   `session_start`;
//! - `tool_result` blocks of a user line → `tool_result` (with the call's tool name,
//!   `file_path` and `command`, so a read `.env` is redacted whole);
//! - the lines of one API response (they share `message.id`, one content block per line)
//!   → one `assistant_message` of its text blocks, then a `tool_call` per `tool_use`;
//!   thinking is left out;
//! - subagent lines (`isSidechain`) the same, with the subagent as `agent_id`; a
//!   subagent file that replays its parent's prompt or response (side questions,
//!   compaction) does not store them again;
//! - everything else (`summary`, `file-history-snapshot`, `progress`, `system`,
//!   `attachment`, …, unknown types, malformed JSON) is skipped and counted by reason.

use std::collections::{HashMap, HashSet};

use memory_types::{EventKind, EventV1, TimestampV1};
use serde_json::Value;

use crate::draft::{
    Draft, MAX_MESSAGE_CHARS, MAX_TOOL_TEXT_CHARS, Occurrences, Skipped, ToolRef, before_since,
    name_key, session_key, tool_call_text,
};
use crate::projects::Projects;

/// `source` metadata and agent id of Claude Code's events.
pub const SOURCE: &str = "claude-code";
/// Event id prefix.
pub(crate) const PREFIX: &str = "cc";

/// What a session's files have shown so far: shared by every file of an import (a
/// subagent file replays its parent's) and kept by the hooks between runs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SessionBook {
    /// Prompt occurrences, for prompt ids.
    pub occurrences: Occurrences,
    /// Assistant responses (`message.id`) already turned into events.
    #[serde(default)]
    pub responses: HashSet<String>,
    /// Sessions whose `session_start` was emitted.
    #[serde(default)]
    pub started: HashSet<String>,
}

pub use crate::draft::Scope;

/// Reads the lines of one transcript file; feed it lines in order, then
/// [`TranscriptReader::finish`].
pub struct TranscriptReader<'a> {
    book: &'a mut SessionBook,
    projects: &'a mut Projects,
    scope: Scope,
    since_ms: Option<u64>,
    events: Vec<EventV1>,
    skipped: Skipped,
    state: FileState,
}

/// What a reader knows of one file between reads (`--follow` reads a file in slices):
/// the tool calls whose results may come later, the last timestamp, the response still
/// being written, and the response flushed because the file went still, whose late lines
/// are its continuation rather than a replay.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FileState {
    #[serde(default)]
    pending: Option<Response>,
    #[serde(default)]
    tools: HashMap<String, ToolRef>,
    #[serde(default)]
    last_timestamp: Option<String>,
    #[serde(default)]
    idle_flushed: Option<String>,
}

/// The lines of one API response so far.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Response {
    message_id: String,
    /// What its assistant message's id is made of: the message id, or for the rest of a
    /// response flushed early, the message id and the first late line's uuid.
    event_key: String,
    context: LineContext,
    text: Vec<String>,
    tool_uses: Vec<Value>,
}

/// What every event of a line carries.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct LineContext {
    session_id: String,
    timestamp: String,
    project: Option<String>,
    agent_id: Option<String>,
    sidechain: bool,
    uuid: String,
    git_branch: String,
    model: String,
}

impl<'a> TranscriptReader<'a> {
    /// A reader adding to `book`, naming projects through `projects`; `since_ms` leaves
    /// out events before it.
    pub fn new(
        book: &'a mut SessionBook,
        projects: &'a mut Projects,
        scope: Scope,
        since_ms: Option<u64>,
    ) -> TranscriptReader<'a> {
        TranscriptReader {
            book,
            projects,
            scope,
            since_ms,
            events: Vec::new(),
            skipped: Skipped::default(),
            state: FileState::default(),
        }
    }

    /// A reader continuing a file read before, with what it knew of it.
    pub fn resume(
        book: &'a mut SessionBook,
        projects: &'a mut Projects,
        scope: Scope,
        since_ms: Option<u64>,
        state: FileState,
    ) -> TranscriptReader<'a> {
        let mut reader = TranscriptReader::new(book, projects, scope, since_ms);
        reader.state = state;
        reader
    }

    /// Stops reading for now: the events so far, what was skipped, and the file's state
    /// for [`TranscriptReader::resume`] (a response still open stays open).
    pub fn suspend(self) -> (Vec<EventV1>, Skipped, FileState) {
        (self.events, self.skipped, self.state)
    }

    /// The file has been still: the open response is taken as complete; lines of it that
    /// come later become its continuation, not a replay.
    pub fn flush_idle(&mut self) {
        let flushed = self
            .state
            .pending
            .as_ref()
            .map(|pending| pending.message_id.clone());
        self.flush();
        self.state.idle_flushed = flushed;
    }

    /// Reads one line (without its newline).
    pub fn line(&mut self, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            self.skipped.add("malformed_json");
            return;
        };
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "user" => {
                self.flush();
                self.user(&value);
            }
            "assistant" => self.assistant(&value),
            "" => self.skipped.add("no_type"),
            // Known bookkeeping lines: summaries of other sessions, snapshots, progress,
            // queue operations, titles, modes, links, attachments, system notices.
            other => {
                // The line's own kind, where it has one: `system` subtypes, attachment and
                // progress types, queue operations.
                let sub = value
                    .get("subtype")
                    .or_else(|| value.pointer("/attachment/type"))
                    .or_else(|| value.pointer("/data/type"))
                    .or_else(|| value.get("operation"))
                    .and_then(Value::as_str)
                    .map(|sub| format!(":{sub}"))
                    .unwrap_or_default();
                let reason: String = format!("type:{other}{sub}").chars().take(48).collect();
                self.skipped.add(reason);
            }
        }
    }

    /// Ends the file: the last response is complete. Returns the events and what was
    /// skipped.
    pub fn finish(mut self) -> (Vec<EventV1>, Skipped) {
        self.flush();
        (self.events, self.skipped)
    }

    fn context(&mut self, value: &Value) -> Option<LineContext> {
        let Some(session_id) = value.get("sessionId").and_then(Value::as_str) else {
            self.skipped.add("no_session");
            return None;
        };
        let timestamp = match value.get("timestamp").and_then(Value::as_str) {
            Some(timestamp) => timestamp.to_owned(),
            None => match &self.state.last_timestamp {
                Some(previous) => previous.clone(),
                None => {
                    self.skipped.add("no_timestamp");
                    return None;
                }
            },
        };
        self.state.last_timestamp = Some(timestamp.clone());
        let project = value
            .get("cwd")
            .and_then(Value::as_str)
            .map(|cwd| self.projects.of(cwd))
            .or_else(|| self.projects.last());
        let sidechain = value
            .get("isSidechain")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        // A subagent is its own agent; v1.0.x wrote its lines inline without an id.
        let agent_id = sidechain.then(|| {
            let agent = value
                .get("agentId")
                .and_then(Value::as_str)
                .unwrap_or("subagent");
            format!("{SOURCE}/{}", name_key(agent))
        });
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        Some(LineContext {
            session_id: session_id.to_owned(),
            timestamp,
            project,
            agent_id,
            sidechain,
            uuid: text("uuid"),
            git_branch: text("gitBranch"),
            model: value
                .pointer("/message/model")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        })
    }

    fn push(&mut self, context: &LineContext, draft: Draft) {
        if before_since(&context.timestamp, self.since_ms) {
            self.skipped.add("before_since");
            return;
        }
        let mut draft = draft
            .project(context.project.as_deref())
            .meta("transcript_uuid", context.uuid.clone())
            .meta("git_branch", context.git_branch.clone());
        if context.sidechain {
            draft = draft.meta("sidechain", "true");
        }
        if let Some(agent) = &context.agent_id {
            draft = draft.agent(agent.clone());
        }
        self.events.push(draft.build());
    }

    fn draft(&self, id: String, context: &LineContext, kind: EventKind) -> Draft {
        Draft::new(
            SOURCE,
            id,
            &context.session_id,
            kind,
            TimestampV1::Rfc3339(context.timestamp.clone()),
        )
    }

    fn start_session(&mut self, context: &LineContext) {
        if self.scope != Scope::All || context.sidechain {
            return;
        }
        if self.book.started.insert(context.session_id.clone()) {
            let id = format!("{PREFIX}:{}:start", session_key(&context.session_id));
            let draft = self.draft(id, context, EventKind::SessionStart);
            self.push(context, draft);
        }
    }

    fn user(&mut self, value: &Value) {
        let Some(context) = self.context(value) else {
            return;
        };
        if flag(value, "isMeta") {
            self.skipped.add("meta");
            return;
        }
        if flag(value, "isCompactSummary") {
            // The compaction's summary of turns already stored.
            self.skipped.add("compact_summary");
            return;
        }
        let content = value.pointer("/message/content");
        let mut prompt = Vec::new();
        match content {
            Some(Value::String(text)) => prompt.push(text.clone()),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(text) = block.get("text").and_then(Value::as_str) {
                                prompt.push(text.to_owned());
                            }
                        }
                        Some("tool_result") => self.tool_result(&context, block),
                        Some("image") => self.skipped.add("image"),
                        _ => self.skipped.add("block:other"),
                    }
                }
            }
            _ => self.skipped.add("no_content"),
        }
        let text = prompt.join("\n");
        if text.trim().is_empty() {
            return;
        }
        // A custom slash command is written wrapped; the hook saw it as typed.
        let text = slash_command(&text).unwrap_or(text);
        if text
            .trim_start()
            .starts_with("[Request interrupted by user")
        {
            // Claude Code's marker of an interrupted turn, written as a user line.
            self.skipped.add("interrupt_marker");
            return;
        }
        if self.scope != Scope::All {
            return;
        }
        self.start_session(&context);
        let id = if context.sidechain {
            // A subagent's prompt, or a parent prompt replayed by a forked subagent.
            if self.book.occurrences.seen(&context.session_id, "p", &text) {
                self.skipped.add("replayed");
                return;
            }
            format!("{PREFIX}:{}", name_key(&context.uuid))
        } else {
            self.book
                .occurrences
                .next_id(PREFIX, &context.session_id, "p", &text)
        };
        let draft = self
            .draft(id, &context, EventKind::UserMessage)
            .text(&text, MAX_MESSAGE_CHARS);
        self.push(&context, draft);
    }

    fn tool_result(&mut self, context: &LineContext, block: &Value) {
        if self.scope != Scope::All {
            return;
        }
        let Some(tool_use_id) = block.get("tool_use_id").and_then(Value::as_str) else {
            self.skipped.add("tool_result_without_id");
            return;
        };
        let text = match block.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|part| match part.get("type").and_then(Value::as_str) {
                    Some("text") => part
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    Some("image") => "[image]".to_owned(),
                    _ => String::new(),
                })
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if self
            .state
            .tools
            .get(tool_use_id)
            .is_some_and(|tool| crate::draft::is_own_tool(&tool.name))
        {
            self.skipped.add("own_tool");
            return;
        }
        let id = format!("{PREFIX}:{}:result", name_key(tool_use_id));
        let mut draft = self
            .draft(id, context, EventKind::ToolResult)
            .text(&text, MAX_TOOL_TEXT_CHARS)
            .meta("tool_use_id", tool_use_id);
        if block.get("is_error").and_then(Value::as_bool) == Some(true) {
            draft = draft.meta("is_error", "true");
        }
        if let Some(tool) = self.state.tools.get(tool_use_id) {
            draft = draft.tool(tool);
        }
        if text.is_empty() {
            // A result with no text (an empty file, a silent command) still closes the
            // call: keep it with a marker so the event is valid.
            draft = draft.text("(no output)", MAX_TOOL_TEXT_CHARS);
        }
        self.push(context, draft);
    }

    fn assistant(&mut self, value: &Value) {
        let Some(context) = self.context(value) else {
            return;
        };
        let message_id = value
            .pointer("/message/id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| context.uuid.clone());
        if self
            .state
            .pending
            .as_ref()
            .is_some_and(|pending| pending.message_id != message_id)
        {
            self.flush();
        }
        if self.state.pending.is_none() {
            let mut event_key = message_id.clone();
            if self.book.responses.contains(&message_id) {
                if self.state.idle_flushed.as_deref() == Some(message_id.as_str()) {
                    // The rest of a response flushed when the file went still: its own
                    // events, after what was already stored.
                    event_key = format!("{message_id}+{}", context.uuid);
                } else {
                    // Replayed by a forked subagent, or read again by a later hook.
                    self.skipped.add("replayed");
                    return;
                }
            }
            self.state.pending = Some(Response {
                message_id: message_id.clone(),
                event_key,
                context: context.clone(),
                text: Vec::new(),
                tool_uses: Vec::new(),
            });
        }
        let Some(blocks) = value.pointer("/message/content").and_then(Value::as_array) else {
            self.skipped.add("no_content");
            return;
        };
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let (Some(text), Some(pending)) = (
                        block.get("text").and_then(Value::as_str),
                        &mut self.state.pending,
                    ) {
                        pending.text.push(text.to_owned());
                    }
                }
                Some("tool_use") => {
                    let tool = ToolRef::of(
                        block.get("name").and_then(Value::as_str).unwrap_or("tool"),
                        block.get("input").unwrap_or(&Value::Null),
                    );
                    // Only an import reads results; a hook's state stays small.
                    if self.scope == Scope::All
                        && let Some(id) = block.get("id").and_then(Value::as_str)
                    {
                        self.state.tools.insert(id.to_owned(), tool);
                    }
                    if let Some(pending) = &mut self.state.pending {
                        pending.tool_uses.push(block.clone());
                    }
                }
                Some("thinking" | "redacted_thinking") => self.skipped.add("thinking"),
                _ => self.skipped.add("block:other"),
            }
        }
    }

    /// Turns the pending response into events.
    fn flush(&mut self) {
        let Some(response) = self.state.pending.take() else {
            return;
        };
        self.state.idle_flushed = None;
        self.book.responses.insert(response.message_id.clone());
        let context = response.context;
        self.start_session(&context);
        let text = response.text.join("\n");
        if !text.trim().is_empty() {
            let id = format!("{PREFIX}:{}", name_key(&response.event_key));
            let draft = self
                .draft(id, &context, EventKind::AssistantMessage)
                .text(&text, MAX_MESSAGE_CHARS)
                .meta("model", context.model.clone());
            self.push(&context, draft);
        }
        if self.scope != Scope::All {
            return;
        }
        for block in response.tool_uses {
            let Some(tool_use_id) = block.get("id").and_then(Value::as_str) else {
                self.skipped.add("tool_use_without_id");
                continue;
            };
            let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
            if crate::draft::is_own_tool(name) {
                self.skipped.add("own_tool");
                continue;
            }
            let input = block.get("input").cloned().unwrap_or(Value::Null);
            let id = format!("{PREFIX}:{}:call", name_key(tool_use_id));
            let draft = self
                .draft(id, &context, EventKind::ToolCall)
                .text(&tool_call_text(name, &input), MAX_TOOL_TEXT_CHARS)
                .tool(&ToolRef::of(name, &input))
                .meta("tool_use_id", tool_use_id);
            self.push(&context, draft);
        }
    }
}

/// A slash command as the user typed it (`/review src/cart`), from the form the
/// transcript stores it in (`<command-message>…</command-message>
/// <command-name>/review</command-name> <command-args>src/cart</command-args>`), so the
/// prompt's id is the one its `UserPromptSubmit` hook gave.
fn slash_command(text: &str) -> Option<String> {
    let between = |open: &str, close: &str| -> Option<&str> {
        let start = text.find(open)? + open.len();
        let end = text[start..].find(close)? + start;
        Some(text[start..end].trim())
    };
    let name = between("<command-name>", "</command-name>")?;
    let args = between("<command-args>", "</command-args>").unwrap_or("");
    Some(format!("{name} {args}").trim().to_owned())
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Reads a whole transcript (`bytes`) with a fresh reader: a convenience for tests and
/// one-shot callers.
pub fn read_transcript(
    bytes: &[u8],
    book: &mut SessionBook,
    projects: &mut Projects,
    scope: Scope,
) -> (Vec<EventV1>, Skipped) {
    let mut reader = TranscriptReader::new(book, projects, scope, None);
    for line in bytes.split(|byte| *byte == b'\n') {
        reader.line(line);
    }
    reader.finish()
}
