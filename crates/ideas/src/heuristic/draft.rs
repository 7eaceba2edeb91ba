//! From an event's prose to idea drafts: every segment ([`segment`]) is read for cues
//! ([`read`]); bullets take their lead-in's intent when they have no stronger cue of
//! their own; in a note, sentences take the intent of a decision, todo or preference
//! header; a decision list ("We decided: a, b, c") becomes one sentence per clause, so
//! each setting can be superseded on its own (a clause's change cue is its own: "we're
//! changing the decision: a stays, b becomes" changes b only). A cue sentence of fewer than four words
//! ("Found the leak.") takes the next sentence with it. A sentence without a cue that
//! states a setting as in force ("The database connection pool size is 10", see
//! `settings::states_setting`) is a decision at confidence 0.5: it records what is
//! configured, and a later value for the same setting supersedes it. A sentence that
//! says which value it replaced by which ("It's thirty days now, not one week
//! anymore", see `values::explicit_change`) is a change decision unless it is a todo,
//! preference or question, when it replaces a decision in force (the engine checks;
//! [`Draft::unless_it_replaces`]).
//!
//! Context ideas are sparing: only when the event gives no other idea, at most one — a
//! "we use X" sentence naming something, a note's first sentence naming something, or a
//! user's sentence naming two things.

use std::sync::LazyLock;

use crate::heuristic::facts::salient_terms;
use crate::heuristic::intent::{
    Cue, Speaker, change_and_keep, cue_text, decision_list_start, is_negated, is_question_shaped,
    is_replaced, lead_in_intent, read,
};
use crate::heuristic::mentions::{Mention, mentions};
use crate::heuristic::pattern::Pattern;
use crate::heuristic::settings::{settings, states_setting};
use crate::heuristic::text::{clean_content, segment, split_clauses, split_top_level};
use crate::heuristic::values::{ValueChange, explicit_change, stated_values};
use crate::model::{Intent, MIN_CONFIDENCE, normalized_content};

/// Most ideas taken from one event.
pub const MAX_IDEAS_PER_EVENT: usize = 5;

/// One sentence, bullet or clause of an event, read.
#[derive(Clone, Debug)]
pub(crate) struct Sentence {
    /// As written.
    pub raw: String,
    /// As idea content.
    pub content: String,
    /// As cues are matched.
    pub cue_text: String,
    /// Its salient terms.
    pub terms: Vec<String>,
    /// Its intent, if a cue fired.
    pub cue_opt: Option<Cue>,
    /// It asks something.
    pub is_question: bool,
    /// It carries a change cue.
    pub is_change: bool,
    /// It carries a keep cue.
    pub is_keep: bool,
    /// It only introduces what follows ("Summary of today's decisions:").
    pub is_header: bool,
    /// It is a clause of a decision list.
    pub is_clause: bool,
}

/// Reads the prose of one event.
pub(crate) fn read_sentences(text: &str, speaker: Speaker) -> Vec<Sentence> {
    let segments = segment(text);
    let mut lead_cues: Vec<Option<Cue>> = vec![None; segments.len()];
    let mut header_opt: Option<Cue> = None;
    let mut sentences = Vec::with_capacity(segments.len());
    for (index, seg) in segments.iter().enumerate() {
        let seg_cue_text = cue_text(&seg.text);
        let content = clean_content(&seg.text);
        let terms = salient_terms(&content);
        let reading = read(&seg_cue_text, &seg.text, speaker, terms.len());
        let is_question = is_question_shaped(&seg.text)
            || reading
                .cue_opt
                .is_some_and(|cue| cue.intent == Intent::Question);
        let mut cue_opt = reading.cue_opt;
        if seg.is_lead_in {
            lead_cues[index] = lead_in_intent(&seg_cue_text, speaker);
        }
        let inherited_opt = match (seg.is_bullet, seg.lead_in) {
            (true, Some(lead)) => lead_cues[lead].map(|cue| scale(cue, 0.9)),
            _ if speaker == Speaker::Note
                && index > 0
                && content.split_whitespace().count() >= 4 =>
            {
                header_opt.map(|cue| scale(cue, 0.8))
            }
            _ => None,
        };
        if let Some(inherited) = inherited_opt
            && inherited.confidence >= MIN_CONFIDENCE
            && !is_question
            && cue_opt.is_none_or(|own| own.confidence < inherited.confidence)
        {
            cue_opt = Some(inherited);
        }
        if speaker == Speaker::Note && index == 0 {
            header_opt = cue_opt.filter(|cue| {
                matches!(
                    cue.intent,
                    Intent::Decision | Intent::Todo | Intent::Preference
                )
            });
        }
        if let Some(cue) = cue_opt
            && cue.intent == Intent::Decision
            && let Some(clauses) = decision_clauses(&seg.text)
        {
            for clause in clauses {
                let clause_cue_text = cue_text(&clause);
                let (clause_change, clause_keep) = change_and_keep(&clause_cue_text);
                let content = clean_content(&clause);
                sentences.push(Sentence {
                    terms: salient_terms(&content),
                    content,
                    cue_text: clause_cue_text,
                    raw: clause,
                    cue_opt: Some(cue),
                    is_question: false,
                    is_change: clause_change,
                    is_keep: clause_keep,
                    is_header: false,
                    is_clause: true,
                });
            }
            continue;
        }
        sentences.push(Sentence {
            raw: seg.text.clone(),
            content,
            cue_text: seg_cue_text,
            terms,
            cue_opt,
            is_question,
            is_change: reading.is_change,
            is_keep: reading.is_keep,
            is_header: seg.is_lead_in,
            is_clause: false,
        });
    }
    sentences
}

