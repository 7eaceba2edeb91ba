//! Properties of the query API under arbitrary input: whatever bytes or JSON a caller
//! sends to whatever method of whatever project, the service answers — a JSON result,
//! or a structured error with a code and a message — and never panics. The JSON is
//! built from the request fields the API knows (with values of any type and shape) and
//! from fields it does not, so that it reaches past the first parse.
//!
//! `make test` runs each property with proptest's default number of cases;
//! `make test-props` runs them with `PROPTEST_CASES=1000000` (release build).

use std::sync::OnceLock;

use memory_projections::Bm25Handle;
use memory_projections::testsuite::sample_store_with_bm25;
use memory_query::{METHODS, QueryService};
use memory_toc::Tz;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// The sample (two projects, fifteen sessions) with its BM25 index, shared.
fn service() -> &'static QueryService {
    static SERVICE: OnceLock<(tempfile::TempDir, QueryService)> = OnceLock::new();
    &SERVICE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let (store, bm25) = sample_store_with_bm25(dir.path());
            let service =
                QueryService::new(store, Tz::UTC).with_bm25(Some(Bm25Handle::open_read_only(bm25)));
            (dir, service)
        })
        .1
}

/// The fields of the API's requests (`schemas/query.v1.json`, the `*Request` types).
const REQUEST_FIELDS: &[&str] = &[
    "after",
    "anchor",
    "as_of",
    "before",
    "caller_session_id",
    "child_level",
    "doc_type",
    "entity",
    "entity_id",
    "fields",
    "from",
    "grip_id",
    "id",
    "idea_id",
    "include_n_minus_1",
    "include_preferences",
    "include_superseded",
    "intent",
    "level",
    "limit",
    "max_depth",
    "max_nodes",
    "min_salience",
    "mode",
    "node_id",
    "now",
    "page_token",
    "parent_id",
    "phrases",
    "project_id",
    "query",
    "recency_half_life_days",
    "referenced_event_ids",
    "sector",
    "session_id",
    "sessions",
    "since",
    "to",
    "token_budget",
    "type",
];

/// Strings a request might carry: ids and names in the sample's shapes, times, and noise.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("toc:day:2026-01-30".to_owned()),
        Just("toc:segment:2026-01-30:01KG4Q6D7J8ZTE0V3N5H2J6K00".to_owned()),
        Just("toc:year:99999".to_owned()),
        Just("grip:1769764500000:01KG4Q6D7J8ZTE0V3N5H2J6K00".to_owned()),
        Just("2026-01-30T09:00:00Z".to_owned()),
        Just("JWT expiry".to_owned()),
        Just("webapp-s01".to_owned()),
        "[a-z:_0-9-]{0,40}",
        ".{0,60}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e12..1.0e12_f64).prop_map(|x| Number::from_f64(x).map_or(Value::Null, Value::Number)),
        (0_i64..3_000).prop_map(Value::from),
    ]
}

/// Any JSON value, a few levels deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((field(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(REQUEST_FIELDS).prop_map(str::to_owned),
        1 => "[a-z_]{0,12}",
    ]
}

/// A request body: an object of known and unknown fields, mostly.
fn request() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::vec((field(), json()), 0..8)
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        1 => json(),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(METHODS).prop_map(str::to_owned),
        1 => "[a-z._]{0,24}",
    ]
}

fn project() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just("webapp".to_owned()),
        2 => Just("mobile".to_owned()),
        1 => Just("nobody".to_owned()),
        1 => ".{0,20}",
    ]
}

/// The service answered: a JSON value, or an error that says what and why.
fn answered(result: Result<Value, memory_types::ServiceError>) -> Result<(), TestCaseError> {
    match result {
        Ok(value) => prop_assert!(value.is_object() || value.is_array(), "{value}"),
        Err(err) => {
            prop_assert!(!err.error.message.trim().is_empty(), "{err:?}");
            let wire =
                serde_json::to_value(&err).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(wire["error"]["code"].is_string(), "{wire}");
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_json_request_to_any_method_is_answered(
        project in project(),
        method in method(),
        body in request(),
    ) {
        let bytes = serde_json::to_vec(&body).expect("json");
        answered(service().call(&project, &method, &bytes))?;
    }

    #[test]
    fn any_bytes_to_any_method_are_answered(
        project in project(),
        method in method(),
        bytes in prop::collection::vec(any::<u8>(), 0..400),
    ) {
        answered(service().call(&project, &method, &bytes))?;
    }
}
