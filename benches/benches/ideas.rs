//! The indexing agent: the heuristic engine's throughput, and how long a new turn takes
//! to become an idea a query can see.
//!
//! 1. **Engine throughput** (target ≥ 20 000 events/s on one core): the heuristic engine
//!    over [`memory_benches::year`]'s realistic sessions, in continuous-mode batches of
//!    1 024 events, each batch validated and applied to an in-memory graph as the agent
//!    does (so later batches see a growing graph). Printed as events/s; criterion
//!    measures the last batch on the graph the others grew.
//! 2. **Ingest → idea visible** (target p99 ≤ 2 s): the real pipeline (store, agent with
//!    the daemon's 1.5 s window), a decision appended every 250 ms while the year's
//!    history is already indexed; for each, the time until `ideas_of_event` finds it
//!    through the stored graph. p50/p99/max printed.
//!
//! `cargo bench -p memory-benches --bench ideas`. Under `cargo test` it runs a small
//! smoke pass. `IDEAS_BENCH_EVENTS` overrides the corpus size (default 20 000);
//! `IDEAS_BENCH_ONLY=throughput` (or `latency`) runs one part, e.g. under a profiler;
//! `IDEAS_BENCH_DUMP=FILE` writes the grown graph, to check that a speed-up changed no
//! result; `IDEAS_BENCH_SIMILARITY=1` gives the engine the embedding model (as the
//! daemon does with the vector index on) and prints how often it asked.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use memory_benches::percentile;
use memory_benches::year::{YearSpec, generate};
use memory_ideas::{
    BatchMode, ExtractBatch, HeuristicEngine, IdeaExtractor, Lexicon, MemoryGraph, SessionEvents,
    apply_changes, validate,
};
use memory_types::{Event, EventKind, ProjectScope, Role, ValidationLimits, parse_single};

fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test" || a == "--list")
}

fn corpus(events: usize) -> Vec<Event> {
    let limits = ValidationLimits::default();
    generate(&YearSpec {
        events,
        ..YearSpec::default()
    })
    .iter()
    .map(|event| {
        let bytes = serde_json::to_vec(&event.to_json()).expect("encode");
        parse_single(&bytes, ProjectScope::Default("default"), &limits, None).expect("valid")
    })
    .collect()
}

/// Continuous-mode batches: `size` events each, grouped per session in first-seen order.
fn batches(events: &[Event], size: usize) -> Vec<ExtractBatch> {
    events
        .chunks(size)
        .enumerate()
        .map(|(chunk_index, chunk)| {
            let mut sessions: Vec<SessionEvents> = Vec::new();
            for (offset, event) in chunk.iter().enumerate() {
                let seq = (chunk_index * size + offset) as u64 + 1;
                match sessions
                    .iter_mut()
                    .find(|s| s.session_id == event.session_id && s.project_id == event.project_id)
                {
                    Some(session) => {
                        session.events.push(event.clone());
                        session.seqs.push(seq);
                    }
                    None => sessions.push(SessionEvents {
                        project_id: event.project_id.clone(),
                        session_id: event.session_id.clone(),
                        events: vec![event.clone()],
                        seqs: vec![seq],
                        context: Vec::new(),
                    }),
                }
            }
            ExtractBatch {
                mode: BatchMode::Continuous,
                sessions,
            }
        })
        .collect()
}

/// One batch as the agent handles it: extract, validate, apply. Returns the new ideas.
fn step(engine: &mut HeuristicEngine, graph: &mut MemoryGraph, batch: &ExtractBatch) -> usize {
    let changes = engine.extract(batch, graph).expect("extract");
    let valid = validate(&changes, batch, graph, 0).expect("validate");
    let report = apply_changes(graph, Lexicon::shipped(), &valid).expect("apply");
    report.ideas_by_intent.values().sum::<usize>()
}

/// Runs the engine over every batch as the agent does; returns (events, ideas, seconds)
/// and the engine and graph as they stand after all but the last batch.
fn run_engine(batches: &[ExtractBatch]) -> (usize, usize, f64, HeuristicEngine, MemoryGraph) {
    let mut engine = HeuristicEngine::new();
    if std::env::var_os("IDEAS_BENCH_SIMILARITY").is_some() {
        engine = engine.with_similarity(memory_projections::model_similarity(
            memory_embed::EmbedderConfig::from_env_or_repo(),
        ));
    }
    let mut graph = MemoryGraph::default();
    let mut before_last = MemoryGraph::default();
    let mut elapsed = Duration::ZERO;
    let mut events = 0;
    let mut ideas = 0;
    for (index, batch) in batches.iter().enumerate() {
        if index + 1 == batches.len() {
            before_last = graph.clone();
        }
        let started = Instant::now();
        ideas += step(&mut engine, &mut graph, batch);
        elapsed += started.elapsed();
        events += batch.len();
    }
    (events, ideas, elapsed.as_secs_f64(), engine, before_last)
}

