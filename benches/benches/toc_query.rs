//! The time table of contents over a year of data, in process.
//!
//! 1. Builds the store once: [`memory_benches::year`]'s ~100 000 events (365 days, four
//!    projects) go through the real pipeline (`Pipeline::start`, `ingest.append` in
//!    batches of 10 000 like `ingest --file`), then `wait_caught_up` until the whole TOC
//!    is written. Prints the build time, ingest → TOC throughput, a timeline of the
//!    consumers' cursors and the node counts, and checks that every event is counted.
//! 2. Latency percentiles: 500 calls per kind of [`memory_benches::toc_mix`] through
//!    `QueryService::call` (JSON in, JSON value out: what the daemon runs per request,
//!    minus NATS), p50/p99/max printed. Criterion reports means, not percentiles.
//! 3. Criterion: the same calls, `sample_size(20)`.
//!
//! `cargo bench -p memory-benches --bench toc_query`. Under `cargo test` (no `--bench`)
//! it builds a 3 000-event store and makes a few calls, so the test suite stays fast.
//! `TOC_BENCH_EVENTS` and `TOC_BENCH_CALLS` override the sizes; `TOC_BENCH_ONLY=navigate`
//! keeps the percentile pass to the kinds whose id contains it (for profiling);
//! `TOC_BENCH_SCAN_BUDGET` sets the index-free search's scan budget (events per query,
//! default the daemon's `[toc] search_scan_budget_events`, 20 000).

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use memory_actors::{Pipeline, PipelineConfig};
use memory_benches::toc_mix::{QueryKind, latency_line, query_kinds};
use memory_benches::year::{YEAR_PROJECTS, YearSpec, generate};
use memory_projections::RollupBuilder;
use memory_query::QueryService;
use memory_store::{Store, StoreOptions};
use memory_toc::{TocLevel, Tz};
use memory_types::{Event, ProjectScope, ValidationLimits, parse_single};

/// The project the query mix reads (the largest).
const PROJECT: &str = "webapp";

/// Whether criterion will measure (`cargo bench`), not just smoke-test (`cargo test`).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok()
}

struct Fixture {
    service: QueryService,
    _dir: tempfile::TempDir,
}

fn parse_events(spec: &YearSpec) -> Vec<Event> {
    let limits = ValidationLimits::default();
    generate(spec)
        .iter()
        .map(|event| {
            let bytes = serde_json::to_vec(&event.to_json()).expect("encode");
            parse_single(&bytes, ProjectScope::Default("default"), &limits, None).expect("valid")
        })
        .collect()
}

