//! [`MemoryGraph`]: the graph in memory — the top layer of an [`crate::Overlay`] while an
//! engine works through a batch, and the reference a test compares the stored graph with.
//! Its list reads order and filter exactly as the stored projection does (shared
//! helpers in this file), so the two can stand in for each other.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use memory_text::{TermIndex, query_terms, term_overlap_score};

use crate::entities::canonical_key;
use crate::extractor::{GraphError, GraphStore, GraphView};
use crate::model::{Entity, Idea, Intent, Relation, SkippedEvent, TopicSpan};

/// An idea id in a session's index: most recent first, then by id.
type RecentIdea = (Reverse<u64>, String);

/// The graph in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryGraph {
    ideas: BTreeMap<(String, String), Idea>,
    entities: BTreeMap<(String, String), Entity>,
    keys: BTreeMap<(String, String), String>,
    relations: BTreeMap<(String, String), Vec<Relation>>,
    spans: BTreeMap<(String, String), Vec<TopicSpan>>,
    /// By (project, session, event id), the latest reason kept, as the stored graph does.
    skipped: BTreeMap<(String, String, String), SkippedEvent>,
    /// A session's ideas, most recent first ([`recent_first`]'s order), as the stored
    /// graph's session index: the engine asks for a session's latest ideas per event,
    /// and a scan of the whole project made the benchmark measure this graph.
    by_session: BTreeMap<(String, String), BTreeSet<RecentIdea>>,
}

/// Sorts ideas most recent first (source time, then id ascending for a stable order:
/// the stored projection's index order).
pub fn sort_recent_first(ideas: &mut [Idea]) {
    ideas.sort_by(recent_first);
}

/// The order of [`sort_recent_first`].
#[must_use]
pub fn recent_first(a: &Idea, b: &Idea) -> std::cmp::Ordering {
    b.valid_from_ms
        .cmp(&a.valid_from_ms)
        .then_with(|| a.idea_id.cmp(&b.idea_id))
}

/// Whether `idea` passes the optional session and intent filters.
#[must_use]
pub fn matches_filters(idea: &Idea, session_id: Option<&str>, intent: Option<Intent>) -> bool {
    session_id.is_none_or(|session| idea.source.session_id == session)
        && intent.is_none_or(|intent| idea.intent == intent)
}

/// Whether `idea` is a question or problem still open.
#[must_use]
pub fn is_open_question(idea: &Idea) -> bool {
    matches!(idea.intent, Intent::Question | Intent::Problem) && idea.resolution.is_none()
}

/// Whether `idea` is a todo still open.
#[must_use]
pub fn is_open_todo(idea: &Idea) -> bool {
    idea.intent == Intent::Todo && idea.resolution.is_none()
}

/// Whether `idea` is a decision or preference in force.
#[must_use]
pub fn is_current_decision(idea: &Idea) -> bool {
    matches!(idea.intent, Intent::Decision | Intent::Preference) && !idea.is_superseded()
}

/// Ranks `ideas` by term overlap with `query` (ties: most recent first) and keeps the
/// `limit` best that share at least one term.
#[must_use]
pub fn rank_by_terms(ideas: Vec<Idea>, query: &str, limit: usize) -> Vec<Idea> {
    let terms = query_terms(query);
    if terms.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f32, Idea)> = ideas
        .into_iter()
        .filter_map(|idea| {
            let index = TermIndex::new(&idea.content);
            term_overlap_score(&index, &terms).map(|score| (score, idea))
        })
        .collect();
    scored.sort_by(|(a_score, a), (b_score, b)| {
        b_score
            .total_cmp(a_score)
            .then_with(|| b.valid_from_ms.cmp(&a.valid_from_ms))
            .then_with(|| a.idea_id.cmp(&b.idea_id))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(_, idea)| idea)
        .collect()
}

/// Whether an entity's name or an alias contains `needle` (lowercase), or `needle` is
/// empty.
#[must_use]
pub fn entity_matches(entity: &Entity, needle: &str) -> bool {
    needle.is_empty()
        || entity.name.to_lowercase().contains(needle)
        || entity.key.contains(needle)
        || entity
            .aliases
            .iter()
            .any(|alias| alias.to_lowercase().contains(needle))
}

