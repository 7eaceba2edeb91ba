//! Building the events an agent's hooks and transcripts become: their ids, their text
//! (capped), their metadata, and the count of what was left out and why.
//!
//! **Ids.** The same turn reaches us twice, from a hook as it happens and from the
//! transcript when it is imported, so both paths derive the same `event_id` and the
//! store keeps one. Where the agent names the turn, its name is the id (Claude Code's
//! `message.id` for an assistant response, `tool_use_id` / Codex's `call_id` for a tool
//! call and its result). A prompt carries no name in a hook input, so a prompt's id is
//! its session, a hash of its text and which occurrence of that text in the session it
//! is (`"continue"` typed twice is two prompts).

use std::collections::{BTreeMap, HashMap};

use memory_types::{EventKind, EventV1, TimestampV1};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Longest text kept of a tool call's input or a tool result: the head and the tail of
/// what is longer. A `Read` of a generated file or a test run's full log would otherwise
/// fill the log and the indexes with text nobody searches for; the head says what it
/// was, the tail how it ended.
pub const MAX_TOOL_TEXT_CHARS: usize = 16 * 1024;

/// Longest text kept of a message (a prompt or an assistant turn): far above real turns,
/// and well below the ingest limit of one event (1 MiB) even in four-byte characters.
pub const MAX_MESSAGE_CHARS: usize = 64 * 1024;

/// Longest metadata value kept (a command, a path): what identifies it is its start.
pub const MAX_META_CHARS: usize = 4 * 1024;

/// Metadata key: which agent the event came from (`claude-code`, `codex`).
pub const SOURCE_KEY: &str = "source";
/// Metadata key: how many characters of the text were cut by the caps above.
pub const TRUNCATED_KEY: &str = "truncated_chars";

/// What was not turned into events, by reason (`malformed_json`, `type:progress`,
/// `replayed`, …), so an import can say what it skipped and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped(BTreeMap<String, u64>);

impl Skipped {
    /// Counts one more of `reason`.
    pub fn add(&mut self, reason: impl Into<String>) {
        *self.0.entry(reason.into()).or_default() += 1;
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &Skipped) {
        for (reason, count) in &other.0 {
            *self.0.entry(reason.clone()).or_default() += count;
        }
    }

    /// The count of one reason.
    #[must_use]
    pub fn count(&self, reason: &str) -> u64 {
        self.0.get(reason).copied().unwrap_or(0)
    }

    /// Every reason with its count, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0
            .iter()
            .map(|(reason, count)| (reason.as_str(), *count))
    }
}

/// The first 12 bytes of SHA-256 of `text`, in hex.
#[must_use]
pub fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..12]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// A session id short enough to sit inside an event id (≤ 128 characters): as is when
/// it is a usual uuid, else a hash of it.
#[must_use]
pub fn session_key(session_id: &str) -> String {
    if session_id.len() <= 64 {
        session_id.to_owned()
    } else {
        short_hash(session_id)
    }
}

/// An agent-named id (`msg_…`, `toolu_…`, `call_…`) made safe for an event id.
#[must_use]
pub fn name_key(name: &str) -> String {
    if name.len() <= 80 {
        name.to_owned()
    } else {
        short_hash(name)
    }
}

/// Counts the occurrences of each text per session, for prompt (and Codex assistant)
/// ids; kept by the hook state between hook runs and by an import across the files of
/// one session.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct Occurrences(HashMap<String, u32>);

impl Occurrences {
    /// The id of the next occurrence of `text` of `kind` (`p` prompt, `a` assistant) in
    /// `session`, counted: `<agent>:<session>:<kind>:<hash>:<n>`.
    pub fn next_id(&mut self, agent: &str, session: &str, kind: &str, text: &str) -> String {
        let hash = short_hash(text.trim());
        let key = format!("{session}:{kind}:{hash}");
        let count = self.0.entry(key).or_default();
        *count += 1;
        format!("{agent}:{}:{kind}:{hash}:{count}", session_key(session))
    }

    /// Whether `text` of `kind` has been seen in `session`.
    #[must_use]
    pub fn seen(&self, session: &str, kind: &str, text: &str) -> bool {
        let key = format!("{session}:{kind}:{}", short_hash(text.trim()));
        self.0.contains_key(&key)
    }
}

