//! The time table of contents as resources: `memory://toc/root` (the years of a project)
//! and the template `memory://toc/{node_id}` (one node — `toc:year:2026`,
//! `toc:month:2026-01`, `toc:week:2026-W02`, `toc:day:2026-01-05`, `toc:segment:…` —
//! with its summary, bullets citing grips, and children). Both take `?project=P` for
//! another project than the server's default. Each is JSON, every node id in it paired
//! with the URI to read next.

use memory_types::ServiceError;
use rmcp::ErrorData as McpError;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use super::args::check_project;
use super::backend::Backend;

const SCHEME_PREFIX: &str = "memory://toc/";
/// The years of the default project.
pub(crate) const ROOT_URI: &str = "memory://toc/root";
/// One node.
pub(crate) const NODE_URI_TEMPLATE: &str = "memory://toc/{node_id}";
const MIME_JSON: &str = "application/json";

/// What a URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TocTarget {
    Root,
    Node(String),
}

/// `memory://toc/root` or `memory://toc/<node id>`, with an optional `?project=P`;
/// the node id may be percent-encoded.
pub(crate) fn parse_uri(uri: &str) -> Result<(TocTarget, Option<String>), String> {
    let rest = uri.strip_prefix(SCHEME_PREFIX).ok_or_else(|| {
        format!("unknown resource {uri:?}: resources are {ROOT_URI} and {NODE_URI_TEMPLATE}")
    })?;
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let mut project = None;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
    {
        match pair.split_once('=') {
            Some(("project", value)) => project = Some(percent_decode(value)?),
            _ => {
                return Err(format!(
                    "unknown query {pair:?} in {uri:?}: only `project=P` is understood"
                ));
            }
        }
    }
    if let Some(project) = &project {
        check_project(project).map_err(|err| err.0)?;
    }
    let path = percent_decode(path)?;
    let target = match path.as_str() {
        "" => {
            return Err(format!(
                "{uri:?} names no node: use {ROOT_URI} or {NODE_URI_TEMPLATE}"
            ));
        }
        "root" => TocTarget::Root,
        _ => TocTarget::Node(path),
    };
    Ok((target, project))
}

/// The URI of `node_id` in `project` (no query for the default project).
pub(crate) fn node_uri(node_id: &str, project: &str, default_project: &str) -> String {
    let query = if project == default_project {
        String::new()
    } else {
        format!("?project={project}")
    };
    format!("{SCHEME_PREFIX}{node_id}{query}")
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = bytes
                .get(index + 1..index + 3)
                .and_then(|pair| std::str::from_utf8(pair).ok())
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in {text:?}"))?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

/// The template clients fill in.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(NODE_URI_TEMPLATE, "toc-node")
            .with_title("A node of the time table of contents")
            .with_description(
                "One period of past sessions: a year, month, ISO week, day or a segment of \
                 one session (node ids like toc:month:2026-01, toc:day:2026-01-30, \
                 toc:segment:…), with its title, summary, bullets citing grip ids, keywords \
                 and children, each with its URI. Add ?project=P for another project.",
            )
            .with_mime_type(MIME_JSON),
    ]
}

