//! `context.brief`: what an agent should know on entering a project, in one call and a
//! hard token budget — the last sessions (their TOC segments' titles and summaries), the
//! decisions in force, the open questions and the open todos, each with its citation
//! (a TOC node id, an idea id and the event it was said in).
//!
//! The SessionStart hook prints its `text`, so the agent starts with it without having
//! to remember to call a tool. It is a read of projections only: fast, and empty
//! sections are left out rather than padded.

use memory_projections::Bm25Handle;
use memory_store::Store;
use memory_text::estimate_tokens;
use memory_toc::{TocLevel, TocNode, TocNodeId};
use memory_types::format_timestamp_ms;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ideas_api::{IdeaListResponse, IdeaResult};
use crate::project::ProjectView;

/// Default budget of the brief, tokens.
pub const DEFAULT_BRIEF_TOKENS: usize = 1_500;
/// Largest budget a caller may ask for.
pub const MAX_BRIEF_TOKENS: usize = 8_000;
/// Default number of recent segments.
const DEFAULT_SESSIONS: usize = 3;
/// Most recent segments a caller may ask for.
const MAX_SESSIONS: usize = 20;
/// Ideas of each kind read before the budget cuts.
const IDEAS_PER_SECTION: usize = 8;

/// `context.brief`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BriefRequest {
    /// Most tokens of the text. Default 1500, at most 8000.
    #[serde(default)]
    pub token_budget: Option<usize>,
    /// How many recent segments to show. Default 3, at most 20.
    #[serde(default)]
    pub sessions: Option<usize>,
}

/// One line of the brief with where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BriefItem {
    /// The line as shown.
    pub text: String,
    /// Its citation: a TOC node id or an idea id.
    pub cite: String,
    /// The event it was said in, for ideas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
}

/// The brief.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BriefResponse {
    /// The project.
    pub project_id: String,
    /// Markdown to put in front of the agent; empty when the project has no memory yet.
    pub text: String,
    /// Estimated tokens of `text` (never above the budget).
    pub token_estimate: usize,
    /// The recent segments shown, most recent first.
    pub sessions: Vec<BriefItem>,
    /// Decisions in force shown.
    pub decisions: Vec<BriefItem>,
    /// Open questions shown.
    pub open_questions: Vec<BriefItem>,
    /// Open todos shown.
    pub open_todos: Vec<BriefItem>,
    /// Items left out for the budget.
    pub omitted: usize,
}

