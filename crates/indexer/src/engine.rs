//! [`LlmEngine`]: the indexing agent's LLM engine — the design's tool loop over any
//! OpenAI-compatible chat API, with the heuristic engine standing in for every part the
//! model cannot do.
//!
//! A batch is cut into parts that fit the mode's token budget (continuous ~10k,
//! backfill ~50k tokens, as in the design); each part is one conversation with the
//! model: the system prompt and the input, then up to `max_tool_calls` tool calls
//! answered from the graph (and what earlier parts of the batch added), then the change
//! set. The answer must parse as `schemas/agent-output.v1.json` (serde with unknown
//! fields refused — the schema is generated from those types); an answer that does not,
//! or a request that timed out, is tried once more with the error, then the part goes
//! through the heuristic engine. Ids the model invents are dropped and counted by the
//! agent's validation like any engine's, so nothing the model says reaches the graph
//! unchecked. A server that is down is not asked again for a cool-down, so a dead model
//! costs one timeout, not one per batch.

use std::time::{Duration, Instant};

use memory_config::ToolProtocol;
use memory_ideas::{
    ChangeSet, ExtractBatch, ExtractError, GraphView, HeuristicEngine, IdeaExtractor, Lexicon,
    Overlay, apply_changes, change_set_schema, validate,
};
use memory_llm::{
    ChatCall, ChatClient, ChatMessage, LlmError, Purpose, ReplyFormat, ToolCall, ToolSpec,
    json_object_text as json_object,
};
use serde_json::{Value, json};
use tracing::{debug, info, info_span, warn};

use crate::bounds::AnswerBounds;
use crate::metrics::LLM_ENGINE_METRICS;
use crate::prompt::{CHARS_PER_TOKEN, input, parts, system_prompt};
use crate::tools::{TOOL_NAMES, ToolBox, tool_specs};

/// How the model calls tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI `tools` / `tool_calls`.
    Native,
    /// Every step a `response_format: json_schema` object: a tool call or the answer.
    Json,
}

impl Protocol {
    /// The metrics label.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Native => "native",
            Protocol::Json => "json",
        }
    }
}

/// The engine's settings (`[indexing]` and `[llm]`).
#[derive(Clone, Debug)]
pub struct LlmEngineSettings {
    /// Most tool calls per part. Default 15 (the design's open question: 10–15).
    pub max_tool_calls: usize,
    /// Tokens per part in continuous mode. Default 10 000.
    pub continuous_tokens: usize,
    /// Tokens per part in backfill mode. Default 50 000.
    pub backfill_tokens: usize,
    /// The tool protocol, or `Auto` to probe.
    pub protocol: ToolProtocol,
    /// How long a server that failed is left alone. Default 30 s.
    pub cooldown: Duration,
    /// Most tokens the model may write per step. Default 2 048.
    pub max_answer_tokens: u32,
}

impl Default for LlmEngineSettings {
    fn default() -> Self {
        LlmEngineSettings {
            max_tool_calls: 15,
            continuous_tokens: 10_000,
            backfill_tokens: 50_000,
            protocol: ToolProtocol::Auto,
            cooldown: Duration::from_secs(30),
            max_answer_tokens: 2_048,
        }
    }
}

/// Why a part went to the heuristic engine.
#[derive(Debug)]
struct Failure {
    reason: &'static str,
    message: String,
}

impl Failure {
    fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Failure {
            reason,
            message: message.into(),
        }
    }

    fn from_llm(err: &LlmError) -> Self {
        let reason = match err {
            LlmError::BudgetExhausted { .. } => "budget",
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::InvalidResponse(_) | LlmError::InvalidAnswer(_) => "invalid",
            _ => "unavailable",
        };
        Failure::new(reason, err.to_string())
    }
}

/// What happened to one part.
#[derive(Debug, Default, Clone, Copy)]
struct PartStats {
    calls: usize,
    tool_calls: usize,
    tokens: u64,
}

/// The LLM engine.
pub struct LlmEngine {
    client: ChatClient,
    fallback: Box<dyn IdeaExtractor>,
    settings: LlmEngineSettings,
    protocol: Option<Protocol>,
    down_until: Option<Instant>,
    last_run: (&'static str, &'static str),
    specs: Vec<ToolSpec>,
}

impl LlmEngine {
    /// An engine over `client`, with the heuristic engine as fallback.
    #[must_use]
    pub fn new(client: ChatClient, settings: LlmEngineSettings) -> Self {
        LlmEngine::with_fallback(client, settings, Box::new(HeuristicEngine::new()))
    }

