//! Errors as they cross the service edge: one code from a closed set and a message.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The service edge's error codes; every failure a caller can see maps to exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request itself is wrong; retrying it unchanged will fail again.
    InvalidArgument,
    /// The thing asked for does not exist.
    NotFound,
    /// A dependency is down, overloaded, timed out or disabled; retry later.
    Unavailable,
    /// A bug or a storage failure; an operator should look.
    Internal,
}

impl ErrorCode {
    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::Internal => "internal",
        }
    }
}

/// The body of an error reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What went wrong, for a person.
    pub message: String,
}

/// An error reply: `{"error": {"code": …, "message": …}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[error("{}: {}", error.code.as_str(), error.message)]
pub struct ServiceError {
    /// The error.
    pub error: ErrorBody,
}

impl ServiceError {
    /// Builds an error reply.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ServiceError {
            error: ErrorBody {
                code,
                message: message.into(),
            },
        }
    }

    /// `invalid_argument`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        ServiceError::new(ErrorCode::InvalidArgument, message)
    }

    /// `unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        ServiceError::new(ErrorCode::Unavailable, message)
    }

    /// `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        ServiceError::new(ErrorCode::Internal, message)
    }

    /// `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ServiceError::new(ErrorCode::NotFound, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_wire_contract() {
        let json = serde_json::to_value(ServiceError::invalid_argument("bad")).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"error": {"code": "invalid_argument", "message": "bad"}})
        );
    }

    #[test]
    fn schema_names_the_wire_fields_and_every_code() {
        let schema = serde_json::to_value(schemars::schema_for!(ServiceError)).expect("json");
        assert_eq!(schema["required"], serde_json::json!(["error"]));
        let body = &schema["$defs"]["ErrorBody"];
        let mut properties: Vec<&String> = body["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .collect();
        properties.sort();
        assert_eq!(properties, ["code", "message"]);
        let text = schema["$defs"]["ErrorCode"].to_string();
        for code in [
            ErrorCode::InvalidArgument,
            ErrorCode::NotFound,
            ErrorCode::Unavailable,
            ErrorCode::Internal,
        ] {
            assert!(text.contains(&format!("\"{}\"", code.as_str())), "{text}");
        }
    }
}