/// The root and the default project's years.
pub(crate) async fn list(backend: &Backend, default_project: &str) -> Vec<Resource> {
    let mut resources = vec![
        Resource::new(ROOT_URI, "toc-root")
            .with_title(format!(
                "Time table of contents of project {default_project}"
            ))
            .with_description(
                "The years that hold memory, each with its summary, bullets and months; \
                 start here to browse past sessions by time.",
            )
            .with_mime_type(MIME_JSON),
    ];
    match backend.call(default_project, "toc.root", json!({})).await {
        Ok(value) => {
            for year in value["years"].as_array().into_iter().flatten() {
                let Some(node_id) = year["node_id"].as_str() else {
                    continue;
                };
                resources.push(
                    Resource::new(node_uri(node_id, default_project, default_project), node_id)
                        .with_title(year["title"].as_str().unwrap_or(node_id).to_owned())
                        .with_mime_type(MIME_JSON),
                );
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot list the years for resources/list"),
    }
    resources
}

/// Reads `uri`.
pub(crate) async fn read(
    backend: &Backend,
    default_project: &str,
    uri: &str,
) -> Result<ResourceContents, McpError> {
    let (target, project) = parse_uri(uri).map_err(|message| {
        if uri.starts_with(SCHEME_PREFIX) {
            McpError::invalid_params(message, Some(json!({"uri": uri})))
        } else {
            McpError::resource_not_found(message, Some(json!({"uri": uri})))
        }
    })?;
    let project = project.unwrap_or_else(|| default_project.to_owned());
    let document = match target {
        TocTarget::Root => {
            let mut value = backend
                .call(&project, "toc.root", json!({}))
                .await
                .map_err(|err| service_error(err, uri))?;
            add_uris(&mut value["years"], &project, default_project);
            value
        }
        TocTarget::Node(node_id) => {
            let value = backend
                .call(&project, "toc.node", json!({"node_id": node_id}))
                .await
                .map_err(|err| service_error(err, uri))?;
            let mut node = value["node"].clone();
            add_child_uris(&mut node, &project, default_project);
            json!({"project_id": project, "uri": uri, "node": node})
        }
    };
    let text = serde_json::to_string_pretty(&document)
        .map_err(|err| McpError::internal_error(err.to_string(), None))?;
    Ok(ResourceContents::text(text, uri).with_mime_type(MIME_JSON))
}

/// Gives each node of a list its `uri` and its children's `child_uris`.
fn add_uris(nodes: &mut Value, project: &str, default_project: &str) {
    for node in nodes.as_array_mut().into_iter().flatten() {
        add_child_uris(node, project, default_project);
    }
}

fn add_child_uris(node: &mut Value, project: &str, default_project: &str) {
    let own = node["node_id"]
        .as_str()
        .map(|node_id| node_uri(node_id, project, default_project));
    let children: Vec<String> = node["child_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|child| node_uri(child, project, default_project))
        .collect();
    if let Value::Object(map) = node {
        if let Some(own) = own {
            map.insert("uri".to_owned(), own.into());
        }
        map.insert("child_uris".to_owned(), children.into());
    }
}

fn service_error(err: ServiceError, uri: &str) -> McpError {
    let data = Some(json!({"uri": uri}));
    match err.error.code {
        memory_types::ErrorCode::NotFound => McpError::resource_not_found(err.error.message, data),
        memory_types::ErrorCode::InvalidArgument => {
            McpError::invalid_params(err.error.message, data)
        }
        _ => McpError::internal_error(err.to_string(), data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_the_root_or_a_node_and_maybe_a_project() {
        assert_eq!(parse_uri(ROOT_URI), Ok((TocTarget::Root, None)));
        assert_eq!(
            parse_uri("memory://toc/toc:day:2026-01-30"),
            Ok((TocTarget::Node("toc:day:2026-01-30".into()), None))
        );
        assert_eq!(
            parse_uri("memory://toc/toc%3Amonth%3A2026-01?project=webapp"),
            Ok((
                TocTarget::Node("toc:month:2026-01".into()),
                Some("webapp".into())
            ))
        );
        assert_eq!(
            parse_uri("memory://toc/root?project=ingest-pipeline"),
            Ok((TocTarget::Root, Some("ingest-pipeline".into())))
        );
        for bad in [
            "file:///etc/passwd",
            "memory://toc/",
            "memory://toc/root?project=a b",
            "memory://toc/root?user=me",
            "memory://toc/toc%3",
        ] {
            assert!(parse_uri(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn node_uris_carry_the_project_only_when_it_is_not_the_default() {
        assert_eq!(
            node_uri("toc:year:2026", "webapp", "webapp"),
            "memory://toc/toc:year:2026"
        );
        assert_eq!(
            node_uri("toc:year:2026", "other", "webapp"),
            "memory://toc/toc:year:2026?project=other"
        );
        let mut node = json!({"node_id": "toc:year:2026", "child_ids": ["toc:month:2026-01"]});
        add_child_uris(&mut node, "webapp", "webapp");
        assert_eq!(node["uri"], "memory://toc/toc:year:2026");
        assert_eq!(
            node["child_uris"],
            json!(["memory://toc/toc:month:2026-01"])
        );
    }
}
