//! Load generator for agent-memory over NATS, bounded in count and time, loopback only.
//!
//! - `gen-file`: a JSONL file of realistic events for `memory-daemon ingest --file`;
//!   `--dataset year` writes [`memory_benches::year`]'s year of coding sessions.
//! - `raw`: request/reply round trips against an echo responder this process runs, with
//!   the same payloads and batch size as `ingest` — the transport's own ceiling.
//! - `ingest`: durable ingest through the daemon (`memory.ingest.<project>`).
//! - `latency`: open-loop offered load (events/s, one event per request) and the ack
//!   latency distribution.
//! - `jetstream`: publishes events to `memory.events.<project>` with publish acks.
//! - `query`: the time-table-of-contents query mix ([`memory_benches::toc_mix`]) against
//!   a daemon holding the year data set: per call kind, N requests with C in flight;
//!   p50/p99/max latency and throughput.
//! - `navigable`: ingest-to-navigable delay. Publishes events one at a time into a live
//!   session (timestamp = now) at a steady rate through `memory.ingest.<project>` and,
//!   after each durable ack, polls `toc.node` of the event's day until the day's
//!   `num_events` counts it; reports the distribution of visible − acked.
//! - `teleport`: the BM25 index through the daemon, against the year data set:
//!   `teleport.search` (raw hits) and `search` (the agent call, which must be answered
//!   by the `bm25` tier) with natural-language questions made from the year's own
//!   words, the projects in turn; per concurrency, p50/p99/max latency, throughput and
//!   the server's own time (`search_time_ms`, `took_ms`).
//! - `searchable`: ingest-to-searchable delay. Publishes events carrying a unique token
//!   into a live session at a steady rate and, after each durable ack, polls
//!   `teleport.search` for the token until the event's id is a hit; reports the
//!   distribution of visible − acked.
//! - `admin-rebuild`: `memory.admin.rebuild {"index_type": "bm25"}` and its report.
use std::collections::HashMap;
use std::future::IntoFuture;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use futures::StreamExt;
use memory_benches::questions::{QUESTION_SEED, question_from};
use memory_benches::toc_mix::{latency_line, query_kinds};
use memory_benches::year::{Rng, YEAR_NOW, YEAR_PROJECTS, YearEvent, YearSpec, generate};
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
        /// `sample`: the short snippets of the ingest benches; `year`: a year of
        /// coding sessions over four projects (`--events` about, whole sessions).
        #[arg(long, value_enum, default_value_t = Dataset::Sample)]
        dataset: Dataset,
        /// Seed of the `year` data set.
        #[arg(long, default_value_t = YearSpec::default().seed)]
        seed: u64,
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
    /// The TOC query mix against a daemon holding the year data set.
    Query {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to query.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Requests per call kind.
        #[arg(long, default_value_t = 500)]
        requests: usize,
        /// Requests in flight.
        #[arg(long, default_value_t = 1)]
        concurrency: usize,
    },
    /// Ingest-to-navigable delay of a live session.
    Navigable {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to write to.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Events per second, one per request.
        #[arg(long, default_value_t = 20)]
        rate: u64,
        /// Seconds to run.
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        /// Pause between two polls of the day node, milliseconds.
        #[arg(long, default_value_t = 2)]
        poll_ms: u64,
        /// Give up on one event after this many seconds.
        #[arg(long, default_value_t = 120)]
        timeout_secs: u64,
    },
    /// BM25 through the daemon: `teleport.search` and `search` (bm25 tier).
    Teleport(TeleportArgs),
    /// Ingest-to-searchable delay of a live session (BM25 index).
    Searchable {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// Project to write to.
        #[arg(long, default_value = "webapp")]
        project: String,
        /// Events per second, one per request.
        #[arg(long, default_value_t = 5)]
        rate: u64,
        /// Events to publish.
        #[arg(long, default_value_t = 200)]
        events: u64,
        /// Pause between two `teleport.search` polls of one event, milliseconds.
        #[arg(long, default_value_t = 5)]
        poll_ms: u64,
        /// Give up on one event after this many seconds.
        #[arg(long, default_value_t = 60)]
        timeout_secs: u64,
    },
    /// Rebuild an index over NATS (`memory.admin.rebuild`) and print its report.
    AdminRebuild {
        /// NATS URL.
        #[arg(long = "nats-url", visible_alias = "url")]
        url: String,
        /// The index to rebuild.
        #[arg(long, default_value = "bm25")]
        index_type: String,
        /// Longest wait for the reply, seconds.
        #[arg(long, default_value_t = 900)]
        timeout_secs: u64,
        /// While it runs, every this many milliseconds: `teleport.status` (the rebuild's
        /// phase) and one `teleport.search` (served by the old generation); 0: off.
        #[arg(long, default_value_t = 100)]
        probe_ms: u64,
        /// Project of the probes.
        #[arg(long, default_value = "webapp")]
        probe_project: String,
        /// Rebuilds, one after the other; the median is reported too.
        #[arg(long, default_value_t = 1)]
        runs: usize,
    },
}