/// Ingests the year through the pipeline and waits for the whole TOC.
fn build(events: usize) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
    let generated = Instant::now();
    let events = parse_events(&YearSpec {
        events,
        ..YearSpec::default()
    });
    println!(
        "toc_query: generated and validated {} events in {:.2} s",
        events.len(),
        generated.elapsed().as_secs_f64()
    );
    let mut per_project = std::collections::BTreeMap::<String, u64>::new();
    for event in &events {
        *per_project.entry(event.project_id.clone()).or_default() += 1;
    }
    let num_events = events.len();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let pipeline = Pipeline::start(store.clone(), PipelineConfig::default())
            .await
            .expect("pipeline");
        let started = Instant::now();
        for chunk in events.chunks(10_000) {
            pipeline
                .ingest
                .append(chunk.to_vec())
                .await
                .expect("append");
        }
        let ingested = started.elapsed();
        let last_event_seq = store.head().0;
        println!(
            "toc_query: ingest (durable appends) {num_events} events in {:.2} s = {:.0} events/s",
            ingested.as_secs_f64(),
            num_events as f64 / ingested.as_secs_f64()
        );
        // Timeline of the consumers: where the build spends its time.
        let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
        let progress = {
            let counters_of = pipeline_counters(&pipeline);
            let store = store.clone();
            tokio::spawn(async move {
                let mut reached: Vec<(String, f64)> = Vec::new();
                let mut last_print = Instant::now();
                loop {
                    let counters = counters_of().await;
                    let elapsed = started.elapsed().as_secs_f64();
                    for (name, cursor) in &counters {
                        if *cursor >= last_event_seq && !reached.iter().any(|(n, _)| n == name) {
                            reached.push((name.clone(), elapsed));
                        }
                    }
                    if last_print.elapsed() >= Duration::from_secs(5) {
                        last_print = Instant::now();
                        let cursors: Vec<String> =
                            counters.iter().map(|(n, c)| format!("{n}={c}")).collect();
                        println!(
                            "toc_query:   t={elapsed:>6.1} s head={} {}",
                            store.head().0,
                            cursors.join(" ")
                        );
                    }
                    if done_rx.try_recv().is_ok() {
                        return reached;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        let caught_up = pipeline.wait_caught_up(Duration::from_secs(3_600)).await;
        let built = started.elapsed();
        let _ = done_tx.send(());
        let reached = progress.await.expect("progress task");
        assert!(caught_up, "the TOC did not catch up within an hour");
        println!(
            "toc_query: TOC complete {:.2} s after the first append ({:.2} s after the last ack): \
             ingest -> TOC {:.0} events/s; outbox head {} ({} derived entries)",
            built.as_secs_f64(),
            (built - ingested).as_secs_f64(),
            num_events as f64 / built.as_secs_f64(),
            store.head().0,
            store.head().0 - last_event_seq,
        );
        for (name, at) in reached {
            println!("toc_query:   {name} past the last event at {at:.2} s");
        }
        for counters in pipeline.consumer_counters().await {
            println!(
                "toc_query:   {}: {} items in {} steps, {} failures, {} dead-lettered",
                counters.name,
                counters.num_items_applied,
                counters.num_steps,
                counters.num_failures,
                counters.num_dead_lettered
            );
        }
        pipeline.shutdown().await;
    });
    drop(runtime);
    for (project, expected) in &per_project {
        let count = |level| {
            RollupBuilder::nodes_at_level(&store, project, level)
                .expect("nodes")
                .len()
        };
        let years = RollupBuilder::nodes_at_level(&store, project, TocLevel::Year).expect("years");
        let counted: u64 = years.iter().map(|year| year.num_events).sum();
        println!(
            "toc_query: {project}: {expected} events, TOC counts {counted}; nodes: {} years, {} months, \
             {} weeks, {} days, {} segments",
            years.len(),
            count(TocLevel::Month),
            count(TocLevel::Week),
            count(TocLevel::Day),
            count(TocLevel::Segment),
        );
        assert_eq!(counted, *expected, "{project}: the TOC misses events");
    }
    let mut service = QueryService::new(store, Tz::UTC);
    if let Some(budget) = env_usize("TOC_BENCH_SCAN_BUDGET") {
        println!("toc_query: scan budget {budget} events per search");
        service = service.with_scan_budget(budget);
    }
    Fixture { service, _dir: dir }
}

type CountersFn = Box<
    dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = Vec<(String, u64)>> + Send>> + Send + Sync,
>;

/// A function reading every consumer's cursor, for the build timeline.
fn pipeline_counters(pipeline: &Pipeline) -> CountersFn {
    let handles = (
        pipeline.session_catalog.clone(),
        pipeline.segmenter.clone(),
        pipeline.grip_extractor.clone(),
        pipeline.rollup_builder.clone(),
    );
    Box::new(move || {
        let handles = handles.clone();
        Box::pin(async move {
            let mut all = Vec::new();
            all.extend(handles.0.counters().await.ok());
            all.extend(handles.1.counters().await.ok());
            all.extend(handles.2.counters().await.ok());
            all.extend(handles.3.counters().await.ok());
            all.into_iter().map(|c| (c.name, c.cursor)).collect()
        })
    })
}

fn bodies(kind: &QueryKind) -> Vec<Vec<u8>> {
    kind.bodies
        .iter()
        .map(|body| serde_json::to_vec(body).expect("encode"))
        .collect()
}

/// How many results a reply holds, as a sanity check that the mix finds things.
fn hits(method: &str, reply: &serde_json::Value) -> usize {
    let list = match method {
        "navigate" => &reply["evidence"],
        _ => &reply["results"],
    };
    list.as_array().map_or(0, Vec::len)
}

/// `calls` calls of each kind, timed one by one; prints p50/p99/max. With `strict`, any
/// failed call panics (a smoke-test store lacks many of the mix's weeks).
fn percentiles(service: &QueryService, calls: usize, strict: bool) {
    println!(
        "toc_query: latency of QueryService::call, project {PROJECT}, {calls} calls per kind, one at a time"
    );
    let only = std::env::var("TOC_BENCH_ONLY").unwrap_or_default();
    for kind in query_kinds().into_iter().filter(|k| k.id.contains(&only)) {
        let bodies = bodies(&kind);
        let (mut hits_sum, mut bytes_sum) = (0usize, 0usize);
        let mut failures = 0usize;
        for body in &bodies {
            match service.call(PROJECT, kind.method, body) {
                Ok(reply) => {
                    hits_sum += hits(kind.method, &reply);
                    bytes_sum += serde_json::to_vec(&reply).map_or(0, |v| v.len());
                }
                Err(err) if strict => panic!("{}: {err:?}", kind.label),
                Err(_) => failures += 1,
            }
        }
        let mut latencies = Vec::with_capacity(calls);
        for i in 0..calls {
            let body = &bodies[i % bodies.len()];
            let started = Instant::now();
            let reply = service.call(PROJECT, kind.method, body);
            latencies.push(started.elapsed().as_micros() as u64);
            assert!(reply.is_ok() || !strict, "{}: {reply:?}", kind.label);
        }
        println!(
            "toc_query: {}  ({:.1} hits, {:.0} reply bytes on average{})",
            latency_line(kind.label, &mut latencies),
            hits_sum as f64 / bodies.len() as f64,
            bytes_sum as f64 / bodies.len() as f64,
            if failures > 0 {
                format!("; {failures} bodies failed")
            } else {
                String::new()
            }
        );
    }
}

fn toc_query(c: &mut Criterion) {
    let full = measuring();
    let events = env_usize("TOC_BENCH_EVENTS").unwrap_or(if full { 100_000 } else { 3_000 });
    let calls = env_usize("TOC_BENCH_CALLS").unwrap_or(if full { 500 } else { 5 });
    println!(
        "toc_query: {events} events over 365 days, projects {:?}",
        YEAR_PROJECTS.iter().map(|(p, _)| *p).collect::<Vec<_>>()
    );
    let fixture = build(events);
    percentiles(&fixture.service, calls, full);
    let mut group = c.benchmark_group("toc_query");
    group
        .sample_size(20)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for kind in query_kinds() {
        let bodies = bodies(&kind);
        let mut next = 0usize;
        group.bench_function(kind.id, |b| {
            b.iter(|| {
                next += 1;
                fixture
                    .service
                    .call(PROJECT, kind.method, &bodies[next % bodies.len()])
            });
        });
    }
    group.finish();
}

criterion_group!(benches, toc_query);
criterion_main!(benches);
