//! The hooks' directory: each session's [`HookState`] and the spool of events no daemon
//! took in time.
//!
//! A hook is a short process per agent event, and several may run at once (tool calls in
//! parallel), so every file here is read and written under an exclusive lock
//! (`File::lock`, advisory, released when the file closes) on a lock file of its own,
//! since a rewrite replaces the data file. The spool is JSON lines, appended and fsynced
//! before the hook exits; a flush sends what it holds and replaces it (a temporary file
//! renamed over it, so a crash leaves the old content or the new) with what was not
//! taken. A crash between sending and rewriting sends some events again, which their ids
//! make harmless: nothing is lost and nothing is stored twice.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memory_types::EventV1;
use serde::{Deserialize, Serialize};

use crate::draft::short_hash;
use crate::hook::{Agent, HookState};

/// One spooled event with the project it goes to.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpooledEvent {
    /// The project (None: the daemon's default).
    pub project: Option<String>,
    /// The event.
    pub event: EventV1,
}

/// The hooks' directory (`[capture] spool_dir`).
#[derive(Clone, Debug)]
pub struct SpoolDir {
    root: PathBuf,
}

/// A session's hook state, locked until dropped; [`SessionLock::save`] writes it back.
pub struct SessionLock {
    _lock: File,
    path: PathBuf,
    /// The state as loaded (default for a new session, or an unreadable file).
    pub state: HookState,
}

impl SessionLock {
    /// Writes the state back whole (a temporary file renamed over it, so a crash leaves
    /// the old state or the new, never a torn one); the lock, on a file of its own, is
    /// held until the value is dropped.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn save(&mut self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(&self.state).map_err(std::io::Error::other)?;
        let temporary = self.path.with_extension("json.tmp");
        let mut file = SpoolDir::open_private(&temporary)?;
        file.set_len(0)?;
        file.write_all(&bytes)?;
        file.sync_data()?;
        std::fs::rename(&temporary, &self.path)
    }
}

/// The spool, locked until dropped.
pub struct SpoolLock {
    _lock: File,
    path: PathBuf,
    /// The events it holds, oldest first; lines that do not parse are left out of them
    /// and kept in `unreadable_lines`.
    pub events: Vec<SpooledEvent>,
    /// Lines that were not a spooled event.
    pub unreadable: usize,
    /// Those lines as they are.
    pub unreadable_lines: Vec<String>,
}

impl SpoolLock {
    /// Replaces the spool's content with `remaining` (what was not delivered; empty
    /// after a whole flush); unreadable lines go. Dropping the value instead leaves the
    /// spool untouched.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn keep(self, remaining: &[SpooledEvent]) -> std::io::Result<()> {
        self.keep_lines(remaining, &[])
    }

    /// [`SpoolLock::keep`] with `raw` lines after the events (unreadable lines a caller
    /// keeps). The new content is written beside the spool and renamed over it.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn keep_lines(self, remaining: &[SpooledEvent], raw: &[String]) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        for event in remaining {
            serde_json::to_writer(&mut bytes, event).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
        }
        for line in raw {
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        replace_file(&self.path, &bytes)
    }
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over `path`
/// (then syncs the directory): a crash leaves the old content or the new.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    let mut file = SpoolDir::open_private(&temporary)?;
    file.set_len(0)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    std::fs::rename(&temporary, path)?;
    if let Some(parent) = path.parent() {
        File::open(parent)?.sync_all()?;
    }
    Ok(())
}

impl SpoolDir {
    /// The directory (created on first use).
    #[must_use]
    pub fn new(root: PathBuf) -> SpoolDir {
        SpoolDir { root }
    }

