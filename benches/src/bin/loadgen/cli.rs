//! The command line: subcommands and their arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use memory_benches::year::YearSpec;

#[derive(Parser)]
#[command(about = "agent-memory load generator")]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Write a JSONL file of events.
    GenFile {
        /// Number of events.
        #[arg(long, default_value_t = 200_000)]
        events: usize,
        /// Output path.
        #[arg(long)]
        out: std::path::PathBuf,
        /// `sample`: the short snippets of the ingest benches; `year`: a year of
        /// coding sessions over four projects (`--events` about, whole sessions).
        #[arg(long, value_enum, default_value_t = Dataset::Sample)]
        dataset: Dataset,
        /// Seed of the `year` data set.
        #[arg(long, default_value_t = YearSpec::default().seed)]
        seed: u64,
    },
    /// Raw NATS request/reply against an in-process echo responder.
    Raw(Load),
    /// Durable ingest through the daemon.
    Ingest(Load),
    /// Open-loop offered load and ack latency.
    Latency {
        /// NATS URL.
        #[arg(long)]
        url: String,
        /// Offered events per second (one event per request).
        #[arg(long, default_value_t = 5_000)]
        rate: u64,
        /// Seconds to offer load.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Project.
        #[arg(long, default_value = "loadgen")]
        project: String,
        /// What answers: the daemon, or a floor this process runs on the same server
        /// (`echo` at once, `fsync-echo` after a group `sync_all` of the payloads into
        /// `--dir`) to read the daemon's latency against in the same run.
        #[arg(long, value_enum, default_value_t = Against::Daemon)]
        against: Against,
        /// Directory of `fsync-echo`'s file: put it on the daemon's data dir's disk.
        #[arg(long, required_if_eq("against", "fsync-echo"))]
        dir: Option<std::path::PathBuf>,
    },
    /// Publish events to JetStream.
    Jetstream {
        /// NATS URL.
        #[arg(long)]
        url: String,
        /// Events.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Project.
        #[arg(long, default_value = "loadgen")]
        project: String,
    },
    /// The TOC query mix against a daemon holding the year data set.
    Query {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to query.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Requests per call kind.
        #[arg(long, default_value_t = 500)]
        requests: usize,
        /// Requests in flight.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
        /// `toc`: the TOC mix (the year data set); `light`: the root, a session's events
        /// and a search, which any project `ingest` filled answers.
        #[arg(long, default_value = "toc")]
        mix: String,
    },
    /// Ingest-to-navigable delay of a live session.
    Navigable {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to write to.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Events per second, one per request.
        #[arg(long, default_value_t = 20)]
        rate: u64,
        /// Seconds to run.
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Pause between two polls of the day node, milliseconds.
        #[arg(long, default_value_t = 2)]
        poll_ms: u64,
        /// Give up on one event after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout_secs: u64,
    },
    /// A recorded JSONL conversation file through the daemon at its own pace (gaps
    /// from its timestamps, divided by `--speed`).
    Replay {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// The events (`sample/conversations.jsonl`'s format).
        #[arg(long)]
        file: std::path::PathBuf,
        /// Times faster than recorded.
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
        /// Longest recorded gap between two sessions, seconds (before `--speed`).
        #[arg(long, default_value_t = 60)]
        session_gap_secs: u64,
    },
    /// BM25 through the daemon: `teleport.search` and `search` (bm25 tier).
    Teleport(TeleportArgs),
    /// `search` at a multiple of the daemon's measured capacity (load shedding).
    Overload(OverloadArgs),
    /// Ingest-to-searchable delay of a live session (BM25 index).
    Searchable {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to write to.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Events per second, one per request.
        #[arg(long, default_value_t = 5)]
        rate: u64,
        /// Events to publish.
        #[arg(long, default_value_t = 200)]
        events: u64,
        /// Pause between two `teleport.search` polls of one event, milliseconds.
        #[arg(long, default_value_t = 5)]
        poll_ms: u64,
        /// Give up on one event after this many seconds.
        #[arg(long, default_value_t = 60)]
        timeout_secs: u64,
    },
    /// Rebuild an index over NATS (`memory.admin.rebuild`) and print its report.
    AdminRebuild {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// The index to rebuild.
        #[arg(long, default_value = "bm25")]
        index_type: String,
        /// Longest wait for the reply, seconds.
        #[arg(long, default_value_t = 900)]
        timeout_secs: u64,
        /// While it runs, every this many milliseconds: `teleport.status` (the rebuild's
        /// phase) and one `teleport.search` (served by the old generation); 0: off.
        #[arg(long, default_value_t = 100)]
        probe_ms: u64,
        /// Project of the probes.
        #[arg(long, default_value = "webapp")]
        probe_project: String,
        /// Rebuilds, one after the other; the median is reported too.
        #[arg(long, default_value_t = 1)]
        runs: usize,
    },
}

