//! Answer detection: a statement answers an open question when it holds enough of the
//! question's salient terms (two or more, and half of them), or when it is the reply —
//! nothing was said in the session since the question (no idea after it), within
//! [`ADJACENT_MS`], and it shares a term with it (or the question is too vague to share
//! any: "What are the tradeoffs?"). A problem is answered only by a solution or
//! conclusion of the event sharing two of its terms and half of its first six (three
//! from another session). With an embedding model ([`EmbedFn`]), a statement sharing a
//! term whose cosine with the question reaches 0.7 answers it too. Best first, at most
//! three per event.

use std::sync::Arc;

use foldhash::HashSet;

use memory_types::Event;

use crate::change_set::AnsweredQuestion;
use crate::heuristic::candidates::CandidateList;
use crate::heuristic::facts::{FactsCache, IdeaFacts, salient_terms};
use crate::heuristic::settings::quantities;
use crate::heuristic::text::{MAX_IDEA_CHARS, truncate_at_word};
use crate::model::{Idea, Intent};

/// A statement this soon after the session's latest open question may answer it with
/// little overlap.
pub(crate) const ADJACENT_MS: u64 = 15 * 60 * 1_000;

/// Whether something at `earlier_ms` is within [`ADJACENT_MS`] before `now_ms`: the
/// window in which a turn replies to, or points back at, what was just said.
pub(crate) fn is_adjacent(earlier_ms: u64, now_ms: u64) -> bool {
    earlier_ms <= now_ms && now_ms - earlier_ms <= ADJACENT_MS
}

/// Most questions one event answers.
pub(crate) const MAX_ANSWERED_PER_EVENT: usize = 3;

/// Cosine above which an embedding model's judgement counts as an answer (with at least
/// one shared term).
const SIMILARITY_ACCEPT: f32 = 0.7;

/// Embeds texts: one vector per text, in order.
pub type EmbedFn = Arc<dyn Fn(&[&str]) -> Vec<Vec<f32>> + Send + Sync>;

/// An embedding model with its vectors of stored ideas cached.
pub(crate) struct Similarity {
    embed: EmbedFn,
    by_idea: std::collections::HashMap<String, Arc<Vec<f32>>>,
}

impl Similarity {
    pub(crate) fn new(embed: EmbedFn) -> Self {
        Similarity {
            embed,
            by_idea: std::collections::HashMap::new(),
        }
    }

    /// Cosine between two texts, neither cached (0 when the model answers badly).
    pub(crate) fn cosine_of(&self, a: &str, b: &str) -> f32 {
        let vectors = (self.embed)(&[a, b]);
        match vectors.as_slice() {
            [first, second] => cosine(first, second),
            _ => 0.0,
        }
    }

    /// Cosine between `text` and each idea (0 when the model answers badly).
    fn cosines(&mut self, text: &str, ideas: &[&Idea]) -> Vec<f32> {
        let missing: Vec<&Idea> = ideas
            .iter()
            .copied()
            .filter(|idea| !self.by_idea.contains_key(&idea.idea_id))
            .collect();
        let mut inputs: Vec<&str> = vec![text];
        inputs.extend(missing.iter().map(|idea| idea.content.as_str()));
        let vectors = (self.embed)(&inputs);
        if vectors.len() != inputs.len() {
            return vec![0.0; ideas.len()];
        }
        if self.by_idea.len() > 50_000 {
            self.by_idea.clear();
        }
        let mut vectors = vectors.into_iter();
        let text_vector = vectors.next().unwrap_or_default();
        for (idea, vector) in missing.iter().zip(vectors) {
            self.by_idea.insert(idea.idea_id.clone(), Arc::new(vector));
        }
        ideas
            .iter()
            .map(|idea| {
                self.by_idea
                    .get(&idea.idea_id)
                    .map_or(0.0, |vector| cosine(&text_vector, vector))
            })
            .collect()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm_a: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let norm_b: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a * norm_b)
    }
}

/// A sentence of the event that is not a question.
pub(crate) struct Statement<'a> {
    /// Its idea-ready content.
    pub content: &'a str,
    /// Its salient terms.
    pub terms: &'a [String],
}

