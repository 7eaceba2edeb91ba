//! The query commands: `search`, `navigate`, `toc` and `grip`, and the client both
//! modes share (`teleport` and `admin` use it too).
//!
//! Each builds the same JSON request the NATS service takes and sends it either to the
//! data dir in this process (embedded mode, the default) or to a running daemon
//! (`--nats-url`), so the two modes cannot drift apart.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use memory_config::Config;
use memory_query::QueryService;
use memory_query::api::{
    GripExpandResponse, NavigateResponse, SearchChildrenResponse, SearchNodeResponse,
    SearchResponse, TocBrowseResponse, TocNodeResponse, TocRootResponse,
};
use memory_store::Store;
use memory_text::truncate_chars;
use memory_toc::TocNode;
use memory_types::{Event, ServiceError};
use serde_json::{Value, json};

use crate::cli::{GripCommand, NavigateArgs, SearchArgs, TocCommand};
use crate::embedded::{init_tool_tracing, open_store, start_pipeline};
use crate::query_target::QueryTarget;

/// Prints a line to stdout. A reader that went away (`| head`) ends the output, not
/// the process with a panic, which is what `println!` does on a closed pipe.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// [`say!`] without the newline.
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// How long a remote call may take.
pub(crate) const REMOTE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where calls go.
pub(crate) enum QueryClient {
    Embedded(QueryService),
    /// A running daemon, with its query subject prefix (`[nats] query_subject_prefix`).
    Remote(async_nats::Client, String),
}

impl QueryClient {
    /// Opens the data dir (after letting the actors finish any work a previous run
    /// left) or connects to the daemon.
    pub(crate) async fn open(
        config: &Config,
        data_dir: &Path,
        nats_url: Option<&str>,
    ) -> anyhow::Result<Self> {
        if let Some(url) = nats_url {
            let mut nats = config.nats.clone();
            url.clone_into(&mut nats.url);
            let client = memory_nats::connect(&nats, |_| {}).await?;
            return Ok(QueryClient::Remote(
                client,
                config.nats.query_subject_prefix.clone(),
            ));
        }
        let store = open_store(config, data_dir)?;
        let pipeline = start_pipeline(config, store.clone()).await?;
        if !pipeline.wait_caught_up(Duration::from_secs(300)).await {
            tracing::warn!("projections are still catching up; answers may miss recent events");
        }
        let (bm25, vector) = (pipeline.bm25.clone(), pipeline.vector.clone());
        pipeline.shutdown().await;
        let tz = config.toc.tz()?;
        Ok(QueryClient::Embedded(crate::query_cli::query_service(
            config, store, tz, bm25, vector,
        )))
    }

    pub(crate) async fn call(
        &self,
        project: &str,
        method: &str,
        body: &Value,
    ) -> Result<Value, ServiceError> {
        match self {
            QueryClient::Embedded(service) => {
                let payload = serde_json::to_vec(body)
                    .map_err(|err| ServiceError::invalid_argument(err.to_string()))?;
                service.call(project, method, &payload)
            }
            QueryClient::Remote(client, prefix) => {
                let subject = format!("{prefix}.{project}.{method}");
                remote_call(client, subject, body).await
            }
        }
    }
}

/// The query service over `store` with the indexes and the search settings of `config`
/// (one place for `serve` and the embedded CLI).
pub(crate) fn query_service(
    config: &Config,
    store: Store,
    tz: memory_toc::Tz,
    bm25: Option<memory_projections::Bm25Handle>,
    vector: Option<memory_projections::VectorHandle>,
) -> QueryService {
    let store_dir = store.path().to_path_buf();
    QueryService::new(store, tz)
        .with_scan_budget(config.toc.search_scan_budget_events)
        .with_bm25(bm25)
        .with_vector(vector)
        .with_hybrid(memory_query::HybridSettings {
            fusion: match config.teleport.fusion {
                memory_config::FusionMethod::Score => memory_query::Fusion::Score,
                memory_config::FusionMethod::Rrf => memory_query::Fusion::Rrf,
                memory_config::FusionMethod::Salience => memory_query::Fusion::Salience,
            },
            expand_query: config.teleport.expand_query,
            ranking: ranking_weights(&config.teleport.ranking),
            min_similarity: config.teleport.vector.min_similarity,
        })
        .with_search_first(memory_query::SearchFirst {
            writer: phrase_writer(config, &store_dir),
            by_default: config.teleport.llm_phrases,
            budget: std::time::Duration::from_millis(config.teleport.llm_phrases_timeout_ms),
        })
}

