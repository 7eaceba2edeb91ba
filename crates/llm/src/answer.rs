//! Reading the model's answer: find the JSON object, check it, map grip numbers to ids.
//!
//! Models wrap JSON in ```json fences or a sentence of preamble even when asked not to,
//! so the object is taken from a fence when there is one, else from the first `{` to
//! the last `}`. What is inside is checked strictly, because a bad summary written into
//! the TOC would stay there until a rebuild: a grip number that was never shown is an
//! invention, and an overlong title or a flood of bullets is a model gone off the rails.
//! Any failed check rejects the whole answer (and the summarizer falls back).

use std::collections::HashSet;

use memory_summarize::Summary;
use memory_toc::{GripId, TocBullet};
use serde::Deserialize;

use crate::error::{LlmError, Result};

pub use memory_summarize::bounds::{
    MAX_BULLET_CHARS, MAX_BULLETS, MAX_KEYWORD_CHARS, MAX_KEYWORDS, MAX_SUMMARY_CHARS,
    MAX_TITLE_CHARS,
};

#[derive(Deserialize)]
struct RawAnswer {
    title: String,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    bullets: Vec<RawBullet>,
    #[serde(default)]
    keywords: Vec<String>,
}

#[derive(Deserialize)]
struct RawBullet {
    text: String,
    #[serde(default)]
    grips: Vec<i64>,
}

/// The JSON object inside a model's `content`: a fenced block's body, else the text
/// from the first `{` to the last `}` (summaries, the indexing engine's steps, phrases).
#[must_use]
pub fn json_object_text(content: &str) -> Option<&str> {
    let trimmed = content.trim();
    if let Some(fence_start) = trimmed.find("```") {
        let after_fence = &trimmed[fence_start + 3..];
        // Skip the info string (`json`, `JSON`, nothing) up to the end of the line.
        let body_start = after_fence.find('\n').map_or(0, |newline| newline + 1);
        let body = &after_fence[body_start..];
        let body = body
            .find("```")
            .map_or(body, |fence_end| &body[..fence_end]);
        return object_span(body);
    }
    object_span(trimmed)
}

fn object_span(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (start < end).then(|| &text[start..=end])
}

fn invalid(message: impl Into<String>) -> LlmError {
    LlmError::InvalidAnswer(message.into())
}

/// Checks that `text` is non-empty after trimming and at most `max_chars` long.
fn checked_text(what: &str, text: &str, max_chars: usize) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(invalid(format!("{what} is empty")));
    }
    let num_chars = trimmed.chars().count();
    if num_chars > max_chars {
        return Err(invalid(format!(
            "{what} has {num_chars} characters, more than {max_chars}"
        )));
    }
    Ok(trimmed.to_owned())
}

