//! Single mode is one daemon per NATS: a second daemon on the same NATS refuses to
//! start and names the first, also when both start at the same moment; a daemon killed
//! with SIGKILL leaves nothing that blocks the next. The JetStream consumer's
//! configuration is compared with the daemon's, never silently inherited.

use std::time::{Duration, Instant};

use anyhow::bail;
use async_nats::jetstream::consumer::{AckPolicy, pull};
use async_nats::jetstream::stream;
use memory_e2e_tests::{Daemon, NatsServer, free_port, serve_daemon, spawn_serve};
use serde_json::{Value, json};

const REFUSAL: &str = "another agent-memory daemon already serves this NATS";

fn start(nats_url: &str, data_dir: &std::path::Path) -> anyhow::Result<(Daemon, String)> {
    spawn_serve(nats_url, data_dir, free_port(), &[])
}

async fn ingest(client: &async_nats::Client, id: &str) -> anyhow::Result<Value> {
    let event = json!({"event_id": id, "session_id": "s", "timestamp": 1_790_000_000_000_u64,
                       "kind": "note", "text": "one daemon"});
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        client.request("memory.ingest.single", serde_json::to_vec(&event)?.into()),
    )
    .await??;
    Ok(serde_json::from_slice(&reply.payload)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_single_mode_daemon_on_one_nats_refuses_to_start() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let (first_dir, second_dir) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let (mut first, _) = serve_daemon(&nats.url(), first_dir.path(), &[])?;

    let (mut second, _) = start(&nats.url(), second_dir.path())?;
    let status = second.wait_exit(Duration::from_secs(30))?;
    assert!(!status.success());
    let said = second.stderr();
    let first_path = std::fs::canonicalize(first_dir.path())?;
    assert!(
        said.contains(REFUSAL)
            && said.contains(&first_path.display().to_string())
            && said.contains(&format!("pid {}", first.pid())),
        "{said}"
    );
    // The first one serves on, alone.
    let client = nats.connect().await?;
    let reply = ingest(&client, "n1").await?;
    assert_eq!(reply["accepted"], 1, "{reply}");

    // After a SIGKILL nothing stands in the way of the next daemon.
    first.kill_9()?;
    let (mut third, _) = serve_daemon(&nats.url(), second_dir.path(), &[])?;
    let reply = ingest(&client, "n2").await?;
    assert_eq!(reply["accepted"], 1, "{reply}");
    third.terminate()?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_daemons_started_together_exactly_one_serves() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    let mut daemons = Vec::new();
    for dir in &dirs {
        daemons.push(start(&nats.url(), dir.path())?);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut serving, mut refused) = (Vec::new(), Vec::new());
    while serving.len() + refused.len() < 2 {
        if Instant::now() > deadline {
            bail!(
                "undecided: {} serving, {} refused",
                serving.len(),
                refused.len()
            );
        }
        for (index, (daemon, metrics)) in daemons.iter_mut().enumerate() {
            if serving.contains(&index) || refused.contains(&index) {
                continue;
            }
            if let Some(status) = daemon.try_status()? {
                assert!(!status.success());
                assert!(daemon.stderr().contains(REFUSAL), "{}", daemon.stderr());
                refused.push(index);
            } else if matches!(
                memory_e2e_tests::http_get(&format!("http://{metrics}/readyz")),
                Ok((200, _))
            ) {
                serving.push(index);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A daemon that steps down does so within its check: the other one is ready and
    // stays alone.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (index, (daemon, _)) in daemons.iter_mut().enumerate() {
        if serving.contains(&index) && daemon.try_status()?.is_some() {
            refused.push(index);
            serving.retain(|served| *served != index);
        }
    }
    assert_eq!((serving.len(), refused.len()), (1, 1));
    let client = nats.connect().await?;
    let reply = ingest(&client, "n1").await?;
    assert_eq!(reply["accepted"], 1, "{reply}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_consumer_is_compared_not_inherited() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let client = nats.connect().await?;
    let jetstream = async_nats::jetstream::new(client.clone());
    let stream = jetstream
        .create_stream(stream::Config {
            name: "MEMORY_EVENTS".to_owned(),
            subjects: vec!["memory.events.>".to_owned()],
            storage: stream::StorageType::File,
            ..stream::Config::default()
        })
        .await?;
    // Another daemon's consumer, with a narrower filter and other limits.
    stream
        .create_consumer(pull::Config {
            durable_name: Some("memory-daemon".to_owned()),
            ack_policy: AckPolicy::Explicit,
            filter_subjects: vec!["memory.events.other".to_owned()],
            max_ack_pending: 7,
            ..pull::Config::default()
        })
        .await?;
    let dir = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(&nats.url(), dir.path(), &[])?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let info = loop {
        let info = stream.consumer_info("memory-daemon").await?;
        if info.config.max_ack_pending != 7 || Instant::now() > deadline {
            break info;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(info.config.max_ack_pending, 10_000);
    assert_eq!(info.config.filter_subjects, ["memory.events.>"]);
    // Events of every project arrive, not only the inherited filter's.
    jetstream
        .publish(
            "memory.events.webapp",
            serde_json::to_vec(&json!({"event_id": "j1", "session_id": "s",
                "timestamp": 1_790_000_000_000_u64, "kind": "note", "text": "x"}))?
            .into(),
        )
        .await?
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = client.request("memory.admin.status", "{}".into()).await?;
        let status: Value = serde_json::from_slice(&reply.payload)?;
        if status["projects"]["webapp"]["events"] == 1 {
            break;
        }
        if Instant::now() > deadline {
            bail!("the event never arrived: {status}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    daemon.terminate()?;
    assert!(
        daemon
            .stderr()
            .contains("jetstream consumer differs from the configuration"),
        "{}",
        daemon.stderr()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_stops_on_sigterm_with_nats_gone() -> anyhow::Result<()> {
    let mut nats = NatsServer::start()?;
    let dir = tempfile::tempdir()?;
    let (mut daemon, _) = serve_daemon(&nats.url(), dir.path(), &[])?;
    nats.stop();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let status = daemon.terminate_within(Duration::from_secs(20))?;
    assert!(status.success(), "{status}: {}", daemon.stderr());
    Ok(())
}
