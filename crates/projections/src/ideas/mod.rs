//! The ideas graph projection: [`IdeaGraph`] (its records and read model) and
//! [`IndexingAgent`] (the outbox consumer that keeps it, with the engines of
//! `memory-ideas`).

mod agent;
mod backfill;
mod backfill_state;
mod graph;
mod metrics;
mod proposals;
mod reads;
mod similarity;
#[cfg(test)]
mod test_support;

pub use agent::{
    EngineFactory, IDEA_WRITTEN, IDEAS_CLEARED, INDEXING_AGENT, IndexingAgent, IndexingSettings,
    RECALL_SESSION,
};
pub use backfill_state::{BackfillProgress, UnfinishedBackfill, unfinished_backfill};
pub use graph::{GraphTxn, IDEAS, IdeaGraph};
pub use metrics::{IDEAS_METRICS, IdeasMetrics};
pub use proposals::{PROPOSAL_ENGINE, proposal_batch, proposal_chains};
pub use similarity::model_similarity;
