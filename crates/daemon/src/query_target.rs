//! [`QueryTarget`]: where a query CLI command goes, shared by the command
//! definitions and the files that run them.

use clap::Args;

/// Where a query goes: the data dir (default) or a running daemon.
#[derive(Debug, Args, Clone)]
pub struct QueryTarget {
    /// The project to read.
    #[arg(long, default_value = memory_types::DEFAULT_PROJECT)]
    pub project: String,
    /// Send the call to a running daemon over NATS instead of opening the data dir.
    #[arg(long)]
    pub nats_url: Option<String>,
    /// Print the JSON response.
    #[arg(long)]
    pub json: bool,
}
