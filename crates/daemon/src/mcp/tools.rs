//! The six tools: their definitions (input and output schemas, titles, descriptions
//! written for an agent, annotations) and what each call does and answers.
//!
//! Every answer carries the JSON as `structured_content` (matching the tool's output
//! schema) and a compact text rendering of it as `content`, for clients that only
//! show text. A bad argument or a failed call is a tool result with `is_error: true`
//! and a message naming what went wrong ([`ToolError`]); only an unknown tool is a
//! protocol error, answered before a tool runs.
//!
//! One file per group: `definitions` (what `tools/list` says), `search`, `browse`
//! (`navigate`, `timeline`, `get_events`), `remember`, `status`.

mod browse;
mod definitions;
mod remember;
mod search;
mod status;

use memory_types::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

pub(crate) use self::definitions::definitions;
use super::args::{ArgError, ToolArgs};
use super::backend::Backend;

/// The tools, in the order `tools/list` gives them.
pub(crate) const TOOL_NAMES: [&str; 6] = [
    "search",
    "navigate",
    "timeline",
    "get_events",
    "remember",
    "status",
];

/// Session of `remember`'s notes unless the caller names one.
pub(crate) const DEFAULT_NOTES_SESSION: &str = "mcp-notes";
/// `metadata.source` of every note `remember` stores.
pub(crate) const NOTE_SOURCE: &str = "mcp";

const SEARCH_MODES: [&str; 5] = ["auto", "toc", "keyword", "semantic", "hybrid"];
const MAX_SEARCH_RESULTS: u64 = 50;
const MIN_TOKEN_BUDGET: u64 = 100;
const MAX_TOKEN_BUDGET: u64 = 20_000;
const MAX_TIMELINE_SIDE: u64 = 50;
const MAX_EVENT_IDS: usize = 50;
const MAX_ID_CHARS: usize = 256;
const MAX_GRIP_CONTEXT: u64 = 20;
const MAX_TAGS: usize = 20;
const MAX_TAG_CHARS: usize = 64;
/// How many characters of an event's text the text renderings show.
const TEXT_CHARS: usize = 300;

/// Why a tool call failed; the caller sees `code: message` as the error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolError {
    /// `invalid_argument`, `not_found`, `unavailable` or `internal`: the metric's outcome.
    pub(crate) code: &'static str,
    /// What went wrong, for the agent.
    pub(crate) message: String,
}

impl ToolError {
    /// The error as a tool result the caller's model can read.
    pub(crate) fn into_result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(format!(
            "{}: {}",
            self.code, self.message
        ))])
    }
}

impl From<ArgError> for ToolError {
    fn from(err: ArgError) -> Self {
        ToolError {
            code: "invalid_argument",
            message: err.0,
        }
    }
}

impl From<ServiceError> for ToolError {
    fn from(err: ServiceError) -> Self {
        ToolError {
            code: err.error.code.as_str(),
            message: err.error.message,
        }
    }
}

/// A successful answer: the JSON and its text rendering.
pub(crate) struct Answer {
    pub(crate) structured: Value,
    pub(crate) text: String,
}

impl Answer {
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut result = CallToolResult::success(vec![ContentBlock::text(self.text)]);
        result.structured_content = Some(self.structured);
        result
    }
}

/// Runs tool `name` (one of [`TOOL_NAMES`]) with `arguments`, checked against
/// `input_schema`.
pub(crate) async fn run(
    backend: &Backend,
    default_project: &str,
    name: &str,
    input_schema: &JsonObject,
    arguments: Option<&JsonObject>,
) -> Result<Answer, ToolError> {
    let args = ToolArgs::parse(name, arguments, input_schema)?;
    match name {
        "search" => search::search(backend, &args, default_project).await,
        "navigate" => browse::navigate(backend, &args, default_project).await,
        "timeline" => browse::timeline(backend, &args, default_project).await,
        "get_events" => browse::get_events(backend, &args, default_project).await,
        "remember" => remember::remember(backend, &args, default_project).await,
        "status" => status::status(backend, default_project).await,
        other => Err(ToolError {
            code: "internal",
            message: format!("tool {other:?} has no handler"),
        }),
    }
}

fn decode<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ToolError> {
    serde_json::from_value(value).map_err(|err| ToolError {
        code: "internal",
        message: format!("unexpected answer shape: {err}"),
    })
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

fn array_of(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod test_support {
    use rmcp::model::JsonObject;
    use serde_json::Value;

    use super::definitions;
    use crate::mcp::args::ToolArgs;

    pub(super) fn schema_of(name: &str) -> JsonObject {
        definitions("default")
            .into_iter()
            .find(|tool| tool.name == name)
            .map(|tool| tool.input_schema.as_ref().clone())
            .expect("tool")
    }

    pub(super) fn with<T>(
        name: &str,
        arguments: Value,
        check: impl FnOnce(&ToolArgs<'_>) -> T,
    ) -> T {
        let schema = schema_of(name);
        let arguments = rmcp::model::object(arguments);
        let args = ToolArgs::parse(name, Some(&arguments), &schema).expect("known arguments");
        check(&args)
    }
}