/// What answer detection needs to know of the event.
pub(crate) struct AnswerInput<'a> {
    /// The event.
    pub event: &'a Event,
    /// Its statements.
    pub statements: Vec<Statement<'a>>,
    /// Whether it also asks something.
    pub asks: bool,
    /// Its first solution or conclusion idea, if any.
    pub solution_opt: Option<&'a str>,
    /// The source event of the session's latest idea before this event.
    pub latest_idea_event_opt: Option<&'a str>,
}

/// The open questions and problems the event answers, best first. Only questions that
/// share a term with the event (or with its solution), and the session's latest, can
/// qualify, and term hashes find them without comparing the rest's strings.
pub(crate) fn answers(
    input: &AnswerInput<'_>,
    open: &CandidateList,
    cache: &mut FactsCache,
    similarity_opt: Option<&mut Similarity>,
) -> Vec<AnsweredQuestion> {
    let event = input.event;
    if input.statements.is_empty() || open.ideas.is_empty() {
        return Vec::new();
    }
    let said: HashSet<&str> = input
        .statements
        .iter()
        .flat_map(|statement| statement.terms.iter().map(String::as_str))
        .collect();
    let num_words: usize = input
        .statements
        .iter()
        .map(|statement| statement.content.split_whitespace().count())
        .sum();
    let solution_terms: Vec<String> = input.solution_opt.map(salient_terms).unwrap_or_default();
    let index = open.facts(cache);
    let matched_counts = index.count_matches(said.iter().copied());
    let solved_counts = if solution_terms.is_empty() {
        vec![0; open.ideas.len()]
    } else {
        index.count_matches(solution_terms.iter().map(String::as_str))
    };
    let mut accepted: Vec<(f32, &Idea, &IdeaFacts)> = Vec::new();
    let mut maybe: Vec<usize> = Vec::new();
    for (position, idea) in open.ideas.iter().enumerate() {
        let matched = matched_counts[position] as usize;
        let solved = solved_counts[position] as usize;
        let is_latest = input.latest_idea_event_opt == Some(idea.source.event_id.as_str());
        if (matched == 0 && solved == 0 && !is_latest)
            || idea.source.event_id == event.event_id
            || idea.valid_from_ms > event.timestamp_ms
        {
            continue;
        }
        let facts = &index.facts[position];
        let num_terms = facts.terms.len();
        let same_session = idea.source.session_id == event.session_id;
        if idea.intent == Intent::Problem {
            let considered = num_terms.min(6);
            if solved >= 2 && solved * 2 >= considered && (same_session || solved >= 3) {
                accepted.push((solved as f32 / considered as f32, idea, facts));
            }
            continue;
        }
        let strict = (matched >= 2 && matched * 2 >= num_terms)
            || (num_terms == 1 && matched == 1 && same_session);
        // Nothing said in the session since the question: this is its reply.
        let adjacent = same_session
            && idea.intent == Intent::Question
            && is_latest
            && is_adjacent(idea.valid_from_ms, event.timestamp_ms)
            && !input.asks
            && num_words >= 6
            && (matched >= 1 || num_terms <= 2);
        if strict || adjacent {
            let lexical = if num_terms == 0 {
                0.5
            } else {
                matched as f32 / num_terms as f32
            };
            accepted.push((lexical.max(if adjacent { 0.5 } else { 0.0 }), idea, facts));
        } else if matched >= 1 {
            maybe.push(position);
        }
    }
    if let Some(similarity) = similarity_opt
        && !maybe.is_empty()
    {
        maybe.truncate(20);
        let text: Vec<&str> = input.statements.iter().map(|s| s.content).collect();
        let ideas: Vec<&Idea> = maybe
            .iter()
            .map(|&position| &open.ideas[position])
            .collect();
        let cosines = similarity.cosines(&text.join(" "), &ideas);
        for (position, cos) in maybe.into_iter().zip(cosines) {
            if cos >= SIMILARITY_ACCEPT {
                accepted.push((cos, &open.ideas[position], &index.facts[position]));
            }
        }
    }
    accepted.sort_by(|(a_score, a, _), (b_score, b, _)| {
        b_score
            .total_cmp(a_score)
            .then_with(|| b.valid_from_ms.cmp(&a.valid_from_ms))
            .then_with(|| a.idea_id.cmp(&b.idea_id))
    });
    accepted
        .into_iter()
        .take(MAX_ANSWERED_PER_EVENT)
        .map(|(_, idea, facts)| {
            let summary = match (idea.intent, input.solution_opt) {
                (Intent::Problem, Some(solution)) => solution.to_owned(),
                _ => best_statement(&input.statements, facts, &idea.content).to_owned(),
            };
            AnsweredQuestion {
                question_idea_id: idea.idea_id.clone(),
                answered_at_event_id: event.event_id.clone(),
                answer_summary: truncate_at_word(&summary, MAX_IDEA_CHARS),
            }
        })
        .collect()
}

