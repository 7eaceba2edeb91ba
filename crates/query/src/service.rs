//! [`QueryService`]: every query call over one store, the same for NATS and the CLI.

use std::sync::Arc;
use std::time::Instant;

use memory_projections::{Bm25Handle, GripExtractor, VectorHandle};
use memory_store::Store;
use memory_toc::{
    DEFAULT_SEARCH_LIMIT, GripId, TocLevel, TocNode, Tz, search_children, search_node,
};
use memory_types::{Event, ServiceError, is_valid_project_id};
use serde::Serialize;
use tracing::info_span;

use crate::api::{
    EventsGetRequest, EventsGetResponse, GripExpandRequest, GripExpandResponse, MAX_PAGE,
    NavigateRequest, NavigateResponse, SearchChildrenRequest, SearchChildrenResponse,
    SearchNodeRequest, SearchNodeResponse, SearchRequest, SearchResponse, TeleportSearchRequest,
    TeleportSearchResponse, TeleportStatusRequest, TeleportStatusResponse, TocBrowseRequest,
    TocBrowseResponse, TocNodeRequest, TocNodeResponse, TocRootResponse, parse_node_id,
    parse_request,
};
use crate::error::QueryError;
use crate::fusion::HybridSettings;
use crate::ideas_api::IdeasSearchRequest;
use crate::metrics::QUERY_METRICS;
use crate::project::ProjectView;
use crate::router::Router;
use crate::{ideas_calls, navigator, teleport};