    /// An engine with another fallback engine (the daemon's heuristic engine may use
    /// the embedding model).
    #[must_use]
    pub fn with_fallback(
        client: ChatClient,
        settings: LlmEngineSettings,
        fallback: Box<dyn IdeaExtractor>,
    ) -> Self {
        let protocol = match settings.protocol {
            ToolProtocol::Native => Some(Protocol::Native),
            ToolProtocol::Json => Some(Protocol::Json),
            ToolProtocol::Auto => None,
        };
        if let Some(protocol) = protocol {
            set_protocol_gauge(protocol);
        }
        LlmEngine {
            client,
            fallback,
            settings,
            protocol,
            down_until: None,
            last_run: ("llm", "ok"),
            specs: tool_specs(),
        }
    }

    /// The tool protocol, once known (configured or probed).
    #[must_use]
    pub fn protocol(&self) -> Option<Protocol> {
        self.protocol
    }

    /// Asks the model to call a tool: native when it answers with `tool_calls`, JSON
    /// steps when it answers in text or the server refuses `tools`.
    ///
    /// # Errors
    /// The server could not be asked (down, timeout, budget).
    pub fn probe(&self) -> Result<Protocol, LlmError> {
        let tool = ToolSpec {
            name: "record_number".to_owned(),
            description: "Records a number.".to_owned(),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}},
                               "required": ["n"]}),
        };
        let messages = [
            ChatMessage::system("You can call functions. Call them through the tools interface."),
            ChatMessage::user("Call record_number with n = 7."),
        ];
        let call = ChatCall {
            format: ReplyFormat::Free,
            tools: std::slice::from_ref(&tool),
            max_tokens: Some(64),
            max_retries: Some(0),
            ..ChatCall::new(Purpose::Probe, &messages)
        };
        match self.client.chat(&call) {
            Ok(reply) if reply.tool_calls.iter().any(|c| c.name == "record_number") => {
                Ok(Protocol::Native)
            }
            Ok(_) => Ok(Protocol::Json),
            // A server that refuses `tools` (400, 422, …) speaks JSON steps only.
            Err(LlmError::Status { status, .. })
                if (400..500).contains(&status) && status != 429 =>
            {
                Ok(Protocol::Json)
            }
            Err(err) => Err(err),
        }
    }

    fn resolve_protocol(&mut self) -> Result<Protocol, Failure> {
        if let Some(protocol) = self.protocol {
            return Ok(protocol);
        }
        let protocol = self.probe().map_err(|err| Failure::from_llm(&err))?;
        info!(
            protocol = protocol.as_str(),
            model = self.client.model(),
            "LLM indexing engine: tool protocol probed"
        );
        set_protocol_gauge(protocol);
        self.protocol = Some(protocol);
        Ok(protocol)
    }

    fn part_tokens(&self, batch: &ExtractBatch) -> usize {
        match batch.mode {
            memory_ideas::BatchMode::Continuous => self.settings.continuous_tokens,
            memory_ideas::BatchMode::Backfill => self.settings.backfill_tokens,
        }
        .max(1_000)
    }

    /// One part through the model.
    fn llm_part(
        &mut self,
        part: &ExtractBatch,
        graph: &dyn GraphView,
        stats: &mut PartStats,
    ) -> Result<ChangeSet, Failure> {
        if let Some(until) = self.down_until {
            if Instant::now() < until {
                return Err(Failure::new(
                    "unavailable",
                    "the model server failed recently; cooling down",
                ));
            }
            self.down_until = None;
        }
        let protocol = self.resolve_protocol()?;
        let mut projects: Vec<String> = Vec::new();
        for session in &part.sessions {
            if !projects.contains(&session.project_id) {
                projects.push(session.project_id.clone());
            }
        }
        let tools = ToolBox::new(graph, projects);
        let budget = self.part_tokens(part) as u64;
        let max_calls = self.settings.max_tool_calls;
        let note = match protocol {
            Protocol::Native => "Call tools through the function-calling interface. When you are done, answer with only the final JSON object as the message content.".to_owned(),
            Protocol::Json => format!(
                "Answer every step with one JSON object. To call a tool: {{\"tool\": \"<name>\", \"arguments\": {{...}}}}; its result comes back in the next message. The tools are: {}. When you are done, answer with the final JSON object instead.",
                self.specs.iter().map(|spec| format!("{} ({})", spec.name, spec.description)).collect::<Vec<_>>().join("; ")
            ),
        };
        let mut bounds = AnswerBounds::for_part(
            part.len(),
            part.sessions.len(),
            self.settings.max_answer_tokens,
        );
        let mut messages = vec![
            ChatMessage::system(system_prompt(max_calls, &note)),
            ChatMessage::user(input(part, &bounds.instruction())),
        ];
        let step_schema = json_step_schema(&self.specs, true, &bounds);
        let mut final_schema = json_step_schema(&self.specs, false, &bounds);
        let mut retried = false;
        let mut tools_open = max_calls > 0;
        loop {
            if stats.tokens >= budget {
                return Err(Failure::new(
                    "budget",
                    format!(
                        "the part used {} of its {budget} tokens without a valid answer",
                        stats.tokens
                    ),
                ));
            }
            let (format, offered): (ReplyFormat, &[ToolSpec]) = match (protocol, tools_open) {
                (Protocol::Native, true) => (ReplyFormat::Free, &self.specs),
                (Protocol::Native, false) => (ReplyFormat::JsonObject, &[]),
                (Protocol::Json, open) => (
                    ReplyFormat::JsonSchema {
                        name: "indexing_step".to_owned(),
                        schema: if open {
                            step_schema.clone()
                        } else {
                            final_schema.clone()
                        },
                    },
                    &[],
                ),
            };
            let call = ChatCall {
                format,
                tools: offered,
                max_tokens: Some(bounds.answer_tokens),
                // One more try after a timeout or a failed request, then the fallback.
                max_retries: Some(1),
                ..ChatCall::new(Purpose::Indexing, &messages)
            };
            stats.calls += 1;
            LLM_ENGINE_METRICS
                .calls
                .with_label_values(&[part.mode.as_str()])
                .inc();
            let reply = match self.client.chat(&call) {
                Ok(reply) => reply,
                Err(err) => {
                    let failure = Failure::from_llm(&err);
                    if failure.reason == "unavailable" {
                        self.down_until = Some(Instant::now() + self.settings.cooldown);
                    }
                    return Err(failure);
                }
            };
            stats.tokens += reply.usage.total();
            // Step kind: tool calls (native or JSON) or an answer.
            let calls: Vec<(String, String, Result<Value, String>)> = match protocol {
                Protocol::Native => reply
                    .tool_calls
                    .iter()
                    .map(|call: &ToolCall| {
                        (
                            call.id.clone(),
                            call.name.clone(),
                            parse_arguments(&call.arguments),
                        )
                    })
                    .collect(),
                Protocol::Json => match json_step(&reply.content) {
                    Some((name, arguments)) => vec![(String::new(), name, Ok(arguments))],
                    None => Vec::new(),
                },
            };
            if !calls.is_empty() {
                match protocol {
                    Protocol::Native => messages.push(ChatMessage::assistant(
                        reply.content.clone(),
                        reply.tool_calls.clone(),
                    )),
                    Protocol::Json => {
                        messages.push(ChatMessage::assistant(reply.content.clone(), Vec::new()))
                    }
                }
                for (id, name, arguments) in calls {
                    let result = if !tools_open || stats.tool_calls >= max_calls {
                        count_tool(&name, "refused");
                        json!({"error": "no more tool calls in this batch: give your final answer now"}).to_string()
                    } else {
                        stats.tool_calls += 1;
                        match arguments {
                            Ok(arguments) => {
                                let result = tools.call(&name, &arguments);
                                count_tool(
                                    &name,
                                    if result.starts_with("{\"error\"") {
                                        "error"
                                    } else {
                                        "ok"
                                    },
                                );
                                result
                            }
                            Err(message) => {
                                count_tool(&name, "error");
                                json!({"error": message}).to_string()
                            }
                        }
                    };
                    match protocol {
                        Protocol::Native => messages.push(ChatMessage::tool(id, result)),
                        Protocol::Json => {
                            messages.push(ChatMessage::user(format!("Result of {name}: {result}")))
                        }
                    }
                }
                // Close the tools at the limit, or when three quarters of the budget
                // are spent, so the answer still fits.
                if stats.tool_calls >= max_calls || stats.tokens * 4 >= budget * 3 {
                    tools_open = false;
                }
                continue;
            }
            match parse_change_set(&reply.content) {
                Ok(changes) => return Ok(changes),
                // Cut off at the token limit: ask again for less, under tighter bounds,
                // rather than for the same answer that did not fit.
                Err(message) if !retried && reply.truncated => {
                    retried = true;
                    bounds = bounds.halved();
                    final_schema = json_step_schema(&self.specs, false, &bounds);
                    LLM_ENGINE_METRICS
                        .retries
                        .with_label_values(&["cut_off"])
                        .inc();
                    debug!(error = %message, "LLM indexing answer cut off at the token limit");
                    messages.push(ChatMessage::assistant(reply.content.clone(), Vec::new()));
                    messages.push(ChatMessage::user(format!(
                        "That answer was cut off at the limit of {} tokens before its JSON closed. Answer again with only the final JSON object. {}",
                        bounds.answer_tokens,
                        bounds.instruction()
                    )));
                    tools_open = false;
                }
                Err(message) if !retried => {
                    retried = true;
                    LLM_ENGINE_METRICS
                        .retries
                        .with_label_values(&["invalid"])
                        .inc();
                    messages.push(ChatMessage::assistant(reply.content.clone(), Vec::new()));
                    messages.push(ChatMessage::user(format!(
                        "That answer is not valid: {message}. Answer again with only the final JSON object of the schema described above."
                    )));
                    tools_open = false;
                }
                Err(message) if reply.truncated => {
                    return Err(Failure::new(
                        "cut_off",
                        format!("the answer ran to the token limit twice: {message}"),
                    ));
                }
                Err(message) => return Err(Failure::new("invalid", message)),
            }
        }
    }
}

