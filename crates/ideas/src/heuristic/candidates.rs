//! The candidate lists an event is compared with — decisions in force, open questions,
//! open todos — read from the overlay once per batch and shared until an event's
//! changes could alter them.
//!
//! Why: most events add no idea, yet nearly every statement is checked against the open
//! questions; reading and copying [`CANDIDATE_LIMIT`] ideas per event per list, and then
//! scanning every question's terms, was most of the engine's time. When an applied
//! change touches an idea of a list's kind (new, superseded, resolved) the list is
//! updated in place, or read again when an idea left it full, so it always holds what
//! the overlay would answer at that moment and the graph does not depend on the cache. Each list keeps its ideas' facts beside them, so an event
//! is matched against the open questions by term hashes, without a lookup per idea.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use foldhash::HashMap;

use crate::extractor::{GraphError, GraphView};
use crate::heuristic::CANDIDATE_LIMIT;
use crate::heuristic::facts::{FactsCache, IdeaFacts, term_hash};
use crate::memory_graph::{is_current_decision, is_open_question, is_open_todo, recent_first};
use crate::model::{Idea, Intent, normalized_content};

/// Which list.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum ListKind {
    Decisions,
    Questions,
    Todos,
}

impl ListKind {
    /// Whether `idea` belongs on a list of this kind.
    fn holds(self, idea: &Idea) -> bool {
        match self {
            ListKind::Decisions => is_current_decision(idea),
            ListKind::Questions => is_open_question(idea),
            ListKind::Todos => is_open_todo(idea),
        }
    }

    /// The list an idea of `intent` can be on.
    fn of(intent: Intent) -> Option<ListKind> {
        match intent {
            Intent::Decision | Intent::Preference => Some(ListKind::Decisions),
            Intent::Question | Intent::Problem => Some(ListKind::Questions),
            Intent::Todo => Some(ListKind::Todos),
            Intent::Conclusion | Intent::Solution | Intent::Context => None,
        }
    }
}

/// One list as read, most recent first, with its ideas' facts read on first use.
#[derive(Debug, Default)]
pub(crate) struct CandidateList {
    /// The ideas, in the overlay's order.
    pub ideas: Vec<Idea>,
    facts: OnceLock<ListFacts>,
}

/// The facts of each idea of a list, at the same positions, and all their term hashes
/// in one array (idea `i`'s are `hashes[ends[i - 1]..ends[i]]`) so that matching an
/// event against the list walks contiguous memory.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ListFacts {
    pub facts: Vec<Arc<IdeaFacts>>,
    hashes: Vec<u64>,
    ends: Vec<usize>,
}

impl ListFacts {
    fn new(facts: Vec<Arc<IdeaFacts>>) -> Self {
        let mut list = ListFacts {
            facts: Vec::new(),
            hashes: Vec::new(),
            ends: Vec::new(),
        };
        for idea_facts in facts {
            list.push(idea_facts);
        }
        list
    }

    fn push(&mut self, idea_facts: Arc<IdeaFacts>) {
        self.hashes.extend_from_slice(&idea_facts.term_hashes);
        self.ends.push(self.hashes.len());
        self.facts.push(idea_facts);
    }

    /// Where idea `position`'s hashes start.
    fn start(&self, position: usize) -> usize {
        position
            .checked_sub(1)
            .map_or(0, |before| self.ends[before])
    }

    /// Inserts an idea's facts at `position`, keeping at most `limit` ideas.
    fn insert(&mut self, position: usize, idea_facts: Arc<IdeaFacts>, limit: usize) {
        let at = self.start(position);
        let added = idea_facts.term_hashes.len();
        self.hashes
            .splice(at..at, idea_facts.term_hashes.iter().copied());
        for end in &mut self.ends[position..] {
            *end += added;
        }
        self.ends.insert(position, at + added);
        self.facts.insert(position, idea_facts);
        if self.facts.len() > limit {
            self.hashes.truncate(self.start(limit));
            self.ends.truncate(limit);
            self.facts.truncate(limit);
        }
    }

    /// Removes the facts at `position`.
    fn remove(&mut self, position: usize) {
        let (start, end) = (self.start(position), self.ends[position]);
        self.hashes.drain(start..end);
        self.ends.remove(position);
        for later in &mut self.ends[position..] {
            *later -= end - start;
        }
        self.facts.remove(position);
    }

