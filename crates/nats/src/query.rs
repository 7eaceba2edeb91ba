//! The query calls as a NATS micro service: one endpoint per method on
//! `memory.query.*.<method>`, the `*` being the project, so NATS permissions can fence
//! tenants by subject (ARCHITECTURE §3).
//!
//! Because it is a micro service (`async_nats::service`), `nats micro ls`,
//! `$SRV.PING`, `$SRV.INFO` and `$SRV.STATS` discover it and report per-endpoint
//! request counts and processing times. Replies are always JSON; an error is
//! `{"error": {"code", "message"}}` and additionally carries the micro-service headers
//! `Nats-Service-Error` and `Nats-Service-Error-Code`, so generic NATS tooling sees it
//! too. (Answering through the library's error path would send an empty body and lose
//! the message, so per-endpoint error counts live in Prometheus instead:
//! `memory_query_requests_total{outcome}`.)
//!
//! Requests run on the blocking pool (store reads), as many at once as [`Admission`]
//! lets run, a bounded number waiting; beyond that a request is answered `unavailable`
//! at once (load shedding). Endpoints share a queue group, so several daemons serving
//! one store answer each request once.

use std::sync::Arc;

use async_nats::HeaderMap;
use async_nats::service::ServiceExt;
use futures::StreamExt;
use memory_types::{ErrorCode, ServiceError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span, warn};

use crate::NatsError;
use crate::admission::Admission;

/// Name of the micro service in `$SRV` discovery.
pub const QUERY_SERVICE_NAME: &str = "memory-query";
/// Default subject prefix of the query calls, `memory.query.<project>.<method>`
/// (`[nats] query_subject_prefix`).
pub const QUERY_SUBJECT_PREFIX: &str = "memory.query";

/// Answers one query call; implemented over the query crate by the daemon.
pub trait QueryHandler: Send + Sync + 'static {
    /// Answers `method` for `project_id` with the JSON request `payload`.
    ///
    /// # Errors
    /// The call's error, sent back as `{"error": …}`.
    fn handle(
        &self,
        project_id: &str,
        method: &str,
        payload: &[u8],
    ) -> Result<serde_json::Value, ServiceError>;
}

/// The running micro service.
pub struct QueryServer {
    tasks: JoinSet<()>,
    service: async_nats::service::Service,
}

/// The query micro service registered under its name with this daemon's metadata but
/// no endpoint yet: it answers discovery (`$SRV.PING`, `$SRV.INFO`), never a call.
/// [`RegisteredQueryService::serve`] adds the endpoints.
pub struct RegisteredQueryService {
    service: async_nats::service::Service,
    prefix: String,
}

impl RegisteredQueryService {
    /// Registers the service.
    ///
    /// # Errors
    /// When the server refuses it.
    pub async fn register(
        client: &async_nats::Client,
        version: &str,
        prefix: &str,
        metadata: std::collections::HashMap<String, String>,
    ) -> Result<RegisteredQueryService, NatsError> {
        let service = client
            .service_builder()
            .description("agent-memory queries: TOC, navigation, search, evidence")
            .queue_group(QUERY_SERVICE_NAME)
            .metadata(metadata)
            .start(QUERY_SERVICE_NAME, version)
            .await
            .map_err(|err| NatsError::Subscribe {
                subject: prefix.to_owned(),
                detail: err.to_string(),
            })?;
        Ok(RegisteredQueryService {
            service,
            prefix: prefix.to_owned(),
        })
    }

    /// Unregisters it (a daemon that steps down).
    pub async fn stop(self) {
        if let Err(err) = self.service.stop().await {
            warn!(error = %err, "query service did not stop cleanly");
        }
    }

