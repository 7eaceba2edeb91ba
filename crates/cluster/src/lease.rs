//! A lease: one holder per group for work that is not a pure function of the log.
//!
//! The lease is a key of the `memory_leases` bucket, whose entries expire
//! [`LEASE_TTL`] after their last write. A node takes it by creating the key (which
//! fails while another holds it) and keeps it by updating it with compare-and-set on
//! the revision it last wrote — so two nodes can never both renew. The revision grows
//! with every write in the bucket, and a holder stamps it on what it publishes: a
//! replica ignores a derived event whose revision is older than one it applied, which
//! fences a holder that lost the lease without knowing it (a long pause, a partition).

use std::time::Duration;

use async_nats::jetstream::{self, kv};
use tokio::time::Instant;
use tracing::{debug, info};

use crate::ClusterError;
use crate::layout::{LEASE_BUCKET, LEASE_TTL};

/// A lease this node takes, renews and gives back.
pub struct Lease {
    bucket: kv::Store,
    key: String,
    holder: String,
    /// The revision of our last write while we hold it.
    revision: Option<u64>,
    renewed: Option<Instant>,
}

impl Lease {
    /// The lease `key` (a group's name), to be held by `holder` (a node id).
    ///
    /// # Errors
    /// No cluster (the bucket is missing).
    pub async fn open(
        client: &async_nats::Client,
        key: &str,
        holder: &str,
    ) -> Result<Lease, ClusterError> {
        let bucket = jetstream::new(client.clone())
            .get_key_value(LEASE_BUCKET)
            .await
            .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
        Ok(Lease {
            bucket,
            key: key.to_owned(),
            holder: holder.to_owned(),
            revision: None,
            renewed: None,
        })
    }

    /// Takes the lease when nobody holds it, or renews ours; the revision while held.
    /// A renewal that fails (another took it after ours expired, or the server did not
    /// answer) lets it go: it is taken again once free.
    pub async fn hold(&mut self) -> Option<u64> {
        let value = bytes::Bytes::from(self.holder.clone().into_bytes());
        let written = match self.revision {
            Some(revision) => self
                .bucket
                .update(&self.key, value, revision)
                .await
                .map_err(|err| err.to_string()),
            None => self
                .bucket
                .create(&self.key, value)
                .await
                .map_err(|err| err.to_string()),
        };
        match written {
            Ok(revision) => {
                if self.revision.is_none() {
                    info!(lease = %self.key, revision, "lease taken");
                }
                self.revision = Some(revision);
                self.renewed = Some(Instant::now());
            }
            Err(err) => {
                if self.revision.take().is_some() {
                    info!(lease = %self.key, error = %err, "lease lost");
                } else {
                    debug!(lease = %self.key, error = %err, "lease held elsewhere");
                }
                self.renewed = None;
            }
        }
        self.current()
    }

    /// The revision while the lease is surely ours: renewed less than half its time to
    /// live ago (past that, another node may take it before we notice).
    #[must_use]
    pub fn current(&self) -> Option<u64> {
        let fresh = self.renewed.is_some_and(|at| at.elapsed() < LEASE_TTL / 2);
        self.revision.filter(|_| fresh)
    }

    /// Gives the lease back (at shutdown), so another node takes it at once rather than
    /// after it expires. Bounded: NATS may be gone.
    pub async fn release(&mut self) {
        if let Some(revision) = self.revision.take() {
            let deleted = tokio::time::timeout(
                Duration::from_secs(2),
                self.bucket
                    .delete_expect_revision(&self.key, Some(revision)),
            )
            .await;
            debug!(lease = %self.key, released = matches!(deleted, Ok(Ok(()))), "lease given back");
        }
    }
}
