//! `LlmSummarizer` and `ChatClient` against a scripted OpenAI-compatible server on
//! loopback: what is sent, what is accepted, and that every failure ends in the
//! extractive summary of the same input.

use std::time::{Duration, Instant};

use chrono::NaiveDate;
use memory_config::LlmConfig;
use memory_llm::testing::{ScriptedResponse, ScriptedServer, refused_base_url};
use memory_llm::{ChatClient, ChatMessage, LlmError, LlmSummarizer, LlmSummarizerCounters};
use memory_summarize::{
    ExtractiveSummarizer, ParentInput, SegmentInput, Summarizer, Summary, SummaryEvent,
};
use memory_toc::{Grip, GripId, TocBullet, TocNode, TocNodeId};

const TS_MS: u64 = 1_769_767_200_000;

const EVENTS: [(&str, &str, &str); 4] = [
    (
        "e1",
        "user",
        "The login tests fail since the JWT refresh change. Can you check the refresh flow?",
    ),
    (
        "e2",
        "assistant",
        "The refresh handler compared the JWT expiry in seconds with milliseconds. I fixed the refresh handler.",
    ),
    (
        "e3",
        "user",
        "Should we shorten the access token lifetime too?",
    ),
    (
        "e4",
        "assistant",
        "We decided to set the JWT access token expiry to 15 minutes.",
    ),
];

/// A segment of four events with three grips, and the input a summarizer gets for it.
struct SegmentFixture {
    segment_id: TocNodeId,
    grips: Vec<Grip>,
}

impl SegmentFixture {
    fn new() -> SegmentFixture {
        let day = NaiveDate::from_ymd_opt(2026, 1, 30).expect("date");
        let segment_id = TocNodeId::segment_for("default", day, TS_MS, "e1");
        let grip = |event_index: usize, excerpt: &str| {
            let (event_id, _, text) = EVENTS[event_index];
            let offset = text
                .find(excerpt)
                .expect("grip is a substring of its event");
            let timestamp_ms = TS_MS + event_index as u64 * 1_000;
            Grip {
                grip_id: GripId::derive("default", timestamp_ms, event_id, offset),
                project_id: "default".into(),
                session_id: "session-1".into(),
                excerpt: excerpt.into(),
                event_id_start: event_id.into(),
                event_id_end: event_id.into(),
                timestamp_ms,
                segment_id,
            }
        };
        let grips = vec![
            grip(0, "The login tests fail since the JWT refresh change."),
            grip(1, "I fixed the refresh handler."),
            grip(
                3,
                "We decided to set the JWT access token expiry to 15 minutes.",
            ),
        ];
        SegmentFixture { segment_id, grips }
    }

    fn grip_id(&self, number: usize) -> GripId {
        self.grips[number - 1].grip_id
    }

    /// Runs `summarize` on the fixture's input.
    fn summarize<T>(&self, summarize: impl FnOnce(&SegmentInput<'_>) -> T) -> T {
        let events: Vec<SummaryEvent<'_>> = EVENTS
            .iter()
            .enumerate()
            .map(|(index, (event_id, role, text))| SummaryEvent {
                event_id,
                timestamp_ms: TS_MS + index as u64 * 1_000,
                role,
                text,
            })
            .collect();
        let document_frequency = |stem: &str| if stem == "refresh" { 40 } else { 2 };
        let input = SegmentInput {
            segment_id: &self.segment_id,
            project_id: "default",
            session_id: "session-1",
            events: &events,
            grips: &self.grips,
            corpus_document_frequency: &document_frequency,
            num_corpus_documents: 50,
        };
        summarize(&input)
    }

    fn extractive_summary(&self) -> Summary {
        self.summarize(|input| ExtractiveSummarizer::default().summarize_segment(input))
            .expect("extractive summary")
    }
}

fn config(base_url: &str) -> LlmConfig {
    LlmConfig {
        enabled: true,
        base_url: base_url.to_owned(),
        model: "test-model".into(),
        api_key: Some("sk-test-key".into()),
        timeout_ms: 2_000,
        max_retries: 2,
        ..LlmConfig::default()
    }
}

fn client(config: &LlmConfig) -> ChatClient {
    ChatClient::new(config)
        .expect("client")
        .with_backoff(Duration::from_millis(10), Duration::from_millis(50))
}

fn summarizer(config: &LlmConfig) -> LlmSummarizer {
    LlmSummarizer::from_client(client(config))
}

const GOOD_ANSWER: &str = r#"{
  "title": "Fixed the JWT refresh handler and set token expiry to 15 minutes",
  "summary": "Login tests failed after the JWT refresh change; the handler mixed seconds and milliseconds.",
  "bullets": [
    {"text": "Refresh handler compared expiry in seconds with milliseconds; fixed", "grips": [2, 1]},
    {"text": "Access token expiry set to 15 minutes", "grips": [3]}
  ],
  "keywords": ["jwt", "refresh handler", "token expiry"]
}"#;

