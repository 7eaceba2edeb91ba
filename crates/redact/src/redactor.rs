//! The redactor: every rule compiled once, a keyword prefilter (Aho-Corasick, ASCII case
//! insensitive) that says which rules can match a text at all, then those rules'
//! captures. Not one `RegexSet` pass over all rules: measured on the sample's 570
//! events, a set of the 104 rules took 1.07 s a pass (its lazy DFA thrashes and falls
//! back to the PikeVM) where the rules one by one took 31 ms, all of them, before the
//! prefilter leaves out most (docs/benchmarks.md, "Redaction"). Findings are replaced by
//! `[REDACTED:<rule>:<tag>]`, the tag being a keyed hash of the secret, so the same
//! secret is recognisable across events without being stored.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use hmac::{Hmac, Mac};
use memory_types::{Event, EventKind};
use regex::Regex;
use sha2::Sha256;

use crate::RedactError;
use crate::metrics::REDACT_METRICS;
use crate::rules::{AGENT_MEMORY, GITLEAKS_DERIVED, Rule, parse_rules, shannon_entropy};

/// Metadata key the daemon writes on an event it redacted: `rule=count,…` (reserved: a
/// producer's value is dropped).
pub const REDACTIONS_KEY: &str = "redactions";
/// Metadata key naming the file a `tool_result` read (set by the hooks and importers):
/// the whole result of reading a secrets file is redacted.
pub const FILE_PATH_KEY: &str = "file_path";
/// Metadata key holding a shell command (a `Bash` tool's input): `cat .env` and the like
/// make the whole result a secrets file's content.
pub const COMMAND_KEY: &str = "command";

/// Rule id of a whole secrets file's content.
pub const SENSITIVE_FILE: &str = "sensitive-file";
/// Rule id of a `<private>…</private>` span (removed, not tagged).
pub const PRIVATE_TAG: &str = "private-tag";

/// Hex characters of the keyed hash in a tag: 32 bits, enough to tell secrets apart in
/// one memory, too few to test guesses against.
const TAG_HEX: usize = 8;
/// The first [`TAG_HEX`] hex characters of HMAC-SHA256 of `secret` under `key`: the
/// same text gets the same tag under one data dir's key, and the tag cannot be reversed.
#[must_use]
pub fn keyed_tag(key: &[u8], secret: &str) -> String {
    // HMAC accepts a key of any length; `new_from_slice` cannot fail for it.
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(secret.as_bytes());
            let digest = mac.finalize().into_bytes();
            digest
                .iter()
                .take(TAG_HEX / 2)
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        }
        Err(_) => "0".repeat(TAG_HEX),
    }
}

/// gitleaks' generic rule: a value made only of letters, `_`, `.` and `-` is an
/// identifier (`default_branch`), not a secret — gitleaks' own allow-list does this.
const IDENTIFIER_RULES: &[&str] = &["generic-api-key"];

/// What one text or event lost: findings per rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings(BTreeMap<String, u32>);

impl Findings {
    /// Nothing was redacted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Findings of `rule`.
    #[must_use]
    pub fn count(&self, rule: &str) -> u32 {
        self.0.get(rule).copied().unwrap_or(0)
    }

    /// All findings.
    #[must_use]
    pub fn total(&self) -> u32 {
        self.0.values().sum()
    }

    /// Per rule, in rule order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.0.iter().map(|(rule, count)| (rule.as_str(), *count))
    }

    fn add(&mut self, rule: &str, count: u32) {
        *self.0.entry(rule.to_owned()).or_insert(0) += count;
    }

    fn merge(&mut self, other: Findings) {
        for (rule, count) in other.0 {
            self.add(&rule, count);
        }
    }
}

/// `rule=count,rule=count`: the value of [`REDACTIONS_KEY`].
impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (rule, count) in &self.0 {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{rule}={count}")?;
        }
        Ok(())
    }
}

/// The compiled rules and the tag key; cheap to clone (the rules are shared).
#[derive(Clone)]
pub struct Redactor {
    compiled: Arc<Compiled>,
    key: Arc<[u8]>,
}

