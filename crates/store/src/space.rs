//! The free space the store keeps on its filesystem, so a full disk refuses writes
//! instead of failing them.
//!
//! Why: fjall *poisons* a database whose journal write fails, and a background flush or
//! compaction that fails for lack of space kills its worker and poisons it too. A
//! poisoned database refuses every write until the process reopens it, so a disk that
//! once filled would keep ingest down after the operator freed space. Refusing before
//! the disk is full keeps fjall's writes from failing at all: ingest stops while the
//! filesystem has less than the reserve free (`[store] min_free_mb`), projections may
//! still write the work of what was acknowledged down to half of it, and the other
//! half is left to fjall's flushes and compactions. Once space is freed, the next
//! write succeeds — no restart.

use std::path::{Path, PathBuf};

use crate::StoreError;

/// Whose write it is, which decides how much of the reserve it may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteShare {
    /// New events (ingest, a replica's appends): refused below the whole reserve.
    Ingest,
    /// The work derived from what is already stored (projection batches, cursors,
    /// dead letters, index commits): refused below half of it, so what was
    /// acknowledged can still be projected after ingest stopped.
    Derived,
}

/// The reserve of one data dir's filesystem.
#[derive(Clone, Debug)]
pub(crate) struct SpaceReserve {
    path: PathBuf,
    bytes: u64,
}

impl SpaceReserve {
    pub(crate) fn new(path: &Path, bytes: u64) -> SpaceReserve {
        SpaceReserve {
            path: path.to_path_buf(),
            bytes,
        }
    }

    /// Whether `other` lives on the data dir's filesystem (so writing there takes from
    /// the store's reserve). Unknown counts as shared: the check errs on the safe side.
    pub(crate) fn shares_filesystem(&self, other: &Path) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            match (std::fs::metadata(&self.path), std::fs::metadata(other)) {
                (Ok(ours), Ok(theirs)) => ours.dev() == theirs.dev(),
                _ => true,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = other;
            true
        }
    }

    /// `Ok` when a write of `share` may go ahead; [`StoreError::NoSpace`] when the
    /// filesystem has less free than that share's part of the reserve. A filesystem
    /// that cannot tell its free space does not block writes (it is logged).
    pub(crate) fn check(&self, share: WriteShare) -> Result<(), StoreError> {
        self.check_with(share, 0)
    }

    /// [`SpaceReserve::check`] for a write of about `extra` bytes (a snapshot, a
    /// backup, an index generation): that much must fit above the share's part.
    pub(crate) fn check_with(&self, share: WriteShare, extra: u64) -> Result<(), StoreError> {
        if self.bytes == 0 {
            return Ok(());
        }
        let needed = match share {
            WriteShare::Ingest => self.bytes,
            WriteShare::Derived => self.bytes / 2,
        }
        .saturating_add(extra);
        let available = fs4::available_space(&self.path);
        if let Ok(available) = &available {
            crate::STORE_METRICS
                .free_bytes
                .set(i64::try_from(*available).unwrap_or(i64::MAX));
        }
        match available {
            Ok(available) if available < needed => Err(StoreError::NoSpace {
                path: self.path.clone(),
                available,
                reserve: self.bytes,
            }),
            Ok(_) => Ok(()),
            Err(err) => {
                tracing::warn!(path = %self.path.display(), error = %err,
                    "cannot read the data dir's free space; writing without the reserve check");
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserve_larger_than_the_disk_refuses_ingest_and_derived_work() {
        let dir = tempfile::tempdir().expect("tempdir");
        let reserve = SpaceReserve::new(dir.path(), u64::MAX);
        let err = reserve.check(WriteShare::Ingest).expect_err("refused");
        assert!(err.is_environmental(), "{err}");
        assert!(err.to_string().contains("min_free_mb"), "{err}");
        assert!(reserve.check(WriteShare::Derived).is_err());
    }

    #[test]
    fn derived_work_may_use_half_of_the_reserve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let available = fs4::available_space(dir.path()).expect("free space");
        // Ingest needs more than there is, derived work needs half of that: less.
        let reserve = SpaceReserve::new(dir.path(), available + available / 2);
        assert!(reserve.check(WriteShare::Ingest).is_err());
        reserve.check(WriteShare::Derived).expect("derived allowed");
    }

    #[test]
    fn no_reserve_checks_nothing() {
        let reserve = SpaceReserve::new(Path::new("/does/not/exist"), 0);
        reserve.check(WriteShare::Ingest).expect("no check");
    }
}
