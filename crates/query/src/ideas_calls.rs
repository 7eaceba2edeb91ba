//! The ideas graph calls: `ideas.search`, `ideas.get`, `ideas.open_questions`,
//! `ideas.open_todos`, `ideas.decisions`, `entities.search`, `entities.ideas`,
//! `spans.list`, `timeline` and `session_context` — reads of the stored graph
//! ([`IdeaGraph`]), the BM25 index's idea documents and the event log, always of one
//! project: an id of another project is `not_found`, never its data.
//!
//! [`idea_result`] is how every call (and `search`) shows an idea.

use std::collections::{BTreeMap, BTreeSet};

use memory_ideas::{
    Entity, EntityType, GraphError, GraphView, Idea, Intent, Lexicon, Sector, canonical_key,
};
use memory_projections::{Bm25Handle, IdeaGraph};
use memory_search::{Bm25Query, DocType};
use memory_store::Store;
use memory_text::{estimate_tokens, query_terms};
use memory_types::{Event, format_timestamp_ms};
use serde::Serialize;
use tracing::warn;

use crate::api::{SupersededBy, parse_request};
use crate::error::QueryError;
use crate::ideas_api::{
    DEFAULT_IDEA_RESULTS, DEFAULT_IDEA_TOKEN_BUDGET, DEFAULT_TIMELINE_SIDE, DecisionsRequest,
    EntitiesSearchRequest, EntitiesSearchResponse, EntityIdeasRequest, EntityResult,
    IdeaGetRequest, IdeaGetResponse, IdeaListResponse, IdeaRelationInfo, IdeaResult,
    IdeaSourceInfo, IdeasSearchRequest, IdeasSearchResponse, MAX_IDEA_RESULTS, MAX_TIMELINE_SIDE,
    OpenItemsRequest, RelatedIdea, RelationDirection, ResolutionInfo, SessionBrief,
    SessionContextRequest, SessionContextResponse, SkippedEventInfo, SpanInfo, SpansListRequest,
    SpansListResponse, TimelineAnchor, TimelineAnchorInfo, TimelineRequest, TimelineResponse,
};
use crate::sessions::session_info;

/// The methods this module answers, as in [`crate::METHODS`].
pub(crate) const IDEA_METHODS: &[&str] = &[
    "ideas.search",
    "ideas.get",
    "ideas.open_questions",
    "ideas.open_todos",
    "ideas.decisions",
    "entities.search",
    "entities.ideas",
    "spans.list",
    "timeline",
    "session_context",
];

/// Most ideas a filtered list reads (newest first) to fill its page.
const MAX_SCAN_IDEAS: usize = 10_000;
/// Most candidates a ranked search takes from BM25 or the term overlap before filters.
const MAX_RANKED_CANDIDATES: usize = 1_000;
/// Most entities `entities.search` ranks.
const MAX_SCAN_ENTITIES: usize = 10_000;
/// `idea_count` counts up to this.
const MAX_IDEA_COUNT: usize = 1_000;
/// Most ideas of one session `session_context` shows.
const MAX_SESSION_IDEAS: usize = 500;
/// Most events `timeline` reads after its anchor.
const MAX_TIMELINE_SCAN_EVENTS: usize = 50_000;
/// The first window `timeline` reads before its anchor; each next one is four times
/// wider.
const FIRST_WINDOW_MS: u64 = 3_600_000;

/// Answers one of [`IDEA_METHODS`] for `project_id`.
///
/// # Errors
/// `invalid_argument` for a bad body, `not_found` for an id the project does not have,
/// `internal` for store failures.
pub(crate) fn dispatch(
    store: &Store,
    bm25: Option<&Bm25Handle>,
    project_id: &str,
    method: &str,
    payload: &[u8],
) -> crate::Result<serde_json::Value> {
    let calls = IdeaCalls {
        store,
        bm25,
        project_id,
        graph: IdeaGraph::open(store)?,
    };
    match method {
        "ideas.search" => to_json(calls.search(&parse_request(method, payload)?)?),
        "ideas.get" => to_json(calls.get(&parse_request(method, payload)?)?),
        "ideas.open_questions" => {
            to_json(calls.open_items(&parse_request(method, payload)?, false)?)
        }
        "ideas.open_todos" => to_json(calls.open_items(&parse_request(method, payload)?, true)?),
        "ideas.decisions" => to_json(calls.decisions(&parse_request(method, payload)?)?),
        "entities.search" => to_json(calls.entities_search(&parse_request(method, payload)?)?),
        "entities.ideas" => to_json(calls.entity_ideas(&parse_request(method, payload)?)?),
        "spans.list" => to_json(calls.spans(&parse_request(method, payload)?)?),
        "timeline" => to_json(calls.timeline(&parse_request(method, payload)?)?),
        "session_context" => to_json(calls.session_context(&parse_request(method, payload)?)?),
        other => Err(QueryError::invalid_argument(format!(
            "unknown ideas method {other:?}; methods are {}",
            IDEA_METHODS.join(", ")
        ))),
    }
}