fn fallback_counters(unavailable: u64, invalid_answer: u64) -> LlmSummarizerCounters {
    LlmSummarizerCounters {
        num_llm_summaries: 0,
        num_fallbacks_unavailable: unavailable,
        num_fallbacks_invalid_answer: invalid_answer,
    }
}

#[test]
fn a_good_answer_becomes_the_summary_and_the_request_is_openai_shaped() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(GOOD_ANSWER)]);
    let summarizer = summarizer(&config(&server.base_url()));
    assert_eq!(summarizer.name(), "llm");

    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("summary");
    assert_eq!(
        summary.title,
        "Fixed the JWT refresh handler and set token expiry to 15 minutes"
    );
    assert!(summary.summary.is_some());
    assert_eq!(
        summary.bullets,
        [
            TocBullet {
                text: "Refresh handler compared expiry in seconds with milliseconds; fixed".into(),
                grip_ids: vec![fixture.grip_id(1), fixture.grip_id(2)],
            },
            TocBullet {
                text: "Access token expiry set to 15 minutes".into(),
                grip_ids: vec![fixture.grip_id(3)],
            },
        ]
    );
    assert_eq!(summary.keywords, ["jwt", "refresh handler", "token expiry"]);
    assert_eq!(summarizer.counters().num_llm_summaries, 1);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    let content_type = request.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body = request.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["max_tokens"], 400);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["role"], "user");
    let user_text = body["messages"][1]["content"]
        .as_str()
        .expect("user content");
    assert!(
        user_text.contains("[1] The login tests fail since the JWT refresh change.\n"),
        "{user_text}"
    );
    assert!(
        user_text.contains("[3] We decided to set the JWT access token expiry to 15 minutes.\n"),
        "{user_text}"
    );
    assert!(
        user_text.contains("user: Should we shorten the access token lifetime too?\n"),
        "{user_text}"
    );
}

#[test]
fn no_api_key_means_no_authorization_header() {
    let server = ScriptedServer::start(vec![ScriptedResponse::chat("{}")]);
    let config = LlmConfig {
        api_key: None,
        api_key_env: String::new(),
        ..config(&server.base_url())
    };
    let content = client(&config)
        .complete_json(&[ChatMessage::user("hi")])
        .expect("answer");
    assert_eq!(content, "{}");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

#[test]
fn a_fenced_answer_is_accepted() {
    let fixture = SegmentFixture::new();
    let fenced = format!("Here is the summary:\n```json\n{GOOD_ANSWER}\n```\n");
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(&fenced)]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("summary");
    assert_eq!(summary.bullets[1].grip_ids, [fixture.grip_id(3)]);
    assert_eq!(summarizer.counters().num_llm_summaries, 1);
}

#[test]
fn malformed_json_falls_back_to_the_extractive_summary_without_retrying() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(
        r#"{"title": "Fixed the JWT refresh", "bullets": [{"text": "#,
    )]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(0, 1));
    assert_eq!(server.num_requests(), 1);
}

#[test]
fn a_body_that_is_not_a_chat_completion_falls_back() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![ScriptedResponse::raw(200, "<html>hello</html>")]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(0, 1));
}

#[test]
fn an_out_of_range_grip_number_falls_back() {
    let fixture = SegmentFixture::new();
    let answer = GOOD_ANSWER.replace("[3]", "[4]");
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(&answer)]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(0, 1));
}

#[test]
fn a_server_error_is_retried_and_the_retry_succeeds() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![
        ScriptedResponse::error(500, "model is loading"),
        ScriptedResponse::chat(GOOD_ANSWER),
    ]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("summary");
    assert_eq!(summary.bullets[1].grip_ids, [fixture.grip_id(3)]);
    assert_eq!(summarizer.counters().num_llm_summaries, 1);
    assert_eq!(server.num_requests(), 2);
}

#[test]
fn too_many_requests_is_retried_after_the_server_says() {
    let server = ScriptedServer::start(vec![
        ScriptedResponse::error(429, "slow down").with_header("retry-after", "0"),
        ScriptedResponse::chat("{}"),
    ]);
    let content = client(&config(&server.base_url()))
        .complete_json(&[ChatMessage::user("hi")])
        .expect("answer after a retry");
    assert_eq!(content, "{}");
    assert_eq!(server.num_requests(), 2);
}

