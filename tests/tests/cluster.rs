//! Cluster mode's control plane against three real nats-servers clustered on loopback:
//! `cluster init` creates the replicated log (R3, partitioned by project, deny delete
//! and purge, a duplicate window) and its buckets, idempotently, waits for servers
//! that have no JetStream leader yet, and refuses to change the partition count; `cluster assign` moves partitions between groups; `cluster
//! status` shows the leader, the replicas, the assignment and each partition's
//! projects — and the account mapping it prints routes a project's queries to the same
//! partition the log stores its events in, also after the log's leader is killed.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use async_nats::HeaderMap;
use futures::StreamExt;
use memory_e2e_tests::{NatsCluster, build_daemon, cluster_cli, nats_server_binary, repo_root};
use serde_json::{Value, json};

fn cli(args: &[&str]) -> anyhow::Result<(bool, String, String)> {
    let output = Command::new(build_daemon()?).args(args).output()?;
    Ok((
        output.status.success(),
        String::from_utf8(output.stdout)?,
        String::from_utf8(output.stderr)?,
    ))
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

/// `cluster init` run before the servers have a JetStream leader — what an operator
/// (or a deploy script) does right after starting them — waits for one and creates
/// everything, instead of failing on the first answer "temporarily unavailable".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_waits_for_servers_that_have_no_jetstream_leader_yet() -> anyhow::Result<()> {
    build_daemon()?; // not inside the timed part below
    let mut nats = NatsCluster::configure(3, &memory_cluster_mapping())?;
    nats.launch(0)?;
    // One server of three cannot elect a leader: once it says so, init asks it alone.
    let client = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connect(nats.url(0))
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = tokio::time::timeout(
            Duration::from_secs(2),
            client.request("$JS.API.INFO", "".into()),
        )
        .await;
        if let Ok(Ok(message)) = reply
            && String::from_utf8_lossy(&message.payload).contains("10008")
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("the lone server never said JetStream is unavailable");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first = nats.url(0);
    let init = tokio::task::spawn_blocking(move || cluster_cli(&["init"], &first));
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!init.is_finished(), "init gave up or ran without a leader");
    nats.launch(1)?;
    nats.launch(2)?;
    let said = init.await??;
    assert!(
        said.contains("created the log MEMORY_LOG (64 partitions, 3 replicas)"),
        "{said}"
    );
    let again = cluster_cli(&["init"], &nats.urls())?;
    assert!(again.contains("found the log MEMORY_LOG"), "{again}");
    Ok(())
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

fn replica(
    nats_urls: &str,
    data_dir: &std::path::Path,
    node: &str,
) -> anyhow::Result<(memory_e2e_tests::Daemon, String)> {
    memory_e2e_tests::serve_replica(nats_urls, data_dir, (node, "g1"), &[])
}

fn applied(metrics: &str) -> u64 {
    memory_e2e_tests::http_get(&format!("http://{metrics}/metrics"))
        .map(|(_, text)| {
            memory_e2e_tests::metric_sum(&text, "memory_cluster_applied_stream_seq", &[]) as u64
        })
        .unwrap_or(0)
}

async fn publish(
    jetstream: &async_nats::jetstream::Context,
    range: std::ops::Range<u32>,
) -> anyhow::Result<()> {
    let projects = ["webapp", "infra", "mobile", "docs", "ops"];
    let mut acks = Vec::new();
    for n in range {
        let project = projects[n as usize % projects.len()];
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("{project}/e{n}").as_str());
        let body = json!({"event_id": format!("e{n}"), "session_id": format!("s{}", n / 50),
            "timestamp": 1_790_000_000_000_u64 + u64::from(n) * 1000,
            "kind": if n % 2 == 0 { "user_message" } else { "assistant_message" },
            "text": format!("turn {n}: we decided the JWT access token lives {n} minutes")});
        acks.push(
            jetstream
                .publish_with_headers(
                    format!("memory.events.{project}"),
                    headers,
                    serde_json::to_vec(&body)?.into(),
                )
                .await?,
        );
    }
    for ack in acks {
        ack.await?;
    }
    Ok(())
}

