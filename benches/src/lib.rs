//! Shared pieces of the benches and the load generator: realistic synthetic events,
//! [`year`] (a deterministic year of coding sessions), [`toc_mix`] (the query mix
//! of the time-table-of-contents benches) and [`vector_corpus`] (cached real embeddings
//! of the year's sentences, for the vector tier's benches).

#![forbid(unsafe_code)]

pub mod questions;
pub mod toc_mix;
pub mod vector_corpus;
pub mod year;

use serde_json::{Value, json};

const SNIPPETS: &[&str] = &[
    "Let's keep the access token at 15 minutes and rotate the refresh token on every use.",
    "bash: cargo test -p ingest -- --nocapture",
    "error[E0502]: cannot borrow `self.buffer` as mutable because it is also borrowed as immutable",
    "The flaky test was a race between the mock clock and the retry timer in src/retry.rs.",
    "We decided to switch the record format from bincode to postcard; it is maintained and stable.",
    "Consumer lag on partition 3 grew to 48k messages after the deploy at 14:05.",
    "Can you check why getUserToken returns undefined when the session cookie is missing?",
    "Migration 0042_add_refresh_tokens.sql adds a revoked_at column and an index on user_id.",
];

/// A realistic event as producers send it: `n` makes its id and text vary.
#[must_use]
pub fn sample_event(project: &str, session: usize, n: usize, timestamp_ms: u64) -> Value {
    let kinds = [
        "user_message",
        "assistant_message",
        "tool_call",
        "tool_result",
    ];
    let text = format!("{} (turn {n})", SNIPPETS[n % SNIPPETS.len()]);
    json!({
        "event_id": format!("{project}-{session}-{n}"),
        "session_id": format!("{project}-session-{session}"),
        "project_id": project,
        "agent_id": "loadgen",
        "timestamp": timestamp_ms,
        "kind": kinds[n % kinds.len()],
        "text": text,
        "metadata": {"cwd": format!("/home/dev/{project}"), "turn": n.to_string()},
    })
}

/// Percentile of sorted durations in microseconds.
#[must_use]
pub fn percentile(sorted_us: &[u64], p: f64) -> u64 {
    if sorted_us.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * (sorted_us.len() - 1) as f64).round() as usize;
    sorted_us[rank.min(sorted_us.len() - 1)]
}

/// Bytes of every file under `path`.
#[must_use]
pub fn disk_size(path: &std::path::Path) -> u64 {
    let Ok(metadata) = std::fs::metadata(path) else {
        return 0;
    };
    if metadata.is_file() {
        return metadata.len();
    }
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| disk_size(&entry.path()))
                .sum()
        })
        .unwrap_or(0)
}
