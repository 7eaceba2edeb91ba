//! `demo`: the whole path on the bundled sample in a temporary data dir, by the same
//! commands a user runs (ingest, status, export, the query service).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use memory_config::Config;
use memory_projections::SessionCatalog;

use crate::cli::{DemoArgs, ExportArgs, IngestArgs};
use crate::embedded::{init_tool_tracing, open_store};
use crate::settings::{bm25_settings, vector_settings};

/// The bundled sample conversations, so `demo` works from any directory.
const SAMPLE_CONVERSATIONS: &str = include_str!("../../../sample/conversations.jsonl");

/// `demo`: a temporary data dir, the sample conversations, status and an export.
pub async fn run(
    config: &Config,
    args: DemoArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let workdir = tempfile_dir()?;
    let data_dir = workdir.join("data");
    let sample_path = match args.file {
        Some(path) => path,
        None => {
            let path = workdir.join("conversations.jsonl");
            std::fs::write(&path, SAMPLE_CONVERSATIONS).context("cannot write the sample")?;
            path
        }
    };
    println!(
        "== ingest {} into {}",
        sample_path.display(),
        data_dir.display()
    );
    let ingest_args = IngestArgs {
        file: sample_path,
        project: memory_types::DEFAULT_PROJECT.into(),
        wait: true,
        wait_timeout_secs: crate::cli::DEFAULT_WAIT_TIMEOUT_SECS,
        json: false,
    };
    let code = crate::ingest_file::ingest_into(config, &data_dir, &ingest_args).await?;
    println!("\n== status");
    crate::status::print_embedded(config, &data_dir, false)?;
    println!("\n== first events of the newest webapp session");
    let store = open_store(config, &data_dir)?;
    let newest = SessionCatalog::sessions(&store, "webapp")
        .map_err(|err| anyhow::anyhow!("{err}"))?
        .into_iter()
        .max_by_key(|session| session.last_timestamp_ms);
    drop(store);
    if let Some(session) = newest {
        let export_args = ExportArgs {
            project: "webapp".into(),
            session: Some(session.session_id),
            from: None,
            to: None,
        };
        crate::export::write_events(config, &data_dir, &export_args, Some(5))?;
    }
    demo_queries(config, &data_dir)?;
    let _ = std::fs::remove_dir_all(&workdir);
    Ok(code)
}

/// The time table of contents of the sample: the tree, a navigation, a search by each
/// tier.
fn demo_queries(config: &Config, data_dir: &Path) -> anyhow::Result<()> {
    let store = open_store(config, data_dir)?;
    let bm25 = bm25_settings(config, data_dir).map(memory_projections::Bm25Handle::open);
    let vector = vector_settings(config, data_dir).map(memory_projections::VectorHandle::open);
    let service = crate::query_cli::query_service(config, store, config.toc.tz()?, bm25, vector);
    let fail = |err: memory_query::QueryError| {
        anyhow::anyhow!("{}", memory_types::ServiceError::from(err))
    };
    println!("\n== the time table of contents of webapp");
    for year in service.toc_root("webapp").map_err(fail)?.years {
        crate::query_cli::print_node_line(&year);
        let request = memory_query::api::TocBrowseRequest {
            node_id: Some(year.node_id.to_string()),
            limit: None,
            page_token: None,
        };
        for month in service
            .toc_browse("webapp", &request)
            .map_err(fail)?
            .children
        {
            crate::query_cli::print_node_line(&month);
        }
    }
    println!("\n== navigate \"what did we decide about JWT expiry last month?\" (now: 2026-02-20)");
    let navigation = service
        .navigate(
            "webapp",
            &memory_query::api::NavigateRequest {
                query: "what did we decide about JWT expiry last month?".into(),
                now: Some(memory_query::api::TimeArg::Text("2026-02-20".into())),
                token_budget: Some(400),
                ..Default::default()
            },
        )
        .map_err(fail)?;
    for step in &navigation.path {
        println!("  {:<8} {}", step.action, step.reason);
    }
    println!("\n== teleport status");
    println!("  {}", service.teleport_status().map_err(fail)?.message);
    use memory_query::api::SearchMode;
    for (mode, label, query) in [
        (
            SearchMode::Auto,
            "auto: the best healthy tier",
            "why were iOS users logged out?",
        ),
        (
            SearchMode::Semantic,
            "semantic: by meaning alone, no shared keyword",
            "how long do login credentials stay valid?",
        ),
        (
            SearchMode::Toc,
            "toc: no index",
            "why were iOS users logged out?",
        ),
    ] {
        println!("\n== search {query:?} (mode {label})");
        let search = service.search(
            "webapp",
            &memory_query::api::SearchRequest {
                query: query.into(),
                token_budget: Some(300),
                mode: Some(mode),
                ..Default::default()
            },
        );
        match search {
            Ok(search) => crate::query_cli::print_search(&search),
            // A forced tier that cannot answer says why (e.g. no model installed).
            Err(err) if mode != SearchMode::Auto => println!("  {err}"),
            Err(err) => return Err(fail(err)),
        }
    }
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "agent-memory-demo-{}-{}",
        std::process::id(),
        memory_types::now_ms()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}