/// The `[llm]` model as `search`'s phrase writer, `None` when no model is configured.
fn phrase_writer(
    config: &Config,
    data_dir: &std::path::Path,
) -> Option<std::sync::Arc<dyn memory_query::PhraseWriter>> {
    if !config.llm.enabled {
        return None;
    }
    match memory_llm::ChatClient::new(&config.llm) {
        Ok(client) => Some(std::sync::Arc::new(LlmPhrases(
            client.with_spend(crate::settings::llm_spend(config, data_dir)),
        ))),
        Err(err) => {
            tracing::error!(error = %err, "cannot use the configured LLM; search phrases are offline");
            None
        }
    }
}

/// [`memory_llm::write_phrases`] as a [`memory_query::PhraseWriter`].
struct LlmPhrases(memory_llm::ChatClient);

impl memory_query::PhraseWriter for LlmPhrases {
    fn write(
        &self,
        question: &str,
        budget: std::time::Duration,
    ) -> Result<memory_query::WrittenPhrases, memory_query::PhraseWriterError> {
        match memory_llm::write_phrases(&self.0, question, budget) {
            Ok(phrases) => Ok(memory_query::WrittenPhrases {
                phrases: phrases.search_terms,
                include_preferences: phrases.include_preferences,
                include_n_minus_1: phrases.include_n_minus_1,
            }),
            Err(err) => Err(memory_query::PhraseWriterError {
                reason: match &err {
                    memory_llm::LlmError::Timeout { .. } => "timeout",
                    memory_llm::LlmError::BudgetExhausted { .. } => "budget",
                    memory_llm::LlmError::RateLimited { .. } => "rate_limited",
                    memory_llm::LlmError::InvalidAnswer(_)
                    | memory_llm::LlmError::InvalidResponse(_) => "invalid",
                    _ => "unavailable",
                },
                detail: err.to_string(),
            }),
        }
    }
}

/// `[teleport.ranking]` as the query service reads it.
fn ranking_weights(ranking: &memory_config::RankingConfig) -> memory_query::RankingWeights {
    memory_query::RankingWeights {
        semantic: ranking.semantic,
        keyword: ranking.keyword,
        salience: ranking.salience,
        recency: ranking.recency,
        recency_decay_per_day: ranking.recency_decay_per_day,
        sector_boosts: ranking.sector_boosts,
        default_salience: ranking.default_salience,
    }
}

pub(crate) async fn remote_call(
    client: &async_nats::Client,
    subject: String,
    body: &Value,
) -> Result<Value, ServiceError> {
    remote_call_within(client, subject, body, REMOTE_TIMEOUT).await
}

/// [`remote_call`] with its own time limit (a rebuild takes longer than a query).
pub(crate) async fn remote_call_within(
    client: &async_nats::Client,
    subject: String,
    body: &Value,
    timeout: Duration,
) -> Result<Value, ServiceError> {
    let payload =
        serde_json::to_vec(body).map_err(|err| ServiceError::internal(err.to_string()))?;
    let reply = tokio::time::timeout(timeout, client.request(subject.clone(), payload.into()))
        .await
        .map_err(|_| {
            ServiceError::unavailable(format!(
                "no answer on {subject} within {} s",
                timeout.as_secs()
            ))
        })?
        .map_err(|err| ServiceError::unavailable(format!("{subject}: {err}")))?;
    let value: Value = serde_json::from_slice(&reply.payload)
        .map_err(|err| ServiceError::internal(format!("reply is not JSON: {err}")))?;
    if value.get("error").is_some() {
        return Err(serde_json::from_value(value).unwrap_or_else(|err| {
            ServiceError::internal(format!("malformed error reply: {err}"))
        }));
    }
    Ok(value)
}