/// Every method a client can call, as it appears in subjects
/// (`memory.query.<project>.<method>`).
pub const METHODS: &[&str] = &[
    "toc.root",
    "toc.node",
    "toc.browse",
    "events.get",
    "grip.expand",
    "toc.search_node",
    "toc.search_children",
    "navigate",
    "search",
    "teleport.search",
    "teleport.status",
    "vector.search",
    "context.brief",
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

/// Answers query calls from the projections in one store.
#[derive(Clone)]
pub struct QueryService {
    store: Store,
    tz: Tz,
    scan_budget_events: usize,
    bm25: Option<Bm25Handle>,
    vector: Option<VectorHandle>,
    hybrid: HybridSettings,
    recall: Option<Arc<dyn RecallSink>>,
    search_first: crate::search_first::SearchFirst,
}

/// Where `search` reports the ideas it returned, so the projection can reinforce them
/// (a `memory_recalled` event in the log). Called on the search's thread: an
/// implementation must only hand the ids over (a bounded channel), never wait.
pub trait RecallSink: Send + Sync {
    /// `search` of `project_id` for `query` returned `idea_ids`.
    fn recalled(&self, project_id: &str, query: &str, idea_ids: Vec<String>);
}

/// Events the index-free search reads per query at most, by default: every turn of a
/// few weeks of one busy project is scored exactly; beyond it the search reads the
/// segments whose summaries match best. Reading and decoding an event costs a few
/// microseconds, so this bounds a search near 100 ms on two cores (docs/benchmarks.md).
pub const DEFAULT_SCAN_BUDGET_EVENTS: usize = 5_000;

impl QueryService {
    /// A service over `store` with day boundaries in `tz` (the TOC's zone).
    #[must_use]
    pub fn new(store: Store, tz: Tz) -> Self {
        QueryService {
            store,
            tz,
            scan_budget_events: DEFAULT_SCAN_BUDGET_EVENTS,
            bm25: None,
            vector: None,
            hybrid: HybridSettings::default(),
            recall: None,
            search_first: crate::search_first::SearchFirst::default(),
        }
    }

    /// Reports the ideas each `search` and `ideas.search` returns to `sink`
    /// (reinforcement).
    #[must_use]
    pub fn with_recall_sink(mut self, sink: Arc<dyn RecallSink>) -> Self {
        self.recall = Some(sink);
        self
    }

    /// Tells the recall sink, if any, which ideas a search returned (each once).
    fn note_recalls<'a>(
        &self,
        project_id: &str,
        query: &str,
        idea_ids: impl Iterator<Item = &'a String>,
    ) {
        let Some(sink) = &self.recall else {
            return;
        };
        let mut recalled: Vec<String> = Vec::new();
        for id in idea_ids {
            if !recalled.contains(id) {
                recalled.push(id.clone());
            }
        }
        if !recalled.is_empty() {
            sink.recalled(project_id, query, recalled);
        }
    }

    /// Fuses the accelerator tiers' lists and expands queries as `hybrid` says.
    #[must_use]
    pub fn with_hybrid(mut self, hybrid: HybridSettings) -> Self {
        self.hybrid = hybrid;
        self
    }

    /// Lets `search` ask `search_first.writer` for phrases (`phrases: "llm"`, or every
    /// search without phrases when `by_default`), within its time budget.
    #[must_use]
    pub fn with_search_first(mut self, search_first: crate::search_first::SearchFirst) -> Self {
        self.search_first = search_first;
        self
    }

    /// Searches by meaning through this vector index when it is usable (`None`: vector
    /// search is disabled).
    #[must_use]
    pub fn with_vector(mut self, vector: Option<VectorHandle>) -> Self {
        self.vector = vector;
        self
    }

    /// Searches through this BM25 index when it is usable (`None`: BM25 is disabled and
    /// `search` answers from the TOC).
    #[must_use]
    pub fn with_bm25(mut self, bm25: Option<Bm25Handle>) -> Self {
        self.bm25 = bm25;
        self
    }

    /// Sets how many events one index-free search may read.
    #[must_use]
    pub fn with_scan_budget(mut self, scan_budget_events: usize) -> Self {
        self.scan_budget_events = scan_budget_events.max(1);
        self
    }

    /// The projections of `project_id`.
    fn view<'a>(&'a self, project_id: &'a str) -> ProjectView<'a> {
        ProjectView {
            store: &self.store,
            tz: self.tz,
            project_id,
        }
    }

    /// Answers `method` for `project_id` with a JSON request body: the NATS entry point.
    ///
    /// # Errors
    /// `invalid_argument` for a bad project, method or body; `not_found`; `internal`
    /// for store failures.
    pub fn call(
        &self,
        project_id: &str,
        method: &str,
        payload: &[u8],
    ) -> Result<serde_json::Value, ServiceError> {
        let started = Instant::now();
        let span = info_span!("query", method, project_id);
        let _entered = span.enter();
        let result = self
            .dispatch(project_id, method, payload)
            .map_err(ServiceError::from);
        let metrics = &*QUERY_METRICS;
        let label = if METHODS.contains(&method) {
            method
        } else {
            "unknown"
        };
        let outcome = match &result {
            Ok(_) => "ok",
            Err(err) => err.error.code.as_str(),
        };
        metrics.requests.with_label_values(&[label, outcome]).inc();
        metrics
            .latency
            .with_label_values(&[label])
            .observe(started.elapsed().as_secs_f64());
        result
    }

    fn dispatch(
        &self,
        project_id: &str,
        method: &str,
        payload: &[u8],
    ) -> crate::Result<serde_json::Value> {
        check_project(project_id)?;
        match method {
            "toc.root" => {
                let _: crate::api::TocRootRequest = parse_request(method, payload)?;
                to_json(self.toc_root(project_id)?)
            }
            "toc.node" => to_json(self.toc_node(project_id, &parse_request(method, payload)?)?),
            "toc.browse" => to_json(self.toc_browse(project_id, &parse_request(method, payload)?)?),
            "events.get" => to_json(self.events_get(project_id, &parse_request(method, payload)?)?),
            "grip.expand" => {
                to_json(self.grip_expand(project_id, &parse_request(method, payload)?)?)
            }
            "toc.search_node" => {
                to_json(self.search_node(project_id, &parse_request(method, payload)?)?)
            }
            "toc.search_children" => {
                to_json(self.search_children(project_id, &parse_request(method, payload)?)?)
            }
            "navigate" => to_json(self.navigate(project_id, &parse_request(method, payload)?)?),
            "search" => {
                let request: SearchRequest = parse_request(method, payload)?;
                check_body_project(request.project_id.as_deref(), project_id)?;
                to_json(self.search(project_id, &request)?)
            }
            "teleport.search" => {
                let request: TeleportSearchRequest = parse_request(method, payload)?;
                check_body_project(request.project_id.as_deref(), project_id)?;
                to_json(self.teleport_search(project_id, &request)?)
            }
            "vector.search" => {
                let request: TeleportSearchRequest = parse_request(method, payload)?;
                check_body_project(request.project_id.as_deref(), project_id)?;
                to_json(teleport::vector_search(
                    self.vector.as_ref(),
                    project_id,
                    &request,
                )?)
            }
            "teleport.status" => {
                let _: TeleportStatusRequest = parse_request(method, payload)?;
                to_json(self.teleport_status()?)
            }
            "ideas.search" => {
                let request: IdeasSearchRequest = parse_request(method, payload)?;
                let response =
                    ideas_calls::search(&self.store, self.bm25.as_ref(), project_id, &request)?;
                self.note_recalls(
                    project_id,
                    &request.query,
                    response.results.iter().map(|result| &result.idea_id),
                );
                to_json(response)
            }
            "context.brief" => to_json(crate::brief::brief(
                self.view(project_id),
                &self.store,
                self.bm25.as_ref(),
                &parse_request(method, payload)?,
            )?),
            "ideas.get"
            | "ideas.open_questions"
            | "ideas.open_todos"
            | "ideas.decisions"
            | "entities.search"
            | "entities.ideas"
            | "spans.list"
            | "timeline"
            | "session_context" => {
                ideas_calls::dispatch(&self.store, self.bm25.as_ref(), project_id, method, payload)
            }
            other => Err(QueryError::invalid_argument(format!(
                "unknown method {other:?}; methods are {}",
                METHODS.join(", ")
            ))),
        }
    }

    /// `toc.root`.
    ///
    /// # Errors
    /// `internal` on store failures.
    pub fn toc_root(&self, project_id: &str) -> crate::Result<TocRootResponse> {
        Ok(TocRootResponse {
            project_id: project_id.to_string(),
            years: self.view(project_id).nodes_at_level(TocLevel::Year)?,
        })
    }

    /// `toc.node`.
    ///
    /// # Errors
    /// `invalid_argument` for a bad id, `not_found` when the project has no such node.
    pub fn toc_node(
        &self,
        project_id: &str,
        request: &TocNodeRequest,
    ) -> crate::Result<TocNodeResponse> {
        let node_id = parse_node_id("node_id", &request.node_id)?;
        Ok(TocNodeResponse {
            node: self.view(project_id).node(&node_id)?,
        })
    }

    /// `toc.browse`.
    ///
    /// # Errors
    /// `invalid_argument` for a bad id or page token, `not_found` for a missing parent.
    pub fn toc_browse(
        &self,
        project_id: &str,
        request: &TocBrowseRequest,
    ) -> crate::Result<TocBrowseResponse> {
        let parent = match request.node_id.as_deref() {
            None | Some("") => None,
            Some(text) => Some(parse_node_id("node_id", text)?),
        };
        let children = self.view(project_id).children(parent.as_ref())?;
        let offset = parse_page_token(request.page_token.as_deref())?;
        let limit = request.limit.unwrap_or(20).clamp(1, MAX_PAGE);
        let page: Vec<TocNode> = children.iter().skip(offset).take(limit).cloned().collect();
        let next = offset + page.len();
        let has_more = next < children.len();
        Ok(TocBrowseResponse {
            node_id: parent.map(|id| id.to_string()),
            children: page,
            has_more,
            next_page_token: has_more.then(|| next.to_string()),
        })
    }

    /// `events.get`: the log's events, without cluster mode's `segment_close`
    /// bookkeeping (see [`shown`]).
    ///
    /// # Errors
    /// `invalid_argument` for bad times or tokens; `internal` on store failures.
    pub fn events_get(
        &self,
        project_id: &str,
        request: &EventsGetRequest,
    ) -> crate::Result<EventsGetResponse> {
        let from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
        let to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
        let offset = parse_page_token(request.page_token.as_deref())?;
        let limit = request.limit.unwrap_or(50).clamp(1, MAX_PAGE);
        let mut events = Vec::with_capacity(limit);
        let mut has_more = false;
        // The page token counts the log's events scanned, shown or not.
        let mut scanned = 0;
        let scan = self
            .store
            .scan_events(project_id, request.session_id.as_deref(), from_ms, to_ms)
            .skip(offset);
        for item in scan {
            let (_, event) = item?;
            if !shown(&event) {
                scanned += 1;
                continue;
            }
            if events.len() == limit {
                has_more = true;
                break;
            }
            scanned += 1;
            events.push(event);
        }
        let next = offset + scanned;
        Ok(EventsGetResponse {
            events,
            has_more,
            next_page_token: has_more.then(|| next.to_string()),
        })
    }

    /// `grip.expand`.
    ///
    /// # Errors
    /// `invalid_argument` for a bad id, `not_found` for an unknown grip.
    pub fn grip_expand(
        &self,
        project_id: &str,
        request: &GripExpandRequest,
    ) -> crate::Result<GripExpandResponse> {
        let grip_id: GripId = request
            .grip_id
            .parse()
            .map_err(|err| QueryError::invalid_argument(format!("grip_id: {err}")))?;
        let grip = GripExtractor::grip(&self.store, &grip_id)?
            .filter(|grip| grip.project_id == project_id)
            .ok_or_else(|| {
                QueryError::not_found(format!("project {project_id:?} has no grip {grip_id}"))
            })?;
        let session: Vec<Event> = self
            .store
            .scan_events(project_id, Some(&grip.session_id), None, None)
            .map(|item| item.map(|(_, event)| event))
            .filter(|item| item.as_ref().map_or(true, shown))
            .collect::<Result<_, _>>()?;
        let start = session
            .iter()
            .position(|event| event.event_id == grip.event_id_start)
            .ok_or_else(|| {
                QueryError::not_found(format!(
                    "grip {grip_id} cites event {:?}, which its session does not hold",
                    grip.event_id_start
                ))
            })?;
        let end = session[start..]
            .iter()
            .position(|event| event.event_id == grip.event_id_end)
            .map_or(start, |offset| start + offset);
        let before = request.before.unwrap_or(3).min(MAX_PAGE);
        let after = request.after.unwrap_or(3).min(MAX_PAGE);
        Ok(GripExpandResponse {
            events_before: session[start.saturating_sub(before)..start].to_vec(),
            excerpt_events: session[start..=end].to_vec(),
            events_after: session[end + 1..(end + 1 + after).min(session.len())].to_vec(),
            grip,
        })
    }

    /// `toc.search_node`.
    ///
    /// # Errors
    /// `invalid_argument` for a bad id or empty query, `not_found` for a missing node.
    pub fn search_node(
        &self,
        project_id: &str,
        request: &SearchNodeRequest,
    ) -> crate::Result<SearchNodeResponse> {
        check_query(&request.query)?;
        let node_id = parse_node_id("node_id", &request.node_id)?;
        let node = self.view(project_id).node(&node_id)?;
        let mut matches = search_node(&node, &request.query, &request.fields);
        matches.truncate(request.limit.unwrap_or(DEFAULT_SEARCH_LIMIT).min(MAX_PAGE));
        if let Some(budget) = request.token_budget {
            let mut used = 0;
            matches.retain(|m| {
                used += m.token_estimate();
                used <= budget
            });
        }
        Ok(SearchNodeResponse {
            matched: !matches.is_empty(),
            matches,
            node_id: node_id.to_string(),
            level: node_id.level(),
        })
    }

    /// `toc.search_children`.
    ///
    /// # Errors
    /// `invalid_argument` for a bad id, level or empty query, `not_found` for a missing
    /// parent.
    pub fn search_children(
        &self,
        project_id: &str,
        request: &SearchChildrenRequest,
    ) -> crate::Result<SearchChildrenResponse> {
        check_query(&request.query)?;
        let parent = match request.parent_id.as_deref() {
            None | Some("") => None,
            Some(text) => Some(parse_node_id("parent_id", text)?),
        };
        let candidates = match (&parent, request.child_level) {
            (Some(parent), level) => {
                let child_level = parent.level().child();
                if let Some(level) = level
                    && Some(level) != child_level
                {
                    return Err(QueryError::invalid_argument(format!(
                        "child_level {} is not the child level of {parent}",
                        level.as_str()
                    )));
                }
                self.view(project_id).children(Some(parent))?
            }
            (None, level) => self
                .view(project_id)
                .nodes_at_level(level.unwrap_or(TocLevel::Year))?,
        };
        Ok(search_children(
            &candidates,
            &request.query,
            &request.fields,
            request.limit.unwrap_or(DEFAULT_SEARCH_LIMIT).min(MAX_PAGE),
            request.token_budget,
        ))
    }

    /// `navigate`.
    ///
    /// # Errors
    /// `invalid_argument` for an empty query or a bad `now`.
    pub fn navigate(
        &self,
        project_id: &str,
        request: &NavigateRequest,
    ) -> crate::Result<NavigateResponse> {
        check_query(&request.query)?;
        navigator::navigate(self.view(project_id), request)
    }

    /// `search`: the best tier of the request's mode that can answer; a tier standing
    /// in for a better one says why in `fallback_reason` (see `router`).
    ///
    /// # Errors
    /// `invalid_argument` for an empty query or bad times; `unavailable` for a forced
    /// tier that cannot answer.
    pub fn search(
        &self,
        project_id: &str,
        request: &SearchRequest,
    ) -> crate::Result<SearchResponse> {
        check_query(&request.query)?;
        let started = Instant::now();
        let resolved = self.search_first.resolve(request);
        let request = &resolved.request;
        let router = Router {
            view: self.view(project_id),
            bm25: self.bm25.as_ref(),
            vector: self.vector.as_ref(),
            settings: self.hybrid,
            scan_budget_events: self.scan_budget_events,
        };
        let mut response = router.search(request)?;
        response.search_terms_used = if response.stats.phrases.is_empty() {
            vec![request.query.trim().to_owned()]
        } else {
            response
                .stats
                .phrases
                .iter()
                .map(|hits| hits.phrase.clone())
                .collect()
        };
        response.phrase_source =
            resolved
                .source
                .unwrap_or(if response.search_terms_used.len() > 1 {
                    crate::api::PhraseSource::Offline
                } else {
                    crate::api::PhraseSource::Query
                });
        response.phrase_fallback_reason = resolved.fallback_reason;
        let now_ms = match &request.now {
            Some(now) => now.to_ms("now")?,
            None => memory_types::Clock::system().now_ms(),
        };
        let added = crate::search_first::always_include(
            &self.store,
            project_id,
            request,
            resolved.written.as_ref(),
            now_ms,
        )?;
        crate::search_first::merge(
            &mut response,
            added,
            request
                .token_budget
                .unwrap_or(crate::api::DEFAULT_TOKEN_BUDGET),
        );
        self.note_recalls(
            project_id,
            &request.query,
            response
                .results
                .iter()
                .filter_map(|result| result.idea_id.as_ref()),
        );
        let metrics = &*QUERY_METRICS;
        let fallback = if response.fallback_reason.is_some() {
            "yes"
        } else {
            "no"
        };
        metrics
            .search_requests
            .with_label_values(&[response.tier.as_str(), fallback])
            .inc();
        metrics
            .search_latency
            .with_label_values(&[response.tier.as_str()])
            .observe(started.elapsed().as_secs_f64());
        Ok(response)
    }

    /// `teleport.search`: BM25 hits with their scores.
    ///
    /// # Errors
    /// `invalid_argument` for an empty or termless query or a bad filter;
    /// `unavailable` when BM25 is disabled or the index is unhealthy.
    pub fn teleport_search(
        &self,
        project_id: &str,
        request: &TeleportSearchRequest,
    ) -> crate::Result<TeleportSearchResponse> {
        teleport::search(self.bm25.as_ref(), project_id, request)
    }

    /// `teleport.status`: whether BM25 is enabled and healthy, and its numbers.
    ///
    /// # Errors
    /// None today; the signature leaves room for a store failure.
    pub fn teleport_status(&self) -> crate::Result<TeleportStatusResponse> {
        Ok(teleport::status(
            self.bm25.as_ref(),
            self.vector.as_ref(),
            self.store.head(),
        ))
    }
}

