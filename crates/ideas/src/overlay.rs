//! [`Overlay`]: the stored graph with an engine's own changes of the current batch on
//! top. An engine applies each event's changes here as it goes (with the same
//! [`crate::apply_changes`] the projection uses), so an answer three events after its
//! question finds the question open, and the result is the same whether the two events
//! came in one batch or in two.
//!
//! Base list reads are cached for the batch (the base does not change while the engine
//! runs), which keeps an engine that asks for open questions at every event fast.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use crate::extractor::{GraphError, GraphStore, GraphView};
use crate::memory_graph::{
    MemoryGraph, is_current_decision, is_open_question, is_open_todo, latest_spans,
    matches_filters, rank_by_terms, recent_first, sort_spans,
};
use crate::model::{Entity, Idea, Intent, Relation, SkippedEvent, TopicSpan};

/// The stored graph (`base`) with in-memory changes on top.
pub struct Overlay<'a> {
    base: &'a dyn GraphView,
    top: MemoryGraph,
    /// Ideas of the base that the top holds a newer version of: idea ids by project.
    overridden: BTreeMap<String, BTreeSet<String>>,
    num_overridden: usize,
    cache: RefCell<BTreeMap<String, BaseList>>,
}

/// A cached base list read: the limit it was read with, and the ideas.
type BaseList = (usize, Rc<Vec<Idea>>);

impl<'a> Overlay<'a> {
    /// An overlay with nothing on top yet.
    #[must_use]
    pub fn new(base: &'a dyn GraphView) -> Self {
        Overlay {
            base,
            top: MemoryGraph::default(),
            overridden: BTreeMap::new(),
            num_overridden: 0,
            cache: RefCell::new(BTreeMap::new()),
        }
    }

    /// Whether the top holds a newer version of this base idea.
    fn is_overridden(&self, idea: &Idea) -> bool {
        self.overridden
            .get(&idea.project_id)
            .is_some_and(|ids| ids.contains(&idea.idea_id))
    }

    /// What was written on top.
    #[must_use]
    pub fn top(&self) -> &MemoryGraph {
        &self.top
    }

    /// A base list read, cached: `fetch(limit)` is called again only when a larger
    /// limit is asked of a list that was full. The list may hold more than `limit`
    /// ideas (a longer read of the same order).
    fn base_list(
        &self,
        key: String,
        limit: usize,
        fetch: impl Fn(usize) -> Result<Vec<Idea>, GraphError>,
    ) -> Result<Rc<Vec<Idea>>, GraphError> {
        if let Some((fetched, ideas)) = self.cache.borrow().get(&key)
            && (*fetched >= limit || ideas.len() < *fetched)
        {
            return Ok(Rc::clone(ideas));
        }
        let ideas = Rc::new(fetch(limit)?);
        self.cache
            .borrow_mut()
            .insert(key, (limit, Rc::clone(&ideas)));
        Ok(ideas)
    }

    /// Base ideas (newer top versions in their place) and top ideas that pass `keep`,
    /// most recent first, at most `limit`. Both sides are already in that order (the
    /// base list as read, the top sorted here by reference), so this is a merge that
    /// copies only the ideas it returns.
    fn merged(
        &self,
        key: String,
        limit: usize,
        fetch: impl Fn(usize) -> Result<Vec<Idea>, GraphError>,
        project_id: &str,
        keep: impl Fn(&Idea) -> bool,
    ) -> Result<Vec<Idea>, GraphError> {
        let wanted = limit.saturating_add(self.num_overridden);
        let base = self.base_list(key, wanted, fetch)?;
        let mut top: Vec<&Idea> = self
            .top
            .ideas()
            .filter(|idea| idea.project_id == project_id && keep(idea))
            .collect();
        top.sort_by(|a, b| recent_first(a, b));
        let mut base = base
            .iter()
            .filter(|idea| !self.is_overridden(idea))
            .peekable();
        let mut top = top.into_iter().peekable();
        let mut ideas = Vec::with_capacity(limit.min(base.size_hint().1.unwrap_or(0) + top.len()));
        while ideas.len() < limit {
            let next = match (base.peek(), top.peek()) {
                (Some(from_base), Some(from_top)) => {
                    if recent_first(from_base, from_top).is_le() {
                        base.next()
                    } else {
                        top.next()
                    }
                }
                (Some(_), None) => base.next(),
                (None, Some(_)) => top.next(),
                (None, None) => None,
            };
            match next {
                Some(idea) => ideas.push(idea.clone()),
                None => break,
            }
        }
        Ok(ideas)
    }

    /// The freshest version of an entity found in the base.
    fn fresher(&self, entity: Entity) -> Entity {
        self.top
            .entity(&entity.project_id, &entity.entity_id)
            .ok()
            .flatten()
            .unwrap_or(entity)
    }
}

