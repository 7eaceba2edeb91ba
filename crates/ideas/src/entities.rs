//! Entity names to entities: [`canonical_key`] folds spelling ("Postgres", "postgres",
//! "POSTGRES" → `postgres`), the shipped [`Lexicon`] maps known aliases to one canonical
//! name ("postgres", "pg", "PostgreSQL" → PostgreSQL), and [`resolve`] links a mention
//! to an existing entity of the project — by key, by alias, or by a name that matches
//! an existing one above [`FUZZY_LINK_THRESHOLD`] — or describes a new one.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::extractor::{GraphError, GraphView};
use crate::model::{Entity, EntityType, entity_id};

/// A name matching an existing entity's name above this similarity links to it (the
/// design's "> 80 %").
pub const FUZZY_LINK_THRESHOLD: f64 = 0.8;

/// Shortest key the fuzzy match considers: below it one letter is too much of the name
/// ("api" vs "apis" is close, "ts" vs "js" is not the same thing).
const FUZZY_MIN_KEY_CHARS: usize = 5;

/// Most entities of a project the fuzzy match compares a new name with.
const FUZZY_CANDIDATES: usize = 2_000;

/// The spelling-free form of a name: lowercase; letters, digits and `+ # .` kept (C++,
/// C#, Node.js); separators (space, `-`, `_`) removed, so "refresh_token", "refresh
/// token" and "Refresh-Token" are one key. File paths keep their separators: a path is
/// its own identity.
#[must_use]
pub fn canonical_key(name: &str) -> String {
    let trimmed = name
        .trim()
        .trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | ';' | ':'));
    if trimmed.contains('/') {
        return trimmed.to_lowercase();
    }
    let mut key: String = trimmed
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '+' | '#' | '.'))
        .flat_map(char::to_lowercase)
        .collect();
    while key.ends_with('.') {
        key.pop();
    }
    key
}

/// One lexicon entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexiconEntry {
    /// The canonical name.
    pub name: String,
    /// Its type.
    pub entity_type: EntityType,
    /// Its aliases as written in the data file.
    pub aliases: Vec<String>,
}

/// The curated lexicon shipped as data (`data/technologies.tsv`).
#[derive(Clone, Debug, Default)]
pub struct Lexicon {
    entries: Vec<LexiconEntry>,
    by_key: BTreeMap<String, usize>,
}

const LEXICON_DATA: &str = include_str!("../data/technologies.tsv");

static SHIPPED: LazyLock<Lexicon> = LazyLock::new(|| Lexicon::parse(LEXICON_DATA));

impl Lexicon {
    /// The shipped lexicon.
    #[must_use]
    pub fn shipped() -> &'static Lexicon {
        &SHIPPED
    }

    /// Parses the TSV format (name, type, comma-separated aliases); lines that do not
    /// parse are ignored (a test checks the shipped file has none).
    #[must_use]
    pub fn parse(data: &str) -> Lexicon {
        let mut lexicon = Lexicon::default();
        for line in data.lines() {
            if let Some(entry) = parse_line(line) {
                let index = lexicon.entries.len();
                lexicon.by_key.insert(canonical_key(&entry.name), index);
                for alias in &entry.aliases {
                    lexicon.by_key.entry(canonical_key(alias)).or_insert(index);
                }
                lexicon.entries.push(entry);
            }
        }
        lexicon
    }

    /// The entry a name is an alias or the canonical name of.
    #[must_use]
    pub fn lookup(&self, name: &str) -> Option<&LexiconEntry> {
        self.by_key
            .get(&canonical_key(name))
            .map(|index| &self.entries[*index])
    }

    /// Every entry.
    #[must_use]
    pub fn entries(&self) -> &[LexiconEntry] {
        &self.entries
    }
}

fn parse_line(line: &str) -> Option<LexiconEntry> {
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split('\t');
    let name = fields.next()?.trim();
    let entity_type = fields.next()?.trim().parse().ok()?;
    let aliases = fields
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|alias| !alias.is_empty())
        .map(str::to_owned)
        .collect();
    (!name.is_empty()).then(|| LexiconEntry {
        name: name.to_owned(),
        entity_type,
        aliases,
    })
}

/// What a mention resolves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// An entity the project has; `alias` is a new name for it to remember.
    Existing {
        /// The entity.
        entity: Entity,
        /// The mention's name when the entity did not know it yet.
        alias: Option<String>,
    },
    /// A new entity.
    New(Entity),
}

impl Resolved {
    /// The entity's id.
    #[must_use]
    pub fn entity_id(&self) -> &str {
        match self {
            Resolved::Existing { entity, .. } | Resolved::New(entity) => &entity.entity_id,
        }
    }
}

