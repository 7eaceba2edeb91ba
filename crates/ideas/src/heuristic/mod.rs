//! [`HeuristicEngine`]: the offline, deterministic indexing engine — cue phrases for
//! intents, the shipped lexicon and code-shaped names for entities, term overlap for
//! answers and completed todos, changed setting values for supersession, transitions
//! and vocabulary drift for topic spans. No model, no I/O.
//!
//! **Batching independence.** The engine walks a batch in log order, one event at a
//! time. Each event's changes are computed from that event and the graph as it stands
//! (the stored graph under an [`Overlay`] holding the batch's earlier events), then
//! validated against a one-event batch and applied to the overlay, so the next event
//! sees them. The session's earlier turns come from the batch or, before its first
//! event, from the session's context the agent read from the log
//! ([`crate::SessionEvents::context`]). Nothing depends on later events or on where a
//! batch starts or ends: one batch or the same events in several give the same graph. The returned change set is
//! the events' change sets in order, topic updates folded into one per span.
//!
//! Per event it reads at most [`CANDIDATE_LIMIT`] open questions, open todos and
//! decisions in force, each only when the event could relate to them; facts read off
//! stored ideas (terms, settings, entities) are cached across batches.
//!
//! The files: `text` (sentences, bullets, clauses, cleaning), `intent` (cues), `skip`
//! (greetings, acknowledgements, tool noise), `mentions` and `lexicon` (entities), `settings`
//! (key = value), `facts` (what is compared), `draft` (sentences to ideas), `relations`
//! (supersedes, contradicts, builds on, todo completion, tool signals), `answers`,
//! `topics` (spans), `pattern` (compiled-once regular expressions).
//!
//! It names an idea in `activated_ideas` once per event that restates it or builds on
//! it (each entry counts, so batching does not change the count). It does not propose
//! `entity_links` (mentions go by name and `entities::resolve` links them).

mod answers;
mod candidates;
mod draft;
mod facts;
mod intent;
mod lexicon;
mod mentions;
mod pattern;
mod relations;
mod settings;
mod skip;
mod text;
mod topics;
mod values;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use memory_types::{Event, EventKind};

pub use answers::EmbedFn;
pub use draft::MAX_IDEAS_PER_EVENT;
pub use values::{SettingValues, ValueChange, explicit_change, stated_values, value_change};

use crate::apply::apply_changes;
use crate::change_set::{AnsweredQuestion, ChangeSet, NewIdea, RelationOut, SkipEvent};
use crate::entities::Lexicon;
use crate::extractor::{ExtractBatch, ExtractError, GraphError, GraphView, IdeaExtractor};
use crate::model::{Idea, Intent, RelationType, idea_id};
use crate::overlay::Overlay;
use crate::validate::validate_event;

use answers::{AnswerInput, MAX_ANSWERED_PER_EVENT, Similarity, Statement, answers};
use candidates::{CandidateList, Candidates, ListKind};
use draft::{Sentence, drafts, read_sentences};
use facts::{FactsCache, salient_words};
use intent::Speaker;
use relations::{
    NewDecision, commit_evidence, commit_message, completions, decision_relations, done_evidence,
    elliptical_referents, test_resolution, tests_passed,
};
use skip::SkipReason;
use topics::{SpanChange, SpanInput};

/// Whether an event is a turn of the conversation (what a later turn can point back at).
fn is_prose(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::UserMessage | EventKind::AssistantMessage | EventKind::Note
    )
}

/// Most open questions, open todos and decisions in force considered per event.
pub const CANDIDATE_LIMIT: usize = 200;

/// Open questions of the session a passing test run is checked against.
const SESSION_PROBLEM_LIMIT: usize = 50;

/// The heuristic indexing engine (engine name `heuristic`).
///
/// ```
/// use memory_ideas::{HeuristicEngine, IdeaExtractor};
/// let engine = HeuristicEngine::new();
/// assert_eq!(engine.engine(), "heuristic");
/// ```
pub struct HeuristicEngine {
    facts: FactsCache,
    similarity_opt: Option<Similarity>,
    candidates: Candidates,
}

impl HeuristicEngine {
    /// The engine with the shipped lexicon and term overlap only.
    #[must_use]
    pub fn new() -> Self {
        HeuristicEngine {
            facts: FactsCache::default(),
            similarity_opt: None,
            candidates: Candidates::default(),
        }
    }

