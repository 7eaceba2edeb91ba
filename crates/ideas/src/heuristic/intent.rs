//! Intent and confidence of one sentence from linguistic cues. Each cue is a lowercase
//! pattern with a weight (its strength); the strongest cue that is not negated ("we
//! haven't decided", "no errors") wins, ties going to the intent listed first in
//! [`PRIORITY`]. A sentence ending in `?` is a question and nothing else. Hedges
//! ("maybe", "I think", "could") make a decision, solution or conclusion tentative, and
//! who speaks scales the rest: an assistant has no preferences, and its decisions are
//! recaps or proposals.
//!
//! Besides the intent, a sentence is read for a change cue ("switch to", "instead of",
//! "becomes": a decision that replaces another) and a keep cue ("stays", "unchanged":
//! a decision that restates one), and for a lead-in ("We decided:") after which a list
//! of clauses follows.

use std::sync::LazyLock;

use crate::heuristic::pattern::{Pattern, PatternSet};
use crate::model::Intent;

/// Who wrote the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Speaker {
    /// The human.
    User,
    /// The agent.
    Assistant,
    /// A note kept in the session (a record someone chose to write down).
    Note,
}

/// An intent with its confidence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cue {
    /// What the sentence is.
    pub intent: Intent,
    /// How sure, 0..1.
    pub confidence: f32,
}

/// What the cues of one sentence say.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    /// The winning intent, if any cue fired.
    pub cue_opt: Option<Cue>,
    /// A change cue: this replaces something.
    pub is_change: bool,
    /// A keep cue: this restates something.
    pub is_keep: bool,
}

/// Ties between equally strong cues go to the intent listed first.
const PRIORITY: [Intent; 8] = [
    Intent::Decision,
    Intent::Preference,
    Intent::Todo,
    Intent::Conclusion,
    Intent::Solution,
    Intent::Problem,
    Intent::Question,
    Intent::Context,
];

/// Tentative decisions ("I'd take", "I suggest") are not hedged again.
const TENTATIVE: f32 = 0.45;

