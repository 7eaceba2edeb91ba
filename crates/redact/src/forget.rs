//! What `admin forget` does to text: the events a selector names (by id, by session,
//! or every span a pattern matches) and the same in raw bytes (dead letters, spool
//! lines). The store rewrites and the daemon orchestrates; this decides what the text
//! becomes, and writes the tombstone that records it.
//!
//! A whole event (`--event`, `--session`) keeps its identity — id, session, project,
//! time, kind, role — so positions, citations and the session's shape stay, and loses
//! its content: the text and every metadata value become [`FORGOTTEN`]. A pattern
//! (`--match`) replaces only what it matches, with `[FORGOTTEN:<tag>]`, the tag keyed
//! like a redaction's, so the same secret stays recognisable across events without
//! being stored.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use memory_types::{Event, EventKind, Role};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::redactor::keyed_tag;

/// What the content of a wholly forgotten event becomes.
pub const FORGOTTEN: &str = "[FORGOTTEN]";
/// The metadata key of a rewritten event: the id of the tombstone that records why.
pub const FORGOTTEN_KEY: &str = "forgotten";
/// The session the tombstones are written to.
pub const FORGET_SESSION: &str = "memory-forget";
/// Most event ids a tombstone lists (its metadata stays small; the count is whole).
const TOMBSTONE_MAX_IDS: usize = 50;
/// Metadata that is structure, not content, kept when an event is forgotten whole: a
/// `memory_recalled` event's idea ids (the ideas projection reads them).
const STRUCTURAL_KEYS: &[&str] = &[FORGOTTEN_KEY, memory_types::RECALLED_IDEA_IDS];
/// What a forget already wrote: a pattern never matches inside it again, so a second
/// run finds nothing to do ([`MARKER_BYTES`] for raw payloads).
static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[FORGOTTEN(?::[0-9a-f]{8})?\]").unwrap_or_else(|_| unreachable!())
});
static MARKER_BYTES: LazyLock<regex::bytes::Regex> =
    LazyLock::new(|| regex::bytes::Regex::new(MARKER.as_str()).unwrap_or_else(|_| unreachable!()));

/// Why a selector cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    /// `--match` does not compile.
    #[error("the pattern does not compile: {0}")]
    Pattern(String),
    /// `--match` matches the empty text.
    #[error(
        "the pattern matches the empty text, so it would rewrite between every character; \
         make it match the secret only"
    )]
    MatchesEmpty,
    /// `--event` without ids, or an empty `--session`.
    #[error("{0} is empty")]
    Empty(&'static str),
}

/// What to forget.
#[derive(Clone, Debug)]
pub enum ForgetSelector {
    /// These events, wholly.
    Events(BTreeSet<String>),
    /// Every event of this session, wholly.
    Session(String),
    /// Every span this pattern matches, in every event's text and metadata values.
    Match {
        /// Over text.
        text: Regex,
        /// The same pattern over raw bytes (dead letters need not be UTF-8).
        bytes: regex::bytes::Regex,
    },
}

impl ForgetSelector {
    /// `--event ID…`.
    ///
    /// # Errors
    /// No id, or an empty one.
    pub fn events(ids: impl IntoIterator<Item = String>) -> Result<ForgetSelector, ForgetError> {
        let ids: BTreeSet<String> = ids.into_iter().collect();
        if ids.is_empty() || ids.iter().any(String::is_empty) {
            return Err(ForgetError::Empty("the event id"));
        }
        Ok(ForgetSelector::Events(ids))
    }

    /// `--session S`.
    ///
    /// # Errors
    /// An empty session id.
    pub fn session(session_id: &str) -> Result<ForgetSelector, ForgetError> {
        if session_id.is_empty() {
            return Err(ForgetError::Empty("the session id"));
        }
        Ok(ForgetSelector::Session(session_id.to_owned()))
    }