    /// Per idea, how many of its salient terms are among `terms`: what scanning each
    /// idea's terms against a set of `terms` counts. Term hashes filter first (a
    /// 4 096-bit map, then a sorted list); a hash hit is confirmed on the strings, so a
    /// collision never counts.
    pub(crate) fn count_matches<'a>(&self, terms: impl IntoIterator<Item = &'a str>) -> Vec<u32> {
        let mut wanted: Vec<(u64, &str)> = terms
            .into_iter()
            .map(|term| (term_hash(term), term))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut bits = [0_u64; 64];
        for (hash, _) in &wanted {
            bits[(hash >> 6 & 63) as usize] |= 1 << (hash & 63);
        }
        let mut counts = vec![0_u32; self.facts.len()];
        let mut start = 0;
        for (position, &end) in self.ends.iter().enumerate() {
            for (offset, &hash) in self.hashes[start..end].iter().enumerate() {
                if bits[(hash >> 6 & 63) as usize] & (1 << (hash & 63)) == 0 {
                    continue;
                }
                let term = self.facts[position].terms[offset].as_str();
                let from = wanted.partition_point(|(other, _)| *other < hash);
                if wanted[from..]
                    .iter()
                    .take_while(|(other, _)| *other == hash)
                    .any(|(_, other)| *other == term)
                {
                    counts[position] += 1;
                }
            }
            start = end;
        }
        counts
    }
}

impl CandidateList {
    fn new(ideas: Vec<Idea>) -> Self {
        CandidateList {
            ideas,
            facts: OnceLock::new(),
        }
    }

    /// The facts of the list's ideas.
    pub(crate) fn facts(&self, cache: &mut FactsCache) -> &ListFacts {
        self.facts
            .get_or_init(|| ListFacts::new(self.ideas.iter().map(|idea| cache.get(idea)).collect()))
    }

    /// The idea of the list from no later than `timestamp_ms` that says `content` (the
    /// same normalised content), if any.
    pub(crate) fn restated(
        &self,
        content: &str,
        timestamp_ms: u64,
        cache: &mut FactsCache,
    ) -> Option<&Idea> {
        let normalized = normalized_content(content);
        let hash = term_hash(&normalized);
        let list_facts = self.facts(cache);
        self.ideas
            .iter()
            .zip(&list_facts.facts)
            .find(|(idea, facts)| {
                facts.normalized_hash == hash
                    && idea.valid_from_ms <= timestamp_ms
                    && facts.normalized == normalized
            })
            .map(|(idea, _)| idea)
    }

    /// Brings the list up to date with `idea` as it now stands (new, or changed): what
    /// a fresh read would give. Returns false when it cannot — an idea left a full
    /// list, and the one that would take its place is not known — and the list must be
    /// read again.
    fn update(&mut self, idea: Idea, kind: ListKind, cache: &mut FactsCache) -> bool {
        let was_full = self.ideas.len() >= CANDIDATE_LIMIT;
        let mut facts_opt = self.facts.get_mut();
        let old = self
            .ideas
            .iter()
            .position(|listed| listed.idea_id == idea.idea_id);
        // Still on the list at the same place (an activation, a recall): the facts are
        // those of the same content, only the idea changes.
        if let Some(position) = old
            && kind.holds(&idea)
            && self.ideas[position].valid_from_ms == idea.valid_from_ms
        {
            self.ideas[position] = idea;
            return true;
        }
        if let Some(position) = old {
            self.ideas.remove(position);
            if let Some(list_facts) = facts_opt.as_mut() {
                list_facts.remove(position);
            }
        }
        if !kind.holds(&idea) {
            return !(was_full && old.is_some());
        }
        let position = self
            .ideas
            .partition_point(|listed| recent_first(listed, &idea).is_lt());
        if let Some(list_facts) = facts_opt {
            list_facts.insert(position, cache.get(&idea), CANDIDATE_LIMIT);
        }
        self.ideas.insert(position, idea);
        self.ideas.truncate(CANDIDATE_LIMIT);
        true
    }
}

/// The batch's lists by kind and project.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    lists: HashMap<(ListKind, String), Arc<CandidateList>>,
}

impl Candidates {
    /// The list of `kind` for `project_id`, read from `view` unless already read.
    pub(crate) fn get(
        &mut self,
        kind: ListKind,
        project_id: &str,
        view: &dyn GraphView,
    ) -> Result<Arc<CandidateList>, GraphError> {
        let key = (kind, project_id.to_owned());
        if let Some(list) = self.lists.get(&key) {
            return Ok(Arc::clone(list));
        }
        let list = Arc::new(CandidateList::new(match kind {
            ListKind::Decisions => view.current_decisions(project_id, CANDIDATE_LIMIT)?,
            ListKind::Questions => view.open_questions(project_id, None, CANDIDATE_LIMIT)?,
            ListKind::Todos => view.open_todos(project_id, None, CANDIDATE_LIMIT)?,
        }));
        self.lists.insert(key, Arc::clone(&list));
        Ok(list)
    }

    /// Forgets every list (a new batch: the stored graph may have changed).
    pub(crate) fn clear(&mut self) {
        self.lists.clear();
    }