/// Which lines of a transcript or rollout become events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every turn (an import).
    All,
    /// Only assistant turns (the `Stop` hook: prompts and tools came by their own hooks).
    AssistantOnly,
}

/// A tool call as the events of its call and result name it: the redactor reads the
/// file path and the command to tell a secrets file's content.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolRef {
    /// The tool's name.
    pub name: String,
    /// The file its input names.
    pub file_path: Option<String>,
    /// The shell command its input runs.
    pub command: Option<String>,
}

impl ToolRef {
    /// The tool `name` called with `input`.
    #[must_use]
    pub fn of(name: &str, input: &Value) -> ToolRef {
        ToolRef {
            name: name.to_owned(),
            file_path: file_path_of(input),
            command: command_of(input),
        }
    }
}

/// Whether an RFC 3339 `timestamp` is before `since_ms` (false when either is missing
/// or unreadable: a turn is kept rather than lost).
#[must_use]
pub fn before_since(timestamp: &str, since_ms: Option<u64>) -> bool {
    let Some(since) = since_ms else {
        return false;
    };
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .is_ok_and(|time| u64::try_from(time.timestamp_millis()).unwrap_or(0) < since)
}

/// One event being built.
#[derive(Clone, Debug)]
pub struct Draft {
    event: EventV1,
}

impl Draft {
    /// An event of `kind` in `session` at `timestamp` (RFC 3339 as the agent wrote it, or
    /// epoch ms), from `source` (`claude-code`, `codex`).
    #[must_use]
    pub fn new(
        source: &str,
        event_id: String,
        session_id: &str,
        kind: EventKind,
        timestamp: TimestampV1,
    ) -> Draft {
        let mut metadata = BTreeMap::new();
        metadata.insert(SOURCE_KEY.to_owned(), source.to_owned());
        Draft {
            event: EventV1 {
                event_id: Some(event_id),
                session_id: session_id.to_owned(),
                project_id: None,
                agent_id: Some(source.to_owned()),
                timestamp,
                kind,
                role: None,
                text: None,
                metadata: Some(metadata),
            },
        }
    }

    /// Sets the text, cut to `max_chars` (head and tail) with the cut recorded.
    #[must_use]
    pub fn text(mut self, text: &str, max_chars: usize) -> Draft {
        let (kept, cut) = cap(text, max_chars);
        if cut > 0 {
            self = self.meta(TRUNCATED_KEY, cut.to_string());
        }
        self.event.text = Some(kept);
        self
    }

    /// Sets one metadata value (empty values are left out; long ones, a heredoc in a
    /// shell command say, keep their head and tail within [`MAX_META_CHARS`]).
    #[must_use]
    pub fn meta(mut self, key: &str, value: impl Into<String>) -> Draft {
        let value = value.into();
        let value = if value.chars().count() > MAX_META_CHARS {
            cap(&value, MAX_META_CHARS).0
        } else {
            value
        };
        if !value.is_empty()
            && let Some(metadata) = self.event.metadata.as_mut()
        {
            metadata.insert(key.to_owned(), value);
        }
        self
    }

    /// Names the tool call the event is part of (`tool_name`, and the file path and
    /// command the redactor reads).
    #[must_use]
    pub fn tool(mut self, tool: &ToolRef) -> Draft {
        self = self.meta("tool_name", tool.name.clone());
        if let Some(path) = &tool.file_path {
            self = self.meta(memory_redact::FILE_PATH_KEY, path.clone());
        }
        if let Some(command) = &tool.command {
            self = self.meta(memory_redact::COMMAND_KEY, command.clone());
        }
        self
    }

    /// Sets the project (a valid project id).
    #[must_use]
    pub fn project(mut self, project_id: Option<&str>) -> Draft {
        self.event.project_id = project_id.map(str::to_owned);
        self
    }

    /// Sets the agent id (a subagent's, say).
    #[must_use]
    pub fn agent(mut self, agent_id: String) -> Draft {
        self.event.agent_id = Some(agent_id);
        self
    }

    /// The finished event.
    #[must_use]
    pub fn build(self) -> EventV1 {
        self.event
    }
}