/// Cue patterns over the lowercased sentence (inline code replaced by `code`,
/// apostrophes straightened), with their weight.
#[rustfmt::skip]
const CUES: &[(Intent, f32, &str)] = &[
    // Decisions.
    (Intent::Decision, 0.9, r"\bwe(?:'ve| have)? (?:just )?decided\b"),
    (Intent::Decision, 0.9, r"\bdecision(?:\s+\d{4}-\d{2}-\d{2})?\s*:"),
    (Intent::Decision, 0.9, r"\b(?:chang|revis|updat|revers)(?:e|es|ing|ed) (?:the|our|that|this) decision\b"),
    (Intent::Decision, 0.85, r"\bthe decision (?:is|was)\b"),
    (Intent::Decision, 0.8, r"\blet's make (?:this|it|that) a rule\b"),
    (Intent::Decision, 0.8, r"\bfrom now on\b"),
    (Intent::Decision, 0.8, r"^(?:\w+ )?(?:policy|rule|agreed)\s*:"),
    (Intent::Decision, 0.8, r"\bdecided (?:to|on|that|against)\b"),
    (Intent::Decision, 0.8, r"\b(?:let's|we(?:'ll| will)|we(?:'re| are)) go(?:ing)? with\b"),
    (Intent::Decision, 0.8, r"\bwe(?:'ll| will| are going to|'re going to) use\b"),
    (Intent::Decision, 0.8, r"\bwe(?:'re| are) (?:switching|moving|migrating|standardi[sz]ing) (?:to|off|from|on)\b"),
    (Intent::Decision, 0.8, r"\bsettled on\b"),
    (Intent::Decision, 0.7, r"\bstandardi[sz]e on\b"),
    (Intent::Decision, 0.7, r"\blet's (?:use|do|keep|switch|move|stick|adopt|make|go|drop|put|set)\b"),
    (Intent::Decision, 0.7, r"^go with\b"),
    // A change said outright: "switch the pool size to 25", "we moved the package
    // manager to pnpm", "we no longer use moment.js" (anchored: cheap for a pattern
    // every sentence is matched against).
    (Intent::Decision, 0.7, r"^(?:we (?:should |will |'ll |have |just )?)?(?:switch|switching|switched|move|moved|moving|migrate|migrated|migrating|bump|bumped|bumping|raise|raised|lower|lowered) (?:the|our)\b"),
    (Intent::Decision, 0.7, r"\bwe no longer use\b"),
    // "The heap is no longer -Xmx2g", "retries are no longer three": a value after it;
    // "the loops are no longer commit-bound" describes, it decides nothing.
    (Intent::Decision, 0.6, r"\b(?:is|are) no longer (?:the |an? |our )?(?:\S*\d|\S*[#@/_:.]\w|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|sixty|hundred)\b)"),
    (Intent::Decision, 0.7, r"\bgoing with\b"),
    (Intent::Decision, 0.65, r"\bwe(?:'ll| will) keep\b"),
    (Intent::Decision, 0.65, r"\breplaces\b"),
    (Intent::Decision, 0.6, r"\bbecomes\b"),
    (Intent::Decision, 0.6, r"^(?:agreed|approved)\b"),
    (Intent::Decision, TENTATIVE, r"\bi'd (?:take|go with|use|pick|switch|keep|choose)\b"),
    (Intent::Decision, TENTATIVE, r"\bi (?:suggest|propose|recommend)\b"),
    (Intent::Decision, TENTATIVE, r"^(?:suggest|propose|proposal|recommendation)\b"),
    // Conclusions.
    (Intent::Conclusion, 0.85, r"\bturns? out\b"),
    (Intent::Conclusion, 0.85, r"\broot cause\b"),
    (Intent::Conclusion, 0.8, r"\bthe (?:real |actual )?(?:problem|issue|cause|culprit|bug) (?:was|is)\b"),
    (Intent::Conclusion, 0.8, r"\bfound (?:it|the (?:leak|bug|cause|problem|issue|culprit))\b"),
    (Intent::Conclusion, 0.8, r"\bconclusion\s*:"),
    (Intent::Conclusion, 0.7, r"\b(?:that|which|this) means\b"),
    (Intent::Conclusion, 0.7, r"\b(?:that's|that is) why\b"),
    (Intent::Conclusion, 0.7, r"\bexplains? why\b"),
    (Intent::Conclusion, 0.7, r"\bthere it is\b"),
    (Intent::Conclusion, 0.7, r"\bcaused by\b"),
    (Intent::Conclusion, 0.7, r"\bthe reason (?:is|was)\b"),
    (Intent::Conclusion, 0.7, r"\b(?:is|are) the bottleneck\b|\bthe bottleneck is\b"),
    (Intent::Conclusion, 0.65, r"\bconfirmed\b"),
    (Intent::Conclusion, 0.6, r"\bwe(?:'re| are) [a-z]+-bound\b"),
    (Intent::Conclusion, 0.6, r"\bfor the record\b"),
    (Intent::Conclusion, 0.6, r"\blessons? learned\b"),
    // Solutions.
    (Intent::Solution, 0.8, r"\bthe (?:fix|solution|workaround) (?:is|was|here is)\b"),
    (Intent::Solution, 0.8, r"\b(?:fixed|solved|resolved) by\b"),
    (Intent::Solution, 0.8, r"^(?:\w+ )?(?:fix|solution|stopgap|workaround)(?: for [^:]{1,40})?\s*:"),
    (Intent::Solution, 0.7, r"\bworkaround\b"),
    (Intent::Solution, 0.7, r"\bto fix (?:this|it|that|the)\b"),
    (Intent::Solution, 0.7, r"\bfixes (?:it|this|that|the)\b"),
    (Intent::Solution, 0.7, r"\bthe trick is\b"),
    (Intent::Solution, 0.6, r"\bstopgap\b"),
    (Intent::Solution, 0.55, r"\bmitigat(?:e|es|ed|ion)\b"),
    (Intent::Solution, 0.55, r"\b(?:i'll|we'll|i will|we will) fix\b|\bfixing\b"),
    (Intent::Solution, 0.5, r"\bfixed(?: (?:the|it|this|that|by|all|both)\b|[.!,]|$)"),
    // Todos.
    (Intent::Todo, 0.9, r"\btodo\b|\bto-do\b"),
    (Intent::Todo, 0.75, r"\bremind me to\b"),
    (Intent::Todo, 0.75, r"\bdon't forget to\b"),
    (Intent::Todo, 0.75, r"\bfollow[- ]?ups?\b"),
    (Intent::Todo, 0.75, r"\blater,? we should\b|\bwe should later\b"),
    (Intent::Todo, 0.65, r"\bstill need to\b"),
    (Intent::Todo, 0.6, r"\bwe(?:'ll| will)? need to\b"),
    (Intent::Todo, 0.6, r"\b(?:open|file|create|raise) an? (?:issue|ticket)\b"),
    (Intent::Todo, 0.6, r"\bseparate (?:ticket|pr|issue)\b"),
    (Intent::Todo, 0.6, r"\btracked (?:as|in)\b"),
    (Intent::Todo, 0.55, r"\bnext steps?\b"),
    (Intent::Todo, 0.5, r"\bat some point\b"),
    (Intent::Todo, 0.45, r"\bneeds? to be (?:done|added|fixed|written|updated)\b"),
    // Preferences.
    (Intent::Preference, 0.8, r"\bi(?:'d| would)? prefer\b"),
    (Intent::Preference, 0.8, r"\bi(?:'d| would) rather\b"),
    (Intent::Preference, 0.8, r"\b(?:always|never) use\b"),
    (Intent::Preference, 0.8, r"\b(?:don't|do not) use\b"),
    (Intent::Preference, 0.8, r"\bplease (?:stop|don't|do not|always|never)\b"),
    (Intent::Preference, 0.8, r"\bstop using\b"),
    (Intent::Preference, 0.7, r"\bi (?:don't|do not) (?:want|like)\b"),
    (Intent::Preference, 0.6, r"\bi (?:like|hate|dislike)\b"),
    (Intent::Preference, 0.55, r"\bnever\b"),
    (Intent::Preference, 0.5, r"\balways\b"),
    (Intent::Preference, 0.5, r"^avoid\b"),
    (Intent::Preference, 0.4, r"\bi (?:still |really )?want\b"),
    // Problems: strong words (0.7) report one; generic ones (0.6 and below) often only
    // describe, so an assistant's count for little.
    (Intent::Problem, 0.7, r"\bbroken\b|\bbreaks\b"),
    (Intent::Problem, 0.7, r"\b(?:doesn't|does not|don't|do not|isn't|is not) work(?:ing)?\b|\bnot working\b"),
    (Intent::Problem, 0.7, r"\bregressions?\b"),
    (Intent::Problem, 0.7, r"\bbugs?\b"),
    (Intent::Problem, 0.7, r"\bcrash(?:es|ed|ing)?\b"),
    (Intent::Problem, 0.7, r"\bpanic(?:s|ked|king)?\b"),
    (Intent::Problem, 0.7, r"\bflak(?:y|iness)\b"),
    (Intent::Problem, 0.7, r"\bleak(?:s|ing|ed)?\b"),
    (Intent::Problem, 0.7, r"\boom ?kill(?:ed)?\b|\bout of memory\b"),
    (Intent::Problem, 0.65, r"\bdeadlocks?\b|\brace condition\b|\bcorrupt(?:ed|ion)?\b"),
    (Intent::Problem, 0.6, r"\berrors?\b|\bexceptions?\b"),
    (Intent::Problem, 0.6, r"\bfail(?:s|ed|ing|ure|ures)?\b"),
    (Intent::Problem, 0.55, r"\bvulnerab\w*\b|\bcve-\d+"),
    (Intent::Problem, 0.5, r"\btim(?:es|ed|ing) out\b"),
    (Intent::Problem, 0.5, r"\b(?:4|5)\d\ds\b"),
    (Intent::Problem, 0.5, r"\bincident\b"),
    (Intent::Problem, 0.45, r"\bwrong\b"),
    (Intent::Problem, 0.45, r"\blag\b"),
    (Intent::Problem, 0.4, r"\bslow(?:er|ly|s)?\b"),
    // Context.
    (Intent::Context, 0.4, r"\bwe(?:'re| are)? (?:use|using|run|running|on)\b"),
    (Intent::Context, 0.35, r"\b(?:lives|is stored|is defined|is configured|is located) in\b"),
    (Intent::Context, 0.35, r"^(?:the )?(?:component|repo|service|module|file|table|endpoint) is\b"),
];

