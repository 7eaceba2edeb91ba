//! [`IdeaLens`]: what the ideas graph says about a search's hits and evidence — which
//! idea a hit stands for, whether it is still true (at `as_of`), and how much an event
//! counts once its ideas were superseded. One per search; lookups are cached, because
//! fusion asks about the same events (neighbours of several hits) again and again.

use std::cell::RefCell;
use std::collections::HashMap;

use memory_ideas::{GraphView, Idea, Intent};
use memory_projections::IdeaGraph;
use memory_store::Store;
use tracing::warn;

use crate::api::SourceSession;
use crate::plan::IdeaFilter;
use crate::project::ProjectView;

/// The session a result's first event belongs to, as results show it (start and TOC
/// summary, [`crate::sessions::session_info`]); `None` when the catalog has not seen it
/// yet or it cannot be read.
fn read_source_session(view: ProjectView<'_>, session_id: &str) -> Option<SourceSession> {
    match crate::sessions::session_info(view.store, view.project_id, session_id) {
        Ok(info) => info.map(|info| SourceSession {
            id: info.session_id,
            started_at: memory_types::format_timestamp_ms(info.started_at_ms),
            summary: info.summary,
        }),
        Err(err) => {
            warn!(error = %err, session_id, "session of a result unreadable");
            None
        }
    }
}

/// The hybrid spec's penalty for a memory that was superseded: its score counts half.
pub(crate) const SUPERSEDED_PENALTY: f32 = 0.5;

/// The ideas graph as one search sees it.
pub(crate) struct IdeaLens<'a> {
    graph: Option<IdeaGraph>,
    project_id: &'a str,
    filter: IdeaFilter,
    by_event: RefCell<HashMap<String, Vec<Idea>>>,
    sessions: RefCell<HashMap<String, Option<SourceSession>>>,
}

impl<'a> IdeaLens<'a> {
    /// The lens of one search of `project_id`. A graph that cannot be opened leaves
    /// the search as it was without ideas (logged).
    pub(crate) fn new(store: &Store, project_id: &'a str, filter: IdeaFilter) -> Self {
        let graph = match IdeaGraph::open(store) {
            Ok(graph) => Some(graph),
            Err(err) => {
                warn!(error = %err, "ideas graph unreadable; searching without it");
                None
            }
        };
        IdeaLens {
            graph,
            project_id,
            filter,
            by_event: RefCell::new(HashMap::new()),
            sessions: RefCell::new(HashMap::new()),
        }
    }

    /// One idea of the project.
    pub(crate) fn idea(&self, idea_id: &str) -> Option<Idea> {
        let graph = self.graph.as_ref()?;
        graph.idea(self.project_id, idea_id).ok().flatten()
    }

    /// The ideas taken from an event (cached).
    pub(crate) fn ideas_of_event(&self, event_id: &str) -> Vec<Idea> {
        if let Some(ideas) = self.by_event.borrow().get(event_id) {
            return ideas.clone();
        }
        let ideas = self
            .graph
            .as_ref()
            .and_then(|graph| graph.ideas_of_event(self.project_id, event_id).ok())
            .unwrap_or_default();
        self.by_event
            .borrow_mut()
            .insert(event_id.to_owned(), ideas.clone());
        ideas
    }

    /// Whether `idea` no longer held at the search's time: superseded (before
    /// `as_of`, when given).
    pub(crate) fn is_stale(&self, idea: &Idea) -> bool {
        match self.filter.as_of_ms {
            Some(at) => idea.valid_until_ms.is_some_and(|until| until <= at),
            None => idea.is_superseded(),
        }
    }

    /// Whether `idea` passes the request's salience and sector conditions.
    fn passes(&self, idea: &Idea) -> bool {
        self.filter
            .min_salience
            .is_none_or(|floor| idea.salience() >= floor)
            && self
                .filter
                .sector
                .is_none_or(|sector| idea.sector == sector)
            && self
                .filter
                .as_of_ms
                .is_none_or(|at| idea.valid_from_ms <= at)
    }

    /// Whether an idea hit may be returned: it passes the conditions, and it is not
    /// stale unless `include_superseded`.
    pub(crate) fn shows(&self, idea: &Idea) -> bool {
        self.passes(idea) && (self.filter.include_superseded || !self.is_stale(idea))
    }

    /// Whether an event may be evidence under the request's idea conditions: always
    /// without `min_salience` and `sector`, else when an idea taken from it passes them.
    pub(crate) fn admits_event(&self, event_id: &str) -> bool {
        !self.filter.requires_idea()
            || self
                .ideas_of_event(event_id)
                .iter()
                .any(|idea| self.passes(idea))
    }

    /// What an event's score is multiplied by: [`SUPERSEDED_PENALTY`] when it stated
    /// something that was later superseded and nothing still true, else 1.
    pub(crate) fn event_factor(&self, event_id: &str) -> f32 {
        let ideas = self.ideas_of_event(event_id);
        let stale = ideas.iter().any(|idea| self.is_stale(idea));
        let current = ideas.iter().any(|idea| {
            !self.is_stale(idea) && matches!(idea.intent, Intent::Decision | Intent::Preference)
        });
        if stale && !current {
            SUPERSEDED_PENALTY
        } else {
            1.0
        }
    }

    /// The idea a result of an event stands for: a stale one first (the reader must
    /// see that it was replaced), else the most important.
    pub(crate) fn idea_of_event(&self, event_id: &str) -> Option<Idea> {
        let mut ideas = self.ideas_of_event(event_id);
        ideas.sort_by(|a, b| {
            self.is_stale(b)
                .cmp(&self.is_stale(a))
                .then_with(|| b.importance.total_cmp(&a.importance))
                .then_with(|| a.idea_id.cmp(&b.idea_id))
        });
        ideas.into_iter().next()
    }

    /// The session of a result (cached: results often share one).
    pub(crate) fn source_session(
        &self,
        view: ProjectView<'_>,
        session_id: &str,
    ) -> Option<SourceSession> {
        if let Some(session) = self.sessions.borrow().get(session_id) {
            return session.clone();
        }
        let session = read_source_session(view, session_id);
        self.sessions
            .borrow_mut()
            .insert(session_id.to_owned(), session.clone());
        session
    }

    /// How many relations `idea` has.
    pub(crate) fn related_count(&self, idea: &Idea) -> usize {
        self.graph
            .as_ref()
            .and_then(|graph| graph.relations(self.project_id, &idea.idea_id).ok())
            .map_or(0, |relations| relations.len())
    }
}
