//! Entity mentions in one sentence, in this order (a later pass never takes text an
//! earlier one took):
//! 1. file paths (`src/auth/jwt.ts`, `docs/adr/0004.md`, `values-prod.yaml`): a path
//!    with a known extension, or under a known root folder (`src/`, `docs/`, …);
//! 2. backticked code names and the shipped lexicon (see `lexicon`: aliases on word
//!    boundaries, ambiguous names only in a listed spelling);
//! 3. code identifiers: `snake_case`, `SCREAMING_CASE`, `camelCase`, `PascalCase` with
//!    two humps, `Type::path`;
//! 4. names: a capitalised word before a person's verb ("Marta reviews", "Priya from
//!    the mobile team") is a person; two or more capitalised words not opening the
//!    sentence and not in a stop list ("Northwind Logistics") are a concept.
//!
//! Each mention also says whether it was negated or replaced ("we don't use Redis",
//! "instead of bincode"), for contradictions. Canonical names and alias merging are
//! `entities::resolve`'s job when the change set is applied.

use std::sync::LazyLock;

use crate::change_set::EntityMention;
use crate::entities::canonical_key;
use crate::heuristic::intent::{is_negated, is_replaced};
use crate::heuristic::lexicon::{
    is_allowed_spelling, is_name_word, lexicon_entry, lexicon_mentions,
};
use crate::heuristic::pattern::Pattern;
use crate::heuristic::settings::is_identifier;
use crate::model::EntityType;

/// Most mentions kept per sentence.
pub(crate) const MAX_MENTIONS: usize = 8;

/// One mention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mention {
    /// The name as said.
    pub name: String,
    /// Its type.
    pub entity_type: EntityType,
    /// The lexicon's canonical key, or the name's.
    pub key: String,
    /// Whether the sentence negates or replaces it.
    pub is_negated: bool,
    /// Where it starts in the sentence (bytes).
    pub start: usize,
}

impl Mention {
    /// As a change-set mention.
    pub(crate) fn to_entity_mention(&self) -> EntityMention {
        EntityMention {
            name: self.name.clone(),
            entity_type: self.entity_type,
        }
    }
}

const EXTENSIONS: &[&str] = &[
    "rs", "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "go", "java", "kt", "rb", "md", "yaml",
    "yml", "toml", "json", "sql", "sh", "tf", "proto", "css", "scss", "html", "lock", "cfg", "ini",
    "txt", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "vue", "svelte", "env", "conf", "xml",
    "gradle", "php", "ex", "exs", "scala", "lua", "ipynb", "pem", "csv", "graphql",
];
const ROOTS: &[&str] = &[
    "src",
    "lib",
    "test",
    "tests",
    "docs",
    "doc",
    "web",
    "app",
    "apps",
    "crates",
    "packages",
    "scripts",
    "deploy",
    "config",
    "migrations",
    "bin",
    "cmd",
    "internal",
    "pkg",
    "spec",
    "benches",
    "examples",
    "public",
    "assets",
    "templates",
    "charts",
    "infra",
    ".github",
    "actors",
    "schemas",
    "data",
    "sample",
];

