//! [`TopK`]: the best `limit` scored documents of a search, ties broken by key.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use crate::doc::DocMeta;

/// A scored document during a search. Ordered so that greater is better: higher
/// score, then the smaller key (so ties break the same way on every path).
pub(super) struct Scored<'a> {
    pub(super) score: f32,
    pub(super) meta: &'a DocMeta,
}

impl PartialEq for Scored<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored<'_> {}

impl PartialOrd for Scored<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.meta.key.cmp(&self.meta.key))
    }
}

/// The best `limit` scored documents seen.
pub(super) struct TopK<'a> {
    limit: usize,
    pub(super) heap: BinaryHeap<Reverse<Scored<'a>>>,
}

impl<'a> TopK<'a> {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
        }
    }

    pub(super) fn push(&mut self, score: f32, meta: &'a DocMeta) {
        let scored = Scored { score, meta };
        if self.heap.len() < self.limit {
            self.heap.push(Reverse(scored));
        } else if self
            .heap
            .peek()
            .is_some_and(|Reverse(worst)| scored > *worst)
        {
            self.heap.pop();
            self.heap.push(Reverse(scored));
        }
    }

    /// Best first.
    pub(super) fn into_sorted(self) -> Vec<Scored<'a>> {
        let mut scored: Vec<Scored<'a>> = self.heap.into_iter().map(|Reverse(s)| s).collect();
        scored.sort_unstable_by(|left, right| right.cmp(left));
        scored
    }
}
