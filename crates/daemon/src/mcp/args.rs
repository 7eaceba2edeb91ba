//! Reading a tool call's arguments: every check a caller can fail, each with a message
//! that names the argument, what it must be and what it got, so an agent can correct
//! the call. An argument the tool's input schema does not list is refused, and so is
//! one of the wrong type; `null` counts as absent.

use memory_query::api::TimeArg;
use rmcp::model::JsonObject;
use serde_json::Value;

/// A bad argument: the message goes back to the caller as the tool's error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgError(pub(crate) String);

impl std::fmt::Display for ArgError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

pub(crate) type ArgResult<T> = Result<T, ArgError>;

fn bad(message: impl Into<String>) -> ArgError {
    ArgError(message.into())
}

/// A tool call's arguments, checked against the names its input schema lists.
pub(crate) struct ToolArgs<'a> {
    map: Option<&'a JsonObject>,
}

impl<'a> ToolArgs<'a> {
    /// Refuses any argument that `input_schema`'s `properties` do not name.
    pub(crate) fn parse(
        tool: &str,
        arguments: Option<&'a JsonObject>,
        input_schema: &JsonObject,
    ) -> ArgResult<Self> {
        let known: Vec<&str> = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if let Some(map) = arguments {
            let mut unknown: Vec<&str> = map
                .keys()
                .map(String::as_str)
                .filter(|key| !known.contains(key))
                .collect();
            if !unknown.is_empty() {
                unknown.sort_unstable();
                let takes = if known.is_empty() {
                    "no arguments".to_owned()
                } else {
                    known.join(", ")
                };
                return Err(bad(format!(
                    "unknown argument{} {} for {tool}; it takes {takes}",
                    if unknown.len() == 1 { "" } else { "s" },
                    unknown
                        .iter()
                        .map(|key| format!("`{key}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                )));
            }
        }
        Ok(ToolArgs { map: arguments })
    }

    /// The value of `key`, `None` when absent or `null`.
    fn value(&self, key: &str) -> Option<&'a Value> {
        self.map
            .and_then(|map| map.get(key))
            .filter(|value| !value.is_null())
    }

    /// Whether `key` was given (not absent, not `null`).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.value(key).is_some()
    }

    /// A string argument; an empty or blank one is refused.
    pub(crate) fn string(&self, key: &str) -> ArgResult<Option<&'a str>> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        let Some(text) = value.as_str() else {
            return Err(bad(format!(
                "`{key}` must be a string, got {}",
                describe(value)
            )));
        };
        if text.trim().is_empty() {
            return Err(bad(format!("`{key}` must not be empty")));
        }
        Ok(Some(text))
    }

    /// A string argument the call cannot do without; `what` says what it is.
    pub(crate) fn required_string(&self, key: &str, what: &str) -> ArgResult<&'a str> {
        self.string(key)?
            .ok_or_else(|| bad(format!("`{key}` is required: {what}")))
    }

    /// An integer argument within `min..=max` (a float with no fraction, `5.0`, counts).
    pub(crate) fn integer(&self, key: &str, min: u64, max: u64) -> ArgResult<Option<u64>> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        let number = value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|float| float.fract() == 0.0 && *float >= 0.0 && *float <= u64::MAX as f64)
                .map(|float| float as u64)
        });
        match number {
            Some(number) if (min..=max).contains(&number) => Ok(Some(number)),
            _ => Err(bad(format!(
                "`{key}` must be an integer from {min} to {max}, got {}",
                describe(value)
            ))),
        }
    }

    /// A list of non-empty strings, `1..=max_items` long, each at most `max_chars`
    /// characters.
    pub(crate) fn strings(
        &self,
        key: &str,
        max_items: usize,
        max_chars: usize,
    ) -> ArgResult<Option<Vec<String>>> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        let Some(items) = value.as_array() else {
            return Err(bad(format!(
                "`{key}` must be a list of strings, got {}",
                describe(value)
            )));
        };
        if items.is_empty() || items.len() > max_items {
            return Err(bad(format!(
                "`{key}` must hold 1 to {max_items} strings, got {}",
                items.len()
            )));
        }
        items
            .iter()
            .enumerate()
            .map(|(index, item)| match item.as_str() {
                Some(text) if !text.trim().is_empty() && text.chars().count() <= max_chars => {
                    Ok(text.trim().to_owned())
                }
                Some(text) if text.trim().is_empty() => {
                    Err(bad(format!("`{key}[{index}]` must not be empty")))
                }
                Some(_) => Err(bad(format!(
                    "`{key}[{index}]` is longer than {max_chars} characters"
                ))),
                None => Err(bad(format!(
                    "`{key}[{index}]` must be a string, got {}",
                    describe(item)
                ))),
            })
            .collect::<ArgResult<Vec<String>>>()
            .map(Some)
    }

    /// A string argument that must be one of `allowed`.
    pub(crate) fn one_of(&self, key: &str, allowed: &[&str]) -> ArgResult<Option<&'a str>> {
        let Some(text) = self.string(key)? else {
            return Ok(None);
        };
        if allowed.contains(&text) {
            Ok(Some(text))
        } else {
            Err(bad(format!(
                "`{key}` must be one of {}, got {text:?}",
                allowed.join(", ")
            )))
        }
    }

    /// A point in time: RFC 3339 (`2026-01-30T09:15:00Z`) or a date (`2026-01-30`).
    pub(crate) fn time(&self, key: &str) -> ArgResult<Option<&'a str>> {
        let Some(text) = self.string(key)? else {
            return Ok(None);
        };
        TimeArg::Text(text.to_owned()).to_ms(key).map_err(|_| {
            bad(format!(
                "`{key}` must be an RFC 3339 time (2026-01-30T09:15:00Z) or a date \
                     (2026-01-30), got {text:?}"
            ))
        })?;
        Ok(Some(text))
    }

    /// The `project` argument, else `default`; it must be a valid project id.
    pub(crate) fn project(&self, default: &str) -> ArgResult<String> {
        let project = self.string("project")?.unwrap_or(default);
        check_project(project)?;
        Ok(project.to_owned())
    }
}

