//! Embedding throughput on the bundled sample: `cargo run --release -p memory-embed
//! --example embed_rate [threads] [short|query]`. `query` embeds questions one at a
//! time, as `search` does, and prints the latency percentiles. `EMBED_MODEL_FILE`
//! chooses the model file (default `model.onnx`; the daemon's questions use
//! `model_int8.onnx`); `EMBED_BATCH` the most texts per call.
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
    if let Ok(model_file) = std::env::var("EMBED_MODEL_FILE") {
        config.model_file = model_file;
    }
    if let Some(batch) = std::env::var("EMBED_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        config.batch_size = batch;
    }
    let started = Instant::now();
    let mut embedder = memory_embed::Embedder::load(&config)?;
    let loaded = started.elapsed();
    if mode == "query" {
        let mut latencies: Vec<f64> = Vec::new();
        for (i, _) in (0..300).enumerate() {
            let question = if std::env::var_os("LONGQ").is_some() {
                format!(
                    "what did we decide about JWT expiry in sprint {i}? {}",
                    "and also the refresh tokens and their rotation policy ".repeat(8)
                )
            } else {
                format!("what did we decide about JWT expiry in sprint {i}?")
            };
            let started = Instant::now();
            embedder.embed(&[question])?;
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
        return Ok(writeln_out(format!(
            "query embedding, {}, threads {threads}: p50 {:.2} ms, p99 {:.2} ms",
            config.model_file,
            at(0.5),
            at(0.99)
        ))?);
    }
    let started = Instant::now();
    let vectors = embedder.embed(&texts)?;
    let elapsed = started.elapsed();
    let _ = writeln_out(format!(
        "{} texts in {:.2} s ({:.0}/s), load {:.2} s, {}, threads {threads}",
        vectors.len(),
        elapsed.as_secs_f64(),
        vectors.len() as f64 / elapsed.as_secs_f64(),
        loaded.as_secs_f64(),
        config.model_file
    ));
    Ok(())
}

fn writeln_out(line: String) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout(), "{line}")
}
