//! Load generator for agent-memory over NATS, bounded in count and time, loopback only.
//!
//! - `gen-file`: a JSONL file of realistic events for `memory-daemon ingest --file`;
//!   `--dataset year` writes [`memory_benches::year`]'s year of coding sessions.
//! - `raw`: request/reply round trips against an echo responder this process runs, with
//!   the same payloads and batch size as `ingest` — the transport's own ceiling.
//! - `ingest`: durable ingest through the daemon (`memory.ingest.<project>`).
//! - `latency`: open-loop offered load (events/s, one event per request) and the ack
//!   latency distribution; `--against echo|fsync-echo` measures the same load against a
//!   floor this process answers ([`floor`]) instead of the daemon.
//! - `jetstream`: publishes events to `memory.events.<project>` with publish acks.
//! - `query`: the time-table-of-contents query mix ([`memory_benches::toc_mix`]) against
//!   a daemon holding the year data set: per call kind, N requests with C in flight;
//!   p50/p99/max latency and throughput.
//! - `navigable`: ingest-to-navigable delay. Publishes events one at a time into a live
//!   session (timestamp = now) at a steady rate through `memory.ingest.<project>` and,
//!   after each durable ack, polls `toc.node` of the event's day until the day's
//!   `num_events` counts it; reports the distribution of visible − acked.
//! - `teleport`: the BM25 index through the daemon, against the year data set:
//!   `teleport.search` (raw hits) and `search` (the agent call, which must be answered
//!   by the `bm25` tier) with natural-language questions made from the year's own
//!   words, the projects in turn; per concurrency, p50/p99/max latency, throughput and
//!   the server's own time (`search_time_ms`, `took_ms`).
//! - `searchable`: ingest-to-searchable delay. Publishes events carrying a unique token
//!   into a live session at a steady rate and, after each durable ack, polls
//!   `teleport.search` for the token until the event's id is a hit; reports the
//!   distribution of visible − acked.
//! - `overload`: `search` at a multiple of the measured capacity, open loop: what the
//!   daemon admits and how fast, what it sheds (`unavailable`) and how fast.
//! - `admin-rebuild`: `memory.admin.rebuild {"index_type": "bm25"}` and its report.
//! - `replay`: a recorded JSONL conversation file through durable ingest at its own
//!   pace (its timestamps' gaps divided by `--speed`), for continuous-mode batching.

#[path = "loadgen/cli.rs"]
mod cli;
#[path = "loadgen/closed_loop.rs"]
mod closed_loop;
#[path = "loadgen/floor.rs"]
mod floor;
#[path = "loadgen/gen_file.rs"]
mod gen_file;
#[path = "loadgen/ingest.rs"]
mod ingest;
#[path = "loadgen/overload.rs"]
mod overload;
#[path = "loadgen/rebuild.rs"]
mod rebuild;
#[path = "loadgen/replay.rs"]
mod replay;
#[path = "loadgen/searchable.rs"]
mod searchable;
#[path = "loadgen/teleport.rs"]
mod teleport;
#[path = "loadgen/toc.rs"]
mod toc;

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use memory_benches::year::YearSpec;

use crate::cli::{Cli, Command, Dataset};
use crate::gen_file::{gen_file, gen_year_file};
use crate::ingest::{jetstream, latency, run_load};
use crate::overload::overload;
use crate::rebuild::admin_rebuild;
use crate::replay::replay;
use crate::searchable::searchable;
use crate::teleport::teleport;
use crate::toc::{navigable, query};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::GenFile {
            events,
            out,
            dataset: Dataset::Sample,
            ..
        } => gen_file(events, &out),
        Command::GenFile {
            events, out, seed, ..
        } => gen_year_file(&YearSpec { seed, events }, &out),
        Command::Raw(load) => {
            let client = async_nats::connect(&load.url).await.context("connect")?;
            let echo = floor::spawn_echo(
                &load.url,
                "loadgen.echo",
                Bytes::from_static(
                    br#"{"accepted":100,"duplicates":0,"rejected":[],"last_seq":1}"#,
                ),
            )
            .await?;
            run_load(
                &client,
                "loadgen.echo".into(),
                &load,
                false,
                "raw request/reply",
            )
            .await?;
            echo.abort();
            Ok(())
        }
        Command::Ingest(load) => {
            let client = async_nats::connect(&load.url).await.context("connect")?;
            let subject = format!("memory.ingest.{}", load.project);
            run_load(&client, subject, &load, true, "durable ingest").await
        }
        Command::Latency {
            url,
            rate,
            seconds,
            project,
            against,
            dir,
        } => latency(&url, rate, seconds, &project, against, dir.as_deref()).await,
        Command::Jetstream {
            url,
            events,
            project,
        } => jetstream(&url, events, &project).await,
        Command::Query {
            url,
            project,
            requests,
            concurrency,
            mix,
        } => query(&url, &project, requests, concurrency, &mix).await,
        Command::Navigable {
            url,
            project,
            rate,
            seconds,
            poll_ms,
            timeout_secs,
        } => {
            navigable(
                &url,
                &project,
                rate,
                seconds,
                Duration::from_millis(poll_ms),
                Duration::from_secs(timeout_secs),
            )
            .await
        }
        Command::Replay {
            url,
            file,
            speed,
            session_gap_secs,
        } => replay(&url, &file, speed, Duration::from_secs(session_gap_secs)).await,
        Command::Teleport(args) => teleport(&args).await,
        Command::Overload(args) => overload(&args).await,
        Command::Searchable {
            url,
            project,
            rate,
            events,
            poll_ms,
            timeout_secs,
        } => {
            searchable(
                &url,
                &project,
                rate,
                events,
                Duration::from_millis(poll_ms),
                Duration::from_secs(timeout_secs),
            )
            .await
        }
        Command::AdminRebuild {
            url,
            index_type,
            timeout_secs,
            probe_ms,
            probe_project,
            runs,
        } => {
            let mut docs_per_sec = Vec::with_capacity(runs);
            for _ in 0..runs.max(1) {
                docs_per_sec.push(
                    admin_rebuild(
                        &url,
                        &index_type,
                        Duration::from_secs(timeout_secs),
                        Duration::from_millis(probe_ms),
                        &probe_project,
                    )
                    .await?,
                );
            }
            if docs_per_sec.len() > 1 {
                docs_per_sec.sort_by(f64::total_cmp);
                let list: Vec<String> = docs_per_sec.iter().map(|d| format!("{d:.0}")).collect();
                println!(
                    "admin rebuild {index_type}: median {:.0} docs/s over {} runs (sorted: {})",
                    docs_per_sec[docs_per_sec.len() / 2],
                    docs_per_sec.len(),
                    list.join(", "),
                );
            }
            Ok(())
        }
    }
}
