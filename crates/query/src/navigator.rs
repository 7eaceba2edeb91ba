//! `navigate`: the Phase 10.5 plan's agent navigation loop, in code.
//!
//! 1. Find a time hint ("last week", "in January", "2026-01-30") relative to `now`;
//!    start at its node, or at the root when there is none.
//! 2. Best-first over the tree: open the most promising node, score its children by
//!    the share of query terms their title, summary, bullets and keywords hold, and
//!    queue the best few (a strong match scores at least [`STRONG_MATCH`]; weaker ones
//!    are followed only when nothing better is queued). Deeper nodes win ties, so the
//!    walk reaches segments instead of widening.
//! 3. A segment is evidence: its bullets (those matching first) and the grips they cite.
//! 4. Nothing matched under the hinted node? Try its neighbours (the previous and next
//!    period), then the enclosing period, then the root.
//! 5. Stop on the token, node or depth budget, on enough evidence, or when nothing is
//!    left to open; say which.
//!
//! Every step is recorded with its reason, and the response carries the seed's
//! "Search Path" markdown so an agent or a person can see why it ended where it did.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use memory_projections::bullet_grips;
use memory_text::estimate_tokens;
use memory_text::{TermIndex, query_terms};
use memory_toc::{TocLevel, TocNode, TocNodeId, parse_time_hint};

use crate::api::{
    DEFAULT_TOKEN_BUDGET, NavigateRequest, NavigateResponse, NavigationEvidence, NavigationStep,
    TimeHintInfo, now_or,
};
use crate::project::ProjectView;

/// A child holding at least this share of the query terms is a strong match: the plan's
/// "score > 0.5" drill-down threshold.
pub const STRONG_MATCH: f32 = 0.5;
/// Children queued per opened node: a narrow beam keeps the walk explainable.
const BEAM: usize = 3;
/// Segments gathered before stopping.
const MAX_EVIDENCE_SEGMENTS: usize = 5;
const DEFAULT_MAX_DEPTH: usize = 6;
const DEFAULT_MAX_NODES: usize = 40;

/// A node waiting to be opened (`None` is the root).
#[derive(Clone, Debug)]
struct Pending {
    node_id: Option<TocNodeId>,
    score: f32,
    depth: usize,
    end_ms: u64,
}

struct Walk<'a> {
    view: ProjectView<'a>,
    terms: Vec<String>,
    budget: usize,
    used: usize,
    path: Vec<NavigationStep>,
    evidence: Vec<NavigationEvidence>,
    visited: BTreeSet<Option<TocNodeId>>,
    queue: Vec<Pending>,
}