/// `text` cut to `max_chars` characters: three quarters from the head, a quarter from the
/// tail, with a marker saying how much is missing. Returns the kept text and the number
/// of characters cut.
#[must_use]
pub fn cap(text: &str, max_chars: usize) -> (String, usize) {
    let total = text.chars().count();
    if total <= max_chars {
        return (text.to_owned(), 0);
    }
    let head = max_chars * 3 / 4;
    let tail = max_chars - head;
    let cut = total - head - tail;
    let head_text: String = text.chars().take(head).collect();
    let tail_text: String = text.chars().skip(total - tail).collect();
    (
        format!("{head_text}\n[… {cut} characters not kept …]\n{tail_text}"),
        cut,
    )
}

/// Whether `tool` is one of agent-memory's own MCP tools (`mcp__agent-memory__search`,
/// `mcp__plugin_agent-memory_agent-memory__search`, …): its calls and results are what
/// the memory already holds, and storing them would feed every search back into the
/// memory.
#[must_use]
pub fn is_own_tool(tool: &str) -> bool {
    tool.starts_with("mcp__") && (tool.contains("agent-memory") || tool.contains("agent_memory"))
}

/// A tool call's text: what a reader searches for — the command for a shell, the path
/// for a file tool, else the input as compact JSON — after the tool's name.
#[must_use]
pub fn tool_call_text(name: &str, input: &Value) -> String {
    if let Some(command) = command_of(input) {
        return format!("{name}: {command}");
    }
    match input {
        Value::String(text) => format!("{name}: {text}"),
        Value::Null => name.to_owned(),
        other => format!("{name}: {other}"),
    }
}

/// The shell command in a tool input: `command` (a string, or an argv whose last word is
/// the script of `bash -lc`), or Codex's `cmd`.
#[must_use]
pub fn command_of(input: &Value) -> Option<String> {
    let command = input.get("command").or_else(|| input.get("cmd"))?;
    match command {
        Value::String(text) => Some(text.clone()),
        Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
            match words.as_slice() {
                [shell, flag, script]
                    if flag.starts_with('-')
                        && flag.ends_with('c')
                        && (shell.ends_with("sh") || shell.ends_with("bash")) =>
                {
                    Some((*script).to_owned())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

/// The file a tool input names (`file_path`, `path`, `notebook_path`).
#[must_use]
pub fn file_path_of(input: &Value) -> Option<String> {
    ["file_path", "path", "notebook_path"]
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_text_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(100), "z".repeat(100));
        let (kept, cut) = cap(&text, 40);
        assert_eq!(cut, 160);
        assert!(kept.starts_with(&"a".repeat(30)));
        assert!(kept.ends_with(&"z".repeat(10)));
        assert!(kept.contains("160 characters not kept"));
        assert_eq!(cap("short", 40), ("short".to_owned(), 0));
    }

    #[test]
    fn occurrences_number_repeated_prompts() {
        let mut seen = Occurrences::default();
        let first = seen.next_id("cc", "s1", "p", "continue");
        let second = seen.next_id("cc", "s1", "p", " continue\n");
        let other_session = seen.next_id("cc", "s2", "p", "continue");
        assert!(first.ends_with(":1") && second.ends_with(":2"));
        assert_eq!(first[..first.len() - 2], second[..second.len() - 2]);
        assert!(other_session.ends_with(":1"));
        assert!(seen.seen("s1", "p", "continue") && !seen.seen("s1", "a", "continue"));
        assert!(first.len() <= 128);
    }

    #[test]
    fn our_own_tools_are_recognised() {
        assert!(is_own_tool("mcp__agent-memory__search"));
        assert!(is_own_tool(
            "mcp__plugin_agent-memory_agent-memory__get_events"
        ));
        assert!(!is_own_tool("mcp__github__search"));
        assert!(!is_own_tool("agent-memory"));
    }

    #[test]
    fn tool_text_names_the_command_or_the_input() {
        let bash = json!({"command": "npm test", "description": "run"});
        assert_eq!(tool_call_text("Bash", &bash), "Bash: npm test");
        let argv = json!({"command": ["bash", "-lc", "ls -la"]});
        assert_eq!(command_of(&argv).as_deref(), Some("ls -la"));
        let edit = json!({"file_path": "/a.ts"});
        assert_eq!(
            tool_call_text("Read", &edit),
            r#"Read: {"file_path":"/a.ts"}"#
        );
        assert_eq!(file_path_of(&edit).as_deref(), Some("/a.ts"));
    }
}