/// Whether the part named `part` runs (`IDEAS_BENCH_ONLY` unset or naming it).
fn runs(part: &str) -> bool {
    std::env::var("IDEAS_BENCH_ONLY").map_or(true, |only| only == part)
}

fn engine_throughput(c: &mut Criterion) {
    if !runs("throughput") {
        return;
    }
    let size = if measuring() {
        std::env::var("IDEAS_BENCH_EVENTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20_000)
    } else {
        1_500
    };
    let events = corpus(size);
    let batches = batches(&events, 1_024);
    let (num_events, num_ideas, seconds, mut engine, grown) = run_engine(&batches);
    if let Ok(path) = std::env::var("IDEAS_BENCH_DUMP") {
        // The graph before the last batch, to compare two builds' output exactly.
        std::fs::write(&path, format!("{grown:#?}")).expect("dump");
    }
    println!(
        "ideas: heuristic engine over {num_events} events: {num_ideas} ideas in {seconds:.3} s \
         = {:.0} events/s (one core, validate + apply included)",
        num_events as f64 / seconds
    );
    let asked = memory_projections::IDEAS_METRICS
        .similarity
        .with_label_values(&["embedded"])
        .get();
    if asked > 0 {
        println!("ideas: the engine asked the embedding model {asked} times");
    }
    // The last batch on the graph the others grew (the steady state), the engine's
    // caches warm as they are in a running agent.
    let last = batches.last().expect("a batch");
    let mut group = c.benchmark_group("ideas");
    group.sample_size(if measuring() { 20 } else { 10 });
    group.bench_function("heuristic_batch_1024", |b| {
        b.iter_batched(
            || grown.clone(),
            |mut graph| step(&mut engine, &mut graph, last),
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// Ingest → idea visible, through the real pipeline.
fn idea_visible_latency(_c: &mut Criterion) {
    if !runs("latency") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (history, probes) = if measuring() { (20_000, 40) } else { (500, 3) };
    let latencies = runtime.block_on(async move {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = memory_store::Store::open(dir.path(), &memory_store::StoreOptions::default())
            .expect("store");
        let engine: memory_projections::EngineFactory =
            std::sync::Arc::new(|| Box::new(HeuristicEngine::new()));
        let config = memory_actors::PipelineConfig {
            indexing: Some(memory_projections::IndexingSettings::new(engine)),
            ..memory_actors::PipelineConfig::default()
        };
        let pipeline = memory_actors::Pipeline::start(store.clone(), config)
            .await
            .expect("pipeline");
        for chunk in corpus(history).chunks(10_000) {
            pipeline
                .ingest
                .append(chunk.to_vec())
                .await
                .expect("append");
        }
        pipeline.wait_caught_up(Duration::from_secs(600)).await;
        let graph = memory_projections::IdeaGraph::open(&store).expect("graph");
        let mut latencies = Vec::new();
        for n in 0..probes {
            let event = Event {
                event_id: format!("probe-{n}"),
                session_id: "probe-session".into(),
                project_id: "webapp".into(),
                agent_id: None,
                timestamp_ms: memory_types::now_ms(),
                kind: EventKind::UserMessage,
                role: Role::User,
                text: format!("We decided: the probe_timeout_{n} is {n} seconds."),
                metadata: Default::default(),
            };
            let started = Instant::now();
            pipeline.ingest.append(vec![event]).await.expect("append");
            loop {
                let found = graph
                    .ideas_of_event("webapp", &format!("probe-{n}"))
                    .expect("read");
                if !found.is_empty() {
                    break;
                }
                if started.elapsed() > Duration::from_secs(30) {
                    panic!("probe-{n} never became an idea");
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            latencies.push(started.elapsed().as_micros() as u64);
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        pipeline.shutdown().await;
        latencies
    });
    let mut sorted = latencies;
    sorted.sort_unstable();
    println!(
        "ideas: ingest -> idea visible over {} probes (1.5 s batch window): p50 {:.0} ms, \
         p99 {:.0} ms, max {:.0} ms",
        sorted.len(),
        percentile(&sorted, 50.0) as f64 / 1_000.0,
        percentile(&sorted, 99.0) as f64 / 1_000.0,
        sorted.last().copied().unwrap_or(0) as f64 / 1_000.0
    );
}

criterion_group!(benches, engine_throughput, idea_visible_latency);
criterion_main!(benches);
