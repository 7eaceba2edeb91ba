//! The JSON Schema of the query calls, committed as `schemas/query.v1.json`.
//!
//! One document whose `$defs` hold the request and the response of every method on
//! `memory.query.<project>.<method>`, and the error body any of them may answer instead.
//! It is generated from the Rust types of [`crate::api`] and [`crate::ideas_api`], and a
//! test fails when the committed file differs (`UPDATE_SCHEMAS=1 cargo test -p memory-query` rewrites it).
//!
//! Requests are described as the service reads them (fields with a default may be left
//! out, unknown fields are rejected), responses and errors as it writes them (every
//! field present, `null` where there is no value).

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::api::{
    EventsGetRequest, EventsGetResponse, GripExpandRequest, GripExpandResponse, NavigateRequest,
    NavigateResponse, SearchChildrenRequest, SearchChildrenResponse, SearchNodeRequest,
    SearchNodeResponse, SearchRequest, SearchResponse, TeleportSearchRequest,
    TeleportSearchResponse, TeleportStatusRequest, TeleportStatusResponse, TocBrowseRequest,
    TocBrowseResponse, TocNodeRequest, TocNodeResponse, TocRootRequest, TocRootResponse,
    VectorSearchResponse,
};
use crate::ideas_api::{
    DecisionsRequest, EntitiesSearchRequest, EntitiesSearchResponse, EntityIdeasRequest,
    IdeaGetRequest, IdeaGetResponse, IdeaListResponse, IdeasSearchRequest, IdeasSearchResponse,
    OpenItemsRequest, SessionContextRequest, SessionContextResponse, SpansListRequest,
    SpansListResponse, TimelineRequest, TimelineResponse,
};

/// The NATS subject of a query call; `<method>` is one of [`crate::METHODS`].
pub const QUERY_SUBJECT_PATTERN: &str = "memory.query.<project>.<method>";

/// Every method with the `$defs` names of its request and response, in the order of
/// [`crate::METHODS`].
pub const METHOD_SCHEMAS: &[(&str, &str, &str)] = &[
    ("toc.root", "TocRootRequest", "TocRootResponse"),
    ("toc.node", "TocNodeRequest", "TocNodeResponse"),
    ("toc.browse", "TocBrowseRequest", "TocBrowseResponse"),
    ("events.get", "EventsGetRequest", "EventsGetResponse"),
    ("grip.expand", "GripExpandRequest", "GripExpandResponse"),
    ("toc.search_node", "SearchNodeRequest", "SearchNodeResponse"),
    (
        "toc.search_children",
        "SearchChildrenRequest",
        "SearchChildrenPage",
    ),
    ("navigate", "NavigateRequest", "NavigateResponse"),
    ("search", "SearchRequest", "SearchResponse"),
    (
        "teleport.search",
        "TeleportSearchRequest",
        "TeleportSearchResponse",
    ),
    (
        "teleport.status",
        "TeleportStatusRequest",
        "TeleportStatusResponse",
    ),
    (
        "vector.search",
        "TeleportSearchRequest",
        "VectorSearchResponse",
    ),
    ("context.brief", "BriefRequest", "BriefResponse"),
    ("ideas.search", "IdeasSearchRequest", "IdeasSearchResponse"),
    ("ideas.get", "IdeaGetRequest", "IdeaGetResponse"),
    (
        "ideas.open_questions",
        "OpenItemsRequest",
        "IdeaListResponse",
    ),
    ("ideas.open_todos", "OpenItemsRequest", "IdeaListResponse"),
    ("ideas.decisions", "DecisionsRequest", "IdeaListResponse"),
    (
        "entities.search",
        "EntitiesSearchRequest",
        "EntitiesSearchResponse",
    ),
    ("entities.ideas", "EntityIdeasRequest", "IdeaListResponse"),
    ("spans.list", "SpansListRequest", "SpansListResponse"),
    ("timeline", "TimelineRequest", "TimelineResponse"),
    (
        "session_context",
        "SessionContextRequest",
        "SessionContextResponse",
    ),
];

/// The `$defs` name of the error body every method may answer instead of its response.
pub const ERROR_SCHEMA: &str = "ServiceError";

/// The `$defs` name of `T` (e.g. `SearchChildrenPage` for [`SearchChildrenResponse`]).
fn def_name<T: JsonSchema>() -> String {
    T::schema_name().into_owned()
}

/// Adds `T` to the generator's definitions and returns its `$defs` name.
fn define<T: JsonSchema>(generator: &mut SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    def_name::<T>()
}

