//! The closed-loop driver every request/reply scenario shares: N requests, C in flight, each round trip timed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use tokio::sync::Mutex;

/// Checks one reply body; `Err` counts the request as failed with that reason.
pub(super) type ReplyCheck = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// What a closed-loop run measured.
pub(super) struct ClosedLoop {
    pub(super) latencies_us: Vec<u64>,
    pub(super) failures: Vec<String>,
    pub(super) elapsed_secs: f64,
}

/// Sends every `(subject, payload)` once, `concurrency` requests in flight, and times
/// each round trip.
pub(super) async fn closed_loop(
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