    /// Adds an embedding model to answer detection — a statement that shares a term
    /// with an open question and whose cosine with it is at least 0.7 answers it even
    /// below the overlap threshold — and to topic drift (see `topics`). The model must
    /// be deterministic for the graph to be: embed each text alone, so a vector never
    /// depends on what else was in its batch.
    #[must_use]
    pub fn with_similarity(mut self, embed: EmbedFn) -> Self {
        self.similarity_opt = Some(Similarity::new(embed));
        self
    }

    /// The changes one event implies, given the graph before it.
    fn event_changes(
        &mut self,
        event: &Event,
        previous: &[&Event],
        view: &dyn GraphView,
    ) -> Result<ChangeSet, GraphError> {
        match event.kind {
            EventKind::UserMessage => self.prose_changes(event, Speaker::User, previous, view),
            EventKind::AssistantMessage => {
                self.prose_changes(event, Speaker::Assistant, previous, view)
            }
            EventKind::Note => self.prose_changes(event, Speaker::Note, previous, view),
            EventKind::ToolCall | EventKind::ToolResult => self.tool_changes(event, view),
            EventKind::SessionEnd => Ok(ChangeSet {
                topic_updates: topics::extend(event, view)?.into_iter().collect(),
                ..ChangeSet::default()
            }),
            _ => Ok(ChangeSet::default()),
        }
    }

    /// The words of what the session said just before `event` (within
    /// [`answers::ADJACENT_MS`]): its latest ideas and its last two turns (`previous`,
    /// oldest first) — what an elliptical change points back at.
    fn just_said(
        &mut self,
        event: &Event,
        previous: &[&Event],
        view: &dyn GraphView,
    ) -> Result<Vec<String>, GraphError> {
        let mut words: Vec<String> = Vec::new();
        for idea in view.recent_ideas(&event.project_id, Some(&event.session_id), None, 3)? {
            if idea.source.event_id != event.event_id
                && answers::is_adjacent(idea.valid_from_ms, event.timestamp_ms)
            {
                words.extend(self.facts.get(&idea).words.iter().cloned());
            }
        }
        for turn in previous.iter().rev().take(2) {
            if answers::is_adjacent(turn.timestamp_ms, event.timestamp_ms) {
                words.extend(salient_words(&turn.text));
            }
        }
        Ok(words)
    }