/// Everything compiled from the rules.
struct Compiled {
    rules: Vec<Rule>,
    keywords: AhoCorasick,
    /// Per keyword of `keywords`, the rules it gates.
    keyword_rules: Vec<Vec<usize>>,
    private: Regex,
}

/// The shipped rules, compiled once per process (about a second in a debug build).
static SHIPPED: OnceLock<Result<Arc<Compiled>, String>> = OnceLock::new();

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.compiled.rules.len())
            .finish_non_exhaustive()
    }
}

impl Redactor {
    /// The shipped rules (gitleaks-derived and ours) with `key` for the tags.
    ///
    /// # Errors
    /// When a shipped rule does not compile (a build defect; tested).
    pub fn shipped(key: &[u8]) -> Result<Redactor, RedactError> {
        if key.is_empty() {
            return Err(RedactError::Key("the tag key is empty".to_owned()));
        }
        let compiled = SHIPPED.get_or_init(|| {
            let compile = || -> Result<Compiled, RedactError> {
                let mut rules = parse_rules("gitleaks-derived.toml", GITLEAKS_DERIVED)?;
                rules.extend(parse_rules("agent-memory.toml", AGENT_MEMORY)?);
                Compiled::new(rules)
            };
            compile().map(Arc::new).map_err(|err| err.to_string())
        });
        match compiled {
            Ok(compiled) => Ok(Redactor {
                compiled: Arc::clone(compiled),
                key: Arc::from(key),
            }),
            Err(message) => Err(RedactError::Rules {
                source_name: "shipped".to_owned(),
                message: message.clone(),
            }),
        }
    }

    /// A redactor over `rules`.
    ///
    /// # Errors
    /// When the keywords do not build a prefilter, or the key is empty.
    pub fn new(rules: Vec<Rule>, key: &[u8]) -> Result<Redactor, RedactError> {
        if key.is_empty() {
            return Err(RedactError::Key("the tag key is empty".to_owned()));
        }
        Ok(Redactor {
            compiled: Arc::new(Compiled::new(rules)?),
            key: Arc::from(key),
        })
    }

    /// The rules' ids, in order.
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.compiled.rules.iter().map(|rule| rule.id.as_str())
    }
}

impl Compiled {
    fn new(rules: Vec<Rule>) -> Result<Compiled, RedactError> {
        let mut words: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            for keyword in &rule.keywords {
                match words.iter().position(|word| word == keyword) {
                    Some(at) => keyword_rules[at].push(index),
                    None => {
                        words.push(keyword.clone());
                        keyword_rules.push(vec![index]);
                    }
                }
            }
        }
        let keywords = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&words)
            .map_err(|err| RedactError::Rules {
                source_name: "the keywords".to_owned(),
                message: err.to_string(),
            })?;
        let private = Regex::new(r"(?is)<private>.*?(?:</private>|\z)").map_err(|err| {
            RedactError::Rules {
                source_name: "private tags".to_owned(),
                message: err.to_string(),
            }
        })?;
        Ok(Compiled {
            rules,
            keywords,
            keyword_rules,
            private,
        })
    }
}

impl Redactor {
    /// `[REDACTED:<rule>:<tag>]` for `secret`.
    #[must_use]
    pub fn tag(&self, rule: &str, secret: &str) -> String {
        format!("[REDACTED:{rule}:{}]", keyed_tag(&self.key, secret))
    }