/// The statement that best states the answer: one of the shape the question asks for —
/// a quantity sharing a term with a "how long / how many / how much …" question, a yes
/// or no for a yes/no question — before any other, then the most of the question's
/// terms, the first on a tie.
fn best_statement<'a>(statements: &[Statement<'a>], facts: &IdeaFacts, question: &str) -> &'a str {
    let wanted = asked_shape(question);
    let mut best: Option<((bool, usize), &'a str)> = None;
    for statement in statements {
        let matched = facts
            .terms
            .iter()
            .filter(|term| statement.terms.contains(term))
            .count();
        let shaped = match wanted {
            Some(AnswerShape::Quantity) => {
                matched >= 1 && !quantities(statement.content).is_empty()
            }
            Some(AnswerShape::YesNo) => starts_yes_or_no(statement.content),
            None => false,
        };
        let score = (shaped, matched);
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, statement.content));
        }
    }
    best.map_or("", |(_, content)| content)
}

/// The shape of answer a question asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AnswerShape {
    Quantity,
    YesNo,
}

fn asked_shape(question: &str) -> Option<AnswerShape> {
    let lower = question.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let asks_quantity = words.windows(2).any(|pair| {
        pair[0] == "how"
            && matches!(
                pair[1],
                "long" | "many" | "much" | "often" | "big" | "large" | "small" | "old" | "far"
            )
    });
    if asks_quantity {
        return Some(AnswerShape::Quantity);
    }
    // A yes/no question starts with an auxiliary, possibly after a short lead-in
    // ("Before I start: should we …?").
    let clause = lower.rsplit(':').next().unwrap_or(&lower);
    let first = clause
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .unwrap_or("");
    matches!(
        first,
        "do" | "does"
            | "did"
            | "is"
            | "are"
            | "was"
            | "were"
            | "can"
            | "could"
            | "should"
            | "will"
            | "would"
            | "has"
            | "have"
            | "may"
            | "must"
    )
    .then_some(AnswerShape::YesNo)
}

fn starts_yes_or_no(statement: &str) -> bool {
    let first = statement
        .split(|c: char| !c.is_alphanumeric())
        .find(|word| !word.is_empty())
        .unwrap_or("")
        .to_lowercase();
    matches!(
        first.as_str(),
        "yes" | "no" | "yep" | "nope" | "yeah" | "correct"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_statement_of_the_asked_shape() {
        let question = "How long should access tokens live?";
        let facts = IdeaFacts::of(question);
        let terms = |text: &str| {
            let mut terms = salient_terms(text);
            terms.retain(|term| facts.terms.contains(term));
            terms
        };
        let denylist = "We keep a denylist of revoked access tokens in Redis.";
        let answer = "I'd let them live 15 minutes.";
        let (denylist_terms, answer_terms) = (terms(denylist), terms(answer));
        assert!(denylist_terms.len() > answer_terms.len() && !answer_terms.is_empty());
        let statements = [
            Statement {
                content: denylist,
                terms: &denylist_terms,
            },
            Statement {
                content: answer,
                terms: &answer_terms,
            },
        ];
        assert_eq!(best_statement(&statements, &facts, question), answer);
        let question = "Does the JWKS cache break if pods have different keys?";
        let facts = IdeaFacts::of(question);
        let cache_line = "The JWKS cache of each pod refreshes every 10 minutes.";
        let reply = "No, every pod mounts the same secret.";
        let (cache_terms, reply_terms) = (salient_terms(cache_line), salient_terms(reply));
        let yes_no = [
            Statement {
                content: cache_line,
                terms: &cache_terms,
            },
            Statement {
                content: reply,
                terms: &reply_terms,
            },
        ];
        assert_eq!(best_statement(&yes_no, &facts, question), reply);
        assert_eq!(asked_shape("What are the tradeoffs?"), None);
        assert_eq!(
            asked_shape("Before I start: should we rotate keys?"),
            Some(AnswerShape::YesNo)
        );
    }
}