    /// `--match REGEX` (Rust `regex` syntax).
    ///
    /// # Errors
    /// It does not compile, or it matches the empty text.
    pub fn pattern(pattern: &str) -> Result<ForgetSelector, ForgetError> {
        let text = Regex::new(pattern).map_err(|err| ForgetError::Pattern(err.to_string()))?;
        if text.is_match("") {
            return Err(ForgetError::MatchesEmpty);
        }
        let bytes = regex::bytes::Regex::new(pattern)
            .map_err(|err| ForgetError::Pattern(err.to_string()))?;
        Ok(ForgetSelector::Match { text, bytes })
    }

    /// `event`, `session` or `match`: the tombstone's `selector`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            ForgetSelector::Events(_) => "event",
            ForgetSelector::Session(_) => "session",
            ForgetSelector::Match { .. } => "match",
        }
    }
}

/// A forget as it can be written down and read back (`admin forget` keeps it with the
/// store's pending marker, so an interrupted run resumes every step).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetSpec {
    /// `event`, `session` or `match`.
    pub selector: String,
    /// The event ids, the session id, or the pattern.
    pub values: Vec<String>,
    /// The project it is limited to.
    pub project: Option<String>,
    /// The tombstones' id.
    pub tombstone_id: String,
}

/// An event as it is to stay, and how much of it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewritten {
    /// The event with its content forgotten.
    pub event: Event,
    /// Spans replaced (a whole event counts its text and each metadata value).
    pub spans: u32,
}

/// Applies one selector under one data dir's tag key.
#[derive(Clone, Debug)]
pub struct Forgetter {
    selector: ForgetSelector,
    project: Option<String>,
    key: Vec<u8>,
    tombstone_id: String,
    /// `--event` and `--session` in a raw payload: the JSON field that names them.
    payload_field: Option<regex::bytes::Regex>,
}

impl Forgetter {
    /// `project` limits `--event` and `--session` to one project (every project when
    /// None; a pattern applies everywhere). `tombstone_id` is the id the tombstones will
    /// carry, recorded in every rewritten event.
    #[must_use]
    pub fn new(
        selector: ForgetSelector,
        project: Option<String>,
        key: &[u8],
        tombstone_id: String,
    ) -> Forgetter {
        let field = |name: &str, values: &mut dyn Iterator<Item = &String>| {
            let alternatives: Vec<String> = values.map(|value| regex::escape(value)).collect();
            regex::bytes::Regex::new(&format!(
                r#""{name}"\s*:\s*"(?:{})""#,
                alternatives.join("|")
            ))
            .ok()
        };
        let payload_field = match &selector {
            ForgetSelector::Events(ids) => field("event_id", &mut ids.iter()),
            ForgetSelector::Session(session) => field("session_id", &mut std::iter::once(session)),
            ForgetSelector::Match { .. } => None,
        };
        Forgetter {
            selector,
            project,
            key: key.to_vec(),
            tombstone_id,
            payload_field,
        }
    }

    /// This forget written down.
    #[must_use]
    pub fn spec(&self) -> ForgetSpec {
        let values = match &self.selector {
            ForgetSelector::Events(ids) => ids.iter().cloned().collect(),
            ForgetSelector::Session(session) => vec![session.clone()],
            ForgetSelector::Match { text, .. } => vec![text.as_str().to_owned()],
        };
        ForgetSpec {
            selector: self.selector.name().to_owned(),
            values,
            project: self.project.clone(),
            tombstone_id: self.tombstone_id.clone(),
        }
    }

    /// A forget read back from its [`ForgetSpec`].
    ///
    /// # Errors
    /// The spec names no known selector, or its values are not valid for it.
    pub fn from_spec(spec: &ForgetSpec, key: &[u8]) -> Result<Forgetter, ForgetError> {
        let selector = match spec.selector.as_str() {
            "event" => ForgetSelector::events(spec.values.iter().cloned())?,
            "session" => ForgetSelector::session(spec.values.first().map_or("", String::as_str))?,
            "match" => ForgetSelector::pattern(spec.values.first().map_or("", String::as_str))?,
            _ => return Err(ForgetError::Empty("the selector")),
        };
        Ok(Forgetter::new(
            selector,
            spec.project.clone(),
            key,
            spec.tombstone_id.clone(),
        ))
    }

