//! Ingest load: `raw` and `ingest` (closed loop), `latency` (open loop, against the daemon
//! or a floor) and `jetstream` (publish acks).

use std::future::IntoFuture;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use futures::StreamExt;
use memory_benches::{percentile, sample_event};

use crate::cli::{Against, Load};
use crate::closed_loop::{ReplyCheck, closed_loop};
use crate::floor;

/// The subject a floor responder answers on.
const FLOOR_SUBJECT: &str = "loadgen.floor";

/// Payloads are prepared before timing starts, so both modes measure the same work.
fn payloads(load: &Load, run_id: u64) -> Vec<Bytes> {
    (0..load.requests)
        .map(|request| {
            let events: Vec<serde_json::Value> = (0..load.batch)
                .map(|i| {
                    let n = request * load.batch + i;
                    let mut event =
                        sample_event(&load.project, n / 50, n, 1_767_225_600_000 + n as u64);
                    event["event_id"] = serde_json::Value::String(format!("{run_id}-{n}"));
                    event
                })
                .collect();
            Bytes::from(serde_json::to_vec(&events).unwrap_or_default())
        })
        .collect()
}

pub(super) async fn run_load(
    client: &async_nats::Client,
    subject: String,
    load: &Load,
    check_reply: bool,
    label: &str,
) -> anyhow::Result<()> {
    let run_id = memory_types::now_ms();
    let requests: Vec<(String, Bytes)> = payloads(load, run_id)
        .into_iter()
        .map(|payload| (subject.clone(), payload))
        .collect();
    let batch = load.batch as u64;
    let check: ReplyCheck = Arc::new(move |payload: &[u8]| {
        if !check_reply {
            return Ok(());
        }
        let body: serde_json::Value =
            serde_json::from_slice(payload).map_err(|err| err.to_string())?;
        let stored =
            body["accepted"].as_u64().unwrap_or(0) + body["duplicates"].as_u64().unwrap_or(0);
        if stored == batch {
            Ok(())
        } else {
            Err(format!("unexpected reply: {body}"))
        }
    });
    let mut run = closed_loop(client, Arc::new(requests), load.concurrency, check).await?;
    if let Some(first) = run.failures.first() {
        bail!("{} requests failed; first: {first}", run.failures.len());
    }
    run.latencies_us.sort_unstable();
    let events = (load.requests * load.batch) as f64;
    println!(
        "{label}: {} requests x {} events, concurrency {}: {:.0} req/s, {:.0} events/s, latency p50 {:.2} ms p99 {:.2} ms",
        load.requests,
        load.batch,
        load.concurrency,
        load.requests as f64 / run.elapsed_secs,
        events / run.elapsed_secs,
        percentile(&run.latencies_us, 50.0) as f64 / 1000.0,
        percentile(&run.latencies_us, 99.0) as f64 / 1000.0,
    );
    Ok(())
}

pub(super) async fn latency(
    url: &str,
    rate: u64,
    seconds: u64,
    project: &str,
    against: Against,
    dir: Option<&Path>,
) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    let floor_reply = Bytes::from_static(br#"{"accepted":1,"duplicates":0,"rejected":[]}"#);
    let floor = match against {
        Against::Daemon => None,
        Against::Echo => Some(floor::spawn_echo(url, FLOOR_SUBJECT, floor_reply).await?),
        Against::FsyncEcho => {
            let dir = dir.context("--against fsync-echo needs --dir")?;
            Some(floor::spawn_fsync_echo(url, FLOOR_SUBJECT, floor_reply, dir).await?)
        }
    };
    let subject = match against {
        Against::Daemon => format!("memory.ingest.{project}"),
        Against::Echo | Against::FsyncEcho => FLOOR_SUBJECT.to_owned(),
    };
    let total = (rate * seconds) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let run_id = memory_types::now_ms();
    let started = tokio::time::Instant::now();
    let mut tasks = futures::stream::FuturesUnordered::new();
    for n in 0..total {
        // Open loop: each request leaves at its scheduled time whatever the replies do.
        tokio::time::sleep_until(started + interval * n as u32).await;
        let mut event = sample_event(project, n / 50, n, 1_767_225_600_000 + n as u64);
        event["event_id"] = serde_json::Value::String(format!("lat-{run_id}-{n}"));
        let payload = Bytes::from(serde_json::to_vec(&event)?);
        let (client, subject) = (client.clone(), subject.clone());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let reply =
                tokio::time::timeout(Duration::from_secs(10), client.request(subject, payload))
                    .await;
            match reply {
                Ok(Ok(_)) => Some(sent.elapsed().as_micros() as u64),
                _ => None,
            }
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    let mut failures = 0usize;
    while let Some(result) = tasks.next().await {
        match result {
            Ok(Some(us)) => latencies.push(us),
            _ => failures += 1,
        }
    }
    if let Some(floor) = floor {
        floor.abort();
    }
    latencies.sort_unstable();
    let achieved = latencies.len() as f64 / started.elapsed().as_secs_f64();
    println!(
        "{}offered {rate} events/s for {seconds} s: {} acked ({failures} failed), {:.0} events/s, ack latency p50 {:.2} ms p99 {:.2} ms p99.9 {:.2} ms max {:.2} ms",
        against.label(),
        latencies.len(),
        achieved,
        percentile(&latencies, 50.0) as f64 / 1000.0,
        percentile(&latencies, 99.0) as f64 / 1000.0,
        percentile(&latencies, 99.9) as f64 / 1000.0,
        latencies.last().copied().unwrap_or(0) as f64 / 1000.0,
    );
    Ok(())
}

pub(super) async fn jetstream(url: &str, events: usize, project: &str) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    let context = async_nats::jetstream::new(client);
    let run_id = memory_types::now_ms();
    let started = Instant::now();
    let mut acks = futures::stream::FuturesOrdered::new();
    for n in 0..events {
        let mut event = sample_event(project, n / 50, n, 1_767_225_600_000 + n as u64);
        event["event_id"] = serde_json::Value::String(format!("js-{run_id}-{n}"));
        acks.push_back(
            context
                .publish(
                    format!("memory.events.{project}"),
                    Bytes::from(serde_json::to_vec(&event)?),
                )
                .await?
                .into_future(),
        );
        if acks.len() >= 1024
            && let Some(ack) = acks.next().await
        {
            ack?;
        }
    }
    while let Some(ack) = acks.next().await {
        ack?;
    }
    println!(
        "published {events} events to JetStream in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
