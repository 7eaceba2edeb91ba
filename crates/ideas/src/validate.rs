//! [`validate`]: a proposed [`ChangeSet`] checked against its batch and the graph. What
//! survives is a [`ValidChanges`] whose every id resolves — to an event of the batch, an
//! idea or entity of the same project, or an idea new in the same change set — with
//! scores in range and text bounded. What does not is dropped item by item and counted
//! by reason ([`RejectReason`]); one bad item never sinks the rest.

use std::collections::{BTreeMap, BTreeSet};

use memory_text::truncate_chars;
use memory_types::Event;

use crate::change_set::ChangeSet;
use crate::extractor::{ExtractBatch, GraphError, GraphView};
use crate::model::{
    Idea, Intent, MIN_CONFIDENCE, RelationType, Resolution, SkippedEvent, TopicSpan, idea_id,
    span_id,
};

/// Longest idea content kept, in characters.
pub const MAX_CONTENT_CHARS: usize = 1_000;
/// Longest name, summary or reason kept, in characters.
pub const MAX_LABEL_CHARS: usize = 400;

/// Why part of a change set was dropped (the `reason` label of
/// `memory_ideas_rejected_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    /// It names an event that is not in the batch.
    UnknownEvent,
    /// It names an idea the project does not have.
    UnknownIdea,
    /// It names an entity the project does not have.
    UnknownEntity,
    /// It names a span the session does not have.
    UnknownSpan,
    /// Confidence below the floor.
    LowConfidence,
    /// A score that is not a number in 0..1.
    BadScore,
    /// Empty content or name.
    Empty,
    /// The idea is of the wrong intent for the change (answering a todo, …).
    WrongIntent,
    /// An idea related to itself, or a supersession backwards in time.
    BadRelation,
    /// The same idea twice in one change set.
    Duplicate,
}

impl RejectReason {
    /// Every reason.
    pub const ALL: [RejectReason; 10] = [
        RejectReason::UnknownEvent,
        RejectReason::UnknownIdea,
        RejectReason::UnknownEntity,
        RejectReason::UnknownSpan,
        RejectReason::LowConfidence,
        RejectReason::BadScore,
        RejectReason::Empty,
        RejectReason::WrongIntent,
        RejectReason::BadRelation,
        RejectReason::Duplicate,
    ];

    /// The metrics label.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::UnknownEvent => "unknown_event",
            RejectReason::UnknownIdea => "unknown_idea",
            RejectReason::UnknownEntity => "unknown_entity",
            RejectReason::UnknownSpan => "unknown_span",
            RejectReason::LowConfidence => "low_confidence",
            RejectReason::BadScore => "bad_score",
            RejectReason::Empty => "empty",
            RejectReason::WrongIntent => "wrong_intent",
            RejectReason::BadRelation => "bad_relation",
            RejectReason::Duplicate => "duplicate",
        }
    }
}

/// One dropped item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// Why.
    pub reason: RejectReason,
    /// What, for the log and the LLM engine's retry prompt.
    pub detail: String,
}

/// A new idea whose source and links resolve.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidIdea {
    /// The idea (counters zero, not superseded, no resolution, no entities yet; the
    /// projection resolves `mentions` into entity ids and sets the record time).
    pub idea: Idea,
    /// Entities named by the engine, to resolve against the graph.
    pub mentions: Vec<crate::change_set::EntityMention>,
    /// Existing entities the engine linked by id.
    pub linked_entity_ids: Vec<String>,
}

/// A relation whose two ends resolve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidRelation {
    /// The project of both ends.
    pub project_id: String,
    /// The relation.
    pub relation: crate::model::Relation,
}

/// A question answered or a todo completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidResolution {
    /// The project.
    pub project_id: String,
    /// The question or todo.
    pub idea_id: String,
    /// How.
    pub resolution: Resolution,
}

/// A span to create or change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidSpan {
    /// The span as it should be stored (for an update: the fields to set on it).
    pub span: TopicSpan,
    /// Whether it starts in this batch (else it updates a stored span).
    pub is_new: bool,
}