    /// `previous`: the session's earlier prose turns, oldest first.
    fn prose_changes(
        &mut self,
        event: &Event,
        speaker: Speaker,
        previous: &[&Event],
        view: &dyn GraphView,
    ) -> Result<ChangeSet, GraphError> {
        let sentences = read_sentences(&event.text, speaker);
        let skip_opt = skip::prose_skip(&event.text).or_else(|| {
            sentences
                .iter()
                .all(|sentence| sentence.content.is_empty())
                .then_some(SkipReason::DebugOutput)
        });
        if let Some(reason) = skip_opt {
            return skipped(event, reason, view);
        }
        let project_id = &event.project_id;
        let mut new_drafts = drafts(&sentences, speaker);
        let statements: Vec<&Sentence> = sentences
            .iter()
            .filter(|sentence| {
                !sentence.is_question && !sentence.is_header && !sentence.terms.is_empty()
            })
            .collect();
        let evidence = done_evidence(statements.iter().map(|sentence| {
            (
                sentence.content.as_str(),
                sentence.cue_text.as_str(),
                sentence.terms.as_slice(),
            )
        }));
        let has_intent = |intents: &[Intent]| {
            new_drafts
                .iter()
                .any(|draft| intents.contains(&draft.intent))
        };
        let no_ideas = Arc::new(CandidateList::default());
        let current_list = if has_intent(&[Intent::Decision, Intent::Preference]) {
            self.candidates.get(ListKind::Decisions, project_id, view)?
        } else {
            Arc::clone(&no_ideas)
        };
        let questions_list = if !statements.is_empty() || has_intent(&[Intent::Question]) {
            self.candidates.get(ListKind::Questions, project_id, view)?
        } else {
            Arc::clone(&no_ideas)
        };
        let todos_list = if !evidence.is_empty() || has_intent(&[Intent::Todo]) {
            self.candidates.get(ListKind::Todos, project_id, view)?
        } else {
            no_ideas
        };
        let current = not_later(&current_list.ideas, event);
        let open_questions = not_later(&questions_list.ideas, event);
        let open_todos = not_later(&todos_list.ideas, event);
        // A restatement of an idea already there adds nothing but brings that idea back
        // to mind (an activation); so does building on it.
        let facts_cache = &mut self.facts;
        let mut activated: Vec<String> = Vec::new();
        new_drafts.retain(|draft| {
            let existing = match draft.intent {
                Intent::Decision | Intent::Preference => &current_list,
                Intent::Question | Intent::Problem => &questions_list,
                Intent::Todo => &todos_list,
                _ => return true,
            };
            match existing.restated(&draft.content, event.timestamp_ms, facts_cache) {
                Some(idea) => {
                    if !activated.contains(&idea.idea_id) {
                        activated.push(idea.idea_id.clone());
                    }
                    false
                }
                None => true,
            }
        });

        let mut changes = ChangeSet::default();
        for draft in &new_drafts {
            let id = idea_id(project_id, &event.event_id, &draft.content);
            let (mut intent, mut confidence) = (draft.intent, draft.confidence);
            if matches!(draft.intent, Intent::Decision | Intent::Preference) {
                let facts = self.facts.of_draft(&draft.content);
                let new = NewDecision {
                    content: &draft.content,
                    facts: &facts,
                    is_change: draft.is_change,
                    is_keep: draft.is_keep,
                    replaced: &draft.replaced,
                };
                let mut relations = decision_relations(&new, &current, &mut self.facts);
                if draft.is_elliptical
                    && !relations
                        .iter()
                        .any(|(kind, _)| *kind == RelationType::Supersedes)
                {
                    let context = self.just_said(event, previous, view)?;
                    for old_id in
                        elliptical_referents(&draft.content, &context, &current, &mut self.facts)
                    {
                        relations.retain(|(_, to)| *to != old_id);
                        relations.push((RelationType::Supersedes, old_id));
                    }
                }
                if let Some(original) = draft.unless_it_replaces
                    && !relations
                        .iter()
                        .any(|(kind, _)| *kind == RelationType::Supersedes)
                {
                    // It says what it replaced, but nothing decided had that value.
                    // Back to what it was; a context idea only as the event's one idea
                    // (context ideas are sparing, see `draft`).
                    match original {
                        Some(cue) if cue.intent != Intent::Context || new_drafts.len() == 1 => {
                            (intent, confidence) = (cue.intent, cue.confidence);
                            relations.clear();
                        }
                        _ => continue,
                    }
                }
                for (relation_type, to_idea_id) in relations {
                    if relation_type == RelationType::BuildsOn && !activated.contains(&to_idea_id) {
                        activated.push(to_idea_id.clone());
                    }
                    changes.relations.push(RelationOut {
                        from_event_id: event.event_id.clone(),
                        from_idea_id: Some(id.clone()),
                        to_idea_id,
                        relation_type,
                    });
                }
            }
            changes.ideas.push(NewIdea {
                source_event_id: event.event_id.clone(),
                content: draft.content.clone(),
                intent,
                confidence,
                importance: None,
                entities: draft
                    .mentions
                    .iter()
                    .map(|mention| mention.to_entity_mention())
                    .collect(),
                related_to: Vec::new(),
            });
        }

        changes.activated_ideas = activated;

        // The session's latest idea tells whether this is the reply to a question; read
        // only when a question of the session is recent enough to be replied to.
        let may_reply = open_questions.iter().any(|idea| {
            idea.source.session_id == event.session_id
                && answers::is_adjacent(idea.valid_from_ms, event.timestamp_ms)
        });
        let latest_idea_event = if statements.is_empty() || !may_reply {
            None
        } else {
            view.recent_ideas(project_id, Some(&event.session_id), None, 1)?
                .into_iter()
                .next()
                .map(|idea| idea.source.event_id)
        };
        let answer_input = AnswerInput {
            event,
            statements: statements
                .iter()
                .map(|sentence| Statement {
                    content: &sentence.content,
                    terms: &sentence.terms,
                })
                .collect(),
            asks: sentences.iter().any(|sentence| sentence.is_question),
            solution_opt: new_drafts
                .iter()
                .find(|draft| matches!(draft.intent, Intent::Solution | Intent::Conclusion))
                .map(|draft| draft.content.as_str()),
            latest_idea_event_opt: latest_idea_event.as_deref(),
        };
        changes.answered_questions = answers(
            &answer_input,
            &questions_list,
            &mut self.facts,
            self.similarity_opt.as_mut(),
        );
        changes.completed_todos = completions(event, &evidence, &open_todos, &mut self.facts);
        // A problem said to be fixed ("the flaky refresh spec is fixed") closes as a todo
        // does: a done-verb and enough of its terms.
        if !evidence.is_empty() {
            // Only problems sharing two terms with the evidence can close (the rule needs
            // two with one item): found by term hashes, not by scanning every problem.
            let shared = questions_list.facts(&mut self.facts).count_matches(
                evidence
                    .iter()
                    .flat_map(|item| item.terms.iter().map(String::as_str)),
            );
            let problems: Vec<Idea> = questions_list
                .ideas
                .iter()
                .zip(shared)
                .filter(|(idea, shared)| {
                    *shared >= 2
                        && idea.intent == Intent::Problem
                        && idea.valid_from_ms <= event.timestamp_ms
                })
                .map(|(idea, _)| idea.clone())
                .collect();
            for fixed in completions(event, &evidence, &problems, &mut self.facts) {
                let known = changes
                    .answered_questions
                    .iter()
                    .any(|answered| answered.question_idea_id == fixed.todo_idea_id);
                if !known && changes.answered_questions.len() < MAX_ANSWERED_PER_EVENT {
                    changes.answered_questions.push(AnsweredQuestion {
                        question_idea_id: fixed.todo_idea_id,
                        answered_at_event_id: fixed.completed_at_event_id,
                        answer_summary: fixed.completion_summary,
                    });
                }
            }
        }

        let mut terms: Vec<String> = Vec::new();
        for sentence in &sentences {
            for term in &sentence.terms {
                if !terms.contains(term) {
                    terms.push(term.clone());
                }
            }
        }
        let prose = sentences
            .iter()
            .map(|sentence| sentence.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let first = sentences
            .iter()
            .find(|sentence| !sentence.content.is_empty());
        let span_input = SpanInput {
            event,
            text: &prose,
            is_user: speaker == Speaker::User,
            first_cue_text: first.map_or("", |sentence| sentence.cue_text.as_str()),
            terms: &terms,
            ideas: &changes.ideas,
            first_content: first.map_or("", |sentence| sentence.content.as_str()),
        };
        match topics::plan(
            &span_input,
            view,
            &mut self.facts,
            self.similarity_opt.as_ref(),
        )? {
            Some(SpanChange::Open(change)) => changes.topic_changes.push(change),
            Some(SpanChange::Update(update)) => changes.topic_updates.push(update),
            None => {}
        }
        let gave_nothing = changes.ideas.is_empty()
            && changes.answered_questions.is_empty()
            && changes.completed_todos.is_empty();
        if gave_nothing && skip::looks_like_debug_output(&event.text) {
            changes
                .skip_events
                .push(skip_event(event, SkipReason::DebugOutput));
        }
        Ok(changes)
    }

    fn tool_changes(
        &mut self,
        event: &Event,
        view: &dyn GraphView,
    ) -> Result<ChangeSet, GraphError> {
        let mut changes = ChangeSet::default();
        if event.kind == EventKind::ToolCall
            && let Some(message) = commit_message(&event.text)
        {
            let list = self
                .candidates
                .get(ListKind::Todos, &event.project_id, view)?;
            let open = not_later(&list.ideas, event);
            changes.completed_todos =
                completions(event, &[commit_evidence(&message)], &open, &mut self.facts);
        }
        if tests_passed(event) {
            let open = view.open_questions(
                &event.project_id,
                Some(&event.session_id),
                SESSION_PROBLEM_LIMIT,
            )?;
            changes
                .answered_questions
                .extend(test_resolution(event, &open, &mut self.facts));
        }
        if changes.completed_todos.is_empty() && changes.answered_questions.is_empty() {
            changes
                .skip_events
                .push(skip_event(event, skip::tool_skip(event)));
        }
        changes.topic_updates.extend(topics::extend(event, view)?);
        Ok(changes)
    }
}

impl Default for HeuristicEngine {
    fn default() -> Self {
        HeuristicEngine::new()
    }
}

impl fmt::Debug for HeuristicEngine {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("HeuristicEngine")
            .field("similarity", &self.similarity_opt.is_some())
            .finish_non_exhaustive()
    }
}

