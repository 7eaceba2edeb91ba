//! `gen-file`: JSONL files of sample events or of the year data set.

use std::io::Write;

use anyhow::Context;
use memory_benches::sample_event;
use memory_benches::year::{YearSpec, generate};

pub(super) fn gen_year_file(spec: &YearSpec, out: &std::path::Path) -> anyhow::Result<()> {
    let events = generate(spec);
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    let mut per_project: std::collections::BTreeMap<
        &str,
        (usize, std::collections::BTreeSet<u32>),
    > = std::collections::BTreeMap::new();
    for event in &events {
        writeln!(file, "{}", event.to_json())?;
        let entry = per_project.entry(event.project).or_default();
        entry.0 += 1;
        entry.1.insert(event.session);
    }
    file.flush()?;
    let counts: Vec<String> = per_project
        .iter()
        .map(|(project, (events, sessions))| {
            format!("{project} {events} events/{} sessions", sessions.len())
        })
        .collect();
    println!(
        "wrote {} events (seed {}) to {}: {}; {} .. {}",
        events.len(),
        spec.seed,
        out.display(),
        counts.join(", "),
        events
            .first()
            .map(|e| memory_types::format_timestamp_ms(e.timestamp_ms))
            .unwrap_or_default(),
        events
            .last()
            .map(|e| memory_types::format_timestamp_ms(e.timestamp_ms))
            .unwrap_or_default(),
    );
    Ok(())
}

pub(super) fn gen_file(events: usize, out: &std::path::Path) -> anyhow::Result<()> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?,
    );
    let start = 1_767_225_600_000u64; // 2026-01-01
    for n in 0..events {
        let project = if n % 3 == 0 {
            "ingest-pipeline"
        } else {
            "webapp"
        };
        let event = sample_event(project, n / 40, n, start + (n as u64) * 7_000);
        writeln!(file, "{event}")?;
    }
    file.flush()?;
    println!("wrote {events} events to {}", out.display());
    Ok(())
}
