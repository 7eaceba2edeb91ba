//! `overload`: `search` at a multiple of the daemon's measured capacity. First the
//! capacity: `--capacity-concurrency` clients asking back to back for `--seconds`
//! (answered per second). Then an open loop offering `--factor` times that rate for
//! `--seconds`: each request is sent on schedule whatever the earlier ones are doing,
//! as independent agents would, and classified as answered (admitted), refused as
//! `unavailable` (shed), another error, or no reply within 10 s; the latency of each
//! class is reported apart. A daemon that sheds load answers what it admits in bounded
//! time and refuses the rest at once; one that queues without bound answers ever later.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use memory_benches::percentile;
use memory_benches::year::{YEAR_NOW, YearSpec, generate};

use crate::cli::OverloadArgs;
use crate::teleport::year_questions;

/// How a request ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Answered,
    Shed,
    Failed,
    NoReply,
}

fn classify(reply: &[u8]) -> Outcome {
    match serde_json::from_slice::<serde_json::Value>(reply) {
        Ok(value) => match value["error"]["code"].as_str() {
            None => Outcome::Answered,
            Some("unavailable") => Outcome::Shed,
            Some(_) => Outcome::Failed,
        },
        Err(_) => Outcome::Failed,
    }
}

async fn ask(client: &async_nats::Client, (subject, body): &(String, Bytes)) -> (Outcome, u64) {
    let sent = Instant::now();
    let outcome = match tokio::time::timeout(
        Duration::from_secs(10),
        client.request(subject.clone(), body.clone()),
    )
    .await
    {
        Ok(Ok(reply)) => classify(&reply.payload),
        Ok(Err(_)) => Outcome::Failed,
        Err(_) => Outcome::NoReply,
    };
    (outcome, sent.elapsed().as_micros() as u64)
}

fn line(label: &str, latencies: &mut [u64], total: usize) -> String {
    latencies.sort_unstable();
    let ms = |p: f64| percentile(latencies, p) as f64 / 1000.0;
    format!(
        "{label} {} ({:.1} %), p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        100.0 * latencies.len() as f64 / total.max(1) as f64,
        ms(50.0),
        ms(99.0),
        ms(100.0)
    )
}

pub(super) async fn overload(args: &OverloadArgs) -> anyhow::Result<()> {
    let events = generate(&YearSpec {
        seed: args.seed,
        events: args.year_events,
    });
    let questions = year_questions(&events, args.questions);
    drop(events);
    let calls: Arc<Vec<(String, Bytes)>> = Arc::new(
        questions
            .iter()
            .map(|q| {
                (
                    format!("memory.query.{}.search", q.project),
                    Bytes::from(
                        serde_json::to_vec(
                            &serde_json::json!({"query": q.text, "limit": 10, "now": YEAR_NOW}),
                        )
                        .unwrap_or_default(),
                    ),
                )
            })
            .collect(),
    );
    // The client's own request timeout would race ours and count as an error.
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(Duration::from_secs(30)))
        .connect(&args.url)
        .await
        .context("connect")?;
    // Warm-up, unmeasured: every question once.
    for call in calls.iter() {
        ask(&client, call).await;
    }

    // The capacity: clients asking back to back.
    let window = Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..args.capacity_concurrency.max(1) {
        let (client, calls) = (client.clone(), calls.clone());
        workers.push(tokio::spawn(async move {
            let (mut answered, mut latencies, mut index) = (0usize, Vec::new(), worker);
            while started.elapsed() < window {
                let (outcome, us) = ask(&client, &calls[index % calls.len()]).await;
                index += 7;
                if outcome == Outcome::Answered {
                    answered += 1;
                    latencies.push(us);
                }
            }
            (answered, latencies)
        }));
    }
    let (mut answered, mut latencies) = (0usize, Vec::new());
    for worker in workers {
        let (count, mut us) = worker.await?;
        answered += count;
        latencies.append(&mut us);
    }
    let capacity = answered as f64 / started.elapsed().as_secs_f64();
    println!(
        "capacity: {} clients back to back for {} s: {}; {capacity:.0} answered/s",
        args.capacity_concurrency,
        args.seconds,
        line("answered", &mut latencies, answered),
    );

    // The open loop at `factor` times that.
    let rate = (capacity * args.factor).max(1.0);
    let total = (rate * window.as_secs_f64()) as usize;
    let interval = Duration::from_secs_f64(1.0 / rate);
    let started = Instant::now();
    let mut pending = tokio::task::JoinSet::new();
    for n in 0..total {
        let due = started + interval.mul_f64(n as f64);
        tokio::time::sleep_until(due.into()).await;
        let (client, calls) = (client.clone(), calls.clone());
        pending.spawn(async move { ask(&client, &calls[(n * 7) % calls.len()]).await });
    }
    let offered_secs = started.elapsed().as_secs_f64();
    let mut by_outcome: [Vec<u64>; 4] = Default::default();
    while let Some(done) = pending.join_next().await {
        let (outcome, us) = done?;
        by_outcome[outcome as usize].push(us);
    }
    let [mut ok, mut shed, mut failed, mut silent] = by_outcome;
    println!(
        "offered {:.1}x capacity = {rate:.0} requests/s for {offered_secs:.1} s ({total} requests): {}; {}; {}; {}",
        args.factor,
        line("admitted", &mut ok, total),
        line("shed (unavailable)", &mut shed, total),
        line("other errors", &mut failed, total),
        line("no reply in 10 s", &mut silent, total),
    );
    println!(
        "answered during the open loop: {:.0}/s",
        ok.len() as f64 / offered_secs
    );
    Ok(())
}