    /// `text` without its secrets and `<private>` spans, and what was taken out. Does
    /// not count in the metrics (see [`Redactor::redact_event`]).
    #[must_use]
    /// Borrows `text` when nothing was found: the usual case costs no copy.
    pub fn redact_text<'a>(&self, text: &'a str) -> (Cow<'a, str>, Findings) {
        let mut findings = Findings::default();
        let without_private = if text.contains('<') && self.compiled.private.is_match(text) {
            let removed = self.compiled.private.find_iter(text).count();
            findings.add(PRIVATE_TAG, u32::try_from(removed).unwrap_or(u32::MAX));
            self.compiled.private.replace_all(text, "")
        } else {
            Cow::Borrowed(text)
        };
        let (redacted, secrets) = self.redact_secrets(&without_private);
        if secrets.is_empty() {
            return (without_private, findings);
        }
        findings.merge(secrets);
        (Cow::Owned(redacted), findings)
    }

    /// The text with its secrets tagged (empty when none was found) and the findings.
    fn redact_secrets(&self, text: &str) -> (String, Findings) {
        let mut findings = Findings::default();
        // The prefilter: which rules have a keyword in the text.
        let mut candidate = vec![false; self.compiled.rules.len()];
        let mut any = false;
        for found in self.compiled.keywords.find_overlapping_iter(text) {
            for &rule in &self.compiled.keyword_rules[found.pattern().as_usize()] {
                candidate[rule] = true;
                any = true;
            }
        }
        if !any {
            return (String::new(), findings);
        }
        // The candidates' captures.
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for index in (0..candidate.len()).filter(|&i| candidate[i]) {
            let rule = &self.compiled.rules[index];
            for captures in rule.regex.captures_iter(text) {
                let Some(secret) = captures.get(rule.secret_group) else {
                    continue;
                };
                if secret.as_str().is_empty() {
                    continue;
                }
                if let Some(threshold) = rule.entropy
                    && shannon_entropy(secret.as_str()) <= threshold
                {
                    continue;
                }
                if IDENTIFIER_RULES.contains(&rule.id.as_str())
                    && secret
                        .as_str()
                        .bytes()
                        .all(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'.' || b == b'-')
                {
                    continue;
                }
                spans.push((secret.start(), secret.end(), index));
            }
        }
        if spans.is_empty() {
            return (String::new(), findings);
        }
        // Earliest first, the longest of those starting together; a span overlapping a
        // kept one is dropped (its secret is already gone).
        spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end, index) in spans {
            if start < at {
                continue;
            }
            let rule = &self.compiled.rules[index];
            out.push_str(&text[at..start]);
            out.push_str(&self.tag(&rule.id, &text[start..end]));
            findings.add(&rule.id, 1);
            at = end;
        }
        out.push_str(&text[at..]);
        (out, findings)
    }

    /// Redacts `event` in place before it is stored: its text (all of it when it is the
    /// result of reading a secrets file), its metadata values; writes
    /// [`REDACTIONS_KEY`] and counts `memory_redactions_total{rule}`.
    pub fn redact_event(&self, event: &mut Event) -> Findings {
        let mut findings = Findings::default();
        event.metadata.remove(REDACTIONS_KEY);
        if event.kind == EventKind::ToolResult
            && !event.text.is_empty()
            && reads_secrets_file(&event.metadata)
        {
            event.text = self.tag(SENSITIVE_FILE, &event.text);
            findings.add(SENSITIVE_FILE, 1);
        } else if event.kind == EventKind::ToolCall
            && let Some(file) = writes_secrets_file(&event.text, &event.metadata)
        {
            // Writing or editing a secrets file: what is written is the secret. The
            // event keeps which tool and which file; the content becomes one tag.
            let tool = event
                .text
                .split_once(':')
                .map_or("tool", |(tool, _)| tool.trim())
                .to_owned();
            let tag = self.tag(SENSITIVE_FILE, &event.text);
            event.text = format!("{tool}: {file} {tag}");
            findings.add(SENSITIVE_FILE, 1);
        } else {
            let (text, found) = self.redact_text(&event.text);
            if !found.is_empty() {
                event.text = text.into_owned();
                findings.merge(found);
            }
        }
        for value in event.metadata.values_mut() {
            let (text, found) = self.redact_text(value);
            if !found.is_empty() {
                *value = text.into_owned();
                findings.merge(found);
            }
        }
        if !findings.is_empty() {
            for (rule, count) in findings.iter() {
                REDACT_METRICS
                    .redactions
                    .with_label_values(&[rule])
                    .inc_by(u64::from(count));
            }
            event
                .metadata
                .insert(REDACTIONS_KEY.to_owned(), findings.to_string());
        }
        findings
    }
}

