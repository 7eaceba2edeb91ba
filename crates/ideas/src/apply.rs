//! [`apply_changes`]: validated changes into a graph — the one place that says what a
//! change means, used for the stored projection and for the in-memory layer an engine
//! works on, so the two never disagree.
//!
//! Merge rules, chosen so that applying the same log in any batching gives the same
//! graph: a stored idea is never overwritten by its replay; `supersedes` sets the older
//! idea's `valid_until` to the newer one's `valid_from`, keeping the earliest when two
//! ideas supersede it; a question or todo keeps its earliest answer or completion.

use std::collections::{BTreeMap, BTreeSet};

use crate::entities::{Lexicon, Resolved, resolve};
use crate::extractor::{GraphError, GraphStore};
use crate::model::{Intent, RelationType};
use crate::validate::ValidChanges;

/// What one application changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// New ideas by intent.
    pub ideas_by_intent: BTreeMap<Intent, usize>,
    /// New relations by type.
    pub relations_by_type: BTreeMap<RelationType, usize>,
    /// New entities.
    pub new_entities: usize,
    /// Ideas stored or changed (new, superseded, resolved, activated), by (project,
    /// idea id).
    pub touched: BTreeSet<(String, String)>,
    /// New ideas, by (project, idea id): what the indexes must add (a changed idea's
    /// document stays the same: validity and salience are read at query time).
    pub new_ideas: BTreeSet<(String, String)>,
}

impl ApplyReport {
    /// Adds `other`'s counts and ids to this report (a batch applied in parts).
    pub fn absorb(&mut self, other: ApplyReport) {
        for (intent, count) in other.ideas_by_intent {
            *self.ideas_by_intent.entry(intent).or_insert(0) += count;
        }
        for (relation, count) in other.relations_by_type {
            *self.relations_by_type.entry(relation).or_insert(0) += count;
        }
        self.new_entities += other.new_entities;
        self.touched.extend(other.touched);
        self.new_ideas.extend(other.new_ideas);
    }
}

/// Applies `changes` to `graph`, resolving entity mentions with `lexicon`.
///
/// # Errors
/// Graph read or write failures; the caller discards the partial result (the stored
/// projection commits nothing on error).
pub fn apply_changes(
    graph: &mut dyn GraphStore,
    lexicon: &Lexicon,
    changes: &ValidChanges,
) -> Result<ApplyReport, GraphError> {
    let mut report = ApplyReport::default();
    for valid in &changes.ideas {
        let idea = &valid.idea;
        if graph.idea(&idea.project_id, &idea.idea_id)?.is_some() {
            continue;
        }
        let mut entity_ids: Vec<String> = Vec::new();
        for mention in &valid.mentions {
            let Some(resolved) = resolve(
                &*graph,
                lexicon,
                &idea.project_id,
                &mention.name,
                mention.entity_type,
                idea.valid_from_ms,
            )?
            else {
                continue;
            };
            let id = resolved.entity_id().to_owned();
            match resolved {
                Resolved::New(entity) => {
                    report.new_entities += 1;
                    graph.put_entity(entity)?;
                }
                Resolved::Existing {
                    mut entity,
                    alias: Some(alias),
                } => {
                    entity.aliases.push(alias);
                    entity.aliases.sort();
                    entity.aliases.dedup();
                    graph.put_entity(entity)?;
                }
                Resolved::Existing { alias: None, .. } => {}
            }
            if !entity_ids.contains(&id) {
                entity_ids.push(id);
            }
        }
        for id in &valid.linked_entity_ids {
            if !entity_ids.contains(id) {
                entity_ids.push(id.clone());
            }
        }
        let mut stored = idea.clone();
        stored.entity_ids = entity_ids;
        *report.ideas_by_intent.entry(stored.intent).or_insert(0) += 1;
        report
            .touched
            .insert((stored.project_id.clone(), stored.idea_id.clone()));
        report
            .new_ideas
            .insert((stored.project_id.clone(), stored.idea_id.clone()));
        graph.put_idea(stored)?;
    }
    for valid in &changes.relations {
        let relation = &valid.relation;
        let existing = graph.relations(&valid.project_id, &relation.from_idea_id)?;
        if existing.contains(relation) {
            continue;
        }
        graph.put_relation(&valid.project_id, relation.clone())?;
        *report
            .relations_by_type
            .entry(relation.relation_type)
            .or_insert(0) += 1;
        if relation.relation_type == RelationType::Supersedes
            && let Some(mut older) = graph.idea(&valid.project_id, &relation.to_idea_id)?
        {
            let until = relation.timestamp_ms;
            if older.valid_until_ms.is_none_or(|current| until < current) {
                older.valid_until_ms = Some(until);
                older.superseded_by = Some(relation.from_idea_id.clone());
                report
                    .touched
                    .insert((valid.project_id.clone(), older.idea_id.clone()));
                graph.put_idea(older)?;
            }
        }
    }
    for valid in &changes.resolutions {
        let Some(mut idea) = graph.idea(&valid.project_id, &valid.idea_id)? else {
            continue;
        };
        let earlier = idea
            .resolution
            .as_ref()
            .is_none_or(|current| valid.resolution.timestamp_ms < current.timestamp_ms);
        if earlier {
            idea.resolution = Some(valid.resolution.clone());
            report
                .touched
                .insert((valid.project_id.clone(), idea.idea_id.clone()));
            graph.put_idea(idea)?;
        }
    }
    for valid in &changes.spans {
        graph.put_span(valid.span.clone())?;
    }
    for (project_id, skipped) in &changes.skipped {
        graph.put_skipped(project_id, skipped.clone())?;
    }
    for (project_id, idea_id) in &changes.activated {
        if let Some(mut idea) = graph.idea(project_id, idea_id)? {
            idea.activation_count = idea.activation_count.saturating_add(1);
            report.touched.insert((project_id.clone(), idea_id.clone()));
            graph.put_idea(idea)?;
        }
    }
    Ok(report)
}

/// Counts one recall of each idea in `idea_ids` of `project_id` (a `memory_recalled`
/// event); unknown ids are ignored (the idea may be gone after a rebuild with another
/// engine). Returns the ids that exist.
///
/// # Errors
/// Graph read or write failures.
pub fn apply_recall(
    graph: &mut dyn GraphStore,
    project_id: &str,
    idea_ids: &[String],
) -> Result<Vec<String>, GraphError> {
    let mut found = Vec::new();
    let unique: BTreeSet<&String> = idea_ids.iter().collect();
    for idea_id in unique {
        if let Some(mut idea) = graph.idea(project_id, idea_id)? {
            idea.recall_count = idea.recall_count.saturating_add(1);
            graph.put_idea(idea)?;
            found.push(idea_id.clone());
        }
    }
    Ok(found)
}
