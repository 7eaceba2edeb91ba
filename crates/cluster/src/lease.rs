//! A lease: one holder per group for work that is not a pure function of the log.
//!
//! The lease is a key of the `memory_leases` bucket, whose entries expire
//! [`LEASE_TTL`] after their last write. A node takes it by creating the key (which
//! fails while another holds it) and keeps it by updating it with compare-and-set on
//! the revision it last wrote — so two nodes can never both renew. The revision grows
//! with every write in the bucket; the one at which a node took the lease is its
//! *tenure*, stamped (with the bucket's creation time, its epoch) on what it publishes:
//! a replica ignores a derived event of an older tenure than one of the same group it
//! applied, which fences a holder that lost the lease without knowing it (a long pause,
//! a partition).

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
    /// The revision at which we took it: our tenure.
    tenure: Option<u64>,
    /// When the last successful write was *sent* (its time to live runs from about
    /// then, not from the reply).
    renewed: Option<Instant>,
    /// When the bucket was created, epoch ms.
    epoch: u64,
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
        let context = jetstream::new(client.clone());
        let bucket = context
            .get_key_value(LEASE_BUCKET)
            .await
            .map_err(|err| ClusterError::NotInitialised(err.to_string()))?;
        let created = context
            .get_stream(format!("KV_{LEASE_BUCKET}"))
            .await
            .map_err(|err| ClusterError::NotInitialised(err.to_string()))?
            .cached_info()
            .created;
        let epoch = u64::try_from(created.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        Ok(Lease {
            bucket,
            key: key.to_owned(),
            holder: holder.to_owned(),
            revision: None,
            tenure: None,
            renewed: None,
            epoch,
        })
    }

    /// Takes the lease when nobody holds it, or renews ours; `(epoch, tenure)` while
    /// held. A renewal that fails (another took it after ours expired, or the server did
    /// not answer) lets it go: it is taken again once free, as a new tenure.
    pub async fn hold(&mut self) -> Option<(u64, u64)> {
        let value = bytes::Bytes::from(self.holder.clone().into_bytes());
        let sent = Instant::now();
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
                    self.tenure = Some(revision);
                }
                self.revision = Some(revision);
                self.renewed = Some(sent);
            }
            Err(err) => {
                self.tenure = None;
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

    /// `(epoch, tenure)` while the lease is surely ours: the last renewal was sent
    /// less than half its time to live ago (past that, another node may take it before
    /// we notice). Asked again before each thing published.
    #[must_use]
    pub fn current(&self) -> Option<(u64, u64)> {
        let fresh = self.renewed.is_some_and(|at| at.elapsed() < LEASE_TTL / 2);
        self.tenure
            .filter(|_| fresh && self.revision.is_some())
            .map(|tenure| (self.epoch, tenure))
    }

    /// [`Lease::current`] with when the renewal that makes it so was sent, for work
    /// that runs apart from the renewals and must judge freshness itself
    /// ([`Tenure::current`]).
    #[must_use]
    pub fn tenure(&self) -> Option<Tenure> {
        let (epoch, tenure) = self.current()?;
        Some(Tenure {
            epoch,
            tenure,
            renewed: self.renewed?,
        })
    }

    /// Gives the lease back (at shutdown), so another node takes it at once rather than
    /// after it expires. Bounded: NATS may be gone.
    pub async fn release(&mut self) {
        self.tenure = None;
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

/// A held lease as last renewed, shared with work that runs apart from the renewals
/// (the model summaries, which take longer than a renewal period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tenure {
    /// When the lease bucket was created, epoch ms.
    pub epoch: u64,
    /// The revision at which the lease was taken.
    pub tenure: u64,
    /// When the renewal was sent.
    pub renewed: Instant,
}

impl Tenure {
    /// `(epoch, tenure)` while the lease is surely still held: as [`Lease::current`],
    /// the renewal was sent less than half the time to live ago.
    #[must_use]
    pub fn current(&self) -> Option<(u64, u64)> {
        (self.renewed.elapsed() < LEASE_TTL / 2).then_some((self.epoch, self.tenure))
    }
}

/// Whether the lease is surely still held in `tenure` (the `(epoch, tenure)` a round
/// began in), as work that runs apart from the renewals sees it through their watch.
pub(crate) fn still_held(
    watch: &tokio::sync::watch::Receiver<Option<Tenure>>,
    tenure: Option<(u64, u64)>,
) -> bool {
    let current = watch.borrow().and_then(|held| held.current());
    current.is_some() && current == tenure
}