static CUE_SET: LazyLock<PatternSet> =
    LazyLock::new(|| PatternSet::new(CUES.iter().map(|(_, _, pattern)| *pattern)));
static CUE_REGEXES: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    CUES.iter()
        .map(|(_, _, pattern)| Pattern::new(pattern))
        .collect()
});
static CHANGE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b(?:switch(?:ed|ing)? (?:to|from|over)|instead of|no longer|(?:chang|revis|revers)(?:e|es|ing|ed) (?:the|our|that|this) decision|replac(?:e|es|ed|ing)\b|supersed(?:e|es|ed|ing)|becomes?|moving (?:off|away from)|move (?:off|away from)|rather than|in favou?r of|revert(?:ed|ing)? to|deprecat\w*|from now on|from \S+(?: \S+){0,3} to)\b",
    )
});
static KEEP: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"\b(?:stays?|remains?|unchanged|as before|same as before|still)\b")
});
static HEDGE: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b(?:maybe|might|perhaps|probably|possibly|i think|i guess|could|would|consider|what if|how about|not sure|option|options|either)\b",
    )
});
static QUESTION_START: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"^(?:what|why|how|which|where|when|who|any idea|(?:should|shall|can|could|would|do|did|will) (?:we|i|you|they)\b|(?:does|is|are|was|were) (?:it|this|that|there|we|i|you|they)\b)",
    )
});
/// A request of the user that asks nothing ("can you add that to the job?").
static WH_WORD: LazyLock<Pattern> =
    LazyLock::new(|| Pattern::new(r"\b(?:what|why|how|which|where|when|who|whether|if)\b"));
