//! The literal values a text states, and what a newer statement replaced of an older
//! one. A decision that changes a setting replaces a value; the turns that used the old
//! value ("muted the check in #alerts-prod", "the fake clock jumps 30 min") are no
//! ideas of their own, yet they carry the stale value as surely as the decision did.
//! Search uses [`value_change`] and [`stated_values`] to tell such turns
//! (`memory-query`'s idea lens ranks them like the superseded decision).
//!
//! A value is one of
//! - a quantity, normalised as settings are ("30 min", "30 minutes", "half an hour"
//!   are one value; see `settings::quantity`);
//! - a name: an entity mention (the lexicon, code identifiers, files, people), a
//!   value-shaped word — a digit beside a letter or punctuation (`us-east-1`,
//!   `python:3.12-slim`, `9:30`), or `#`, `@`, `/`, `_`, `.` inside
//!   (`#alerts-prod`, `db.internal`) — a capitalised word inside a sentence that is
//!   no stop word ("ask Priya"), a weekday.
//!
//! A value after a negation or a replacement marker ("not X", "no longer X",
//! "instead of X", "switch from X", "from X to Y") is *replaced*, not stated.

use crate::entities::canonical_key;
use crate::heuristic::mentions::mentions;
use crate::heuristic::settings::{is_after_marker, is_name_value, quantity, words_of};

/// What kind of value: quantities of one dimension compare among themselves
/// (`dur`, `bytes`, `pct`, `rate`, `n`), names among themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Quantity(&'static str),
    Name,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Value {
    key: String,
    kind: Kind,
    replaced: bool,
}

/// The values `text` states (not those it negates or replaces), as comparable keys.
#[must_use]
pub fn stated_values(text: &str) -> Vec<String> {
    values(text)
        .into_iter()
        .filter(|value| !value.replaced)
        .map(|value| value.key)
        .collect()
}

/// What a newer statement changed of an older one: the values only the older one
/// states (`old`), of a kind the newer one states too — so "30 minutes" replaced by
/// "2 hours" is a change, and a file the older one merely named is not — and the
/// values the newer one states (`new`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueChange {
    /// Values the newer statement replaced.
    pub old: Vec<String>,
    /// Values the newer statement states.
    pub new: Vec<String>,
}

impl ValueChange {
    /// Whether a text stating `stated` (see [`stated_values`]) still uses a replaced
    /// value: it states one of `old` and none of `new`.
    #[must_use]
    pub fn is_used_by(&self, stated: &[String]) -> bool {
        stated.iter().any(|value| self.old.contains(value))
            && !stated.iter().any(|value| self.new.contains(value))
    }
}

/// What `newer` replaced of `older` (see [`ValueChange`]).
#[must_use]
pub fn value_change(older: &str, newer: &str) -> ValueChange {
    let newer_values: Vec<Value> = values(newer)
        .into_iter()
        .filter(|value| !value.replaced)
        .collect();
    let old = values(older)
        .into_iter()
        .filter(|value| {
            !value.replaced
                && newer_values.iter().any(|new| new.kind == value.kind)
                && !newer_values.iter().any(|new| new.key == value.key)
        })
        .map(|value| value.key)
        .collect();
    ValueChange {
        old,
        new: newer_values.into_iter().map(|value| value.key).collect(),
    }
}

/// Every value of `text`, each key once (stated wins over replaced).
fn values(text: &str) -> Vec<Value> {
    let plain = text.replace(['*', '`', '"', '(', ')'], " ");
    let mut found: Vec<Value> = Vec::new();
    for sentence in plain.split([';', '\n']).flat_map(sentences) {
        for mention in mentions(sentence) {
            add(&mut found, mention.key, Kind::Name, mention.is_negated);
        }
        let words = words_of(sentence);
        let mut index = 0;
        while index < words.len() {
            let replaced = is_after_marker(&words, index);
            if let Some((value, consumed)) = quantity(&words, index) {
                let dimension = dimension_of(&value);
                add(&mut found, value, Kind::Quantity(dimension), replaced);
                index += consumed;
                continue;
            }
            if is_name_value(&words, index) {
                add(
                    &mut found,
                    canonical_key(words[index].text),
                    Kind::Name,
                    replaced,
                );
            }
            index += 1;
        }
    }
    found
}