pub(crate) fn decode<T: serde::de::DeserializeOwned>(value: Value) -> anyhow::Result<T> {
    serde_json::from_value(value).context("unexpected response shape")
}

pub(crate) fn print_json(value: &Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// Sends one call and settles what needs nothing more: an error is reported (exit 1),
/// and with `--json` the reply is printed (exit 0). `Ok(Ok(value))` is a reply left
/// for the caller's human-readable printer.
pub(crate) async fn call_or_print(
    client: &QueryClient,
    target: &QueryTarget,
    method: &str,
    body: &Value,
) -> anyhow::Result<Result<Value, ExitCode>> {
    let value = match client.call(&target.project, method, body).await {
        Ok(value) => value,
        Err(err) => return report_error(&err, target.json).map(Err),
    };
    if target.json {
        print_json(&value)?;
        return Ok(Err(ExitCode::SUCCESS));
    }
    Ok(Ok(value))
}

/// Prints a call's error the same way in both modes and returns exit code 1.
pub(crate) fn report_error(err: &ServiceError, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        print_json(&serde_json::to_value(err)?)?;
    } else {
        eprintln!("error: {err}");
    }
    Ok(ExitCode::FAILURE)
}

pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max_chars {
        flat
    } else {
        format!("{}…", truncate_chars(&flat, max_chars))
    }
}

pub(crate) fn print_event(event: &Event, indent: &str) {
    say!(
        "{indent}{} {:<9} {}",
        memory_types::format_timestamp_ms(event.timestamp_ms),
        event.role.as_str(),
        one_line(&event.text, 160)
    );
}

pub(crate) fn print_node_line(node: &TocNode) {
    say!(
        "  {:<40} {:>5} events  {}",
        node.node_id.to_string(),
        node.num_events,
        one_line(&node.title, 100)
    );
}