fn scale(cue: Cue, factor: f32) -> Cue {
    Cue {
        intent: cue.intent,
        confidence: cue.confidence * factor,
    }
}

/// The clauses of "We decided: a, b, c" (two or more), else `None`.
fn decision_clauses(raw: &str) -> Option<Vec<String>> {
    let start = decision_list_start(raw)?;
    let list = &raw[start..];
    if split_top_level(list).len() < 2 {
        return None;
    }
    let clauses = split_clauses(list, |clause| !settings(clause).is_empty());
    (clauses.len() >= 2).then_some(clauses)
}

/// An idea to propose.
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    /// Its content.
    pub content: String,
    /// Its intent.
    pub intent: Intent,
    /// Its confidence.
    pub confidence: f32,
    /// The entities it names.
    pub mentions: Vec<Mention>,
    /// It carries a change cue.
    pub is_change: bool,
    /// It carries a keep cue.
    pub is_keep: bool,
    /// A decision that gives a new value to something it only points at ("let's make
    /// it 10:15", "bump that to 8"): what it changes is what was just discussed.
    pub is_elliptical: bool,
    /// The values it says it replaced, and those it states ([`explicit_change`]: "16
    /// workers, not 8 workers anymore"); empty when it says it replaced none.
    pub replaced: ValueChange,
    /// A decision only because it says which value it replaced: what it was without
    /// that (another cue, or no idea at all). It stays a decision only when it
    /// replaces a decision in force — "the 6th connection went over IPv6 instead of
    /// IPv4" narrates, it changes nothing anyone decided.
    pub unless_it_replaces: Option<Option<Cue>>,
}

/// A change whose object is a pronoun: "make it 10:15", "bump that to 8", "set them at
/// 5" (any case; the value is read after the match).
static ELLIPTICAL: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)\b(?:make|set|change|bump|move|switch|raise|lower|increase|decrease|reduce|drop|push|put|cap|limit)\s+(?:it|that|this|them)\b(?:\s+(?:back\s+|up\s+|down\s+)?(?:to|at|on)\b)?",
    )
});

/// Whether a decision sentence is an elliptical change (see [`Draft::is_elliptical`]):
/// the pronoun change is not itself set aside ("rather than bump it, switch to …",
/// "don't change it") and a value follows within three words.
fn is_elliptical(sentence: &Sentence) -> bool {
    let raw = sentence.raw.as_str();
    ELLIPTICAL.find_iter(raw).any(|found| {
        let before = raw[..found.start()].to_lowercase();
        let set_aside = is_negated(&before) || is_replaced(&before);
        let tail: String = raw[found.end()..]
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        !set_aside && !stated_values(&tail).is_empty()
    })
}

/// Phrases by which a speaker withdraws what they just proposed ("I propose X … no
/// wait, that breaks Y. Safer: Z"), as whole words, any case.
static RETRACTION: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)\b(?:no,? wait|wait,? no|scratch that|strike that|on second thoughts?|never ?mind|forget that|ignore that|actually,? no)\b",
    )
});

/// How many leading sentences of the event a retraction withdraws: those before the
/// last sentence holding a retraction phrase, and that sentence too when the phrase
/// comes after its start (the proposal and its withdrawal in one sentence).
fn withdrawn_sentences(sentences: &[Sentence]) -> usize {
    let mut withdrawn = 0;
    for (index, sentence) in sentences.iter().enumerate() {
        if let Some(found) = RETRACTION.find_iter(&sentence.raw).next() {
            let starts = sentence.raw[..found.start()]
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .is_empty();
            withdrawn = if starts { index } else { index + 1 };
        }
    }
    withdrawn
}

