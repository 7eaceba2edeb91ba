//! The embedding model as the heuristic engine's judge of meaning
//! (`HeuristicEngine::with_similarity`): whether a statement sharing a word with an
//! open question answers it, whether a message after a pause is about something else
//! than its topic span. Only those undecided cases ask it — about one event in eight
//! of generated coding sessions, each call embedding the statement and up to twenty
//! questions, one at a time: that is why `[indexing] similarity` is off by default.
//!
//! - **Loaded on first use**, once per process, shared by every engine the factory
//!   makes: a graph that never meets an undecided case never pays the half second and
//!   the ~90 MB of the model.
//! - **One text per model call**, so a vector never depends on what else was in its
//!   batch (padding changes the last digits): the graph must be the same however the
//!   events were batched, and a rebuild must give the same graph.
//! - **A model that does not load** is reported once and answers no vectors: the engine
//!   then judges by words alone, as without a model.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use memory_embed::{Embedder, EmbedderConfig};
use memory_ideas::EmbedFn;
use tracing::{info_span, warn};

use crate::ideas::metrics::IDEAS_METRICS;

enum Model {
    NotLoaded(EmbedderConfig),
    Loaded(Box<Embedder>),
    Failed,
}

/// The engine's similarity over the model `config` names (its files are checked on
/// first use, not here).
#[must_use]
pub fn model_similarity(mut config: EmbedderConfig) -> EmbedFn {
    // One thread: the agent shares the machine with ingest, the indexes and queries.
    config.intra_threads = Some(1);
    let model = Arc::new(Mutex::new(Model::NotLoaded(config)));
    Arc::new(move |texts: &[&str]| {
        let Ok(mut model) = model.lock() else {
            return Vec::new();
        };
        embed(&mut model, texts)
    })
}

fn embed(model: &mut Model, texts: &[&str]) -> Vec<Vec<f32>> {
    let metrics = &IDEAS_METRICS;
    if let Model::NotLoaded(config) = model {
        *model = match Embedder::load(config) {
            Ok(embedder) => Model::Loaded(Box::new(embedder)),
            Err(err) => {
                warn!(error = %err, "the indexing agent judges by words alone: the embedding model does not load");
                Model::Failed
            }
        };
    }
    let Model::Loaded(embedder) = model else {
        metrics.similarity.with_label_values(&["unavailable"]).inc();
        return Vec::new();
    };
    let _span = info_span!("ideas_similarity", texts = texts.len()).entered();
    let started = Instant::now();
    let mut vectors = Vec::with_capacity(texts.len());
    for text in texts {
        match embedder.embed(&[*text]) {
            Ok(mut one) if one.len() == 1 => vectors.push(one.remove(0)),
            Ok(_) | Err(_) => {
                metrics.similarity.with_label_values(&["failed"]).inc();
                return Vec::new();
            }
        }
    }
    metrics.similarity.with_label_values(&["embedded"]).inc();
    metrics
        .similarity_seconds
        .with_label_values::<&str>(&[])
        .observe(started.elapsed().as_secs_f64());
    vectors
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose files are missing answers no vectors (the engine falls back to
    /// words) and never panics; asking again does not retry the load.
    #[test]
    fn a_model_that_does_not_load_answers_no_vectors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = EmbedderConfig::new(dir.path().join("model"), dir.path().join("libort.so"));
        let similarity = model_similarity(config);
        let before = IDEAS_METRICS
            .similarity
            .with_label_values(&["unavailable"])
            .get();
        assert!(similarity(&["a question", "an answer"]).is_empty());
        assert!(similarity(&["again"]).is_empty());
        let after = IDEAS_METRICS
            .similarity
            .with_label_values(&["unavailable"])
            .get();
        assert!(after >= before + 2);
    }

    /// With the real model: one vector per text, the same for a text whatever it is
    /// embedded with, and meaning shows in the cosine.
    #[test]
    fn the_model_embeds_each_text_alone() {
        let config = EmbedderConfig::from_env_or_repo();
        let similarity = model_similarity(config);
        let alone = similarity(&["How long do refresh tokens live?"]);
        let together = similarity(&[
            "A much longer text that would pad the batch if both were embedded at once, with many more tokens than the question.",
            "How long do refresh tokens live?",
            "Refresh tokens expire after fourteen days.",
            "The invoice footer has the wrong VAT number.",
        ]);
        assert_eq!(alone.len(), 1);
        assert_eq!(together.len(), 4);
        assert_eq!(
            alone[0], together[1],
            "a vector does not depend on its batch"
        );
        let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cosine(&together[1], &together[2]) > cosine(&together[1], &together[3]) + 0.2);
    }
}
