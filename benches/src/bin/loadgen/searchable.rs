//! `searchable`: ingest-to-searchable delay through `teleport.search`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use memory_benches::sample_event;
use memory_benches::toc_mix::latency_line;

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

pub(super) async fn searchable(
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