    /// Brings the lists the changed ideas belong to up to date (an idea is on at most
    /// one: its intent says which), or forgets them, so the next read sees the changes.
    pub(crate) fn update_touched(
        &mut self,
        touched: &BTreeSet<(String, String)>,
        view: &dyn GraphView,
        cache: &mut FactsCache,
    ) -> Result<(), GraphError> {
        for (project_id, idea_id) in touched {
            let Some(idea) = view.idea(project_id, idea_id)? else {
                self.clear();
                continue;
            };
            let Some(kind) = ListKind::of(idea.intent) else {
                continue;
            };
            let key = (kind, project_id.clone());
            let updated = self.lists.get_mut(&key).is_none_or(|list| {
                Arc::get_mut(list).is_some_and(|list| list.update(idea, kind, cache))
            });
            if !updated {
                self.lists.remove(&key);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extractor::GraphStore;
    use crate::memory_graph::MemoryGraph;
    use crate::model::{IdeaSource, Resolution, Sector};

    fn question(n: u64) -> Idea {
        Idea {
            idea_id: format!("idea-{n:04}"),
            project_id: "p".into(),
            intent: if n.is_multiple_of(3) {
                Intent::Problem
            } else {
                Intent::Question
            },
            content: format!("Which cache size for shard {n}?"),
            confidence: 0.8,
            importance: 0.8,
            sector: Sector::Episodic,
            recall_count: 0,
            activation_count: 0,
            // Some share a time: the order falls back to the id.
            valid_from_ms: 1_000 + n / 2 * 10,
            valid_until_ms: None,
            superseded_by: None,
            recorded_at_ms: 0,
            source: IdeaSource {
                event_id: format!("e{n}"),
                session_id: "s".into(),
                timestamp_ms: 1_000 + n / 2 * 10,
            },
            entity_ids: Vec::new(),
            resolution: None,
        }
    }

    /// A list kept up to date through new ideas (newer, older, tied) and answers (of
    /// listed and unlisted ideas, from a full list and a short one) equals a fresh read
    /// after every change.
    #[test]
    fn an_updated_list_equals_a_fresh_read() {
        let mut graph = MemoryGraph::default();
        let mut cache = FactsCache::default();
        let mut candidates = Candidates::default();
        for n in (0..400).step_by(2) {
            graph.put_idea(question(n)).expect("put");
        }
        let list = candidates
            .get(ListKind::Questions, "p", &graph)
            .expect("read");
        list.facts(&mut cache);
        drop(list);
        let mut steps: Vec<(u64, bool)> = Vec::new();
        for n in (1..420).step_by(7) {
            steps.push((n, false));
        }
        for n in (0..400).step_by(6) {
            steps.push((n, true));
        }
        steps.sort_by_key(|(n, _)| (n * 7919) % 1_009);
        for (n, answer) in steps {
            let idea = if answer {
                let mut idea = question(n);
                idea.resolution = Some(Resolution {
                    event_id: "later".into(),
                    timestamp_ms: 9_000,
                    idea_id: None,
                    summary: "an answer".into(),
                });
                idea
            } else {
                question(n)
            };
            graph.put_idea(idea).expect("put");
            let touched = BTreeSet::from([("p".to_owned(), format!("idea-{n:04}"))]);
            candidates
                .update_touched(&touched, &graph, &mut cache)
                .expect("update");
            let kept = candidates
                .get(ListKind::Questions, "p", &graph)
                .expect("read");
            let fresh = graph
                .open_questions("p", None, CANDIDATE_LIMIT)
                .expect("fresh");
            assert_eq!(kept.ideas, fresh, "after idea {n} (answered: {answer})");
            let facts = kept.facts(&mut cache);
            for (idea, facts) in kept.ideas.iter().zip(&facts.facts) {
                assert_eq!(facts.as_ref(), cache.get(idea).as_ref());
            }
            assert_eq!(facts.facts.len(), kept.ideas.len());
            assert_eq!(
                *facts,
                ListFacts::new(facts.facts.clone()),
                "after idea {n}"
            );
            let said = ["size", "shard", "which"];
            let counts = facts.count_matches(said);
            for (count, idea_facts) in counts.iter().zip(&facts.facts) {
                let scanned = idea_facts
                    .terms
                    .iter()
                    .filter(|term| said.contains(&term.as_str()))
                    .count();
                assert_eq!(*count as usize, scanned);
            }
        }
    }

    #[test]
    fn term_counts_match_a_scan_of_each_ideas_terms() {
        let mut cache = FactsCache::default();
        let list = CandidateList::new((0..50).map(question).collect());
        let facts = list.facts(&mut cache);
        let said = ["cache", "size", "shard", "cache", "nothing"];
        let counts = facts.count_matches(said);
        for (position, idea_facts) in facts.facts.iter().enumerate() {
            let scanned = idea_facts
                .terms
                .iter()
                .filter(|term| said.contains(&term.as_str()))
                .count();
            assert_eq!(counts[position] as usize, scanned);
            assert!(scanned >= 2, "{:?}", idea_facts.terms);
        }
    }
}
