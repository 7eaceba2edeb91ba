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
//! "instead of X", "switch from X", "from X to Y") or a marker of what it was before
//! ("previously X", "(was X)", "to Y (from X)") is *replaced*, not stated.
//!
//! A statement that replaces a value by one of its kind says itself what changed
//! ([`explicit_change`]: "It's thirty days now, not one week anymore", "moved the
//! timeout to 4 seconds (from 10s)", "NATS is the broker now (was RabbitMQ)"): the
//! turns before it that state the old value are stale whether or not they became ideas.

use crate::entities::canonical_key;
use std::sync::LazyLock;

use crate::heuristic::intent::{ends_replacement_marker, is_replaced};
use crate::heuristic::mentions::mentions;
use crate::heuristic::pattern::Pattern;
use crate::heuristic::settings::{is_after_marker, is_name_value, quantity, words_of};
use crate::model::EntityType;

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
    /// Replaced by a marker that says so ("not X", "instead of X", "(was X)"), not
    /// only the movement of "from X to Y", which as often tells a measurement
    /// ("p99 fell from 800 ms to 120 ms") as a change of setting.
    said_replaced: bool,
    /// A person's name or a capitalised word ("Priya", "Paris"): a value of settings
    /// now and then, of conversation all the time (see [`SettingValues`]).
    plain: bool,
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
    change_of(values(older), values(newer))
}

/// The values of settings a text states or replaces, read once to compare with many
/// texts: quantities, value-shaped words (`us-east-1`, `3.12`), technologies, files,
/// identifiers, weekdays — not people's names nor other capitalised words. Two turns
/// of a conversation name different people all the time ("Thanks, Mel!"); two
/// statements about one setting naming different values of the kinds above is what a
/// change looks like.
#[derive(Clone, Debug)]
pub struct SettingValues(Vec<Value>);

impl SettingValues {
    /// The values of settings in `text`.
    #[must_use]
    pub fn of(text: &str) -> Self {
        SettingValues(
            values(text)
                .into_iter()
                .filter(|value| !value.plain)
                .collect(),
        )
    }

    /// What a newer text with `newer` values replaced of these ([`value_change`] among
    /// values of settings).
    #[must_use]
    pub fn change_to(&self, newer: &SettingValues) -> ValueChange {
        change_of(self.0.clone(), newer.0.clone())
    }

    /// Whether the text states no value of a setting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|value| value.replaced)
    }
}