    /// The selector.
    #[must_use]
    pub fn selector(&self) -> &ForgetSelector {
        &self.selector
    }

    /// The tombstones' event id.
    #[must_use]
    pub fn tombstone_id(&self) -> &str {
        &self.tombstone_id
    }

    /// The pattern's keyed tag (never the pattern: it may spell the secret).
    #[must_use]
    pub fn pattern_tag(&self) -> Option<String> {
        match &self.selector {
            ForgetSelector::Match { text, .. } => Some(keyed_tag(&self.key, text.as_str())),
            _ => None,
        }
    }

    fn in_project(&self, project_id: &str) -> bool {
        self.project
            .as_deref()
            .is_none_or(|project| project == project_id)
    }

    fn names(&self, event_id: &str, session_id: &str) -> bool {
        match &self.selector {
            ForgetSelector::Events(ids) => ids.contains(event_id),
            ForgetSelector::Session(session) => session == session_id,
            ForgetSelector::Match { .. } => false,
        }
    }

    /// Every non-empty match outside what a forget already wrote, replaced.
    fn replace(&self, pattern: &Regex, text: &str) -> Option<(String, u32)> {
        let markers: Vec<std::ops::Range<usize>> =
            MARKER.find_iter(text).map(|found| found.range()).collect();
        let mut out = String::new();
        let mut copied = 0;
        let mut spans = 0;
        for found in pattern.find_iter(text) {
            if found.is_empty()
                || markers
                    .iter()
                    .any(|marker| found.start() < marker.end && marker.start < found.end())
            {
                continue;
            }
            out.push_str(&text[copied..found.start()]);
            out.push_str(&format!(
                "[FORGOTTEN:{}]",
                keyed_tag(&self.key, found.as_str())
            ));
            copied = found.end();
            spans += 1;
        }
        if spans == 0 {
            return None;
        }
        out.push_str(&text[copied..]);
        Some((out, spans))
    }

    /// `text` with what a pattern matches replaced, or None when it holds nothing (and
    /// always None for `--event` and `--session`, which name events, not text): for
    /// text outside events, such as the hooks' session state.
    #[must_use]
    pub fn rewrite_text(&self, text: &str) -> Option<String> {
        match &self.selector {
            ForgetSelector::Match { text: pattern, .. } => {
                self.replace(pattern, text).map(|(replaced, _)| replaced)
            }
            _ => None,
        }
    }

    /// Forgets in an event's parts: true when anything changed. The same rule for a
    /// stored event and a spooled one.
    pub fn rewrite_parts(
        &self,
        ids: (&str, &str, &str),
        text: &mut String,
        metadata: &mut BTreeMap<String, String>,
    ) -> u32 {
        let (project_id, event_id, session_id) = ids;
        let mut spans = 0;
        if !self.in_project(project_id) {
            return 0;
        }
        if let ForgetSelector::Match { text: pattern, .. } = &self.selector {
            if let Some((replaced, count)) = self.replace(pattern, text) {
                *text = replaced;
                spans += count;
            }
            for (key, value) in metadata.iter_mut() {
                if key == FORGOTTEN_KEY {
                    continue;
                }
                if let Some((replaced, count)) = self.replace(pattern, value) {
                    *value = replaced;
                    spans += count;
                }
            }
        } else if self.names(event_id, session_id) {
            if !text.is_empty() && text != FORGOTTEN {
                *text = FORGOTTEN.to_owned();
                spans += 1;
            }
            for (key, value) in metadata.iter_mut() {
                if !STRUCTURAL_KEYS.contains(&key.as_str()) && value != FORGOTTEN {
                    *value = FORGOTTEN.to_owned();
                    spans += 1;
                }
            }
        }
        if spans > 0 {
            metadata.insert(FORGOTTEN_KEY.to_owned(), self.tombstone_id.clone());
        }
        spans
    }