fn set_protocol_gauge(protocol: Protocol) {
    for other in [Protocol::Native, Protocol::Json] {
        LLM_ENGINE_METRICS
            .protocol
            .with_label_values(&[other.as_str()])
            .set(i64::from(other == protocol));
    }
}

fn count_tool(name: &str, outcome: &str) {
    // Unknown names share one label: a model cannot grow the label set.
    let label = TOOL_NAMES
        .iter()
        .copied()
        .find(|tool| *tool == name)
        .unwrap_or("unknown");
    LLM_ENGINE_METRICS
        .tool_calls_by_tool
        .with_label_values(&[label, outcome])
        .inc();
}

/// A tool call's arguments: a JSON object (an empty text counts as `{}`).
fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!("arguments must be a JSON object, got {other}")),
        Err(err) => Err(format!("arguments are not valid JSON: {err}")),
    }
}

/// A JSON-protocol tool step: `{"tool": name, "arguments": {…}}`.
fn json_step(text: &str) -> Option<(String, Value)> {
    let value: Value = serde_json::from_str(json_object(text)?).ok()?;
    let name = value.get("tool")?.as_str()?.to_owned();
    let arguments = value.get("arguments").cloned().unwrap_or_else(|| json!({}));
    Some((name, arguments))
}

/// The change set in a model's answer, checked against the output schema.
fn parse_change_set(text: &str) -> Result<ChangeSet, String> {
    let Some(object) = json_object(text) else {
        return Err(format!(
            "no JSON object in the answer (it starts with {:?})",
            memory_text::truncate_chars(text.trim(), 80)
        ));
    };
    serde_json::from_str::<ChangeSet>(object).map_err(|err| err.to_string())
}

