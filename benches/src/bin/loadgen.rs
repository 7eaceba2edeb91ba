//! Load generator for agent-memory over NATS, bounded in count and time, loopback only.
//!
//! - `gen-file`: a JSONL file of realistic events for `memory-daemon ingest --file`.
//! - `raw`: request/reply round trips against an echo responder this process runs, with
//!   the same payloads and batch size as `ingest` — the transport's own ceiling.
//! - `ingest`: durable ingest through the daemon (`memory.ingest.<project>`).
//! - `latency`: open-loop offered load (events/s, one event per request) and the ack
//!   latency distribution.
//! - `jetstream`: publishes events to `memory.events.<project>` with publish acks.

use std::future::IntoFuture;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, Parser, Subcommand};
use futures::StreamExt;
use memory_benches::{percentile, sample_event};
use tokio::sync::Mutex;

#[derive(Parser)]
#[command(about = "agent-memory load generator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a JSONL file of events.
    GenFile {
        /// Number of events.
        #[arg(long, default_value_t = 200_000)]
        events: usize,
        /// Output path.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Raw NATS request/reply against an in-process echo responder.
    Raw(Load),
    /// Durable ingest through the daemon.
    Ingest(Load),
    /// Open-loop offered load and ack latency.
    Latency {
        /// NATS URL.
        #[arg(long)]
        url: String,
        /// Offered events per second (one event per request).
        #[arg(long, default_value_t = 5_000)]
        rate: u64,
        /// Seconds to offer load.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Project.
        #[arg(long, default_value = "loadgen")]
        project: String,
    },
    /// Publish events to JetStream.
    Jetstream {
        /// NATS URL.
        #[arg(long)]
        url: String,
        /// Events.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Project.
        #[arg(long, default_value = "loadgen")]
        project: String,
    },
}

#[derive(Args, Clone)]
struct Load {
    /// NATS URL.
    #[arg(long)]
    url: String,
    /// Requests to send.
    #[arg(long, default_value_t = 2_000)]
    requests: usize,
    /// Events per request.
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Project.
    #[arg(long, default_value = "loadgen")]
    project: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::GenFile { events, out } => gen_file(events, &out),
        Command::Raw(load) => {
            let client = async_nats::connect(&load.url).await.context("connect")?;
            let responder = async_nats::connect(&load.url)
                .await
                .context("connect responder")?;
            let mut subscription = responder.subscribe("loadgen.echo").await?;
            let echo = tokio::spawn(async move {
                let reply = Bytes::from_static(
                    br#"{"accepted":100,"duplicates":0,"rejected":[],"last_seq":1}"#,
                );
                while let Some(message) = subscription.next().await {
                    if let Some(subject) = message.reply {
                        let _ = responder.publish(subject, reply.clone()).await;
                    }
                }
            });
            run_load(
                &client,
                "loadgen.echo".into(),
                &load,
                false,
                "raw request/reply",
            )
            .await?;
            echo.abort();
            Ok(())
        }
        Command::Ingest(load) => {
            let client = async_nats::connect(&load.url).await.context("connect")?;
            let subject = format!("memory.ingest.{}", load.project);
            run_load(&client, subject, &load, true, "durable ingest").await
        }
        Command::Latency {
            url,
            rate,
            seconds,
            project,
        } => latency(&url, rate, seconds, &project).await,
        Command::Jetstream {
            url,
            events,
            project,
        } => jetstream(&url, events, &project).await,
    }
}

fn gen_file(events: usize, out: &std::path::Path) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    let start = 1_767_225_600_000u64; // 2026-01-01
    for n in 0..events {
        let project = if n % 3 == 0 {
            "ingest-pipeline"
        } else {
            "webapp"
        };
        let event = sample_event(project, n / 40, n, start + (n as u64) * 7_000);
        writeln!(file, "{event}")?;
    }
    file.flush()?;
    println!("wrote {events} events to {}", out.display());
    Ok(())
}

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

async fn run_load(
    client: &async_nats::Client,
    subject: String,
    load: &Load,
    check_reply: bool,
    label: &str,
) -> anyhow::Result<()> {
    let run_id = memory_types::now_ms();
    let payloads = Arc::new(payloads(load, run_id));
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(load.requests)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..load.concurrency {
        let (client, subject, payloads, next, latencies) = (
            client.clone(),
            subject.clone(),
            payloads.clone(),
            next.clone(),
            latencies.clone(),
        );
        let batch = load.batch as u64;
        workers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(payload) = payloads.get(index) else {
                    break;
                };
                let sent = Instant::now();
                let reply = tokio::time::timeout(
                    Duration::from_secs(30),
                    client.request(subject.clone(), payload.clone()),
                )
                .await
                .context("request timed out")?
                .context("request failed")?;
                mine.push(sent.elapsed().as_micros() as u64);
                if check_reply {
                    let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
                    let stored = body["accepted"].as_u64().unwrap_or(0)
                        + body["duplicates"].as_u64().unwrap_or(0);
                    if stored != batch {
                        bail!("unexpected reply: {body}");
                    }
                }
            }
            latencies.lock().await.extend(mine);
            anyhow::Ok(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut latencies = latencies.lock().await.clone();
    latencies.sort_unstable();
    let events = (load.requests * load.batch) as f64;
    println!(
        "{label}: {} requests x {} events, concurrency {}: {:.0} req/s, {:.0} events/s, latency p50 {:.2} ms p99 {:.2} ms",
        load.requests,
        load.batch,
        load.concurrency,
        load.requests as f64 / elapsed,
        events / elapsed,
        percentile(&latencies, 50.0) as f64 / 1000.0,
        percentile(&latencies, 99.0) as f64 / 1000.0,
    );
    Ok(())
}

async fn latency(url: &str, rate: u64, seconds: u64, project: &str) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    let subject = format!("memory.ingest.{project}");
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
    latencies.sort_unstable();
    let achieved = latencies.len() as f64 / started.elapsed().as_secs_f64();
    println!(
        "offered {rate} events/s for {seconds} s: {} acked ({failures} failed), {:.0} events/s, ack latency p50 {:.2} ms p99 {:.2} ms p99.9 {:.2} ms max {:.2} ms",
        latencies.len(),
        achieved,
        percentile(&latencies, 50.0) as f64 / 1000.0,
        percentile(&latencies, 99.0) as f64 / 1000.0,
        percentile(&latencies, 99.9) as f64 / 1000.0,
        latencies.last().copied().unwrap_or(0) as f64 / 1000.0,
    );
    Ok(())
}

async fn jetstream(url: &str, events: usize, project: &str) -> anyhow::Result<()> {
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
