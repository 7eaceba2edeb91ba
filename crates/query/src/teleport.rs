//! `teleport.search`, `vector.search` and `teleport.status`: the indexes as agents call
//! them directly (the PRD's `TeleportSearch` and `GetTeleportStatus`).

use std::time::Instant;

use crate::error::QueryError;
use memory_projections::{Bm25Handle, Unavailable, VectorHandle};
use memory_search::{Bm25Query, DocType, SearchError};
use memory_types::OutboxSeq;
use memory_vector::DocSelector;
use tracing::info_span;

use crate::api::{
    MAX_PAGE, RebuildProgressInfo, TeleportHit, TeleportSearchRequest, TeleportSearchResponse,
    TeleportStatusResponse, VectorHitInfo, VectorSearchResponse,
};

/// Default number of `teleport.search` hits (PRD FR-05).
pub const DEFAULT_TELEPORT_LIMIT: usize = 10;
/// Longest text fragment of a hit, bytes.
const SNIPPET_CHARS: usize = 240;
/// The PRD's words for a disabled index.
pub const DISABLED_MESSAGE: &str = "Teleport search is disabled. Using TOC navigation instead.";

/// `teleport.search`.
pub(crate) fn search(
    bm25: Option<&Bm25Handle>,
    project_id: &str,
    request: &TeleportSearchRequest,
) -> crate::Result<TeleportSearchResponse> {
    let span = info_span!("teleport_search", project_id);
    let _entered = span.enter();
    let handle = bm25.ok_or_else(|| {
        QueryError::unavailable(format!(
            "{DISABLED_MESSAGE} (enable it with [teleport.bm25] enabled = true; call \
             toc.search_children or navigate meanwhile)"
        ))
    })?;
    if let Some(error) = handle.error() {
        return Err(QueryError::unavailable(format!(
            "the bm25 index is unhealthy ({error}); rebuild it with `admin rebuild-index`, \
             or use toc.search_children or navigate meanwhile"
        )));
    }
    let query = {
        let _parse = info_span!("parse_query").entered();
        build_query(project_id, request)?
    };
    let limit = request
        .limit
        .unwrap_or(DEFAULT_TELEPORT_LIMIT)
        .clamp(1, MAX_PAGE);
    let started = Instant::now();
    let results = {
        let _execute = info_span!("execute_search", limit).entered();
        handle.search(&query, limit).map_err(|err| match err {
            SearchError::EmptyQuery => empty_query(&request.query),
            other => QueryError::unavailable(format!("the bm25 index failed: {other}")),
        })?
    };
    let search_time_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let _collect = info_span!("collect_results", num_hits = results.hits.len()).entered();
    Ok(TeleportSearchResponse {
        results: results
            .hits
            .into_iter()
            .enumerate()
            .map(|(index, hit)| TeleportHit {
                rank: index + 1,
                doc_id: hit.doc_id,
                doc_type: hit.doc_type.as_str().to_owned(),
                level: hit.level,
                score: hit.score,
                text: hit.text,
                session_id: hit.session_id,
                timestamp_ms: hit.timestamp_ms,
            })
            .collect(),
        total_hits: results.total_hits,
        search_time_ms,
    })
}

fn empty_query(query: &str) -> QueryError {
    QueryError::invalid_argument(format!(
        "query {query:?} has no searchable terms (only stopwords or punctuation)"
    ))
}

fn build_query(project_id: &str, request: &TeleportSearchRequest) -> crate::Result<Bm25Query> {
    if request.query.trim().is_empty() {
        return Err(QueryError::invalid_argument("query must not be empty"));
    }
    let mut query = Bm25Query::new(&request.query, project_id)
        .map_err(|_| empty_query(&request.query))?
        .snippets(SNIPPET_CHARS);
    if let Some(doc_type) = &request.doc_type {
        let doc_type: DocType = doc_type
            .parse()
            .map_err(|err| QueryError::invalid_argument(format!("doc_type: {err}")))?;
        query = query.doc_type(doc_type);
    }
    if let Some(level) = request.level {
        query = query.doc_type(DocType::TocNode).level(level.as_str());
    }
    if let Some(session_id) = &request.session_id {
        query = query.session_id(session_id.clone());
    }
    let from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
    let to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
    if from_ms.is_some() || to_ms.is_some() {
        query = query.time_range(from_ms, to_ms);
    }
    Ok(query)
}

/// `teleport.status`.
pub(crate) fn status(
    bm25: Option<&Bm25Handle>,
    vector: Option<&VectorHandle>,
    head: OutboxSeq,
) -> TeleportStatusResponse {
    let mut response = bm25_status(bm25, head);
    if let Some(vector) = vector {
        let status = vector.status(head);
        response.vector_enabled = true;
        response.vector_healthy = status.healthy;
        response.vector_doc_count = status.num_docs;
        response.vector_lag = status.lag;
        response.vector_error = status.error;
        response.message.push_str(&if response.vector_healthy {
            format!(
                " Vector search enabled and healthy: {} documents embedded{}.",
                status.num_docs,
                if status.lag > 0 {
                    format!(", {} log entries still to embed", status.lag)
                } else {
                    String::new()
                }
            )
        } else {
            " Vector search unhealthy: see vector_error.".to_owned()
        });
    }
    response
}

