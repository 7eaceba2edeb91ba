//! The transcript and rollout readers and the hook conversion against the fixtures
//! (`tests/fixtures`, described with their counts in its README and
//! `expected-counts.json`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use memory_agents::claude_code::{self, SessionBook, TranscriptReader};
use memory_agents::codex;
use memory_agents::{Agent, HookState, Occurrences, Projects, Skipped, hook_events};
use memory_types::{EventKind, EventV1};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixtures().join("expected-counts.json")).expect("fixture");
    serde_json::from_str(&text).expect("fixture")
}

fn count(events: &[EventV1], kind: EventKind) -> u64 {
    events.iter().filter(|event| event.kind == kind).count() as u64
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Reads one Claude Code file with `book`, returning its events, what it skipped and
/// how many responses it took.
fn read_claude(path: &Path, book: &mut SessionBook) -> (Vec<EventV1>, Skipped, u64) {
    let bytes = std::fs::read(path).expect("fixture");
    let before = book.responses.len();
    let mut projects = Projects::new(None);
    let mut reader = TranscriptReader::new(book, &mut projects, claude_code::Scope::All, None);
    for line in bytes.split(|byte| *byte == b'\n') {
        reader.line(line);
    }
    let (events, skipped) = reader.finish();
    let responses = (book.responses.len() - before) as u64;
    (events, skipped, responses)
}

/// The Claude Code files in the order an import reads them: per project directory, the
/// sessions first, then their subagent files.
fn claude_files() -> Vec<(String, PathBuf)> {
    let root = fixtures().join("claude-code/projects");
    let expected = expected();
    let mut files: Vec<(String, PathBuf)> = expected
        .as_object()
        .expect("fixture")
        .keys()
        .filter(|key| key.starts_with("claude-code/"))
        .map(|key| {
            let relative = key.trim_start_matches("claude-code/projects/");
            (key.clone(), root.join(relative))
        })
        .collect();
    files.sort_by_key(|(_, path)| {
        let name = path
            .file_name()
            .expect("fixture")
            .to_string_lossy()
            .into_owned();
        let subagent = name.starts_with("agent-");
        (path.parent().map(Path::to_path_buf), subagent, path.clone())
    });
    files
}

#[test]
fn claude_code_transcripts_become_the_turns_they_hold() {
    let expected = expected();
    let mut books: BTreeMap<PathBuf, SessionBook> = BTreeMap::new();
    let mut all_ids = HashSet::new();
    for (key, path) in claude_files() {
        let want = &expected[key.as_str()];
        // One book per project directory: subagent files replay their parent's turns.
        let project_dir = path
            .ancestors()
            .find(|dir| dir.parent().is_some_and(|p| p.ends_with("projects")))
            .expect("fixture")
            .to_path_buf();
        let book = books.entry(project_dir).or_default();
        let (events, skipped, responses) = read_claude(&path, book);
        let name = path
            .file_name()
            .expect("fixture")
            .to_string_lossy()
            .into_owned();
        assert_eq!(
            skipped.count("malformed_json"),
            number(want, "malformed"),
            "{name}"
        );
        assert_eq!(
            count(&events, EventKind::ToolCall),
            number(want, "assistant_block:tool_use"),
            "{name}: one tool_call per tool_use block"
        );
        assert_eq!(
            count(&events, EventKind::ToolResult),
            number(want, "tool_result_blocks"),
            "{name}: one tool_result per tool_result block"
        );
        let sidechain_file = number(want, "sidechain_lines") == number(want, "lines");
        if sidechain_file {
            assert_eq!(count(&events, EventKind::SessionStart), 0, "{name}");
        } else {
            let sessions = want["session_ids"].as_array().expect("fixture").len() as u64;
            assert_eq!(count(&events, EventKind::SessionStart), sessions, "{name}");
        }
        // A response replayed from the parent (same message.id) is not taken again.
        let replayed = skipped.count("replayed");
        let assistant = number(want, "assistant_responses");
        if name.starts_with("agent-aside_question") || name.starts_with("agent-acompact") {
            assert_eq!(
                responses,
                assistant - 1,
                "{name}: the parent's response is replayed"
            );
            assert!(
                replayed >= 2,
                "{name}: replayed prompt and response skipped"
            );
        } else {
            assert_eq!(responses, assistant, "{name}");
        }
        let with_text = count(&events, EventKind::AssistantMessage);
        assert!(with_text <= responses, "{name}");
        // Human prompts, plus the subagents' own prompts.
        let prompts = count(&events, EventKind::UserMessage);
        let human = number(want, "human_prompts");
        let sidechain_text = number(want, "sidechain_user_text");
        let replayed_prompts = u64::from(
            name.starts_with("agent-aside_question") || name.starts_with("agent-acompact"),
        );
        assert_eq!(prompts, human + sidechain_text - replayed_prompts, "{name}");
        for event in &events {
            assert!(
                event.text.is_some() || !event.kind.requires_text(),
                "{name}"
            );
            let id = event.event_id.clone().expect("fixture");
            assert!(id.len() <= 128, "{id}");
            assert!(all_ids.insert(id.clone()), "{name}: id {id} given twice");
            let metadata = event.metadata.as_ref().expect("fixture");
            assert_eq!(metadata["source"], "claude-code");
            if metadata.get("sidechain").is_some() {
                assert!(
                    event
                        .agent_id
                        .as_deref()
                        .expect("fixture")
                        .starts_with("claude-code/")
                );
            }
        }
        // Bookkeeping lines are skipped by type, each counted.
        if let Some(object) = want.as_object() {
            for (field, value) in object {
                if let Some(kind) = field.strip_prefix("type:")
                    && kind != "user"
                    && kind != "assistant"
                {
                    assert_eq!(
                        skipped.count(&format!("type:{kind}")),
                        value.as_u64().expect("fixture"),
                        "{name}: {field}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_multi_line_response_is_one_assistant_message() {
    let path = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");
    let mut book = SessionBook::default();
    let (events, skipped, _) = read_claude(&path, &mut book);
    let first = events
        .iter()
        .find(|event| event.event_id.as_deref() == Some("cc:msg_010To0wanoSlYgO0WKVNcPHb"))
        .expect("the three-line response is one event");
    assert_eq!(first.kind, EventKind::AssistantMessage);
    assert_eq!(skipped.count("thinking"), 1, "thinking is left out");
    // Its tool call follows it, with the call's input as text.
    let position = events
        .iter()
        .position(|event| std::ptr::eq(event, first))
        .expect("fixture");
    assert_eq!(events[position + 1].kind, EventKind::ToolCall);
    // The error result keeps its flag; the screenshot's image is a marker, not base64.
    assert!(events.iter().any(|event| {
        event
            .metadata
            .as_ref()
            .is_some_and(|meta| meta.get("is_error").is_some())
    }));
    assert!(
        events
            .iter()
            .all(|event| !event.text.as_deref().unwrap_or("").contains("iVBORw0KGgo"))
    );
    assert!(
        events
            .iter()
            .any(|event| event.text.as_deref().unwrap_or("").contains("[image]"))
    );
}

#[test]
fn reading_again_gives_the_same_ids() {
    let read_all = || {
        let mut books: BTreeMap<PathBuf, SessionBook> = BTreeMap::new();
        let mut ids = Vec::new();
        for (_, path) in claude_files() {
            let book = books
                .entry(path.parent().expect("fixture").to_path_buf())
                .or_default();
            let (events, _, _) = read_claude(&path, book);
            ids.extend(
                events
                    .into_iter()
                    .map(|event| event.event_id.expect("fixture")),
            );
        }
        ids
    };
    assert_eq!(read_all(), read_all());
}

fn rollouts() -> Vec<PathBuf> {
    let dir = fixtures().join("codex/sessions/2026/01/15");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixture")
        .map(|entry| entry.expect("fixture").path())
        .collect();
    files.sort();
    files
}

fn read_codex(path: &Path) -> (Vec<EventV1>, Skipped) {
    let bytes = std::fs::read(path).expect("fixture");
    let mut occurrences = Occurrences::default();
    let mut projects = Projects::new(None);
    let name = path
        .file_name()
        .expect("fixture")
        .to_string_lossy()
        .into_owned();
    codex::read_rollout(
        &bytes,
        &mut occurrences,
        &mut projects,
        codex::session_from_file_name(&name),
    )
}

#[test]
fn codex_rollouts_store_each_turn_once() {
    let expected = expected();
    for path in rollouts() {
        let name = path
            .file_name()
            .expect("fixture")
            .to_string_lossy()
            .into_owned();
        let want = &expected[format!("codex/sessions/2026/01/15/{name}").as_str()];
        let (events, skipped) = read_codex(&path);
        assert_eq!(count(&events, EventKind::SessionStart), 1, "{name}");
        assert_eq!(
            count(&events, EventKind::UserMessage),
            number(want, "type:event_msg:user_message"),
            "{name}: real prompts, not the context wrappers"
        );
        assert_eq!(
            count(&events, EventKind::AssistantMessage),
            number(want, "assistant_messages"),
            "{name}: once, not again from event_msg"
        );
        assert_eq!(
            count(&events, EventKind::ToolCall),
            number(want, "tool_calls"),
            "{name}"
        );
        assert_eq!(
            count(&events, EventKind::ToolResult),
            number(want, "tool_calls"),
            "{name}"
        );
        assert_eq!(
            skipped.count("context_message"),
            number(want, "user_context_messages"),
            "{name}"
        );
        assert_eq!(
            skipped.count("developer_message"),
            number(want, "developer_messages"),
            "{name}"
        );
        assert_eq!(
            skipped.count("reasoning_encrypted"),
            number(want, "reasoning_encrypted_only"),
            "{name}"
        );
        let session = codex::session_from_file_name(&name).expect("fixture");
        for event in &events {
            assert_eq!(event.session_id, session, "{name}");
            assert_eq!(event.project_id.as_deref(), Some("webapp"), "{name}");
            assert!(
                !event.text.as_deref().unwrap_or("").contains("gAAAAA"),
                "{name}"
            );
        }
    }
}

#[test]
fn codex_shell_calls_read_as_commands() {
    let path = &rollouts()[0];
    let (events, _) = read_codex(path);
    let call = events
        .iter()
        .find(|e| e.kind == EventKind::ToolCall)
        .expect("fixture");
    assert!(
        call.text
            .as_deref()
            .expect("fixture")
            .starts_with("shell: for i in 1 2 3")
    );
    let result = events
        .iter()
        .find(|e| e.kind == EventKind::ToolResult)
        .expect("fixture");
    let meta = result.metadata.as_ref().expect("fixture");
    assert_eq!(meta["exit_code"], "1");
    assert_eq!(meta["tool_name"], "shell");
    assert!(
        result.text.as_deref().expect("fixture").starts_with('×'),
        "the output, unwrapped"
    );
}

fn hook_input(agent: &str, name: &str) -> Value {
    let path = fixtures().join(format!("hooks/{agent}/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture")
}

#[test]
fn claude_code_hooks_give_the_ids_an_import_gives() {
    let transcript = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");
    let mut book = SessionBook::default();
    let (imported, _, _) = read_claude(&transcript, &mut book);
    let imported_ids: HashSet<String> = imported
        .iter()
        .map(|e| e.event_id.clone().expect("fixture"))
        .collect();

    let mut state = HookState::default();
    let mut projects = Projects::new(None);
    let mut run = |input: Value, state: &mut HookState| {
        hook_events(
            Agent::ClaudeCode,
            &input,
            state,
            &mut projects,
            1_768_467_600_000,
        )
        .expect("fixture")
    };
    let start = run(hook_input("claude-code", "SessionStart"), &mut state);
    assert_eq!(start.events.len(), 1);
    assert_eq!(start.events[0].kind, EventKind::SessionStart);
    assert!(imported_ids.contains(start.events[0].event_id.as_deref().expect("fixture")));

    let prompt = run(hook_input("claude-code", "UserPromptSubmit"), &mut state);
    assert_eq!(prompt.events.len(), 1);
    assert!(
        imported_ids.contains(prompt.events[0].event_id.as_deref().expect("fixture")),
        "the hook's prompt id is the import's"
    );

    let tool = run(hook_input("claude-code", "PostToolUse"), &mut state);
    let kinds: Vec<EventKind> = tool.events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventKind::ToolCall, EventKind::ToolResult]);
    assert_eq!(
        tool.events[0].event_id.as_deref(),
        Some("cc:toolu_01gUlZQvHSpfL9L74XSb4Fpw:call")
    );
    assert!(
        tool.events[1]
            .text
            .as_deref()
            .expect("fixture")
            .contains("3 passed")
    );

    // Stop reads the assistant turns from the transcript, with the import's ids, once.
    let mut stop = hook_input("claude-code", "Stop");
    stop["transcript_path"] = Value::String(transcript.to_string_lossy().into_owned());
    let first = run(stop.clone(), &mut state);
    let responses = imported
        .iter()
        .filter(|e| e.kind == EventKind::AssistantMessage)
        .count();
    assert_eq!(first.events.len(), responses);
    for event in &first.events {
        assert_eq!(event.kind, EventKind::AssistantMessage);
        assert!(imported_ids.contains(event.event_id.as_deref().expect("fixture")));
    }
    let again = run(stop, &mut state);
    assert!(again.events.is_empty(), "nothing new since the last hook");

    let end = run(hook_input("claude-code", "SessionEnd"), &mut state);
    assert_eq!(
        end.events.last().expect("fixture").kind,
        EventKind::SessionEnd
    );
    let compact = run(hook_input("claude-code", "PreCompact"), &mut state);
    assert_eq!(
        compact.events.last().expect("fixture").kind,
        EventKind::Note
    );
}

#[test]
fn hook_inputs_with_few_fields_still_work_and_bad_ones_are_refused() {
    let mut state = HookState::default();
    let mut projects = Projects::new(None);
    let minimal = hook_input("claude-code", "minimal");
    let out =
        hook_events(Agent::ClaudeCode, &minimal, &mut state, &mut projects, 1).expect("fixture");
    assert!(
        out.events.is_empty(),
        "a Stop with no transcript and no message: nothing"
    );
    let old = hook_input("claude-code", "UserPromptSubmit-mid2025-no-permission-mode");
    let out = hook_events(Agent::ClaudeCode, &old, &mut state, &mut projects, 1).expect("fixture");
    assert_eq!(out.events.len(), 1);
    assert_eq!(out.project.as_deref(), Some("webapp"));
    let stop = hook_input("codex", "Stop");
    let mut stop_without_transcript = stop.clone();
    stop_without_transcript["transcript_path"] = Value::String("/nonexistent.jsonl".into());
    let out = hook_events(
        Agent::Codex,
        &stop_without_transcript,
        &mut state,
        &mut projects,
        1,
    )
    .expect("fixture");
    assert_eq!(out.events.len(), 1, "falls back to last_assistant_message");
    assert_eq!(out.events[0].kind, EventKind::AssistantMessage);
    for bad in [
        serde_json::json!({"hook_event_name": "Stop"}),
        serde_json::json!({"session_id": "s"}),
        serde_json::json!([1, 2]),
    ] {
        assert!(hook_events(Agent::ClaudeCode, &bad, &mut state, &mut projects, 1).is_err());
    }
}

#[test]
fn a_read_secrets_file_carries_its_path_for_redaction() {
    let mut state = HookState::default();
    let mut projects = Projects::new(None);
    let input = hook_input("claude-code", "PostToolUse-Read-dotenv");
    let out =
        hook_events(Agent::ClaudeCode, &input, &mut state, &mut projects, 1).expect("fixture");
    let result = &out.events[1];
    assert_eq!(result.kind, EventKind::ToolResult);
    assert_eq!(
        result.metadata.as_ref().expect("fixture")["file_path"],
        "/home/dev/webapp/.env"
    );
    assert!(memory_redact::is_secrets_file("/home/dev/webapp/.env"));
}

#[test]
fn codex_hooks_and_notify_match_the_rollout() {
    let rollout = rollouts()
        .into_iter()
        .find(|path| path.to_string_lossy().contains("019bc1d9"))
        .expect("fixture");
    let (imported, _) = read_codex(&rollout);
    let imported_ids: HashSet<String> = imported
        .iter()
        .map(|e| e.event_id.clone().expect("fixture"))
        .collect();
    let mut state = HookState::default();
    let mut projects = Projects::new(None);
    let prompt = hook_input("codex", "UserPromptSubmit");
    let out = hook_events(Agent::Codex, &prompt, &mut state, &mut projects, 1).expect("fixture");
    assert!(imported_ids.contains(out.events[0].event_id.as_deref().expect("fixture")));
    let mut stop = hook_input("codex", "Stop");
    stop["transcript_path"] = Value::String(rollout.to_string_lossy().into_owned());
    let out = hook_events(Agent::Codex, &stop, &mut state, &mut projects, 1).expect("fixture");
    assert_eq!(
        out.events.len(),
        2,
        "both assistant messages of the rollout"
    );
    for event in &out.events {
        assert!(imported_ids.contains(event.event_id.as_deref().expect("fixture")));
    }
    // The legacy notify payload of the same turn, in a fresh state, gives the same ids
    // for the prompt and the last answer.
    let mut fresh = HookState::default();
    let notify = hook_input("codex", "notify-agent-turn-complete");
    let out = hook_events(Agent::Codex, &notify, &mut fresh, &mut projects, 1).expect("fixture");
    assert_eq!(out.hook_event_name, "notify");
    assert_eq!(out.events.len(), 2);
    assert!(imported_ids.contains(out.events[0].event_id.as_deref().expect("fixture")));
}

#[test]
fn a_file_read_in_slices_gives_what_one_read_gives() {
    // `import --follow` reads a file as it grows: at every line boundary, a reader that
    // resumes the last one's state must give the same events (tool results keep their
    // call's metadata, Codex events their project, a response split across slices
    // stays one).
    let transcript = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");
    let bytes = std::fs::read(&transcript).expect("fixture");
    let lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    let (whole, _, _) = read_claude(&transcript, &mut SessionBook::default());
    for split in 1..lines.len() {
        let mut book = SessionBook::default();
        let mut projects = Projects::new(None);
        let mut reader =
            TranscriptReader::new(&mut book, &mut projects, claude_code::Scope::All, None);
        for line in &lines[..split] {
            reader.line(line);
        }
        let (mut events, _, state) = reader.suspend();
        let mut reader = TranscriptReader::resume(
            &mut book,
            &mut projects,
            claude_code::Scope::All,
            None,
            state,
        );
        for line in &lines[split..] {
            reader.line(line);
        }
        reader.flush_idle();
        events.extend(reader.suspend().0);
        assert_eq!(
            serde_json::to_value(&events).expect("json"),
            serde_json::to_value(&whole).expect("json"),
            "split before line {split}"
        );
    }
    for path in rollouts() {
        let bytes = std::fs::read(&path).expect("fixture");
        let lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
        let (whole, _) = read_codex(&path);
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        for split in 1..lines.len() {
            let mut occurrences = Occurrences::default();
            let mut projects = Projects::new(None);
            let mut reader = codex::RolloutReader::new(
                &mut occurrences,
                &mut projects,
                codex::Scope::All,
                None,
                codex::session_from_file_name(&name),
            );
            for line in &lines[..split] {
                reader.line(line);
            }
            let (mut events, _, state) = reader.suspend();
            let mut reader = codex::RolloutReader::resume(
                &mut occurrences,
                &mut projects,
                codex::Scope::All,
                None,
                state,
            );
            for line in &lines[split..] {
                reader.line(line);
            }
            events.extend(reader.suspend().0);
            assert_eq!(
                serde_json::to_value(&events).expect("json"),
                serde_json::to_value(&whole).expect("json"),
                "{name}: split before line {split}"
            );
        }
    }
}

#[test]
fn the_rest_of_a_response_flushed_early_is_its_continuation() {
    // The file went still mid-response (a long tool_use being generated): the part so
    // far is stored; the lines that come later are stored too, not skipped as a replay.
    let transcript = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");
    let bytes = std::fs::read(&transcript).expect("fixture");
    let lines: Vec<&[u8]> = bytes.split(|byte| *byte == b'\n').collect();
    // Lines 5-7 are one response: thinking, text, tool_use. Stop after the text.
    let mut book = SessionBook::default();
    let mut projects = Projects::new(None);
    let mut reader = TranscriptReader::new(&mut book, &mut projects, claude_code::Scope::All, None);
    for line in &lines[..6] {
        reader.line(line);
    }
    reader.flush_idle();
    let (first, _, state) = reader.suspend();
    let mut reader = TranscriptReader::resume(
        &mut book,
        &mut projects,
        claude_code::Scope::All,
        None,
        state,
    );
    for line in &lines[6..8] {
        reader.line(line);
    }
    reader.flush_idle();
    let (later, skipped, _) = reader.suspend();
    assert_eq!(skipped.count("replayed"), 0);
    assert!(first.iter().any(|e| e.kind == EventKind::AssistantMessage));
    assert!(
        later.iter().any(|e| e.kind == EventKind::ToolCall),
        "the late tool_use is stored: {later:?}"
    );
}

#[test]
fn a_response_still_being_written_at_a_subagent_stop_is_finished_by_the_next_hook() {
    let transcript = fixtures()
        .join("claude-code/projects/-home-dev-webapp/3f6c1a2e-8b4d-4c1e-9a7f-2d5e8c0b1a11.jsonl");
    let bytes = std::fs::read(&transcript).expect("fixture");
    let lines: Vec<&[u8]> = bytes.split_inclusive(|byte| *byte == b'\n').collect();
    let dir = tempfile::tempdir().expect("dir");
    let growing = dir.path().join("session.jsonl");
    // Up to the response's text line (lines 5-7 are one response: thinking, text,
    // tool_use); its last line is not written yet.
    std::fs::write(&growing, lines[..6].concat()).expect("write");
    let mut state = HookState::default();
    let mut projects = Projects::new(None);
    let mut input = hook_input("claude-code", "Stop");
    input["transcript_path"] = Value::String(growing.to_string_lossy().into_owned());
    input["hook_event_name"] = Value::String("SubagentStop".into());
    let early = hook_events(Agent::ClaudeCode, &input, &mut state, &mut projects, 1).expect("hook");
    assert!(
        early.events.is_empty(),
        "the open response waits: {:?}",
        early.events
    );
    // The rest is written; the turn's Stop takes the whole response, once.
    std::fs::write(&growing, lines.concat()).expect("write");
    input["hook_event_name"] = Value::String("Stop".into());
    let state_text = serde_json::to_string(&state).expect("state survives a save");
    let mut state: HookState = serde_json::from_str(&state_text).expect("and a load");
    let stop = hook_events(Agent::ClaudeCode, &input, &mut state, &mut projects, 1).expect("hook");
    let first = stop
        .events
        .iter()
        .filter(|event| event.event_id.as_deref() == Some("cc:msg_010To0wanoSlYgO0WKVNcPHb"))
        .count();
    assert_eq!(first, 1, "{:?}", stop.events);
}

#[test]
fn a_slash_command_has_the_id_its_hook_gave() {
    let line = serde_json::json!({
        "type": "user", "sessionId": "s-slash", "uuid": "u1", "cwd": "/home/dev/webapp",
        "timestamp": "2026-01-15T09:00:00.000Z",
        "message": {"role": "user", "content":
            "<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n<command-args>src/cart</command-args>"}
    });
    let mut book = SessionBook::default();
    let mut projects = Projects::new(None);
    let (events, _) = claude_code::read_transcript(
        line.to_string().as_bytes(),
        &mut book,
        &mut projects,
        claude_code::Scope::All,
    );
    let prompt = events
        .iter()
        .find(|event| event.kind == EventKind::UserMessage)
        .expect("prompt");
    assert_eq!(prompt.text.as_deref(), Some("/review src/cart"));
    let mut state = HookState::default();
    let hook = serde_json::json!({"session_id": "s-slash", "hook_event_name": "UserPromptSubmit",
        "cwd": "/home/dev/webapp", "prompt": "/review src/cart"});
    let out = hook_events(Agent::ClaudeCode, &hook, &mut state, &mut projects, 1).expect("hook");
    assert_eq!(out.events[0].event_id, prompt.event_id);
}
