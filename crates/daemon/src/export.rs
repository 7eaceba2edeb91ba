//! `events export`: stored events as JSONL, in time order, ready to ingest again.

use std::io::{BufWriter, ErrorKind, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use memory_config::Config;

use crate::cli::ExportArgs;
use crate::embedded::{init_tool_tracing, open_store};

pub fn run(
    config: &Config,
    data_dir: &Path,
    args: &ExportArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    write_events(config, data_dir, args, None)?;
    Ok(ExitCode::SUCCESS)
}

/// Parses `--from`/`--to`: RFC 3339 or epoch milliseconds.
pub fn parse_time(text: &str) -> anyhow::Result<u64> {
    if let Ok(millis) = text.parse::<u64>() {
        return Ok(millis);
    }
    let parsed = chrono::DateTime::parse_from_rfc3339(text).with_context(|| {
        format!("{text:?} is neither RFC 3339 (2026-01-30T09:00:00Z) nor epoch milliseconds")
    })?;
    u64::try_from(parsed.timestamp_millis()).with_context(|| format!("{text:?} is before 1970"))
}

/// Writes the selected events to stdout, at most `limit`. A closed pipe (`| head`) ends
/// the export quietly.
pub fn write_events(
    config: &Config,
    data_dir: &Path,
    args: &ExportArgs,
    limit: Option<usize>,
) -> anyhow::Result<()> {
    let from = args.from.as_deref().map(parse_time).transpose()?;
    let to = args.to.as_deref().map(parse_time).transpose()?;
    if let (Some(from), Some(to)) = (from, to)
        && from >= to
    {
        bail!("--from must be before --to");
    }
    let store = open_store(config, data_dir)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let events = store.scan_events(&args.project, args.session.as_deref(), from, to);
    for item in events.take(limit.unwrap_or(usize::MAX)) {
        let (_, event) = item.context("cannot read the event log")?;
        let line = serde_json::to_string(&event).context("cannot encode an event")?;
        if let Err(err) = writeln!(out, "{line}") {
            if err.kind() == ErrorKind::BrokenPipe {
                return Ok(());
            }
            return Err(err).context("cannot write to stdout");
        }
    }
    match out.flush() {
        Err(err) if err.kind() != ErrorKind::BrokenPipe => {
            Err(err).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}