impl IdeaExtractor for HeuristicEngine {
    fn engine(&self) -> &'static str {
        "heuristic"
    }

    fn extract(
        &mut self,
        batch: &ExtractBatch,
        graph: &dyn GraphView,
    ) -> Result<ChangeSet, ExtractError> {
        let mut overlay = Overlay::new(graph);
        self.candidates.clear();
        let mut out = ChangeSet::default();
        // Spans opened in this batch, by id: later updates fold into their opening.
        let mut opened: BTreeMap<String, usize> = BTreeMap::new();
        // Each session's turns so far, its context first: what an elliptical change
        // points back at.
        let mut turns: BTreeMap<(&str, &str), Vec<&Event>> = batch
            .sessions
            .iter()
            .map(|session| {
                let key = (session.project_id.as_str(), session.session_id.as_str());
                (
                    key,
                    session.context.iter().filter(|e| is_prose(e)).collect(),
                )
            })
            .collect();
        for event in batch.in_log_order() {
            self.facts.forget_drafts();
            let key = (event.project_id.as_str(), event.session_id.as_str());
            let previous = turns.entry(key).or_default();
            let mut changes = self.event_changes(event, previous, &overlay)?;
            if is_prose(event) {
                previous.push(event);
            }
            // Skips change nothing a later event reads: they go out, not on the overlay.
            let skips = std::mem::take(&mut changes.skip_events);
            if !is_empty(&changes) {
                let valid = validate_event(&changes, event, &overlay, 0)?;
                debug_assert!(
                    valid.rejected.is_empty(),
                    "heuristic proposal rejected: {:?}",
                    valid.rejected
                );
                let report = apply_changes(&mut overlay, Lexicon::shipped(), &valid)?;
                self.candidates
                    .update_touched(&report.touched, &overlay, &mut self.facts)?;
            }
            changes.skip_events = skips;
            merge(&mut out, changes, event, &mut opened);
        }
        Ok(out)
    }
}

