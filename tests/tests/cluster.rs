//! Cluster mode's control plane against three real nats-servers clustered on loopback:
//! `cluster init` creates the replicated log (R3, partitioned by project, deny delete
//! and purge, a duplicate window) and its buckets, idempotently, and refuses to change
//! the partition count; `cluster assign` moves partitions between groups; `cluster
//! status` shows the leader, the replicas, the assignment and each partition's
//! projects — and the account mapping it prints routes a project's queries to the same
//! partition the log stores its events in, also after the log's leader is killed.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_nats::HeaderMap;
use futures::StreamExt;
use memory_e2e_tests::{NatsCluster, build_daemon, nats_server_binary, repo_root};
use serde_json::{Value, json};

fn cli(args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let output = Command::new(build_daemon()?).args(args).output()?;
    Ok((
        output.status.success(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
}

fn cluster_cli(args: &[&str], urls: &str) -> anyhow::Result<String> {
    let mut all = vec!["cluster"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--nats-url", urls]);
    let (ok, stdout, stderr) = cli(&all)?;
    if !ok {
        bail!("cluster {args:?} failed: {stderr}");
    }
    Ok(stdout)
}

/// The partition a query for `project` is routed to by the account mapping.
async fn query_partition(client: &async_nats::Client, project: &str) -> anyhow::Result<String> {
    let mut routed = client
        .subscribe(format!("memory.q.*.{project}.search"))
        .await?;
    client.flush().await?;
    client
        .publish(format!("memory.query.{project}.search"), "{}".into())
        .await?;
    let message = tokio::time::timeout(Duration::from_secs(10), routed.next())
        .await
        .context("the mapped query never arrived")?
        .context("subscription closed")?;
    Ok(message
        .subject
        .split('.')
        .nth(2)
        .unwrap_or_default()
        .to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_plane_on_a_three_server_cluster() -> anyhow::Result<()> {
    let layout = memory_cluster_mapping();
    let mut nats = NatsCluster::start(3, &layout)?;
    let urls = nats.urls();

    let said = cluster_cli(&["init"], &urls)?;
    assert!(
        said.contains("created the log MEMORY_LOG (64 partitions, 3 replicas)"),
        "{said}"
    );
    assert!(
        said.contains("memory.q.{{partition(64,1)}}.{{wildcard(1)}}.>"),
        "{said}"
    );
    // The shipped server configuration parses and holds the mapping init printed.
    let shipped = repo_root().join("deploy/nats-cluster/nats.conf");
    let mapping_line = said
        .lines()
        .find(|line| line.contains("memory.query.*.>"))
        .context("init printed no mapping")?
        .trim()
        .to_owned();
    assert!(std::fs::read_to_string(&shipped)?.contains(&mapping_line));
    let checked = Command::new(nats_server_binary()?)
        .args(["-c", &shipped.to_string_lossy(), "-t"])
        .env("NATS_NODE_NAME", "nats-1")
        .env("NATS_ROUTE_PASSWORD", "x")
        .output()?;
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let again = cluster_cli(&["init"], &urls)?;
    assert!(again.contains("found the log MEMORY_LOG"), "{again}");
    let (ok, _, refused) = cli(&["cluster", "init", "--partitions", "32", "--nats-url", &urls])?;
    assert!(
        !ok && refused.contains("fixed when the log is created"),
        "{refused}"
    );

    let said = cluster_cli(&["assign", "--group", "a", "--partitions", "0-31"], &urls)?;
    assert!(said.contains("group a: 32 partition(s) 0-31"), "{said}");
    cluster_cli(&["assign", "--group", "b", "--partitions", "32-63"], &urls)?;
    let said = cluster_cli(&["assign", "--group", "b", "--partitions", "0-3"], &urls)?;
    assert!(said.contains("moved 4 partition(s) from group a"), "{said}");
    assert!(said.contains("group a: 28 partition(s) 4-31"), "{said}");
    let (ok, _, refused) = cli(&[
        "cluster",
        "assign",
        "--group",
        "a",
        "--partitions",
        "0-64",
        "--nats-url",
        &urls,
    ])?;
    assert!(!ok && refused.contains("partitions 0 to 63"), "{refused}");

    // Producers publish with a message id; a retry inside the window is stored once.
    let client = nats.connect().await?;
    let jetstream = async_nats::jetstream::new(client.clone());
    for (project, id) in [
        ("webapp", "e1"),
        ("webapp", "e2"),
        ("infra", "e1"),
        ("webapp", "e1"),
    ] {
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("{project}/{id}").as_str());
        let body = json!({"event_id": id, "session_id": "s", "timestamp": 1_790_000_000_000_u64,
                          "kind": "note", "text": "x"});
        jetstream
            .publish_with_headers(
                format!("memory.events.{project}"),
                headers,
                serde_json::to_vec(&body)?.into(),
            )
            .await?
            .await?;
    }
    // The log is append-only: no delete, no purge.
    let mut stream = jetstream.get_stream("MEMORY_LOG").await?;
    assert!(stream.delete_message(1).await.is_err());
    assert!(stream.purge().await.is_err());
    assert_eq!(stream.info().await?.config.num_replicas, 3);

    let status: Value = serde_json::from_str(&cluster_cli(&["status", "--json"], &urls)?)?;
    assert_eq!(status["messages"], 3, "{status}");
    assert_eq!(
        status["replicas"].as_array().map(Vec::len),
        Some(2),
        "{status}"
    );
    assert!(status["leader"].is_string(), "{status}");
    assert!(
        status["unassigned"].as_array().is_some_and(Vec::is_empty),
        "{status}"
    );
    let partition_of = |project: &str| {
        status["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| {
                p["projects"]
                    .as_array()
                    .is_some_and(|ps| ps.contains(&json!(project)))
            })
            .cloned()
            .unwrap_or_else(|| panic!("{project} in no partition: {status}"))
    };
    let webapp = partition_of("webapp");
    assert_eq!(webapp["messages"], 2, "{status}");
    let owner = if webapp["partition"].as_u64().unwrap_or(99) < 4
        || webapp["partition"].as_u64().unwrap_or(0) >= 32
    {
        "b"
    } else {
        "a"
    };
    assert_eq!(webapp["group"], owner, "{status}");

    // The mapping `cluster init` printed sends a project's queries to its partition.
    for project in ["webapp", "infra"] {
        assert_eq!(
            query_partition(&client, project).await?,
            partition_of(project)["partition"].to_string(),
            "{project}"
        );
    }

    // The log's leader dies: the log keeps its messages and elects another.
    let leader = status["leader"].as_str().unwrap_or_default().to_owned();
    let index: usize = leader.trim_start_matches('n').parse()?;
    nats.kill_9(index);
    let other = (index + 1) % 3;
    let deadline = Instant::now() + Duration::from_secs(30);
    let after = loop {
        if let Ok(text) = cluster_cli(&["status", "--json"], &nats.url(other)) {
            let after: Value = serde_json::from_str(&text)?;
            if after["leader"].is_string() && after["leader"] != leader.as_str() {
                break after;
            }
        }
        if Instant::now() > deadline {
            bail!("no new leader after killing {leader}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(after["messages"], 3, "{after}");
    nats.start_again(index)?;
    Ok(())
}

/// The account mapping for 64 partitions, as `cluster init` prints it.
fn memory_cluster_mapping() -> String {
    "mappings = {\n  \"memory.query.*.>\": \"memory.q.{{partition(64,1)}}.{{wildcard(1)}}.>\"\n}\n"
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_cannot_share_a_nats_with_single_mode() -> anyhow::Result<()> {
    let nats = memory_e2e_tests::NatsServer::start()?;
    let client = nats.connect().await?;
    async_nats::jetstream::new(client)
        .create_stream(async_nats::jetstream::stream::Config {
            name: "MEMORY_EVENTS".to_owned(),
            subjects: vec!["memory.events.>".to_owned()],
            ..Default::default()
        })
        .await?;
    let (ok, _, refused) = cli(&[
        "cluster",
        "init",
        "--replicas",
        "1",
        "--nats-url",
        &nats.url(),
    ])?;
    assert!(
        !ok && refused.contains("another stream already captures memory.events.*"),
        "{refused}"
    );
    Ok(())
}
