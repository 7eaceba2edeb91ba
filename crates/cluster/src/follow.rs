//! A running replica follows the partition assignment.
//!
//! When `cluster assign` moves a partition away from a replica's group, the replica
//! stops at once: it no longer applies that partition (its consumer is made anew
//! without it) nor answers its queries (it leaves that partition's query subject). Were
//! it to go on answering, a project whose partition moved would be answered by two
//! groups — and the old one, no longer fed, would answer from a stale store.
//!
//! A partition the group gains cannot be taken on in place (the store lacks its
//! history, and applying from the replica's position on would leave a hole), nor can a
//! partition once dropped be taken back: those are counted in
//! `memory_cluster_partitions_unapplied` and logged, and a replica of the group started
//! on an empty data dir takes them on (it starts from the log or a snapshot that fits).

use std::collections::BTreeSet;
use std::time::Duration;

use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::assignment::{ASSIGNMENTS_KEY, Assignments, format_partitions};
use crate::layout::CLUSTER_BUCKET;
use crate::metrics::REPLICA_METRICS;

/// What a replica does with an assignment in which its group owns `owned`, while it
/// applies `current`: the partitions it keeps, and those it cannot take on.
#[must_use]
pub fn follow_step(
    current: &BTreeSet<u16>,
    owned: &BTreeSet<u16>,
) -> (BTreeSet<u16>, BTreeSet<u16>) {
    let kept = current.intersection(owned).copied().collect();
    let unapplied = owned.difference(current).copied().collect();
    (kept, unapplied)
}

/// Watches the assignment record and narrows `partitions` (the replica's and its query
/// service's) to what `group` still owns, until `shutdown`.
pub(crate) fn follow(
    client: async_nats::Client,
    group: String,
    partitions: watch::Sender<BTreeSet<u16>>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let context = jetstream::new(client);
        REPLICA_METRICS
            .partitions
            .set(i64::try_from(partitions.borrow().len()).unwrap_or(i64::MAX));
        // How many partitions of the group were not applied at the last record, so a
        // change in them is logged once.
        let mut unapplied_before = 0usize;
        while !shutdown.is_cancelled() {
            let watched = async {
                let bucket = context.get_key_value(CLUSTER_BUCKET).await.ok()?;
                // With history: the current record first, so a change made between the
                // replica's start and this watch is not missed.
                bucket.watch_with_history(ASSIGNMENTS_KEY).await.ok()
            }
            .await;
            let Some(mut entries) = watched else {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            };
            loop {
                let entry = tokio::select! {
                    () = shutdown.cancelled() => return,
                    entry = entries.next() => entry,
                };
                let Some(Ok(entry)) = entry else {
                    // The watch ended (a server went away): watch again.
                    break;
                };
                let table: Assignments = match entry.operation {
                    kv::Operation::Put => match serde_json::from_slice(&entry.value) {
                        Ok(table) => table,
                        Err(err) => {
                            warn!(error = %err, "unreadable assignment record; ignored");
                            continue;
                        }
                    },
                    _ => Assignments::default(),
                };
                let owned = table.groups.get(&group).cloned().unwrap_or_default();
                let current = partitions.borrow().clone();
                let (kept, unapplied) = follow_step(&current, &owned);
                if kept != current {
                    let gone: BTreeSet<u16> = current.difference(&kept).copied().collect();
                    warn!(
                        group = %group,
                        moved_away = %format_partitions(&gone),
                        kept = %format_partitions(&kept),
                        "partitions moved to another group: no longer applying or answering them"
                    );
                    REPLICA_METRICS
                        .partitions
                        .set(i64::try_from(kept.len()).unwrap_or(i64::MAX));
                    let _ = partitions.send(kept);
                }
                REPLICA_METRICS
                    .unapplied
                    .set(i64::try_from(unapplied.len()).unwrap_or(i64::MAX));
                let previous = std::mem::replace(&mut unapplied_before, unapplied.len());
                if !unapplied.is_empty() && previous != unapplied.len() {
                    warn!(
                        group = %group,
                        partitions = %format_partitions(&unapplied),
                        "the group owns partitions this replica does not apply (it lacks \
                         their history): start a replica of the group on an empty data dir"
                    );
                } else if unapplied.is_empty() && previous > 0 {
                    info!(group = %group, "every partition of the group is applied here again");
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(parts: &[u16]) -> BTreeSet<u16> {
        parts.iter().copied().collect()
    }

    #[test]
    fn a_replica_drops_what_moved_away_and_never_takes_on_what_it_lacks() {
        let (kept, unapplied) = follow_step(&set(&[0, 1, 2, 3]), &set(&[0, 1, 2, 3]));
        assert_eq!((kept, unapplied), (set(&[0, 1, 2, 3]), set(&[])));
        let (kept, unapplied) = follow_step(&set(&[0, 1, 2, 3]), &set(&[0, 2]));
        assert_eq!((kept, unapplied), (set(&[0, 2]), set(&[])));
        // Given back later: not taken back (the store missed its events meanwhile).
        let (kept, unapplied) = follow_step(&set(&[0, 2]), &set(&[0, 1, 2, 3, 4]));
        assert_eq!((kept, unapplied), (set(&[0, 2]), set(&[1, 3, 4])));
        let (kept, unapplied) = follow_step(&set(&[0, 2]), &set(&[]));
        assert_eq!((kept, unapplied), (set(&[]), set(&[])));
    }
}