#[test]
fn a_client_error_is_not_retried_and_falls_back() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![
        ScriptedResponse::error(400, "response_format is not supported"),
        ScriptedResponse::chat(GOOD_ANSWER),
    ]);
    let summarizer = summarizer(&config(&server.base_url()));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(1, 0));
    assert_eq!(server.num_requests(), 1);

    let server = ScriptedServer::start(vec![
        ScriptedResponse::error(401, "invalid api key"),
        ScriptedResponse::chat("{}"),
    ]);
    let err = client(&config(&server.base_url()))
        .complete_json(&[ChatMessage::user("hi")])
        .expect_err("401");
    assert!(
        matches!(
            err,
            LlmError::Status {
                status: 401,
                num_attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_unavailable());
    assert_eq!(server.num_requests(), 1);
}

#[test]
fn retries_stop_after_max_retries() {
    let server = ScriptedServer::start(vec![
        ScriptedResponse::error(503, "busy"),
        ScriptedResponse::error(502, "busy"),
        ScriptedResponse::error(500, "busy"),
        ScriptedResponse::chat("{}"),
    ]);
    let err = client(&config(&server.base_url()))
        .complete_json(&[ChatMessage::user("hi")])
        .expect_err("three failures with max_retries = 2");
    match err {
        LlmError::Status {
            status,
            num_attempts,
            ref body,
        } => {
            assert_eq!(status, 500);
            assert_eq!(num_attempts, 3);
            assert!(body.contains("busy"), "{body}");
        }
        other => panic!("expected a status error, got {other}"),
    }
    assert_eq!(server.num_requests(), 3);
}

#[test]
fn a_server_slower_than_the_timeout_falls_back() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![
        ScriptedResponse::chat(GOOD_ANSWER).delayed(Duration::from_secs(5)),
        ScriptedResponse::chat(GOOD_ANSWER).delayed(Duration::from_secs(5)),
    ]);
    let config = LlmConfig {
        timeout_ms: 300,
        max_retries: 0,
        ..config(&server.base_url())
    };
    let summarizer = summarizer(&config);
    let started = Instant::now();
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(1, 0));

    let err = client(&config)
        .complete_json(&[ChatMessage::user("hi")])
        .expect_err("timeout");
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                num_attempts: 1,
                timeout_ms: 300
            }
        ),
        "{err}"
    );
}

#[test]
fn connection_refused_falls_back_after_the_retries() {
    let fixture = SegmentFixture::new();
    let config = config(&refused_base_url());
    let summarizer = summarizer(&config);
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(1, 0));

    let err = client(&config)
        .complete_json(&[ChatMessage::user("hi")])
        .expect_err("refused");
    match err {
        LlmError::Transport {
            num_attempts,
            ref message,
        } => {
            assert_eq!(num_attempts, 3);
            assert!(message.to_lowercase().contains("refused"), "{message}");
        }
        other => panic!("expected a transport error, got {other}"),
    }
}

fn child(node_id: &str, title: &str, bullets: Vec<TocBullet>) -> TocNode {
    let node_id: TocNodeId = node_id.parse().expect("node id");
    TocNode {
        level: node_id.level(),
        node_id,
        project_id: "default".into(),
        title: title.into(),
        summary: None,
        bullets,
        keywords: vec!["jwt".into()],
        start_ms: TS_MS,
        end_ms: TS_MS + 60_000,
        child_ids: Vec::new(),
        num_events: 4,
        version: 1,
    }
}

