//! `teleport search` and `teleport status`: the BM25 index as the PRD's CLI shows it
//! (doc id, type and score per hit), in embedded mode or over NATS.

use std::path::Path;
use std::process::ExitCode;

use memory_config::Config;
use memory_query::api::{TeleportSearchResponse, TeleportStatusResponse, VectorSearchResponse};
use serde_json::json;

use crate::cli::TeleportCommand;
use crate::embedded::init_tool_tracing;
use crate::query_cli::{QueryClient, call_or_print, decode, one_line, strip_nulls};
use crate::say;

/// `teleport …`.
pub async fn run(
    config: &Config,
    data_dir: &Path,
    command: TeleportCommand,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    match command {
        TeleportCommand::Search {
            query,
            doc_type,
            level,
            limit,
            from,
            to,
            target,
        } => {
            let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
            let mut body = json!({"query": query, "doc_type": doc_type, "level": level,
                                  "limit": limit, "from": from, "to": to});
            strip_nulls(&mut body);
            let value = match call_or_print(&client, &target, "teleport.search", &body).await? {
                Ok(value) => value,
                Err(code) => return Ok(code),
            };
            let response: TeleportSearchResponse = decode(value)?;
            say!(
                "{} of {} hits · {:.2} ms in the index",
                response.results.len(),
                response.total_hits,
                response.search_time_ms
            );
            for hit in &response.results {
                say!(
                    "{:>3}. {:>7.3}  {:<8} {}",
                    hit.rank,
                    hit.score,
                    hit.doc_type,
                    hit.doc_id
                );
                say!("               {}", one_line(&hit.text, 110));
            }
            Ok(ExitCode::SUCCESS)
        }
        TeleportCommand::Vector {
            query,
            doc_type,
            limit,
            target,
        } => {
            let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
            let mut body = json!({"query": query, "doc_type": doc_type, "limit": limit});
            strip_nulls(&mut body);
            let value = match call_or_print(&client, &target, "vector.search", &body).await? {
                Ok(value) => value,
                Err(code) => return Ok(code),
            };
            let response: VectorSearchResponse = decode(value)?;
            say!(
                "{} hits · {:.1} ms to embed the question, {:.2} ms in the index",
                response.results.len(),
                response.embed_time_ms,
                response.search_time_ms
            );
            for hit in &response.results {
                say!(
                    "{:>3}. {:>6.3}  {:<8} {}",
                    hit.rank,
                    hit.score,
                    hit.doc_type,
                    hit.doc_id
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        TeleportCommand::Status { target } => {
            let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
            let value = match call_or_print(&client, &target, "teleport.status", &json!({})).await?
            {
                Ok(value) => value,
                Err(code) => return Ok(code),
            };
            let status: TeleportStatusResponse = decode(value)?;
            print_status(&status);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_status(status: &TeleportStatusResponse) {
    say!("{}", status.message);
    if !status.bm25_enabled {
        return;
    }
    say!(
        "  bm25      enabled, {}{}",
        if status.bm25_healthy {
            "healthy"
        } else {
            "UNHEALTHY"
        },
        if status.bm25_stale { ", stale" } else { "" }
    );
    let counts: Vec<String> = status
        .bm25_doc_counts
        .iter()
        .map(|(doc_type, count)| format!("{doc_type} {count}"))
        .collect();
    say!(
        "  documents {} ({})",
        status.bm25_doc_count,
        counts.join(", ")
    );
    say!(
        "  size      {:.1} MiB",
        status.bm25_index_size_bytes as f64 / (1024.0 * 1024.0)
    );
    say!(
        "  cursor    {} of {} log entries",
        status.bm25_cursor,
        status.bm25_log_head
    );
    say!(
        "  commit    {}",
        status
            .bm25_last_commit_ms
            .map_or_else(|| "never".to_owned(), memory_types::format_timestamp_ms)
    );
    match status.bm25_last_prune_ms {
        Some(at_ms) => {
            let pruned: Vec<String> = status
                .bm25_pruned
                .iter()
                .map(|(kind, count)| format!("{kind} {count}"))
                .collect();
            say!(
                "  prune     {} ({})",
                memory_types::format_timestamp_ms(at_ms),
                pruned.join(", ")
            );
        }
        None => say!("  prune     never"),
    }
    if let Some(rebuild) = &status.bm25_rebuild {
        say!(
            "  rebuild   {} ({} documents so far)",
            rebuild.phase,
            rebuild.num_docs
        );
    }
    say!(
        "  vector    {}",
        if status.vector_enabled {
            "enabled"
        } else {
            "not available in this version"
        }
    );
}