/// The sentences of a part: cut after `.`, `!` or `?` followed by a space, so
/// `db.internal` and `3.12` stay whole.
fn sentences(part: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut start = 0;
    let bytes = part.as_bytes();
    for (at, byte) in bytes.iter().enumerate() {
        if matches!(byte, b'.' | b'!' | b'?')
            && bytes.get(at + 1).is_some_and(u8::is_ascii_whitespace)
        {
            found.push(&part[start..=at]);
            start = at + 1;
        }
    }
    if start < part.len() {
        found.push(&part[start..]);
    }
    found
}

fn add(found: &mut Vec<Value>, key: String, kind: Kind, replaced: bool) {
    if key.is_empty() {
        return;
    }
    match found.iter_mut().find(|value| value.key == key) {
        Some(value) => value.replaced &= replaced,
        None => found.push(Value {
            key,
            kind,
            replaced,
        }),
    }
}

fn dimension_of(value: &str) -> &'static str {
    match value.split_once(':').map_or("", |(dimension, _)| dimension) {
        "dur" => "dur",
        "bytes" => "bytes",
        "pct" => "pct",
        "rate" => "rate",
        _ => "n",
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Any text (any script, marks, punctuation) reads without a panic, and a
        /// change between any two texts too.
        #[test]
        fn any_text_reads(older in "\\PC{0,80}", newer in "[#@ .:/_a-zA-Z0-9—é-]{0,40}") {
            let change = value_change(&older, &newer);
            let _ = change.is_used_by(&stated_values(&older));
        }
    }

    #[test]
    fn quantities_compare_however_written() {
        assert_eq!(stated_values("Set the TTL to 30 minutes."), ["dur:1800"]);
        assert_eq!(
            stated_values("The fake clock jumps 30 min ahead."),
            ["dur:1800"]
        );
        assert_eq!(stated_values("With the half an hour TTL"), ["dur:1800"]);
        assert_eq!(stated_values("Going with two hours"), ["dur:7200"]);
    }

    #[test]
    fn names_are_value_shaped_words_entities_and_names_inside_a_sentence() {
        let found = stated_values("Muted the flapping check in #alerts-prod until Monday.");
        assert_eq!(found, ["#alertsprod", "monday"], "{found:?}");
        let found = stated_values("Terraform plan for us-east-1 shows no drift.");
        assert!(found.contains(&"useast1".to_owned()), "{found:?}");
        let found = stated_values("I'll ask Priya to look at the refund retry PR.");
        assert!(found.contains(&"priya".to_owned()), "{found:?}");
        let found = stated_values("Build FROM python:3.12-slim, that's the base image.");
        assert!(found.contains(&"python3.12slim".to_owned()), "{found:?}");
        assert!(stated_values("We can tune it once we have hit-rate numbers.").is_empty());
        // Words of other scripts and lone marks are cut by characters, not bytes.
        assert!(stated_values("— é, Ωmega — ✓ ok #—").len() <= 2);
    }

    #[test]
    fn a_value_after_a_negation_or_a_replacement_is_not_stated() {
        let found = stated_values("Use #ops-pager instead of #alerts-prod from here on.");
        assert_eq!(found, ["#opspager"], "{found:?}");
        let found = stated_values("It is no longer 30 minutes; it's 2 hours now.");
        assert_eq!(found, ["dur:7200"], "{found:?}");
        let found = stated_values("We moved the TTL from 30 minutes to 2 hours.");
        assert_eq!(found, ["dur:7200"], "{found:?}");
    }

    #[test]
    fn a_change_keeps_the_old_values_of_a_kind_the_newer_one_states() {
        let change = value_change(
            "I set the session cache TTL to 30 minutes in config/cache.yaml.",
            "Going with 2 hours instead of half an hour for the session cache TTL.",
        );
        assert_eq!(change.old, ["dur:1800"], "the file is no replaced value");
        assert_eq!(change.new, ["dur:7200"]);
        assert!(change.is_used_by(&stated_values(
            "The hit-rate panel drops right at the 30 min mark."
        )));
        assert!(!change.is_used_by(&stated_values("Bumped it from 30 min to 2 hours.")));
        assert!(!change.is_used_by(&stated_values("Both 30 minutes and 2 hours work.")));
        assert!(!change.is_used_by(&stated_values("The cache hit rate is fine.")));
    }

    #[test]
    fn a_change_of_name() {
        let change = value_change(
            "Everything goes to #alerts-prod, that's the Slack channel for production alerts.",
            "Use #ops-pager instead of #alerts-prod for the Slack channel from here on.",
        );
        assert_eq!(change.old, ["#alertsprod"], "{change:?}");
        assert!(change.is_used_by(&stated_values(
            "The deploy notifications are noise in #alerts-prod."
        )));
    }
}