/// Resolves the mention `name` of type `entity_type` in `project_id`: the lexicon's
/// canonical name first, then an entity with that key or alias, then the closest name
/// above [`FUZZY_LINK_THRESHOLD`] (files only match files), else a new entity first
/// seen at `seen_ms`. `None` for a name with nothing left after folding.
///
/// # Errors
/// Graph read failures.
pub fn resolve(
    graph: &dyn GraphView,
    lexicon: &Lexicon,
    project_id: &str,
    name: &str,
    entity_type: EntityType,
    seen_ms: u64,
) -> Result<Option<Resolved>, GraphError> {
    let said = name.trim();
    let (canonical, entity_type) = match lexicon.lookup(said) {
        Some(entry) => (entry.name.as_str(), entry.entity_type),
        None => (said, entity_type),
    };
    let key = canonical_key(canonical);
    if key.is_empty() {
        return Ok(None);
    }
    let said_key = canonical_key(said);
    let alias_for = |entity: &Entity| {
        (canonical_key(&entity.name) != said_key
            && !entity
                .aliases
                .iter()
                .any(|alias| canonical_key(alias) == said_key))
        .then(|| said.to_owned())
    };
    for probe in [&key, &said_key] {
        if let Some(entity) = graph.entity_by_key(project_id, probe)? {
            let alias = alias_for(&entity);
            return Ok(Some(Resolved::Existing { entity, alias }));
        }
    }
    if key.chars().count() >= FUZZY_MIN_KEY_CHARS {
        let mut best: Option<(f64, Entity)> = None;
        for entity in graph.search_entities(project_id, "", FUZZY_CANDIDATES)? {
            if (entity.entity_type == EntityType::File) != (entity_type == EntityType::File) {
                continue;
            }
            let score = strsim::normalized_levenshtein(&key, &entity.key);
            if score > FUZZY_LINK_THRESHOLD && best.as_ref().is_none_or(|(top, _)| score > *top) {
                best = Some((score, entity));
            }
        }
        if let Some((_, entity)) = best {
            let alias = alias_for(&entity);
            return Ok(Some(Resolved::Existing { entity, alias }));
        }
    }
    let mut aliases = Vec::new();
    if said != canonical {
        aliases.push(said.to_owned());
    }
    Ok(Some(Resolved::New(Entity {
        entity_id: entity_id(project_id, &key),
        project_id: project_id.to_owned(),
        name: canonical.to_owned(),
        key,
        entity_type,
        aliases,
        first_seen_ms: seen_ms,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory_graph::MemoryGraph;

    #[test]
    fn keys_fold_spelling_but_keep_paths() {
        assert_eq!(canonical_key("Postgres"), "postgres");
        assert_eq!(canonical_key(" refresh_token_ttl "), "refreshtokenttl");
        assert_eq!(canonical_key("Refresh-Token TTL"), "refreshtokenttl");
        assert_eq!(canonical_key("C++"), "c++");
        assert_eq!(canonical_key("Node.js"), "node.js");
        assert_eq!(canonical_key("`src/auth/jwt.ts`"), "src/auth/jwt.ts");
        assert_eq!(canonical_key("--"), "");
    }

    #[test]
    fn the_shipped_lexicon_parses_every_line() {
        let lines = LEXICON_DATA
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .count();
        assert_eq!(Lexicon::shipped().entries().len(), lines);
        let postgres = Lexicon::shipped().lookup("postgres").expect("known");
        assert_eq!(postgres.name, "PostgreSQL");
        assert_eq!(
            Lexicon::shipped().lookup("PG").map(|e| e.name.as_str()),
            Some("PostgreSQL")
        );
    }

    #[test]
    fn postgres_spellings_are_one_entity() {
        let mut graph = MemoryGraph::default();
        let lexicon = Lexicon::shipped();
        let first = resolve(&graph, lexicon, "p", "Postgres", EntityType::Technology, 1)
            .expect("read")
            .expect("resolves");
        let Resolved::New(entity) = first else {
            panic!("first mention is new: {first:?}")
        };
        assert_eq!(entity.name, "PostgreSQL");
        assert_eq!(entity.aliases, ["Postgres"]);
        graph.put_entity(entity.clone());
        for spelling in ["PostgreSQL", "postgres", "Postgres", "pg"] {
            let again = resolve(&graph, lexicon, "p", spelling, EntityType::Concept, 2)
                .expect("read")
                .expect("resolves");
            assert_eq!(again.entity_id(), entity.entity_id, "{spelling}");
        }
        // Another project has its own entity.
        let other = resolve(&graph, lexicon, "q", "postgres", EntityType::Technology, 3)
            .expect("read")
            .expect("resolves");
        assert!(matches!(other, Resolved::New(_)));
    }

    #[test]
    fn close_names_link_and_distant_ones_do_not() {
        let mut graph = MemoryGraph::default();
        let lexicon = Lexicon::default();
        let Some(Resolved::New(entity)) = resolve(
            &graph,
            &lexicon,
            "p",
            "billing-service",
            EntityType::Project,
            1,
        )
        .expect("read") else {
            panic!("new")
        };
        graph.put_entity(entity.clone());
        let close = resolve(
            &graph,
            &lexicon,
            "p",
            "billing-services",
            EntityType::Project,
            2,
        )
        .expect("read")
        .expect("resolves");
        assert_eq!(close.entity_id(), entity.entity_id);
        assert!(matches!(close, Resolved::Existing { alias: Some(_), .. }));
        let far = resolve(
            &graph,
            &lexicon,
            "p",
            "shipping-service",
            EntityType::Project,
            3,
        )
        .expect("read")
        .expect("resolves");
        assert!(matches!(far, Resolved::New(_)), "{far:?}");
    }
}
