//! `import claude-code|codex`: an agent's transcripts on disk into the memory.
//!
//! - Claude Code: `~/.claude/projects/<dir>/*.jsonl`, with subagent files beside a
//!   session (`agent-*.jsonl`) and under it (`<session>/subagents/*.jsonl`). The files of
//!   one project directory are read together, sessions first, so a subagent file that
//!   replays its parent's turns is recognised.
//! - Codex: `~/.codex/sessions/**/rollout-*.jsonl`, one session per file.
//!
//! **Idempotent**: event ids come from the transcripts (see `memory_agents::draft`), so
//! a re-run, or a turn the hooks already sent, is acknowledged as a duplicate.
//! **Resumable**: after a group of files is stored, its files' sizes and times are noted
//! (`<spool_dir>/import-<agent>.json`); a re-run reads only groups that changed.
//! `--follow` then polls for appended lines and new files, and sends them as they come;
//! each file's reader state is kept between polls (a Claude Code response still being
//! written stays open until another line follows or the file is still for 10 s; lines of
//! it written after that are stored as its continuation).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memory_agents::claude_code::{self, SessionBook, TranscriptReader};
use memory_agents::codex::{self, RolloutReader};
use memory_agents::{Occurrences, Projects, Skipped};
use memory_config::Config;
use serde::{Deserialize, Serialize};

use crate::capture_sink::{Delivered, Delivery, spooled};
use crate::cli::{AgentArg, ImportArgs};
use crate::embedded::init_tool_tracing;

/// How long a Claude Code transcript must be still before a trailing response is taken
/// as complete under `--follow`.
const SETTLE: Duration = Duration::from_secs(10);
/// How often `--follow` looks for new lines.
const POLL: Duration = Duration::from_secs(1);

/// Files read together (one book of sessions): a Claude Code project directory, or one
/// Codex rollout.
#[derive(Clone, Debug)]
struct Group {
    key: String,
    files: Vec<PathBuf>,
}

/// What is remembered of a file that was stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    len: u64,
    modified_ms: u64,
}

/// What an import did.
#[derive(Debug, Default, Serialize)]
struct ImportSummary {
    files_read: u64,
    files_unchanged: u64,
    accepted: u64,
    duplicates: u64,
    rejected: u64,
    skipped: BTreeMap<String, u64>,
    errors: Vec<String>,
}

impl ImportSummary {
    fn add(&mut self, delivered: &Delivered, skipped: &Skipped) {
        self.accepted += delivered.accepted;
        self.duplicates += delivered.duplicates;
        self.rejected += delivered.rejected.len() as u64;
        for (reason, count) in skipped.iter() {
            *self.skipped.entry(reason.to_owned()).or_default() += count;
        }
    }
}

/// The state of one group kept while following.
#[derive(Default)]
struct Followed {
    book: SessionBook,
    occurrences: Occurrences,
    offsets: HashMap<PathBuf, u64>,
    claude_files: HashMap<PathBuf, claude_code::FileState>,
    codex_files: HashMap<PathBuf, codex::RolloutState>,
}