/// A sentence opening with an instruction: its weak problem words ("before lag builds
/// up") are a reason, not a report.
static IMPERATIVE_START: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"^(?:please )?(?:do|add|set|write|run|make|use|keep|put|move|remove|drop|create|update|try|check|go|let's|deploy|raise|bump|open)\b",
    )
});
/// Phrases that hold a problem word but name no problem.
static NOT_PROBLEM: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(r"\bfail[- ]fast\b|\berror handling\b|\bfailed[- ]log-?ins?\b|\bfailed attempts\b")
});
static REQUEST: LazyLock<Pattern> =
    LazyLock::new(|| Pattern::new(r"\b(?:can|could|would|will) you\b|\bplease\b"));
static ASSISTANT_ASK: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"\b(?:do you want|ok to|okay to|shall i|should i|want me to|is that ok|sound good|does that work)\b",
    )
});
static INLINE_CODE: LazyLock<Pattern> = LazyLock::new(|| Pattern::new(r"`[^`]*`"));

/// The lowercased sentence cues are matched on: inline code becomes `code` (an
/// identifier named `errors` is not a problem), curly apostrophes straight, emphasis gone.
pub(crate) fn cue_text(sentence: &str) -> String {
    let without_code = if sentence.contains('`') {
        INLINE_CODE.replace_all(sentence, "code")
    } else {
        std::borrow::Cow::Borrowed(sentence)
    };
    let mut lower = String::with_capacity(without_code.len());
    for ch in without_code.chars() {
        match ch {
            '*' => {}
            _ if ch.is_ascii() => lower.push(ch.to_ascii_lowercase()),
            '’' | '‘' => lower.push('\''),
            _ => lower.extend(ch.to_lowercase()),
        }
    }
    let trimmed = lower.trim_start_matches(|c: char| !c.is_alphanumeric());
    trimmed.to_owned()
}

/// The change and keep cues of a cue text (see [`Reading`]).
pub(crate) fn change_and_keep(cue_text: &str) -> (bool, bool) {
    (CHANGE.is_match(cue_text), KEEP.is_match(cue_text))
}

/// Reads one sentence (its [`cue_text`]) said by `speaker`; `num_terms` is the number of
/// its salient terms (a question needs some substance).
pub(crate) fn read(cue_text: &str, raw: &str, speaker: Speaker, num_terms: usize) -> Reading {
    let (is_change, is_keep) = change_and_keep(cue_text);
    let cue_opt = match question(cue_text, raw, speaker, num_terms) {
        Some(confidence) => Some(Cue {
            intent: Intent::Question,
            confidence,
        }),
        None if is_question_shaped(raw) => None,
        None => strongest_cue(cue_text, speaker),
    };
    Reading {
        cue_opt,
        is_change,
        is_keep,
    }
}