fn bm25_status(bm25: Option<&Bm25Handle>, head: OutboxSeq) -> TeleportStatusResponse {
    let Some(handle) = bm25 else {
        return TeleportStatusResponse {
            message: DISABLED_MESSAGE.to_owned(),
            ..TeleportStatusResponse::default()
        };
    };
    let status = handle.status(head);
    let availability = handle.availability(head);
    let message = status_message(handle, &status, availability.as_ref().err());
    let last_prune = status.last_prune.clone();
    TeleportStatusResponse {
        bm25_enabled: true,
        bm25_healthy: status.healthy,
        bm25_stale: matches!(availability, Err(Unavailable::Stale { .. })),
        bm25_doc_count: status.num_docs,
        bm25_doc_counts: status.doc_counts,
        bm25_index_size_bytes: status.index_size_bytes,
        bm25_cursor: status.cursor,
        bm25_log_head: status.head,
        bm25_last_commit_ms: status.last_commit_ms,
        bm25_last_prune_ms: last_prune.as_ref().map(|report| report.at_ms),
        bm25_pruned: last_prune.map(|report| report.pruned).unwrap_or_default(),
        bm25_rebuild: status.rebuild.map(|progress| RebuildProgressInfo {
            started_at_ms: progress.started_at_ms,
            phase: progress.phase,
            num_docs: progress.num_docs,
            num_events_total: progress.num_events_total,
        }),
        bm25_error: status.error,
        message,
        ..TeleportStatusResponse::default()
    }
}

fn status_message(
    handle: &Bm25Handle,
    status: &memory_projections::Bm25Status,
    unavailable: Option<&Unavailable>,
) -> String {
    if let Some(progress) = &status.rebuild {
        return format!(
            "BM25 index rebuilding ({}, {} documents so far); searches use the previous index.",
            progress.phase, progress.num_docs
        );
    }
    match unavailable {
        Some(Unavailable::Unhealthy(error)) => format!(
            "BM25 index unhealthy: {error}. Search uses TOC navigation until \
             `memory-daemon admin rebuild-index` rebuilds it."
        ),
        Some(behind @ (Unavailable::Stale { .. } | Unavailable::Building)) => {
            format!("{behind}. Search uses TOC navigation until it catches up.")
        }
        None => format!(
            "BM25 teleport enabled and healthy: {} documents{}.",
            status.num_docs,
            if handle.committed_cursor().0 < status.head {
                " (catching up with the newest entries)"
            } else {
                ""
            }
        ),
    }
}

/// `vector.search`: the nearest documents with their similarity.
pub(crate) fn vector_search(
    vector: Option<&VectorHandle>,
    project_id: &str,
    request: &TeleportSearchRequest,
) -> crate::Result<VectorSearchResponse> {
    let vector = vector.ok_or_else(|| {
        QueryError::unavailable(
            "vector search is disabled ([teleport.vector] enabled = false); use \
             teleport.search or search",
        )
    })?;
    if request.query.trim().is_empty() {
        return Err(QueryError::invalid_argument("query must not be empty"));
    }
    let limit = request
        .limit
        .unwrap_or(DEFAULT_TELEPORT_LIMIT)
        .clamp(1, MAX_PAGE);
    let from_ms = request.from.as_ref().map(|t| t.to_ms("from")).transpose()?;
    let to_ms = request.to.as_ref().map(|t| t.to_ms("to")).transpose()?;
    let mut filter = filter(project_id, request.session_id.as_deref(), (from_ms, to_ms));
    if let Some(doc_type) = &request.doc_type {
        let doc_type: memory_vector::DocType = doc_type
            .parse()
            .map_err(|err| QueryError::invalid_argument(format!("doc_type: {err}")))?;
        filter = filter.doc_type(doc_type);
    }
    if let Some(level) = request.level {
        filter = filter
            .doc_type(memory_vector::DocType::TocNode)
            .level(level.as_str());
    }
    let started = Instant::now();
    let embedding = vector
        .embed_query(&request.query)
        .map_err(|err| QueryError::unavailable(err.to_string()))?;
    let embed_time_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let started = Instant::now();
    let hits = vector
        .search(&embedding, &filter, limit)
        .map_err(|err| QueryError::unavailable(err.to_string()))?;
    Ok(VectorSearchResponse {
        results: hits
            .into_iter()
            .enumerate()
            .map(|(index, hit)| VectorHitInfo {
                rank: index + 1,
                doc_id: hit.doc_id,
                doc_type: hit.doc_type.as_str().to_owned(),
                level: hit.level,
                score: hit.score,
                session_id: hit.session_id,
                timestamp_ms: hit.timestamp_ms,
            })
            .collect(),
        embed_time_ms,
        search_time_ms: started.elapsed().as_secs_f64() * 1_000.0,
    })
}

/// The vector filter of a search.
fn filter(
    project_id: &str,
    session_id: Option<&str>,
    (from_ms, to_ms): (Option<u64>, Option<u64>),
) -> DocSelector {
    let mut filter = DocSelector::in_project(project_id).time_range(from_ms, to_ms);
    if let Some(session_id) = session_id {
        filter = filter.session_id(session_id);
    }
    filter
}