#[derive(Args, Clone)]
struct TeleportArgs {
    /// NATS URL.
    #[arg(long = "nats-url", visible_alias = "url")]
    url: String,
    /// Requests per call kind and concurrency.
    #[arg(long, default_value_t = 1_000)]
    requests: usize,
    /// Requests in flight; a comma-separated list runs each in turn.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    concurrency: Vec<usize>,
    /// Questions per project.
    #[arg(long, default_value_t = 50)]
    questions: usize,
    /// Hits per call (`limit`).
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Events of the year the daemon holds (as given to `gen-file --dataset year`):
    /// the questions are made from its texts.
    #[arg(long, default_value_t = YearSpec::default().events)]
    year_events: usize,
    /// Seed of that year.
    #[arg(long, default_value_t = YearSpec::default().seed)]
    seed: u64,
    /// Only `teleport.search`, not `search`.
    #[arg(long)]
    skip_search: bool,
    /// The tier `search` must answer from: `bm25`, or `hybrid` when the daemon's vector
    /// index is on and caught up.
    #[arg(long, default_value = "bm25")]
    expect_tier: String,
    /// Print the first few questions.
    #[arg(long, default_value_t = 0)]
    show_questions: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Dataset {
    Sample,
    Year,
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
        Command::GenFile {
            events,
            out,
            dataset: Dataset::Sample,
            ..
        } => gen_file(events, &out),
        Command::GenFile {
            events, out, seed, ..
        } => gen_year_file(&YearSpec { seed, events }, &out),
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
        Command::Query {
            url,
            project,
            requests,
            concurrency,
        } => query(&url, &project, requests, concurrency).await,
        Command::Navigable {
            url,
            project,
            rate,
            seconds,
            poll_ms,
            timeout_secs,
        } => {
            navigable(
                &url,
                &project,
                rate,
                seconds,
                Duration::from_millis(poll_ms),
                Duration::from_secs(timeout_secs),
            )
            .await
        }
        Command::Teleport(args) => teleport(&args).await,
        Command::Searchable {
            url,
            project,
            rate,
            events,
            poll_ms,
            timeout_secs,
        } => {
            searchable(
                &url,
                &project,
                rate,
                events,
                Duration::from_millis(poll_ms),
                Duration::from_secs(timeout_secs),
            )
            .await
        }
        Command::AdminRebuild {
            url,
            index_type,
            timeout_secs,
            probe_ms,
            probe_project,
            runs,
        } => {
            let mut docs_per_sec = Vec::with_capacity(runs);
            for _ in 0..runs.max(1) {
                docs_per_sec.push(
                    admin_rebuild(
                        &url,
                        &index_type,
                        Duration::from_secs(timeout_secs),
                        Duration::from_millis(probe_ms),
                        &probe_project,
                    )
                    .await?,
                );
            }
            if docs_per_sec.len() > 1 {
                docs_per_sec.sort_by(f64::total_cmp);
                let list: Vec<String> = docs_per_sec.iter().map(|d| format!("{d:.0}")).collect();
                println!(
                    "admin rebuild {index_type}: median {:.0} docs/s over {} runs (sorted: {})",
                    docs_per_sec[docs_per_sec.len() / 2],
                    docs_per_sec.len(),
                    list.join(", "),
                );
            }
            Ok(())
        }
    }
}