pub async fn run(
    config: &Config,
    data_dir: &Path,
    args: ImportArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let agent = args.agent;
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => default_dir(agent).context("no home directory: pass --dir")?,
    };
    if !dir.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    let since_ms = args
        .since
        .as_deref()
        .map(crate::export::parse_time)
        .transpose()?;
    let delivery = match &args.nats_url {
        Some(url) => {
            Delivery::remote(
                config,
                Some(url),
                Duration::from_secs(config.nats.request_timeout_secs.max(1)),
            )
            .await?
        }
        None => Delivery::embedded(config, data_dir).await?,
    };
    let spool = crate::hook_cli::spool_dir(config, data_dir);
    let cursor_path = spool
        .root()
        .join(format!("import-{}.json", agent_name(agent)));
    let mut cursor: BTreeMap<String, Seen> = std::fs::read(&cursor_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let project = args
        .project
        .clone()
        .or_else(|| config.capture.project.clone());
    let mut summary = ImportSummary::default();
    let mut followed: HashMap<String, Followed> = HashMap::new();
    let groups = discover(agent, &dir)?;
    let progress = progress_bar(groups.len() as u64, args.json);
    for group in &groups {
        progress.inc(1);
        let unchanged = !args.follow
            && group.files.iter().all(|file| {
                cursor.get(&file.to_string_lossy().into_owned()) == seen(file).as_ref()
            });
        if unchanged {
            summary.files_unchanged += group.files.len() as u64;
            continue;
        }
        // What the files were before they were read: lines appended meanwhile are read
        // by the next run, not marked as read.
        let before: Vec<(String, Option<Seen>)> = group
            .files
            .iter()
            .map(|file| (file.to_string_lossy().into_owned(), seen(file)))
            .collect();
        let state = followed.entry(group.key.clone()).or_default();
        match read_group(agent, group, state, project.clone(), since_ms, args.follow) {
            Ok((events, skipped)) => match delivery.send(&events).await {
                Ok(delivered) => {
                    summary.files_read += group.files.len() as u64;
                    summary.add(&delivered, &skipped);
                    // Only a whole read counts as done: not one that left turns before
                    // `--since` out, nor `--follow`'s, which may hold a response back.
                    if since_ms.is_none() && !args.follow {
                        for (file, seen) in before {
                            if let Some(seen) = seen {
                                cursor.insert(file, seen);
                            }
                        }
                        save_cursor(&cursor_path, &cursor)?;
                    }
                }
                Err(err) => {
                    progress.finish_and_clear();
                    delivery.close().await;
                    return Err(err.context(format!("cannot store {}", group.key)));
                }
            },
            Err(err) => summary.errors.push(format!("{}: {err:#}", group.key)),
        }
    }
    progress.finish_and_clear();
    print_summary(&summary, &dir, args.json);
    if args.follow {
        follow(
            agent,
            &dir,
            &delivery,
            &mut followed,
            project,
            since_ms,
            args.json,
        )
        .await?;
    }
    delivery.close().await;
    Ok(if summary.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn agent_name(agent: AgentArg) -> &'static str {
    match agent {
        AgentArg::ClaudeCode => claude_code::SOURCE,
        AgentArg::Codex => codex::SOURCE,
    }
}

fn default_dir(agent: AgentArg) -> Option<PathBuf> {
    let home = dirs::home_dir()?;
    Some(match agent {
        AgentArg::ClaudeCode => home.join(".claude/projects"),
        AgentArg::Codex => home.join(".codex/sessions"),
    })
}

fn seen(file: &Path) -> Option<Seen> {
    let meta = std::fs::metadata(file).ok()?;
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|time| time.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
    Some(Seen {
        len: meta.len(),
        modified_ms,
    })
}

fn save_cursor(path: &Path, cursor: &BTreeMap<String, Seen>) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, serde_json::to_vec(cursor)?)?;
    std::fs::rename(&temporary, path)?;
    Ok(())
}

/// The groups under `dir`, in a stable order.
fn discover(agent: AgentArg, dir: &Path) -> anyhow::Result<Vec<Group>> {
    let mut groups = Vec::new();
    match agent {
        AgentArg::ClaudeCode => {
            let mut project_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect();
            project_dirs.sort();
            for project_dir in project_dirs {
                let mut sessions = Vec::new();
                let mut subagents = Vec::new();
                for entry in std::fs::read_dir(&project_dir)?.filter_map(Result::ok) {
                    let path = entry.path();
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if path.is_file() && name.ends_with(".jsonl") {
                        if name.starts_with("agent-") {
                            subagents.push(path);
                        } else {
                            sessions.push(path);
                        }
                    } else if path.is_dir() {
                        let nested = path.join("subagents");
                        if let Ok(entries) = std::fs::read_dir(&nested) {
                            subagents.extend(
                                entries
                                    .filter_map(Result::ok)
                                    .map(|entry| entry.path())
                                    .filter(|path| {
                                        path.extension().is_some_and(|ext| ext == "jsonl")
                                    }),
                            );
                        }
                    }
                }
                sessions.sort();
                subagents.sort();
                sessions.extend(subagents);
                if !sessions.is_empty() {
                    groups.push(Group {
                        key: project_dir.to_string_lossy().into_owned(),
                        files: sessions,
                    });
                }
            }
        }
        AgentArg::Codex => {
            let mut files = Vec::new();
            let mut pending = vec![dir.to_path_buf()];
            while let Some(next) = pending.pop() {
                for entry in std::fs::read_dir(&next)?.filter_map(Result::ok) {
                    let path = entry.path();
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if path.is_dir() {
                        pending.push(path);
                    } else if name.starts_with("rollout-") && name.ends_with(".jsonl") {
                        files.push(path);
                    }
                }
            }
            files.sort();
            groups.extend(files.into_iter().map(|file| Group {
                key: file.to_string_lossy().into_owned(),
                files: vec![file],
            }));
        }
    }
    Ok(groups)
}

/// The complete lines of `file` after `offset` (and, unless `following`, a last line
/// without its newline: the file is done). Returns the lines and the new offset.
fn new_lines(file: &Path, offset: u64, following: bool) -> anyhow::Result<(Vec<u8>, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut handle =
        std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let len = handle.metadata()?.len();
    let offset = if len < offset { 0 } else { offset };
    handle.seek(SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    handle.read_to_end(&mut bytes)?;
    let mut end = bytes
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |i| i + 1);
    if !following && end < bytes.len() {
        end = bytes.len();
    }
    bytes.truncate(end);
    Ok((bytes, offset + end as u64))
}

