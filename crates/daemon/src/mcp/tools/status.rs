//! `status`: what is stored, how far the projections are, the indexes' health.

use std::fmt::Write as _;

use memory_types::ServiceError;
use serde_json::{Value, json};

use super::{Answer, ToolError};
use crate::mcp::backend::Backend;

pub(super) async fn status(backend: &Backend, default_project: &str) -> Result<Answer, ToolError> {
    let report = backend.status().await?;
    let (indexes, index_error) = match backend
        .call(default_project, "teleport.status", json!({}))
        .await
    {
        Ok(value) => (value, None),
        Err(err) => (Value::Null, Some(err.to_string())),
    };
    let total_events: u64 = report.projects.values().map(|project| project.events).sum();
    let mut text = format!(
        "{} mode, data dir {}: {total_events} events in {} project(s)\n",
        backend.mode().as_str(),
        report.data_dir,
        report.projects.len()
    );
    for (name, project) in &report.projects {
        let _ = writeln!(
            text,
            "  {name}: {} events, {} sessions",
            project.events, project.sessions
        );
    }
    let lagging: Vec<String> = report
        .consumers
        .iter()
        .filter(|consumer| consumer.lag > 0)
        .map(|consumer| format!("{} ({} behind)", consumer.name, consumer.lag))
        .collect();
    let _ = writeln!(
        text,
        "projections: {}",
        if lagging.is_empty() {
            "all caught up".to_owned()
        } else {
            lagging.join(", ")
        }
    );
    let _ = writeln!(text, "dead letters: {}", report.dead_letters);
    match (&index_error, indexes["message"].as_str()) {
        (Some(err), _) => {
            let _ = writeln!(text, "indexes: unknown ({err})");
        }
        (None, Some(message)) => {
            let _ = writeln!(text, "indexes: {message}");
        }
        (None, None) => {}
    }
    let mut structured =
        serde_json::to_value(&report).map_err(|err| ServiceError::internal(err.to_string()))?;
    if let Value::Object(map) = &mut structured {
        map.insert("mode".to_owned(), backend.mode().as_str().into());
        map.insert("total_events".to_owned(), total_events.into());
        map.insert("indexes".to_owned(), indexes);
        map.insert("index_error".to_owned(), index_error.into());
    }
    Ok(Answer { structured, text })
}