static FILE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?:^|[\s(\[`'\x22])((?:\.{1,2}/|~/)?(?:[A-Za-z0-9_@.-]+/)+[A-Za-z0-9_@.-]*[A-Za-z0-9_-](?:\.[A-Za-z0-9]+)?|[A-Za-z0-9_-][A-Za-z0-9_.-]*\.[A-Za-z0-9]{1,7})",
    )
});
static BACKTICKED: LazyLock<Pattern> = LazyLock::new(|| Pattern::new(r"`([^`\s]{2,80})`"));
static IDENTIFIER: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b(?:[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)\b",
    )
});
static PERSON: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b([A-Z][a-z]{2,})(?:\s+(?:from the|from|says|said|asked|asks|reviews|reviewed|approved|approves|wants|wanted|will|thinks|thought|mentioned|suggested|wrote|reported|pinged|owns|is on)\b)|\b(?:ask|asked|ping|pinged|tell|told|cc|thanks|reviewed by|approved by|written by|reported by)\s+([A-Z][a-z]{2,})\b",
    )
});
static CAPITALISED_RUN: LazyLock<Pattern> =
    LazyLock::new(|| Pattern::new(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b"));

/// The mentions of one sentence, at most [`MAX_MENTIONS`].
pub(crate) fn mentions(sentence: &str) -> Vec<Mention> {
    let mut found = Found::new(sentence);
    // Cheap byte checks skip the patterns that cannot match (most sentences have no
    // path, no code span and at most one capital): the engine runs them on every
    // sentence.
    let bytes = sentence.as_bytes();
    let may_name_file = bytes.iter().enumerate().any(|(index, &byte)| {
        byte == b'/'
            || (byte == b'.' && bytes.get(index + 1).is_some_and(u8::is_ascii_alphanumeric))
    });
    let num_capitals = bytes
        .iter()
        .filter(|byte| byte.is_ascii_uppercase())
        .count();
    let files = if may_name_file { usize::MAX } else { 0 };
    let code_spans = if bytes.contains(&b'`') { usize::MAX } else { 0 };
    let capitalised_runs = if num_capitals >= 2 { usize::MAX } else { 0 };
    // `take(0)` never searches.
    for captures in FILE.captures_iter(sentence).take(files) {
        let Some(path) = captures.get(1) else {
            continue;
        };
        if is_file_path(path.as_str()) {
            found.push(path.start(), path.end(), path.as_str(), EntityType::File);
        }
    }
    for captures in BACKTICKED.captures_iter(sentence).take(code_spans) {
        let Some(code) = captures.get(1) else {
            continue;
        };
        let name = code_name(code.as_str());
        if let Some(entry) = lexicon_entry(name)
            && is_allowed_spelling(name)
        {
            found.push(code.start(), code.end(), name, entry.entity_type);
        } else if is_identifier(name) || name.contains("::") {
            found.push(code.start(), code.end(), name, EntityType::Concept);
        }
    }
    for (start, end, entity_type) in lexicon_mentions(sentence) {
        found.push(start, end, &sentence[start..end], entity_type);
    }
    for matched in IDENTIFIER.find_iter(sentence) {
        let name = matched.as_str();
        if name.len() >= 4 && lexicon_entry(name).is_none() {
            found.push(matched.start(), matched.end(), name, EntityType::Concept);
        }
    }
    for captures in PERSON.captures_iter(sentence) {
        let Some(name) = captures.get(1).or_else(|| captures.get(2)) else {
            continue;
        };
        if is_name_word(name.as_str()) {
            found.push(name.start(), name.end(), name.as_str(), EntityType::Person);
        }
    }
    for run in CAPITALISED_RUN.find_iter(sentence).take(capitalised_runs) {
        let mut start = run.start();
        let mut text = run.as_str();
        if sentence[..start].trim_end().is_empty()
            && let Some((_, rest)) = text.split_once(char::is_whitespace)
        {
            start = run.end() - rest.len();
            text = rest.trim_start();
            start += rest.len() - text.len();
        }
        if text.split_whitespace().count() >= 2 && text.split_whitespace().all(is_name_word) {
            found.push(start, start + text.len(), text, EntityType::Concept);
        }
    }
    let mut found_mentions = found.mentions;
    found_mentions.sort_by_key(|mention| mention.start);
    found_mentions
}

/// The key a mention is compared by: the lexicon's canonical name folded, else the
/// name folded.
pub(crate) fn mention_key(name: &str) -> String {
    match lexicon_entry(name) {
        Some(entry) => canonical_key(&entry.name),
        None => canonical_key(name),
    }
}

struct Found<'a> {
    sentence: &'a str,
    taken: Vec<(usize, usize)>,
    mentions: Vec<Mention>,
}

impl<'a> Found<'a> {
    fn new(sentence: &'a str) -> Self {
        Found {
            sentence,
            taken: Vec::new(),
            mentions: Vec::new(),
        }
    }

    fn push(&mut self, start: usize, end: usize, name: &str, entity_type: EntityType) {
        if self.mentions.len() >= MAX_MENTIONS
            || self
                .taken
                .iter()
                .any(|(taken_start, taken_end)| start < *taken_end && *taken_start < end)
        {
            return;
        }
        self.taken.push((start, end));
        let key = mention_key(name);
        if key.is_empty() || self.mentions.iter().any(|mention| mention.key == key) {
            return;
        }
        let before = self.sentence[..start].to_lowercase();
        self.mentions.push(Mention {
            name: name.to_owned(),
            entity_type,
            key,
            is_negated: is_negated(&before) || is_replaced(&before),
            start,
        });
    }
}

fn is_file_path(path: &str) -> bool {
    if path.contains("://") || path.starts_with("http") {
        return false;
    }
    let last = path.rsplit('/').next().unwrap_or(path);
    let extension_opt = last
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_lowercase());
    let has_extension = extension_opt
        .as_deref()
        .is_some_and(|extension| EXTENSIONS.contains(&extension));
    if !path.contains('/') {
        return has_extension
            && lexicon_entry(path).is_none()
            && last.chars().next().is_some_and(char::is_alphabetic);
    }
    let root = path
        .trim_start_matches("./")
        .trim_start_matches("../")
        .split('/')
        .next()
        .unwrap_or("");
    has_extension || ROOTS.contains(&root)
}