/// Reads a group's new lines into events.
fn read_group(
    agent: AgentArg,
    group: &Group,
    state: &mut Followed,
    project: Option<String>,
    since_ms: Option<u64>,
    follow: bool,
) -> anyhow::Result<(Vec<memory_agents::SpooledEvent>, Skipped)> {
    let mut projects = Projects::new(project.clone());
    let mut events = Vec::new();
    let mut skipped = Skipped::default();
    for file in &group.files {
        let offset = state.offsets.get(file).copied().unwrap_or(0);
        let (bytes, new_offset) = new_lines(file, offset, follow)?;
        state.offsets.insert(file.clone(), new_offset);
        // Under `--follow` a file is read in slices: each reader resumes what the last
        // one knew of the file (tool calls awaiting results, the session's project, an
        // open response), so nothing depends on where a slice ends.
        let (read, file_skipped) = match agent {
            AgentArg::ClaudeCode => {
                let known = state.claude_files.remove(file).unwrap_or_default();
                let mut reader = TranscriptReader::resume(
                    &mut state.book,
                    &mut projects,
                    claude_code::Scope::All,
                    since_ms,
                    known,
                );
                for line in bytes.split(|byte| *byte == b'\n') {
                    reader.line(line);
                }
                if follow && !still_for(file, SETTLE) {
                    let (read, skipped, known) = reader.suspend();
                    state.claude_files.insert(file.clone(), known);
                    (read, skipped)
                } else {
                    // The file's end is the open response's end.
                    reader.flush_idle();
                    let (read, skipped, known) = reader.suspend();
                    if follow {
                        state.claude_files.insert(file.clone(), known);
                    }
                    (read, skipped)
                }
            }
            AgentArg::Codex => {
                let known = state.codex_files.remove(file).unwrap_or_else(|| {
                    let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                    codex::RolloutState::starting(
                        name.as_deref().and_then(codex::session_from_file_name),
                    )
                });
                let mut reader = RolloutReader::resume(
                    &mut state.occurrences,
                    &mut projects,
                    codex::Scope::All,
                    since_ms,
                    known,
                );
                for line in bytes.split(|byte| *byte == b'\n') {
                    reader.line(line);
                }
                let (read, skipped, known) = reader.suspend();
                if follow {
                    state.codex_files.insert(file.clone(), known);
                }
                (read, skipped)
            }
        };
        skipped.merge(&file_skipped);
        events.extend(spooled(project.as_deref(), read));
    }
    Ok((events, skipped))
}

/// Whether `file` has not been written for `settle`.
fn still_for(file: &Path, settle: Duration) -> bool {
    std::fs::metadata(file)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|time| time.elapsed().ok())
        .is_some_and(|elapsed| elapsed >= settle)
}

/// `--follow`: polls for new lines and files until interrupted.
async fn follow(
    agent: AgentArg,
    dir: &Path,
    delivery: &Delivery,
    followed: &mut HashMap<String, Followed>,
    project: Option<String>,
    since_ms: Option<u64>,
    json: bool,
) -> anyhow::Result<()> {
    if !json {
        println!("following {} (Ctrl-C stops)", dir.display());
    }
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            () = tokio::time::sleep(POLL) => {}
        }
        for group in discover(agent, dir)? {
            let state = followed.entry(group.key.clone()).or_default();
            let (events, skipped) =
                match read_group(agent, &group, state, project.clone(), since_ms, true) {
                    Ok(read) => read,
                    Err(err) => {
                        tracing::warn!(group = %group.key, error = %err, "cannot read");
                        continue;
                    }
                };
            if events.is_empty() {
                continue;
            }
            let delivered = delivery.send(&events).await?;
            let mut summary = ImportSummary {
                files_read: group.files.len() as u64,
                ..ImportSummary::default()
            };
            summary.add(&delivered, &skipped);
            print_summary(&summary, Path::new(&group.key), json);
        }
    }
}

fn progress_bar(total: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} {pos}/{len} {bar:30} {msg} eta {eta}")
    {
        bar.set_style(style);
    }
    bar
}

fn print_summary(summary: &ImportSummary, source: &Path, json: bool) {
    if json {
        println!("{}", serde_json::to_string(summary).unwrap_or_default());
        return;
    }
    println!(
        "imported {}: {} files read, {} unchanged; {} events stored, {} already stored, {} refused",
        source.display(),
        summary.files_read,
        summary.files_unchanged,
        summary.accepted,
        summary.duplicates,
        summary.rejected
    );
    if !summary.skipped.is_empty() {
        let total: u64 = summary.skipped.values().sum();
        let mut reasons: Vec<(&String, &u64)> = summary.skipped.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = reasons
            .iter()
            .take(12)
            .map(|(reason, count)| format!("{reason} {count}"))
            .collect();
        println!("  skipped {total} lines or blocks: {}", shown.join(", "));
    }
    for error in &summary.errors {
        println!("  error: {error}");
    }
}