/// The drafts of one event's sentences, at most [`MAX_IDEAS_PER_EVENT`], in order. A
/// decision, preference, solution, conclusion or todo the same message withdraws
/// ([`RETRACTION`]) is not drafted: it never held.
pub(crate) fn drafts(sentences: &[Sentence], speaker: Speaker) -> Vec<Draft> {
    let mut drafts: Vec<(usize, Draft)> = Vec::new();
    let withdrawn = withdrawn_sentences(sentences);
    let mut index = 0;
    while index < sentences.len() {
        let sentence = &sentences[index];
        index += 1;
        let replaced = if sentence.is_question || sentence.is_header {
            ValueChange::default()
        } else {
            explicit_change(&sentence.raw)
        };
        let cue_opt = sentence.cue_opt.or_else(|| stated_setting_cue(sentence));
        let (cue_opt, unless_it_replaces) = if replaced.old.is_empty() {
            (cue_opt, None)
        } else {
            let cue = changed_value_cue(cue_opt);
            let promoted = cue_opt.is_none_or(|original| original.intent != cue.intent);
            (Some(cue), promoted.then_some(cue_opt))
        };
        let Some(cue) = cue_opt else {
            continue;
        };
        if sentence.is_header || cue.intent == Intent::Context {
            continue;
        }
        if index <= withdrawn && !matches!(cue.intent, Intent::Question | Intent::Problem) {
            continue;
        }
        let mut raw = sentence.raw.clone();
        let mut content = sentence.content.clone();
        let mut num_terms = sentence.terms.len();
        if matches!(cue.intent, Intent::Conclusion | Intent::Solution)
            && content.split_whitespace().count() < 4
            && let Some(next) = sentences.get(index)
            && next.cue_opt.is_none()
            && !next.is_question
            && !next.is_header
        {
            raw = format!("{raw} {}", next.raw);
            content = clean_content(&raw);
            num_terms += next.terms.len();
            index += 1;
        }
        let found = mentions(&raw);
        let elliptical = cue.intent == Intent::Decision && is_elliptical(sentence);
        let substantial = num_terms >= 2
            || !found.is_empty()
            || elliptical
            || (num_terms >= 1 && (cue.intent == Intent::Question || sentence.is_clause));
        if !substantial || content.is_empty() {
            continue;
        }
        drafts.push((
            drafts.len(),
            Draft {
                content,
                intent: cue.intent,
                confidence: cue.confidence,
                mentions: found,
                // A promoted sentence supersedes by the value it replaced
                // (`relations::replaces_stated_value`), not by the looser change-cue rules.
                is_change: sentence.is_change
                    || (!replaced.old.is_empty() && unless_it_replaces.is_none()),
                is_keep: sentence.is_keep,
                is_elliptical: elliptical,
                replaced,
                unless_it_replaces,
            },
        ));
    }
    if drafts.is_empty()
        && let Some(context) = context_draft(sentences, speaker)
    {
        drafts.push((0, context));
    }
    let mut seen: Vec<String> = Vec::new();
    drafts.retain(|(_, draft)| {
        let normalized = normalized_content(&draft.content);
        if seen.contains(&normalized) {
            return false;
        }
        seen.push(normalized);
        true
    });
    if drafts.len() > MAX_IDEAS_PER_EVENT {
        drafts.sort_by(|(a_position, a), (b_position, b)| {
            let a_weight = a.intent.importance() * a.confidence;
            let b_weight = b.intent.importance() * b.confidence;
            b_weight
                .total_cmp(&a_weight)
                .then_with(|| a_position.cmp(b_position))
        });
        drafts.truncate(MAX_IDEAS_PER_EVENT);
        drafts.sort_by_key(|(position, _)| *position);
    }
    drafts.into_iter().map(|(_, draft)| draft).collect()
}

/// Confidence of a decision read off a statement that replaces a value by another of
/// its kind (no decision cue, see [`changed_value_cue`]): as strong as a cued change
/// ("let's switch"), since it says both what was and what is.
const CHANGED_VALUE_CONFIDENCE: f32 = 0.7;

/// The cue of a sentence that says which value it replaced by which ("It's thirty days
/// now, not one week anymore", "moved the registry to GHCR (from Docker Hub)"): a
/// decision — what it changed is now in force — unless it is already a decision, a
/// preference, a todo (a change still to make) or a question.
fn changed_value_cue(cue_opt: Option<Cue>) -> Cue {
    match cue_opt {
        Some(cue)
            if matches!(
                cue.intent,
                Intent::Decision | Intent::Preference | Intent::Todo | Intent::Question
            ) =>
        {
            cue
        }
        _ => Cue {
            intent: Intent::Decision,
            confidence: CHANGED_VALUE_CONFIDENCE,
        },
    }
}

/// Confidence of a decision read off a setting stated as in force (no cue, see
/// `settings::states_setting`): below a cued decision, above the floor.
const STATED_SETTING_CONFIDENCE: f32 = 0.5;

