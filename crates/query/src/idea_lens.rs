//! [`IdeaLens`]: what the ideas graph says about a search's hits and evidence — which
//! idea a hit stands for, whether it is still true (at `as_of`), and how much an event
//! counts once its ideas were superseded. One per search; lookups are cached, because
//! fusion asks about the same events (neighbours of several hits) again and again.
//!
//! **Stale values.** A superseded decision is not the only turn that carries what it
//! said: "muted the check in #alerts-prod", "the fake clock jumps 30 min" use the old
//! value without being ideas of their own, and in a long conversation there are many
//! more of them than decisions. Before fusion the lens looks at the best hits for
//! superseded ideas ([`IdeaLens::note_value_changes`]) and reads off what each
//! replacement changed (`memory_ideas::value_change`: "30 minutes" → "2 hours"). A
//! turn from before the replacement that states an old value and none of the new ones
//! counts like the superseded decision: × [`SUPERSEDED_PENALTY`], and its result says
//! it was superseded and by what. A turn among the best hits that says itself which
//! value it replaced ("It's thirty days now, not one week anymore",
//! `memory_ideas::explicit_change`) ranks the same way: the turns before it that stated
//! the old value (and share a term with it) count half even when none of them became
//! an idea, and say they were superseded when that turn is a decision carrying the
//! change.

use std::cell::RefCell;
use std::collections::HashMap;

use memory_ideas::{
    GraphView, Idea, Intent, SettingValues, ValueChange, explicit_change, stated_values,
    value_change,
};
use memory_projections::IdeaGraph;
use memory_search::DocType;
use memory_store::Store;
use memory_types::{Event, EventKind};
use tracing::warn;

use crate::api::SourceSession;
use crate::fusion::RankedDoc;
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

/// How many of the best hits [`IdeaLens::note_value_changes`] looks at for superseded
/// ideas. A superseded decision about what was asked ranks among the first hits (it
/// shares the question's subject); reading further costs store reads for decisions
/// about something else.
const VALUE_CHANGE_HITS: usize = 30;

/// How many turns (event and idea hits, among the first [`VALUE_CHANGE_HITS`] hits)
/// [`IdeaLens::note_newer_values`] compares: the statements that answer a question
/// about now rank among the first, and each pair costs a comparison of their values.
const NEWER_VALUE_HITS: usize = 10;

/// Most values a newer statement may state to count as a restatement of a setting
/// ([`IdeaLens::note_newer_values`]): "Going forward: issue tracker = Linear" states
/// one or two; a turn naming many things is about something else.
const MAX_NEWER_VALUES: usize = 3;

/// What replaced a value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Replacement {
    /// An idea of the graph: the result says it was superseded, and by what.
    Idea(String),
    /// A newer statement among the hits of a question about now (no idea behind it):
    /// it ranks the old value lower, and claims nothing.
    NewerStatement,
}

/// What one replacement changed, as far as it matters to evidence.
struct StaleValues {
    change: ValueChange,
    /// When the replacement was made (the old idea's `valid_until`): turns after it
    /// that name the old value talk about the change, they do not use it.
    replaced_at_ms: u64,
    /// What replaced it.
    newer: Replacement,
    /// The terms of the turn that said it replaced the value (`explicit_change`), one
    /// of which a turn must share to count as using it: "p99 is 120 ms now, not 800
    /// ms" says nothing of another 800 ms. Empty when the graph linked the two.
    subject: Vec<String>,
}

/// One event of the project by id; `None` when absent or unreadable (logged).
fn read_event(view: ProjectView<'_>, event_id: &str) -> Option<Event> {
    let read = || -> Result<Option<Event>, memory_store::StoreError> {
        match view.store.seq_of_event_id(view.project_id, event_id)? {
            Some(seq) => view.store.event(seq),
            None => Ok(None),
        }
    };
    match read() {
        Ok(event) => event,
        Err(err) => {
            warn!(error = %err, event_id, "event of a hit unreadable");
            None
        }
    }
}

/// Whether a person or an agent wrote the event (not a tool, not a marker).
fn is_prose(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::UserMessage | EventKind::AssistantMessage | EventKind::Note
    )
}

