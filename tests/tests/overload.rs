//! Query overload against the real daemon: with room for one query running and two
//! waiting (`[nats] query_max_*`), a burst of concurrent `search` calls gets every
//! request an answer — the result, or at once a clear `unavailable` ("overloaded") for
//! what did not fit — nothing else; the refusals are counted in
//! `memory_query_shed_total`, and once the burst is over the daemon answers again.
//! (How the latency of admitted queries stays bounded at four times the capacity is
//! measured in benches/run-load.sh overload, not asserted here.)

use std::time::Duration;

use memory_e2e_tests::{NatsServer, http_get, metric_sum, serve_daemon};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_beyond_the_queue_is_refused_at_once_and_the_rest_answered() -> anyhow::Result<()> {
    let nats = NatsServer::start()?;
    let data = tempfile::tempdir()?;
    let (mut daemon, metrics) = serve_daemon(
        &nats.url(),
        data.path(),
        &[
            ("AGENT_MEMORY_NATS__QUERY_MAX_IN_FLIGHT", "1"),
            ("AGENT_MEMORY_NATS__QUERY_MAX_QUEUED", "2"),
            ("AGENT_MEMORY_NATS__QUERY_MAX_WAIT_MS", "200"),
        ],
    )?;
    let client = nats.connect().await?;
    let events: Vec<Value> = (0..200_u64)
        .map(|n| {
            json!({"event_id": format!("e{n}"), "session_id": format!("s{}", n / 20),
                   "timestamp": 1_790_000_000_000_u64 + n * 1_000, "kind": "user_message",
                   "text": format!("turn {n}: the cache keeps entries for {n} minutes in redis")})
        })
        .collect();
    let reply = client
        .request("memory.ingest.webapp", serde_json::to_vec(&events)?.into())
        .await?;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    anyhow::ensure!(reply["accepted"] == 200, "{reply}");

    let search = serde_json::to_vec(&json!({"query": "how long does the cache keep entries"}))?;
    let burst: Vec<_> = (0..200)
        .map(|_| {
            let (client, body) = (client.clone(), search.clone());
            tokio::spawn(async move {
                tokio::time::timeout(
                    Duration::from_secs(30),
                    client.request("memory.query.webapp.search", body.into()),
                )
                .await
            })
        })
        .collect();
    let (mut answered, mut shed) = (0, 0);
    for request in burst {
        let reply = request.await???;
        let reply: Value = serde_json::from_slice(&reply.payload)?;
        match reply["error"]["code"].as_str() {
            None => answered += 1,
            Some("unavailable") => {
                let message = reply["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("overloaded"), "{reply}");
                shed += 1;
            }
            Some(_) => panic!("neither an answer nor a refusal: {reply}"),
        }
    }
    assert!(answered >= 1, "{answered} answered, {shed} shed");
    assert!(shed >= 1, "{answered} answered, {shed} shed");
    let (_, text) = http_get(&format!("http://{metrics}/metrics"))?;
    assert_eq!(
        metric_sum(&text, "memory_query_shed_total", &[]),
        f64::from(shed),
        "every refusal counted"
    );
    // The burst is over: the daemon answers again, and is ready.
    let reply = client
        .request("memory.query.webapp.search", search.into())
        .await?;
    let reply: Value = serde_json::from_slice(&reply.payload)?;
    assert!(reply.get("error").is_none(), "{reply}");
    let (status, _) = http_get(&format!("http://{metrics}/readyz"))?;
    assert_eq!(status, 200);
    daemon.terminate()?;
    Ok(())
}
