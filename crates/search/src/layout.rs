//! [`IndexDir`]: where the index lives on disk. The configured directory holds one or
//! more *generations* (`gen-<ULID>/`, each a complete tantivy index) and a `CURRENT`
//! file naming the one in use:
//!
//! ```text
//! bm25-index/
//!   CURRENT                 "gen-01KAZ…"
//!   gen-01KAZ…/             meta.json, segment files
//!   gen-01KB0…/             a rebuild in progress (or one that crashed)
//! ```
//!
//! A rebuild writes a new generation next to the live one, then [`IndexDir::promote`]s
//! it: the new `CURRENT` is written to a temporary file, fsynced and renamed over the
//! old one, so a crash leaves either the old or the new generation current, never a
//! half-built index. Generations that are not current are leftovers and are removed.
//!
//! Exclusivity is the caller's: the daemon opens an index dir only while it holds its
//! data dir's store lock, so no other process can be using it. That is what makes
//! removing leftover generations and tantivy lock files at start safe.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::index::Bm25Index;
use crate::{Result, SearchError};

/// The file naming the current generation.
pub const CURRENT_FILE: &str = "CURRENT";
const GENERATION_PREFIX: &str = "gen-";
/// tantivy's lock files. They are OS advisory locks, released when a process dies, but
/// a file left behind by a crash is still removed at start so the directory holds only
/// what a clean shutdown leaves.
const LOCK_FILES: [&str; 2] = [".tantivy-writer.lock", ".tantivy-meta.lock"];

/// One generation of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    /// `gen-<ULID>`.
    pub name: String,
    /// Its directory.
    pub path: PathBuf,
}

/// What [`IndexDir::open`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenOutcome {
    /// The current generation opened.
    Opened,
    /// There was no index (first start, or the directory was deleted): a new, empty
    /// generation was created and made current.
    Created,
}

/// The index directory.
#[derive(Clone, Debug)]
pub struct IndexDir {
    root: PathBuf,
}

impl IndexDir {
    /// The index directory at `root` (nothing is touched yet).
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The configured directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The generation `CURRENT` names, when the file exists and names a directory that
    /// exists. Read-only.
    pub fn current(&self) -> Result<Option<Generation>> {
        let pointer = self.root.join(CURRENT_FILE);
        let name = match fs::read_to_string(&pointer) {
            Ok(text) => text.trim().to_owned(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error(&pointer, &error)),
        };
        if !is_generation_name(&name) {
            return Err(SearchError::OpenDirectory {
                path: pointer.display().to_string(),
                message: format!("names {name:?}, not a generation"),
            });
        }
        let path = self.root.join(&name);
        Ok(path.is_dir().then_some(Generation { name, path }))
    }

    /// Opens the current generation for reading and writing; when there is none, creates
    /// an empty one and makes it current. Removes leftover generations and lock files
    /// first (see the module docs on exclusivity). A generation that exists but does not
    /// open (corrupt files, another schema) is an error: the caller reports the index
    /// unhealthy and a rebuild replaces it.
    pub fn open(&self, memory_budget_bytes: usize) -> Result<(Bm25Index, OpenOutcome)> {
        fs::create_dir_all(&self.root).map_err(|error| io_error(&self.root, &error))?;
        let current = self.current()?;
        self.remove_generations_except(current.as_ref().map(|g| g.name.as_str()))?;
        match current {
            Some(generation) => {
                for lock in LOCK_FILES {
                    let path = generation.path.join(lock);
                    if path.exists() {
                        tracing::info!(path = %path.display(), "removing a lock file left by an earlier process");
                        fs::remove_file(&path).map_err(|error| io_error(&path, &error))?;
                    }
                }
                let index = Bm25Index::open_or_create(&generation.path, memory_budget_bytes)?;
                Ok((index, OpenOutcome::Opened))
            }
            None => {
                let (generation, index) = self.create_generation(memory_budget_bytes)?;
                self.promote(&generation)?;
                Ok((index, OpenOutcome::Created))
            }
        }
    }

    /// Opens the current generation for reading only (no writer is taken, nothing is
    /// created or removed); `None` when there is no index.
    pub fn open_read_only(&self, memory_budget_bytes: usize) -> Result<Option<Bm25Index>> {
        match self.current()? {
            Some(generation) => Ok(Some(Bm25Index::open_or_create(
                &generation.path,
                memory_budget_bytes,
            )?)),
            None => Ok(None),
        }
    }

    /// A new, empty generation (not current) and its index, for a rebuild.
    pub fn create_generation(&self, memory_budget_bytes: usize) -> Result<(Generation, Bm25Index)> {
        fs::create_dir_all(&self.root).map_err(|error| io_error(&self.root, &error))?;
        let name = format!("{GENERATION_PREFIX}{}", ulid::Ulid::new());
        let path = self.root.join(&name);
        let index = Bm25Index::open_or_create(&path, memory_budget_bytes)?;
        Ok((Generation { name, path }, index))
    }

    /// Makes `generation` current atomically, then removes every other generation. An
    /// index still open on a removed generation keeps working on Unix (its files are
    /// unlinked, not gone, until the last handle closes). Once `CURRENT` is renamed the
    /// swap has happened, so a generation that cannot be removed is logged, not an
    /// error: the next `open` removes it.
    pub fn promote(&self, generation: &Generation) -> Result<()> {
        let pointer = self.root.join(CURRENT_FILE);
        let temporary = self.root.join(format!("{CURRENT_FILE}.tmp"));
        let write = || -> std::io::Result<()> {
            let mut file = fs::File::create(&temporary)?;
            file.write_all(generation.name.as_bytes())?;
            file.sync_all()?;
            fs::rename(&temporary, &pointer)?;
            fs::File::open(&self.root)?.sync_all()
        };
        write().map_err(|error| io_error(&pointer, &error))?;
        if let Err(error) = self.remove_generations_except(Some(&generation.name)) {
            tracing::warn!(%error, "an index generation that is no longer current stays on disk until the next open");
        }
        Ok(())
    }

