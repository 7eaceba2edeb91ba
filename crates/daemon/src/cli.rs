//! The command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::query_target::QueryTarget;

/// Long-term memory for coding agents.
#[derive(Debug, Parser)]
#[command(name = "memory-daemon", version, about)]
pub struct Cli {
    /// Data directory (default: `data_dir` from config, else the OS data dir).
    #[arg(long, global = true, env = "AGENT_MEMORY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Configuration file (default: ~/.config/agent-memory/config.toml when present).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Log filter for this run, e.g. `debug` (default: `warn` for tools, config for serve).
    #[arg(long, global = true)]
    pub log_level: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve ingest over NATS (request/reply and JetStream) with metrics and health.
    Serve(ServeArgs),
    /// Ingest a JSONL file of events directly into the data dir.
    Ingest(IngestArgs),
    /// Read stored events.
    Events {
        /// What to read.
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Event counts, outbox head, consumer cursors and lag, dead letters.
    Status(StatusArgs),
    /// Configuration.
    Config {
        /// What to do.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Search memory (the `search` call), or TOC nodes with --node, --parent or --level.
    Search(SearchArgs),
    /// Walk the time hierarchy towards a question and show the path taken.
    Navigate(NavigateArgs),
    /// Browse the time table of contents.
    Toc {
        /// What to show.
        #[command(subcommand)]
        command: TocCommand,
    },
    /// Grips: the verbatim excerpts behind TOC bullets.
    Grip {
        /// What to do.
        #[command(subcommand)]
        command: GripCommand,
    },
    /// The BM25 index directly: keyword hits with scores, and its status.
    Teleport {
        #[command(subcommand)]
        command: TeleportCommand,
    },
    /// The ideas graph: search ideas, one idea, open questions and todos, decisions.
    Ideas {
        /// What to show.
        #[command(subcommand)]
        command: crate::ideas_args::IdeasCommand,
    },
    /// Entities of the ideas graph and the ideas that mention them.
    Entities {
        /// What to show.
        #[command(subcommand)]
        command: crate::ideas_args::EntitiesCommand,
    },
    /// Topic spans of a session.
    Spans {
        /// What to show.
        #[command(subcommand)]
        command: crate::ideas_args::SpansCommand,
    },
    /// The ideas just before and after an event, an idea or a time.
    Timeline(crate::ideas_args::TimelineArgs),
    /// What one session did: its ideas, the questions and todos it opened and closed.
    SessionContext(crate::ideas_args::SessionContextArgs),
    /// Operator tasks.
    Admin {
        /// What to do.
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Cluster mode on NATS JetStream: create the replicated log, assign partitions to
    /// groups, show the cluster.
    Cluster {
        /// What to do.
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// Ingest the bundled sample conversations into a temporary data dir and show them.
    Demo(DemoArgs),
    /// Capture one hook input of a coding agent (JSON on stdin) and send it to the daemon
    /// within `[capture] hook_timeout_ms`, else to the spool.
    Hook(HookArgs),
    /// Events the hooks could not deliver.
    Spool {
        /// What to do.
        #[command(subcommand)]
        command: SpoolCommand,
    },
    /// Import a coding agent's transcripts (idempotent, resumable).
    Import(ImportArgs),
    /// Write the hooks and the MCP server into the agent's settings (kept: everything
    /// else there).
    Install(InstallArgs),
    /// Remove what `install` wrote.
    Uninstall(InstallArgs),
    /// Serve the memory to agents as an MCP server (stdio, or streamable HTTP with
    /// --listen): tools search, navigate, timeline, get_events, remember, status.
    Mcp(McpArgs),
}

/// A coding agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentArg {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

/// `hook`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// Whose hook input it is.
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// The hook input as an argument instead of on stdin (Codex's `notify` program
    /// gets its JSON payload as its last argument).
    pub payload: Option<String>,
    /// The daemon's NATS URL (default: `[nats] url`).
    #[arg(long)]
    pub nats_url: Option<String>,
    /// End-to-end deadline, milliseconds (default: `[capture] hook_timeout_ms`).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
}

/// `spool`.
#[derive(Debug, Subcommand)]
pub enum SpoolCommand {
    /// Send the spooled events; what is not taken stays.
    Flush(SpoolFlushArgs),
}

/// `spool flush`.
#[derive(Debug, Args)]
pub struct SpoolFlushArgs {
    /// The daemon's NATS URL (default: `[nats] url`).
    #[arg(long, conflicts_with = "embedded")]
    pub nats_url: Option<String>,
    /// Store straight into the data dir (no daemon running).
    #[arg(long)]
    pub embedded: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `install` / `uninstall`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Which agent.
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// Into the project's `.claude/settings.json` and `.mcp.json` (of DIR, default the
    /// current directory) instead of the user's.
    #[arg(long, num_args = 0..=1, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<Option<PathBuf>>,
    /// Into the user's `~/.claude/settings.json` and `~/.claude.json` (the default).
    #[arg(long)]
    pub user: bool,
}

/// `import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Whose transcripts.
    #[arg(value_enum)]
    pub agent: AgentArg,
    /// Where they are (default `~/.claude/projects` or `~/.codex/sessions`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Only turns from this time (RFC 3339, date or epoch ms).
    #[arg(long)]
    pub since: Option<String>,
    /// Keep running and import new lines as they are written.
    #[arg(long)]
    pub follow: bool,
    /// Project of every event, instead of the one git gives (default `[capture] project`).
    #[arg(long)]
    pub project: Option<String>,
    /// Send to a running daemon instead of opening the data dir.
    #[arg(long)]
    pub nats_url: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The question or search terms.
    #[arg(conflicts_with = "batch")]
    pub query: Option<String>,
    /// The query (the seed CLI's spelling; same as the positional argument).
    #[arg(long = "query", conflicts_with = "query")]
    pub query_flag: Option<String>,
    /// JSONL file of search requests (`-` for standard input); one JSON response per
    /// line, in order, for evaluation tools.
    #[arg(long)]
    pub batch: Option<PathBuf>,
    /// Which tier answers: auto, toc, keyword, semantic, hybrid.
    #[arg(long)]
    pub mode: Option<String>,
    /// Most results.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Most tokens of evidence in the response.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// Search within one node (`toc.search_node`).
    #[arg(long, conflicts_with_all = ["parent", "level", "batch"])]
    pub node: Option<String>,
    /// Search the children of a node (`toc.search_children`).
    #[arg(long, conflicts_with_all = ["level", "batch"])]
    pub parent: Option<String>,
    /// Search every node of a level: year, month, week, day, segment.
    #[arg(long, conflicts_with = "batch")]
    pub level: Option<String>,
    /// Only events from this time (RFC 3339, date or epoch ms).
    #[arg(long)]
    pub from: Option<String>,
    /// Only events before this time.
    #[arg(long)]
    pub to: Option<String>,
    /// Another search phrase, searched with the query (repeat for up to five).
    #[arg(long = "phrase", conflicts_with_all = ["node", "parent", "level", "llm_phrases"])]
    pub phrases: Vec<String>,
    /// Let the `[llm]` model write the search phrases (`phrases: "llm"`).
    #[arg(long, conflicts_with_all = ["node", "parent", "level"])]
    pub llm_phrases: bool,
    /// Only hits of this kind: toc_node, grip, event.
    #[arg(long = "type", conflicts_with_all = ["node", "parent", "level"])]
    pub doc_type: Option<String>,
    /// Weight evidence by recency: this many days back counts three quarters.
    #[arg(long = "recency-days", conflicts_with_all = ["node", "parent", "level"])]
    pub recency_half_life_days: Option<f64>,
    /// Where to send it.
    #[command(flatten)]
    pub target: QueryTarget,
}

/// `navigate`.
#[derive(Debug, Args)]
pub struct NavigateArgs {
    /// The question, time hints included ("what did we decide about JWT last week?").
    pub query: String,
    /// Show every step with its reason and the evidence's grips.
    #[arg(long)]
    pub verbose: bool,
    /// Most tokens of evidence.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// "Now" for relative hints (RFC 3339 or date); default the current time.
    #[arg(long)]
    pub now: Option<String>,
    /// Where to send it.
    #[command(flatten)]
    pub target: QueryTarget,
}

/// `toc`.
#[derive(Debug, Subcommand)]
pub enum TocCommand {
    /// The years that hold data.
    Root {
        /// Where to send it.
        #[command(flatten)]
        target: QueryTarget,
    },
    /// One node with its bullets, grips and children.
    Node {
        /// `toc:day:2026-01-30` and the like.
        node_id: String,
        /// Where to send it.
        #[command(flatten)]
        target: QueryTarget,
    },
    /// The children of a node (of the root when no id is given), a page at a time.
    Browse {
        /// The parent node.
        node_id: Option<String>,
        /// Children per page.
        #[arg(long)]
        limit: Option<usize>,
        /// Token from the previous page.
        #[arg(long)]
        page_token: Option<String>,
        /// Where to send it.
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `grip`.
#[derive(Debug, Subcommand)]
pub enum GripCommand {
    /// A grip with the events it quotes and their neighbours.
    Expand {
        /// `grip:<ts_ms>:<ULID>`.
        grip_id: String,
        /// Events before.
        #[arg(long)]
        before: Option<usize>,
        /// Events after.
        #[arg(long)]
        after: Option<usize>,
        /// Where to send it.
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `admin`.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Delete a projection and rebuild it from the event log.
    Rebuild {
        /// Which projection: `toc` (segments, grips and the tree) or `ideas` (the ideas
        /// graph, re-extracted in log order).
        #[arg(long)]
        projection: String,
        /// A running daemon to ask instead of opening the data dir.
        #[command(flatten)]
        remote: RemoteArgs,
    },
    /// Re-extract the ideas graph one session at a time, oldest first (the indexing
    /// agent's backfill mode), with a progress bar.
    BackfillIdeas {
        /// Only this project (default: every project).
        #[arg(long)]
        project: Option<String>,
        /// A running daemon to ask instead of opening the data dir.
        #[command(flatten)]
        remote: RemoteArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild an accelerator index from the log and the TOC into a new directory and
    /// swap it in atomically; searches use the old one meanwhile.
    RebuildIndex {
        /// Which index: `bm25`.
        #[arg(long, default_value = "bm25")]
        index: String,
        /// A running daemon to ask instead of opening the data dir.
        #[command(flatten)]
        remote: RemoteArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove old documents from the BM25 and vector indexes (never from the log or the
    /// TOC). Without `--age-days`, applies the configured retention, as the scheduled
    /// prune does.
    #[command(alias = "prune-bm25")]
    PruneIndex {
        /// Remove documents older than this many days.
        #[arg(long)]
        age_days: Option<u32>,
        /// Which documents `--age-days` applies to: `segment` (segment nodes, grips and
        /// events), `grip`, `event`, `day`, `week`, `month`, `year` or `all`.
        #[arg(long, default_value = "all", requires = "age_days")]
        level: String,
        /// A running daemon to ask instead of opening the data dir.
        #[command(flatten)]
        remote: RemoteArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove what slipped past redaction from everything the data dir holds: rewrites
    /// the events in place (the audited exception to the log's immutability, recorded
    /// by a `memory_forgotten` tombstone), scrubs dead letters and the hooks' spool,
    /// rebuilds every projection and index from the rewritten log, and compacts the
    /// store so no older copy stays on disk. Offline: stop the daemon first.
    Forget(ForgetArgs),
    /// Back up the store and the indexes — a consistent cut, with the log position it
    /// matches — into a new directory, while the daemon serves (`--nats-url`) or from
    /// the stopped daemon's data dir.
    Backup {
        /// The new directory (it must not exist, or be empty; not inside the data dir).
        #[arg(long)]
        to: std::path::PathBuf,
        /// A running daemon to ask instead of opening the data dir.
        #[command(flatten)]
        remote: RemoteArgs,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a stopped daemon's data dir against its log, changing nothing: every
    /// consumer caught up, every index healthy, every projection (catalog, segments,
    /// grips, TOC, ideas) equal to a rebuild from the log in a scratch dir, and each
    /// index holding exactly the documents the log implies. Prints what differs; exits
    /// 1 when anything does.
    Verify(VerifyArgs),
    /// Restore a backup into an empty data dir (the daemon stopped); the daemon started
    /// on it catches up from the backup's position.
    Restore {
        /// The backup's directory (it is copied, not changed).
        #[arg(long)]
        from: std::path::PathBuf,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `admin verify`.
#[derive(Clone, Debug, Default, Args)]
pub struct VerifyArgs {
    /// Where to make the scratch dir the rebuild runs in (about the store's size; removed
    /// afterwards). Default: the system's temp dir.
    #[arg(long)]
    pub scratch_dir: Option<PathBuf>,
    /// Keep the scratch dir (its path is printed), to look at the rebuilt store.
    #[arg(long)]
    pub keep_scratch: bool,
    /// Differences shown per projection and index.
    #[arg(long, default_value_t = 3)]
    pub examples: usize,
    /// Print the report as JSON (with `ok`, `diverged`, `behind`, `unhealthy`).
    #[arg(long)]
    pub json: bool,
}

/// `cluster`.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Create the replicated log (stream `MEMORY_LOG`, partitioned by project), its KV
    /// buckets, and print the account mapping the NATS servers need. Idempotent.
    Init {
        /// NATS URL(s), comma-separated (default `[nats] url`).
        #[arg(long)]
        nats_url: Option<String>,
        /// Partitions, fixed once the log exists.
        #[arg(long, default_value_t = 64)]
        partitions: u16,
        /// Copies of the log and the buckets (3 in a three-server cluster).
        #[arg(long, default_value_t = 3)]
        replicas: usize,
        /// How long the log remembers a `Nats-Msg-Id`, seconds.
        #[arg(long, default_value_t = 120)]
        duplicate_window_secs: u64,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give partitions to a group of daemons (taking them from the group that had them).
    Assign {
        /// The group.
        #[arg(long)]
        group: String,
        /// `0-63`, `0-15,32-47`, `7`.
        #[arg(long)]
        partitions: String,
        /// NATS URL(s), comma-separated (default `[nats] url`).
        #[arg(long)]
        nats_url: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Have one node take a snapshot of its store and indexes (without stopping) and
    /// upload it as its group's latest, which new replicas of the group start from.
    Snapshot {
        /// The node (its `--node-id`).
        #[arg(long)]
        node: String,
        /// NATS URL(s), comma-separated (default `[nats] url`).
        #[arg(long)]
        nats_url: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The log's replicas and leader, the assignment, messages per partition, leases.
    Status {
        /// NATS URL(s), comma-separated (default `[nats] url`).
        #[arg(long)]
        nats_url: Option<String>,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `admin forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// What to forget.
    #[command(flatten)]
    pub selector: ForgetSelectorArgs,
    /// Only this project's events (`--event` and `--session`; a pattern applies to
    /// every project).
    #[arg(long)]
    pub project: Option<String>,
    /// Say what would be rewritten, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// How long to wait for the rebuilt indexes (embedding is the slow part; what is
    /// left resumes at the daemon's next start).
    #[arg(long, default_value_t = 600)]
    pub wait_timeout_secs: u64,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One of: the events, the session, the pattern, or finishing a forget cut short.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct ForgetSelectorArgs {
    /// These events, wholly (repeat the flag for more): their text and metadata values
    /// become `[FORGOTTEN]`; id, session, time and kind stay.
    #[arg(long = "event", value_name = "EVENT_ID")]
    pub events: Vec<String>,
    /// Every event of this session, wholly.
    #[arg(long)]
    pub session: Option<String>,
    /// Every span this regular expression (Rust `regex` syntax) matches, in every
    /// event's text and metadata values, becomes `[FORGOTTEN:<tag>]`.
    #[arg(long = "match", value_name = "REGEX")]
    pub pattern: Option<String>,
    /// Finish a forget that was interrupted (every other command refuses the data dir
    /// until it is finished).
    #[arg(long)]
    pub resume: bool,
}

/// `teleport`.
#[derive(Debug, Subcommand)]
pub enum TeleportCommand {
    /// BM25 search: the best documents with their scores.
    Search {
        /// Natural language or keywords (never parsed as syntax).
        query: String,
        /// Only `toc_node`, `grip` or `event` documents.
        #[arg(long = "type")]
        doc_type: Option<String>,
        /// Only TOC nodes of this level (`segment`, `day`, `week`, `month`, `year`).
        #[arg(long)]
        level: Option<String>,
        /// Most results.
        #[arg(long, default_value_t = memory_query::DEFAULT_TELEPORT_LIMIT)]
        limit: usize,
        /// Only documents at or after this time (RFC 3339, date or epoch ms).
        #[arg(long)]
        from: Option<String>,
        /// Only documents before this time.
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        target: QueryTarget,
    },
    /// Vector search: the documents nearest in meaning, with their similarity.
    Vector {
        /// Natural language.
        query: String,
        /// Only `toc_node`, `grip` or `event` documents.
        #[arg(long = "type")]
        doc_type: Option<String>,
        /// Most results.
        #[arg(long, default_value_t = memory_query::DEFAULT_TELEPORT_LIMIT)]
        limit: usize,
        #[command(flatten)]
        target: QueryTarget,
    },
    /// Whether BM25 is enabled and healthy, its documents, size, last commit and prune.
    Status {
        #[command(flatten)]
        target: QueryTarget,
    },
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// NATS server URL (overrides `nats.url`).
    #[arg(long)]
    pub nats_url: Option<String>,
    /// Address of /metrics, /healthz and /readyz (overrides `telemetry.metrics_listen`).
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Cluster mode: apply this group's partitions of the replicated log, answer their
    /// queries and any project's ingest (`cluster init` and `cluster assign` first).
    #[arg(long, requires_all = ["node_id", "group"])]
    pub cluster: bool,
    /// This daemon's node id in the cluster (letters, digits, `-`, `_`).
    #[arg(long, requires = "cluster")]
    pub node_id: Option<String>,
    /// Its group.
    #[arg(long, requires = "cluster")]
    pub group: Option<String>,
    /// How a replica with an empty data dir starts: from its group's latest snapshot
    /// when one fits, else by replaying the log (`auto`); only from a snapshot
    /// (`snapshot`); or by replaying the whole log (`replay`).
    #[arg(long, value_enum, default_value_t, requires = "cluster")]
    pub bootstrap: crate::snapshot_cli::Bootstrap,
    /// While this node holds its group's lease, it uploads a snapshot whenever the
    /// group's latest is older than this many seconds (0: never on a schedule; `cluster
    /// snapshot` still takes one).
    #[arg(long, default_value_t = 21_600, requires = "cluster")]
    pub snapshot_interval_secs: u64,
}

/// How long `ingest --wait` waits for the projections by default, seconds.
pub const DEFAULT_WAIT_TIMEOUT_SECS: u64 = 600;

/// `ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// JSONL file, one event per line (`-` for standard input).
    #[arg(long)]
    pub file: PathBuf,
    /// Project of events that name none.
    #[arg(long, default_value = memory_types::DEFAULT_PROJECT)]
    pub project: String,
    /// Wait until every projection has applied the new events before exiting.
    #[arg(long)]
    pub wait: bool,
    /// Longest wait of `--wait`, seconds; what is not caught up by then resumes on the
    /// next start. Embedding a large backfill takes a while (docs/benchmarks.md).
    #[arg(long, default_value_t = DEFAULT_WAIT_TIMEOUT_SECS, requires = "wait")]
    pub wait_timeout_secs: u64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `events`.
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Print stored events as JSONL in time order (re-ingestable).
    Export(ExportArgs),
}

/// `events export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The project.
    #[arg(long)]
    pub project: String,
    /// Only this session.
    #[arg(long)]
    pub session: Option<String>,
    /// From this time (RFC 3339 or epoch ms), inclusive.
    #[arg(long)]
    pub from: Option<String>,
    /// Until this time (RFC 3339 or epoch ms), exclusive.
    #[arg(long)]
    pub to: Option<String>,
}

/// `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// A running daemon to ask instead of opening the data dir.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A running daemon to ask, instead of opening the data dir.
#[derive(Clone, Debug, Default, Args)]
pub struct RemoteArgs {
    /// Ask a running daemon over NATS instead of opening the data dir.
    #[arg(long)]
    pub nats_url: Option<String>,
    /// Cluster mode: ask this node (its `--node-id`), which answers on
    /// `memory.admin.<node>.…`; a cluster has no daemon-wide admin subjects.
    #[arg(long, requires = "nats_url")]
    pub node: Option<String>,
}

/// `config`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration (secrets masked).
    Show,
}

/// `demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Sample file to ingest (default: the bundled sample conversations).
    #[arg(long)]
    pub file: Option<PathBuf>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Use the daemon at this NATS URL. Default: the daemon at `[nats] url` when one
    /// answers there within a second, else the data dir itself.
    #[arg(long, conflicts_with = "embedded")]
    pub nats_url: Option<String>,
    /// Open the data dir even when a daemon answers (none may be serving it).
    #[arg(long)]
    pub embedded: bool,
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio: `HOST:PORT`, or a
    /// port alone for 127.0.0.1.
    #[arg(long, value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,
    /// The project of calls and resources that name none. Default: `[capture] project`,
    /// else the project of the working directory as the hooks name it (git's origin
    /// `owner-repo`, the repository's folder, the directory's name), so an agent started
    /// in a repository reads what its hooks stored.
    #[arg(long)]
    pub project: Option<String>,
    /// Also serve /metrics, /healthz and /readyz on this address.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
}

pub(crate) fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            port,
        ));
    }
    text.parse::<SocketAddr>()
        .map_err(|_| format!("{text:?} is not HOST:PORT (127.0.0.1:8765, [::1]:8765) or a port"))
}