/// The secrets file a tool call writes content into, if any: its `file_path` is one and
/// its input carries content (`content`, `old_string`/`new_string`, `edits`,
/// `new_source`), or it is a patch (`*** Add File:` / `*** Update File:`) that touches
/// one. A call that only names the file (a `Read`) keeps its text.
fn writes_secrets_file(text: &str, metadata: &BTreeMap<String, String>) -> Option<String> {
    const CONTENT_KEYS: &[&str] = &[
        "\"content\"",
        "\"new_string\"",
        "\"old_string\"",
        "\"edits\"",
        "\"new_source\"",
    ];
    if let Some(path) = metadata
        .get(FILE_PATH_KEY)
        .filter(|path| is_secrets_file(path))
        && CONTENT_KEYS.iter().any(|key| text.contains(key))
    {
        return Some(path.clone());
    }
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            line.strip_prefix("*** Add File:")
                .or_else(|| line.strip_prefix("*** Update File:"))
        })
        .map(str::trim)
        .find(|path| is_secrets_file(path))
        .map(str::to_owned)
}

/// Whether a tool result is a secrets file's content: its `file_path` is one, or its
/// `command` prints one (`cat .env`).
fn reads_secrets_file(metadata: &BTreeMap<String, String>) -> bool {
    if metadata
        .get(FILE_PATH_KEY)
        .is_some_and(|path| is_secrets_file(path))
    {
        return true;
    }
    let Some(command) = metadata.get(COMMAND_KEY) else {
        return false;
    };
    const READERS: &[&str] = &[
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "bat",
        "type",
        "Get-Content",
        "gc",
        "printenv",
        "env",
        "xxd",
        "strings",
    ];
    command.split(['|', ';', '&']).any(|part| {
        let mut words = part.split_whitespace();
        let Some(program) = words.next() else {
            return false;
        };
        let program = program.rsplit('/').next().unwrap_or(program);
        if program == "printenv" || program == "env" {
            // An environment dump: the env-secret rule takes its secrets line by line.
            return false;
        }
        READERS.contains(&program)
            && words.any(|word| is_secrets_file(word.trim_matches(['"', '\''])))
    })
}