#[test]
fn a_parent_cites_the_grips_of_its_children_by_number() {
    let grip_a = GripId::derive("default", TS_MS, "e1", 0);
    let grip_b = GripId::derive("default", TS_MS + 1_000, "e2", 0);
    let grip_c = GripId::derive("default", TS_MS + 86_400_000, "e9", 0);
    let children = [
        child(
            "toc:day:2026-01-30",
            "JWT refresh fixed",
            vec![TocBullet {
                text: "Fixed the refresh handler".into(),
                grip_ids: vec![grip_a, grip_b],
            }],
        ),
        child(
            "toc:day:2026-01-31",
            "Token expiry",
            vec![TocBullet {
                text: "Expiry set to 15 minutes".into(),
                grip_ids: vec![grip_c],
            }],
        ),
    ];
    let node_id: TocNodeId = "toc:week:2026-W05".parse().expect("node id");
    let input = ParentInput {
        node_id: &node_id,
        project_id: "default",
        children: &children,
    };
    let answer = r#"{"title": "JWT week", "summary": null,
        "bullets": [{"text": "Refresh fixed, expiry set", "grips": [3, 2]}], "keywords": ["jwt"]}"#;
    let server = ScriptedServer::start(vec![
        ScriptedResponse::chat(answer),
        ScriptedResponse::chat(&answer.replace("[3, 2]", "[4]")),
    ]);
    let summarizer = summarizer(&config(&server.base_url()));

    let summary = summarizer.summarize_parent(&input).expect("summary");
    assert_eq!(summary.title, "JWT week");
    assert_eq!(summary.bullets[0].grip_ids, [grip_b, grip_c]);
    let body = server.requests()[0].json();
    let user_text = body["messages"][1]["content"]
        .as_str()
        .expect("user content");
    assert!(
        user_text.contains("- Fixed the refresh handler [1] [2]\n"),
        "{user_text}"
    );
    assert!(
        user_text.contains("- Expiry set to 15 minutes [3]\n"),
        "{user_text}"
    );

    let fallback = summarizer
        .summarize_parent(&input)
        .expect("fallback summary");
    let extractive = ExtractiveSummarizer::default()
        .summarize_parent(&input)
        .expect("extractive summary");
    assert_eq!(fallback, extractive);
    assert_eq!(summarizer.counters().num_fallbacks_invalid_answer, 1);
}

#[test]
fn the_metrics_are_exported() {
    let server = ScriptedServer::start(vec![ScriptedResponse::error(404, "no such model")]);
    let fixture = SegmentFixture::new();
    let summarizer = summarizer(&config(&server.base_url()));
    fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    let names: Vec<String> = prometheus::gather()
        .iter()
        .map(|family| family.name().to_owned())
        .collect();
    for expected in [
        "memory_llm_requests_total",
        "memory_llm_request_latency_seconds",
        "memory_summarizer_fallbacks_total",
    ] {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} in {names:?}"
        );
    }
}

#[test]
fn the_config_chooses_the_summarizer() {
    let disabled = memory_llm::summarizer_for(&LlmConfig::default(), None).expect("extractive");
    assert_eq!(disabled.name(), "extractive");
    let enabled = memory_llm::summarizer_for(&config("http://127.0.0.1:9/v1"), None).expect("llm");
    assert_eq!(enabled.name(), "llm");
    let err = LlmSummarizer::new(&config("localhost:11434/v1")).expect_err("bad url");
    assert!(matches!(err, LlmError::InvalidBaseUrl { .. }), "{err}");
}

#[test]
fn an_https_endpoint_that_does_not_speak_tls_falls_back() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![ScriptedResponse::chat(GOOD_ANSWER)]);
    let https_base_url = server.base_url().replacen("http://", "https://", 1);
    let summarizer = summarizer(&config(&https_base_url));
    let summary = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("fallback summary");
    assert_eq!(summary, fixture.extractive_summary());
    assert_eq!(summarizer.counters(), fallback_counters(1, 0));
}

/// Without fallback (a cluster's lease holder), a failure is an error of the right kind
/// and nothing extractive comes back; a good answer is the model's, as always.
#[test]
fn without_fallback_a_failure_is_an_error_not_an_extractive_summary() {
    let fixture = SegmentFixture::new();
    let server = ScriptedServer::start(vec![
        ScriptedResponse::chat(r#"{"title": "#),
        ScriptedResponse::chat(GOOD_ANSWER),
    ]);
    let summarizer = summarizer(&config(&server.base_url())).without_fallback();
    let invalid = fixture.summarize(|input| summarizer.summarize_segment(input));
    assert!(
        matches!(
            invalid,
            Err(memory_summarize::SummarizeError::InvalidAnswer(_))
        ),
        "{invalid:?}"
    );
    let good = fixture
        .summarize(|input| summarizer.summarize_segment(input))
        .expect("the model's summary");
    assert_eq!(good.bullets[1].grip_ids, [fixture.grip_id(3)]);
    assert_eq!(
        summarizer.counters(),
        LlmSummarizerCounters {
            num_llm_summaries: 1,
            ..fallback_counters(0, 0)
        }
    );

    let refused =
        LlmSummarizer::from_client(client(&config(&refused_base_url()))).without_fallback();
    let unavailable = fixture.summarize(|input| refused.summarize_segment(input));
    assert!(
        matches!(
            unavailable,
            Err(memory_summarize::SummarizeError::Unavailable(_))
        ),
        "{unavailable:?}"
    );
}