/// A sentence without a cue (or with a context cue) that states a setting as in force
/// is a decision.
fn stated_setting_cue(sentence: &Sentence) -> Option<Cue> {
    (!sentence.is_question && !sentence.is_header && states_setting(&sentence.raw)).then_some(Cue {
        intent: Intent::Decision,
        confidence: STATED_SETTING_CONFIDENCE,
    })
}

/// The one context idea of an event that gives no other.
fn context_draft(sentences: &[Sentence], speaker: Speaker) -> Option<Draft> {
    let statements = || {
        sentences.iter().filter(|sentence| {
            !sentence.is_question && !sentence.is_header && !sentence.content.is_empty()
        })
    };
    let make = |sentence: &Sentence, found: Vec<Mention>, confidence: f32| Draft {
        content: sentence.content.clone(),
        intent: Intent::Context,
        confidence,
        mentions: found,
        is_change: false,
        is_keep: false,
        is_elliptical: false,
        replaced: ValueChange::default(),
        unless_it_replaces: None,
    };
    for sentence in statements() {
        if let Some(cue) = sentence.cue_opt
            && cue.intent == Intent::Context
        {
            let found = mentions(&sentence.raw);
            if !found.is_empty() {
                return Some(make(sentence, found, cue.confidence));
            }
        }
    }
    let sentence = statements().next()?;
    let num_words = sentence.content.split_whitespace().count();
    let found = mentions(&sentence.raw);
    match speaker {
        Speaker::Note if !found.is_empty() && num_words >= 4 => Some(make(sentence, found, 0.4)),
        Speaker::User if found.len() >= 2 && num_words >= 6 => Some(make(sentence, found, 0.35)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intents(text: &str, speaker: Speaker) -> Vec<(Intent, String)> {
        drafts(&read_sentences(text, speaker), speaker)
            .into_iter()
            .map(|draft| (draft.intent, draft.content))
            .collect()
    }

    #[test]
    fn a_decision_list_becomes_one_idea_per_clause() {
        let found = intents(
            "OK. We decided: JWT access token expiry is 15 minutes, refresh_token_ttl is 14 days, \
             rotation with reuse detection. Put the numbers in config, not hard-coded.",
            Speaker::User,
        );
        assert_eq!(
            found,
            [
                (
                    Intent::Decision,
                    "JWT access token expiry is 15 minutes".to_owned()
                ),
                (Intent::Decision, "refresh_token_ttl is 14 days".to_owned()),
                (Intent::Decision, "rotation with reuse detection".to_owned()),
            ]
        );
    }

    #[test]
    fn bullets_inherit_their_lead_in() {
        let found = intents(
            "Summary of today's decisions (branch feat/refresh-tokens):\n\
             - Access token (JWT, RS256 via `jose`) expires after **15 minutes**.\n\
             - `refresh_token_ttl` = **14 days**, opaque token, rotated on every use.\n",
            Speaker::Assistant,
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|(intent, _)| *intent == Intent::Decision));
        assert_eq!(
            found[1].1,
            "refresh_token_ttl = 14 days, opaque token, rotated on every use."
        );
    }

    #[test]
    fn a_short_finding_takes_the_next_sentence() {
        let found = intents(
            "Found the leak. Entries are only removed on an explicit session_end event.",
            Speaker::Assistant,
        );
        assert_eq!(
            found,
            [(
                Intent::Conclusion,
                "Found the leak. Entries are only removed on an explicit session_end event."
                    .to_owned()
            )]
        );
    }

    #[test]
    fn an_elliptical_change_gives_a_value_to_a_pronoun_it_does_not_set_aside() {
        let elliptical = |text: &str| {
            read_sentences(text, Speaker::User)
                .iter()
                .any(is_elliptical)
        };
        assert!(elliptical("Let's bump it to 2 GB."));
        assert!(elliptical("Fine, make it Wednesday then."));
        assert!(elliptical("OK, let's move that to 03:30 UTC."));
        assert!(!elliptical(
            "Rather than bump it I'd switch to jose@5: typed claims."
        ));
        assert!(!elliptical("Don't change it to 5 GB."));
        assert!(!elliptical("Let's make it clear in the README."));
    }

    #[test]
    fn context_is_sparing() {
        assert_eq!(
            intents("We use vitest and testing-library in web/.", Speaker::User)
                .into_iter()
                .map(|(intent, _)| intent)
                .collect::<Vec<_>>(),
            [Intent::Context]
        );
        assert!(
            intents(
                "Lag is spread evenly across all 48 partitions.",
                Speaker::Assistant
            )
            .is_empty()
        );
        assert!(intents("Let me check both.", Speaker::Assistant).is_empty());
    }
}