    /// Bytes on disk of the current generation; 0 when there is none.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        match self.current() {
            Ok(Some(generation)) => directory_size(&generation.path),
            _ => 0,
        }
    }

    fn remove_generations_except(&self, keep: Option<&str>) -> Result<()> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(io_error(&self.root, &error)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_generation_name(&name) && Some(name.as_str()) != keep {
                tracing::info!(generation = %name, "removing an index generation that is not current");
                fs::remove_dir_all(entry.path())
                    .map_err(|error| io_error(&entry.path(), &error))?;
            }
        }
        Ok(())
    }
}

fn is_generation_name(name: &str) -> bool {
    name.strip_prefix(GENERATION_PREFIX)
        .is_some_and(|rest| rest.parse::<ulid::Ulid>().is_ok())
}

fn directory_size(path: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => directory_size(&entry.path()),
            Ok(metadata) => metadata.len(),
            Err(_) => 0,
        })
        .sum()
}

fn io_error(path: &Path, error: &std::io::Error) -> SearchError {
    SearchError::OpenDirectory {
        path: path.display().to_string(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bm25Query, DocType, SearchDoc};

    const BUDGET: usize = 20_000_000;

    fn doc(text: &str) -> SearchDoc {
        SearchDoc {
            doc_type: DocType::Event,
            doc_id: text.to_owned(),
            project_id: "p".to_owned(),
            session_id: None,
            level: None,
            text: text.to_owned(),
            keywords: Vec::new(),
            timestamp_ms: 1,
        }
    }

    fn hits(index: &Bm25Index, text: &str) -> Result<usize> {
        Ok(index.search(&Bm25Query::new(text, "p")?, 10)?.hits.len())
    }

    #[test]
    fn first_open_creates_then_reopens() -> Result<()> {
        let temp = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), &e))?;
        let dir = IndexDir::new(temp.path().join("bm25"));
        assert!(dir.current()?.is_none());
        assert!(dir.open_read_only(BUDGET)?.is_none());
        let (index, outcome) = dir.open(BUDGET)?;
        assert_eq!(outcome, OpenOutcome::Created);
        let mut writer = index.writer()?;
        writer.upsert(&doc("redis"))?;
        writer.commit_with_payload("1")?;
        drop(writer);
        drop(index);
        let (index, outcome) = dir.open(BUDGET)?;
        assert_eq!(outcome, OpenOutcome::Opened);
        assert_eq!(hits(&index, "redis")?, 1);
        assert!(dir.size_bytes() > 0);
        Ok(())
    }

    #[test]
    fn promote_swaps_and_removes_the_old_generation() -> Result<()> {
        let temp = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), &e))?;
        let dir = IndexDir::new(temp.path());
        let (old_index, _) = dir.open(BUDGET)?;
        let old = dir.current()?.expect("current after open");
        let mut writer = old_index.writer()?;
        writer.upsert(&doc("redis"))?;
        writer.commit_with_payload("1")?;

        let (generation, new_index) = dir.create_generation(BUDGET)?;
        let mut new_writer = new_index.writer()?;
        new_writer.upsert(&doc("postgres"))?;
        new_writer.commit_with_payload("2")?;
        // Until promoted, the old generation is current.
        assert_eq!(dir.current()?.as_ref(), Some(&old));
        dir.promote(&generation)?;
        assert_eq!(dir.current()?.as_ref(), Some(&generation));
        assert!(!old.path.exists());
        // The old index, still open, keeps answering from its unlinked files.
        assert_eq!(hits(&old_index, "redis")?, 1);
        let reopened = dir.open_read_only(BUDGET)?.expect("current index");
        assert_eq!(hits(&reopened, "postgres")?, 1);
        assert_eq!(hits(&reopened, "redis")?, 0);
        Ok(())
    }

    #[test]
    fn open_removes_leftovers_and_reports_corruption() -> Result<()> {
        let temp = tempfile::tempdir().map_err(|e| io_error(Path::new("tmp"), &e))?;
        let dir = IndexDir::new(temp.path());
        drop(dir.open(BUDGET)?);
        let current = dir.current()?.expect("current");
        // A rebuild that crashed before its promotion, and a lock file of a dead writer.
        let (crashed, _) = dir.create_generation(BUDGET)?;
        fs::write(current.path.join(".tantivy-writer.lock"), b"")
            .map_err(|e| io_error(&current.path, &e))?;
        let (index, outcome) = dir.open(BUDGET)?;
        assert_eq!(outcome, OpenOutcome::Opened);
        assert!(!crashed.path.exists());
        assert!(index.writer().is_ok());
        drop(index);
        // Garbage in meta.json: an error, not a silently empty index.
        fs::write(current.path.join("meta.json"), b"{not json")
            .map_err(|e| io_error(&current.path, &e))?;
        assert!(dir.open(BUDGET).is_err());
        // A deleted index directory starts empty.
        fs::remove_dir_all(temp.path()).map_err(|e| io_error(temp.path(), &e))?;
        let (_, outcome) = dir.open(BUDGET)?;
        assert_eq!(outcome, OpenOutcome::Created);
        Ok(())
    }
}
