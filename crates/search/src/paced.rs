//! [`PacedDirectory`]: tantivy's memory-mapped directory, writing new files to disk in
//! steps.
//!
//! Why: the index shares the disk with the event log, whose every acknowledgement waits
//! for an fsync, and an fsync ends with a flush of the device's write cache, which
//! persists everything written to the device before it, whoever wrote it. tantivy
//! writes a new segment through the page cache and syncs it once, when the file is
//! complete, so megabytes reach the device at once and the next journal fsync's flush
//! waits for all of them: measured after a backfill, fsyncs of the journal of 100 ms
//! to 1 s while the index committed (docs/benchmarks.md, "Ack latency after a backfill:
//! index writes in steps"). Here a file being written is synced every
//! [`WRITE_STEP_BYTES`], so at most that much of the index lies between a journal fsync
//! and the device; the writer (a background thread) waits for its own steps instead.
//! What is durable when does not change: a file is complete and synced before tantivy
//! names it in its metadata, as before.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

/// Bytes a new index file may hold unsynced. 1 MiB: a step's sync takes a few
/// milliseconds on the reference machine's disk, and a segment of tens of megabytes
/// costs tens of extra syncs (the same unit RocksDB's `bytes_per_sync` is usually set
/// to, for the same reason).
pub const WRITE_STEP_BYTES: u64 = 1 << 20;

/// An [`MmapDirectory`] whose new files are synced every `step` bytes (see the module
/// doc). Reads, deletes, locks and atomic writes are the memory-mapped directory's.
#[derive(Clone, Debug)]
pub struct PacedDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    step: u64,
}

impl PacedDirectory {
    /// Opens the directory at `path` with the default step ([`WRITE_STEP_BYTES`]).
    ///
    /// # Errors
    /// As [`MmapDirectory::open`].
    pub fn open(path: &Path) -> Result<Self, OpenDirectoryError> {
        Self::with_step(path, WRITE_STEP_BYTES)
    }

    /// Opens the directory at `path`, syncing new files every `step` bytes (at least 1).
    ///
    /// # Errors
    /// As [`MmapDirectory::open`].
    pub fn with_step(path: &Path, step: u64) -> Result<Self, OpenDirectoryError> {
        let inner = MmapDirectory::open(path)?;
        // The path the mmap directory resolves reads against (it canonicalizes), so
        // writes and reads name the same files whatever the working directory does.
        let root = path
            .canonicalize()
            .map_err(|error| OpenDirectoryError::wrap_io_error(error, path.to_path_buf()))?;
        Ok(PacedDirectory {
            inner,
            root,
            step: step.max(1),
        })
    }
}