/// What survived validation, ready to store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidChanges {
    /// New ideas, in change-set order.
    pub ideas: Vec<ValidIdea>,
    /// Relations, including `relates_to` from `related_to` and `answers` from answered
    /// questions whose answering event gave an idea.
    pub relations: Vec<ValidRelation>,
    /// Answered questions and completed todos.
    pub resolutions: Vec<ValidResolution>,
    /// New spans and span updates, in order.
    pub spans: Vec<ValidSpan>,
    /// Skipped events, with their project.
    pub skipped: Vec<(String, SkippedEvent)>,
    /// Activations, with their project: one per entry of `activated_ideas` (repeats count).
    pub activated: Vec<(String, String)>,
    /// What was dropped.
    pub rejected: Vec<Rejection>,
}

impl ValidChanges {
    /// Rejections per reason.
    #[must_use]
    pub fn rejected_by_reason(&self) -> BTreeMap<RejectReason, usize> {
        let mut counts = BTreeMap::new();
        for rejection in &self.rejected {
            *counts.entry(rejection.reason).or_insert(0) += 1;
        }
        counts
    }
}

/// Checks `changes` against `batch` and `graph`; `recorded_at_ms` is the record time of
/// the new ideas.
///
/// # Errors
/// Only when the graph cannot be read; bad items are dropped, not errors.
pub fn validate(
    changes: &ChangeSet,
    batch: &ExtractBatch,
    graph: &dyn GraphView,
    recorded_at_ms: u64,
) -> Result<ValidChanges, GraphError> {
    let scope = Scope {
        events: batch
            .events()
            .map(|event| (event.event_id.as_str(), event))
            .collect(),
        sessions: batch
            .sessions
            .iter()
            .map(|session| (session.project_id.as_str(), session.session_id.as_str()))
            .collect(),
    };
    validate_in(changes, &scope, graph, recorded_at_ms)
}

/// [`validate`] for the changes of one event, as if it were a batch of its own (an
/// engine applying its proposals event by event), without copying the event.
///
/// # Errors
/// Only when the graph cannot be read.
pub fn validate_event(
    changes: &ChangeSet,
    event: &Event,
    graph: &dyn GraphView,
    recorded_at_ms: u64,
) -> Result<ValidChanges, GraphError> {
    let scope = Scope {
        events: BTreeMap::from([(event.event_id.as_str(), event)]),
        sessions: vec![(event.project_id.as_str(), event.session_id.as_str())],
    };
    validate_in(changes, &scope, graph, recorded_at_ms)
}

/// What a change set may name: the events by id, and the (project, session) pairs.
struct Scope<'a> {
    events: BTreeMap<&'a str, &'a Event>,
    sessions: Vec<(&'a str, &'a str)>,
}

