//! `cluster init | assign | snapshot | status`: the control plane of cluster mode (memory-cluster),
//! against the NATS at `--nats-url` or `[nats] url`.

use std::process::ExitCode;

use memory_cluster::Layout;
use memory_config::Config;

use crate::cli::ClusterCommand;
use crate::query_cli::print_json;
use crate::say;

/// How long `cluster snapshot` waits for the node (a large store takes minutes to copy
/// and upload).
const SNAPSHOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3_600);

/// `cluster …`.
pub async fn run(config: &Config, command: ClusterCommand) -> anyhow::Result<ExitCode> {
    match command {
        ClusterCommand::Init {
            nats_url,
            partitions,
            replicas,
            duplicate_window_secs,
            json,
        } => {
            if partitions == 0 || replicas == 0 || replicas > 5 {
                anyhow::bail!(
                    "--partitions must be at least 1 and --replicas 1 to 5 (JetStream's limit)"
                );
            }
            let client = connect(config, nats_url).await?;
            let layout = Layout {
                partitions,
                replicas,
                duplicate_window_secs,
                ..Layout::default()
            };
            let report = memory_cluster::init(&client, &layout).await?;
            if json {
                print_json(&serde_json::to_value(&report)?)?;
            } else {
                say!(
                    "{} the log {} ({} partitions, {} replicas{}), buckets {} and {}",
                    if report.created { "created" } else { "found" },
                    memory_cluster::layout::STREAM,
                    report.layout.partitions,
                    report.layout.replicas,
                    if report.updated.is_empty() {
                        String::new()
                    } else {
                        format!("; changed {}", report.updated.join(", "))
                    },
                    memory_cluster::layout::CLUSTER_BUCKET,
                    memory_cluster::layout::LEASE_BUCKET
                );
                say!("{}", report.account_mapping);
            }
        }
        ClusterCommand::Assign {
            group,
            partitions,
            nats_url,
            json,
        } => {
            let client = connect(config, nats_url).await?;
            let (table, moved) = memory_cluster::assign(&client, &group, &partitions).await?;
            if json {
                print_json(&serde_json::json!({"assignments": table, "moved": moved}))?;
            } else {
                for (from, parts) in &moved {
                    say!("moved {} partition(s) from group {from}", parts.len());
                }
                for (owner, parts) in &table.groups {
                    say!(
                        "group {owner}: {} partition(s) {}",
                        parts.len(),
                        memory_cluster::assignment::format_partitions(parts)
                    );
                }
            }
        }
        ClusterCommand::Snapshot {
            node,
            nats_url,
            json,
        } => {
            let client = connect(config, nats_url).await?;
            let value = crate::query_cli::remote_call_within(
                &client,
                crate::admin_cli::admin_subject(Some(&node), crate::admin_cli::ADMIN_SNAPSHOT),
                &serde_json::json!({}),
                SNAPSHOT_TIMEOUT,
            )
            .await
            .map_err(|err| anyhow::anyhow!("node {node}: {err}"))?;
            if json {
                print_json(&value)?;
            } else {
                say!(
                    "node {node} uploaded group {}'s snapshot: stream sequence {}, {} bytes, {} ms",
                    value["group"].as_str().unwrap_or("?"),
                    value["manifest"]["store"]["applied_stream_seq"],
                    value["bytes"],
                    value["duration_ms"]
                );
            }
        }
        ClusterCommand::Status { nats_url, json } => {
            let client = connect(config, nats_url).await?;
            let status = memory_cluster::status(&client).await?;
            if json {
                print_json(&serde_json::to_value(&status)?)?;
            } else {
                say!(
                    "log {}: {} messages (last seq {}), {} partitions, leader {}",
                    memory_cluster::layout::STREAM,
                    status.messages,
                    status.last_seq,
                    status.layout.partitions,
                    status.leader.as_deref().unwrap_or("none")
                );
                for replica in &status.replicas {
                    say!(
                        "  replica {}: {}{}",
                        replica.server,
                        if replica.offline {
                            "offline"
                        } else if replica.current {
                            "current"
                        } else {
                            "behind"
                        },
                        replica
                            .lag
                            .map(|lag| format!(", lag {lag}"))
                            .unwrap_or_default()
                    );
                }
                for (group, parts) in &status.assignments.groups {
                    say!(
                        "group {group}: {} partition(s) {}",
                        parts.len(),
                        memory_cluster::assignment::format_partitions(parts)
                    );
                }
                if !status.unassigned.is_empty() {
                    say!(
                        "unassigned: {} partition(s) {}",
                        status.unassigned.len(),
                        memory_cluster::assignment::format_partitions(&status.unassigned)
                    );
                }
                for partition in &status.partitions {
                    say!(
                        "  partition {}: {} messages, group {}, projects {}",
                        partition.partition,
                        partition.messages,
                        partition.group.as_deref().unwrap_or("none"),
                        partition
                            .projects
                            .iter()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
                for (lease, holder) in &status.leases {
                    say!("lease {lease}: {holder}");
                }
                for (group, snapshot) in &status.snapshots {
                    say!(
                        "snapshot of group {group}: by node {}, at stream sequence {}, {} bytes, \
                         taken {}",
                        snapshot.node_id,
                        snapshot.applied_stream_seq(),
                        snapshot.bytes,
                        memory_types::format_timestamp_ms(snapshot.manifest.taken_at_ms)
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn connect(config: &Config, url: Option<String>) -> anyhow::Result<async_nats::Client> {
    let mut nats = config.nats.clone();
    if let Some(url) = url {
        nats.url = url;
    }
    Ok(memory_nats::connect(&nats, |_| {}).await?)
}