/// The constrained-JSON protocol's schema of one step: a tool call of one of `specs`
/// (with that tool's arguments) or the final change set; only the change set when
/// `with_tools` is false.
#[must_use]
pub fn json_step_schema(specs: &[ToolSpec], with_tools: bool, bounds: &AnswerBounds) -> Value {
    let mut answer = change_set_schema();
    let mut defs = answer
        .as_object_mut()
        .and_then(|object| object.remove("$defs"))
        .unwrap_or_else(|| json!({}));
    if let Some(object) = answer.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    // A small model writing under a grammar can run a string or a list to its token
    // limit and leave broken JSON: bound both, the answer's lists by the part's size.
    bounds.apply(&mut answer, &mut defs);
    bound(&mut defs);
    bound(&mut answer);
    let mut choices: Vec<Value> = Vec::new();
    if with_tools {
        for spec in specs {
            choices.push(json!({
                "type": "object",
                "properties": {"tool": {"const": spec.name}, "arguments": spec.parameters},
                "required": ["tool", "arguments"],
                "additionalProperties": false,
            }));
        }
    }
    choices.push(answer);
    json!({"$defs": defs, "anyOf": choices})
}

/// Longest other free-text string of the constrained-JSON schema, characters.
const MAX_SCHEMA_STRING: u64 = 400;
/// Most items of another list of the constrained-JSON schema (tool arguments).
const MAX_SCHEMA_ITEMS: u64 = 40;

