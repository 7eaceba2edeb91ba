//! The fixed query mix of the time-table-of-contents benches, shared by the criterion
//! bench (`toc_query`, in-process) and `loadgen query` (over NATS), so both measure the
//! same calls with the same bodies against the same [`crate::year`] data.

use serde_json::{Value, json};

use crate::percentile;
use crate::year::YEAR_NOW;

/// One kind of call and the bodies it cycles through.
#[derive(Clone, Debug)]
pub struct QueryKind {
    /// Short label for reports.
    pub label: &'static str,
    /// Identifier for criterion (no spaces).
    pub id: &'static str,
    /// Method as in `memory.query.<project>.<method>`.
    pub method: &'static str,
    /// Request bodies; call `i` sends `bodies[i % len]`.
    pub bodies: Vec<Value>,
}

/// Topical searches: words the generated sessions use, in the forms agents type them.
pub const TOPICAL: &[&str] = &[
    "jwt refresh token rotation",
    "postgres migration index concurrently",
    "flaky integration test timeout",
    "ci cache docker layer",
    "deploy rollback canary",
    "p99 latency regression",
    "connection pool exhausted",
    "redis cache ttl stale prices",
    "kafka consumer lag partition",
    "memory leak heap profile",
    "upgrade dependency security advisory",
    "rate limit 429 retry-after",
    "oauth callback redirect_uri_mismatch",
    "error enum refactor into_response",
    "request id tracing logs",
    "readiness probe startup",
];

/// Questions with a time hint relative to [`YEAR_NOW`] (2026-11-01).
pub const HINTED: &[&str] = &[
    "what did we decide about jwt refresh last week",
    "postgres migration in March",
    "ci cache problems last month",
    "deploy rollback in January",
    "latency regression on 2026-05-12",
    "kafka consumer lag in September",
    "flaky test two weeks ago",
    "redis cache eviction in August",
];

/// Weeks of 2026 (outside the holidays) whose days `search_children` ranks.
const WEEKS: &[u32] = &[3, 6, 9, 12, 15, 18, 21, 24, 27, 36, 39, 42];

/// Light calls any project that `loadgen ingest` filled can answer (the root, one
/// session's events, an agent search): what a query costs end to end, for comparing
/// routes (cluster mode's account mapping against single mode) rather than the TOC.
#[must_use]
pub fn light_kinds(project: &str) -> Vec<QueryKind> {
    vec![
        QueryKind {
            label: "toc.root",
            id: "light/toc_root",
            method: "toc.root",
            bodies: vec![json!({})],
        },
        QueryKind {
            label: "events.get session",
            id: "light/events_get",
            method: "events.get",
            bodies: (0..8)
                .map(|session| json!({"session_id": format!("{project}-session-{session}"), "limit": 20}))
                .collect(),
        },
        QueryKind {
            label: "search",
            id: "light/search",
            method: "search",
            bodies: TOPICAL.iter().map(|q| json!({"query": q})).collect(),
        },
    ]
}

/// The kinds, in report order.
#[must_use]
pub fn query_kinds() -> Vec<QueryKind> {
    let topical = || TOPICAL.iter().copied();
    vec![
        QueryKind {
            label: "search_children month<year",
            id: "search_children/month_of_year",
            method: "toc.search_children",
            bodies: topical()
                .map(|q| json!({"parent_id": "toc:year:2026", "query": q}))
                .collect(),
        },
        QueryKind {
            label: "search_children day<week",
            id: "search_children/day_of_week",
            method: "toc.search_children",
            bodies: topical()
                .zip(WEEKS.iter().cycle())
                .map(|(q, w)| json!({"parent_id": format!("toc:week:2026-W{w:02}"), "query": q}))
                .collect(),
        },
        QueryKind {
            label: "search_children segment(all)",
            id: "search_children/segment_level",
            method: "toc.search_children",
            bodies: topical()
                .map(|q| json!({"child_level": "segment", "query": q}))
                .collect(),
        },
        QueryKind {
            label: "navigate no hint",
            id: "navigate/no_hint",
            method: "navigate",
            bodies: topical()
                .map(|q| json!({"query": q, "now": YEAR_NOW}))
                .collect(),
        },
        QueryKind {
            label: "navigate time hint",
            id: "navigate/time_hint",
            method: "navigate",
            bodies: HINTED
                .iter()
                .map(|q| json!({"query": q, "now": YEAR_NOW}))
                .collect(),
        },
        QueryKind {
            label: "search toc no hint",
            id: "search_toc/no_hint",
            method: "search",
            bodies: topical()
                .map(|q| json!({"query": q, "mode": "toc", "now": YEAR_NOW}))
                .collect(),
        },
        QueryKind {
            label: "search toc time hint",
            id: "search_toc/time_hint",
            method: "search",
            bodies: HINTED
                .iter()
                .map(|q| json!({"query": q, "mode": "toc", "now": YEAR_NOW}))
                .collect(),
        },
    ]
}

/// `label: n calls, mean, p50, p99, max` of latencies in microseconds (sorted here).
#[must_use]
pub fn latency_line(label: &str, latencies_us: &mut [u64]) -> String {
    latencies_us.sort_unstable();
    let n = latencies_us.len();
    let mean = if n == 0 {
        0.0
    } else {
        latencies_us.iter().sum::<u64>() as f64 / n as f64
    };
    let ms = |us: u64| us as f64 / 1000.0;
    format!(
        "{label:<30} n={n:<5} mean {:>8.3} ms  p50 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms",
        mean / 1000.0,
        ms(percentile(latencies_us, 50.0)),
        ms(percentile(latencies_us, 99.0)),
        ms(latencies_us.last().copied().unwrap_or(0)),
    )
}