/// A project id is 1 to 64 ASCII letters, digits, `-` or `_`.
pub(crate) fn check_project(project: &str) -> ArgResult<()> {
    if memory_types::is_valid_project_id(project) {
        Ok(())
    } else {
        Err(bad(format!(
            "`project` {project:?} is not a project id: 1 to {} ASCII letters, digits, `-` or `_`",
            memory_types::MAX_PROJECT_ID_LEN
        )))
    }
}

/// A value as an error message shows it: short, with its JSON type.
fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let text = value.to_string();
    let shown = if text.chars().count() > 40 {
        format!("{}…", memory_text::truncate_chars(&text, 40))
    } else {
        text
    };
    format!("{shown} ({kind})")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(properties: &[&str]) -> JsonObject {
        let properties: serde_json::Map<String, Value> = properties
            .iter()
            .map(|name| ((*name).to_owned(), json!({})))
            .collect();
        rmcp::model::object(json!({"type": "object", "properties": properties}))
    }

    fn args(value: Value) -> JsonObject {
        rmcp::model::object(value)
    }

    #[test]
    fn unknown_arguments_are_refused_with_what_the_tool_takes() {
        let search = schema(&["query", "limit"]);
        let arguments = args(json!({"qurey": "jwt", "limti": 3}));
        let err = ToolArgs::parse("search", Some(&arguments), &search)
            .err()
            .expect("refused");
        assert_eq!(
            err.0,
            "unknown arguments `limti`, `qurey` for search; it takes limit, query"
        );
        let none = schema(&[]);
        let err = ToolArgs::parse("status", Some(&args(json!({"x": 1}))), &none)
            .err()
            .expect("refused");
        assert_eq!(
            err.0,
            "unknown argument `x` for status; it takes no arguments"
        );
        assert!(ToolArgs::parse("status", None, &none).is_ok());
    }

    #[test]
    fn required_strings_must_be_present_non_blank_strings() {
        let schema = schema(&["query"]);
        let missing = args(json!({}));
        let parsed = ToolArgs::parse("search", Some(&missing), &schema).expect("parsed");
        assert_eq!(
            parsed.required_string("query", "the question").err(),
            Some(ArgError("`query` is required: the question".into()))
        );
        let null = args(json!({"query": null}));
        let parsed = ToolArgs::parse("search", Some(&null), &schema).expect("parsed");
        assert!(parsed.required_string("query", "q").is_err());
        let blank = args(json!({"query": "  "}));
        let parsed = ToolArgs::parse("search", Some(&blank), &schema).expect("parsed");
        assert_eq!(
            parsed.required_string("query", "q").err(),
            Some(ArgError("`query` must not be empty".into()))
        );
        let number = args(json!({"query": 42}));
        let parsed = ToolArgs::parse("search", Some(&number), &schema).expect("parsed");
        assert_eq!(
            parsed.required_string("query", "q").err(),
            Some(ArgError(
                "`query` must be a string, got 42 (a number)".into()
            ))
        );
        let good = args(json!({"query": "jwt expiry"}));
        let parsed = ToolArgs::parse("search", Some(&good), &schema).expect("parsed");
        assert_eq!(parsed.required_string("query", "q"), Ok("jwt expiry"));
    }

    #[test]
    fn integers_are_range_checked_and_typed() {
        let schema = schema(&["limit"]);
        for (value, expected) in [
            (json!(5), Ok(Some(5))),
            (json!(5.0), Ok(Some(5))),
            (json!(null), Ok(None)),
            (
                json!(0),
                Err("`limit` must be an integer from 1 to 50, got 0 (a number)"),
            ),
            (
                json!(51),
                Err("`limit` must be an integer from 1 to 50, got 51 (a number)"),
            ),
            (
                json!(2.5),
                Err("`limit` must be an integer from 1 to 50, got 2.5 (a number)"),
            ),
            (
                json!(-3),
                Err("`limit` must be an integer from 1 to 50, got -3 (a number)"),
            ),
            (
                json!("ten"),
                Err("`limit` must be an integer from 1 to 50, got \"ten\" (a string)"),
            ),
        ] {
            let arguments = args(json!({ "limit": value }));
            let parsed = ToolArgs::parse("search", Some(&arguments), &schema).expect("parsed");
            assert_eq!(
                parsed.integer("limit", 1, 50),
                expected.map_err(|message: &str| ArgError(message.to_owned())),
                "{value}"
            );
        }
    }

    #[test]
    fn enums_times_and_projects_name_what_is_allowed() {
        let schema = schema(&["mode", "since", "project"]);
        let arguments =
            args(json!({"mode": "fuzzy", "since": "last tuesday", "project": "web app"}));
        let parsed = ToolArgs::parse("search", Some(&arguments), &schema).expect("parsed");
        assert_eq!(
            parsed.one_of("mode", &["auto", "toc"]).err(),
            Some(ArgError(
                "`mode` must be one of auto, toc, got \"fuzzy\"".into()
            ))
        );
        assert_eq!(
            parsed.time("since").err(),
            Some(ArgError(
                "`since` must be an RFC 3339 time (2026-01-30T09:15:00Z) or a date (2026-01-30), \
                 got \"last tuesday\""
                    .into()
            ))
        );
        assert_eq!(
            parsed.project("default").err(),
            Some(ArgError(
                "`project` \"web app\" is not a project id: 1 to 64 ASCII letters, digits, \
                 `-` or `_`"
                    .into()
            ))
        );
        let good = args(json!({"mode": "toc", "since": "2026-01-30", "project": "webapp"}));
        let parsed = ToolArgs::parse("search", Some(&good), &schema).expect("parsed");
        assert_eq!(parsed.one_of("mode", &["auto", "toc"]), Ok(Some("toc")));
        assert_eq!(parsed.time("since"), Ok(Some("2026-01-30")));
        assert_eq!(parsed.project("default"), Ok("webapp".to_owned()));
        let rfc = args(json!({"since": "2026-01-30T09:15:00+01:00"}));
        let parsed = ToolArgs::parse("search", Some(&rfc), &schema).expect("parsed");
        assert!(parsed.time("since").is_ok());
        assert_eq!(parsed.project("fallback"), Ok("fallback".to_owned()));
    }

    #[test]
    fn string_lists_check_every_item() {
        let schema = schema(&["ids"]);
        for (value, expected) in [
            (
                json!(["e1", " e2 "]),
                Ok(Some(vec!["e1".to_owned(), "e2".to_owned()])),
            ),
            (
                json!("e1"),
                Err("`ids` must be a list of strings, got \"e1\" (a string)"),
            ),
            (json!([]), Err("`ids` must hold 1 to 3 strings, got 0")),
            (
                json!(["a", "b", "c", "d"]),
                Err("`ids` must hold 1 to 3 strings, got 4"),
            ),
            (
                json!(["a", 7]),
                Err("`ids[1]` must be a string, got 7 (a number)"),
            ),
            (json!(["a", ""]), Err("`ids[1]` must not be empty")),
            (
                json!(["abcdefghijk"]),
                Err("`ids[0]` is longer than 10 characters"),
            ),
        ] {
            let arguments = args(json!({ "ids": value }));
            let parsed = ToolArgs::parse("get_events", Some(&arguments), &schema).expect("parsed");
            assert_eq!(
                parsed.strings("ids", 3, 10),
                expected.map_err(|message: &str| ArgError(message.to_owned())),
                "{value}"
            );
        }
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = "x".repeat(100);
        let shown = describe(&json!(long));
        assert!(shown.ends_with("… (a string)"), "{shown}");
        assert!(shown.chars().count() < 60, "{shown}");
    }
}