impl Directory for PacedDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    /// Creates the file as [`MmapDirectory`] does (a new file; the directory entry is
    /// synced by tantivy's [`Directory::sync_directory`] after the file is complete).
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.root.join(path))
            .map_err(|error| {
                if error.kind() == io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(error, path.to_path_buf())
                }
            })?;
        Ok(BufWriter::new(Box::new(PacedFile::new(file, self.step))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// A new index file: synced every `step` bytes and when complete.
struct PacedFile {
    file: File,
    unsynced: u64,
    step: u64,
    /// Syncs made before the file was complete (read by the tests).
    steps_synced: u64,
}

impl PacedFile {
    fn new(file: File, step: u64) -> Self {
        PacedFile {
            file,
            unsynced: 0,
            step,
            steps_synced: 0,
        }
    }
}

impl Write for PacedFile {
    /// Writes at most what is left of the current step, syncing first when the step
    /// is spent: a large write (a merge hands a segment's whole document store over
    /// at once, past `BufWriter`) is cut into steps too, and a failed sync returns an
    /// error before anything of `buf` is written, as `Write` requires.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.unsynced >= self.step {
            self.file.sync_data()?;
            self.unsynced = 0;
            self.steps_synced += 1;
        }
        let room = usize::try_from(self.step - self.unsynced).unwrap_or(usize::MAX);
        let written = self.file.write(&buf[..buf.len().min(room)])?;
        self.unsynced += written as u64;
        Ok(written)
    }

    /// Like tantivy's own file writer, a flush hands nothing further: the bytes are
    /// in the file already, and durability is the step's and the end's.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for PacedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.file.flush()?;
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_in_pieces(directory: &PacedDirectory, name: &str, pieces: usize, size: usize) {
        let mut writer = directory.open_write(Path::new(name)).expect("open_write");
        for n in 0..pieces {
            writer.write_all(&vec![n as u8; size]).expect("write");
        }
        writer.terminate().expect("terminate");
    }

    #[test]
    fn a_file_written_through_it_reads_back_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let directory = PacedDirectory::with_step(dir.path(), 1000).expect("open");
        write_in_pieces(&directory, "seg.idx", 37, 333);
        let bytes = directory
            .open_read(Path::new("seg.idx"))
            .expect("open_read")
            .read_bytes()
            .expect("read");
        assert_eq!(bytes.len(), 37 * 333);
        assert!(
            bytes
                .as_slice()
                .chunks(333)
                .enumerate()
                .all(|(n, chunk)| chunk.iter().all(|&b| b == n as u8))
        );
        // A second file under the same name is refused, as by the mmap directory.
        assert!(matches!(
            directory.open_write(Path::new("seg.idx")),
            Err(OpenWriteError::FileAlreadyExists(_))
        ));
    }

    #[test]
    fn a_file_is_synced_every_step_while_it_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = 4096;
        let mut file = PacedFile::new(File::create(dir.path().join("f")).expect("create"), step);
        let mut synced_after = Vec::new();
        for n in 1..=10 {
            let before = file.steps_synced;
            file.write_all(&[7u8; 1500]).expect("write");
            if file.steps_synced > before {
                synced_after.push(n);
            }
        }
        // 15 000 bytes in steps of 4 096: synced within the 3rd, 6th and 9th writes,
        // each time 4 096 bytes after the last sync.
        assert_eq!(synced_after, vec![3, 6, 9]);
        assert_eq!(file.unsynced, 15_000 - 3 * 4096);
    }

    #[test]
    fn one_large_write_is_cut_into_steps() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let mut file = PacedFile::new(File::create(&path).expect("create"), 4096);
        // Larger than `BufWriter`'s buffer, as a merge's document store is: it passes
        // straight through, and must not reach the file in one piece.
        assert_eq!(file.write(&[1u8; 10_000]).expect("write"), 4096);
        file.write_all(&[1u8; 10_000 - 4096])
            .expect("write the rest");
        assert_eq!(file.steps_synced, 2);
        assert_eq!(file.unsynced, 10_000 - 2 * 4096);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 10_000);
    }

    #[test]
    fn an_index_lives_in_it() {
        use crate::{Bm25Index, Bm25Query, DocType, SearchDoc};

        let dir = tempfile::tempdir().expect("tempdir");
        let index = Bm25Index::open_or_create(dir.path(), 50_000_000).expect("open");
        let mut writer = index.writer().expect("writer");
        for n in 0..200 {
            writer
                .upsert(&SearchDoc {
                    doc_type: DocType::Event,
                    doc_id: format!("evt-{n}"),
                    project_id: "p".into(),
                    session_id: Some("s".into()),
                    level: None,
                    text: format!("paced segment writes keep the journal fsync short {n}"),
                    keywords: vec![],
                    timestamp_ms: 1_769_760_000_000 + n,
                })
                .expect("upsert");
        }
        writer.commit_with_payload("outbox:200").expect("commit");
        drop(writer);
        drop(index);
        let reopened = Bm25Index::open_or_create(dir.path(), 50_000_000).expect("reopen");
        let results = reopened
            .search(&Bm25Query::new("journal fsync", "p").expect("query"), 500)
            .expect("search");
        assert_eq!(results.hits.len(), 200);
        assert_eq!(
            reopened.last_payload().expect("payload").as_deref(),
            Some("outbox:200")
        );
    }
}