/// Whether a sentence ends in a question mark.
pub(crate) fn is_question_shaped(raw: &str) -> bool {
    raw.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ')' | '"' | '\'' | '*' | '`'))
        .ends_with('?')
}

/// Question confidence: a sentence ending in `?` (a request to do something counts less;
/// an assistant asking for permission not at all), or a user's sentence opening like a
/// question.
fn question(cue_text: &str, raw: &str, speaker: Speaker, num_terms: usize) -> Option<f32> {
    let ends_with_mark = is_question_shaped(raw);
    let opens_like_one = QUESTION_START.is_match(cue_text);
    let num_words = cue_text.split_whitespace().count();
    let confidence = match (speaker, ends_with_mark) {
        (Speaker::User, true) if REQUEST.is_match(cue_text) => {
            if !WH_WORD.is_match(cue_text) {
                return None;
            }
            0.45
        }
        (Speaker::User, true) => 0.75,
        (Speaker::User, false) if opens_like_one && !cue_text.contains("let me") => 0.5,
        (Speaker::Assistant, true) if ASSISTANT_ASK.is_match(cue_text) => return None,
        (Speaker::Assistant, true) if num_terms >= 3 && num_words <= 30 => 0.5,
        (Speaker::Note, true) => 0.6,
        _ => return None,
    };
    (num_terms >= 1).then_some(confidence)
}

/// The strongest cue that is not negated, scaled by hedges and speaker.
fn strongest_cue(cue_text: &str, speaker: Speaker) -> Option<Cue> {
    let mut best: Option<(f32, usize, Intent)> = None;
    for index in CUE_SET.matches(cue_text) {
        let (intent, weight, _) = CUES[index];
        let Some(found) = CUE_REGEXES[index].find(cue_text) else {
            continue;
        };
        if intent != Intent::Preference && is_negated(&cue_text[..found.start()]) {
            continue;
        }
        if intent == Intent::Problem && weight < 0.5 && IMPERATIVE_START.is_match(cue_text) {
            continue;
        }
        if intent == Intent::Problem
            && NOT_PROBLEM
                .find_iter(cue_text)
                .any(|phrase| phrase.start() <= found.start() && found.end() <= phrase.end())
        {
            continue;
        }
        let Some(confidence) = scaled(intent, weight, cue_text, speaker) else {
            continue;
        };
        let rank = PRIORITY
            .iter()
            .position(|candidate| *candidate == intent)
            .unwrap_or(PRIORITY.len());
        let better = best.is_none_or(|(top, top_rank, _)| {
            confidence > top + f32::EPSILON
                || ((confidence - top).abs() <= f32::EPSILON && rank < top_rank)
        });
        if better {
            best = Some((confidence, rank, intent));
        }
    }
    best.map(|(confidence, _, intent)| Cue { intent, confidence })
}

fn scaled(intent: Intent, weight: f32, cue_text: &str, speaker: Speaker) -> Option<f32> {
    let hedged = matches!(
        intent,
        Intent::Decision | Intent::Solution | Intent::Conclusion
    ) && weight > TENTATIVE
        && HEDGE.is_match(cue_text);
    let hedge_factor = if hedged { 0.6 } else { 1.0 };
    let speaker_factor = match (intent, speaker) {
        (Intent::Preference, Speaker::Assistant) => return None,
        (Intent::Decision | Intent::Todo, Speaker::Assistant) => 0.8,
        (Intent::Problem, Speaker::Assistant) if weight <= 0.6 => 0.6,
        (Intent::Problem, Speaker::Assistant) => 0.85,
        (Intent::Problem | Intent::Preference, Speaker::Note) => 0.9,
        _ => 1.0,
    };
    let confidence = (weight * hedge_factor * speaker_factor).min(0.95);
    // An assistant's generic problem words ("error", "lag") describe, they do not report.
    let floor = if intent == Intent::Problem && speaker == Speaker::Assistant {
        0.4
    } else {
        crate::model::MIN_CONFIDENCE
    };
    (confidence >= floor).then_some(confidence)
}