/// Whether `path` names a file that holds secrets by its name: `.env` (not its
/// templates), keys and certificates, SSH private keys, credential and token files.
#[must_use]
pub fn is_secrets_file(path: &str) -> bool {
    let name = path
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(path)
        .to_ascii_lowercase();
    if name == ".env" || name.starts_with(".env.") {
        return !matches!(
            name.as_str(),
            ".env.example" | ".env.sample" | ".env.template" | ".env.dist" | ".env.defaults"
        );
    }
    let by_name = matches!(
        name.as_str(),
        "credentials"
            | "credentials.json"
            | ".git-credentials"
            | ".netrc"
            | "_netrc"
            | ".npmrc"
            | ".pypirc"
            | ".pgpass"
            | "secrets.yaml"
            | "secrets.yml"
            | "secrets.json"
            | "service-account.json"
            | "id_rsa"
            | "id_dsa"
            | "id_ecdsa"
            | "id_ed25519"
    );
    let by_extension = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk"]
        .iter()
        .any(|extension| name.ends_with(extension));
    by_name || by_extension
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::shipped(b"test key").expect("shipped rules")
    }

    #[test]
    fn a_secret_becomes_a_keyed_tag_and_stays_recognisable() {
        let redactor = redactor();
        let key = "ghp_Zk3q9TfVx2Lm8RwYc4Hs7Jd1Pn6Bv0Ae5Ku2";
        let key = &key[..40];
        let sent = format!("token is {key} ok");
        let (text, findings) = redactor.redact_text(&sent);
        assert!(!text.contains(key), "{text}");
        assert_eq!(findings.count("github-pat"), 1, "{findings:?}");
        let tag = redactor.tag("github-pat", key);
        assert!(text.contains(&tag), "{text}");
        let sent_again = format!("again: {key}");
        let (again, _) = redactor.redact_text(&sent_again);
        assert!(again.contains(&tag));
        let other = Redactor::shipped(b"another key").expect("rules");
        assert_ne!(other.tag("github-pat", key), tag, "the tag is keyed");
    }

    #[test]
    fn private_spans_are_removed_even_unclosed() {
        let redactor = redactor();
        let (text, findings) =
            redactor.redact_text("keep <private>my diary</private> this <PRIVATE>and not this");
        assert_eq!(text, "keep  this ");
        assert_eq!(findings.count(PRIVATE_TAG), 2);
    }

    #[test]
    fn identifiers_are_not_generic_secrets() {
        let redactor = redactor();
        let (text, findings) = redactor.redact_text("api_key = default_branch_name");
        assert!(findings.is_empty(), "{text} {findings:?}");
    }

    #[test]
    fn secrets_files_by_name() {
        for path in [
            ".env",
            "/srv/app/.env.production",
            "C:\\Users\\me\\.ssh\\id_rsa",
            "certs/server.PEM",
            "/home/me/.aws/credentials",
            ".npmrc",
        ] {
            assert!(is_secrets_file(path), "{path}");
        }
        for path in [
            ".env.example",
            "src/env.rs",
            "README.md",
            "keys.rs",
            "id_rsa.pub",
        ] {
            assert!(!is_secrets_file(path), "{path}");
        }
    }

    fn tool_call(text: &str, file_path: Option<&str>) -> Event {
        Event {
            event_id: "c".into(),
            session_id: "s".into(),
            project_id: "p".into(),
            agent_id: None,
            timestamp_ms: 1,
            kind: EventKind::ToolCall,
            role: memory_types::Role::Assistant,
            text: text.into(),
            metadata: file_path
                .map(|path| BTreeMap::from([(FILE_PATH_KEY.to_owned(), path.to_owned())]))
                .unwrap_or_default(),
        }
    }

    #[test]
    fn writing_a_secrets_file_redacts_what_is_written() {
        let redactor = redactor();
        let secret = "db-pass-Zq8vR2kLw9";
        for (text, path) in [
            (
                format!(r#"Write: {{"file_path":"/app/.env","content":"DB_PASS={secret}\n"}}"#),
                Some("/app/.env"),
            ),
            (
                format!(
                    r#"Edit: {{"file_path":"/app/.env","old_string":"X=1","new_string":"X={secret}"}}"#
                ),
                Some("/app/.env"),
            ),
            (
                format!(
                    "apply_patch: *** Begin Patch\n*** Add File: config/.env.production\n+TOKEN={secret}\n*** End Patch"
                ),
                None,
            ),
        ] {
            let mut event = tool_call(&text, path);
            let findings = redactor.redact_event(&mut event);
            assert_eq!(findings.count(SENSITIVE_FILE), 1, "{text}");
            assert!(!event.text.contains(secret), "{}", event.text);
            assert!(
                event.text.contains("[REDACTED:sensitive-file:"),
                "{}",
                event.text
            );
        }
        // Only naming the file (a read) keeps the call; a template is no secrets file.
        let mut read = tool_call(r#"Read: {"file_path":"/app/.env"}"#, Some("/app/.env"));
        redactor.redact_event(&mut read);
        assert_eq!(read.text, r#"Read: {"file_path":"/app/.env"}"#);
        let sample = r#"Write: {"file_path":"/app/.env.example","content":"DB_PASS=changeme"}"#;
        let mut template = tool_call(sample, Some("/app/.env.example"));
        redactor.redact_event(&mut template);
        assert_eq!(template.text, sample);
    }

    #[test]
    fn reading_a_secrets_file_redacts_the_whole_result() {
        let redactor = redactor();
        let mut event = Event {
            event_id: "e".into(),
            session_id: "s".into(),
            project_id: "p".into(),
            agent_id: None,
            timestamp_ms: 1,
            kind: EventKind::ToolResult,
            role: memory_types::Role::Tool,
            text: "DB_HOST=localhost\nFEATURE_FLAG=on".into(),
            metadata: BTreeMap::from([
                (COMMAND_KEY.to_owned(), "cat ./.env | grep DB".to_owned()),
                (REDACTIONS_KEY.to_owned(), "forged=1".to_owned()),
            ]),
        };
        let findings = redactor.redact_event(&mut event);
        assert_eq!(findings.count(SENSITIVE_FILE), 1);
        assert!(
            event.text.starts_with("[REDACTED:sensitive-file:"),
            "{}",
            event.text
        );
        assert_eq!(event.metadata[REDACTIONS_KEY], "sensitive-file=1");
    }
}