/// Answers `context.brief`.
///
/// # Errors
/// `internal` on store failures.
pub(crate) fn brief(
    view: ProjectView<'_>,
    store: &Store,
    bm25: Option<&Bm25Handle>,
    request: &BriefRequest,
) -> crate::Result<BriefResponse> {
    let budget = request
        .token_budget
        .unwrap_or(DEFAULT_BRIEF_TOKENS)
        .clamp(1, MAX_BRIEF_TOKENS);
    let wanted = request
        .sessions
        .unwrap_or(DEFAULT_SESSIONS)
        .clamp(1, MAX_SESSIONS);
    let segments = latest_segments(&view, wanted)?;
    let ideas = |method: &str, body: &str| -> crate::Result<Vec<IdeaResult>> {
        let value =
            crate::ideas_calls::dispatch(store, bm25, view.project_id, method, body.as_bytes())?;
        let list: IdeaListResponse =
            serde_json::from_value(value).map_err(crate::QueryError::Encode)?;
        Ok(list.results)
    };
    let limit = format!(r#"{{"limit":{IDEAS_PER_SECTION}}}"#);
    let decisions = ideas("ideas.decisions", &limit)?;
    let questions = ideas("ideas.open_questions", &limit)?;
    let todos = ideas("ideas.open_todos", &limit)?;

    let sessions: Vec<BriefItem> = segments.iter().map(segment_item).collect();
    let decisions: Vec<BriefItem> = decisions.iter().map(idea_item).collect();
    let questions: Vec<BriefItem> = questions.iter().map(idea_item).collect();
    let todos: Vec<BriefItem> = todos.iter().map(idea_item).collect();

    let mut text = Text::new(budget);
    let header = format!(
        "## What agent-memory knows about project `{}`\n(cite the ids in brackets; the agent-memory tools `search`, `navigate` and `get_events` read more)\n",
        view.project_id
    );
    let mut shown = Shown::default();
    if !(sessions.is_empty() && decisions.is_empty() && questions.is_empty() && todos.is_empty())
        && text.push(&header)
    {
        // The sections in order of use on entering: what happened last, what holds, what
        // is still open. A section's items stop at the first that does not fit.
        shown.sessions = text.section("### Recent sessions", &sessions);
        shown.decisions = text.section("### Decisions in force", &decisions);
        shown.questions = text.section("### Open questions", &questions);
        shown.todos = text.section("### Open todos", &todos);
    }
    let total = sessions.len() + decisions.len() + questions.len() + todos.len();
    let kept = shown.sessions + shown.decisions + shown.questions + shown.todos;
    Ok(BriefResponse {
        project_id: view.project_id.to_owned(),
        token_estimate: text.tokens,
        text: text.out,
        sessions: sessions.into_iter().take(shown.sessions).collect(),
        decisions: decisions.into_iter().take(shown.decisions).collect(),
        open_questions: questions.into_iter().take(shown.questions).collect(),
        open_todos: todos.into_iter().take(shown.todos).collect(),
        omitted: total - kept,
    })
}

#[derive(Default)]
struct Shown {
    sessions: usize,
    decisions: usize,
    questions: usize,
    todos: usize,
}

/// Markdown under a hard token budget.
struct Text {
    out: String,
    tokens: usize,
    budget: usize,
}

impl Text {
    fn new(budget: usize) -> Text {
        Text {
            out: String::new(),
            tokens: 0,
            budget,
        }
    }

    /// Appends `line` if it fits.
    fn push(&mut self, line: &str) -> bool {
        let cost = tokens(line);
        if self.tokens + cost > self.budget {
            return false;
        }
        self.out.push_str(line);
        self.out.push('\n');
        self.tokens += cost;
        true
    }

    /// A heading and as many items as fit (none: no heading). Returns how many.
    fn section(&mut self, heading: &str, items: &[BriefItem]) -> usize {
        let Some(first) = items.first() else {
            return 0;
        };
        let first_line = format!("- {} [{}]", first.text, first.cite);
        let both = tokens(heading) + tokens(&first_line);
        if self.tokens + both > self.budget {
            return 0;
        }
        self.push(heading);
        let mut count = 0;
        for item in items {
            if !self.push(&format!("- {} [{}]", item.text, item.cite)) {
                break;
            }
            count += 1;
        }
        count
    }
}

/// Estimated tokens of a line with its newline.
fn tokens(line: &str) -> usize {
    estimate_tokens(line.chars().count() + 1)
}

fn segment_item(node: &TocNode) -> BriefItem {
    let when = format_timestamp_ms(node.start_ms);
    let when = when.get(..16).unwrap_or(&when).replace('T', " ");
    let mut text = format!("{when} UTC: {}", node.title.trim());
    let detail = node
        .summary
        .clone()
        .filter(|summary| !summary.trim().is_empty())
        .or_else(|| {
            let bullets: Vec<&str> = node
                .bullets
                .iter()
                .take(2)
                .map(|bullet| bullet.text.as_str())
                .collect();
            (!bullets.is_empty()).then(|| bullets.join("; "))
        });
    if let Some(detail) = detail {
        text.push_str(" — ");
        text.push_str(&clip(detail.trim(), 300));
    }
    BriefItem {
        text,
        cite: node.node_id.to_string(),
        event_id: None,
    }
}

fn idea_item(idea: &IdeaResult) -> BriefItem {
    let day = idea.valid_from.get(..10).unwrap_or(&idea.valid_from);
    BriefItem {
        text: format!("{} ({day})", clip(idea.content.trim(), 240)),
        cite: format!("{}, event {}", idea.idea_id, idea.source.event_id),
        event_id: Some(idea.source.event_id.clone()),
    }
}

/// `text` cut to `max` characters at a word boundary, with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

/// The `wanted` most recent segments, most recent first: a walk down the last children
/// of the tree, back through earlier children only as far as needed.
fn latest_segments(view: &ProjectView<'_>, wanted: usize) -> crate::Result<Vec<TocNode>> {
    let mut found = Vec::new();
    let years = view.children(None)?;
    for year in years.iter().rev() {
        collect(view, &year.node_id, wanted, &mut found)?;
        if found.len() >= wanted {
            break;
        }
    }
    Ok(found)
}

fn collect(
    view: &ProjectView<'_>,
    node_id: &TocNodeId,
    wanted: usize,
    found: &mut Vec<TocNode>,
) -> crate::Result<()> {
    let Some(node) = view.try_node(node_id)? else {
        return Ok(());
    };
    if node.level == TocLevel::Segment {
        found.push(node);
        return Ok(());
    }
    for child in node.child_ids.iter().rev() {
        collect(view, child, wanted, found)?;
        if found.len() >= wanted {
            break;
        }
    }
    Ok(())
}