/// Whether one of the three words before a cue negates it ("not", "never", "no",
/// "zero", any "-n't").
pub(crate) fn is_negated(before: &str) -> bool {
    before
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty())
        .rev()
        .take(3)
        .any(|word| {
            word.ends_with("n't")
                || matches!(
                    word,
                    "not"
                        | "no"
                        | "never"
                        | "without"
                        | "zero"
                        | "0"
                        | "none"
                        | "nothing"
                        | "cannot"
                )
        })
}

/// The markers after which a thing is the old one (see [`is_replaced`]).
const REPLACEMENT_MARKERS: [&str; 19] = [
    "instead of",
    "switch from",
    "switched from",
    "switching from",
    "migrate from",
    "migrated from",
    "migrating from",
    "moving off",
    "move off",
    "moved off",
    "away from",
    "replace",
    "replacing",
    "replaced",
    "drop",
    "dropping",
    "remove",
    "removing",
    "rather than",
];

/// "instead of X", "switch from X", "replace X", "rather than X": X is the old thing.
pub(crate) fn is_replaced(before: &str) -> bool {
    let before = before.trim_end_matches(|c: char| !c.is_alphanumeric());
    REPLACEMENT_MARKERS
        .iter()
        .any(|marker| before.ends_with(marker))
}

/// Whether `word` ends a marker of [`is_replaced`] — only then can the words before a
/// thing be one — counting the one-word verbs ("replace", "drop", "remove") only when
/// `with_verbs`: "removed 3 flaky tests" counts tests, it replaces no 3.
pub(crate) fn ends_replacement_marker(word: &str, with_verbs: bool) -> bool {
    REPLACEMENT_MARKERS
        .iter()
        .any(|marker| match marker.rsplit_once(' ') {
            Some((_, last)) => last == word,
            None => with_verbs && *marker == word,
        })
}

static LEAD_IN: LazyLock<Pattern> = LazyLock::new(|| {
    Pattern::new(
        r"(?i)^.{0,48}?\b(?:we(?:['’]ve| have)? (?:just )?decided|decision(?:\s+\d{4}-\d{2}-\d{2})?|(?:chang|revis|updat)(?:e|es|ing|ed) (?:the|our|that|this) decision|policy|rule|agreed|the decision is)\s*:\s*",
    )
});

/// Where the list after a decision lead-in ("We decided:", "So we're changing the
/// decision:") starts, as a byte offset into `raw`.
pub(crate) fn decision_list_start(raw: &str) -> Option<usize> {
    LEAD_IN
        .find(raw)
        .map(|found| found.end())
        .filter(|end| *end < raw.len())
}

/// The intent bullets inherit from their lead-in ("Summary of today's decisions:",
/// "Next steps:", "## Decisions"), with its confidence.
pub(crate) fn lead_in_intent(cue_text: &str, speaker: Speaker) -> Option<Cue> {
    static LEAD_INTENTS: LazyLock<Vec<(Intent, Pattern)>> = LazyLock::new(|| {
        [
            (
                Intent::Decision,
                r"\bdecisions?\b|\bdecided\b|\bagreed\b|\bpolicy\b|\brules?\b",
            ),
            (
                Intent::Todo,
                r"\btodos?\b|\bnext steps?\b|\bfollow[- ]?ups?\b|\bremaining\b|\bto do\b",
            ),
            (
                Intent::Conclusion,
                r"\bfindings?\b|\broot causes?\b|\bconclusions?\b|\blearned\b",
            ),
            (Intent::Problem, r"\bproblems?\b|\bissues?\b|\bbugs?\b"),
            (
                Intent::Solution,
                r"\bfix(?:es)?\b|\bsolutions?\b|\bworkarounds?\b",
            ),
        ]
        .into_iter()
        .map(|(intent, pattern)| (intent, Pattern::new(pattern)))
        .collect()
    });
    let (intent, _) = LEAD_INTENTS
        .iter()
        .find(|(_, pattern)| pattern.is_match(cue_text))?;
    let base = match intent {
        Intent::Decision => 0.75,
        Intent::Problem => 0.7,
        Intent::Todo => 0.65,
        _ => 0.6,
    };
    scaled(*intent, base, "", speaker).map(|confidence| Cue {
        intent: *intent,
        confidence,
    })
}

#[cfg(test)]
#[path = "intent_tests.rs"]
mod tests;