/// A backticked span as a name: a call's `()`, a version's `@5`, an assignment's
/// value dropped.
fn code_name(code: &str) -> &str {
    let code = code.split('=').next().unwrap_or(code);
    let code = match code.find('@') {
        Some(at) if at > 0 => &code[..at],
        _ => code,
    };
    code.trim_end_matches("()")
        .trim_end_matches([',', '.', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sentence: &str) -> Vec<(String, EntityType)> {
        mentions(sentence)
            .into_iter()
            .map(|mention| (mention.name, mention.entity_type))
            .collect()
    }

    fn has(sentence: &str, name: &str, entity_type: EntityType) -> bool {
        names(sentence)
            .iter()
            .any(|(found, found_type)| found == name && *found_type == entity_type)
    }

    #[test]
    fn paths_identifiers_and_lexicon_names_are_found() {
        let sentence = "Move signing into `src/auth/jwt.ts` (see src/app.ts:47) and read \
                        refresh_token_ttl via getConfig() from Postgres, not `jsonwebtoken@8.5.1`.";
        let found = names(sentence);
        assert!(
            has(sentence, "src/auth/jwt.ts", EntityType::File),
            "{found:?}"
        );
        assert!(has(sentence, "src/app.ts", EntityType::File), "{found:?}");
        assert!(
            has(sentence, "refresh_token_ttl", EntityType::Concept),
            "{found:?}"
        );
        assert!(has(sentence, "getConfig", EntityType::Concept), "{found:?}");
        assert!(
            has(sentence, "Postgres", EntityType::Technology),
            "{found:?}"
        );
        assert!(
            has(sentence, "jsonwebtoken", EntityType::Technology),
            "{found:?}"
        );
    }

    #[test]
    fn ambiguous_aliases_need_their_spelling_and_not_the_sentence_start() {
        assert!(
            names("Go with rate-limiter-flexible.")
                .iter()
                .all(|(name, _)| name != "Go")
        );
        assert!(has(
            "The service is written in Go and Rust.",
            "Go",
            EntityType::Technology
        ));
        assert!(names("let's go ahead and rest a bit, the cache is warm").is_empty());
        assert!(has(
            "With `true`, Express would trust the header.",
            "Express",
            EntityType::Technology
        ));
        assert!(!has(
            "see notes.md and run it with sh",
            "sh",
            EntityType::Technology
        ));
    }

    #[test]
    fn postgres_spellings_all_fold_to_one_key() {
        for spelling in ["Postgres", "PostgreSQL", "postgres"] {
            let found = mentions(&format!("We store it in {spelling} for now."));
            assert_eq!(found.len(), 1, "{spelling}: {found:?}");
            assert_eq!(found[0].key, "postgresql");
        }
    }

    #[test]
    fn people_and_multi_word_names_are_found_only_when_clearly_names() {
        assert!(has(
            "No, Marta reviews every migration.",
            "Marta",
            EntityType::Person
        ));
        assert!(has(
            "Priya from the mobile team says it breaks.",
            "Priya",
            EntityType::Person
        ));
        assert!(has(
            "Customer escalation: Northwind Logistics got 429s.",
            "Northwind Logistics",
            EntityType::Concept
        ));
        assert!(names("Security flagged it. This will Happen Today.").is_empty());
        assert!(names("Test Suites passed.").is_empty());
    }

    #[test]
    fn negated_and_replaced_mentions_are_marked() {
        let found = mentions("We don't use Redis anymore, we switched from bincode to postcard.");
        let negated: Vec<&str> = found
            .iter()
            .filter(|mention| mention.is_negated)
            .map(|mention| mention.name.as_str())
            .collect();
        assert_eq!(negated, ["Redis", "bincode"], "{found:?}");
    }
}
