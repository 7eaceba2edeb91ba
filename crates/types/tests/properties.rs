//! Properties of the ingest decoder under arbitrary input: any payload — bytes, or JSON
//! built from the event's fields with values of any type and shape — is either refused
//! whole with a reason, or split into exactly one outcome per event, each an event or
//! an error that names its rule and says what is wrong; it never panics. An accepted
//! event keeps the limits it was checked against.
//!
//! `make test` runs each property with proptest's default number of cases;
//! `make test-props` runs them with `PROPTEST_CASES=1000000` (release build).

use memory_types::{EventKind, KNOWN_FIELDS, ValidationLimits, parse_payload};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("2026-01-30T09:00:00Z".to_owned()),
        Just("2026-01-30T09:00:00+25:00".to_owned()),
        Just("p".to_owned()),
        Just("user".to_owned()),
        prop::sample::select(&EventKind::ALL[..]).prop_map(|kind| kind.as_str().to_owned()),
        "[a-z_0-9.-]{0,30}",
        ".{0,80}",
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| Number::from_f64(x).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{0,10}", inner), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(&KNOWN_FIELDS[..]).prop_map(str::to_owned),
        1 => "[a-z_]{0,12}",
    ]
}

/// An event-shaped object: a valid event with a few fields replaced (by values of any
/// kind) or removed — so that many get deep into the rules, some all the way — or an
/// object of the event's fields with values of any kind.
fn event() -> impl Strategy<Value = Value> {
    let valid = serde_json::json!({"event_id": "e1", "session_id": "s1",
        "timestamp": 1_769_764_500_000_u64, "kind": "user_message", "text": "hi"});
    let mutated =
        prop::collection::vec((field(), prop::option::of(json())), 0..4).prop_map(move |changes| {
            let mut event = valid.clone();
            for (name, value) in changes {
                match value {
                    Some(value) => event[name.as_str()] = value,
                    None => {
                        event.as_object_mut().map(|object| object.remove(&name));
                    }
                }
            }
            event
        });
    let random = prop::collection::vec((field(), json()), 0..10)
        .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>()));
    prop_oneof![mutated, random]
}

fn payload() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(event(), 0..6).prop_map(Value::Array),
        2 => event(),
        1 => json(),
    ]
}

fn check(bytes: &[u8], limits: &ValidationLimits) -> Result<(), TestCaseError> {
    match parse_payload(bytes, "p", limits) {
        Err(refused) => prop_assert!(!refused.to_string().trim().is_empty()),
        Ok(outcomes) => {
            if let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(bytes) {
                prop_assert_eq!(outcomes.len(), items.len(), "one outcome per event");
            }
            for outcome in outcomes {
                match outcome {
                    Ok(event) => {
                        prop_assert!(!event.event_id.is_empty());
                        prop_assert!(!event.session_id.is_empty());
                        prop_assert!(event.text.len() <= limits.max_event_bytes);
                    }
                    Err(err) => prop_assert!(!err.message.trim().is_empty(), "{err:?}"),
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn any_json_payload_is_refused_whole_or_judged_event_by_event(payload in payload()) {
        let bytes = serde_json::to_vec(&payload).expect("json");
        check(&bytes, &ValidationLimits::default())?;
    }

    #[test]
    fn any_bytes_are_refused_whole_or_judged_event_by_event(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        check(&bytes, &ValidationLimits::default())?;
    }
}
