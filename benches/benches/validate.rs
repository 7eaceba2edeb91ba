//! Validation throughput: bytes of one event (a file's line, a JetStream message) or of
//! a request's array of events → validated `Event`s.

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use memory_types::{ProjectScope, ValidationLimits, parse_payload, parse_single};

fn validate(c: &mut Criterion) {
    let limits = ValidationLimits::default();
    let lines: Vec<Vec<u8>> = (0..1000)
        .map(|n| {
            serde_json::to_vec(&memory_benches::sample_event(
                "webapp",
                n / 50,
                n,
                1_769_764_500_000 + n as u64,
            ))
            .unwrap_or_default()
        })
        .collect();
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("parse_single_1000_events", |b| {
        b.iter(|| {
            for line in &lines {
                let event = parse_single(line, ProjectScope::Default("default"), &limits, None);
                assert!(event.is_ok());
            }
        });
    });
    // The request/reply path: the same events as ten arrays of 100, as `loadgen ingest
    // --batch 100` sends them.
    let batches: Vec<Vec<u8>> = lines
        .chunks(100)
        .map(|chunk| {
            let mut batch = b"[".to_vec();
            batch.extend(chunk.join(&b','));
            batch.push(b']');
            batch
        })
        .collect();
    group.bench_function("parse_payload_10_batches_of_100", |b| {
        b.iter(|| {
            for batch in &batches {
                let events = parse_payload(batch, "webapp", &limits);
                assert!(events.is_ok_and(|events| events.iter().all(Result::is_ok)));
            }
        });
    });
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
