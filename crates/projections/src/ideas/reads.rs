//! What the indexing agent reads from the log besides its feed — a session's turns just
//! before a batch, a recall's idea ids — for the engine-running agent and the
//! following one alike.

use memory_ideas::{CONTEXT_EVENTS, ExtractBatch};
use memory_store::{OutboxSeq, Store};
use memory_types::{Event, recalled_idea_ids};

use crate::consumer::ConsumerError;

/// Fills each session's `context` with the events just before its first event in the
/// log (see `SessionEvents::context`): one short read per session and batch.
pub(crate) fn read_context(store: &Store, batch: &mut ExtractBatch) -> Result<(), ConsumerError> {
    for session in &mut batch.sessions {
        let (Some(first), Some(&seq)) = (session.events.first(), session.seqs.first()) else {
            continue;
        };
        session.context = store.session_before(first, OutboxSeq(seq), CONTEXT_EVENTS)?;
    }
    Ok(())
}

/// The project and idea ids of a `memory_recalled` event.
pub(crate) fn recall_of(event: &Event) -> Result<(String, Vec<String>), ConsumerError> {
    let ids = recalled_idea_ids(&event.metadata).map_err(|message| {
        ConsumerError::BadInput(format!(
            "memory_recalled event {:?}: {message}",
            event.event_id
        ))
    })?;
    Ok((event.project_id.clone(), ids))
}
