//! What the vector index holds per document: `cargo run --release -p memory-vector
//! --example memory_probe [DOCS]` (default 132 646, the preloaded year's size). Builds an
//! index of DOCS documents with the daemon's allocator and purge delay (mimalloc,
//! delay 0), sealed in segments of 5 000 as the indexer seals them, and prints VmRSS
//! before and after, per document. Keys and metadata are shaped like the daemon's
//! (an event id, a session id, one project); vectors are random, 384 dimensions.
//! `PROBE_DIMS` sets the dimensions (e.g. 8, to see the metadata and key map alone).

#[global_allocator]
static GLOBAL: memory_alloc::MiMalloc = memory_alloc::MiMalloc;

use memory_vector::{DocType, VectorConfig, VectorDoc, VectorIndex};

fn resident_mib() -> f64 {
    memory_alloc::resident_bytes().unwrap_or(0) as f64 / f64::from(1 << 20)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    memory_alloc::set_purge_delay(0);
    let docs: usize = std::env::args()
        .nth(1)
        .map_or(Ok(132_646), |arg| arg.parse())?;
    let dims: usize = std::env::var("PROBE_DIMS").map_or(Ok(384), |dims| dims.parse())?;
    let dir = tempfile::tempdir()?;
    let mut index = VectorIndex::open(dir.path().join("vectors"), VectorConfig::new(dims))?;
    let before = resident_mib();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    for n in 0..docs {
        index.upsert(VectorDoc {
            doc_type: DocType::Event,
            doc_id: format!("evt-01JD{n:022}"),
            project_id: "agent-memory".to_owned(),
            session_id: Some(format!("session-2026-{:06}", n / 40)),
            level: None,
            timestamp_ms: 1_767_225_600_000 + n as u64 * 1_000,
            vector: (0..dims).map(|_| next()).collect(),
        })?;
        if (n + 1) % 5_000 == 0 {
            index.seal_now(true)?;
        }
    }
    index.seal_now(true)?;
    memory_alloc::trim_c_heap();
    let after = resident_mib();
    println!(
        "{docs} documents of {dims} dimensions in {} segments: VmRSS {before:.1} -> {after:.1} MiB, {:.0} bytes a document",
        index.status().segments.len(),
        (after - before) * f64::from(1 << 20) / docs as f64
    );
    Ok(())
}
