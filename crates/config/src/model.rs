//! The configuration tree. Each field's doc comment states its meaning, default and unit.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::allocator::{AllocatorConfig, MAX_PURGE_DELAY_MS};
use crate::capture::CaptureConfig;
use crate::consumers::ConsumerConfig;
use crate::error::{ConfigError, Result};
use crate::indexing::IndexingConfig;
use crate::ingest::IngestConfig;
use crate::llm::LlmConfig;
use crate::nats::NatsConfig;
use crate::store::StoreConfig;
use crate::telemetry::TelemetryConfig;
use crate::teleport::TeleportConfig;
use crate::toc::TocConfig;

/// Prefix of environment overrides.
pub const ENV_PREFIX: &str = "AGENT_MEMORY_";

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the store lives. Default: the OS data dir (`$XDG_DATA_HOME/agent-memory`,
    /// usually `~/.local/share/agent-memory`). The CLI's `--data-dir` wins over this.
    pub data_dir: Option<PathBuf>,
    /// The event log.
    pub store: StoreConfig,
    /// Validation limits and group commit.
    pub ingest: IngestConfig,
    /// The NATS connection and subjects.
    pub nats: NatsConfig,
    /// Outbox consumers (every projection actor).
    pub consumers: ConsumerConfig,
    /// The time table of contents.
    pub toc: TocConfig,
    /// The optional LLM summarizer.
    pub llm: LlmConfig,
    /// The indexing agent (ideas graph).
    pub indexing: IndexingConfig,
    /// The accelerator indexes (BM25 now, vectors later) behind `search`.
    pub teleport: TeleportConfig,
    /// Logs, traces and metrics.
    pub telemetry: TelemetryConfig,
    /// Agents' hooks and transcript importers.
    pub capture: CaptureConfig,
    /// When freed memory goes back to the OS.
    pub allocator: AllocatorConfig,
}

