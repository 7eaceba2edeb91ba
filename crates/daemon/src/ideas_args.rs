//! The ideas graph's CLI commands and arguments (`ideas`, `entities`, `spans`,
//! `timeline`, `session-context`); `ideas_cli` runs them.

use clap::{Args, Subcommand};

use crate::query_target::QueryTarget;

/// `ideas`.
#[derive(Debug, Subcommand)]
pub enum IdeasCommand {
    /// Ideas by what they say (`ideas.search`); without a query, the most recent ideas
    /// that pass the filters.
    Search {
        /// What to look for (empty: list).
        #[arg(default_value = "")]
        query: String,
        /// Only ideas of this intent: decision, conclusion, question, problem, solution,
        /// todo, context, preference.
        #[arg(long)]
        intent: Option<String>,
        /// Only ideas that mention this entity (an id or a name in any spelling).
        #[arg(long)]
        entity: Option<String>,
        /// Only ideas of this sector: reflective, semantic, procedural, emotional,
        /// episodic.
        #[arg(long)]
        sector: Option<String>,
        /// Only ideas said in this session.
        #[arg(long)]
        session: Option<String>,
        /// Also ideas a later idea superseded.
        #[arg(long)]
        include_superseded: bool,
        /// What was true at this time (RFC 3339, date or epoch ms).
        #[arg(long)]
        as_of: Option<String>,
        /// Only ideas of at least this salience (0 to 1).
        #[arg(long)]
        min_salience: Option<f32>,
        /// Most results (default 10, at most 100).
        #[arg(long)]
        limit: Option<usize>,
        /// Most tokens of idea content (default 2 000).
        #[arg(long)]
        token_budget: Option<usize>,
        #[command(flatten)]
        target: QueryTarget,
    },
    /// One idea with its relations and resolution (`ideas.get`).
    Get {
        /// `idea-<16 hex>`.
        idea_id: String,
        #[command(flatten)]
        target: QueryTarget,
    },
    /// Questions and problems not answered yet (`ideas.open_questions`).
    OpenQuestions(OpenItemsArgs),
    /// Todos not completed yet (`ideas.open_todos`).
    OpenTodos(OpenItemsArgs),
    /// Decisions and preferences, those in force by default (`ideas.decisions`).
    Decisions {
        /// Only those that mention this entity.
        #[arg(long)]
        entity: Option<String>,
        /// Those in force at this time (RFC 3339, date or epoch ms).
        #[arg(long)]
        as_of: Option<String>,
        /// Also those a later idea superseded.
        #[arg(long)]
        include_superseded: bool,
        /// Most results (default 10, at most 100).
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `ideas open-questions` and `ideas open-todos`.
#[derive(Debug, Args)]
pub struct OpenItemsArgs {
    /// Only those raised in this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only those raised at or after this time.
    #[arg(long)]
    pub since: Option<String>,
    /// Most results (default 10, at most 100).
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub target: QueryTarget,
}

/// `entities`.
#[derive(Debug, Subcommand)]
pub enum EntitiesCommand {
    /// Entities by name or alias (`entities.search`); without a query, all.
    Search {
        /// Part of a name or alias, any spelling.
        #[arg(default_value = "")]
        query: String,
        /// Only entities of this type: project, technology, concept, person, file.
        #[arg(long = "type")]
        entity_type: Option<String>,
        /// Most results (default 10, at most 100).
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        target: QueryTarget,
    },
    /// The ideas that mention an entity, most recent first (`entities.ideas`).
    Ideas {
        /// `ent-<16 hex>` (or a name).
        entity_id: String,
        /// Most results (default 10, at most 100).
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `spans`.
#[derive(Debug, Subcommand)]
pub enum SpansCommand {
    /// A session's topic spans, oldest first (`spans.list`).
    List {
        /// The session.
        #[arg(long)]
        session: String,
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `timeline`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("anchor").required(true).args(["event_id", "idea_id", "at"])))]
pub struct TimelineArgs {
    /// Centre on this event (and the ideas taken from it).
    #[arg(long)]
    pub event_id: Option<String>,
    /// Centre on this idea.
    #[arg(long)]
    pub idea_id: Option<String>,
    /// Centre on this time (RFC 3339, date or epoch ms).
    #[arg(long)]
    pub at: Option<String>,
    /// Ideas before it (default 5, at most 50).
    #[arg(long)]
    pub before: Option<usize>,
    /// Ideas at or after it (default 5, at most 50).
    #[arg(long)]
    pub after: Option<usize>,
    #[command(flatten)]
    pub target: QueryTarget,
}

/// `session-context`.
#[derive(Debug, Args)]
pub struct SessionContextArgs {
    /// The session.
    #[arg(long)]
    pub session: String,
    #[command(flatten)]
    pub target: QueryTarget,
}
