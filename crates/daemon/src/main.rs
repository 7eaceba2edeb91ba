//! `memory-daemon`: the agent-memory service (`serve`) and its command-line tools, which
//! work on a data dir directly (embedded mode) when no daemon holds it.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod admin_cli;
mod backup_cli;
mod capture_sink;
mod cli;
mod cluster_cli;
mod demo;
mod embedded;
mod export;
mod forget_cli;
mod hook_cli;
mod hook_http;
mod ideas_args;
mod ideas_cli;
mod import_cli;
mod ingest_file;
mod install_cli;
mod mcp;
mod query_cli;
mod query_target;
mod recall;
mod serve;
mod settings;
mod snapshot_cli;
mod status;
mod teleport_cli;
mod verify_cli;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, ConfigCommand, EventsCommand};

/// The store's memtables and the JSON path allocate many small objects per event; with
/// mimalloc, embedded ingest ran markedly faster than with the system allocator
/// (docs/benchmarks.md). In the processes that stay up (`serve`, `mcp`, `import
/// --follow`) what it frees goes back to the OS after `[allocator] purge_delay_ms`
/// (`settings::apply_long_running_settings`).
#[global_allocator]
static GLOBAL: memory_alloc::MiMalloc = memory_alloc::MiMalloc;

/// Turns transparent huge pages off for this process (not the system's setting).
///
/// mimalloc asks for huge pages on its large regions and hands freed parts of them back
/// to the kernel, so the store's commit path, which allocates and frees megabytes per
/// group commit, kept faulting fresh 2 MiB pages that the kernel zeroes first: about 270
/// huge-page faults per 200 000 events ingested, and embedded ingest about a fifth
/// slower than with them off (docs/benchmarks.md, "Commit path: the append batch sized
/// once"). Where the call is refused (another OS, a sandbox), the process runs as before.
fn disable_transparent_huge_pages() {
    // A refusal is not reported: tracing starts later, with the command.
    #[cfg(target_os = "linux")]
    let _refused = rustix::thread::disable_transparent_huge_pages(true).is_err();
}

fn main() -> ExitCode {
    disable_transparent_huge_pages();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    };
    // Dropping the runtime would wait for every blocking task, and an index's final
    // commit that the shutdown stopped waiting for (it waits for the writer a running
    // step holds, on a loaded machine for as long as that step runs) would then hold
    // the SIGTERM after all. What it did not commit is replayed from the index's cursor
    // at the next start, as after a crash; the log itself only acknowledges what it
    // synced. (The steps run on the actors' background runtime, never waited for here.)
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    code
}

/// How long the process waits, once its work is done, for blocking tasks still running.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = memory_config::Config::load(cli.config.as_deref())?;
    let data_dir = config.resolve_data_dir(cli.data_dir.as_deref());
    match cli.command {
        Command::Serve(args) => serve::run(config, data_dir, args).await,
        Command::Ingest(args) => {
            let config = settings::for_batch_job(config);
            ingest_file::run(&config, &data_dir, args, cli.log_level.as_deref()).await
        }
        Command::Events {
            command: EventsCommand::Export(args),
        } => export::run(&config, &data_dir, &args, cli.log_level.as_deref()),
        Command::Status(args) => {
            status::run(&config, &data_dir, &args, cli.log_level.as_deref()).await
        }
        Command::Config {
            command: ConfigCommand::Show,
        } => {
            print!("{}", config.to_masked_toml());
            Ok(ExitCode::SUCCESS)
        }
        Command::Search(args) => {
            query_cli::search(&config, &data_dir, args, cli.log_level.as_deref()).await
        }
        Command::Navigate(args) => {
            query_cli::navigate(&config, &data_dir, args, cli.log_level.as_deref()).await
        }
        Command::Toc { command } => {
            query_cli::toc(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Grip { command } => {
            query_cli::grip(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Teleport { command } => {
            teleport_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Ideas { command } => {
            let command = ideas_cli::IdeasCli::Ideas(command);
            ideas_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Entities { command } => {
            let command = ideas_cli::IdeasCli::Entities(command);
            ideas_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Spans { command } => {
            let command = ideas_cli::IdeasCli::Spans(command);
            ideas_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Timeline(args) => {
            let command = ideas_cli::IdeasCli::Timeline(args);
            ideas_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::SessionContext(args) => {
            let command = ideas_cli::IdeasCli::SessionContext(args);
            ideas_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Admin { command } => {
            let config = settings::for_batch_job(config);
            admin_cli::run(&config, &data_dir, command, cli.log_level.as_deref()).await
        }
        Command::Cluster { command } => {
            let _guard = embedded::init_tool_tracing(&config, cli.log_level.as_deref());
            cluster_cli::run(&config, command).await
        }
        Command::Demo(args) => demo::run(&config, args, cli.log_level.as_deref()).await,
        Command::Hook(args) => Ok(hook_cli::run(&config, &data_dir, args).await),
        Command::Spool {
            command: cli::SpoolCommand::Flush(args),
        } => {
            let _guard = embedded::init_tool_tracing(&config, cli.log_level.as_deref());
            let config = settings::for_batch_job(config);
            hook_cli::flush_command(&config, &data_dir, args).await
        }
        Command::Install(args) => install_cli::run(&args, false),
        Command::Uninstall(args) => install_cli::run(&args, true),
        Command::Import(args) => {
            if args.follow {
                settings::apply_long_running_settings(&config);
            }
            let config = settings::for_batch_job(config);
            import_cli::run(&config, &data_dir, args, cli.log_level.as_deref()).await
        }
        Command::Mcp(args) => mcp::run(&config, &data_dir, args, cli.log_level.as_deref()).await,
    }
}