/// `ideas.search` for `project_id` (the service reinforces what it returns).
///
/// # Errors
/// As [`dispatch`].
pub(crate) fn search(
    store: &Store,
    bm25: Option<&Bm25Handle>,
    project_id: &str,
    request: &IdeasSearchRequest,
) -> crate::Result<IdeasSearchResponse> {
    IdeaCalls {
        store,
        bm25,
        project_id,
        graph: IdeaGraph::open(store)?,
    }
    .search(request)
}

fn to_json<T: Serialize>(value: T) -> crate::Result<serde_json::Value> {
    serde_json::to_value(value).map_err(QueryError::Encode)
}

/// `idea` as a result: its fields, the names of its entities, how many relations it has
/// and the idea that superseded it. A graph read that fails leaves those three out
/// (logged) rather than failing the caller.
pub(crate) fn idea_result(graph: &dyn GraphView, idea: &Idea) -> IdeaResult {
    idea_result_at(graph, idea, None)
}

/// [`idea_result`] as of `as_of_ms`: a supersession, relation or resolution after it is
/// not shown (what was known then).
pub(crate) fn idea_result_at(
    graph: &dyn GraphView,
    idea: &Idea,
    as_of_ms: Option<u64>,
) -> IdeaResult {
    try_idea_result(graph, idea, as_of_ms).unwrap_or_else(|err| {
        warn!(idea_id = %idea.idea_id, error = %err, "idea details unreadable; shown without them");
        bare_result(idea, as_of_ms)
    })
}

/// [`idea_result_at`] that fails when the graph cannot be read.
fn try_idea_result(
    graph: &dyn GraphView,
    idea: &Idea,
    as_of_ms: Option<u64>,
) -> Result<IdeaResult, GraphError> {
    let mut result = bare_result(idea, as_of_ms);
    for entity_id in &idea.entity_ids {
        if let Some(entity) = graph.entity(&idea.project_id, entity_id)? {
            result.entities.push(entity.name);
        }
    }
    result.related_count = graph
        .relations(&idea.project_id, &idea.idea_id)?
        .iter()
        .filter(|relation| as_of_ms.is_none_or(|at| relation.timestamp_ms <= at))
        .count();
    if result.is_superseded
        && let Some(newer_id) = &idea.superseded_by
        && let Some(newer) = graph.idea(&idea.project_id, newer_id)?
    {
        result.superseded_by = Some(superseded_by(newer));
    }
    Ok(result)
}

/// The idea's own fields, nothing read from the graph.
fn bare_result(idea: &Idea, as_of_ms: Option<u64>) -> IdeaResult {
    let superseded = match as_of_ms {
        Some(at) => idea.valid_until_ms.is_some_and(|until| until <= at),
        None => idea.is_superseded(),
    };
    IdeaResult {
        idea_id: idea.idea_id.clone(),
        intent: idea.intent,
        sector: idea.sector,
        content: idea.content.clone(),
        confidence: idea.confidence,
        importance: idea.importance,
        salience: idea.salience(),
        valid_from: format_timestamp_ms(idea.valid_from_ms),
        valid_until: idea
            .valid_until_ms
            .filter(|_| superseded)
            .map(format_timestamp_ms),
        is_superseded: superseded,
        superseded_by: None,
        source: IdeaSourceInfo {
            event_id: idea.source.event_id.clone(),
            session_id: idea.source.session_id.clone(),
            timestamp: format_timestamp_ms(idea.source.timestamp_ms),
        },
        entities: Vec::new(),
        related_count: 0,
        resolution: idea
            .resolution
            .as_ref()
            .filter(|resolution| as_of_ms.is_none_or(|at| resolution.timestamp_ms <= at))
            .map(|resolution| ResolutionInfo {
                event_id: resolution.event_id.clone(),
                timestamp: format_timestamp_ms(resolution.timestamp_ms),
                idea_id: resolution.idea_id.clone(),
                summary: resolution.summary.clone(),
            }),
    }
}

