//! `admin-rebuild`: a rebuild's report, with `teleport.status` and `teleport.search` probed while it runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use memory_benches::toc_mix::latency_line;

use crate::teleport::{SharedStats, teleport_check};

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

pub(super) async fn admin_rebuild(
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