fn gen_year_file(spec: &YearSpec, out: &std::path::Path) -> anyhow::Result<()> {
    let events = generate(spec);
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    let mut per_project: std::collections::BTreeMap<
        &str,
        (usize, std::collections::BTreeSet<u32>),
    > = std::collections::BTreeMap::new();
    for event in &events {
        writeln!(file, "{}", event.to_json())?;
        let entry = per_project.entry(event.project).or_default();
        entry.0 += 1;
        entry.1.insert(event.session);
    }
    file.flush()?;
    let counts: Vec<String> = per_project
        .iter()
        .map(|(project, (events, sessions))| {
            format!("{project} {events} events/{} sessions", sessions.len())
        })
        .collect();
    println!(
        "wrote {} events (seed {}) to {}: {}; {} .. {}",
        events.len(),
        spec.seed,
        out.display(),
        counts.join(", "),
        events
            .first()
            .map(|e| memory_types::format_timestamp_ms(e.timestamp_ms))
            .unwrap_or_default(),
        events
            .last()
            .map(|e| memory_types::format_timestamp_ms(e.timestamp_ms))
            .unwrap_or_default(),
    );
    Ok(())
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

/// Checks one reply body; `Err` counts the request as failed with that reason.
type ReplyCheck = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// What a closed-loop run measured.
struct ClosedLoop {
    latencies_us: Vec<u64>,
    failures: Vec<String>,
    elapsed_secs: f64,
}

/// Sends every `(subject, payload)` once, `concurrency` requests in flight, and times
/// each round trip.
async fn closed_loop(
    client: &async_nats::Client,
    requests: Arc<Vec<(String, Bytes)>>,
    concurrency: usize,
    check: ReplyCheck,
) -> anyhow::Result<ClosedLoop> {
    let next = Arc::new(AtomicUsize::new(0));
    let results = Arc::new(Mutex::new((Vec::with_capacity(requests.len()), Vec::new())));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, requests, next, results, check) = (
            client.clone(),
            requests.clone(),
            next.clone(),
            results.clone(),
            check.clone(),
        );
        workers.push(tokio::spawn(async move {
            let (mut latencies, mut failures) = (Vec::new(), Vec::new());
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some((subject, payload)) = requests.get(index) else {
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
                latencies.push(sent.elapsed().as_micros() as u64);
                if let Err(reason) = check(&reply.payload) {
                    failures.push(reason);
                }
            }
            let mut shared = results.lock().await;
            shared.0.extend(latencies);
            shared.1.extend(failures);
            anyhow::Ok(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let elapsed_secs = started.elapsed().as_secs_f64();
    let (latencies_us, failures) = std::mem::take(&mut *results.lock().await);
    Ok(ClosedLoop {
        latencies_us,
        failures,
        elapsed_secs,
    })
}

async fn run_load(
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

/// A query reply is an error when it carries `{"error": …}`.
fn query_reply_ok(payload: &[u8]) -> Result<(), String> {
    let body: serde_json::Value = serde_json::from_slice(payload).map_err(|err| err.to_string())?;
    match body.get("error") {
        Some(error) => Err(error.to_string()),
        None => Ok(()),
    }
}

async fn query(
    url: &str,
    project: &str,
    requests: usize,
    concurrency: usize,
) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    println!(
        "TOC query mix over NATS, project {project}: {requests} requests per kind, concurrency {concurrency}"
    );
    let mut failed = 0usize;
    for kind in query_kinds() {
        let subject = format!("memory.query.{project}.{}", kind.method);
        let bodies: Vec<Bytes> = kind
            .bodies
            .iter()
            .map(|body| Bytes::from(serde_json::to_vec(body).unwrap_or_default()))
            .collect();
        let reply_bytes = {
            let reply = client
                .request(subject.clone(), bodies[0].clone())
                .await
                .context("warm-up request")?;
            reply.payload.len()
        };
        let calls: Vec<(String, Bytes)> = (0..requests)
            .map(|i| (subject.clone(), bodies[i % bodies.len()].clone()))
            .collect();
        let mut run = closed_loop(
            &client,
            Arc::new(calls),
            concurrency,
            Arc::new(query_reply_ok),
        )
        .await?;
        println!(
            "{}  {:>7.0} req/s  errors {}  (first reply {} bytes)",
            latency_line(kind.label, &mut run.latencies_us),
            requests as f64 / run.elapsed_secs,
            run.failures.len(),
            reply_bytes,
        );
        if let Some(first) = run.failures.first() {
            println!("  first error: {first}");
        }
        failed += run.failures.len();
    }
    if failed > 0 {
        bail!("{failed} query calls failed");
    }
    Ok(())
}

/// `num_events` of a day node, 0 when the project has no such node yet.
async fn day_events(
    client: &async_nats::Client,
    subject: &str,
    node_id: &str,
) -> anyhow::Result<u64> {
    let body = Bytes::from(serde_json::to_vec(
        &serde_json::json!({ "node_id": node_id }),
    )?);
    let reply = client
        .request(subject.to_string(), body)
        .await
        .context("toc.node request")?;
    let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
    if let Some(num_events) = body["node"]["num_events"].as_u64() {
        return Ok(num_events);
    }
    if body["error"]["code"] == "not_found" {
        return Ok(0);
    }
    bail!("unexpected toc.node reply: {body}")
}

async fn navigable(
    url: &str,
    project: &str,
    rate: u64,
    seconds: u64,
    poll: Duration,
    timeout: Duration,
) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    let ingest_subject = format!("memory.ingest.{project}");
    let node_subject = format!("memory.query.{project}.toc.node");
    let run_id = memory_types::now_ms();
    let session_id = format!("live-{run_id}");
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    // Per day: num_events before this run, and this run's events on it so far.
    let mut days: HashMap<String, (u64, u64)> = HashMap::new();
    let (mut visible_us, mut ack_us, mut polls) = (Vec::new(), Vec::new(), Vec::new());
    let mut late_starts = 0u64;
    let mut timeouts = 0u64;
    let started = tokio::time::Instant::now();
    for n in 0..total {
        let due = started + interval * n as u32;
        if tokio::time::Instant::now() > due + interval {
            late_starts += 1;
        }
        tokio::time::sleep_until(due).await;
        let timestamp_ms = memory_types::now_ms();
        let day = memory_types::format_timestamp_ms(timestamp_ms)
            .get(..10)
            .unwrap_or_default()
            .to_string();
        let node_id = format!("toc:day:{day}");
        if !days.contains_key(&day) {
            let baseline = day_events(&client, &node_subject, &node_id).await?;
            days.insert(day.clone(), (baseline, 0));
        }
        let mut event = sample_event(project, 0, n as usize, timestamp_ms);
        event["event_id"] = serde_json::Value::String(format!("nav-{run_id}-{n}"));
        event["session_id"] = serde_json::Value::String(session_id.clone());
        event["kind"] = serde_json::Value::String(
            if n % 2 == 0 {
                "user_message"
            } else {
                "assistant_message"
            }
            .into(),
        );
        let payload = Bytes::from(serde_json::to_vec(&event)?);
        let sent = Instant::now();
        let reply = client
            .request(ingest_subject.clone(), payload)
            .await
            .context("ingest request")?;
        let acked = Instant::now();
        let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
        if body["accepted"].as_u64() != Some(1) {
            bail!("event {n} not accepted: {body}");
        }
        ack_us.push(acked.duration_since(sent).as_micros() as u64);
        let entry = days.entry(day).or_default();
        entry.1 += 1;
        let expected = entry.0 + entry.1;
        let mut attempts = 0u64;
        loop {
            attempts += 1;
            if day_events(&client, &node_subject, &node_id).await? >= expected {
                visible_us.push(acked.elapsed().as_micros() as u64);
                break;
            }
            if acked.elapsed() > timeout {
                timeouts += 1;
                break;
            }
            tokio::time::sleep(poll).await;
        }
        polls.push(attempts);
    }
    let elapsed = started.elapsed().as_secs_f64();
    for (day, (baseline, ours)) in &days {
        let now = day_events(&client, &node_subject, &format!("toc:day:{day}")).await?;
        println!(
            "day {day}: num_events {baseline} before, {now} after, {ours} published (the difference is exactly ours: {})",
            now - baseline == *ours
        );
    }
    println!(
        "navigable: {} events into live session {session_id} of {project} at {rate}/s offered ({:.1}/s achieved, {late_starts} sent late), poll every {} ms, mean {:.1} polls per event, {timeouts} timeouts",
        total,
        total as f64 / elapsed,
        poll.as_millis(),
        polls.iter().sum::<u64>() as f64 / polls.len().max(1) as f64,
    );
    println!("{}", latency_line("ack (durable commit)", &mut ack_us));
    println!(
        "{}",
        latency_line("visible in day node - ack", &mut visible_us)
    );
    if timeouts > 0 {
        bail!(
            "{timeouts} events not visible within {} s",
            timeout.as_secs()
        );
    }
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

/// One question, asked in one project.
struct Question {
    project: &'static str,
    text: String,
}

/// `per_project` natural-language questions per project, made deterministically from the
/// words of random indexed events of that project (the templates and word choice of the
/// in-process `bm25` bench: 2–4 content words of one event in a question; one in ten
/// each with an apostrophe, a colon, parentheses, or a code identifier or path), then
/// interleaved so that consecutive questions go to the projects in turn.
fn year_questions(events: &[YearEvent], per_project: usize) -> Vec<Question> {
    let mut per: Vec<Vec<Question>> = Vec::new();
    for (index, (project, _)) in YEAR_PROJECTS.iter().enumerate() {
        // What the indexer indexes (`memory_search::documents::event_doc`).
        let docs: Vec<&YearEvent> = events
            .iter()
            .filter(|event| {
                event.project == *project
                    && !event.text.trim().is_empty()
                    && !matches!(event.kind, "session_start" | "session_end")
            })
            .collect();
        if docs.is_empty() {
            continue;
        }
        let mut rng = Rng::new(QUESTION_SEED + index as u64);
        let mut out = Vec::with_capacity(per_project);
        while out.len() < per_project {
            let doc = *rng.pick(&docs);
            let Some(text) = question_from(&mut rng, &doc.text, out.len()) else {
                continue;
            };
            out.push(Question {
                project: doc.project,
                text,
            });
        }
        per.push(out);
    }
    let mut questions = Vec::with_capacity(per_project * per.len());
    let mut per: Vec<std::vec::IntoIter<Question>> = per.into_iter().map(Vec::into_iter).collect();
    for _ in 0..per_project {
        questions.extend(per.iter_mut().filter_map(Iterator::next));
    }
    questions
}

/// Sorted copy's percentile, in milliseconds.
fn ms_at(sorted_us: &[u64], p: f64) -> f64 {
    percentile(sorted_us, p) as f64 / 1000.0
}

/// What the replies of one run said, besides their latency.
#[derive(Default)]
struct ReplyStats {
    /// Server-side time per reply, microseconds (`search_time_ms` or `took_ms`).
    server_us: Vec<u64>,
    /// Hits per reply.
    hits: Vec<u64>,
    /// `total_hits` (teleport) or evidence events (search) per reply.
    extra: Vec<u64>,
    /// Answers per tier (search).
    tiers: std::collections::BTreeMap<String, u64>,
}

type SharedStats = Arc<std::sync::Mutex<ReplyStats>>;

/// `(subject, body)` of each request of a run.
type Calls = Vec<(String, Bytes)>;

fn lock_stats(stats: &SharedStats) -> std::sync::MutexGuard<'_, ReplyStats> {
    stats
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Checks a `teleport.search` reply and records its server time and hits.
fn teleport_check(stats: SharedStats) -> ReplyCheck {
    Arc::new(move |payload: &[u8]| {
        let body: serde_json::Value =
            serde_json::from_slice(payload).map_err(|err| err.to_string())?;
        if let Some(error) = body.get("error") {
            return Err(error.to_string());
        }
        let (Some(results), Some(time_ms)) =
            (body["results"].as_array(), body["search_time_ms"].as_f64())
        else {
            return Err(format!("unexpected reply: {body}"));
        };
        let mut stats = lock_stats(&stats);
        stats.server_us.push((time_ms * 1000.0).round() as u64);
        stats.hits.push(results.len() as u64);
        stats.extra.push(body["total_hits"].as_u64().unwrap_or(0));
        Ok(())
    })
}

/// Checks a `search` reply: answered by `expected_tier`; records its time and hits.
fn search_check(stats: SharedStats, expected_tier: String) -> ReplyCheck {
    Arc::new(move |payload: &[u8]| {
        let body: serde_json::Value =
            serde_json::from_slice(payload).map_err(|err| err.to_string())?;
        if let Some(error) = body.get("error") {
            return Err(error.to_string());
        }
        let tier = body["tier"].as_str().unwrap_or("(none)").to_owned();
        let results = body["results"].as_array().map_or(&[][..], Vec::as_slice);
        let mut stats = lock_stats(&stats);
        *stats.tiers.entry(tier.clone()).or_default() += 1;
        stats
            .server_us
            .push(body["took_ms"].as_u64().unwrap_or(0) * 1000);
        stats.hits.push(results.len() as u64);
        stats.extra.push(
            results
                .iter()
                .map(|result| result["evidence"].as_array().map_or(0, Vec::len) as u64)
                .sum(),
        );
        if tier == expected_tier {
            Ok(())
        } else {
            Err(format!(
                "answered by tier {tier}, fallback_reason {}",
                body["fallback_reason"]
            ))
        }
    })
}

async fn teleport(args: &TeleportArgs) -> anyhow::Result<()> {
    let events = generate(&YearSpec {
        seed: args.seed,
        events: args.year_events,
    });
    let questions = year_questions(&events, args.questions);
    drop(events);
    let projects: std::collections::BTreeSet<&str> = questions.iter().map(|q| q.project).collect();
    println!(
        "{} questions ({} per project, {} projects in turn) from the year (seed {}, {} events); top {}",
        questions.len(),
        args.questions,
        projects.len(),
        args.seed,
        args.year_events,
        args.limit,
    );
    for question in questions.iter().take(args.show_questions) {
        println!("  [{}] {}", question.project, question.text);
    }
    let client = async_nats::connect(&args.url).await.context("connect")?;
    let teleport_bodies: Calls = questions
        .iter()
        .map(|q| {
            (
                format!("memory.query.{}.teleport.search", q.project),
                Bytes::from(
                    serde_json::to_vec(&serde_json::json!({"query": q.text, "limit": args.limit}))
                        .unwrap_or_default(),
                ),
            )
        })
        .collect();
    let search_bodies: Calls = questions
        .iter()
        .map(|q| {
            (
                format!("memory.query.{}.search", q.project),
                Bytes::from(
                    serde_json::to_vec(
                        &serde_json::json!({"query": q.text, "limit": args.limit, "now": YEAR_NOW}),
                    )
                    .unwrap_or_default(),
                ),
            )
        })
        .collect();
    let search_label = format!("search ({} tier)", args.expect_tier);
    let mut kinds: Vec<(&str, &Calls, bool)> = vec![("teleport.search", &teleport_bodies, true)];
    if !args.skip_search {
        kinds.push((&search_label, &search_bodies, false));
    }
    let mut failed = 0usize;
    for (label, bodies, is_teleport) in &kinds {
        // Warm-up: every question once, one at a time, unmeasured.
        let reply_bytes = {
            let (subject, body) = &bodies[0];
            client
                .request(subject.clone(), body.clone())
                .await
                .context("warm-up request")?
                .payload
                .len()
        };
        let warm_stats = SharedStats::default();
        let check = if *is_teleport {
            teleport_check(warm_stats.clone())
        } else {
            search_check(warm_stats.clone(), args.expect_tier.clone())
        };
        let warm_up = closed_loop(&client, Arc::new((*bodies).clone()), 1, check).await?;
        if let Some(first) = warm_up.failures.first() {
            println!(
                "{label} warm-up: {} of {} calls failed, first: {first}",
                warm_up.failures.len(),
                bodies.len(),
            );
            failed += warm_up.failures.len();
        }
        for &concurrency in &args.concurrency {
            let calls: Vec<(String, Bytes)> = (0..args.requests)
                .map(|i| bodies[i % bodies.len()].clone())
                .collect();
            let stats = SharedStats::default();
            let check = if *is_teleport {
                teleport_check(stats.clone())
            } else {
                search_check(stats.clone(), args.expect_tier.clone())
            };
            let mut run = closed_loop(&client, Arc::new(calls), concurrency, check).await?;
            let line = latency_line(&format!("{label} c={concurrency}"), &mut run.latencies_us);
            println!(
                "{line}  {:>7.0} req/s  errors {}  (first reply {reply_bytes} bytes)",
                args.requests as f64 / run.elapsed_secs,
                run.failures.len(),
            );
            let mut stats = std::mem::take(&mut *lock_stats(&stats));
            stats.server_us.sort_unstable();
            let mean =
                |values: &[u64]| values.iter().sum::<u64>() as f64 / values.len().max(1) as f64;
            let empty = stats.hits.iter().filter(|&&hits| hits == 0).count();
            if *is_teleport {
                println!(
                    "  server search_time_ms p50 {:.3} ms p99 {:.3} ms max {:.3} ms; hits per call {:.1} ({empty} calls without hits); total_hits mean {:.0}",
                    ms_at(&stats.server_us, 50.0),
                    ms_at(&stats.server_us, 99.0),
                    stats.server_us.last().copied().unwrap_or(0) as f64 / 1000.0,
                    mean(&stats.hits),
                    mean(&stats.extra),
                );
            } else {
                let tiers: Vec<String> = stats
                    .tiers
                    .iter()
                    .map(|(tier, n)| format!("{tier} {n}"))
                    .collect();
                println!(
                    "  server took_ms p50 {:.0} ms p99 {:.0} ms max {:.0} ms; tiers: {}; results per call {:.1} ({empty} calls without results); evidence events per call {:.1}",
                    ms_at(&stats.server_us, 50.0),
                    ms_at(&stats.server_us, 99.0),
                    stats.server_us.last().copied().unwrap_or(0) as f64 / 1000.0,
                    tiers.join(", "),
                    mean(&stats.hits),
                    mean(&stats.extra),
                );
            }
            if let Some(first) = run.failures.first() {
                println!("  error ({} in all), first: {first}", run.failures.len());
            }
            failed += run.failures.len();
        }
    }
    if failed > 0 {
        bail!("{failed} calls failed");
    }
    Ok(())
}

/// Whether `teleport.search` for `token` (events only) returns `event_id`.
async fn token_visible(
    client: &async_nats::Client,
    subject: &str,
    token: &str,
    event_id: &str,
) -> anyhow::Result<bool> {
    let body = Bytes::from(serde_json::to_vec(
        &serde_json::json!({"query": token, "doc_type": "event", "limit": 5}),
    )?);
    let reply = client
        .request(subject.to_string(), body)
        .await
        .context("teleport.search request")?;
    let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
    let Some(results) = body["results"].as_array() else {
        bail!("unexpected teleport.search reply: {body}");
    };
    Ok(results.iter().any(|hit| hit["doc_id"] == event_id))
}

async fn searchable(
    url: &str,
    project: &str,
    rate: u64,
    total: u64,
    poll: Duration,
    timeout: Duration,
) -> anyhow::Result<()> {
    let client = async_nats::connect(url).await.context("connect")?;
    let ingest_subject = format!("memory.ingest.{project}");
    let search_subject = format!("memory.query.{project}.teleport.search");
    let run_id = memory_types::now_ms();
    let session_id = format!("live-search-{run_id}");
    let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
    let mut ack_us = Vec::new();
    let mut late_starts = 0u64;
    let mut pollers = Vec::new();
    let started = tokio::time::Instant::now();
    for n in 0..total {
        let due = started + interval * n as u32;
        if tokio::time::Instant::now() > due + interval {
            late_starts += 1;
        }
        tokio::time::sleep_until(due).await;
        let token = format!("zq{n}x{run_id}");
        let event_id = format!("srch-{run_id}-{n}");
        let mut event = sample_event(project, 0, n as usize, memory_types::now_ms());
        event["event_id"] = serde_json::Value::String(event_id.clone());
        event["session_id"] = serde_json::Value::String(session_id.clone());
        event["kind"] = serde_json::Value::String(
            if n % 2 == 0 {
                "user_message"
            } else {
                "assistant_message"
            }
            .into(),
        );
        let text = format!("{} {token}", event["text"].as_str().unwrap_or_default());
        event["text"] = serde_json::Value::String(text);
        let payload = Bytes::from(serde_json::to_vec(&event)?);
        let sent = Instant::now();
        let reply = client
            .request(ingest_subject.clone(), payload)
            .await
            .context("ingest request")?;
        let acked = Instant::now();
        let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
        if body["accepted"].as_u64() != Some(1) {
            bail!("event {n} not accepted: {body}");
        }
        ack_us.push(acked.duration_since(sent).as_micros() as u64);
        // Polled on its own task, so the next event leaves on time.
        let (client, subject) = (client.clone(), search_subject.clone());
        pollers.push(tokio::spawn(async move {
            let mut polls = 0u64;
            loop {
                polls += 1;
                if token_visible(&client, &subject, &token, &event_id).await? {
                    return anyhow::Ok((Some(acked.elapsed().as_micros() as u64), polls));
                }
                if acked.elapsed() > timeout {
                    return Ok((None, polls));
                }
                tokio::time::sleep(poll).await;
            }
        }));
    }
    let (mut visible_us, mut polls) = (Vec::new(), Vec::new());
    let mut timeouts = 0u64;
    for poller in pollers {
        let (visible, attempts) = poller.await??;
        polls.push(attempts);
        match visible {
            Some(us) => visible_us.push(us),
            None => timeouts += 1,
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "searchable: {total} events into live session {session_id} of {project} at {rate}/s offered ({:.1}/s achieved, {late_starts} sent late), teleport.search (doc_type event) for each event's token every {} ms, mean {:.1} polls per event, {timeouts} timeouts",
        total as f64 / elapsed,
        poll.as_millis(),
        polls.iter().sum::<u64>() as f64 / polls.len().max(1) as f64,
    );
    println!("{}", latency_line("ack (durable commit)", &mut ack_us));
    println!(
        "{}",
        latency_line("searchable (BM25 hit) - ack", &mut visible_us)
    );
    if timeouts > 0 {
        bail!(
            "{timeouts} events not searchable within {} s",
            timeout.as_secs()
        );
    }
    Ok(())
}

/// What the probes saw while a rebuild ran.
#[derive(Default)]
struct RebuildProbes {
    /// `(seconds since the request, phase)` at each change of `bm25_rebuild.phase`.
    phases: Vec<(f64, String)>,
    /// `teleport.search` latencies, microseconds.
    search_us: Vec<u64>,
    /// Failed probe searches, with the first reason.
    search_errors: Vec<String>,
}

/// Probes `teleport.status` and `teleport.search` every `every` until `stop` is set.
async fn probe_rebuild(
    client: async_nats::Client,
    project: String,
    every: Duration,
    started: Instant,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> RebuildProbes {
    let status_subject = format!("memory.query.{project}.teleport.status");
    let search_subject = format!("memory.query.{project}.teleport.search");
    let question = Bytes::from_static(br#"{"query": "jwt refresh token rotation", "limit": 10}"#);
    let mut probes = RebuildProbes::default();
    while !stop.load(Ordering::Relaxed) {
        if let Ok(reply) = client
            .request(status_subject.clone(), Bytes::from_static(b"{}"))
            .await
            && let Ok(body) = serde_json::from_slice::<serde_json::Value>(&reply.payload)
        {
            let phase = body["bm25_rebuild"]["phase"]
                .as_str()
                .unwrap_or("(none)")
                .to_owned();
            if probes.phases.last().is_none_or(|(_, last)| *last != phase) {
                probes.phases.push((started.elapsed().as_secs_f64(), phase));
            }
        }
        let sent = Instant::now();
        match client
            .request(search_subject.clone(), question.clone())
            .await
        {
            Ok(reply) => match teleport_check(SharedStats::default())(&reply.payload) {
                Ok(()) => probes.search_us.push(sent.elapsed().as_micros() as u64),
                Err(reason) => probes.search_errors.push(reason),
            },
            Err(err) => probes.search_errors.push(err.to_string()),
        }
        tokio::time::sleep(every).await;
    }
    probes
}

async fn admin_rebuild(
    url: &str,
    index_type: &str,
    timeout: Duration,
    probe_every: Duration,
    probe_project: &str,
) -> anyhow::Result<f64> {
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(timeout))
        .connect(url)
        .await
        .context("connect")?;
    let body = Bytes::from(serde_json::to_vec(
        &serde_json::json!({ "index_type": index_type }),
    )?);
    let started = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probes = (!probe_every.is_zero()).then(|| {
        tokio::spawn(probe_rebuild(
            client.clone(),
            probe_project.to_owned(),
            probe_every,
            started,
            stop.clone(),
        ))
    });
    let reply = client
        .request("memory.admin.rebuild", body)
        .await
        .context("memory.admin.rebuild request")?;
    let wall = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let body: serde_json::Value = serde_json::from_slice(&reply.payload)?;
    if let Some(error) = body.get("error") {
        bail!("rebuild failed: {error}");
    }
    let docs_per_sec = body["docs_per_sec"].as_f64().unwrap_or(0.0);
    println!(
        "admin rebuild {index_type}: {} docs in {} ms = {docs_per_sec:.0} docs/s (the daemon's report), cursor {}; request to reply {wall:.2} s; reply {body}",
        body["num_docs"], body["duration_ms"], body["cursor"],
    );
    if let Some(probes) = probes {
        let mut probes = probes.await?;
        let phases: Vec<String> = probes
            .phases
            .iter()
            .map(|(at, phase)| format!("{phase} at {at:.2} s"))
            .collect();
        println!(
            "  phases seen by teleport.status every {} ms: {}; reply at {wall:.2} s",
            probe_every.as_millis(),
            phases.join(", "),
        );
        println!(
            "  {}  errors {}",
            latency_line("teleport.search during it", &mut probes.search_us),
            probes.search_errors.len(),
        );
        if let Some(first) = probes.search_errors.first() {
            println!("  first error: {first}");
        }
    }
    Ok(docs_per_sec)
}
