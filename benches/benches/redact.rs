//! Redaction cost per event, as `IngestHandle::append` pays it before every commit:
//! the sample's 570 conversation events (no secret in them: the usual case, where the
//! keyword prefilter and the `RegexSet` decide), the same with a fake secret in every
//! tenth, and one 100 KB tool result (a large file read).

/// The daemon's allocator, so the numbers match what it does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use memory_redact::Redactor;

fn sample_texts() -> Vec<String> {
    include_str!("../../sample/conversations.jsonl")
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|event| event["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn redact(c: &mut Criterion) {
    let redactor = Redactor::shipped(b"bench key").expect("shipped rules");
    let clean = sample_texts();
    let with_secrets: Vec<String> = clean
        .iter()
        .enumerate()
        .map(|(i, text)| {
            if i % 10 == 0 {
                format!("{text}\nexport GITHUB_TOKEN=ghp_Zk3q9TfVx2Lm8RwYc4Hs7Jd1Pn6Bv0Ae5Ku{i:02}")
            } else {
                text.clone()
            }
        })
        .collect();
    let mut large = String::new();
    for text in clean.iter().cycle() {
        if large.len() >= 100_000 {
            break;
        }
        large.push_str(text);
        large.push('\n');
    }
    let large = large.as_str();
    let mut group = c.benchmark_group("redact");
    group.throughput(Throughput::Elements(clean.len() as u64));
    group.bench_function("sample_570_events", |b| {
        b.iter(|| {
            for text in &clean {
                std::hint::black_box(redactor.redact_text(text));
            }
        });
    });
    group.bench_function("sample_570_events_every_tenth_with_a_secret", |b| {
        b.iter(|| {
            for text in &with_secrets {
                std::hint::black_box(redactor.redact_text(text));
            }
        });
    });
    group.throughput(Throughput::Bytes(large.len() as u64));
    group.bench_function("one_100kb_tool_result", |b| {
        b.iter(|| std::hint::black_box(redactor.redact_text(large)));
    });
    group.finish();
}

criterion_group!(benches, redact);
criterion_main!(benches);