impl Walk<'_> {
    /// The share of query terms a node holds anywhere (1 for a time-only question):
    /// in its own text or, for a period, in its children's. A week's summary names its
    /// days' topics, not every segment's, so looking one level down keeps a term that
    /// only a segment title holds visible two levels up.
    fn coverage(&self, node: &TocNode) -> crate::Result<f32> {
        if self.terms.is_empty() {
            return Ok(1.0);
        }
        let mut text = node.searchable_text();
        if node.level < TocLevel::Day {
            for child_id in &node.child_ids {
                if let Some(child) = self.view.try_node(child_id)? {
                    text.push('\n');
                    text.push_str(&child.searchable_text());
                }
            }
        }
        let index = TermIndex::new(&text);
        let matched = self.terms.iter().filter(|t| index.contains(t)).count();
        Ok(matched as f32 / self.terms.len() as f32)
    }

    /// The first text of the node holding a query term (its title when none does).
    fn best_text(&self, node: &TocNode) -> String {
        std::iter::once(&node.title)
            .chain(node.summary.iter())
            .chain(node.bullets.iter().map(|b| &b.text))
            .find(|text| {
                let index = TermIndex::new(text);
                self.terms.iter().any(|t| index.contains(t))
            })
            .unwrap_or(&node.title)
            .clone()
    }

    fn push(&mut self, pending: Pending) {
        if !self.visited.contains(&pending.node_id)
            && !self.queue.iter().any(|p| p.node_id == pending.node_id)
        {
            self.queue.push(pending);
        }
    }

    /// The best queued node: highest score, then deepest, then most recent.
    fn pop(&mut self) -> Option<Pending> {
        let best = self
            .queue
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| {
                a.score
                    .total_cmp(&b.score)
                    .then(a.depth.cmp(&b.depth))
                    .then(a.end_ms.cmp(&b.end_ms))
            })
            .map(|(index, _)| index)?;
        Some(self.queue.swap_remove(best))
    }

    fn open(&mut self, pending: &Pending) -> crate::Result<()> {
        self.visited.insert(pending.node_id);
        let node = match &pending.node_id {
            Some(node_id) => Some(self.view.node(node_id)?),
            None => None,
        };
        if let Some(node) = node.as_ref().filter(|n| n.level == TocLevel::Segment) {
            return self.gather(node, pending.score);
        }
        let children = self.view.children(pending.node_id.as_ref())?;
        let mut scored: Vec<(f32, &TocNode)> = Vec::with_capacity(children.len());
        for child in &children {
            let score = self.coverage(child)?;
            if score > 0.0 {
                scored.push((score, child));
            }
        }
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| b.1.end_ms.cmp(&a.1.end_ms))
        });
        let (title, level) = match &node {
            Some(node) => (node.title.clone(), Some(node.level)),
            None => ("All years".to_string(), None),
        };
        let mut step = NavigationStep {
            node_id: pending.node_id.map(|id| id.to_string()),
            level,
            title,
            searched: children.len(),
            best_node_id: None,
            best_text: None,
            best_score: None,
            action: "stop".to_string(),
            reason: String::new(),
        };
        let Some(&(best_score, best)) = scored.first() else {
            step.reason = if children.is_empty() {
                "no children hold data".to_string()
            } else {
                format!(
                    "none of {} children mentions the query terms",
                    children.len()
                )
            };
            self.path.push(step);
            return Ok(());
        };
        step.best_node_id = Some(best.node_id.to_string());
        step.best_text = Some(self.best_text(best));
        step.best_score = Some(best_score);
        step.action = "drill".to_string();
        let strength = if best_score >= STRONG_MATCH {
            "strongest"
        } else {
            "best partial"
        };
        step.reason = format!(
            "drilling into {} ({strength} match, {} of {} children matched)",
            best.node_id,
            scored.len(),
            children.len()
        );
        self.path.push(step);
        let floor = best_score * STRONG_MATCH;
        for (score, child) in scored.into_iter().take(BEAM) {
            if score < floor {
                break;
            }
            self.push(Pending {
                node_id: Some(child.node_id),
                score,
                depth: pending.depth + 1,
                end_ms: child.end_ms,
            });
        }
        Ok(())
    }

    /// Adds a segment's bullets and grips to the evidence, within the budget.
    fn gather(&mut self, node: &TocNode, score: f32) -> crate::Result<()> {
        let matches_terms = |text: &str| {
            let index = TermIndex::new(text);
            self.terms.iter().any(|t| index.contains(t))
        };
        let (mut bullets, others): (Vec<_>, Vec<_>) = node
            .bullets
            .iter()
            .cloned()
            .partition(|bullet| matches_terms(&bullet.text));
        let cited: BTreeSet<_> = if bullets.is_empty() {
            node.bullets
                .iter()
                .flat_map(|b| b.grip_ids.clone())
                .collect()
        } else {
            bullets.iter().flat_map(|b| b.grip_ids.clone()).collect()
        };
        bullets.extend(others);
        let mut grips = bullet_grips(self.view.store, node)?;
        grips.retain(|grip| cited.contains(&grip.grip_id));
        let mut remaining = self.budget.saturating_sub(self.used);
        let title_cost = estimate_tokens(node.title.chars().count());
        if title_cost > remaining {
            self.path
                .push(found_step(node, score, "no token budget left for it"));
            return Ok(());
        }
        remaining -= title_cost;
        let mut cost = title_cost;
        bullets.retain(|bullet| {
            let bullet_cost = estimate_tokens(bullet.text.chars().count());
            let fits = bullet_cost <= remaining;
            if fits {
                remaining -= bullet_cost;
                cost += bullet_cost;
            }
            fits
        });
        grips.retain(|grip| {
            let grip_cost = estimate_tokens(grip.excerpt.chars().count());
            let fits = grip_cost <= remaining;
            if fits {
                remaining -= grip_cost;
                cost += grip_cost;
            }
            fits
        });
        self.used += cost;
        self.path.push(found_step(
            node,
            score,
            &format!(
                "found relevant segment; {} bullets, {} grips kept",
                bullets.len(),
                grips.len()
            ),
        ));
        self.evidence.push(NavigationEvidence {
            node_id: node.node_id.to_string(),
            title: node.title.clone(),
            score,
            bullets,
            grips,
        });
        Ok(())
    }
}

fn found_step(node: &TocNode, score: f32, reason: &str) -> NavigationStep {
    NavigationStep {
        node_id: Some(node.node_id.to_string()),
        level: Some(node.level),
        title: node.title.clone(),
        searched: 0,
        best_node_id: None,
        best_text: None,
        best_score: Some(score),
        action: "found".to_string(),
        reason: reason.to_string(),
    }
}