/// Which ideas a call keeps.
#[derive(Clone, Debug, Default)]
struct Selection {
    intents: Option<Vec<Intent>>,
    sector: Option<Sector>,
    session_id: Option<String>,
    entity_id: Option<String>,
    min_salience: Option<f32>,
    include_superseded: bool,
    as_of_ms: Option<u64>,
}

impl Selection {
    fn keeps(&self, idea: &Idea) -> bool {
        let current = match self.as_of_ms {
            Some(at) => {
                idea.source.timestamp_ms <= at
                    && idea.valid_from_ms <= at
                    && (self.include_superseded || idea.valid_at(at))
            }
            None => self.include_superseded || !idea.is_superseded(),
        };
        current
            && self
                .intents
                .as_ref()
                .is_none_or(|intents| intents.contains(&idea.intent))
            && self.sector.is_none_or(|sector| idea.sector == sector)
            && self
                .session_id
                .as_ref()
                .is_none_or(|session| idea.source.session_id == *session)
            && self
                .entity_id
                .as_ref()
                .is_none_or(|entity| idea.entity_ids.contains(entity))
            && self
                .min_salience
                .is_none_or(|floor| idea.salience() >= floor)
    }

    /// The one intent a graph read can filter on, when there is exactly one.
    fn single_intent(&self) -> Option<Intent> {
        match self.intents.as_deref() {
            Some([intent]) => Some(*intent),
            _ => None,
        }
    }
}

/// Reads ideas with `fetch` (newest first, at most n) in growing pages until `limit`
/// pass `keep`, the read runs dry or [`MAX_SCAN_IDEAS`] were read.
fn collect_filtered(
    fetch: impl Fn(usize) -> Result<Vec<Idea>, GraphError>,
    keep: impl Fn(&Idea) -> bool,
    limit: usize,
) -> Result<Vec<Idea>, GraphError> {
    let mut asked = limit.saturating_mul(4).clamp(50, MAX_SCAN_IDEAS);
    loop {
        let ideas = fetch(asked)?;
        let exhausted = ideas.len() < asked;
        let kept: Vec<Idea> = ideas
            .into_iter()
            .filter(|idea| keep(idea))
            .take(limit)
            .collect();
        if kept.len() >= limit || exhausted || asked >= MAX_SCAN_IDEAS {
            return Ok(kept);
        }
        asked = asked.saturating_mul(4).min(MAX_SCAN_IDEAS);
    }
}

fn page_limit(limit: Option<usize>) -> usize {
    limit
        .unwrap_or(DEFAULT_IDEA_RESULTS)
        .clamp(1, MAX_IDEA_RESULTS)
}

fn parse_name<T: std::str::FromStr<Err = memory_ideas::UnknownName>>(
    text: Option<&str>,
) -> crate::Result<Option<T>> {
    text.map(|text| {
        text.trim()
            .parse::<T>()
            .map_err(|err| QueryError::invalid_argument(err.to_string()))
    })
    .transpose()
}

fn check_salience(min_salience: Option<f32>) -> crate::Result<Option<f32>> {
    match min_salience {
        Some(value) if !(value.is_finite() && (0.0..=1.0).contains(&value)) => {
            Err(QueryError::invalid_argument(format!(
                "min_salience must be a number from 0 to 1, got {value}"
            )))
        }
        other => Ok(other),
    }
}

fn check_id(field: &str, value: &str) -> crate::Result<()> {
    if value.trim().is_empty() {
        Err(QueryError::invalid_argument(format!(
            "{field} must not be empty"
        )))
    } else {
        Ok(())
    }
}

/// The calls of one project.
struct IdeaCalls<'a> {
    store: &'a Store,
    bm25: Option<&'a Bm25Handle>,
    project_id: &'a str,
    graph: IdeaGraph,
}

