//! `memory-paced`: a file written to disk in synced steps ([`PacedFile`]).
//!
//! Why: the indexes share the disk with the event log, whose every acknowledgement waits
//! for an fsync, and an fsync ends with a flush of the device's write cache, which
//! persists everything written to the device before it, whoever wrote it. A file
//! written through the page cache and synced once, when complete, puts megabytes in
//! front of the next journal fsync: measured after a backfill, fsyncs of the journal of
//! 100 ms to 1 s while the BM25 index committed (docs/benchmarks.md, "Ack latency after
//! a backfill: index writes in steps"). A [`PacedFile`] syncs every [`WRITE_STEP_BYTES`]
//! (a larger write is cut into steps), so at most a step per file in progress lies
//! between a journal fsync and the device; the writer (a background thread) waits for
//! its own steps instead. What is durable when does not change: the caller syncs the
//! complete file before naming it, as before.
//!
//! Used by the BM25 index's tantivy directory (`memory_search::paced`) and the vector
//! index's segment, manifest and job files (`memory_vector`).
//!
//! ```
//! use std::io::Write;
//! let dir = tempfile::tempdir().unwrap();
//! let mut file = memory_paced::PacedFile::new(std::fs::File::create(dir.path().join("seg")).unwrap());
//! file.write_all(&[0u8; 3 << 20]).unwrap();
//! file.into_file().sync_all().unwrap();
//! ```

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]

use std::fs::File;
use std::io::{self, Write};

/// Bytes a file being written may hold unsynced. 1 MiB: a step's sync takes a few
/// milliseconds on the reference machine's disk, and a file of tens of megabytes
/// costs tens of extra syncs (the unit RocksDB's `bytes_per_sync` is usually set to,
/// for the same reason).
pub const WRITE_STEP_BYTES: u64 = 1 << 20;

/// A file being written, synced every `step` bytes (see the crate doc).
#[derive(Debug)]
pub struct PacedFile {
    file: File,
    unsynced: u64,
    step: u64,
    /// Syncs made while the file was written (read by the tests).
    steps_synced: u64,
}

impl PacedFile {
    /// `file`, synced every [`WRITE_STEP_BYTES`].
    #[must_use]
    pub fn new(file: File) -> Self {
        Self::with_step(file, WRITE_STEP_BYTES)
    }

    /// `file`, synced every `step` bytes (at least 1).
    #[must_use]
    pub fn with_step(file: File, step: u64) -> Self {
        PacedFile {
            file,
            unsynced: 0,
            step: step.max(1),
            steps_synced: 0,
        }
    }

    /// Syncs what was written (`fdatasync`): the end of a complete file.
    ///
    /// # Errors
    /// The sync's.
    pub fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// The file, for a caller that ends it its own way (`sync_all`).
    #[must_use]
    pub fn into_file(self) -> File {
        self.file
    }
}

impl Write for PacedFile {
    /// Writes at most what is left of the current step, syncing first when the step
    /// is spent: a large write (tantivy's merge hands a segment's whole document store
    /// over at once) is cut into steps too, and a failed sync returns an error before
    /// anything of `buf` is written, as `Write` requires.
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

    /// Hands nothing further: the bytes are in the file already, and durability is the
    /// steps' and the caller's at the end.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_synced_every_step_while_it_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let step = 4096;
        let mut file =
            PacedFile::with_step(File::create(dir.path().join("f")).expect("create"), step);
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
        let mut file = PacedFile::with_step(File::create(&path).expect("create"), 4096);
        // Larger than `BufWriter`'s buffer, as a merge's document store is: it passes
        // straight through, and must not reach the file in one piece.
        assert_eq!(file.write(&[1u8; 10_000]).expect("write"), 4096);
        file.write_all(&[1u8; 10_000 - 4096])
            .expect("write the rest");
        assert_eq!(file.steps_synced, 2);
        assert_eq!(file.unsynced, 10_000 - 2 * 4096);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 10_000);
    }
}