/// The summary in the model's `content`, with grip number `n` standing for
/// `grip_ids[n - 1]`.
///
/// # Errors
/// [`LlmError::InvalidAnswer`] when there is no JSON object, it lacks a field or has one
/// of the wrong type, a grip number is outside `1..=grip_ids.len()`, or a text is empty
/// or longer than its limit ([`MAX_TITLE_CHARS`], [`MAX_BULLETS`], …).
pub fn parse_answer(content: &str, grip_ids: &[GripId]) -> Result<Summary> {
    let object_text =
        json_object_text(content).ok_or_else(|| invalid("no JSON object in the answer"))?;
    let raw: RawAnswer = serde_json::from_str(object_text)
        .map_err(|error| invalid(format!("answer is not the expected JSON: {error}")))?;

    let title = checked_text("title", &raw.title, MAX_TITLE_CHARS)?;
    let summary = match raw.summary.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(summary) => Some(checked_text("summary", summary, MAX_SUMMARY_CHARS)?),
    };

    if raw.bullets.len() > MAX_BULLETS {
        return Err(invalid(format!(
            "{} bullets, more than {MAX_BULLETS}",
            raw.bullets.len()
        )));
    }
    let mut bullets = Vec::with_capacity(raw.bullets.len());
    for (index, raw_bullet) in raw.bullets.iter().enumerate() {
        let text = checked_text(
            &format!("bullet {}", index + 1),
            &raw_bullet.text,
            MAX_BULLET_CHARS,
        )?;
        let mut numbers = Vec::with_capacity(raw_bullet.grips.len());
        for &number in &raw_bullet.grips {
            let in_range = usize::try_from(number)
                .ok()
                .filter(|number| (1..=grip_ids.len()).contains(number));
            match in_range {
                Some(number) => numbers.push(number),
                None => {
                    return Err(invalid(format!(
                        "bullet {} cites grip {number}, but the grips are numbered 1 to {}",
                        index + 1,
                        grip_ids.len()
                    )));
                }
            }
        }
        // Grips are numbered in chronological order, so sorted numbers cite oldest first.
        numbers.sort_unstable();
        numbers.dedup();
        bullets.push(TocBullet {
            text,
            grip_ids: numbers.iter().map(|number| grip_ids[number - 1]).collect(),
        });
    }

    if raw.keywords.len() > MAX_KEYWORDS {
        return Err(invalid(format!(
            "{} keywords, more than {MAX_KEYWORDS}",
            raw.keywords.len()
        )));
    }
    let mut seen_keywords = HashSet::new();
    let mut keywords = Vec::with_capacity(raw.keywords.len());
    for raw_keyword in &raw.keywords {
        if raw_keyword.trim().is_empty() {
            continue;
        }
        let keyword = checked_text("keyword", raw_keyword, MAX_KEYWORD_CHARS)?;
        if seen_keywords.insert(keyword.to_lowercase()) {
            keywords.push(keyword);
        }
    }

    Ok(Summary {
        title,
        summary,
        bullets,
        keywords,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grip_ids() -> Vec<GripId> {
        (0..3)
            .map(|offset| GripId::derive("default", 1_000, "evt", offset))
            .collect()
    }

    #[test]
    fn a_plain_answer_maps_grip_numbers_to_ids() {
        let grip_ids = grip_ids();
        let summary = parse_answer(
            r#"{"title": " JWT expiry ", "summary": "",
                "bullets": [{"text": "Chose RS256", "grips": [3, 1, 3]}, {"text": "No grips"}],
                "keywords": ["JWT", "jwt", " ", "rs256"], "extra": true}"#,
            &grip_ids,
        )
        .expect("valid answer");
        assert_eq!(summary.title, "JWT expiry");
        assert_eq!(summary.summary, None);
        assert_eq!(summary.bullets[0].grip_ids, [grip_ids[0], grip_ids[2]]);
        assert!(summary.bullets[1].grip_ids.is_empty());
        assert_eq!(summary.keywords, ["JWT", "rs256"]);
    }

    #[test]
    fn fenced_and_chatty_answers_are_found() {
        let grip_ids = grip_ids();
        for content in [
            "```json\n{\"title\": \"T\", \"bullets\": [{\"text\": \"b\", \"grips\": [2]}]}\n```",
            "Here you go:\n```\n{\"title\": \"T\", \"bullets\": [{\"text\": \"b\", \"grips\": [2]}]}\n```\nDone.",
            "Sure! {\"title\": \"T\", \"bullets\": [{\"text\": \"b\", \"grips\": [2]}]} Hope it helps.",
        ] {
            let summary = parse_answer(content, &grip_ids).expect(content);
            assert_eq!(summary.title, "T");
            assert_eq!(summary.bullets[0].grip_ids, [grip_ids[1]]);
        }
    }

    #[test]
    fn bad_answers_are_rejected_with_a_reason() {
        let grip_ids = grip_ids();
        let long_title = "t".repeat(MAX_TITLE_CHARS + 1);
        let many_bullets = vec![r#"{"text": "b"}"#; MAX_BULLETS + 1].join(",");
        let long_bullet = "b".repeat(MAX_BULLET_CHARS + 1);
        let many_keywords = vec![r#""k""#; MAX_KEYWORDS + 1].join(",");
        let cases = [
            ("no json here".to_owned(), "no JSON object"),
            (
                r#"{"title": "T", "bullets": [}"#.to_owned(),
                "not the expected JSON",
            ),
            (
                r#"{"summary": "no title"}"#.to_owned(),
                "not the expected JSON",
            ),
            (r#"{"title": "  "}"#.to_owned(), "title is empty"),
            (format!(r#"{{"title": "{long_title}"}}"#), "title has"),
            (
                r#"{"title": "T", "bullets": [{"text": "b", "grips": [4]}]}"#.to_owned(),
                "cites grip 4",
            ),
            (
                r#"{"title": "T", "bullets": [{"text": "b", "grips": [0]}]}"#.to_owned(),
                "cites grip 0",
            ),
            (
                r#"{"title": "T", "bullets": [{"text": "b", "grips": [-1]}]}"#.to_owned(),
                "cites grip -1",
            ),
            (
                r#"{"title": "T", "bullets": [{"text": "b", "grips": ["1"]}]}"#.to_owned(),
                "not the expected JSON",
            ),
            (
                format!(r#"{{"title": "T", "bullets": [{many_bullets}]}}"#),
                "bullets, more than",
            ),
            (
                format!(r#"{{"title": "T", "bullets": [{{"text": "{long_bullet}"}}]}}"#),
                "bullet 1 has",
            ),
            (
                r#"{"title": "T", "bullets": [{"text": ""}]}"#.to_owned(),
                "bullet 1 is empty",
            ),
            (
                format!(r#"{{"title": "T", "keywords": [{many_keywords}]}}"#),
                "keywords, more than",
            ),
        ];
        for (content, expected) in cases {
            let err = parse_answer(&content, &grip_ids).expect_err(&content);
            assert!(
                matches!(err, LlmError::InvalidAnswer(_)),
                "{content}: {err}"
            );
            assert!(err.to_string().contains(expected), "{content}: {err}");
        }
    }

    #[test]
    fn without_grips_any_citation_is_out_of_range() {
        let err = parse_answer(
            r#"{"title": "T", "bullets": [{"text": "b", "grips": [1]}]}"#,
            &[],
        )
        .expect_err("no grips to cite");
        assert!(err.to_string().contains("numbered 1 to 0"), "{err}");
    }
}