impl IdeaCalls<'_> {
    fn result(&self, idea: &Idea) -> IdeaResult {
        idea_result(&self.graph, idea)
    }

    fn results(&self, ideas: &[Idea]) -> Vec<IdeaResult> {
        ideas.iter().map(|idea| self.result(idea)).collect()
    }

    fn idea(&self, idea_id: &str) -> crate::Result<Idea> {
        check_id("idea_id", idea_id)?;
        self.graph
            .idea(self.project_id, idea_id.trim())?
            .ok_or_else(|| {
                QueryError::not_found(format!(
                    "project {:?} has no idea {idea_id:?}",
                    self.project_id
                ))
            })
    }

    /// The entity `text` names: an entity id of the project, else a name or alias in
    /// any spelling (the shipped lexicon's canonical name first).
    fn find_entity(&self, text: &str) -> crate::Result<Option<Entity>> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if let Some(entity) = self.graph.entity(self.project_id, text)? {
            return Ok(Some(entity));
        }
        let mut keys = Vec::new();
        if let Some(entry) = Lexicon::shipped().lookup(text) {
            keys.push(canonical_key(&entry.name));
        }
        keys.push(canonical_key(text));
        for key in keys.iter().filter(|key| !key.is_empty()) {
            if let Some(entity) = self.graph.entity_by_key(self.project_id, key)? {
                return Ok(Some(entity));
            }
        }
        Ok(None)
    }

    /// [`Self::find_entity`], `not_found` when there is none.
    fn entity(&self, field: &str, text: &str) -> crate::Result<Entity> {
        check_id(field, text)?;
        self.find_entity(text)?.ok_or_else(|| {
            QueryError::not_found(format!(
                "project {:?} has no entity {text:?} (entities.search lists them)",
                self.project_id
            ))
        })
    }

    /// `ideas.search`.
    fn search(&self, request: &IdeasSearchRequest) -> crate::Result<IdeasSearchResponse> {
        let intent: Option<Intent> = parse_name(request.intent.as_deref())?;
        let entity = request
            .entity
            .as_deref()
            .map(|text| self.entity("entity", text))
            .transpose()?;
        let selection = Selection {
            intents: intent.map(|intent| vec![intent]),
            sector: parse_name(request.sector.as_deref())?,
            session_id: request.session_id.clone(),
            entity_id: entity.map(|entity| entity.entity_id),
            min_salience: check_salience(request.min_salience)?,
            include_superseded: request.include_superseded.unwrap_or(false),
            as_of_ms: request
                .as_of
                .as_ref()
                .map(|t| t.to_ms("as_of"))
                .transpose()?,
        };
        let limit = page_limit(request.limit);
        let budget = request.token_budget.unwrap_or(DEFAULT_IDEA_TOKEN_BUDGET);
        let query = request.query.trim();
        let ideas = if query.is_empty() {
            self.recent(&selection, limit)?
        } else {
            if query_terms(query).is_empty() {
                return Err(QueryError::invalid_argument(format!(
                    "query {query:?} has no searchable terms (only stopwords or punctuation); \
                     leave it empty to list the most recent ideas"
                )));
            }
            self.ranked(query, &selection)?
                .into_iter()
                .filter(|idea| selection.keeps(idea))
                .take(limit)
                .collect()
        };
        let mut results = Vec::with_capacity(ideas.len());
        let mut token_estimate = 0;
        for idea in &ideas {
            let tokens = estimate_tokens(idea.content.chars().count());
            if token_estimate + tokens > budget {
                break;
            }
            token_estimate += tokens;
            results.push(idea_result_at(&self.graph, idea, selection.as_of_ms));
        }
        Ok(IdeasSearchResponse {
            results,
            token_estimate,
        })
    }

    /// The most recent ideas `selection` keeps.
    fn recent(&self, selection: &Selection, limit: usize) -> crate::Result<Vec<Idea>> {
        let project = self.project_id;
        let keep = |idea: &Idea| selection.keeps(idea);
        let ideas = match &selection.entity_id {
            Some(entity_id) => collect_filtered(
                |n| self.graph.entity_ideas(project, entity_id, n),
                keep,
                limit,
            )?,
            None => collect_filtered(
                |n| {
                    self.graph.recent_ideas(
                        project,
                        selection.session_id.as_deref(),
                        selection.single_intent(),
                        n,
                    )
                },
                keep,
                limit,
            )?,
        };
        Ok(ideas)
    }

    /// Candidates for `query`, best first: the BM25 index's idea documents when the
    /// index is usable and finds any, else the graph's term overlap.
    fn ranked(&self, query: &str, selection: &Selection) -> crate::Result<Vec<Idea>> {
        if let Some(handle) = self.bm25
            && handle.availability(self.store.head()).is_ok()
        {
            match self.bm25_candidates(handle, query, selection) {
                Ok(ideas) if !ideas.is_empty() => return Ok(ideas),
                Ok(_) => {}
                Err(err) => warn!(error = %err, "bm25 idea search failed; ranking by term overlap"),
            }
        }
        Ok(self.graph.search_ideas(
            self.project_id,
            query,
            selection.session_id.as_deref(),
            selection.single_intent(),
            MAX_RANKED_CANDIDATES,
        )?)
    }

    fn bm25_candidates(
        &self,
        handle: &Bm25Handle,
        query: &str,
        selection: &Selection,
    ) -> crate::Result<Vec<Idea>> {
        let Ok(mut bm25_query) = Bm25Query::new(query, self.project_id) else {
            return Ok(Vec::new());
        };
        bm25_query = bm25_query.doc_type(DocType::Idea);
        if let Some(session_id) = &selection.session_id {
            bm25_query = bm25_query.session_id(session_id.clone());
        }
        if let Some(at) = selection.as_of_ms {
            bm25_query = bm25_query.time_range(None, Some(at.saturating_add(1)));
        }
        let hits = handle
            .search(&bm25_query, MAX_RANKED_CANDIDATES)
            .map_err(|err| QueryError::unavailable(format!("the bm25 index failed: {err}")))?;
        let mut ideas = Vec::with_capacity(hits.hits.len());
        for hit in hits.hits {
            // The index may lag the graph: a document whose idea is gone is skipped.
            if let Some(idea) = self.graph.idea(self.project_id, &hit.doc_id)? {
                ideas.push(idea);
            }
        }
        Ok(ideas)
    }

    /// `ideas.get`.
    fn get(&self, request: &IdeaGetRequest) -> crate::Result<IdeaGetResponse> {
        let idea = self.idea(&request.idea_id)?;
        let mut relations = Vec::new();
        for relation in self.graph.relations(self.project_id, &idea.idea_id)? {
            let (direction, other_id) = if relation.from_idea_id == idea.idea_id {
                (RelationDirection::Outgoing, &relation.to_idea_id)
            } else {
                (RelationDirection::Incoming, &relation.from_idea_id)
            };
            let Some(other) = self.graph.idea(self.project_id, other_id)? else {
                continue;
            };
            relations.push(IdeaRelationInfo {
                relation_type: relation.relation_type,
                direction,
                other: RelatedIdea {
                    idea_id: other.idea_id,
                    intent: other.intent,
                    content: other.content,
                    valid_from: format_timestamp_ms(other.valid_from_ms),
                },
                evidence_event_id: relation.evidence_event_id.clone(),
                timestamp: format_timestamp_ms(relation.timestamp_ms),
            });
        }
        Ok(IdeaGetResponse {
            idea: self.result(&idea),
            relations,
        })
    }

    /// `ideas.open_questions` (questions and problems) and `ideas.open_todos`.
    fn open_items(
        &self,
        request: &OpenItemsRequest,
        todos: bool,
    ) -> crate::Result<IdeaListResponse> {
        let limit = page_limit(request.limit);
        let since_ms = request
            .since
            .as_ref()
            .map(|t| t.to_ms("since"))
            .transpose()?;
        let session = request.session_id.as_deref();
        let ideas = if todos {
            self.graph.open_todos(self.project_id, session, limit)?
        } else {
            self.graph.open_questions(self.project_id, session, limit)?
        };
        // Newest first, so those raised since a time are a prefix of the list.
        let ideas: Vec<Idea> = ideas
            .into_iter()
            .take_while(|idea| since_ms.is_none_or(|since| idea.valid_from_ms >= since))
            .collect();
        Ok(IdeaListResponse {
            results: self.results(&ideas),
        })
    }

    /// `ideas.decisions`.
    fn decisions(&self, request: &DecisionsRequest) -> crate::Result<IdeaListResponse> {
        let entity = request
            .entity
            .as_deref()
            .map(|text| self.entity("entity", text))
            .transpose()?;
        let selection = Selection {
            intents: Some(vec![Intent::Decision, Intent::Preference]),
            entity_id: entity.map(|entity| entity.entity_id),
            include_superseded: request.include_superseded.unwrap_or(false),
            as_of_ms: request
                .as_of
                .as_ref()
                .map(|t| t.to_ms("as_of"))
                .transpose()?,
            ..Selection::default()
        };
        let limit = page_limit(request.limit);
        let ideas = if selection.entity_id.is_none()
            && selection.as_of_ms.is_none()
            && !selection.include_superseded
        {
            self.graph.current_decisions(self.project_id, limit)?
        } else {
            self.recent(&selection, limit)?
        };
        let results = ideas
            .iter()
            .map(|idea| idea_result_at(&self.graph, idea, selection.as_of_ms))
            .collect();
        Ok(IdeaListResponse { results })
    }

    /// `entities.search`.
    fn entities_search(
        &self,
        request: &EntitiesSearchRequest,
    ) -> crate::Result<EntitiesSearchResponse> {
        let entity_type: Option<EntityType> = parse_name(request.entity_type.as_deref())?;
        let limit = page_limit(request.limit);
        let needle = request.query.trim().to_lowercase();
        let exact = self.find_entity(&request.query)?;
        let mut entities =
            self.graph
                .search_entities(self.project_id, &needle, MAX_SCAN_ENTITIES)?;
        if let Some(exact) = &exact
            && !entities
                .iter()
                .any(|entity| entity.entity_id == exact.entity_id)
        {
            entities.push(exact.clone());
        }
        entities.retain(|entity| entity_type.is_none_or(|wanted| entity.entity_type == wanted));
        let rank = |entity: &Entity| {
            if exact
                .as_ref()
                .is_some_and(|exact| exact.entity_id == entity.entity_id)
            {
                0
            } else if entity.name.to_lowercase().starts_with(&needle) {
                1
            } else {
                2
            }
        };
        entities.sort_by(|a, b| {
            rank(a)
                .cmp(&rank(b))
                .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
                .then_with(|| a.entity_id.cmp(&b.entity_id))
        });
        entities.truncate(limit);
        let mut results = Vec::with_capacity(entities.len());
        for entity in entities {
            let idea_count = self
                .graph
                .entity_ideas(self.project_id, &entity.entity_id, MAX_IDEA_COUNT)?
                .len();
            results.push(EntityResult {
                entity_id: entity.entity_id,
                name: entity.name,
                entity_type: entity.entity_type,
                aliases: entity.aliases,
                idea_count,
            });
        }
        Ok(EntitiesSearchResponse { results })
    }

    /// `entities.ideas`.
    fn entity_ideas(&self, request: &EntityIdeasRequest) -> crate::Result<IdeaListResponse> {
        let entity = self.entity("entity_id", &request.entity_id)?;
        let ideas = self.graph.entity_ideas(
            self.project_id,
            &entity.entity_id,
            page_limit(request.limit),
        )?;
        Ok(IdeaListResponse {
            results: self.results(&ideas),
        })
    }

    /// `spans.list`.
    fn spans(&self, request: &SpansListRequest) -> crate::Result<SpansListResponse> {
        check_id("session_id", &request.session_id)?;
        let spans = self
            .graph
            .session_spans(self.project_id, &request.session_id)?
            .into_iter()
            .map(|span| SpanInfo {
                span_id: span.span_id,
                name: span.name,
                summary: span.summary,
                reason: span.reason,
                first_event_id: span.first_event_id,
                first_at: format_timestamp_ms(span.first_ms),
                last_event_id: span.last_event_id,
                last_at: format_timestamp_ms(span.last_ms),
            })
            .collect();
        Ok(SpansListResponse {
            session_id: request.session_id.clone(),
            spans,
        })
    }

    /// An event of the project by id.
    fn event(&self, event_id: &str) -> crate::Result<Option<Event>> {
        let Some(seq) = self.store.seq_of_event_id(self.project_id, event_id)? else {
            return Ok(None);
        };
        Ok(self
            .store
            .event(seq)?
            .filter(|event| event.project_id == self.project_id))
    }

    /// `timeline`.
    fn timeline(&self, request: &TimelineRequest) -> crate::Result<TimelineResponse> {
        let num_before = request
            .before
            .unwrap_or(DEFAULT_TIMELINE_SIDE)
            .min(MAX_TIMELINE_SIDE);
        let num_after = request
            .after
            .unwrap_or(DEFAULT_TIMELINE_SIDE)
            .min(MAX_TIMELINE_SIDE);
        let (at_ms, event, idea) = match &request.anchor {
            TimelineAnchor::EventId(event_id) => {
                check_id("anchor.event_id", event_id)?;
                let event = self.event(event_id.trim())?.ok_or_else(|| {
                    QueryError::not_found(format!(
                        "project {:?} has no event {event_id:?}",
                        self.project_id
                    ))
                })?;
                (event.timestamp_ms, Some(event), None)
            }
            TimelineAnchor::IdeaId(idea_id) => {
                let idea = self.idea(idea_id)?;
                let event = self.event(&idea.source.event_id)?;
                (idea.valid_from_ms, event, Some(idea))
            }
            TimelineAnchor::Timestamp(time) => (time.to_ms("anchor.timestamp")?, None, None),
        };
        let anchor_ideas = match &event {
            Some(event) => self
                .graph
                .ideas_of_event(self.project_id, &event.event_id)?,
            None => Vec::new(),
        };
        let mut exclude: BTreeSet<String> = anchor_ideas
            .iter()
            .map(|idea| idea.idea_id.clone())
            .collect();
        if let Some(idea) = &idea {
            exclude.insert(idea.idea_id.clone());
        }
        let before = self.ideas_before(at_ms, num_before, &exclude)?;
        let after = self.ideas_after(at_ms, num_after, &exclude)?;
        let mut session_ids: BTreeSet<String> = BTreeSet::new();
        session_ids.extend(event.iter().map(|event| event.session_id.clone()));
        session_ids.extend(
            idea.iter()
                .chain(&anchor_ideas)
                .chain(&before)
                .chain(&after)
                .map(|idea| idea.source.session_id.clone()),
        );
        let mut sessions = BTreeMap::new();
        for session_id in session_ids {
            let info = session_info(self.store, self.project_id, &session_id)?;
            sessions.insert(
                session_id,
                SessionBrief {
                    started_at: info
                        .as_ref()
                        .map(|info| format_timestamp_ms(info.started_at_ms)),
                    ended_at: info
                        .as_ref()
                        .map(|info| format_timestamp_ms(info.ended_at_ms)),
                    summary: info.and_then(|info| info.summary),
                },
            );
        }
        Ok(TimelineResponse {
            anchor: TimelineAnchorInfo {
                timestamp: format_timestamp_ms(at_ms),
                event,
                idea: idea.as_ref().map(|idea| self.result(idea)),
                ideas: self.results(&anchor_ideas),
            },
            before: self.results(&before),
            after: self.results(&after),
            sessions,
        })
    }

    /// The ideas of the events in `[from_ms, to_ms)` not in `exclude`, in time order;
    /// returns how many events were read.
    fn ideas_in(
        &self,
        from_ms: u64,
        to_ms: Option<u64>,
        exclude: &BTreeSet<String>,
        mut enough: impl FnMut(usize, usize) -> bool,
        ideas: &mut Vec<Idea>,
    ) -> crate::Result<usize> {
        let mut num_events = 0;
        for item in self
            .store
            .scan_events(self.project_id, None, Some(from_ms), to_ms)
        {
            let (_, event) = item?;
            num_events += 1;
            let mut of_event = self
                .graph
                .ideas_of_event(self.project_id, &event.event_id)?;
            of_event.retain(|idea| !exclude.contains(&idea.idea_id));
            sort_chronologically(&mut of_event);
            ideas.extend(of_event);
            if enough(ideas.len(), num_events) {
                break;
            }
        }
        Ok(num_events)
    }

    /// The `n` ideas said last before `at_ms`, oldest first: windows of the log read
    /// backwards from the anchor, each four times wider than the last.
    fn ideas_before(
        &self,
        at_ms: u64,
        n: usize,
        exclude: &BTreeSet<String>,
    ) -> crate::Result<Vec<Idea>> {
        let mut found: Vec<Idea> = Vec::new();
        let mut to_ms = at_ms;
        let mut width = FIRST_WINDOW_MS;
        while n > 0 && found.len() < n && to_ms > 0 {
            let from_ms = to_ms.saturating_sub(width);
            let mut window = Vec::new();
            self.ideas_in(from_ms, Some(to_ms), exclude, |_, _| false, &mut window)?;
            window.append(&mut found);
            found = window;
            to_ms = from_ms;
            width = width.saturating_mul(4);
        }
        let skip = found.len().saturating_sub(n);
        Ok(found.split_off(skip))
    }

    /// The `n` first ideas said at or after `at_ms`, oldest first.
    fn ideas_after(
        &self,
        at_ms: u64,
        n: usize,
        exclude: &BTreeSet<String>,
    ) -> crate::Result<Vec<Idea>> {
        let mut found = Vec::new();
        if n == 0 {
            return Ok(found);
        }
        self.ideas_in(
            at_ms,
            None,
            exclude,
            |num_ideas, num_events| num_ideas >= n || num_events >= MAX_TIMELINE_SCAN_EVENTS,
            &mut found,
        )?;
        found.truncate(n);
        Ok(found)
    }

    /// `session_context`.
    fn session_context(
        &self,
        request: &SessionContextRequest,
    ) -> crate::Result<SessionContextResponse> {
        check_id("session_id", &request.session_id)?;
        let session_id = request.session_id.as_str();
        let info = session_info(self.store, self.project_id, session_id)?;
        let mut ideas =
            self.graph
                .recent_ideas(self.project_id, Some(session_id), None, MAX_SESSION_IDEAS)?;
        let skipped = self.graph.skipped(self.project_id, session_id)?;
        if info.is_none() && ideas.is_empty() && skipped.is_empty() {
            return Err(QueryError::not_found(format!(
                "project {:?} has no session {session_id:?}",
                self.project_id
            )));
        }
        sort_chronologically(&mut ideas);
        let mut ideas_by_intent: BTreeMap<String, Vec<IdeaResult>> = BTreeMap::new();
        let mut questions_opened = Vec::new();
        let mut todos_opened = Vec::new();
        for idea in &ideas {
            let result = self.result(idea);
            match idea.intent {
                Intent::Question | Intent::Problem => questions_opened.push(result.clone()),
                Intent::Todo => todos_opened.push(result.clone()),
                _ => {}
            }
            ideas_by_intent
                .entry(idea.intent.as_str().to_owned())
                .or_default()
                .push(result);
        }
        let (questions_closed, todos_closed) = self.closed_in(session_id, info.as_ref())?;
        Ok(SessionContextResponse {
            session_id: session_id.to_owned(),
            started_at: info
                .as_ref()
                .map(|info| format_timestamp_ms(info.started_at_ms)),
            ended_at: info
                .as_ref()
                .map(|info| format_timestamp_ms(info.ended_at_ms)),
            event_count: info.as_ref().map_or(0, |info| info.event_count),
            summary: info.and_then(|info| info.summary),
            ideas_by_intent,
            questions_opened,
            questions_closed,
            todos_opened,
            todos_closed,
            skipped_events: skipped
                .into_iter()
                .map(|skipped| SkippedEventInfo {
                    event_id: skipped.event_id,
                    reason: skipped.reason,
                })
                .collect(),
        })
    }

    /// Questions (and problems) and todos of any session whose answer or completion
    /// came in `session_id`, by resolution time: among the newest [`MAX_SCAN_IDEAS`]
    /// ideas, those resolved within the session's time span by one of its events.
    fn closed_in(
        &self,
        session_id: &str,
        info: Option<&crate::sessions::SessionInfo>,
    ) -> crate::Result<(Vec<IdeaResult>, Vec<IdeaResult>)> {
        let candidates = self
            .graph
            .recent_ideas(self.project_id, None, None, MAX_SCAN_IDEAS)?;
        let mut resolved: Vec<&Idea> = Vec::new();
        for idea in &candidates {
            let Some(resolution) = &idea.resolution else {
                continue;
            };
            if !matches!(
                idea.intent,
                Intent::Question | Intent::Problem | Intent::Todo
            ) {
                continue;
            }
            if info.is_some_and(|info| {
                resolution.timestamp_ms < info.started_at_ms
                    || resolution.timestamp_ms > info.ended_at_ms
            }) {
                continue;
            }
            if self
                .event(&resolution.event_id)?
                .is_some_and(|event| event.session_id == session_id)
            {
                resolved.push(idea);
            }
        }
        resolved.sort_by_key(|idea| {
            (
                idea.resolution.as_ref().map_or(0, |r| r.timestamp_ms),
                idea.idea_id.clone(),
            )
        });
        let mut questions = Vec::new();
        let mut todos = Vec::new();
        for idea in resolved {
            let result = self.result(idea);
            if idea.intent == Intent::Todo {
                todos.push(result);
            } else {
                questions.push(result);
            }
        }
        Ok((questions, todos))
    }
}

/// Oldest first (source time, then id).
fn sort_chronologically(ideas: &mut [Idea]) {
    ideas.sort_by(|a, b| {
        a.valid_from_ms
            .cmp(&b.valid_from_ms)
            .then_with(|| a.idea_id.cmp(&b.idea_id))
    });
}

/// How a result names the idea that superseded it.
pub(crate) fn superseded_by(newer: Idea) -> SupersededBy {
    SupersededBy {
        idea_id: newer.idea_id,
        content: newer.content,
        valid_from: format_timestamp_ms(newer.valid_from_ms),
    }
}
