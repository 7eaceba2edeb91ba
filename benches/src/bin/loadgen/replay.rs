//! `replay`: a recorded conversation file through the daemon at its own pace.
//!
//! Why: how many batches (and so LLM calls) continuous indexing makes per 1 000 events
//! depends on how events arrive — a turn's tool call and result seconds apart, a
//! question minutes after the last answer — not on a steady rate. This sends each event
//! of a JSONL file (`sample/conversations.jsonl`'s format) as one durable ingest request
//! after the gap its timestamps had, divided by `--speed`; a run scales the daemon's
//! window and the model's latency by the same factor, so batches hold what they would
//! hold in real time. Gaps between sessions are cut to `--session-gap-secs`.

use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use serde_json::Value;

/// Replays `file` to `memory.ingest.<project>` on `url` at `speed` times real time.
pub(super) async fn replay(
    url: &str,
    file: &std::path::Path,
    speed: f64,
    session_gap: Duration,
) -> anyhow::Result<()> {
    if speed.is_nan() || speed <= 0.0 {
        bail!("--speed must be positive, not {speed}");
    }
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut events: Vec<Value> = Vec::new();
    for (number, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        events.push(
            serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a JSON event", file.display(), number + 1))?,
        );
    }
    let client = async_nats::connect(url).await.context("connect")?;
    let started = std::time::Instant::now();
    let (mut previous_ms, mut previous_session): (Option<i64>, Option<String>) = (None, None);
    let mut waited = Duration::ZERO;
    for (index, event) in events.iter().enumerate() {
        let at_ms = timestamp_ms(event).with_context(|| format!("event {index}: no timestamp"))?;
        let session = event["session_id"].as_str().unwrap_or_default().to_owned();
        if let Some(before) = previous_ms {
            let mut gap = Duration::from_millis(u64::try_from(at_ms - before).unwrap_or(0));
            if previous_session.as_deref() != Some(session.as_str()) {
                gap = gap.min(session_gap);
            }
            let pause = gap.div_f64(speed);
            waited += pause;
            tokio::time::sleep(pause).await;
        }
        previous_ms = Some(at_ms);
        previous_session = Some(session);
        let project = event["project_id"].as_str().unwrap_or("replay");
        let reply = tokio::time::timeout(
            Duration::from_secs(30),
            client.request(
                format!("memory.ingest.{project}"),
                Bytes::from(serde_json::to_vec(event)?),
            ),
        )
        .await
        .with_context(|| format!("event {index}: ingest timed out"))??;
        let body: Value = serde_json::from_slice(&reply.payload)?;
        if body.get("accepted").and_then(Value::as_u64).unwrap_or(0)
            + body.get("duplicates").and_then(Value::as_u64).unwrap_or(0)
            == 0
        {
            bail!("event {index} not accepted: {body}");
        }
    }
    println!(
        "replay: {} events in {:.1} s at {speed}x ({:.1} s of recorded time)",
        events.len(),
        started.elapsed().as_secs_f64(),
        waited.as_secs_f64() * speed
    );
    Ok(())
}

/// The event's time, read by the daemon's own event parser.
fn timestamp_ms(event: &Value) -> Option<i64> {
    let project = event["project_id"].as_str().unwrap_or("replay");
    let parsed = memory_types::parse_event(
        event,
        project,
        &memory_types::ValidationLimits::default(),
        memory_types::now_ms(),
    )
    .ok()?;
    i64::try_from(parsed.timestamp_ms).ok()
}