    /// The event as it is to stay, or None when the selector leaves it as it is (an
    /// event forgotten before is not forgotten again). Tombstones are never rewritten:
    /// they hold no content, and they are the audit trail.
    #[must_use]
    pub fn rewrite_event(&self, event: &Event) -> Option<Rewritten> {
        if event.kind == EventKind::MemoryForgotten {
            return None;
        }
        let mut rewritten = event.clone();
        let spans = self.rewrite_parts(
            (&event.project_id, &event.event_id, &event.session_id),
            &mut rewritten.text,
            &mut rewritten.metadata,
        );
        (spans > 0).then_some(Rewritten {
            event: rewritten,
            spans,
        })
    }

    /// Raw bytes (a dead letter's payload) as they are to stay, or None when untouched.
    /// A pattern replaces what it matches; an event or session selector forgets the
    /// whole payload when a JSON field names the event or session (a payload that did
    /// not parse has no fields to trust). Dead letters carry no project, so `project`
    /// does not limit this.
    #[must_use]
    pub fn rewrite_bytes(&self, payload: &[u8]) -> Option<Vec<u8>> {
        match &self.selector {
            ForgetSelector::Match { bytes, .. } => {
                let markers: Vec<std::ops::Range<usize>> = MARKER_BYTES
                    .find_iter(payload)
                    .map(|found| found.range())
                    .collect();
                let mut out = Vec::new();
                let mut copied = 0;
                for found in bytes.find_iter(payload) {
                    if found.is_empty()
                        || markers
                            .iter()
                            .any(|marker| found.start() < marker.end && marker.start < found.end())
                    {
                        continue;
                    }
                    out.extend_from_slice(&payload[copied..found.start()]);
                    out.extend_from_slice(
                        format!(
                            "[FORGOTTEN:{}]",
                            keyed_tag(&self.key, &String::from_utf8_lossy(found.as_bytes()))
                        )
                        .as_bytes(),
                    );
                    copied = found.end();
                }
                if copied == 0 && out.is_empty() {
                    return None;
                }
                out.extend_from_slice(&payload[copied..]);
                Some(out)
            }
            ForgetSelector::Events(_) | ForgetSelector::Session(_) => self
                .payload_field
                .as_ref()
                .is_some_and(|field| field.is_match(payload))
                .then(|| FORGOTTEN.as_bytes().to_vec()),
        }
    }

