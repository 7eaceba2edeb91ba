//! The committed JSON Schema must be exactly what the Rust types generate, so the public
//! contract cannot drift silently. Regenerate with `UPDATE_SCHEMAS=1 cargo test -p memory-types`.

use std::path::PathBuf;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/event.v1.json")
}

#[test]
fn committed_event_schema_matches_the_types() {
    let generated = memory_types::event_schema_json();
    let path = committed_path();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/event.v1.json is out of date with EventV1; run UPDATE_SCHEMAS=1 cargo test -p memory-types"
    );
}

#[test]
fn schema_rejects_what_validation_rejects_and_names_every_kind() {
    let schema: serde_json::Value =
        serde_json::from_str(&memory_types::event_schema_json()).expect("schema is JSON");
    let text = schema.to_string();
    for kind in memory_types::EventKind::ALL {
        assert!(
            text.contains(kind.as_str()),
            "schema lacks kind {}",
            kind.as_str()
        );
    }
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false)
    );
    let required = schema["required"].as_array().expect("required list");
    for field in ["session_id", "timestamp", "kind"] {
        assert!(
            required.iter().any(|r| r == field),
            "{field} must be required"
        );
    }
}
