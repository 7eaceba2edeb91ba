//! The observability HTTP endpoint: `/metrics`, `/healthz`, `/readyz`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::LazyLock;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use crate::error::TelemetryError;
use crate::health::Health;
use crate::metrics::{TELEMETRY_METRICS, render_text};

/// A running observability server; see [`serve`].
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    join_handle: JoinHandle<std::io::Result<()>>,
}

impl ServerHandle {
    /// The bound address; with port 0 in the listen address, the port actually chosen.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits until the server has stopped (after the shutdown future completed and
    /// in-flight requests finished) and reports how it ended.
    pub async fn stopped(self) -> crate::Result<()> {
        self.join_handle.await?.map_err(TelemetryError::Server)
    }

    /// The task serving requests, for callers that want to select on or abort it.
    pub fn into_join_handle(self) -> JoinHandle<std::io::Result<()>> {
        self.join_handle
    }
}

/// Binds `listen` and serves, on a spawned tokio task, until `shutdown` completes:
///
/// - `GET /metrics`: every metric of the default Prometheus registry, text format
///   (`text/plain; version=0.0.4`);
/// - `GET /healthz`: `200 ok` while the process serves HTTP (liveness);
/// - `GET /readyz`: the JSON array of [`Health::snapshot`], `200` when
///   [`Health::is_ready`], `503` otherwise.
///
/// Must be called inside a tokio runtime. Fails with [`TelemetryError::Bind`] when the
/// address cannot be bound.
pub async fn serve(
    listen: SocketAddr,
    health: Health,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> crate::Result<ServerHandle> {
    // This crate's own metrics must exist before the first scrape.
    LazyLock::force(&TELEMETRY_METRICS);
    let listener = match TcpListener::bind(listen).await {
        Ok(listener) => listener,
        Err(source) => {
            warn!(addr = %listen, error = %source, "metrics listener bind failed");
            return Err(TelemetryError::Bind {
                addr: listen,
                source,
            });
        }
    };
    let local_addr = listener
        .local_addr()
        .map_err(|source| TelemetryError::Bind {
            addr: listen,
            source,
        })?;
    let router = Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(healthz_handler))
        .route("/readyz", get(readyz_handler))
        .with_state(health);
    info!(addr = %local_addr, "observability http server listening");
    let join_handle = tokio::spawn(async move {
        let serve_result = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
        match &serve_result {
            Ok(()) => info!(addr = %local_addr, "observability http server stopped"),
            Err(error) => warn!(addr = %local_addr, %error, "observability http server failed"),
        }
        serve_result
    });
    Ok(ServerHandle {
        local_addr,
        join_handle,
    })
}

async fn metrics_handler() -> Response {
    match render_text() {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(error) => {
            warn!(%error, "metrics encoding failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "metrics encoding failed\n",
            )
                .into_response()
        }
    }
}

async fn healthz_handler() -> &'static str {
    "ok"
}

async fn readyz_handler(State(health): State<Health>) -> Response {
    let status = if health.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    match serde_json::to_string(&health.snapshot()) {
        Ok(json) => (status, [(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => {
            warn!(%error, "readiness snapshot encoding failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "readiness encoding failed\n",
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;
    use tokio::sync::oneshot;

    use super::*;
    use memory_metrics::counter_vec;

    struct RawResponse {
        status: u16,
        head: String,
        body: String,
    }

    /// Minimal HTTP/1.0 client: one request, read until the server closes.
    async fn http_get(addr: SocketAddr, path: &str) -> RawResponse {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("write request");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read response");
        let text = String::from_utf8(raw).expect("utf-8 response");
        let (head, body) = text.split_once("\r\n\r\n").expect("header/body separator");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .expect("status code");
        RawResponse {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_owned(),
        }
    }

    async fn start(health: Health) -> (ServerHandle, oneshot::Sender<()>) {
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let handle = serve(listen, health, async move {
            let _ = stop_rx.await;
        })
        .await
        .expect("serve");
        (handle, stop_tx)
    }

    #[tokio::test]
    async fn serves_metrics_healthz_and_readyz() {
        let requests = counter_vec(
            "memory_telemetry_http_test_requests_total",
            "test counter",
            &["route"],
        );
        requests.with_label_values(&["search"]).inc();

        let health = Health::new();
        let (handle, stop_tx) = start(health.clone()).await;
        let addr = handle.local_addr();
        assert_ne!(addr.port(), 0);

        let healthz = http_get(addr, "/healthz").await;
        assert_eq!(healthz.status, 200);
        assert_eq!(healthz.body, "ok");

        let metrics = http_get(addr, "/metrics").await;
        assert_eq!(metrics.status, 200);
        assert!(
            metrics
                .head
                .contains("content-type: text/plain; version=0.0.4"),
            "{}",
            metrics.head
        );
        assert!(
            metrics
                .body
                .contains(r#"memory_telemetry_http_test_requests_total{route="search"} 1"#),
            "{}",
            metrics.body
        );
        assert!(metrics.body.contains("memory_build_info"));
        assert!(metrics.body.contains("memory_nats_connected"));

        let not_ready_empty = http_get(addr, "/readyz").await;
        assert_eq!(not_ready_empty.status, 503);
        assert_eq!(not_ready_empty.body, "[]");

        health.set_ready("store", true, "opened");
        health.set_ready("nats", false, "connecting");
        let not_ready = http_get(addr, "/readyz").await;
        assert_eq!(not_ready.status, 503);
        assert!(not_ready.head.contains("content-type: application/json"));
        let components: serde_json::Value =
            serde_json::from_str(&not_ready.body).expect("readyz json");
        assert_eq!(components[0]["name"], "nats");
        assert_eq!(components[0]["ready"], false);
        assert_eq!(components[1]["name"], "store");

        health.set_ready("nats", true, "connected");
        let ready = http_get(addr, "/readyz").await;
        assert_eq!(ready.status, 200);
        assert!(ready.body.contains(r#""detail":"connected""#));

        let unknown = http_get(addr, "/nope").await;
        assert_eq!(unknown.status, 404);

        stop_tx.send(()).expect("server still running");
        handle.stopped().await.expect("clean stop");
        assert!(TcpStream::connect(addr).await.is_err());
    }

    #[tokio::test]
    async fn bind_failure_names_the_address() {
        let occupied = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = occupied.local_addr().expect("local addr");
        let error = serve(addr, Health::new(), std::future::pending())
            .await
            .expect_err("port is in use");
        assert!(matches!(error, TelemetryError::Bind { addr: failed, .. } if failed == addr));
        assert!(error.to_string().contains(&addr.to_string()), "{error}");
    }
}