/// The ideas graph as one search sees it.
pub(crate) struct IdeaLens<'a> {
    graph: Option<IdeaGraph>,
    project_id: &'a str,
    filter: IdeaFilter,
    by_event: RefCell<HashMap<String, Vec<Idea>>>,
    sessions: RefCell<HashMap<String, Option<SourceSession>>>,
    stale_values: Vec<StaleValues>,
    /// Events found to use a replaced value: what replaced it.
    stale_by_value: RefCell<HashMap<String, Option<Replacement>>>,
    /// Turns of the best hits read from the log ([`IdeaLens::event`]): both value
    /// rules read the same ones.
    events: RefCell<HashMap<String, Option<Event>>>,
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
            stale_values: Vec::new(),
            stale_by_value: RefCell::new(HashMap::new()),
            events: RefCell::new(HashMap::new()),
        }
    }

    /// Notes what the superseded ideas among the best of `ranked` changed, and what the
    /// turns among them say they replaced, so that [`IdeaLens::event_factor`] can tell
    /// turns that still use an old value.
    pub(crate) fn note_value_changes(&mut self, view: ProjectView<'_>, ranked: &[RankedDoc]) {
        let mut seen: Vec<String> = Vec::new();
        let mut seen_events: Vec<String> = Vec::new();
        for doc in ranked.iter().take(VALUE_CHANGE_HITS) {
            let (ideas, event_id) = match doc.doc_type {
                DocType::Idea => {
                    let idea = self.idea(&doc.doc_id);
                    let event_id = idea.as_ref().map(|idea| idea.source.event_id.clone());
                    (idea.into_iter().collect(), event_id)
                }
                DocType::Event => (self.ideas_of_event(&doc.doc_id), Some(doc.doc_id.clone())),
                _ => continue,
            };
            if let Some(event_id) = event_id
                && !seen_events.contains(&event_id)
            {
                let text = match doc.doc_type {
                    DocType::Event => doc.text.clone(),
                    _ => ideas.first().map(|idea: &Idea| idea.content.clone()),
                };
                self.note_explicit_change(view, &event_id, text.as_deref());
                seen_events.push(event_id);
            }
            for older in ideas {
                if seen.contains(&older.idea_id) {
                    continue;
                }
                seen.push(older.idea_id.clone());
                if !self.is_stale(&older) {
                    continue;
                }
                let (Some(newer_id), Some(replaced_at_ms)) =
                    (older.superseded_by.as_deref(), older.valid_until_ms)
                else {
                    continue;
                };
                let Some(newer) = self.idea(newer_id) else {
                    continue;
                };
                let change = value_change(&older.content, &newer.content);
                if !change.old.is_empty() {
                    self.stale_values.push(StaleValues {
                        change,
                        replaced_at_ms,
                        newer: Replacement::Idea(newer.idea_id),
                        subject: Vec::new(),
                    });
                }
            }
        }
    }

    /// Notes the values a turn among the best hits says it replaced ("It's thirty days
    /// now, not one week anymore", `memory_ideas::explicit_change`): the turns before
    /// it that state an old value — ideas or not — are stale like a superseded
    /// decision's. Their results say so when the turn is a decision in force (the
    /// engine makes it one when it replaced a decision); otherwise they only rank lower.
    /// `text` is the hit's stored text when the index had it: most turns say no
    /// replacement, and are not read from the log to find that out.
    fn note_explicit_change(&mut self, view: ProjectView<'_>, event_id: &str, text: Option<&str>) {
        if text.is_some_and(|text| explicit_change(text).old.is_empty()) {
            return;
        }
        let Some(event) = self.event(view, event_id).filter(is_prose) else {
            return;
        };
        if self
            .filter
            .as_of_ms
            .is_some_and(|at| event.timestamp_ms > at)
        {
            return;
        }
        let change = explicit_change(&event.text);
        if change.old.is_empty() {
            return;
        }
        let newer = self
            .ideas_of_event(event_id)
            .into_iter()
            .find(|idea| {
                idea.intent == Intent::Decision
                    && !self.is_stale(idea)
                    && !explicit_change(&idea.content).old.is_empty()
            })
            .map_or(Replacement::NewerStatement, |idea| {
                Replacement::Idea(idea.idea_id)
            });
        self.stale_values.push(StaleValues {
            change,
            replaced_at_ms: event.timestamp_ms,
            newer,
            subject: memory_text::query_terms(&event.text),
        });
    }

    /// For a question about now (`tense::asks_about_now`): among the best hits, a turn
    /// that states a value of some kind ("80 percent for the coverage gate") and a
    /// later turn that states another value of that kind and not this one ("with the
    /// 85% threshold …"; values of settings only, not people's names:
    /// `memory_ideas::SettingValues`), both sharing a term with the question, are
    /// two statements of what was asked, and the later one is what holds now. The earlier one, and the
    /// turns before the later one that state the same old value, rank lower
    /// (× [`SUPERSEDED_PENALTY`]); nothing claims they were superseded, since no idea
    /// says so. Only the prose of people and agents counts (tool output states many
    /// values of many things), a question states nothing, and a newer turn stating
    /// more than [`MAX_NEWER_VALUES`] values is about something else.
    pub(crate) fn note_newer_values(
        &mut self,
        view: ProjectView<'_>,
        ranked: &[RankedDoc],
        terms: &[String],
    ) {
        let mut statements: Vec<(u64, String, SettingValues)> = Vec::new();
        let turns = ranked
            .iter()
            .take(VALUE_CHANGE_HITS)
            .filter(|doc| matches!(doc.doc_type, DocType::Event | DocType::Idea))
            .take(NEWER_VALUE_HITS);
        for doc in turns {
            let event = match doc.doc_type {
                DocType::Event => self.event(view, &doc.doc_id),
                _ => self
                    .idea(&doc.doc_id)
                    .and_then(|idea| self.event(view, &idea.source.event_id)),
            };
            let Some(event) = event.filter(is_prose) else {
                continue;
            };
            if event.text.trim_end().ends_with('?')
                || statements.iter().any(|(_, text, _)| *text == event.text)
            {
                continue;
            }
            let event_terms = memory_text::query_terms(&event.text);
            if !terms.iter().any(|term| event_terms.contains(term)) {
                continue;
            }
            let values = SettingValues::of(&event.text);
            if !values.is_empty() {
                statements.push((event.timestamp_ms, event.text, values));
            }
        }
        for (older_at, _, older) in &statements {
            for (newer_at, _, newer) in &statements {
                if newer_at <= older_at {
                    continue;
                }
                let change = older.change_to(newer);
                if !change.old.is_empty() && change.new.len() <= MAX_NEWER_VALUES {
                    self.stale_values.push(StaleValues {
                        change,
                        replaced_at_ms: *newer_at,
                        newer: Replacement::NewerStatement,
                        subject: Vec::new(),
                    });
                }
            }
        }
    }

    /// What replaced a value `event` still uses, if it does (cached).
    fn value_replaced_by(&self, event: &Event) -> Option<Replacement> {
        if self.stale_values.is_empty() {
            return None;
        }
        if let Some(found) = self.stale_by_value.borrow().get(&event.event_id) {
            return found.clone();
        }
        let mut stated: Option<Vec<String>> = None;
        let mut terms: Option<Vec<String>> = None;
        let mut uses = |stale: &StaleValues| {
            event.timestamp_ms < stale.replaced_at_ms
                && stale
                    .change
                    .is_used_by(stated.get_or_insert_with(|| stated_values(&event.text)))
                && (stale.subject.is_empty() || {
                    let terms = terms.get_or_insert_with(|| memory_text::query_terms(&event.text));
                    stale.subject.iter().any(|term| terms.contains(term))
                })
        };
        // A replacement the graph names first: its result says by what.
        let found = self
            .stale_values
            .iter()
            .filter(|stale| matches!(stale.newer, Replacement::Idea(_)))
            .find(|stale| uses(stale))
            .or_else(|| {
                self.stale_values
                    .iter()
                    .filter(|stale| stale.newer == Replacement::NewerStatement)
                    .find(|stale| uses(stale))
            })
            .map(|stale| stale.newer.clone());
        self.stale_by_value
            .borrow_mut()
            .insert(event.event_id.clone(), found.clone());
        found
    }

    /// The idea that replaced a value the event of a result uses, when
    /// [`IdeaLens::event_factor`] found it so.
    pub(crate) fn value_superseded_by(&self, event_id: &str) -> Option<String> {
        match self.stale_by_value.borrow().get(event_id) {
            Some(Some(Replacement::Idea(idea_id))) => Some(idea_id.clone()),
            _ => None,
        }
    }

    /// One turn of the project, read from the log once per search.
    fn event(&self, view: ProjectView<'_>, event_id: &str) -> Option<Event> {
        if let Some(event) = self.events.borrow().get(event_id) {
            return event.clone();
        }
        let event = read_event(view, event_id);
        self.events
            .borrow_mut()
            .insert(event_id.to_owned(), event.clone());
        event
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
    /// something that was later superseded and nothing still true, or used a value
    /// that was later replaced (see the module doc), else 1.
    pub(crate) fn event_factor(&self, event: &Event) -> f32 {
        let ideas = self.ideas_of_event(&event.event_id);
        let stale = ideas.iter().any(|idea| self.is_stale(idea));
        let current = ideas.iter().any(|idea| {
            !self.is_stale(idea) && matches!(idea.intent, Intent::Decision | Intent::Preference)
        });
        if current {
            1.0
        } else if stale || self.value_replaced_by(event).is_some() {
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