impl MemoryGraph {
    /// A session's spans, sorted (none when it has none).
    fn spans_of(&self, project_id: &str, session_id: &str) -> &[TopicSpan] {
        self.spans
            .get(&(project_id.to_owned(), session_id.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// Every idea, by (project, id).
    pub fn ideas(&self) -> impl Iterator<Item = &Idea> {
        self.ideas.values()
    }

    /// Every entity.
    pub fn entities(&self) -> impl Iterator<Item = &Entity> {
        self.entities.values()
    }

    /// Every relation, each once (from its source idea's list).
    pub fn all_relations(&self) -> impl Iterator<Item = (&str, &Relation)> {
        self.relations
            .iter()
            .flat_map(|((project, idea_id), relations)| {
                relations
                    .iter()
                    .filter(move |relation| relation.from_idea_id == *idea_id)
                    .map(move |relation| (project.as_str(), relation))
            })
    }

    /// Every span.
    pub fn spans(&self) -> impl Iterator<Item = &TopicSpan> {
        self.spans.values().flatten()
    }

    /// Every skipped event with its project, in (project, session, event id) order.
    pub fn skipped(&self) -> impl Iterator<Item = (&str, &SkippedEvent)> {
        self.skipped
            .iter()
            .map(|((project_id, _, _), skipped)| (project_id.as_str(), skipped))
    }

    /// Whether nothing is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ideas.is_empty()
            && self.entities.is_empty()
            && self.spans.is_empty()
            && self.skipped.is_empty()
    }

    fn project_ideas<'a>(&'a self, project_id: &'a str) -> impl Iterator<Item = &'a Idea> + 'a {
        self.ideas
            .range((project_id.to_owned(), String::new())..)
            .take_while(move |((project, _), _)| project == project_id)
            .map(|(_, idea)| idea)
    }

    fn list(&self, project_id: &str, limit: usize, keep: impl Fn(&Idea) -> bool) -> Vec<Idea> {
        let mut ideas: Vec<&Idea> = self
            .project_ideas(project_id)
            .filter(|idea| keep(idea))
            .collect();
        ideas.sort_by(|a, b| recent_first(a, b));
        ideas.into_iter().take(limit).cloned().collect()
    }

    /// Stores an entity (infallible form of [`GraphStore::put_entity`]).
    pub fn put_entity(&mut self, entity: Entity) {
        let project = entity.project_id.clone();
        for key in std::iter::once(entity.key.clone())
            .chain(entity.aliases.iter().map(|alias| canonical_key(alias)))
        {
            self.keys
                .entry((project.clone(), key))
                .or_insert_with(|| entity.entity_id.clone());
        }
        self.entities
            .insert((project, entity.entity_id.clone()), entity);
    }
}

impl GraphView for MemoryGraph {
    fn idea(&self, project_id: &str, idea_id: &str) -> Result<Option<Idea>, GraphError> {
        Ok(self
            .ideas
            .get(&(project_id.to_owned(), idea_id.to_owned()))
            .cloned())
    }

    fn recent_ideas(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        let Some(session_id) = session_id else {
            return Ok(self.list(project_id, limit, |idea| {
                matches_filters(idea, None, intent)
            }));
        };
        let Some(ids) = self
            .by_session
            .get(&(project_id.to_owned(), session_id.to_owned()))
        else {
            return Ok(Vec::new());
        };
        Ok(ids
            .iter()
            .filter_map(|(_, idea_id)| self.ideas.get(&(project_id.to_owned(), idea_id.clone())))
            .filter(|idea| matches_filters(idea, Some(session_id), intent))
            .take(limit)
            .cloned()
            .collect())
    }

    fn open_questions(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        Ok(self.list(project_id, limit, |idea| {
            is_open_question(idea) && matches_filters(idea, session_id, None)
        }))
    }

    fn open_todos(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        Ok(self.list(project_id, limit, |idea| {
            is_open_todo(idea) && matches_filters(idea, session_id, None)
        }))
    }

    fn current_decisions(&self, project_id: &str, limit: usize) -> Result<Vec<Idea>, GraphError> {
        Ok(self.list(project_id, limit, is_current_decision))
    }

    fn search_ideas(
        &self,
        project_id: &str,
        query: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        let candidates = self.list(project_id, usize::MAX, |idea| {
            matches_filters(idea, session_id, intent)
        });
        Ok(rank_by_terms(candidates, query, limit))
    }

    fn entity(&self, project_id: &str, entity_id: &str) -> Result<Option<Entity>, GraphError> {
        Ok(self
            .entities
            .get(&(project_id.to_owned(), entity_id.to_owned()))
            .cloned())
    }

    fn entity_by_key(&self, project_id: &str, key: &str) -> Result<Option<Entity>, GraphError> {
        Ok(self
            .keys
            .get(&(project_id.to_owned(), key.to_owned()))
            .and_then(|id| self.entities.get(&(project_id.to_owned(), id.clone())))
            .cloned())
    }

