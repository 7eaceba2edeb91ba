//! Span export over OTLP/HTTP, end to end against a throwaway HTTP listener.
//!
//! Its own test binary: the global tracing subscriber can be installed once per process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use memory_telemetry::{LogFormat, TelemetryError, TracingConfig, init_tracing};

/// One received request: the request line and the body length.
struct ReceivedRequest {
    request_line: String,
    content_type: String,
    body_len: usize,
}

/// Reads one HTTP/1.1 request, answers `200` and closes the connection.
fn answer_one(stream: TcpStream) -> std::io::Result<ReceivedRequest> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut content_length = 0usize;
    let mut content_type = String::new();
    loop {
        let mut header_line = String::new();
        reader.read_line(&mut header_line)?;
        let header_line = header_line.trim_end();
        if header_line.is_empty() {
            break;
        }
        let Some((name, value)) = header_line.split_once(':') else {
            continue;
        };
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => content_length = value.trim().parse().unwrap_or(0),
            "content-type" => value.trim().clone_into(&mut content_type),
            _ => {}
        }
    }
    let mut body = vec![0u8; content_length];
    reader.read_exact(&mut body)?;
    let mut writer = stream;
    writer.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )?;
    writer.flush()?;
    Ok(ReceivedRequest {
        request_line: request_line.trim_end().to_owned(),
        content_type,
        body_len: body.len(),
    })
}

fn start_fake_collector() -> (String, mpsc::Receiver<ReceivedRequest>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind fake collector");
    let addr = listener.local_addr().expect("collector addr");
    let (request_tx, request_rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            match answer_one(stream) {
                Ok(request) => {
                    if request_tx.send(request).is_err() {
                        return;
                    }
                }
                Err(error) => eprintln!("fake collector: {error}"),
            }
        }
    });
    (format!("http://{addr}/v1/traces"), request_rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_over_otlp_http_and_init_is_once_per_process() {
    let (endpoint, request_rx) = start_fake_collector();
    let cfg = TracingConfig {
        log_filter: "info".to_owned(),
        log_format: LogFormat::Json,
        otlp_endpoint: Some(endpoint),
        service_name: "memory-telemetry-test".to_owned(),
    };
    // Installed from a tokio worker thread on purpose: the daemon does the same.
    let guard = init_tracing(&cfg).expect("first init succeeds");

    {
        let span = tracing::info_span!("otlp_test_span", answer = 42);
        let _entered = span.enter();
        tracing::info!("inside the exported span");
    }

    let second = init_tracing(&TracingConfig::default()).expect_err("second init must fail");
    assert!(
        matches!(second, TelemetryError::SubscriberAlreadySet(_)),
        "{second}"
    );

    // Dropping the guard flushes the batch processor; dropping it on a runtime thread
    // must not panic.
    drop(guard);

    let request = request_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the collector received an export");
    assert_eq!(request.request_line, "POST /v1/traces HTTP/1.1");
    assert_eq!(request.content_type, "application/x-protobuf");
    assert!(request.body_len > 0);
}