/// `search …`.
pub async fn search(
    config: &Config,
    data_dir: &Path,
    args: SearchArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let client = QueryClient::open(config, data_dir, args.target.nats_url.as_deref()).await?;
    if let Some(batch) = &args.batch {
        return search_batch(&client, batch, &args).await;
    }
    let query = args
        .query
        .clone()
        .or_else(|| args.query_flag.clone())
        .context("give a query: `search \"what did we decide about JWT expiry?\"`")?;
    let target = &args.target;
    let (method, body) = if let Some(node) = &args.node {
        (
            "toc.search_node",
            json!({"node_id": node, "query": query, "limit": args.limit, "token_budget": args.token_budget}),
        )
    } else if let Some(parent) = &args.parent {
        (
            "toc.search_children",
            json!({"parent_id": parent, "query": query, "limit": args.limit, "token_budget": args.token_budget}),
        )
    } else if let Some(level) = &args.level {
        (
            "toc.search_children",
            json!({"child_level": level, "query": query, "limit": args.limit, "token_budget": args.token_budget}),
        )
    } else {
        (
            "search",
            json!({"query": query, "limit": args.limit, "token_budget": args.token_budget,
                   "mode": args.mode, "from": args.from, "to": args.to,
                   "phrases": if args.llm_phrases { json!("llm") }
                              else { json!((!args.phrases.is_empty()).then_some(&args.phrases)) },
                   "doc_type": args.doc_type,
                   "recency_half_life_days": args.recency_half_life_days}),
        )
    };
    let mut body = body;
    strip_nulls(&mut body);
    let value = match call_or_print(&client, target, method, &body).await? {
        Ok(value) => value,
        Err(code) => return Ok(code),
    };
    match method {
        "toc.search_node" => {
            let response: SearchNodeResponse = decode(value)?;
            say!(
                "{} ({}): {} matches",
                response.node_id,
                response.level.as_str(),
                response.matches.len()
            );
            for m in &response.matches {
                let field = serde_json::to_value(m.field)?;
                say!(
                    "  [{:.2}] {:<8} {}",
                    m.score,
                    field.as_str().unwrap_or_default(),
                    one_line(&m.text, 120)
                );
            }
        }
        "toc.search_children" => {
            let response: SearchChildrenResponse = decode(value)?;
            for result in &response.results {
                say!(
                    "[{:.2}] {} — {}",
                    result.relevance_score,
                    result.node_id,
                    one_line(&result.title, 100)
                );
                for m in result.matches.iter().take(3) {
                    say!("        {}", one_line(&m.text, 120));
                }
            }
            if response.has_more {
                say!("(more results; raise --limit)");
            }
        }
        _ => print_search(&decode(value)?),
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_search(response: &SearchResponse) {
    say!(
        "tier: {}{} · {} results · ~{} tokens · {} ms",
        response.tier,
        response
            .fallback_reason
            .as_ref()
            .map(|reason| format!(" (fallback: {reason})"))
            .unwrap_or_default(),
        response.results.len(),
        response.token_estimate,
        response.took_ms
    );
    if response.search_terms_used.len() > 1 || response.phrase_fallback_reason.is_some() {
        say!(
            "phrases ({}): {}{}",
            serde_json::to_value(response.phrase_source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            response.search_terms_used.join(" · "),
            response
                .phrase_fallback_reason
                .as_ref()
                .map(|reason| format!(" (model phrases not used: {reason})"))
                .unwrap_or_default()
        );
    }
    for (rank, result) in response.results.iter().enumerate() {
        let included = if result.source == memory_query::api::ResultSource::AlwaysInclude {
            " (always included)"
        } else {
            ""
        };
        say!(
            "\n{}. [{:.2}] {}{included} — {}",
            rank + 1,
            result.score,
            result.doc_id,
            one_line(&result.text, 100)
        );
        for event in &result.evidence {
            print_event(event, "     ");
        }
    }
}

pub(crate) fn strip_nulls(value: &mut Value) {
    if let Value::Object(map) = value {
        map.retain(|_, v| !v.is_null());
    }
}

/// `search --batch FILE --json`: one response line per request line, same order; a
/// line that fails gets `{"id", "error"}` and the rest go on.
async fn search_batch(
    client: &QueryClient,
    batch: &Path,
    args: &SearchArgs,
) -> anyhow::Result<ExitCode> {
    let reader: Box<dyn BufRead> = if batch == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(batch)
                .with_context(|| format!("cannot open {}", batch.display()))?,
        ))
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (number, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("cannot read line {}", number + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let (id, response) = match serde_json::from_str::<Value>(&line) {
            Err(err) => (
                Value::Null,
                Err(ServiceError::invalid_argument(format!(
                    "line {} is not JSON: {err}",
                    number + 1
                ))),
            ),
            Ok(mut request) => {
                let id = request.get("id").cloned().unwrap_or(Value::Null);
                let project = request
                    .get("project_id")
                    .and_then(Value::as_str)
                    .unwrap_or(&args.target.project)
                    .to_string();
                if let Value::Object(map) = &mut request {
                    for (key, flag) in
                        [("mode", &args.mode), ("from", &args.from), ("to", &args.to)]
                    {
                        if let Some(flag) = flag {
                            map.entry(key)
                                .or_insert_with(|| Value::String(flag.clone()));
                        }
                    }
                    for (key, flag) in [("limit", args.limit), ("token_budget", args.token_budget)]
                    {
                        if let Some(flag) = flag {
                            map.entry(key).or_insert_with(|| Value::from(flag));
                        }
                    }
                }
                (id, client.call(&project, "search", &request).await)
            }
        };
        let value = match response {
            Ok(value) => value,
            Err(err) => json!({"id": id, "error": err.error}),
        };
        serde_json::to_writer(&mut out, &value)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `navigate "…" [--verbose]`.
pub async fn navigate(
    config: &Config,
    data_dir: &Path,
    args: NavigateArgs,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let client = QueryClient::open(config, data_dir, args.target.nats_url.as_deref()).await?;
    let mut body = json!({"query": args.query, "token_budget": args.token_budget, "now": args.now});
    strip_nulls(&mut body);
    let value = match call_or_print(&client, &args.target, "navigate", &body).await? {
        Ok(value) => value,
        Err(code) => return Ok(code),
    };
    let response: NavigateResponse = decode(value)?;
    if args.verbose {
        say_raw!("{}", response.explanation);
        for item in &response.evidence {
            for grip in &item.grips {
                say!("  {} \"{}\"", grip.grip_id, one_line(&grip.excerpt, 160));
            }
        }
    } else {
        for step in &response.path {
            say!(
                "{:<8} {:<40} {}",
                step.action,
                step.node_id.as_deref().unwrap_or("root"),
                step.reason
            );
        }
        for item in &response.evidence {
            say!("\n{} — {}", item.node_id, item.title);
            for bullet in &item.bullets {
                say!("  - {}", one_line(&bullet.text, 140));
            }
        }
    }
    say!(
        "\n({} nodes opened, ~{} tokens; stopped: {})",
        response.nodes_visited,
        response.token_estimate,
        response.stopped
    );
    Ok(ExitCode::SUCCESS)
}

/// `toc root|node|browse`.
pub async fn toc(
    config: &Config,
    data_dir: &Path,
    command: TocCommand,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let (target, method, mut body): (QueryTarget, &str, Value) = match command {
        TocCommand::Root { target } => (target, "toc.root", json!({})),
        TocCommand::Node { node_id, target } => (target, "toc.node", json!({"node_id": node_id})),
        TocCommand::Browse {
            node_id,
            limit,
            page_token,
            target,
        } => (
            target,
            "toc.browse",
            json!({"node_id": node_id, "limit": limit, "page_token": page_token}),
        ),
    };
    strip_nulls(&mut body);
    let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
    let value = match call_or_print(&client, &target, method, &body).await? {
        Ok(value) => value,
        Err(code) => return Ok(code),
    };
    match method {
        "toc.root" => {
            let response: TocRootResponse = decode(value)?;
            say!("project {}", response.project_id);
            response.years.iter().for_each(print_node_line);
        }
        "toc.node" => print_node(&decode::<TocNodeResponse>(value)?.node),
        _ => {
            let response: TocBrowseResponse = decode(value)?;
            response.children.iter().for_each(print_node_line);
            if let Some(token) = response.next_page_token {
                say!("(more: --page-token {token})");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_node(node: &TocNode) {
    say!(
        "{} ({}, {} events, version {})",
        node.node_id,
        node.level.as_str(),
        node.num_events,
        node.version
    );
    say!(
        "  {} → {}",
        memory_types::format_timestamp_ms(node.start_ms),
        memory_types::format_timestamp_ms(node.end_ms)
    );
    say!("  title:    {}", node.title);
    if let Some(summary) = &node.summary {
        say!("  summary:  {}", one_line(summary, 300));
    }
    say!("  keywords: {}", node.keywords.join(", "));
    for bullet in &node.bullets {
        let cites: Vec<String> = bullet.grip_ids.iter().map(ToString::to_string).collect();
        say!("  - {} [{}]", one_line(&bullet.text, 140), cites.join(", "));
    }
    for child in &node.child_ids {
        say!("  > {child}");
    }
}

/// `grip expand`.
pub async fn grip(
    config: &Config,
    data_dir: &Path,
    command: GripCommand,
    log_level: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let _guard = init_tool_tracing(config, log_level);
    let GripCommand::Expand {
        grip_id,
        before,
        after,
        target,
    } = command;
    let mut body = json!({"grip_id": grip_id, "before": before, "after": after});
    strip_nulls(&mut body);
    let client = QueryClient::open(config, data_dir, target.nats_url.as_deref()).await?;
    let value = match call_or_print(&client, &target, "grip.expand", &body).await? {
        Ok(value) => value,
        Err(code) => return Ok(code),
    };
    let response: GripExpandResponse = decode(value)?;
    say!(
        "{} in {} (session {})",
        response.grip.grip_id,
        response.grip.segment_id,
        response.grip.session_id
    );
    say!("  \"{}\"\n", response.grip.excerpt);
    response
        .events_before
        .iter()
        .for_each(|e| print_event(e, "    "));
    response
        .excerpt_events
        .iter()
        .for_each(|e| print_event(e, "  > "));
    response
        .events_after
        .iter()
        .for_each(|e| print_event(e, "    "));
    Ok(ExitCode::SUCCESS)
}