/// Adds `maxLength` to every free-text string and `maxItems` to every list of `schema`.
fn bound(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            let is = |kind: &str, object: &serde_json::Map<String, Value>| match object.get("type")
            {
                Some(Value::String(t)) => t == kind,
                Some(Value::Array(types)) => types.iter().any(|t| t == kind),
                _ => false,
            };
            if is("string", object) && !object.contains_key("enum") && !object.contains_key("const")
            {
                object
                    .entry("maxLength")
                    .or_insert(json!(MAX_SCHEMA_STRING));
            }
            if is("array", object) {
                object.entry("maxItems").or_insert(json!(MAX_SCHEMA_ITEMS));
            }
            for value in object.values_mut() {
                bound(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound),
        _ => {}
    }
}

impl IdeaExtractor for LlmEngine {
    fn engine(&self) -> &'static str {
        "llm"
    }

    fn last_run(&self) -> (&'static str, &'static str) {
        self.last_run
    }

    fn extract(
        &mut self,
        batch: &ExtractBatch,
        graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError> {
        let mode = batch.mode.as_str();
        // The input gets two fifths of the budget; prompt, tool results and the answer
        // the rest.
        let input_chars = self.part_tokens(batch) * CHARS_PER_TOKEN * 2 / 5;
        let pieces = parts(batch, input_chars);
        let several = pieces.len() > 1;
        let mut overlay = Overlay::new(graph);
        let mut out = ChangeSet::default();
        let (mut by_model, mut by_fallback) = (0usize, 0usize);
        for part in &pieces {
            let span = info_span!(
                "llm_indexing_part",
                mode,
                events = part.len(),
                calls = tracing::field::Empty,
                tool_calls = tracing::field::Empty,
                tokens = tracing::field::Empty
            );
            let _entered = span.enter();
            let mut stats = PartStats::default();
            let part_started = Instant::now();
            let result = self.llm_part(part, &overlay, &mut stats);
            info!(
                mode,
                events = part.len(),
                calls = stats.calls,
                tool_calls = stats.tool_calls,
                tokens = stats.tokens,
                seconds = part_started.elapsed().as_secs_f64(),
                outcome = if result.is_ok() { "ok" } else { "fallback" },
                "LLM indexing part done"
            );
            span.record("calls", stats.calls);
            span.record("tool_calls", stats.tool_calls);
            span.record("tokens", stats.tokens);
            let metrics = &*LLM_ENGINE_METRICS;
            if stats.calls > 0 {
                metrics
                    .tool_calls
                    .with_label_values(&[self.protocol.map_or("unknown", Protocol::as_str)])
                    .observe(stats.tool_calls as f64);
                metrics
                    .part_tokens
                    .with_label_values(&[mode])
                    .observe(stats.tokens as f64);
                metrics
                    .events
                    .with_label_values(&[mode])
                    .inc_by(part.len() as u64);
            }
            let changes = match result {
                Ok(mut changes) => {
                    let grounding = crate::grounding::ground(&mut changes, part, batch);
                    if grounding != crate::grounding::Grounding::default() {
                        info!(
                            moved = grounding.moved,
                            dropped = grounding.dropped,
                            copied = grounding.copied,
                            "LLM ideas not said by their source event (moved or dropped) or copied from a tool event (dropped)"
                        );
                    }
                    by_model += 1;
                    metrics.parts.with_label_values(&[mode, "ok"]).inc();
                    changes
                }
                Err(failure) => {
                    by_fallback += 1;
                    metrics.parts.with_label_values(&[mode, "fallback"]).inc();
                    metrics.fallbacks.with_label_values(&[failure.reason]).inc();
                    warn!(
                        reason = failure.reason,
                        error = %failure.message,
                        events = part.len(),
                        "LLM indexing engine could not do this part; the heuristic engine does it"
                    );
                    self.fallback.extract(part, &overlay)?
                }
            };
            if several {
                // Later parts' tools see what earlier parts added.
                let valid = validate(&changes, part, &overlay, 0)?;
                apply_changes(&mut overlay, Lexicon::shipped(), &valid)?;
            }
            append(&mut out, changes);
        }
        self.last_run = match (by_model, by_fallback) {
            (_, 0) => ("llm", "ok"),
            (0, _) => (self.fallback.engine(), "fallback"),
            _ => ("llm", "partial_fallback"),
        };
        Ok(out)
    }
}

fn append(out: &mut ChangeSet, changes: ChangeSet) {
    out.ideas.extend(changes.ideas);
    out.topic_updates.extend(changes.topic_updates);
    out.topic_changes.extend(changes.topic_changes);
    out.answered_questions.extend(changes.answered_questions);
    out.completed_todos.extend(changes.completed_todos);
    out.relations.extend(changes.relations);
    out.entity_links.extend(changes.entity_links);
    out.skip_events.extend(changes.skip_events);
    out.activated_ideas.extend(changes.activated_ideas);
}
