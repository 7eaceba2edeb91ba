//! Store append throughput: validated events → one atomic batch, made durable.
//! Batches of 100 (a busy request/reply stream) and 10 000 (`ingest --file`).

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memory_store::{Durability, Store, StoreOptions};
use memory_types::{Event, ProjectScope, ValidationLimits, parse_single};

fn events(count: usize, offset: usize) -> Vec<Event> {
    let limits = ValidationLimits::default();
    (offset..offset + count)
        .filter_map(|n| {
            let bytes = serde_json::to_vec(&memory_benches::sample_event(
                "webapp",
                n / 50,
                n,
                1_769_764_500_000 + n as u64,
            ))
            .ok()?;
            parse_single(&bytes, ProjectScope::Default("default"), &limits, None).ok()
        })
        .collect()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("store_append");
    group.sample_size(20);
    for (batch, durability, label) in [
        (100usize, Durability::SyncAll, "batch100_sync_all"),
        (10_000, Durability::SyncAll, "batch10000_sync_all"),
        (10_000, Durability::Buffer, "batch10000_buffer"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(
            dir.path(),
            &StoreOptions {
                durability,
                ..StoreOptions::default()
            },
        )
        .expect("store");
        let mut offset = 0usize;
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_function(label, |b| {
            b.iter_batched(
                || {
                    offset += batch;
                    events(batch, offset)
                },
                |batch_events| store.append_events(&batch_events).expect("append"),
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);