impl GraphView for Overlay<'_> {
    fn idea(&self, project_id: &str, idea_id: &str) -> Result<Option<Idea>, GraphError> {
        match self.top.idea(project_id, idea_id)? {
            Some(idea) => Ok(Some(idea)),
            None => self.base.idea(project_id, idea_id),
        }
    }

    fn recent_ideas(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        self.merged(
            format!("recent\0{project_id}\0{session_id:?}\0{intent:?}"),
            limit,
            |wanted| {
                self.base
                    .recent_ideas(project_id, session_id, intent, wanted)
            },
            project_id,
            |idea| matches_filters(idea, session_id, intent),
        )
    }

    fn open_questions(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        self.merged(
            format!("questions\0{project_id}\0{session_id:?}"),
            limit,
            |wanted| self.base.open_questions(project_id, session_id, wanted),
            project_id,
            |idea| is_open_question(idea) && matches_filters(idea, session_id, None),
        )
    }

    fn open_todos(
        &self,
        project_id: &str,
        session_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        self.merged(
            format!("todos\0{project_id}\0{session_id:?}"),
            limit,
            |wanted| self.base.open_todos(project_id, session_id, wanted),
            project_id,
            |idea| is_open_todo(idea) && matches_filters(idea, session_id, None),
        )
    }

    fn current_decisions(&self, project_id: &str, limit: usize) -> Result<Vec<Idea>, GraphError> {
        self.merged(
            format!("decisions\0{project_id}"),
            limit,
            |wanted| self.base.current_decisions(project_id, wanted),
            project_id,
            is_current_decision,
        )
    }

    fn search_ideas(
        &self,
        project_id: &str,
        query: &str,
        session_id: Option<&str>,
        intent: Option<Intent>,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        let wanted = limit.saturating_add(self.num_overridden);
        let mut by_id: BTreeMap<String, Idea> = BTreeMap::new();
        for idea in self
            .base
            .search_ideas(project_id, query, session_id, intent, wanted)?
        {
            if !self.is_overridden(&idea) {
                by_id.insert(idea.idea_id.clone(), idea);
            }
        }
        for idea in self.top.ideas() {
            if idea.project_id == project_id && matches_filters(idea, session_id, intent) {
                by_id.insert(idea.idea_id.clone(), idea.clone());
            }
        }
        Ok(rank_by_terms(by_id.into_values().collect(), query, limit))
    }

    fn entity(&self, project_id: &str, entity_id: &str) -> Result<Option<Entity>, GraphError> {
        match self.top.entity(project_id, entity_id)? {
            Some(entity) => Ok(Some(entity)),
            None => self.base.entity(project_id, entity_id),
        }
    }

    fn entity_by_key(&self, project_id: &str, key: &str) -> Result<Option<Entity>, GraphError> {
        match self.top.entity_by_key(project_id, key)? {
            Some(entity) => Ok(Some(entity)),
            None => Ok(self
                .base
                .entity_by_key(project_id, key)?
                .map(|entity| self.fresher(entity))),
        }
    }

    fn search_entities(
        &self,
        project_id: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<Entity>, GraphError> {
        let mut by_id: BTreeMap<String, Entity> = BTreeMap::new();
        for entity in self.base.search_entities(project_id, name, limit)? {
            let entity = self.fresher(entity);
            by_id.insert(entity.entity_id.clone(), entity);
        }
        for entity in self.top.search_entities(project_id, name, limit)? {
            by_id.insert(entity.entity_id.clone(), entity);
        }
        Ok(by_id.into_values().take(limit).collect())
    }

    fn entity_ideas(
        &self,
        project_id: &str,
        entity_id: &str,
        limit: usize,
    ) -> Result<Vec<Idea>, GraphError> {
        self.merged(
            format!("entity\0{project_id}\0{entity_id}"),
            limit,
            |wanted| self.base.entity_ideas(project_id, entity_id, wanted),
            project_id,
            |idea| idea.entity_ids.iter().any(|id| id == entity_id),
        )
    }

    fn session_spans(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<TopicSpan>, GraphError> {
        let mut by_id: BTreeMap<String, TopicSpan> = BTreeMap::new();
        for span in self.base.session_spans(project_id, session_id)? {
            by_id.insert(span.span_id.clone(), span);
        }
        for span in self.top.session_spans(project_id, session_id)? {
            by_id.insert(span.span_id.clone(), span);
        }
        let mut spans: Vec<TopicSpan> = by_id.into_values().collect();
        sort_spans(&mut spans);
        Ok(spans)
    }

    fn project_spans(&self, project_id: &str, limit: usize) -> Result<Vec<TopicSpan>, GraphError> {
        // A span the top rewrote can be among the base's latest or not: read enough of
        // the base that the top's versions replace, then cut.
        let top = self.top.project_spans(project_id, usize::MAX)?;
        let mut by_id: BTreeMap<String, TopicSpan> = BTreeMap::new();
        for span in self
            .base
            .project_spans(project_id, limit.saturating_add(top.len()))?
        {
            by_id.insert(span.span_id.clone(), span);
        }
        for span in top {
            by_id.insert(span.span_id.clone(), span);
        }
        Ok(latest_spans(by_id.into_values().collect(), limit))
    }

    /// The latest of the merged spans without merging them all: the base's latest (in
    /// the top's version if it has one) or a later one of the top. A span's order key
    /// (first event time, id) never changes, so no other base span can be latest.
    fn current_span(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        let top = self.top.session_spans(project_id, session_id)?;
        let base_opt = self.base.current_span(project_id, session_id)?.map(|base| {
            top.iter()
                .find(|span| span.span_id == base.span_id)
                .cloned()
                .unwrap_or(base)
        });
        Ok(top.into_iter().chain(base_opt).max_by(|a, b| {
            a.first_ms
                .cmp(&b.first_ms)
                .then_with(|| a.span_id.cmp(&b.span_id))
        }))
    }

    fn session_span(
        &self,
        project_id: &str,
        session_id: &str,
        span_id: &str,
    ) -> Result<Option<TopicSpan>, GraphError> {
        match self.top.session_span(project_id, session_id, span_id)? {
            Some(span) => Ok(Some(span)),
            None => self.base.session_span(project_id, session_id, span_id),
        }
    }

    fn relations(&self, project_id: &str, idea_id: &str) -> Result<Vec<Relation>, GraphError> {
        let mut relations = self.base.relations(project_id, idea_id)?;
        for relation in self.top.relations(project_id, idea_id)? {
            if !relations.contains(&relation) {
                relations.push(relation);
            }
        }
        Ok(relations)
    }
}

impl GraphStore for Overlay<'_> {
    fn put_idea(&mut self, idea: Idea) -> Result<(), GraphError> {
        if self.top.idea(&idea.project_id, &idea.idea_id)?.is_none()
            && self.base.idea(&idea.project_id, &idea.idea_id)?.is_some()
        {
            let added = self
                .overridden
                .entry(idea.project_id.clone())
                .or_default()
                .insert(idea.idea_id.clone());
            self.num_overridden += usize::from(added);
        }
        self.top.put_idea(idea)
    }

    fn put_entity(&mut self, entity: Entity) -> Result<(), GraphError> {
        self.top.put_entity(entity);
        Ok(())
    }

    fn put_relation(&mut self, project_id: &str, relation: Relation) -> Result<(), GraphError> {
        self.top.put_relation(project_id, relation)
    }

    fn put_span(&mut self, span: TopicSpan) -> Result<(), GraphError> {
        self.top.put_span(span)
    }

    fn put_skipped(&mut self, project_id: &str, skipped: SkippedEvent) -> Result<(), GraphError> {
        self.top.put_skipped(project_id, skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, first_ms: u64, last_ms: u64) -> TopicSpan {
        TopicSpan {
            span_id: id.to_owned(),
            project_id: "p".to_owned(),
            session_id: "s".to_owned(),
            name: format!("{id} at {last_ms}"),
            summary: String::new(),
            reason: String::new(),
            first_event_id: format!("{id}-first"),
            first_ms,
            last_event_id: format!("{id}-last"),
            last_ms,
        }
    }

    /// The shortcuts give what the merged list gives, whichever side holds the latest
    /// span and whether the top holds a newer version of a base span.
    #[test]
    fn current_and_single_span_equal_the_merged_list() {
        // (base spans, top spans), each (id, first event time).
        type Spans = &'static [(&'static str, u64)];
        let layouts: &[(Spans, Spans)] = &[
            (&[], &[]),
            (&[("a", 1), ("b", 5)], &[]),
            (&[("a", 1), ("b", 5)], &[("b", 5)]),
            (&[("a", 1), ("b", 5)], &[("a", 1)]),
            (&[("a", 1), ("b", 5)], &[("c", 9)]),
            (&[("a", 1), ("c", 9)], &[("b", 5)]),
            (&[], &[("a", 1), ("b", 5)]),
            (&[("b", 5)], &[("a", 5)]),
        ];
        for (base_spans, top_spans) in layouts {
            let mut base = MemoryGraph::default();
            for (id, first_ms) in *base_spans {
                base.put_span(span(id, *first_ms, first_ms + 1))
                    .expect("put");
            }
            let mut overlay = Overlay::new(&base);
            for (id, first_ms) in *top_spans {
                overlay
                    .put_span(span(id, *first_ms, first_ms + 2))
                    .expect("put");
            }
            let merged = overlay.session_spans("p", "s").expect("spans");
            assert_eq!(
                overlay.current_span("p", "s").expect("current"),
                merged.last().cloned(),
                "{base_spans:?} under {top_spans:?}"
            );
            for id in ["a", "b", "c", "d"] {
                assert_eq!(
                    overlay.session_span("p", "s", id).expect("span"),
                    merged.iter().find(|span| span.span_id == id).cloned(),
                );
            }
        }
    }
}