/// Appends one event's changes; a topic update of a span opened in this batch folds
/// into its opening, and a span keeps only its latest update (each update carries the
/// whole name, summary and last event).
fn merge(
    out: &mut ChangeSet,
    changes: ChangeSet,
    event: &Event,
    opened: &mut BTreeMap<String, usize>,
) {
    out.ideas.extend(changes.ideas);
    out.relations.extend(changes.relations);
    out.answered_questions.extend(changes.answered_questions);
    out.completed_todos.extend(changes.completed_todos);
    out.skip_events.extend(changes.skip_events);
    out.activated_ideas.extend(changes.activated_ideas);
    for change in changes.topic_changes {
        opened.insert(topics::opened_span_id(event), out.topic_changes.len());
        out.topic_changes.push(change);
    }
    for update in changes.topic_updates {
        if let Some(index) = opened.get(&update.span_id) {
            let change = &mut out.topic_changes[*index];
            change.new_topic_name = update.name;
            change.summary = update.summary;
            change.last_event_id = update.last_event_id;
        } else if let Some(existing) = out
            .topic_updates
            .iter_mut()
            .find(|existing| existing.span_id == update.span_id)
        {
            *existing = update;
        } else {
            out.topic_updates.push(update);
        }
    }
}

fn is_empty(changes: &ChangeSet) -> bool {
    changes.ideas.is_empty()
        && changes.relations.is_empty()
        && changes.answered_questions.is_empty()
        && changes.completed_todos.is_empty()
        && changes.topic_changes.is_empty()
        && changes.topic_updates.is_empty()
        && changes.entity_links.is_empty()
        && changes.activated_ideas.is_empty()
}

/// Ideas from no later than the event (logs are ordered by position, not always by
/// time); borrowed when all are, as they are in a log written in time order.
fn not_later<'a>(ideas: &'a [Idea], event: &Event) -> Cow<'a, [Idea]> {
    if ideas
        .iter()
        .all(|idea| idea.valid_from_ms <= event.timestamp_ms)
    {
        Cow::Borrowed(ideas)
    } else {
        Cow::Owned(
            ideas
                .iter()
                .filter(|idea| idea.valid_from_ms <= event.timestamp_ms)
                .cloned()
                .collect(),
        )
    }
}

fn skip_event(event: &Event, reason: SkipReason) -> SkipEvent {
    SkipEvent {
        event_id: event.event_id.clone(),
        reason: reason.as_str().to_owned(),
    }
}

fn skipped(
    event: &Event,
    reason: SkipReason,
    view: &dyn GraphView,
) -> Result<ChangeSet, GraphError> {
    Ok(ChangeSet {
        skip_events: vec![skip_event(event, reason)],
        topic_updates: topics::extend(event, view)?.into_iter().collect(),
        ..ChangeSet::default()
    })
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod engine_tests;

#[cfg(test)]
#[path = "batching_tests.rs"]
mod batching_tests;

#[cfg(test)]
#[path = "sample_tests.rs"]
mod sample_tests;