pub(crate) fn navigate(
    view: ProjectView<'_>,
    request: &NavigateRequest,
) -> crate::Result<NavigateResponse> {
    let now = now_or(request.now.as_ref())?;
    let hint = parse_time_hint(&request.query, now, view.tz);
    let topic = hint
        .as_ref()
        .map_or(request.query.as_str(), |h| h.remainder.as_str());
    let max_depth = request.max_depth.unwrap_or(DEFAULT_MAX_DEPTH).max(1);
    let max_nodes = request.max_nodes.unwrap_or(DEFAULT_MAX_NODES).max(1);
    let mut walk = Walk {
        view,
        terms: query_terms(topic),
        budget: request.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET),
        used: 0,
        path: Vec::new(),
        evidence: Vec::new(),
        visited: BTreeSet::new(),
        queue: Vec::new(),
    };
    // Where to start, and where to go when the start holds nothing: the hinted period,
    // its neighbours, the enclosing periods, the root.
    let mut fallbacks: Vec<(Option<TocNodeId>, &str)> = Vec::new();
    if let Some(hint) = &hint {
        fallbacks.push((Some(hint.node), "start at the hinted period"));
        for neighbour in [hint.node.previous(), hint.node.next()]
            .into_iter()
            .flatten()
        {
            fallbacks.push((
                Some(neighbour),
                "nothing matched; trying an adjacent period",
            ));
        }
        for ancestor in hint.node.ancestors() {
            fallbacks.push((
                Some(ancestor),
                "nothing matched; broadening to the enclosing period",
            ));
        }
    }
    fallbacks.push((None, "start at the root"));
    let mut fallbacks = fallbacks.into_iter().enumerate();
    let mut nodes_visited = 0;
    let stopped = loop {
        if walk.evidence.len() >= MAX_EVIDENCE_SEGMENTS {
            break "enough evidence".to_string();
        }
        if walk.used >= walk.budget {
            break "token budget spent".to_string();
        }
        let Some(pending) = walk.pop() else {
            if !walk.evidence.is_empty() {
                break "nothing left to open".to_string();
            }
            // The next fallback that holds data; the ones skipped are named in the step.
            let mut skipped = Vec::new();
            let next = loop {
                let Some((index, (node_id, reason))) = fallbacks.next() else {
                    break None;
                };
                let exists = node_id.is_none_or(|id| matches!(view.try_node(&id), Ok(Some(_))));
                if walk.visited.contains(&node_id) {
                    continue;
                }
                if !exists {
                    skipped.extend(node_id.map(|id| id.to_string()));
                    continue;
                }
                break Some((index, node_id, reason));
            };
            let Some((index, node_id, reason)) = next else {
                break "no matching period found".to_string();
            };
            let mut reason = reason.to_string();
            if !skipped.is_empty() {
                reason = format!("{reason} (no data in {})", skipped.join(", "));
            }
            if index > 0 || node_id.is_some() {
                walk.path.push(NavigationStep {
                    node_id: node_id.map(|id| id.to_string()),
                    level: node_id.map(|id| id.level()),
                    title: String::new(),
                    searched: 0,
                    best_node_id: None,
                    best_text: None,
                    best_score: None,
                    action: if index == 0 {
                        "start".to_string()
                    } else if reason.contains("adjacent") {
                        "sibling".to_string()
                    } else {
                        "broaden".to_string()
                    },
                    reason,
                });
            }
            walk.push(Pending {
                node_id,
                score: 1.0,
                depth: 0,
                end_ms: 0,
            });
            continue;
        };
        if nodes_visited >= max_nodes {
            break format!("node budget of {max_nodes} reached");
        }
        if pending.depth > max_depth {
            continue;
        }
        nodes_visited += 1;
        walk.open(&pending)?;
    };
    let time_hint = hint.as_ref().map(|hint| TimeHintInfo {
        matched: hint.matched.clone(),
        from: hint.from.to_rfc3339(),
        to: hint.to.to_rfc3339(),
        node_id: hint.node.to_string(),
    });
    let explanation = explain(&request.query, &walk.path, &walk.evidence);
    Ok(NavigateResponse {
        query: request.query.clone(),
        time_hint,
        path: walk.path,
        evidence: walk.evidence,
        nodes_visited,
        stopped,
        token_estimate: walk.used,
        explanation,
    })
}

/// The seed's "Search Path" / "Evidence" markdown.
fn explain(query: &str, path: &[NavigationStep], evidence: &[NavigationEvidence]) -> String {
    let mut out = format!("## Search Path\n\nQuery: \"{query}\"\n\n");
    for (number, step) in path.iter().enumerate() {
        let node = step.node_id.as_deref().unwrap_or("root");
        let _ = writeln!(out, "{}. **{node}** - {}", number + 1, step.action);
        if step.searched > 0 {
            let _ = writeln!(out, "   - Searched {} child nodes", step.searched);
        }
        if let (Some(text), Some(score)) = (&step.best_text, step.best_score) {
            let _ = writeln!(out, "   - Matched: \"{text}\" (score: {score:.2})");
        }
        let _ = writeln!(out, "   - {}", step.reason);
    }
    out.push_str("\n## Evidence\n");
    if evidence.is_empty() {
        out.push_str("\nNothing found.\n");
    }
    for item in evidence {
        let _ = writeln!(out, "\n**Segment: {}** - {}", item.node_id, item.title);
        for bullet in &item.bullets {
            let cites: Vec<String> = bullet.grip_ids.iter().map(ToString::to_string).collect();
            if cites.is_empty() {
                let _ = writeln!(out, "- \"{}\"", bullet.text);
            } else {
                let _ = writeln!(out, "- \"{}\" [{}]", bullet.text, cites.join(", "));
            }
        }
    }
    out
}
