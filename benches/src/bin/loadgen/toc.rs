//! The time table of contents over NATS: `query` (the query mix) and `navigable` (ingest-to-navigable delay).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use memory_benches::sample_event;
use memory_benches::toc_mix::{latency_line, light_kinds, query_kinds};

use crate::closed_loop::closed_loop;

/// A query reply is an error when it carries `{"error": …}`.
fn query_reply_ok(payload: &[u8]) -> Result<(), String> {
    let body: serde_json::Value = serde_json::from_slice(payload).map_err(|err| err.to_string())?;
    match body.get("error") {
        Some(error) => Err(error.to_string()),
        None => Ok(()),
    }
}

pub(super) async fn query(
    url: &str,
    project: &str,
    requests: usize,
    concurrency: usize,
    mix: &str,
) -> anyhow::Result<()> {
    let kinds = match mix {
        "toc" => query_kinds(),
        "light" => light_kinds(project),
        other => anyhow::bail!("unknown mix {other:?}: toc or light"),
    };
    let client = async_nats::connect(url).await.context("connect")?;
    println!(
        "{mix} query mix over NATS, project {project}: {requests} requests per kind, concurrency {concurrency}"
    );
    let mut failed = 0usize;
    for kind in kinds {
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

pub(super) async fn navigable(
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