    fn search_entities(
        &self,
        project_id: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<Entity>, GraphError> {
        let needle = name.trim().to_lowercase();
        Ok(self
            .entities
            .range((project_id.to_owned(), String::new())..)
            .take_while(|((project, _), _)| project == project_id)
            .map(|(_, entity)| entity)
            .filter(|entity| entity_matches(entity, &needle))
            .take(limit)
            .cloned()
            .collect())
    }

    fn entity_ideas(
        &self,
        project_id: &str,
        entity_id: &str,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        Ok(self.list(project_id, limit, |idea| {
            idea.entity_ids.iter().any(|id| id == entity_id)
        }))
    }

    fn session_spans(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<TopicSpan>, GraphError> {
        Ok(self.spans_of(project_id, session_id).to_vec())
    }

    fn project_spans(&self, project_id: &str, limit: usize) -> Result<Vec<TopicSpan>, GraphError> {
        let all: Vec<TopicSpan> = self
            .spans
            .iter()
            .filter(|((project, _), _)| project == project_id)
            .flat_map(|(_, spans)| spans.iter().cloned())
            .collect();
        Ok(latest_spans(all, limit))
    }

    /// The last of the sorted spans, without copying the others (the engine asks for
    /// it on every turn).
    fn current_span(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        Ok(self.spans_of(project_id, session_id).last().cloned())
    }

    fn session_span(
        &self,
        project_id: &str,
        session_id: &str,
        span_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        Ok(self
            .spans_of(project_id, session_id)
            .iter()
            .find(|span| span.span_id == span_id)
            .cloned())
    }

    fn relations(&self, project_id: &str, idea_id: &str) -> Result<Vec<Relation>, GraphError> {
        Ok(self
            .relations
            .get(&(project_id.to_owned(), idea_id.to_owned()))
            .cloned()
            .unwrap_or_default())
    }
}

/// The `limit` most recently active of `spans` (latest last event first, then id).
#[must_use]
pub fn latest_spans(mut spans: Vec<TopicSpan>, limit: usize) -> Vec<TopicSpan> {
    spans.sort_by(|a, b| {
        b.last_ms
            .cmp(&a.last_ms)
            .then_with(|| a.span_id.cmp(&b.span_id))
    });
    spans.truncate(limit);
    spans
}

/// Orders a session's spans: by first event time, then id.
pub fn sort_spans(spans: &mut [TopicSpan]) {
    spans.sort_by(|a, b| {
        a.first_ms
            .cmp(&b.first_ms)
            .then_with(|| a.span_id.cmp(&b.span_id))
    });
}

impl GraphStore for MemoryGraph {
    fn put_idea(&mut self, idea: Idea) -> Result<(), GraphError> {
        self.by_session
            .entry((idea.project_id.clone(), idea.source.session_id.clone()))
            .or_default()
            .insert((Reverse(idea.valid_from_ms), idea.idea_id.clone()));
        self.ideas
            .insert((idea.project_id.clone(), idea.idea_id.clone()), idea);
        Ok(())
    }

    fn put_entity(&mut self, entity: Entity) -> Result<(), GraphError> {
        MemoryGraph::put_entity(self, entity);
        Ok(())
    }

    fn put_relation(&mut self, project_id: &str, relation: Relation) -> Result<(), GraphError> {
        let mut ends = BTreeSet::new();
        ends.insert(relation.from_idea_id.clone());
        ends.insert(relation.to_idea_id.clone());
        for end in ends {
            let list = self
                .relations
                .entry((project_id.to_owned(), end))
                .or_default();
            if !list.contains(&relation) {
                list.push(relation.clone());
                list.sort_by(|a, b| {
                    (
                        a.timestamp_ms,
                        &a.from_idea_id,
                        &a.to_idea_id,
                        a.relation_type,
                    )
                        .cmp(&(
                            b.timestamp_ms,
                            &b.from_idea_id,
                            &b.to_idea_id,
                            b.relation_type,
                        ))
                });
            }
        }
        Ok(())
    }

    fn put_span(&mut self, span: TopicSpan) -> Result<(), GraphError> {
        let spans = self
            .spans
            .entry((span.project_id.clone(), span.session_id.clone()))
            .or_default();
        spans.retain(|existing| existing.span_id != span.span_id);
        spans.push(span);
        sort_spans(spans);
        Ok(())
    }

    fn put_skipped(&mut self, project_id: &str, skipped: SkippedEvent) -> Result<(), GraphError> {
        self.skipped.insert(
            (
                project_id.to_owned(),
                skipped.session_id.clone(),
                skipped.event_id.clone(),
            ),
            skipped,
        );
        Ok(())
    }
}
