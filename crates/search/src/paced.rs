//! [`PacedDirectory`]: tantivy's memory-mapped directory, writing new files to disk in
//! synced steps ([`memory_paced::PacedFile`]; the crate doc says why: a segment synced
//! once would put megabytes in front of the event log's next fsync). What is durable
//! when does not change: a file is complete and synced before tantivy names it in its
//! metadata, as before.

use std::fs::OpenOptions;
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

use memory_paced::{PacedFile, WRITE_STEP_BYTES};

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
        Ok(BufWriter::new(Box::new(IndexFile(PacedFile::with_step(
            file, self.step,
        )))))
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

/// A new index file: a [`PacedFile`] tantivy can terminate (it syncs the complete
/// file, as tantivy's own writer does).
struct IndexFile(PacedFile);

impl Write for IndexFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for IndexFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()?;
        self.0.sync_data()
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
