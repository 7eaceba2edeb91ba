//! The rule files: gitleaks' published patterns translated to Rust regex syntax
//! (`rules/gitleaks-derived.toml`, with its provenance) and agent-memory's own
//! (`rules/agent-memory.toml`), both compiled into the binary.

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use crate::RedactError;

/// The rules derived from gitleaks (MIT; see the file's header).
pub const GITLEAKS_DERIVED: &str = include_str!("../rules/gitleaks-derived.toml");
/// agent-memory's own rules: env dumps, HTTP headers, URL credentials, AWS secret keys.
pub const AGENT_MEMORY: &str = include_str!("../rules/agent-memory.toml");

/// Compiled size a single rule may take. Generous: gitleaks' generic rule is large and
/// is compiled once per process.
const RULE_SIZE_LIMIT: usize = 32 * 1024 * 1024;

#[derive(Deserialize)]
struct RuleFile {
    rules: Vec<RuleSpec>,
}

#[derive(Deserialize)]
struct RuleSpec {
    id: String,
    #[serde(default)]
    description: String,
    regex: String,
    #[serde(default)]
    secret_group: usize,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    entropy: Option<f64>,
}

/// One compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// gitleaks' id (or ours): the `<rule>` of `[REDACTED:<rule>:<tag>]` and the metric
    /// label.
    pub id: String,
    /// What it finds.
    pub description: String,
    /// The pattern.
    pub regex: Regex,
    /// The capture group that holds the secret (0: the whole match).
    pub secret_group: usize,
    /// Lowercase words one of which the text must hold for the rule to run.
    pub keywords: Vec<String>,
    /// A finding whose secret's Shannon entropy (bits per character) is at or below this
    /// is not a secret (gitleaks' semantics).
    pub entropy: Option<f64>,
}

/// Parses and compiles the rules of one TOML source; `name` is for errors.
///
/// # Errors
/// [`RedactError::Rules`] when the TOML does not parse or a regex does not compile or
/// names a group it does not have.
pub fn parse_rules(name: &str, source: &str) -> Result<Vec<Rule>, RedactError> {
    let file: RuleFile = toml::from_str(source).map_err(|err| RedactError::Rules {
        source_name: name.to_owned(),
        message: err.to_string(),
    })?;
    file.rules
        .into_iter()
        .map(|spec| {
            let regex = RegexBuilder::new(&spec.regex)
                .size_limit(RULE_SIZE_LIMIT)
                .build()
                .map_err(|err| RedactError::Rules {
                    source_name: name.to_owned(),
                    message: format!("rule {}: {err}", spec.id),
                })?;
            if spec.secret_group >= regex.captures_len() {
                return Err(RedactError::Rules {
                    source_name: name.to_owned(),
                    message: format!(
                        "rule {}: secret_group {} but the regex has {} groups",
                        spec.id,
                        spec.secret_group,
                        regex.captures_len() - 1
                    ),
                });
            }
            Ok(Rule {
                id: spec.id,
                description: spec.description,
                regex,
                secret_group: spec.secret_group,
                keywords: spec.keywords.iter().map(|k| k.to_lowercase()).collect(),
                entropy: spec.entropy,
            })
        })
        .collect()
}

/// Shannon entropy of `text`, bits per character (gitleaks' measure, over bytes).
#[must_use]
pub fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for byte in text.bytes() {
        counts[usize::from(byte)] += 1;
    }
    let length = text.len() as f64;
    counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let p = count as f64 / length;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shipped_files_compile() {
        let gitleaks = parse_rules("gitleaks-derived", GITLEAKS_DERIVED).expect("gitleaks");
        assert_eq!(gitleaks.len(), 100);
        let ours = parse_rules("agent-memory", AGENT_MEMORY).expect("ours");
        assert!(ours.iter().any(|rule| rule.id == "env-secret"));
        assert!(gitleaks.iter().all(|rule| !rule.keywords.is_empty()));
    }

    #[test]
    fn a_bad_rule_is_named() {
        let err =
            parse_rules("x", "[[rules]]\nid = \"broken\"\nregex = '(a'\n").expect_err("bad regex");
        assert!(err.to_string().contains("broken"), "{err}");
        let err = parse_rules(
            "x",
            "[[rules]]\nid = \"g\"\nregex = 'a'\nsecret_group = 2\n",
        )
        .expect_err("bad group");
        assert!(err.to_string().contains("secret_group 2"), "{err}");
    }

    #[test]
    fn entropy_is_gitleaks_measure() {
        assert!(shannon_entropy("aaaaaaaa") < 0.01);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        assert!(shannon_entropy("ghp_Zk3q9TfVx2Lm8RwYc4Hs7Jd1Pn6Bv0Ae5Ku") > 4.5);
    }
}
