//! Resident memory of the embedders: `cargo run --release -p memory-embed --example
//! rss_probe`. Loads the document model (one thread) and the question model, embeds
//! three indexer batches (256 of the sample's texts each) and 100 questions, printing
//! VmRSS/VmHWM after each step. `EMBED_BATCH_TOKENS`, `EMBED_BATCH` (texts per call)
//! and `EMBED_THREADS` change the document model's settings, `EMBED_MODEL_FILE` its
//! file; `EMBED_SHORT` embeds one-line sentences instead of the sample's texts.
fn status() -> String {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    format!(
        "VmRSS {:>4} MiB  VmHWM {:>4} MiB",
        field("VmRSS:"),
        field("VmHWM:")
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../sample/conversations.jsonl"
    ))?;
    let texts: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let start = line.find("\"text\": \"")? + 9;
            let end = line[start..].find("\", \"")? + start;
            Some(line[start..end].to_owned())
        })
        .cycle()
        .take(256)
        .enumerate()
        .map(|(i, text)| {
            if std::env::var_os("EMBED_SHORT").is_some() {
                format!("This is short sentence number {i} about JWT tokens.")
            } else {
                text
            }
        })
        .collect();
    let mut config = memory_embed::EmbedderConfig::from_env_or_repo();
    config.intra_threads = Some(
        std::env::var("EMBED_THREADS")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(1),
    );
    if let Some(batch) = std::env::var("EMBED_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        config.batch_size = batch;
    }
    if let Some(tokens) = std::env::var("EMBED_BATCH_TOKENS")
        .ok()
        .and_then(|b| b.parse().ok())
    {
        config.batch_tokens = tokens;
    }
    if let Ok(model_file) = std::env::var("EMBED_MODEL_FILE") {
        config.model_file = model_file;
    }
    println!("started                      {}", status());
    let mut documents = memory_embed::Embedder::load(&config)?;
    println!("document model loaded        {}", status());
    let mut question_config = config.clone();
    question_config.model_file = memory_embed::QUANTIZED_MODEL_FILE.to_owned();
    let mut questions = memory_embed::Embedder::load(&question_config)?;
    println!("question model loaded        {}", status());
    let started = std::time::Instant::now();
    for _ in 0..3 {
        documents.embed(&texts)?;
    }
    println!("  ({:.2} s)", started.elapsed().as_secs_f64());
    println!("3 indexer batches embedded   {}", status());
    for i in 0..100 {
        questions.embed(&[format!(
            "what did we decide about JWT expiry in sprint {i}?"
        )])?;
    }
    println!("100 questions embedded       {}", status());
    Ok(())
}