/// Waits up to 60 s until the replica's `memory_cluster_serving_queries` is `serving`,
/// polling every 20 ms (the replica's own check runs every 500 ms).
async fn wait_serving(metrics: &str, serving: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = memory_e2e_tests::http_get(&format!("http://{metrics}/metrics"))
            .map(|(_, text)| {
                memory_e2e_tests::metric_sum(&text, "memory_cluster_serving_queries", &[]) as u64
            })
            .ok();
        if now == Some(serving) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the replica's serving_queries never became {serving} (is {now:?})");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_applied(metrics: &[&str], last_seq: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(90);
    while metrics.iter().any(|m| applied(m) < last_seq) {
        if Instant::now() > deadline {
            bail!(
                "replicas at {:?}, the log at {last_seq}",
                metrics.iter().map(|m| applied(m)).collect::<Vec<_>>()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_of_a_group_hold_the_same_events() -> anyhow::Result<()> {
    let mapping = "mappings = {\n  \"memory.query.*.>\": \"memory.q.{{partition(8,1)}}.{{wildcard(1)}}.>\"\n}\n";
    let nats = NatsCluster::start(3, mapping)?;
    let urls = nats.urls();
    cluster_cli(&["init", "--partitions", "8"], &urls)?;
    cluster_cli(&["assign", "--group", "g1", "--partitions", "0-7"], &urls)?;
    let (dir_a, dir_b) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let (mut a, metrics_a) = replica(&urls, dir_a.path(), "a")?;
    let (mut b, metrics_b) = replica(&urls, dir_b.path(), "b")?;
    // A second daemon on node id `a` would share a's durable consumer: refused.
    let dir_c = tempfile::tempdir()?;
    let (mut clash, _) =
        memory_e2e_tests::spawn_replica(&urls, dir_c.path(), ("a", "g1"), &[], &[])?;
    let status = clash.wait_exit(Duration::from_secs(60))?;
    assert!(
        !status.success() && clash.stderr().contains("node id a is in use"),
        "{}",
        clash.stderr()
    );

    let client = nats.connect().await?;
    let jetstream = async_nats::jetstream::new(client.clone());
    publish(&jetstream, 0..300).await?;
    // A retry inside the duplicate window, and a message that is not an event.
    publish(&jetstream, 10..11).await?;
    jetstream
        .publish("memory.events.webapp", "{\"kind\": \"note\"}".into())
        .await?
        .await?;
    let mut stream = jetstream.get_stream("MEMORY_LOG").await?;
    let last = stream.info().await?.state.last_sequence;
    assert_eq!(last, 301, "the duplicate is not stored");

    // The gateway: any daemon answers memory.ingest.<project>, redacts, publishes to the
    // log with a message id, and answers with the log's sequence.
    let token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    let request = json!([
        {"event_id": "g1", "session_id": "gw", "timestamp": 1_790_000_900_000_u64,
         "kind": "user_message", "text": format!("deploy with {token}")},
        {"event_id": "g2", "session_id": "gw", "timestamp": 1_790_000_901_000_u64,
         "kind": "assistant_message", "text": "deployed through the gateway"},
    ]);
    let ask = |body: Value| {
        let client = client.clone();
        async move {
            let reply = tokio::time::timeout(
                Duration::from_secs(10),
                client.request("memory.ingest.webapp", serde_json::to_vec(&body)?.into()),
            )
            .await??;
            anyhow::Ok(serde_json::from_slice::<Value>(&reply.payload)?)
        }
    };
    let reply = ask(request.clone()).await?;
    assert_eq!(
        (reply["accepted"].clone(), reply["last_seq"].clone()),
        (json!(2), json!(303)),
        "{reply}"
    );
    let again = ask(request).await?;
    assert_eq!(
        (again["duplicates"].clone(), again["last_seq"].clone()),
        (json!(2), json!(303)),
        "{again}"
    );
    let stored = stream.get_raw_message(302).await?;
    let text = String::from_utf8_lossy(&stored.payload).into_owned();
    assert!(
        text.contains("[REDACTED:github-pat:") && !text.contains(token),
        "{text}"
    );
    // Read-your-writes through the mapping: whichever replica answers has applied the
    // log up to the gateway's last_seq first.
    let query = json!({"session_id": "gw", "min_seq": reply["last_seq"]});
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        client.request(
            "memory.query.webapp.events.get",
            serde_json::to_vec(&query)?.into(),
        ),
    )
    .await??;
    let answer: Value = serde_json::from_slice(&answer.payload)?;
    let texts: Vec<&str> = answer["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|event| event["text"].as_str())
        .collect();
    assert_eq!(texts.len(), 2, "{answer}");
    assert!(texts[0].contains("[REDACTED:github-pat:"), "{answer}");
    // A min_seq beyond the log is unavailable, not a stale answer.
    let ahead = json!({"session_id": "gw", "min_seq": 10_000});
    let answer = client
        .request(
            "memory.query.webapp.events.get",
            serde_json::to_vec(&ahead)?.into(),
        )
        .await?;
    let answer: Value = serde_json::from_slice(&answer.payload)?;
    assert_eq!(answer["error"]["code"], "unavailable", "{answer}");
    let last = stream.info().await?.state.last_sequence;
    assert_eq!(last, 303);
    wait_applied(&[&metrics_a, &metrics_b], last).await?;

    // A replica killed while the log grows catches up from where its store says.
    b.kill_9()?;
    publish(&jetstream, 300..500).await?;
    let last = stream.info().await?.state.last_sequence;
    let (mut b, metrics_b) = replica(&urls, dir_b.path(), "b")?;
    wait_applied(&[&metrics_a, &metrics_b], last).await?;
    // A replica that falls far behind (frozen while 20 000 messages arrive) leaves the
    // query group, so nobody reads its stale store, and rejoins once caught up.
    let signal = |name: &str, pid: u32| {
        std::process::Command::new("kill")
            .args([name, &pid.to_string()])
            .status()
    };
    wait_serving(&metrics_b, 1).await?;
    signal("-STOP", b.pid())?;
    // In chunks: async-nats holds at most 5 000 unacknowledged publishes.
    for start in (500..20_500).step_by(2_000) {
        publish(&jetstream, start..start + 2_000).await?;
    }
    signal("-CONT", b.pid())?;
    wait_serving(&metrics_b, 0).await?;
    wait_serving(&metrics_b, 1).await?;
    let last = stream.info().await?.state.last_sequence;
    wait_applied(&[&metrics_a, &metrics_b], last).await?;
    // `cluster status` shows both daemons, caught up and answering.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let status: Value = serde_json::from_str(&cluster_cli(&["status", "--json"], &urls)?)?;
        let ready = ["a", "b"].iter().all(|node| {
            let record = &status["nodes"][*node];
            record["group"] == "g1"
                && record["applied_stream_seq"] == last
                && record["serving_queries"] == true
        });
        if ready {
            break;
        }
        if Instant::now() > deadline {
            bail!("the nodes never showed caught up: {}", status["nodes"]);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Admin calls are addressed to one node; nobody answers the single-mode subject.
    let (ok, report, err) = cli(&["status", "--json", "--nats-url", &urls, "--node", "b"])?;
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&report)?;
    let b_dir = dir_b
        .path()
        .file_name()
        .context("no name")?
        .to_string_lossy();
    assert!(
        report["data_dir"]
            .as_str()
            .is_some_and(|dir| dir.ends_with(&*b_dir)),
        "{report}"
    );
    let nobody = client.request("memory.admin.status", "{}".into()).await;
    assert!(
        nobody.is_err(),
        "a cluster node answered memory.admin.status"
    );
    // A partition moved to another group while the replicas run: they stop applying
    // and answering it at once (a stale answer would race the new owner's) and keep
    // the rest.
    let docs = query_partition(&client, "docs").await?;
    let mut other = None;
    for project in ["webapp", "infra", "mobile", "ops"] {
        if query_partition(&client, project).await? != docs {
            other = Some(project);
            break;
        }
    }
    let other = other.context("every project in docs's partition")?;
    cluster_cli(&["assign", "--group", "g2", "--partitions", &docs], &urls)?;
    let partitions = |metrics: &str| {
        memory_e2e_tests::http_get(&format!("http://{metrics}/metrics"))
            .map(|(_, text)| {
                memory_e2e_tests::metric_sum(&text, "memory_cluster_partitions", &[]) as u64
            })
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while partitions(&metrics_a) != 7 || partitions(&metrics_b) != 7 {
        if Instant::now() > deadline {
            bail!("the replicas kept the moved partition");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_serving(&metrics_a, 1).await?;
    wait_serving(&metrics_b, 1).await?;
    let root = |project: &str| {
        let client = client.clone();
        let subject = format!("memory.query.{project}.toc.root");
        async move {
            tokio::time::timeout(Duration::from_secs(5), client.request(subject, "{}".into())).await
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let moved = root("docs").await;
        if matches!(moved, Ok(Err(ref err)) if err.kind() == async_nats::client::RequestErrorKind::NoResponders)
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("a replica still answers the moved partition: {moved:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kept = root(other).await??;
    let kept: Value = serde_json::from_slice(&kept.payload)?;
    assert!(kept.get("error").is_none(), "{kept}");
    // Nor is the moved partition applied: a docs event, then an event of a kept project.
    publish(&jetstream, 20_503..20_504).await?;
    let before = applied(&metrics_a);
    let kept_index = ["webapp", "infra", "mobile", "docs", "ops"]
        .iter()
        .position(|project| *project == other)
        .context("unknown project")? as u32;
    // `publish` sends event n to project n % 5: 20 505 is webapp's.
    let kept_event = 20_505 + kept_index;
    publish(&jetstream, kept_event..kept_event + 1).await?;
    let last = stream.info().await?.state.last_sequence;
    wait_applied(&[&metrics_a, &metrics_b], last).await?;
    assert!(before < last);

    // A replica stops on SIGTERM even with every NATS server gone.
    let mut nats = nats;
    for index in 0..3 {
        nats.kill_9(index);
    }
    for daemon in [&mut a, &mut b] {
        let status = daemon.terminate_within(Duration::from_secs(20))?;
        assert!(status.success(), "{status}: {}", daemon.stderr());
    }

    let mut total = 0;
    for project in ["webapp", "infra", "mobile", "docs", "ops"] {
        let from_a = memory_e2e_tests::export_events_without_seq(dir_a.path(), project)?;
        let from_b = memory_e2e_tests::export_events_without_seq(dir_b.path(), project)?;
        // The gateway's two events went to webapp; one event more to the project kept
        // after the move, none to docs, whose partition moved away.
        let expected =
            4_100 + if project == "webapp" { 2 } else { 0 } + usize::from(project == other);
        assert_eq!(from_a.len(), expected, "{project}");
        assert_eq!(from_a, from_b, "{project}");
        total += from_a.len();
    }
    assert_eq!(total, 20_503);
    let webapp = memory_e2e_tests::export_events(dir_a.path(), "webapp")?;
    let g1 = webapp
        .iter()
        .find(|event| event["event_id"] == "g1")
        .context("the gateway's event was not applied")?;
    assert_eq!(g1["metadata"]["redactions"], "github-pat=1", "{g1}");
    Ok(())
}
