//! The command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Ingest the bundled sample conversations into a temporary data dir and show them.
    Demo(DemoArgs),
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
}

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
    /// Ask a running daemon over NATS instead of opening the data dir.
    #[arg(long)]
    pub nats_url: Option<String>,
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
