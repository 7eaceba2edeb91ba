//! [`ProjectView`]: one project's projections in one store, as every call reads them.

use memory_projections::RollupBuilder;
use memory_store::Store;
use memory_toc::{TocLevel, TocNode, TocNodeId, Tz};

use crate::error::QueryError;

/// One project's events, grips and TOC nodes in a store, with the TOC's time zone (day
/// boundaries, time hints, open segments).
#[derive(Clone, Copy)]
pub(crate) struct ProjectView<'a> {
    pub(crate) store: &'a Store,
    pub(crate) tz: Tz,
    pub(crate) project_id: &'a str,
}

impl ProjectView<'_> {
    /// A node of the project.
    ///
    /// # Errors
    /// `not_found` when the project has no such node.
    pub(crate) fn node(&self, node_id: &TocNodeId) -> crate::Result<TocNode> {
        self.try_node(node_id)?.ok_or_else(|| {
            QueryError::not_found(format!(
                "project {:?} has no node {node_id}",
                self.project_id
            ))
        })
    }

    /// A node of the project, if it has it.
    pub(crate) fn try_node(&self, node_id: &TocNodeId) -> crate::Result<Option<TocNode>> {
        Ok(RollupBuilder::node(self.store, self.project_id, node_id)?)
    }

    /// Every node of one level, chronological.
    pub(crate) fn nodes_at_level(&self, level: TocLevel) -> crate::Result<Vec<TocNode>> {
        Ok(RollupBuilder::nodes_at_level(
            self.store,
            self.project_id,
            level,
        )?)
    }

    /// The children of a node (the years for `None`), loaded, chronological.
    ///
    /// # Errors
    /// `not_found` for a missing parent.
    pub(crate) fn children(&self, parent: Option<&TocNodeId>) -> crate::Result<Vec<TocNode>> {
        let Some(parent) = parent else {
            return self.nodes_at_level(TocLevel::Year);
        };
        let node = self.node(parent)?;
        let mut children = Vec::with_capacity(node.child_ids.len());
        for child_id in &node.child_ids {
            if let Some(child) = self.try_node(child_id)? {
                children.push(child);
            }
        }
        Ok(children)
    }
}