impl Config {
    /// Defaults, then `path` (or the user's `agent-memory/config.toml` when `path` is
    /// `None` and that file exists), then `AGENT_MEMORY_*` variables, validated.
    ///
    /// # Errors
    /// A missing explicit file, unknown keys, wrong types, or a value that breaks a rule.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        Config::load_from(path, Env::prefixed(ENV_PREFIX).split("__"))
    }

    fn load_from(path: Option<&Path>, env: Env) -> Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        match path {
            Some(path) if !path.exists() => {
                return Err(ConfigError::Missing {
                    path: path.to_path_buf(),
                });
            }
            Some(path) => figment = figment.merge(Toml::file_exact(path)),
            None => {
                if let Some(user_file) = Config::user_file().filter(|p| p.exists()) {
                    figment = figment.merge(Toml::file_exact(user_file));
                }
            }
        }
        let config: Config = figment.merge(env).extract()?;
        config.validate()?;
        Ok(config)
    }

    /// Parses TOML text alone (no environment), validated. For tests and tools.
    ///
    /// # Errors
    /// As [`Config::load`].
    pub fn from_toml_str(text: &str) -> Result<Config> {
        let config: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(text))
            .extract()?;
        config.validate()?;
        Ok(config)
    }

    /// `$XDG_CONFIG_HOME/agent-memory/config.toml`.
    #[must_use]
    pub fn user_file() -> Option<PathBuf> {
        dirs::config_dir().map(|dir| dir.join("agent-memory").join("config.toml"))
    }

    /// The data dir: `cli` if given, else `data_dir`, else the OS data dir.
    #[must_use]
    pub fn resolve_data_dir(&self, cli: Option<&Path>) -> PathBuf {
        cli.map(Path::to_path_buf)
            .or_else(|| self.data_dir.clone())
            .or_else(|| dirs::data_dir().map(|dir| dir.join("agent-memory")))
            .unwrap_or_else(|| PathBuf::from(".agent-memory"))
    }

    /// Checks rules the types cannot express.
    ///
    /// # Errors
    /// The first broken rule, with its key.
    pub fn validate(&self) -> Result<()> {
        let invalid = |key: &'static str, message: &str| {
            Err(ConfigError::Invalid {
                key,
                message: message.to_owned(),
            })
        };
        if self.ingest.max_payload_bytes == 0 {
            return invalid("ingest.max_payload_bytes", "must be greater than 0");
        }
        if self.ingest.max_event_bytes == 0 {
            return invalid("ingest.max_event_bytes", "must be greater than 0");
        }
        if self.ingest.max_batch_events == 0 {
            return invalid("ingest.max_batch_events", "must be greater than 0");
        }
        if self.ingest.max_pending_events < self.ingest.max_batch_events {
            return invalid(
                "ingest.max_pending_events",
                "must be at least ingest.max_batch_events",
            );
        }
        if self.allocator.purge_delay_ms > MAX_PURGE_DELAY_MS {
            return invalid(
                "allocator.purge_delay_ms",
                "must be at most 3600000 (an hour)",
            );
        }
        if self.consumers.batch_size == 0 {
            return invalid("consumers.batch_size", "must be greater than 0");
        }
        if self.consumers.max_attempts == 0 {
            return invalid("consumers.max_attempts", "must be at least 1");
        }
        if self.consumers.retry_base_ms > self.consumers.retry_max_ms {
            return invalid(
                "consumers.retry_base_ms",
                "must not exceed consumers.retry_max_ms",
            );
        }
        if !(0..=19).contains(&self.consumers.background_nice) {
            return invalid("consumers.background_nice", "must be between 0 and 19");
        }
        if self.consumers.restart_base_ms > self.consumers.restart_max_ms {
            return invalid(
                "consumers.restart_base_ms",
                "must not exceed consumers.restart_max_ms",
            );
        }
        self.toc.tz()?;
        if self.toc.segment_gap_secs == 0 {
            return invalid("toc.segment_gap_secs", "must be greater than 0");
        }
        if self.toc.segment_max_tokens == 0 {
            return invalid("toc.segment_max_tokens", "must be greater than 0");
        }
        if self.toc.grip_max_chars < 40 {
            return invalid("toc.grip_max_chars", "must be at least 40");
        }
        if self.toc.segment_overlap_tokens >= self.toc.segment_max_tokens {
            return invalid(
                "toc.segment_overlap_tokens",
                "must be less than toc.segment_max_tokens",
            );
        }
        if self.indexing.batch_events == 0 {
            return invalid("indexing.batch_events", "must be greater than 0");
        }
        if self.indexing.backfill_batch_events == 0 {
            return invalid("indexing.backfill_batch_events", "must be greater than 0");
        }
        if self.indexing.engine == crate::IndexingEngine::Llm && !self.llm.enabled {
            return invalid(
                "indexing.engine",
                "\"llm\" needs a model: set [llm] enabled = true (or use \"auto\")",
            );
        }
        if self.indexing.llm_batch_tokens < 1_000 || self.indexing.llm_backfill_batch_tokens < 1_000
        {
            return invalid(
                "indexing.llm_batch_tokens",
                "llm_batch_tokens and llm_backfill_batch_tokens must be at least 1000",
            );
        }
        if self.capture.hook_timeout_ms == 0 {
            return invalid("capture.hook_timeout_ms", "must be greater than 0");
        }
        if let Some(project) = &self.capture.project
            && !memory_types::is_valid_project_id(project)
        {
            return invalid(
                "capture.project",
                "must be a project id: ASCII letters, digits, '-', '_', at most 64 bytes",
            );
        }
        if self
            .capture
            .http_token
            .as_ref()
            .is_some_and(|token| token.trim().is_empty())
        {
            return invalid(
                "capture.http_token",
                "must not be empty (leave it unset for none)",
            );
        }
        if !self.capture.http_listen.is_empty() {
            let Ok(addr) = self.capture.http_listen.parse::<std::net::SocketAddr>() else {
                return invalid(
                    "capture.http_listen",
                    "must be an address such as 127.0.0.1:7475",
                );
            };
            if !addr.ip().is_loopback() && self.capture.http_token.is_none() {
                return invalid(
                    "capture.http_listen",
                    "a non-loopback address needs capture.http_token",
                );
            }
        }
        let llm = &self.llm;
        if !(llm.base_url.starts_with("http://") || llm.base_url.starts_with("https://")) {
            return invalid("llm.base_url", "must be an http:// or https:// URL");
        }
        if llm.model.trim().is_empty() {
            return invalid("llm.model", "must not be empty");
        }
        if llm.timeout_ms == 0 {
            return invalid("llm.timeout_ms", "must be greater than 0");
        }
        if llm.max_tokens == 0 {
            return invalid("llm.max_tokens", "must be greater than 0");
        }
        if !(0.0..=2.0).contains(&llm.temperature) {
            return invalid("llm.temperature", "must be between 0 and 2");
        }
        let bm25 = &self.teleport.bm25;
        if bm25.memory_budget_mb < 15 {
            return invalid(
                "teleport.bm25.memory_budget_mb",
                "must be at least 15 (tantivy's smallest indexing arena)",
            );
        }
        if bm25.commit_interval_secs == 0 {
            return invalid(
                "teleport.bm25.commit_interval_secs",
                "must be greater than 0",
            );
        }
        if let Err(err) = bm25.prune_schedule.parse::<croner::Cron>() {
            return invalid(
                "teleport.bm25.prune_schedule",
                &format!("{:?} is not a cron expression: {err}", bm25.prune_schedule),
            );
        }
        if self.teleport.vector.seal_threshold == 0 {
            return invalid("teleport.vector.seal_threshold", "must be greater than 0");
        }
        if self.teleport.vector.ef_search == 0 {
            return invalid("teleport.vector.ef_search", "must be greater than 0");
        }
        if self.teleport.vector.index_threads == Some(0) {
            return invalid("teleport.vector.index_threads", "must be greater than 0");
        }
        let floor = self.teleport.vector.min_similarity;
        if !(floor.is_finite() && (0.0..=1.0).contains(&floor)) {
            return invalid(
                "teleport.vector.min_similarity",
                "must be a number from 0 to 1",
            );
        }
        if self.teleport.vector.query_threads == 0 {
            return invalid("teleport.vector.query_threads", "must be greater than 0");
        }
        for (key, file) in [
            (
                "teleport.vector.model_file",
                &self.teleport.vector.model_file,
            ),
            (
                "teleport.vector.query_model_file",
                &self.teleport.vector.query_model_file,
            ),
        ] {
            if file.trim().is_empty() {
                return invalid(key, "must name a file in model_dir");
            }
        }
        if self.teleport.vector.commit_interval_secs == 0 {
            return invalid(
                "teleport.vector.commit_interval_secs",
                "must be greater than 0",
            );
        }
        if self.nats.url.trim().is_empty() {
            return invalid("nats.url", "must not be empty");
        }
        for (key, prefix) in [
            (
                "nats.ingest_subject_prefix",
                &self.nats.ingest_subject_prefix,
            ),
            ("nats.query_subject_prefix", &self.nats.query_subject_prefix),
        ] {
            if prefix.is_empty() || prefix.contains(['*', '>', ' ']) || prefix.ends_with('.') {
                return invalid(
                    key,
                    "must be a literal subject without wildcards or a trailing dot",
                );
            }
        }
        if self.nats.query_max_in_flight == Some(0) {
            return invalid("nats.query_max_in_flight", "must be greater than 0");
        }
        if self.nats.query_max_wait_ms == 0 {
            return invalid("nats.query_max_wait_ms", "must be greater than 0");
        }
        if let Some(prefix) = &self.nats.inbox_prefix
            && (prefix.is_empty()
                || prefix.contains(['*', '>'])
                || prefix.chars().any(char::is_whitespace)
                || prefix.split('.').any(str::is_empty))
        {
            return invalid(
                "nats.inbox_prefix",
                "must be a literal subject: tokens without wildcards or whitespace, none empty",
            );
        }
        if self.nats.user.is_some() != self.nats.password.is_some() {
            return invalid("nats.user", "user and password must be set together");
        }
        if self.nats.tls_cert_file.is_some() != self.nats.tls_key_file.is_some() {
            return invalid(
                "nats.tls_cert_file",
                "tls_cert_file and tls_key_file must be set together",
            );
        }
        let jetstream = &self.nats.jetstream;
        if jetstream.enabled {
            if jetstream.stream.is_empty() || jetstream.stream.contains(['.', '*', '>', ' ']) {
                return invalid(
                    "nats.jetstream.stream",
                    "must be a name without '.', '*', '>' or spaces",
                );
            }
            if jetstream.subjects.is_empty() {
                return invalid("nats.jetstream.subjects", "must name at least one subject");
            }
            if jetstream.fetch_batch == 0 {
                return invalid("nats.jetstream.fetch_batch", "must be greater than 0");
            }
        }
        Ok(())
    }

    /// The configuration as TOML with secrets masked, for `config show`.
    #[must_use]
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        let mask = |secret: &mut Option<String>| {
            if secret.is_some() {
                *secret = Some("********".into());
            }
        };
        mask(&mut shown.nats.token);
        mask(&mut shown.nats.password);
        mask(&mut shown.nats.nkey_seed);
        mask(&mut shown.llm.api_key);
        mask(&mut shown.capture.http_token);
        toml::to_string_pretty(&shown)
            .unwrap_or_else(|err| format!("# cannot render config: {err}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DurabilityConfig;

    fn committed_default_toml() -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/default.toml");
        std::fs::read_to_string(path).expect("config/default.toml exists")
    }

    #[test]
    fn committed_default_toml_is_exactly_the_defaults() {
        let parsed = Config::from_toml_str(&committed_default_toml()).expect("default.toml parses");
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn committed_default_toml_documents_every_key() {
        let documented = committed_default_toml();
        let rendered = toml::to_string_pretty(&Config::default()).expect("render");
        for line in rendered.lines() {
            let key = match line.split_once(" = ") {
                Some((key, _)) => key.trim(),
                None => continue,
            };
            assert!(
                documented.contains(&format!("{key} =")),
                "config/default.toml lacks {key}"
            );
        }
        for optional in [
            "data_dir",
            "token",
            "user",
            "password",
            "nkey_seed",
            "credentials_file",
            "tls_ca_file",
            "tls_cert_file",
            "tls_key_file",
            "inbox_prefix",
            "query_max_in_flight",
            "otlp_endpoint",
            "api_key",
            "index_path",
            "model_dir",
            "ort_dylib_path",
            "index_threads",
            "background_spare_cores",
        ] {
            assert!(
                documented.contains(&format!("# {optional} =")),
                "config/default.toml lacks {optional}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_refused_with_their_name() {
        let err = Config::from_toml_str("[ingest]\nmax_payload = 5\n").expect_err("unknown key");
        assert!(err.to_string().contains("max_payload"), "{err}");
        let err = Config::from_toml_str("[ingset]\n").expect_err("unknown table");
        assert!(err.to_string().contains("ingset"), "{err}");
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = Config::from_toml_str("[ingest]\nmax_payload_bytes = 0\n").expect_err("zero");
        assert!(
            err.to_string().contains("ingest.max_payload_bytes"),
            "{err}"
        );
        let err = Config::from_toml_str("[store]\ndurability = \"sometimes\"\n").expect_err("enum");
        assert!(err.to_string().contains("sometimes"), "{err}");
        let err = Config::from_toml_str("[nats]\nuser = \"u\"\n").expect_err("pair");
        assert!(err.to_string().contains("nats.user"), "{err}");
        let err = Config::from_toml_str("[allocator]\npurge_delay_ms = 3600001\n")
            .expect_err("over an hour");
        assert!(
            err.to_string().contains("allocator.purge_delay_ms"),
            "{err}"
        );
        Config::from_toml_str("[allocator]\npurge_delay_ms = 3600000\n").expect("an hour");
    }

    #[test]
    fn time_zone_is_checked() {
        let config =
            Config::from_toml_str("[toc]\ntimezone = \"Europe/Berlin\"\n").expect("valid zone");
        assert_eq!(config.toc.tz().expect("zone"), chrono_tz::Europe::Berlin);
        let err =
            Config::from_toml_str("[toc]\ntimezone = \"Mars/Olympus\"\n").expect_err("bad zone");
        assert!(err.to_string().contains("toc.timezone"), "{err}");
    }

    #[test]
    fn teleport_settings_are_checked() {
        let config = Config::from_toml_str(
            "[teleport]\nenabled = false\n[teleport.bm25]\nindex_path = \"idx\"\n\
             [teleport.bm25.retention_days]\nsegment = 7\n",
        )
        .expect("valid");
        assert!(!config.teleport.bm25_enabled());
        assert_eq!(config.teleport.bm25.retention_days.segment, 7);
        assert_eq!(
            config.teleport.bm25.resolve_index_path(Path::new("/data")),
            Path::new("/data/idx")
        );
        assert_eq!(
            Config::default()
                .teleport
                .bm25
                .resolve_index_path(Path::new("/data")),
            Path::new("/data/bm25-index")
        );
        let err = Config::from_toml_str("[teleport.bm25]\nprune_schedule = \"at three\"\n")
            .expect_err("bad cron");
        assert!(err.to_string().contains("prune_schedule"), "{err}");
        let err = Config::from_toml_str("[teleport.bm25]\nmemory_budget_mb = 5\n")
            .expect_err("small budget");
        assert!(err.to_string().contains("memory_budget_mb"), "{err}");
        for key in [
            "ef_search",
            "index_threads",
            "query_threads",
            "seal_threshold",
        ] {
            let err = Config::from_toml_str(&format!("[teleport.vector]\n{key} = 0\n"))
                .expect_err("zero");
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
        let tuned = Config::from_toml_str(
            "[teleport.vector]\nef_search = 400\nindex_threads = 2\nquery_threads = 1\n",
        )
        .expect("valid");
        assert_eq!(tuned.teleport.vector.ef_search, 400);
        assert_eq!(tuned.teleport.vector.index_threads, Some(2));
        assert_eq!(tuned.teleport.vector.query_threads, 1);
        let defaults = Config::default().teleport.vector;
        assert_eq!(
            (
                defaults.model_file.as_str(),
                defaults.query_model_file.as_str()
            ),
            ("model_int8.onnx", "model_int8.onnx")
        );
        for key in ["model_file", "query_model_file"] {
            let err = Config::from_toml_str(&format!("[teleport.vector]\n{key} = \" \"\n"))
                .expect_err("empty file name");
            assert!(err.to_string().contains(key), "{key}: {err}");
        }
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let err =
            Config::load(Some(Path::new("/nonexistent/agent-memory.toml"))).expect_err("missing");
        assert!(matches!(err, ConfigError::Missing { .. }));
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn environment_overrides_the_file() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "c.toml",
                "[nats]\nurl = \"nats://file:4222\"\n[ingest]\nmax_batch_events = 50\n",
            )?;
            jail.set_env("AGENT_MEMORY_NATS__URL", "nats://env:4222");
            jail.set_env("AGENT_MEMORY_STORE__DURABILITY", "buffer");
            let config = Config::load(Some(Path::new("c.toml"))).map_err(|e| e.to_string())?;
            assert_eq!(config.nats.url, "nats://env:4222");
            assert_eq!(config.store.durability, DurabilityConfig::Buffer);
            assert_eq!(config.ingest.max_batch_events, 50);
            jail.set_env("AGENT_MEMORY_NATS__URLL", "typo");
            let err = Config::load(Some(Path::new("c.toml"))).expect_err("unknown env key");
            assert!(err.to_string().contains("urll"), "{err}");
            Ok(())
        });
    }

    #[test]
    fn show_masks_secrets() {
        let mut config = Config::default();
        config.nats.token = Some("s3cret".into());
        config.llm.api_key = Some("sk-llm-s3cret".into());
        let shown = config.to_masked_toml();
        assert!(!shown.contains("s3cret"));
        assert!(shown.contains("********"));
        let reparsed: Config = toml::from_str(&shown).expect("masked toml parses");
        assert_eq!(reparsed.llm.api_key.as_deref(), Some("********"));
    }

    #[test]
    fn llm_section_parses_and_is_validated() {
        let config = Config::from_toml_str(
            "[llm]\nenabled = true\nbase_url = \"https://api.openai.com/v1\"\nmodel = \"gpt-4o-mini\"\n\
             timeout_ms = 5000\nmax_retries = 0\ntemperature = 0.2\n",
        )
        .expect("valid llm section");
        assert!(config.llm.enabled);
        assert_eq!(config.llm.base_url, "https://api.openai.com/v1");
        assert_eq!(config.llm.model, "gpt-4o-mini");
        assert_eq!(config.llm.timeout_ms, 5_000);
        assert_eq!(config.llm.max_retries, 0);
        assert!((config.llm.temperature - 0.2).abs() < 1e-9);
        assert_eq!(config.llm.max_tokens, 400, "unset keys keep their default");

        for (toml_text, key) in [
            ("[llm]\nbase_url = \"127.0.0.1:11434/v1\"\n", "llm.base_url"),
            ("[llm]\nmodel = \" \"\n", "llm.model"),
            ("[llm]\ntimeout_ms = 0\n", "llm.timeout_ms"),
            ("[llm]\nmax_tokens = 0\n", "llm.max_tokens"),
            ("[llm]\ntemperature = 3.5\n", "llm.temperature"),
        ] {
            let err = Config::from_toml_str(toml_text).expect_err(toml_text);
            assert!(err.to_string().contains(key), "{toml_text}: {err}");
        }
        let err = Config::from_toml_str("[llm]\ntimeout_secs = 3\n").expect_err("unknown key");
        assert!(err.to_string().contains("timeout_secs"), "{err}");
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn llm_environment_overrides_and_api_key_resolution() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("AGENT_MEMORY_LLM__MODEL", "qwen2.5:7b");
            jail.set_env("AGENT_MEMORY_LLM__ENABLED", "true");
            jail.set_env("AGENT_MEMORY_LLM__TIMEOUT_MS", "1500");
            jail.create_file("c.toml", "")?;
            let config = Config::load(Some(Path::new("c.toml"))).map_err(|e| e.to_string())?;
            assert_eq!(config.llm.model, "qwen2.5:7b");
            assert!(config.llm.enabled);
            assert_eq!(config.llm.timeout_ms, 1_500);

            let mut llm = LlmConfig {
                api_key_env: "AGENT_MEMORY_TEST_LLM_KEY".into(),
                ..LlmConfig::default()
            };
            assert_eq!(llm.resolve_api_key(), None, "variable unset");
            jail.set_env("AGENT_MEMORY_TEST_LLM_KEY", " ");
            assert_eq!(llm.resolve_api_key(), None, "blank variable");
            jail.set_env("AGENT_MEMORY_TEST_LLM_KEY", "sk-from-env");
            assert_eq!(llm.resolve_api_key().as_deref(), Some("sk-from-env"));
            llm.api_key = Some("sk-from-file".into());
            assert_eq!(llm.resolve_api_key().as_deref(), Some("sk-from-file"));
            Ok(())
        });
    }
}
