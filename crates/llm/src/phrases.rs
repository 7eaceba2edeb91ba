//! Search phrases written by the model: the search-first spec's step 1. The question
//! goes in; three to five phrases "as someone would type into a search box" come out,
//! with the spec's two flags (`include_preferences`, `include_n_minus_1`). Temperature
//! 0.4, at most 200 tokens, one attempt within the caller's time budget: a search waits
//! for the model at most that long, then goes on without it.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::client::{ChatCall, ChatClient, ChatMessage, ReplyFormat};
use crate::error::{LlmError, Result};
use crate::spend::Purpose;

/// The spec's prompt, with its two examples.
pub const PHRASES_PROMPT: &str = r#"Convert the user's question into 3-5 search phrases that would surface relevant documents (past conversation turns, decisions, notes) if typed into a search box.

Rules:
- Generate 3-5 search phrases. Each should be a distinct angle on the query.
- Think like someone typing into a search box: use the words that would appear in relevant documents.
- include_preferences: true if the query might benefit from the user's preferences (e.g. choices, recommendations, style). False for general knowledge queries.
- include_n_minus_1: true if the query is a follow-up or could reference the recent conversation. False if clearly a new, self-contained topic.

Answer with one JSON object: {"search_terms": [...], "include_preferences": bool, "include_n_minus_1": bool}

Example - "find syrian hamsters for sale online":
{"search_terms": ["syrian hamster", "hamster for sale", "pet purchase online", "hamster breeder"], "include_preferences": true, "include_n_minus_1": true}

Example - "tell me what you know about russian troll farms":
{"search_terms": ["russian troll farm", "internet research agency", "online propaganda russia", "social media manipulation"], "include_preferences": false, "include_n_minus_1": false}"#;

/// Sampling temperature of phrase writing (the spec's REFLEX role).
pub const PHRASES_TEMPERATURE: f64 = 0.4;
/// Most tokens of the answer.
pub const PHRASES_MAX_TOKENS: u32 = 200;

/// What the model wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Phrases {
    /// The phrases, as written (the caller trims and cuts them).
    pub search_terms: Vec<String>,
    /// The spec's flag.
    #[serde(default)]
    pub include_preferences: Option<bool>,
    /// The spec's flag.
    #[serde(default)]
    pub include_n_minus_1: Option<bool>,
}

fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "search_terms": {"type": "array", "minItems": 1, "maxItems": 10,
                             "items": {"type": "string", "maxLength": 120}},
            "include_preferences": {"type": "boolean"},
            "include_n_minus_1": {"type": "boolean"}
        },
        "required": ["search_terms", "include_preferences", "include_n_minus_1"],
        "additionalProperties": false
    })
}

/// Asks `client` for phrases for `question`, in one attempt of at most `budget`.
///
/// # Errors
/// The client's errors ([`LlmError::Timeout`] when the budget ran out), or
/// [`LlmError::InvalidAnswer`] when the answer is not the JSON object with at least one
/// phrase.
pub fn write_phrases(client: &ChatClient, question: &str, budget: Duration) -> Result<Phrases> {
    let messages = [
        ChatMessage::system(PHRASES_PROMPT),
        ChatMessage::user(question),
    ];
    let call = ChatCall {
        format: ReplyFormat::JsonSchema {
            name: "search_phrases".to_owned(),
            schema: schema(),
        },
        max_tokens: Some(PHRASES_MAX_TOKENS),
        temperature: Some(PHRASES_TEMPERATURE),
        timeout: Some(budget),
        max_retries: Some(0),
        ..ChatCall::new(Purpose::Phrases, &messages)
    };
    let reply = client.chat(&call)?;
    let text = reply.content.trim();
    let Some(object) = crate::answer::json_object_text(text) else {
        return Err(LlmError::InvalidAnswer(format!(
            "no JSON object in {:?}",
            memory_text::truncate_chars(text, 80)
        )));
    };
    let phrases: Phrases = serde_json::from_str(object)
        .map_err(|err| LlmError::InvalidAnswer(format!("phrases: {err}")))?;
    if phrases
        .search_terms
        .iter()
        .all(|term| term.trim().is_empty())
    {
        return Err(LlmError::InvalidAnswer("no search phrase".to_owned()));
    }
    Ok(phrases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedResponse, ScriptedServer};
    use memory_config::LlmConfig;

    fn client(server: &ScriptedServer) -> ChatClient {
        ChatClient::new(&LlmConfig {
            enabled: true,
            base_url: server.base_url(),
            ..LlmConfig::default()
        })
        .expect("client")
    }

    #[test]
    fn the_spec_request_and_answer() {
        let server = ScriptedServer::start(vec![ScriptedResponse::chat(
            r#"{"search_terms": ["jwt expiry", "token lifetime", "refresh token ttl"], "include_preferences": false, "include_n_minus_1": true}"#,
        )]);
        let phrases = write_phrases(
            &client(&server),
            "what did we decide about JWT expiry?",
            Duration::from_secs(2),
        )
        .expect("phrases");
        assert_eq!(phrases.search_terms.len(), 3);
        assert_eq!(phrases.include_n_minus_1, Some(true));
        let request = server.requests()[0].json();
        assert_eq!(request["temperature"], 0.4);
        assert_eq!(request["max_tokens"], 200);
        assert_eq!(request["response_format"]["type"], "json_schema");
    }

    #[test]
    fn slow_or_bad_answers_are_errors_within_the_budget() {
        let slow = ScriptedServer::start(vec![
            ScriptedResponse::chat(r#"{"search_terms": ["x"]}"#).delayed(Duration::from_secs(3)),
        ]);
        let started = std::time::Instant::now();
        let err = write_phrases(&client(&slow), "q", Duration::from_millis(300)).expect_err("slow");
        assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let bad = ScriptedServer::start(vec![ScriptedResponse::chat("jwt, tokens, expiry")]);
        let err = write_phrases(&client(&bad), "q", Duration::from_secs(2)).expect_err("bad");
        assert!(matches!(err, LlmError::InvalidAnswer(_)), "{err}");
    }
}
