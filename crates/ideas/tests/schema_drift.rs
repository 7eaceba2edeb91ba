//! `schemas/agent-output.v1.json` is exactly what the Rust change-set types generate, so
//! an engine's output contract cannot drift silently. Regenerate with
//! `UPDATE_SCHEMAS=1 cargo test -p memory-ideas`.

use std::path::PathBuf;

fn generated() -> String {
    let schema = memory_ideas::change_set_schema();
    format!(
        "{}\n",
        serde_json::to_string_pretty(&schema).expect("schema is JSON")
    )
}

#[test]
fn committed_agent_output_schema_matches_the_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/agent-output.v1.json");
    let generated = generated();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).expect("write schema");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/agent-output.v1.json is out of date with ChangeSet; run UPDATE_SCHEMAS=1 cargo test -p memory-ideas"
    );
}

#[test]
fn the_schema_refuses_unknown_fields_and_names_every_relation() {
    let schema = memory_ideas::change_set_schema();
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false)
    );
    let text = schema.to_string();
    for relation in memory_ideas::RelationType::ALL {
        assert!(text.contains(relation.as_str()), "{relation}");
    }
}