    /// The tombstone for one project: what was forgotten there, how, and how many.
    /// `event_ids` are the rewritten events of that project.
    #[must_use]
    pub fn tombstone(
        &self,
        project_id: &str,
        event_ids: &[String],
        dead_letters: usize,
        now_ms: u64,
    ) -> Event {
        let what = match &self.selector {
            ForgetSelector::Events(_) => "named events".to_owned(),
            ForgetSelector::Session(session) => format!("session {session}"),
            ForgetSelector::Match { .. } => format!(
                "spans matching a pattern (tag {})",
                self.pattern_tag().unwrap_or_default()
            ),
        };
        let mut metadata = BTreeMap::from([
            ("selector".to_owned(), self.selector.name().to_owned()),
            ("events".to_owned(), event_ids.len().to_string()),
            ("dead_letters".to_owned(), dead_letters.to_string()),
        ]);
        let mut listed: Vec<&str> = event_ids
            .iter()
            .take(TOMBSTONE_MAX_IDS)
            .map(String::as_str)
            .collect();
        if event_ids.len() > TOMBSTONE_MAX_IDS {
            listed.push("…");
        }
        metadata.insert("event_ids".to_owned(), listed.join(","));
        if let Some(tag) = self.pattern_tag() {
            metadata.insert("pattern_tag".to_owned(), tag);
        }
        if let ForgetSelector::Session(session) = &self.selector {
            metadata.insert("session".to_owned(), session.clone());
        }
        Event {
            event_id: self.tombstone_id.clone(),
            session_id: FORGET_SESSION.to_owned(),
            project_id: project_id.to_owned(),
            agent_id: None,
            timestamp_ms: now_ms,
            kind: EventKind::MemoryForgotten,
            role: Role::System,
            text: format!(
                "admin forget rewrote {} event(s) and {dead_letters} dead letter(s): {what}",
                event_ids.len()
            ),
            metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, session: &str, text: &str) -> Event {
        Event {
            event_id: id.to_owned(),
            session_id: session.to_owned(),
            project_id: "p".to_owned(),
            agent_id: None,
            timestamp_ms: 1,
            kind: EventKind::ToolCall,
            role: Role::Assistant,
            text: text.to_owned(),
            metadata: BTreeMap::from([
                ("command".to_owned(), format!("echo {text}")),
                ("tool_name".to_owned(), "Bash".to_owned()),
            ]),
        }
    }

    fn forgetter(selector: ForgetSelector, project: Option<&str>) -> Forgetter {
        Forgetter::new(
            selector,
            project.map(str::to_owned),
            b"k",
            "forget-1".to_owned(),
        )
    }

    #[test]
    fn a_pattern_replaces_only_what_it_matches_with_a_stable_tag() {
        let forget = forgetter(ForgetSelector::pattern(r"hunter\d+").expect("ok"), None);
        let rewritten = forget
            .rewrite_event(&event("e", "s", "password hunter22 and hunter22"))
            .expect("rewritten");
        let tag = keyed_tag(b"k", "hunter22");
        assert_eq!(
            rewritten.event.text,
            format!("password [FORGOTTEN:{tag}] and [FORGOTTEN:{tag}]")
        );
        assert_eq!(
            rewritten.event.metadata["command"],
            format!("echo password [FORGOTTEN:{tag}] and [FORGOTTEN:{tag}]")
        );
        assert_eq!(rewritten.event.metadata["tool_name"], "Bash");
        assert_eq!(rewritten.event.metadata[FORGOTTEN_KEY], "forget-1");
        assert_eq!(rewritten.spans, 4);
        // Forgotten already: nothing more to do.
        assert_eq!(forget.rewrite_event(&rewritten.event), None);
        assert_eq!(forget.rewrite_event(&event("e", "s", "nothing here")), None);
        // The tombstone names the pattern by its tag only.
        let tombstone = forget.tombstone("p", &["e".to_owned()], 1, 5);
        assert!(!tombstone.text.contains("hunter"), "{}", tombstone.text);
        assert_eq!(tombstone.kind, EventKind::MemoryForgotten);
        assert!(!tombstone.kind.is_conversation());
        assert_eq!(
            tombstone.metadata["pattern_tag"],
            keyed_tag(b"k", r"hunter\d+")
        );
    }

    #[test]
    fn events_and_sessions_are_forgotten_whole_and_keep_their_identity() {
        let forget = forgetter(
            ForgetSelector::events(["e1".to_owned()]).expect("ok"),
            Some("p"),
        );
        let original = event("e1", "s", "the key is abc");
        let rewritten = forget.rewrite_event(&original).expect("rewritten").event;
        assert_eq!(rewritten.text, FORGOTTEN);
        assert_eq!(rewritten.metadata["command"], FORGOTTEN);
        assert_eq!(rewritten.metadata["tool_name"], FORGOTTEN);
        assert_eq!(
            (
                &rewritten.event_id,
                &rewritten.session_id,
                rewritten.timestamp_ms,
                rewritten.kind
            ),
            (
                &original.event_id,
                &original.session_id,
                original.timestamp_ms,
                original.kind
            )
        );
        assert_eq!(forget.rewrite_event(&rewritten), None);
        assert_eq!(forget.rewrite_event(&event("e2", "s", "x")), None);
        let mut other_project = original.clone();
        other_project.project_id = "q".to_owned();
        assert_eq!(forget.rewrite_event(&other_project), None);

        let session = forgetter(ForgetSelector::session("s").expect("ok"), None);
        assert!(session.rewrite_event(&event("e9", "s", "x")).is_some());
        assert!(session.rewrite_event(&event("e9", "t", "x")).is_none());
    }

    #[test]
    fn raw_payloads_are_rewritten_too() {
        let pattern = forgetter(ForgetSelector::pattern("s3cr3t").expect("ok"), None);
        let rewritten = pattern
            .rewrite_bytes(b"{\"text\":\"s3cr3t\xff\"}")
            .expect("rewritten");
        assert!(!rewritten.windows(6).any(|window| window == b"s3cr3t"));
        assert!(pattern.rewrite_bytes(b"nothing").is_none());
        assert!(pattern.rewrite_bytes(&rewritten).is_none(), "idempotent");
        let broad = forgetter(ForgetSelector::pattern("[a-z0-9]{3,}").expect("ok"), None);
        let once = broad.rewrite_bytes(b"abc def").expect("rewritten");
        assert!(broad.rewrite_bytes(&once).is_none(), "idempotent");
        let events = forgetter(ForgetSelector::events(["e1".to_owned()]).expect("ok"), None);
        assert_eq!(
            events.rewrite_bytes(br#"{"event_id": "e1","text":"x"}"#),
            Some(FORGOTTEN.as_bytes().to_vec())
        );
        assert!(events.rewrite_bytes(br#"{"event_id":"e2"}"#).is_none());
        // An id inside other text is not the event.
        assert!(
            events
                .rewrite_bytes(br#"{"event_id":"e10","text":"e1"}"#)
                .is_none()
        );
    }

    #[test]
    fn a_pattern_never_matches_what_a_forget_wrote() {
        let broad = forgetter(ForgetSelector::pattern("[a-z0-9]{3,}").expect("ok"), None);
        let once = broad
            .rewrite_event(&event("e", "s", "abc def"))
            .expect("rewritten")
            .event;
        assert_eq!(broad.rewrite_event(&once), None, "{once:?}");
        let boundary = forgetter(ForgetSelector::pattern(r"\bzz|\b").expect("ok"), None);
        assert_eq!(
            boundary.rewrite_text("a b c"),
            None,
            "empty matches are skipped"
        );
        assert!(boundary.rewrite_text("zz top").is_some());
    }

    #[test]
    fn a_forget_reads_back_from_its_spec() {
        for selector in [
            ForgetSelector::pattern("x+y").expect("ok"),
            ForgetSelector::session("s").expect("ok"),
            ForgetSelector::events(["a".to_owned(), "b".to_owned()]).expect("ok"),
        ] {
            let forget = forgetter(selector, Some("p"));
            let back = Forgetter::from_spec(&forget.spec(), b"k").expect("valid");
            assert_eq!(back.spec(), forget.spec());
        }
    }

    #[test]
    fn structure_stays_when_an_event_is_forgotten_whole() {
        let forget = forgetter(ForgetSelector::session("memory-recall").expect("ok"), None);
        let mut recall = event("r1", "memory-recall", "jwt expiry");
        recall.kind = EventKind::MemoryRecalled;
        recall.metadata = BTreeMap::from([(
            memory_types::RECALLED_IDEA_IDS.to_owned(),
            "idea-0123456789abcdef".to_owned(),
        )]);
        let rewritten = forget.rewrite_event(&recall).expect("rewritten").event;
        assert_eq!(rewritten.text, FORGOTTEN);
        assert_eq!(
            rewritten.metadata[memory_types::RECALLED_IDEA_IDS],
            "idea-0123456789abcdef"
        );
    }

    #[test]
    fn selectors_that_would_rewrite_everything_are_refused() {
        assert!(matches!(
            ForgetSelector::pattern("a*"),
            Err(ForgetError::MatchesEmpty)
        ));
        assert!(matches!(
            ForgetSelector::pattern("("),
            Err(ForgetError::Pattern(_))
        ));
        assert!(ForgetSelector::events(Vec::new()).is_err());
        assert!(ForgetSelector::session("").is_err());
    }
}