fn check_body_project(body_project: Option<&str>, project_id: &str) -> crate::Result<()> {
    match body_project {
        Some(body_project) if body_project != project_id => {
            Err(QueryError::invalid_argument(format!(
                "project_id {body_project:?} differs from the subject's project \
                 {project_id:?}; a request reads one project"
            )))
        }
        _ => Ok(()),
    }
}

fn to_json<T: Serialize>(value: T) -> crate::Result<serde_json::Value> {
    serde_json::to_value(value).map_err(QueryError::Encode)
}

fn check_project(project_id: &str) -> crate::Result<()> {
    if is_valid_project_id(project_id) {
        Ok(())
    } else {
        Err(QueryError::invalid_argument(format!(
            "project {project_id:?} is not a valid project id"
        )))
    }
}

fn check_query(query: &str) -> crate::Result<()> {
    if query.trim().is_empty() {
        Err(QueryError::invalid_argument("query must not be empty"))
    } else {
        Ok(())
    }
}

fn parse_page_token(token: Option<&str>) -> crate::Result<usize> {
    match token {
        None | Some("") => Ok(0),
        Some(text) => text.parse().map_err(|_| {
            QueryError::invalid_argument(format!(
                "page_token {text:?} is not a token this service issued"
            ))
        }),
    }
}

/// Whether a read of the log shows `event`: everything but cluster mode's derived
/// events — a `segment_close` says where a lease holder closed an idle segment, a
/// `toc_summary` what the model wrote for a node (shown in the node itself) —
/// mechanics, not something anyone said.
fn shown(event: &Event) -> bool {
    !event.kind.is_derived()
}