/// The definitions of every request (deserialize contract) and of every response and the
/// error body (serialize contract). Types both sides use are taken from the request
/// side; [`tests`] checks that both sides describe them alike.
fn definitions() -> (Map<String, Value>, Map<String, Value>) {
    let mut requests = SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator();
    let request_names = [
        define::<TocRootRequest>(&mut requests),
        define::<TocNodeRequest>(&mut requests),
        define::<TocBrowseRequest>(&mut requests),
        define::<EventsGetRequest>(&mut requests),
        define::<GripExpandRequest>(&mut requests),
        define::<SearchNodeRequest>(&mut requests),
        define::<SearchChildrenRequest>(&mut requests),
        define::<NavigateRequest>(&mut requests),
        define::<SearchRequest>(&mut requests),
        define::<TeleportSearchRequest>(&mut requests),
        define::<TeleportStatusRequest>(&mut requests),
        define::<TeleportSearchRequest>(&mut requests),
        define::<crate::brief::BriefRequest>(&mut requests),
        define::<IdeasSearchRequest>(&mut requests),
        define::<IdeaGetRequest>(&mut requests),
        define::<OpenItemsRequest>(&mut requests),
        define::<OpenItemsRequest>(&mut requests),
        define::<DecisionsRequest>(&mut requests),
        define::<EntitiesSearchRequest>(&mut requests),
        define::<EntityIdeasRequest>(&mut requests),
        define::<SpansListRequest>(&mut requests),
        define::<TimelineRequest>(&mut requests),
        define::<SessionContextRequest>(&mut requests),
    ];
    let mut responses = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let response_names = [
        define::<TocRootResponse>(&mut responses),
        define::<TocNodeResponse>(&mut responses),
        define::<TocBrowseResponse>(&mut responses),
        define::<EventsGetResponse>(&mut responses),
        define::<GripExpandResponse>(&mut responses),
        define::<SearchNodeResponse>(&mut responses),
        define::<SearchChildrenResponse>(&mut responses),
        define::<NavigateResponse>(&mut responses),
        define::<SearchResponse>(&mut responses),
        define::<TeleportSearchResponse>(&mut responses),
        define::<TeleportStatusResponse>(&mut responses),
        define::<VectorSearchResponse>(&mut responses),
        define::<crate::brief::BriefResponse>(&mut responses),
        define::<IdeasSearchResponse>(&mut responses),
        define::<IdeaGetResponse>(&mut responses),
        define::<IdeaListResponse>(&mut responses),
        define::<IdeaListResponse>(&mut responses),
        define::<IdeaListResponse>(&mut responses),
        define::<EntitiesSearchResponse>(&mut responses),
        define::<IdeaListResponse>(&mut responses),
        define::<SpansListResponse>(&mut responses),
        define::<TimelineResponse>(&mut responses),
        define::<SessionContextResponse>(&mut responses),
    ];
    let error_name = define::<memory_types::ServiceError>(&mut responses);
    debug_assert_eq!(error_name, ERROR_SCHEMA);
    for ((_, request, response), (request_name, response_name)) in METHOD_SCHEMAS
        .iter()
        .zip(request_names.iter().zip(&response_names))
    {
        debug_assert_eq!(request, request_name);
        debug_assert_eq!(response, response_name);
    }
    (
        requests.take_definitions(true),
        responses.take_definitions(true),
    )
}

/// The query API's JSON Schema (draft 2020-12): `$defs` with every request and response
/// of [`METHOD_SCHEMAS`] and [`ERROR_SCHEMA`]; `x-methods` maps each method to its
/// request and response as JSON pointers into `$defs`.
#[must_use]
pub fn query_schema() -> Value {
    let (request_defs, response_defs) = definitions();
    let mut defs = request_defs;
    for (name, definition) in response_defs {
        defs.entry(name).or_insert(definition);
    }
    let mut sorted: Vec<(String, Value)> = defs.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let defs: Map<String, Value> = sorted.into_iter().collect();

    let pointer = |name: &str| format!("#/$defs/{name}");
    let mut methods = Map::new();
    let mut method_lines = Vec::new();
    for (method, request, response) in METHOD_SCHEMAS {
        methods.insert(
            (*method).to_string(),
            json!({
                "subject": format!("memory.query.<project>.{method}"),
                "request": pointer(request),
                "response": pointer(response),
            }),
        );
        method_lines.push(format!("- `{method}`: {request} → {response}"));
    }
    let description = format!(
        "Requests and responses of the agent-memory query calls. Each call is NATS \
         request/reply on the subject `{QUERY_SUBJECT_PATTERN}` (the CLI sends the same JSON \
         in-process); the request is a JSON object (an empty body is `{{}}`) and the reply \
         is the method's response, or {ERROR_SCHEMA} (`{{\"error\": {{\"code\", \
         \"message\"}}}}`) on failure.\n\n{}\n\nRequests are described as the service reads \
         them (fields with a default may be left out, unknown fields are rejected), \
         responses as it writes them. Generated from the Rust types of memory-query; \
         regenerate with `UPDATE_SCHEMAS=1 cargo test -p memory-query`.",
        method_lines.join("\n")
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agent-memory query API v1",
        "description": description,
        "x-subject": QUERY_SUBJECT_PATTERN,
        "x-methods": methods,
        "x-error": pointer(ERROR_SCHEMA),
        "$defs": defs,
    })
}

/// [`query_schema`] pretty-printed with a trailing newline, exactly as committed in
/// `schemas/query.v1.json`.
#[must_use]
pub fn query_schema_json() -> String {
    // Serialized as a `Schema`, which puts `$schema`, `title` and `description` first and
    // `$defs` last, like `schemas/event.v1.json`.
    let schema = match query_schema() {
        Value::Object(object) => schemars::Schema::from(object),
        other => schemars::Schema::from(other.as_bool().unwrap_or(true)),
    };
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