fn change_of(older: Vec<Value>, newer: Vec<Value>) -> ValueChange {
    let newer_values: Vec<Value> = newer.into_iter().filter(|value| !value.replaced).collect();
    let old = older
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

/// What `text` itself says it changed: the values it marks as replaced ("not one week
/// anymore", "(from 10s)", "was RabbitMQ", "instead of Jira") of a kind it also
/// states (`old`), and the values it states (`new`). Both empty when it replaces
/// nothing, or only negates ("we don't use Jira" names no replacement).
#[must_use]
pub fn explicit_change(text: &str) -> ValueChange {
    if !might_replace(text) {
        return ValueChange::default();
    }
    let found = values(text);
    let old: Vec<String> = found
        .iter()
        .filter(|value| {
            value.said_replaced
                && found
                    .iter()
                    .any(|other| !other.replaced && other.kind == value.kind)
        })
        .map(|value| value.key.clone())
        .collect();
    if old.is_empty() {
        return ValueChange::default();
    }
    ValueChange {
        old,
        new: found
            .into_iter()
            .filter(|value| !value.replaced)
            .map(|value| value.key)
            .collect(),
    }
}

/// The markers [`is_said_replaced`] reads, as one pattern: a text without any states
/// no replaced value, and most turns have none. Found here, the text's values are read
/// (costly: entity mentions, quantities), so "not" counts only before a number (a
/// digit or a spelled one) or in a sentence with "anymore", the two ways it replaces.
static MIGHT_REPLACE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)\b(?:instead of|rather than|no longer|previously|formerly|used to be|switch(?:ed|ing)? from|migrat(?:e|ed|ing) from|mov(?:e|ed|ing) off|away from|replac(?:e|es|ed|ing)|drop(?:s|ped|ping)?|remov(?:e|es|ed|ing)|anymore|any more)\b|\((?:from|was) |\bnot\s+[`*]*(?:[0-9]|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|half)\b)",
    )
});

fn might_replace(text: &str) -> bool {
    MIGHT_REPLACE.is_match(text)
}

/// Whether a value follows a marker of what it was before, given the sentence's words
/// before it (lowercase): "previously X", "formerly X", "used to be X", and a
/// parenthesis opening with "from" or "was" ("moved the timeout to 4 seconds (from
/// 10s)", "NATS (was RabbitMQ)"; [`values`] reads those as "formerly"). A bare "was X"
/// or "down from X" tells as often what a measurement was.
fn is_former<S: AsRef<str>>(before: &[S]) -> bool {
    let word = |back: usize| {
        before
            .len()
            .checked_sub(back)
            .map_or("", |at| before[at].as_ref())
    };
    match word(1) {
        "previously" | "formerly" => true,
        "be" => word(2) == "to" && word(3) == "used",
        _ => false,
    }
}

/// Whether the words before a value say it was replaced: a marker of what it was
/// ([`is_former`]), a replacement ("instead of X", "switch from X", "rather than X"),
/// "no longer X", or "not X" when `not_replaces` ("16 workers, not 8"; a name only in
/// "not X anymore": "covers clicks, but not Enter" sets a name aside, it replaces
/// nothing). Not every negation: "0 errors", "without Redis", "never Friday" deny, they
/// name nothing that held before. A quantity is not replaced by "drop", "remove" or
/// "replace" ("removed 3 flaky tests" counts tests, it replaces no 3).
fn is_said_replaced<S: AsRef<str>>(before: &[S], (not_replaces, quantity): (bool, bool)) -> bool {
    let word = |back: usize| {
        before
            .len()
            .checked_sub(back)
            .map_or("", |at| before[at].as_ref())
    };
    is_former(before)
        || (not_replaces && word(1) == "not")
        || (word(2) == "no" && word(1) == "longer")
        || (ends_replacement_marker(word(1), !quantity) && {
            let last_three: Vec<&str> = (1..=3).rev().map(word).filter(|w| !w.is_empty()).collect();
            is_replaced(&last_three.join(" "))
        })
}

/// The last three words of `text`, lowercase, punctuation trimmed, in order: all that
/// [`is_said_replaced`] reads.
fn last_lower_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split_whitespace()
        .rev()
        .map(|word| {
            word.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|word| !word.is_empty())
        .take(3)
        .collect();
    words.reverse();
    words
}

/// Whether `text` holds `needle` (ASCII), whatever the case, without a lowercase copy.
fn contains_ignore_case(text: &str, needle: &str) -> bool {
    text.as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Every value of `text`, each key once (stated wins over replaced).
fn values(text: &str) -> Vec<Value> {
    let plain = text
        .replace("(from ", " formerly ")
        .replace("(From ", " formerly ")
        .replace("(was ", " formerly ")
        .replace("(Was ", " formerly ")
        .replace(['*', '`', '"', '(', ')'], " ");
    let mut found: Vec<Value> = Vec::new();
    for sentence in plain.split([';', '\n']).flat_map(sentences) {
        let anymore = contains_ignore_case(sentence, "anymore")
            || contains_ignore_case(sentence, " any more");
        for mention in mentions(sentence) {
            let before = last_lower_words(&sentence[..mention.start]);
            let said = is_said_replaced(&before, (anymore, false));
            let plain = mention.entity_type == EntityType::Person;
            add(
                &mut found,
                (mention.key, Kind::Name, plain),
                (mention.is_negated || said, said),
            );
        }
        let words = words_of(sentence);
        let lower: Vec<&str> = words.iter().map(|word| word.lower.as_str()).collect();
        let mut index = 0;
        while index < words.len() {
            let marked = is_after_marker(&words, index);
            let said = is_said_replaced(&lower[..index], (true, true));
            let replaced = (marked || said, said);
            if let Some((value, consumed)) = quantity(&words, index) {
                let dimension = dimension_of(&value);
                add(
                    &mut found,
                    (value, Kind::Quantity(dimension), false),
                    replaced,
                );
                index += consumed;
                continue;
            }
            if is_name_value(&words, index) {
                let said = is_said_replaced(&lower[..index], (anymore, false));
                let text = words[index].text;
                let plain = text
                    .chars()
                    .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
                    && !is_weekday(lower[index]);
                add(
                    &mut found,
                    (canonical_key(text), Kind::Name, plain),
                    (marked || said, said),
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

/// Adds a value, `(key, kind, plain)` and `(replaced, said_replaced)`: stated anywhere
/// wins over replaced, and a value plain once is plain.
fn add(
    found: &mut Vec<Value>,
    (key, kind, plain): (String, Kind, bool),
    (replaced, said): (bool, bool),
) {
    if key.is_empty() {
        return;
    }
    match found.iter_mut().find(|value| value.key == key) {
        Some(value) => {
            value.replaced &= replaced;
            value.said_replaced = value.replaced && (value.said_replaced || said);
            value.plain |= plain;
        }
        None => found.push(Value {
            key,
            kind,
            replaced,
            said_replaced: replaced && said,
            plain,
        }),
    }
}

fn is_weekday(word: &str) -> bool {
    crate::heuristic::settings::WEEKDAYS.contains(&word.trim_end_matches('s'))
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
        assert_eq!(stated_values("The gate is 80 percent."), ["pct:80"]);
        assert_eq!(stated_values("The gate is eighty percent."), ["pct:80"]);
        assert_eq!(stated_values("The gate is 80%."), ["pct:80"]);
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
    fn a_statement_says_what_it_replaced() {
        let change = explicit_change("It's thirty days now, not one week anymore (log retention).");
        assert_eq!(change.old, ["dur:604800"], "{change:?}");
        assert_eq!(change.new, ["dur:2592000"], "{change:?}");
        let change = explicit_change(
            "After the pager storm we moved the timeout on calls to the payment provider to 4 seconds (from 10s).",
        );
        assert_eq!(change.old, ["dur:10"], "{change:?}");
        assert!(change.new.contains(&"dur:4".to_owned()), "{change:?}");
        let change = explicit_change(
            "Applied: NATS is what the message broker is set to now (was RabbitMQ).",
        );
        assert_eq!(change.old, ["rabbitmq"], "{change:?}");
        assert!(change.new.contains(&"nats".to_owned()), "{change:?}");
        // "From X to Y" tells a measurement as often as a change: no change said.
        let change = explicit_change("Peak connections dropped from 105 to 56.");
        assert_eq!(change, ValueChange::default());
        assert_eq!(
            stated_values("Peak connections dropped from 105 to 56."),
            ["n:56"]
        );
        // A denial names nothing that held before ("0" and "never" deny), and a name
        // set aside is no name replaced.
        assert_eq!(
            explicit_change("Disabling the button covers clicks, but not Enter pressed twice."),
            ValueChange::default()
        );
        assert_eq!(
            explicit_change("Release 0.12.9: refresh token rotation and the CI cache fix."),
            ValueChange::default()
        );
        assert_eq!(
            explicit_change("The skew tolerance was 0, and the Grafana pods drift by 312 ms."),
            ValueChange::default()
        );
        // A negation that names no replacement, a value of another kind, or no marker
        // at all: nothing was replaced.
        assert_eq!(
            explicit_change("We don't use Jira."),
            ValueChange::default()
        );
        assert_eq!(
            explicit_change("Not 30 minutes, and ask Priya about it."),
            ValueChange::default()
        );
        assert_eq!(
            explicit_change("Set the TTL to 30 minutes in config/cache.yaml."),
            ValueChange::default()
        );
    }

    fn setting_change_of(older: &str, newer: &str) -> ValueChange {
        SettingValues::of(older).change_to(&SettingValues::of(newer))
    }

    #[test]
    fn a_setting_change_leaves_people_and_capitalised_words_out() {
        let change = setting_change_of(
            "Thanks Mel! The coverage gate is 80 percent.",
            "Hey Caroline, with the 85% threshold we need more tests.",
        );
        assert_eq!(change.old, ["pct:80"], "{change:?}");
        assert_eq!(change.new, ["pct:85"], "{change:?}");
        let change = setting_change_of(
            "Thanks Mel! I went to the support group.",
            "Hey Caroline, I painted a lake.",
        );
        assert_eq!(change, ValueChange::default());
        // What value_change would call a change.
        assert!(
            !value_change("Thanks Mel! I went there.", "Hey Caroline, look.")
                .old
                .is_empty()
        );
        let change = setting_change_of(
            "Deploys go out on Thursday from us-east-1.",
            "Deploys go out on Tuesday from us-east-1.",
        );
        assert_eq!(change.old, ["thursday"], "{change:?}");
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