/// `overload`'s arguments.
#[derive(Args, Clone)]
pub(super) struct OverloadArgs {
    /// NATS URL.
    #[arg(long = "nats-url", visible_alias = "url")]
    pub(super) url: String,
    /// Seconds of each phase (capacity, then the open loop).
    #[arg(long, default_value_t = 20)]
    pub(super) seconds: u64,
    /// Clients asking back to back while the capacity is measured.
    #[arg(long, default_value_t = 16)]
    pub(super) capacity_concurrency: usize,
    /// The open loop's rate, in multiples of the measured capacity.
    #[arg(long, default_value_t = 4.0)]
    pub(super) factor: f64,
    /// Questions per project.
    #[arg(long, default_value_t = 50)]
    pub(super) questions: usize,
    /// Events of the year the daemon holds (as given to `gen-file --dataset year`).
    #[arg(long, default_value_t = YearSpec::default().events)]
    pub(super) year_events: usize,
    /// Seed of that year.
    #[arg(long, default_value_t = YearSpec::default().seed)]
    pub(super) seed: u64,
}

/// `teleport`'s arguments.
#[derive(Args, Clone)]
pub(super) struct TeleportArgs {
    /// NATS URL.
    #[arg(long = "nats-url", visible_alias = "url")]
    pub(super) url: String,
    /// Requests per call kind and concurrency.
    #[arg(long, default_value_t = 1_000)]
    pub(super) requests: usize,
    /// Requests in flight; a comma-separated list runs each in turn.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    pub(super) concurrency: Vec<usize>,
    /// Questions per project.
    #[arg(long, default_value_t = 50)]
    pub(super) questions: usize,
    /// Hits per call (`limit`).
    #[arg(long, default_value_t = 10)]
    pub(super) limit: usize,
    /// Events of the year the daemon holds (as given to `gen-file --dataset year`):
    /// the questions are made from its texts.
    #[arg(long, default_value_t = YearSpec::default().events)]
    pub(super) year_events: usize,
    /// Seed of that year.
    #[arg(long, default_value_t = YearSpec::default().seed)]
    pub(super) seed: u64,
    /// Only `teleport.search`, not `search`.
    #[arg(long)]
    pub(super) skip_search: bool,
    /// The tier `search` must answer from: `bm25`, or `hybrid` when the daemon's vector
    /// index is on and caught up.
    #[arg(long, default_value = "bm25")]
    pub(super) expect_tier: String,
    /// Print the first few questions.
    #[arg(long, default_value_t = 0)]
    pub(super) show_questions: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(super) enum Dataset {
    Sample,
    Year,
}

#[derive(Args, Clone)]
pub(super) struct Load {
    /// NATS URL.
    #[arg(long)]
    pub(super) url: String,
    /// Requests to send.
    #[arg(long, default_value_t = 2_000)]
    pub(super) requests: usize,
    /// Events per request.
    #[arg(long, default_value_t = 100)]
    pub(super) batch: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 32)]
    pub(super) concurrency: usize,
    /// Project.
    #[arg(long, default_value = "loadgen")]
    pub(super) project: String,
}

/// What answers `loadgen latency`'s requests.
#[derive(Clone, Copy, ValueEnum)]
pub(super) enum Against {
    /// The daemon, through `memory.ingest.<project>`.
    Daemon,
    /// An in-process responder that answers at once.
    Echo,
    /// An in-process responder that answers once the payload is synced to a file.
    FsyncEcho,
}

impl Against {
    /// What `latency`'s line starts with: nothing for the daemon (the line scripts read).
    pub(super) fn label(self) -> &'static str {
        match self {
            Against::Daemon => "",
            Against::Echo => "echo floor: ",
            Against::FsyncEcho => "fsync floor: ",
        }
    }
}