fn validate_in(
    changes: &ChangeSet,
    scope: &Scope<'_>,
    graph: &dyn GraphView,
    recorded_at_ms: u64,
) -> Result<ValidChanges, GraphError> {
    let events = &scope.events;
    let mut out = ValidChanges::default();
    let reject = |reason: RejectReason, detail: String| Rejection { reason, detail };
    let mut rejected = Vec::new();
    // New ideas by id, and the ids each source event gave, in order.
    let mut new_ideas: BTreeMap<String, Idea> = BTreeMap::new();
    let mut by_event: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ideas = Vec::new();
    for proposed in &changes.ideas {
        let Some(event) = events.get(proposed.source_event_id.as_str()) else {
            rejected.push(reject(
                RejectReason::UnknownEvent,
                format!(
                    "idea from event {:?}, which is not in the batch",
                    proposed.source_event_id
                ),
            ));
            continue;
        };
        let content = truncate_chars(proposed.content.trim(), MAX_CONTENT_CHARS).to_owned();
        if content.is_empty() {
            rejected.push(reject(
                RejectReason::Empty,
                format!("idea from event {:?} has no content", event.event_id),
            ));
            continue;
        }
        if !unit(proposed.confidence) || proposed.importance.is_some_and(|score| !unit(score)) {
            rejected.push(reject(
                RejectReason::BadScore,
                format!(
                    "idea from event {:?}: confidence and importance must be numbers in 0..1",
                    event.event_id
                ),
            ));
            continue;
        }
        if proposed.confidence < MIN_CONFIDENCE {
            rejected.push(reject(
                RejectReason::LowConfidence,
                format!(
                    "idea from event {:?}: confidence {} is below {MIN_CONFIDENCE}",
                    event.event_id, proposed.confidence
                ),
            ));
            continue;
        }
        let id = idea_id(&event.project_id, &event.event_id, &content);
        if new_ideas.contains_key(&id) {
            rejected.push(reject(
                RejectReason::Duplicate,
                format!("idea {id} proposed twice from event {:?}", event.event_id),
            ));
            continue;
        }
        let idea = Idea {
            idea_id: id.clone(),
            project_id: event.project_id.clone(),
            intent: proposed.intent,
            content,
            confidence: proposed.confidence,
            importance: proposed
                .importance
                .unwrap_or_else(|| proposed.intent.importance()),
            sector: proposed.intent.sector(),
            recall_count: 0,
            activation_count: 0,
            valid_from_ms: event.timestamp_ms,
            valid_until_ms: None,
            superseded_by: None,
            recorded_at_ms,
            source: crate::model::IdeaSource {
                event_id: event.event_id.clone(),
                session_id: event.session_id.clone(),
                timestamp_ms: event.timestamp_ms,
            },
            entity_ids: Vec::new(),
            resolution: None,
        };
        by_event
            .entry(event.event_id.clone())
            .or_default()
            .push(id.clone());
        new_ideas.insert(id, idea.clone());
        ideas.push((proposed, idea));
    }

    // Resolves an idea id within a project: new in this change set, or stored.
    let find = |project: &str, id: &str| -> Result<Option<Idea>, GraphError> {
        if let Some(idea) = new_ideas.get(id) {
            return Ok((idea.project_id == project).then(|| idea.clone()));
        }
        graph.idea(project, id)
    };

    for (proposed, idea) in ideas {
        let mut linked_entity_ids = Vec::new();
        for link in changes
            .entity_links
            .iter()
            .filter(|link| link.idea_source_event_id == idea.source.event_id)
        {
            if graph.entity(&idea.project_id, &link.entity_id)?.is_some() {
                if !linked_entity_ids.contains(&link.entity_id) {
                    linked_entity_ids.push(link.entity_id.clone());
                }
            } else {
                rejected.push(reject(
                    RejectReason::UnknownEntity,
                    format!(
                        "entity {:?} is not in project {:?}",
                        link.entity_id, idea.project_id
                    ),
                ));
            }
        }
        for target in &proposed.related_to {
            match find(&idea.project_id, target)? {
                Some(other) if other.idea_id != idea.idea_id => out.relations.push(ValidRelation {
                    project_id: idea.project_id.clone(),
                    relation: crate::model::Relation {
                        from_idea_id: idea.idea_id.clone(),
                        to_idea_id: other.idea_id,
                        relation_type: RelationType::RelatesTo,
                        evidence_event_id: idea.source.event_id.clone(),
                        timestamp_ms: idea.valid_from_ms,
                    },
                }),
                Some(_) => rejected.push(reject(
                    RejectReason::BadRelation,
                    format!("idea {} related to itself", idea.idea_id),
                )),
                None => rejected.push(reject(
                    RejectReason::UnknownIdea,
                    format!(
                        "related_to names {target:?}, unknown in project {:?}",
                        idea.project_id
                    ),
                )),
            }
        }
        out.ideas.push(ValidIdea {
            mentions: proposed
                .entities
                .iter()
                .filter(|mention| !mention.name.trim().is_empty())
                .cloned()
                .collect(),
            linked_entity_ids,
            idea,
        });
    }
    // Entity links naming an event that gave no idea.
    for link in &changes.entity_links {
        if !by_event.contains_key(&link.idea_source_event_id) {
            rejected.push(reject(
                RejectReason::UnknownEvent,
                format!(
                    "entity link from event {:?}, which gave no idea",
                    link.idea_source_event_id
                ),
            ));
        }
    }

    for relation in &changes.relations {
        let from = match (
            &relation.from_idea_id,
            by_event.get(&relation.from_event_id),
        ) {
            (Some(id), Some(ids)) if ids.contains(id) => id.clone(),
            (None, Some(ids)) if !ids.is_empty() => ids[0].clone(),
            _ => {
                rejected.push(reject(
                    RejectReason::UnknownIdea,
                    format!(
                        "relation from event {:?} ({:?}), which gave no such idea",
                        relation.from_event_id, relation.from_idea_id
                    ),
                ));
                continue;
            }
        };
        let Some(from_idea) = new_ideas.get(&from) else {
            continue;
        };
        let Some(to_idea) = find(&from_idea.project_id, &relation.to_idea_id)? else {
            rejected.push(reject(
                RejectReason::UnknownIdea,
                format!(
                    "relation to {:?}, unknown in project {:?}",
                    relation.to_idea_id, from_idea.project_id
                ),
            ));
            continue;
        };
        if to_idea.idea_id == from
            || (relation.relation_type == RelationType::Supersedes
                && to_idea.valid_from_ms > from_idea.valid_from_ms)
        {
            rejected.push(reject(
                RejectReason::BadRelation,
                format!(
                    "{} {} {}: an idea cannot relate to itself or supersede a later one",
                    from, relation.relation_type, to_idea.idea_id
                ),
            ));
            continue;
        }
        out.relations.push(ValidRelation {
            project_id: from_idea.project_id.clone(),
            relation: crate::model::Relation {
                from_idea_id: from,
                to_idea_id: to_idea.idea_id,
                relation_type: relation.relation_type,
                evidence_event_id: from_idea.source.event_id.clone(),
                timestamp_ms: from_idea.valid_from_ms,
            },
        });
    }

    let resolutions = changes
        .answered_questions
        .iter()
        .map(|answer| {
            (
                &answer.question_idea_id,
                &answer.answered_at_event_id,
                &answer.answer_summary,
                true,
            )
        })
        .chain(changes.completed_todos.iter().map(|done| {
            (
                &done.todo_idea_id,
                &done.completed_at_event_id,
                &done.completion_summary,
                false,
            )
        }));
    for (target, event_id, summary, is_answer) in resolutions {
        let Some(event) = events.get(event_id.as_str()) else {
            rejected.push(reject(
                RejectReason::UnknownEvent,
                format!("resolution at event {event_id:?}, which is not in the batch"),
            ));
            continue;
        };
        let Some(target_idea) = find(&event.project_id, target)? else {
            rejected.push(reject(
                RejectReason::UnknownIdea,
                format!("{target:?} is unknown in project {:?}", event.project_id),
            ));
            continue;
        };
        let intent_fits = if is_answer {
            matches!(target_idea.intent, Intent::Question | Intent::Problem)
        } else {
            target_idea.intent == Intent::Todo
        };
        if !intent_fits || target_idea.valid_from_ms > event.timestamp_ms {
            rejected.push(reject(
                RejectReason::WrongIntent,
                format!(
                    "{target} is a {} from later or of the wrong kind to be {}",
                    target_idea.intent,
                    if is_answer { "answered" } else { "completed" }
                ),
            ));
            continue;
        }
        let answering_idea = by_event
            .get(event_id.as_str())
            .and_then(|ids| ids.iter().find(|id| **id != target_idea.idea_id))
            .cloned();
        if is_answer && let Some(answer_id) = &answering_idea {
            out.relations.push(ValidRelation {
                project_id: event.project_id.clone(),
                relation: crate::model::Relation {
                    from_idea_id: answer_id.clone(),
                    to_idea_id: target_idea.idea_id.clone(),
                    relation_type: RelationType::Answers,
                    evidence_event_id: event.event_id.clone(),
                    timestamp_ms: event.timestamp_ms,
                },
            });
        }
        out.resolutions.push(ValidResolution {
            project_id: event.project_id.clone(),
            idea_id: target_idea.idea_id,
            resolution: Resolution {
                event_id: event.event_id.clone(),
                timestamp_ms: event.timestamp_ms,
                idea_id: answering_idea,
                summary: truncate_chars(summary.trim(), MAX_LABEL_CHARS).to_owned(),
            },
        });
    }

    let mut new_spans: BTreeSet<String> = BTreeSet::new();
    for change in &changes.topic_changes {
        let Some(start) = events.get(change.start_event_id.as_str()) else {
            rejected.push(reject(
                RejectReason::UnknownEvent,
                format!(
                    "topic change at event {:?}, which is not in the batch",
                    change.start_event_id
                ),
            ));
            continue;
        };
        let name = truncate_chars(change.new_topic_name.trim(), MAX_LABEL_CHARS).to_owned();
        if name.is_empty() {
            rejected.push(reject(
                RejectReason::Empty,
                "topic change without a name".to_owned(),
            ));
            continue;
        }
        let last = change
            .last_event_id
            .as_deref()
            .and_then(|id| events.get(id))
            .filter(|last| {
                last.session_id == start.session_id && last.timestamp_ms >= start.timestamp_ms
            })
            .unwrap_or(start);
        let id = span_id(&start.project_id, &start.session_id, &start.event_id);
        new_spans.insert(id.clone());
        out.spans.push(ValidSpan {
            span: TopicSpan {
                span_id: id,
                project_id: start.project_id.clone(),
                session_id: start.session_id.clone(),
                name,
                summary: truncate_chars(change.summary.trim(), MAX_LABEL_CHARS).to_owned(),
                reason: truncate_chars(change.reason.trim(), MAX_LABEL_CHARS).to_owned(),
                first_event_id: start.event_id.clone(),
                first_ms: start.timestamp_ms,
                last_event_id: last.event_id.clone(),
                last_ms: last.timestamp_ms,
            },
            is_new: true,
        });
    }
    let projects: BTreeSet<&str> = scope.sessions.iter().map(|(project, _)| *project).collect();
    for update in &changes.topic_updates {
        let Some((project_id, session_id)) = scope
            .sessions
            .iter()
            .find(|(_, session_id)| *session_id == update.session_id)
        else {
            rejected.push(reject(
                RejectReason::UnknownSpan,
                format!(
                    "topic update for session {:?}, which is not in the batch",
                    update.session_id
                ),
            ));
            continue;
        };
        let stored = graph.session_span(project_id, session_id, &update.span_id)?;
        let new = out
            .spans
            .iter()
            .find(|valid| valid.span.span_id == update.span_id)
            .map(|valid| valid.span.clone());
        let Some(mut span) = new.or(stored) else {
            rejected.push(reject(
                RejectReason::UnknownSpan,
                format!(
                    "span {:?} is not in session {:?}",
                    update.span_id, update.session_id
                ),
            ));
            continue;
        };
        let name = truncate_chars(update.name.trim(), MAX_LABEL_CHARS);
        if !name.is_empty() {
            name.clone_into(&mut span.name);
        }
        truncate_chars(update.summary.trim(), MAX_LABEL_CHARS).clone_into(&mut span.summary);
        if let Some(last) = update
            .last_event_id
            .as_deref()
            .and_then(|id| events.get(id))
            .filter(|last| last.session_id == span.session_id && last.timestamp_ms >= span.last_ms)
        {
            span.last_event_id.clone_from(&last.event_id);
            span.last_ms = last.timestamp_ms;
        }
        let is_new = new_spans.contains(&span.span_id);
        out.spans.push(ValidSpan { span, is_new });
    }

    for skip in &changes.skip_events {
        match events.get(skip.event_id.as_str()) {
            Some(event) => out.skipped.push((
                event.project_id.clone(),
                SkippedEvent {
                    event_id: event.event_id.clone(),
                    session_id: event.session_id.clone(),
                    reason: truncate_chars(skip.reason.trim(), MAX_LABEL_CHARS).to_owned(),
                },
            )),
            None => rejected.push(reject(
                RejectReason::UnknownEvent,
                format!(
                    "skip of event {:?}, which is not in the batch",
                    skip.event_id
                ),
            )),
        }
    }
    // Each entry is one activation (repeats count), so an engine that names an idea once
    // per event recalling it gets the same counts however the events are batched.
    let mut activated = Vec::new();
    for id in &changes.activated_ideas {
        let mut project_opt = new_ideas.get(id).map(|idea| idea.project_id.clone());
        for project in &projects {
            if project_opt.is_some() {
                break;
            }
            if graph.idea(project, id)?.is_some() {
                project_opt = Some((*project).to_owned());
            }
        }
        match project_opt {
            Some(project) => activated.push((project, id.clone())),
            None => rejected.push(reject(
                RejectReason::UnknownIdea,
                format!("activated idea {id:?} is unknown in the batch's projects"),
            )),
        }
    }
    out.activated = activated;
    out.rejected = rejected;
    Ok(out)
}

fn unit(score: f32) -> bool {
    score.is_finite() && (0.0..=1.0).contains(&score)
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
