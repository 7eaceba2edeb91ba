//! The Grafana dashboard (`deploy/grafana-dashboard.json`) against the metrics the code
//! registers and the daemon exports: every metric a panel queries exists, every
//! metric family has a panel, and what a real daemon exports after ingest and search
//! is all known — so a renamed metric or a new one without a panel fails here, not on
//! an operator's screen.

use std::collections::BTreeSet;
use std::path::Path;

use memory_e2e_tests::{NatsServer, http_get, repo_root, request_json, serve_daemon};
use regex::Regex;
use serde_json::{Value, json};

/// The metric families the code registers: the names passed to the registration
/// helpers of `memory-metrics` (and the build info) in the sources of `crates/` and
/// `actors/`, test modules left out.
fn registered() -> anyhow::Result<BTreeSet<String>> {
    let call = Regex::new(
        r#"\b(?:counter_vec|int_counter|int_counter_vec|int_gauge|int_gauge_vec|gauge|gauge_vec|histogram|histogram_vec)\s*\(\s*"([a-z_][a-z0-9_]*)""#,
    )?;
    let mut names = BTreeSet::new();
    for root in ["crates", "actors"] {
        visit(&repo_root().join(root), &mut |path| {
            let name = path.to_string_lossy();
            if !name.ends_with(".rs") || name.ends_with("_tests.rs") || name.contains("/tests/") {
                return Ok(());
            }
            let text = std::fs::read_to_string(path)?;
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            names.extend(call.captures_iter(code).map(|found| found[1].to_owned()));
            Ok(())
        })?;
    }
    names.insert("memory_build_info".to_owned());
    Ok(names)
}

fn visit(dir: &Path, each: &mut dyn FnMut(&Path) -> anyhow::Result<()>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            visit(&path, each)?;
        } else {
            each(&path)?;
        }
    }
    Ok(())
}

/// The family a sample's name belongs to (a histogram's `_bucket`, `_sum`, `_count`).
fn family<'a>(name: &'a str, known: &BTreeSet<String>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && known.contains(base)
        {
            return base;
        }
    }
    name
}

/// Every metric the dashboard's panels query, with the panel's title.
fn queried() -> anyhow::Result<Vec<(String, String)>> {
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(
        repo_root().join("deploy/grafana-dashboard.json"),
    )?)?;
    let selector = Regex::new(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")?;
    let mut found = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            for name in selector.captures_iter(expr) {
                found.push((name[1].to_owned(), title.clone()));
            }
        }
    }
    Ok(found)
}

#[test]
fn every_panel_queries_a_registered_metric_and_every_metric_has_a_panel() -> anyhow::Result<()> {
    let known = registered()?;
    assert!(
        known.len() > 80,
        "the source scan found {} families",
        known.len()
    );
    let queried = queried()?;
    let unknown: Vec<&(String, String)> = queried
        .iter()
        .filter(|(name, _)| !known.contains(family(name, &known)))
        .collect();
    assert!(
        unknown.is_empty(),
        "panels query metrics nobody registers: {unknown:?}"
    );
    let shown: BTreeSet<&str> = queried
        .iter()
        .map(|(name, _)| family(name, &known))
        .collect();
    let without: Vec<&String> = known
        .iter()
        .filter(|name| !shown.contains(name.as_str()))
        .collect();
    assert!(
        without.is_empty(),
        "metric families without a panel: {without:?}"
    );
    Ok(())
}

/// A real daemon, after ingest and a search, exports only families the scan knows (so
/// the scan misses none that a panel would need).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_daemon_exports_only_known_families() -> anyhow::Result<()> {
    let known = registered()?;
    let nats = NatsServer::start()?;
    let data = tempfile::tempdir()?;
    let (mut daemon, metrics) = serve_daemon(
        &nats.url(),
        data.path(),
        &[("AGENT_MEMORY_TELEPORT__VECTOR__ENABLED", "false")],
    )?;
    let client = nats.connect().await?;
    let events: Vec<Value> = (0..20)
        .map(|n| {
            json!({"event_id": format!("e{n}"), "session_id": "s1",
            "timestamp": 1_790_000_000_000_u64 + n * 1_000, "kind": "user_message",
            "text": format!("we decided the JWT expiry is 15 minutes, turn {n}")})
        })
        .collect();
    let reply = request_json(&client, "memory.ingest.webapp", &json!(events)).await?;
    assert_eq!(reply["accepted"].as_u64(), Some(20), "{reply}");
    let answer = request_json(
        &client,
        "memory.query.webapp.search",
        &json!({"query": "JWT expiry"}),
    )
    .await?;
    assert!(answer["results"].is_array(), "{answer}");
    let (_, text) = http_get(&format!("http://{metrics}/metrics"))?;
    daemon.terminate()?;
    let exported: BTreeSet<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_whitespace().next().map(str::to_owned))
        .collect();
    assert!(exported.len() > 20, "{text}");
    let resident: f64 = text
        .lines()
        .find_map(|line| line.strip_prefix("memory_process_resident_bytes "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_default();
    assert!(
        resident > f64::from(1 << 20),
        "the daemon's resident memory is exported: {resident}"
    );
    // `serve` returns freed memory at once ([allocator] purge_delay_ms, default 0).
    assert!(
        text.lines()
            .any(|line| line == "memory_allocator_purge_delay_ms 0"),
        "serve sets the allocator's purge delay: {text}"
    );
    let unknown: Vec<&String> = exported
        .iter()
        .filter(|name| !known.contains(family(name, &known)))
        .collect();
    assert!(
        unknown.is_empty(),
        "exported but not found by the scan (no panel): {unknown:?}"
    );
    Ok(())
}
