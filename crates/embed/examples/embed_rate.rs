//! Embedding throughput on the bundled sample: `cargo run --release -p memory-embed
//! --example embed_rate [threads]`.
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sample/conversations.jsonl"
    ))?;
    let mode = std::env::args().nth(2).unwrap_or_default();
    let texts: Vec<String> = if mode == "short" {
        (0..256)
            .map(|i| format!("This is short sentence number {i} about JWT tokens."))
            .collect()
    } else {
        text.lines()
            .filter_map(|line| {
                let start = line.find("\"text\": \"")? + 9;
                let end = line[start..].find("\", \"")? + start;
                Some(line[start..end].to_owned())
            })
            .collect()
    };
    let mut config = memory_embed::EmbedderConfig::from_env_or_repo();
    config.intra_threads = Some(threads);
    let started = Instant::now();
    let mut embedder = memory_embed::Embedder::load(&config)?;
    let loaded = started.elapsed();
    let started = Instant::now();
    let vectors = embedder.embed(&texts)?;
    let elapsed = started.elapsed();
    let _ = writeln_out(format!(
        "{} texts in {:.2} s ({:.0}/s), load {:.2} s, threads {threads}",
        vectors.len(),
        elapsed.as_secs_f64(),
        vectors.len() as f64 / elapsed.as_secs_f64(),
        loaded.as_secs_f64()
    ));
    Ok(())
}

fn writeln_out(line: String) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout(), "{line}")
}