    /// Adds one endpoint per method on `<prefix>.*.<method>` and starts answering.
    ///
    /// # Errors
    /// When an endpoint cannot be registered.
    pub async fn serve(
        self,
        handler: Arc<dyn QueryHandler>,
        methods: &[&str],
        admission: Admission,
        shutdown: CancellationToken,
    ) -> Result<QueryServer, NatsError> {
        let subscribe_error = |subject: &str, err: &dyn std::fmt::Display| NatsError::Subscribe {
            subject: subject.to_string(),
            detail: err.to_string(),
        };
        let RegisteredQueryService { service, prefix } = self;
        let prefix: Arc<str> = prefix.into();
        let mut tasks = JoinSet::new();
        for method in methods {
            let subject = format!("{prefix}.*.{method}");
            let mut endpoint = service
                .endpoint_builder()
                .name(method.replace('.', "_"))
                .add(subject.clone())
                .await
                .map_err(|err| subscribe_error(&subject, &err))?;
            let (handler, admission, shutdown, method, prefix) = (
                handler.clone(),
                admission.clone(),
                shutdown.clone(),
                (*method).to_string(),
                prefix.clone(),
            );
            tasks.spawn(async move {
                let mut requests = JoinSet::new();
                loop {
                    let request = tokio::select! {
                        () = shutdown.cancelled() => break,
                        request = endpoint.next() => request,
                    };
                    let Some(request) = request else { break };
                    // Taken here, so that a full queue refuses without waiting.
                    let queued = admission.enqueue();
                    let (handler, method, prefix) =
                        (handler.clone(), method.clone(), prefix.clone());
                    let span = info_span!("query_request", method = %method);
                    requests.spawn(
                        async move {
                            match queued {
                                Ok(queued) => match queued.run().await {
                                    Ok(admitted) => {
                                        answer(handler, &prefix, &method, request).await;
                                        drop(admitted);
                                    }
                                    Err(refused) => respond(request, Err(refused)).await,
                                },
                                Err(refused) => respond(request, Err(refused)).await,
                            }
                        }
                        .instrument(span),
                    );
                    while requests.try_join_next().is_some() {}
                }
                // Finish what was accepted before stopping.
                while requests.join_next().await.is_some() {}
            });
        }
        Ok(QueryServer { tasks, service })
    }
}

impl QueryServer {
    /// Waits for the endpoints to stop (after the shutdown token fires) and
    /// unregisters the service.
    pub async fn join(mut self) {
        while self.tasks.join_next().await.is_some() {}
        if let Err(err) = self.service.stop().await {
            warn!(error = %err, "query service did not stop cleanly");
        }
    }
}

/// `<prefix>.<project>.<method…>` → the project token.
fn project_of<'a>(prefix: &str, subject: &'a str) -> Option<&'a str> {
    let rest = subject.strip_prefix(prefix)?.strip_prefix('.')?;
    rest.split('.').next().filter(|project| !project.is_empty())
}

async fn answer(
    handler: Arc<dyn QueryHandler>,
    prefix: &str,
    method: &str,
    request: async_nats::service::Request,
) {
    let subject = request.message.subject.to_string();
    let payload = request.message.payload.clone();
    let method_owned = method.to_string();
    let result = match project_of(prefix, &subject).map(str::to_string) {
        None => Err(ServiceError::invalid_argument(format!(
            "subject {subject:?} names no project"
        ))),
        Some(project) => {
            tokio::task::spawn_blocking(move || handler.handle(&project, &method_owned, &payload))
                .await
                .unwrap_or_else(|err| Err(ServiceError::internal(format!("query panicked: {err}"))))
        }
    };
    respond(request, result).await;
}

/// Sends `result` as the reply to `request`: the value, or `{"error": …}` with the
/// micro-service error headers.
async fn respond(
    request: async_nats::service::Request,
    result: Result<serde_json::Value, ServiceError>,
) {
    let subject = request.message.subject.to_string();
    let (body, headers) = match result {
        Ok(value) => (serde_json::to_vec(&value), HeaderMap::new()),
        Err(err) => {
            let mut headers = HeaderMap::new();
            headers.insert("Nats-Service-Error", err.error.message.as_str());
            headers.insert(
                "Nats-Service-Error-Code",
                status_code(err.error.code).to_string().as_str(),
            );
            (serde_json::to_vec(&err), headers)
        }
    };
    let body = body.unwrap_or_else(|err| {
        format!(r#"{{"error":{{"code":"internal","message":"cannot encode the reply: {err}"}}}}"#)
            .into_bytes()
    });
    if let Err(err) = request.respond_with_headers(Ok(body.into()), headers).await {
        warn!(error = %err, subject = %subject, "cannot answer query");
    }
}

/// The HTTP-like status the micro-service convention uses for an error code.
fn status_code(code: ErrorCode) -> u16 {
    match code {
        ErrorCode::InvalidArgument => 400,
        ErrorCode::NotFound => 404,
        ErrorCode::Unavailable => 503,
        ErrorCode::Internal => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_is_the_third_token() {
        let p = QUERY_SUBJECT_PREFIX;
        assert_eq!(
            project_of(p, "memory.query.webapp.toc.root"),
            Some("webapp")
        );
        assert_eq!(project_of(p, "memory.query.webapp.search"), Some("webapp"));
        assert_eq!(project_of(p, "memory.query..search"), None);
        assert_eq!(project_of(p, "memory.ingest.webapp"), None);
        assert_eq!(project_of("team.q", "team.q.webapp.search"), Some("webapp"));
    }
}