    /// The directory's path.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn open_private(path: &Path) -> std::io::Result<File> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // Events may hold what the daemon would redact: only the user reads them.
            options.mode(0o600);
        }
        options.open(path)
    }

    /// Locks and loads the hook state of `session_id`.
    ///
    /// # Errors
    /// The directory or file cannot be created or locked.
    pub fn session(&self, agent: Agent, session_id: &str) -> std::io::Result<SessionLock> {
        let path = self.session_path(agent, session_id);
        let lock = Self::open_private(&path.with_extension("lock"))?;
        lock.lock()?;
        let state = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => HookState::default(),
            Err(err) => return Err(err),
        };
        Ok(SessionLock {
            _lock: lock,
            path,
            state,
        })
    }

    fn spool_path(&self) -> PathBuf {
        self.root.join("spool.jsonl")
    }

    /// Locks the spool (waiting for it, or None at once when `wait` is false and another
    /// process holds it).
    fn lock_spool(&self, wait: bool) -> std::io::Result<Option<File>> {
        let lock = Self::open_private(&self.root.join("spool.lock"))?;
        if wait {
            lock.lock()?;
        } else if lock.try_lock().is_err() {
            return Ok(None);
        }
        Ok(Some(lock))
    }

    /// The hook state file of `agent`'s session `session_id`.
    #[must_use]
    pub fn session_path(&self, agent: Agent, session_id: &str) -> PathBuf {
        self.root.join("sessions").join(format!(
            "{}-{}.json",
            agent.source(),
            short_hash(session_id)
        ))
    }

    /// Every session's hook state file.
    ///
    /// # Errors
    /// The directory cannot be read.
    pub fn session_files(&self) -> std::io::Result<Vec<PathBuf>> {
        let dir = self.root.join("sessions");
        let mut files = Vec::new();
        match std::fs::read_dir(&dir) {
            Ok(entries) => {
                for entry in entries {
                    let path = entry?.path();
                    if path.extension().is_some_and(|ext| ext == "json") {
                        files.push(path);
                    }
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        files.sort();
        Ok(files)
    }

    /// Rewrites one session's hook state file (from [`SpoolDir::session_files`]) as
    /// JSON under its lock: `rewrite` changes the value and says whether it did. A
    /// temporary file a crashed save left beside it is removed. True when rewritten.
    ///
    /// # Errors
    /// The file cannot be read, parsed or written.
    pub fn rewrite_session_file(
        &self,
        path: &Path,
        rewrite: impl FnOnce(&mut serde_json::Value) -> bool,
    ) -> std::io::Result<bool> {
        let lock = Self::open_private(&path.with_extension("lock"))?;
        lock.lock()?;
        let stale = path.with_extension("json.tmp");
        if stale.exists() {
            std::fs::remove_file(&stale)?;
        }
        let mut value: serde_json::Value = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(err),
        };
        if !rewrite(&mut value) {
            return Ok(false);
        }
        let bytes = serde_json::to_vec(&value).map_err(std::io::Error::other)?;
        replace_file(path, &bytes)?;
        Ok(true)
    }

    /// Appends `events` to the spool and syncs it.
    ///
    /// # Errors
    /// The spool cannot be written.
    pub fn append(&self, events: &[SpooledEvent]) -> std::io::Result<()> {
        let _lock = self.lock_spool(true)?;
        let mut file = Self::open_private(&self.spool_path())?;
        let end = file.seek(SeekFrom::End(0))?;
        let mut bytes = Vec::new();
        if end > 0 {
            // An append cut short (a kill, a full disk) left a line without its newline:
            // end it, so the next line is not glued to it.
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(end - 1))?;
            file.read_exact(&mut last)?;
            file.seek(SeekFrom::End(0))?;
            if last[0] != b'\n' {
                bytes.push(b'\n');
            }
        }
        for event in events {
            serde_json::to_writer(&mut bytes, event).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
        }
        file.write_all(&bytes)?;
        file.sync_data()
    }

    /// Whether the spool holds anything (without locking it).
    #[must_use]
    pub fn has_events(&self) -> bool {
        std::fs::metadata(self.spool_path()).is_ok_and(|meta| meta.len() > 0)
    }

    /// Locks the spool and reads it; send its events, then [`SpoolLock::keep`] what was
    /// not taken. None when there is no spool.
    ///
    /// # Errors
    /// The spool cannot be read or locked.
    pub fn take(&self) -> std::io::Result<Option<SpoolLock>> {
        self.take_locked(true)
    }

    /// [`SpoolDir::take`] unless another process holds the spool (a flush in progress):
    /// then None at once, for a hook that must not wait.
    ///
    /// # Errors
    /// The spool cannot be read.
    pub fn try_take(&self) -> std::io::Result<Option<SpoolLock>> {
        self.take_locked(false)
    }

    fn take_locked(&self, wait: bool) -> std::io::Result<Option<SpoolLock>> {
        let path = self.spool_path();
        if !path.exists() {
            return Ok(None);
        }
        let Some(lock) = self.lock_spool(wait)? else {
            return Ok(None);
        };
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let mut events = Vec::new();
        let mut unreadable_lines = Vec::new();
        for line in BufReader::new(&file).lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<SpooledEvent>(&line) {
                Ok(event) => events.push(event),
                Err(_) => unreadable_lines.push(line),
            }
        }
        Ok(Some(SpoolLock {
            _lock: lock,
            path,
            events,
            unreadable: unreadable_lines.len(),
            unreadable_lines,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_types::{EventKind, TimestampV1};

    fn event(id: &str) -> SpooledEvent {
        SpooledEvent {
            project: Some("webapp".into()),
            event: EventV1 {
                event_id: Some(id.into()),
                session_id: "s".into(),
                project_id: None,
                agent_id: None,
                timestamp: TimestampV1::EpochMillis(1),
                kind: EventKind::Note,
                role: None,
                text: Some("x".into()),
                metadata: None,
            },
        }
    }

    #[test]
    fn spooled_events_survive_until_kept_away() {
        let dir = tempfile::tempdir().expect("test");
        let spool = SpoolDir::new(dir.path().join("spool"));
        assert!(spool.take().expect("test").is_none());
        spool.append(&[event("a"), event("b")]).expect("test");
        spool.append(&[event("c")]).expect("test");
        assert!(spool.has_events());
        let taken = spool.take().expect("test").expect("test");
        let ids: Vec<_> = taken
            .events
            .iter()
            .map(|e| e.event.event_id.clone().expect("test"))
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        taken.keep(&[event("c")]).expect("test");
        let again = spool.take().expect("test").expect("test");
        assert_eq!(again.events.len(), 1);
        again.keep(&[]).expect("test");
        assert!(!spool.has_events());
    }

    #[test]
    fn an_append_cut_short_does_not_swallow_the_next() {
        let dir = tempfile::tempdir().expect("test");
        let spool = SpoolDir::new(dir.path().to_path_buf());
        spool.append(&[event("a")]).expect("test");
        let path = dir.path().join("spool.jsonl");
        let mut file = OpenOptions::new().append(true).open(&path).expect("test");
        file.write_all(br#"{"project":"webapp","eve"#)
            .expect("test");
        spool.append(&[event("b")]).expect("test");
        let taken = spool.take().expect("test").expect("test");
        let ids: Vec<_> = taken
            .events
            .iter()
            .map(|e| e.event.event_id.clone().expect("test"))
            .collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(taken.unreadable, 1);
    }

    #[test]
    fn a_rewrite_can_keep_unreadable_lines_and_replaces_the_file_whole() {
        let dir = tempfile::tempdir().expect("test");
        let spool = SpoolDir::new(dir.path().to_path_buf());
        spool.append(&[event("a"), event("b")]).expect("test");
        let path = dir.path().join("spool.jsonl");
        let mut file = OpenOptions::new().append(true).open(&path).expect("test");
        file.write_all(b"not json\n").expect("test");
        let taken = spool.take().expect("test").expect("test");
        assert_eq!(taken.unreadable_lines, ["not json"]);
        let kept = vec![taken.events[1].clone()];
        taken
            .keep_lines(&kept, &["still not json".to_owned()])
            .expect("test");
        let again = spool.take().expect("test").expect("test");
        assert_eq!(again.events.len(), 1);
        assert_eq!(again.unreadable_lines, ["still not json"]);
        assert!(!dir.path().join("spool.tmp").exists());
        // Appends still reach the replaced file.
        drop(again);
        spool.append(&[event("c")]).expect("test");
        assert_eq!(spool.take().expect("test").expect("test").events.len(), 2);
    }

    #[test]
    fn a_session_file_is_rewritten_under_its_lock() {
        let dir = tempfile::tempdir().expect("test");
        let spool = SpoolDir::new(dir.path().to_path_buf());
        {
            let mut lock = spool.session(Agent::ClaudeCode, "s1").expect("test");
            lock.state.seq = 7;
            lock.save().expect("test");
        }
        let files = spool.session_files().expect("test");
        assert_eq!(files.len(), 1);
        std::fs::write(files[0].with_extension("json.tmp"), "stale").expect("test");
        let rewritten = spool
            .rewrite_session_file(&files[0], |value| {
                value["seq"] = serde_json::json!(9);
                true
            })
            .expect("test");
        assert!(rewritten);
        assert!(!files[0].with_extension("json.tmp").exists());
        let lock = spool.session(Agent::ClaudeCode, "s1").expect("test");
        assert_eq!(lock.state.seq, 9);
    }

    #[test]
    fn session_state_is_kept_between_hooks() {
        let dir = tempfile::tempdir().expect("test");
        let spool = SpoolDir::new(dir.path().to_path_buf());
        {
            let mut lock = spool.session(Agent::ClaudeCode, "s1").expect("test");
            lock.state.seq = 7;
            lock.state.transcript_offset = 99;
            lock.save().expect("test");
        }
        let lock = spool.session(Agent::ClaudeCode, "s1").expect("test");
        assert_eq!((lock.state.seq, lock.state.transcript_offset), (7, 99));
        drop(lock);
        let other = spool.session(Agent::Codex, "s1").expect("test");
        assert_eq!(other.state.seq, 0, "each agent's sessions apart");
    }
}
