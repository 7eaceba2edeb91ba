//! [`IdeaGraph`]: the ideas projection's records in one fjall keyspace (`proj_ideas`),
//! its read model, and [`GraphTxn`], the write buffer an agent batch fills and commits
//! with its cursor.
//!
//! Layout (every key starts with a one-letter table, then the project, NUL-separated;
//! ids never contain NUL, see `memory_types::validate`):
//!
//! | key | value |
//! |---|---|
//! | `i project idea_id` | the [`Idea`] |
//! | `r project rev_time idea_id` | recency index (all ideas, newest first) |
//! | `s project session rev_time idea_id` | recency index per session |
//! | `o project q|t rev_time idea_id` | open questions (`q`) and todos (`t`) |
//! | `d project rev_time idea_id` | decisions and preferences in force |
//! | `x project entity_id rev_time idea_id` | ideas per entity |
//! | `v project event_id idea_id` | ideas per source event |
//! | `e project entity_id` | the [`Entity`] |
//! | `k project key` | entity id of a canonical or alias key |
//! | `l project end_idea from to type` | a [`Relation`], under both ends |
//! | `p project session span_id` | a [`TopicSpan`] |
//! | `z project session event_id` | a [`SkippedEvent`] |
//! | `c project` | the project's [`ProposalChain`] (cluster mode with a model) |
//! | `B plan`, `B mark`, `B failure` | an unfinished backfill's plan, progress and failures (`ideas::backfill`) |
//!
//! The indexes are maintained by [`GraphTxn::put_idea`] from the old and new record, so
//! list reads are prefix scans that stop at the limit.

use std::collections::BTreeMap;
use std::ops::Bound;

use memory_ideas::memory_graph::{
    entity_matches, is_current_decision, is_open_question, is_open_todo, latest_spans,
    matches_filters, rank_by_terms, sort_spans,
};
use memory_ideas::{
    Entity, GraphError, GraphStore, GraphView, Idea, Intent, ProposalChain, Relation, SkippedEvent,
    TopicSpan, canonical_key,
};
use memory_store::Keyspace;
use memory_store::{ProjectionBatch, Store, StoreError, codec};

use crate::consumer::ConsumerError;

/// The projection's name: keyspace, cursor key, metrics label.
pub const IDEAS: &str = "ideas";

const IDEA_VERSION: u8 = 1;
const ENTITY_VERSION: u8 = 1;
const RELATION_VERSION: u8 = 1;
const SPAN_VERSION: u8 = 1;
const SKIPPED_VERSION: u8 = 1;
const CHAIN_VERSION: u8 = 1;

/// The table of an unfinished backfill's bookkeeping: not graph content, so
/// [`IdeaGraph::dump`] leaves it out.
const BACKFILL_TABLE: u8 = b'B';
/// The backfill's plan: written once, with the clears.
pub(crate) const BACKFILL_PLAN: &str = "plan";
/// The backfill's progress: written with each of its batches.
pub(crate) const BACKFILL_MARK: &str = "mark";
/// The failures of the batch the backfill is at.
pub(crate) const BACKFILL_FAILURE: &str = "failure";

/// Most ideas a term search over the stored graph reads (newest first).
const SEARCH_SCAN_LIMIT: usize = 5_000;

fn key(table: u8, parts: &[&str]) -> Vec<u8> {
    let mut key = Vec::with_capacity(2 + parts.iter().map(|part| part.len() + 1).sum::<usize>());
    key.push(table);
    for part in parts {
        key.push(0);
        key.extend_from_slice(part.as_bytes());
    }
    key
}

/// The prefix of every key whose leading parts are `parts` (ends with the separator).
fn prefix(table: u8, parts: &[&str]) -> Vec<u8> {
    let mut prefix = key(table, parts);
    prefix.push(0);
    prefix
}

fn rev_time(timestamp_ms: u64) -> String {
    format!("{:016x}", u64::MAX - timestamp_ms)
}

/// The last NUL-separated part of a key (an idea id in the index tables).
fn last_part(key: &[u8]) -> String {
    let start = key
        .iter()
        .rposition(|byte| *byte == 0)
        .map_or(0, |at| at + 1);
    String::from_utf8_lossy(&key[start..]).into_owned()
}

fn graph_error(err: impl std::fmt::Display) -> GraphError {
    GraphError(err.to_string())
}

/// One stored record: key and value bytes.
pub type GraphRecord = (Vec<u8>, Vec<u8>);

/// What a scan calls per record: `Ok(false)` stops it.
type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> Result<bool, GraphError> + 'a;

/// Ordered key-value reads: the keyspace itself, or the keyspace under a write buffer.
trait Kv {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError>;
    /// Visits keys with `prefix` in order until `visit` returns false.
    fn scan(&self, prefix: &[u8], visit: &mut Visit<'_>) -> Result<(), GraphError>;
}

impl Kv for Keyspace {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
        Ok(Keyspace::get(self, key)
            .map_err(graph_error)?
            .map(|value| value.to_vec()))
    }

    fn scan(&self, prefix: &[u8], visit: &mut Visit<'_>) -> Result<(), GraphError> {
        for guard in self.prefix(prefix) {
            let (key, value) = guard.into_inner().map_err(graph_error)?;
            if !visit(&key, &value)? {
                break;
            }
        }
        Ok(())
    }
}

/// Reads shared by the stored graph and the write buffer.
struct Reader<'a, K: Kv + ?Sized>(&'a K);

impl<K: Kv + ?Sized> Reader<'_, K> {
    fn record<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
        what: &'static str,
        version: u8,
    ) -> Result<Option<T>, GraphError> {
        match self.0.get(key)? {
            Some(bytes) => Ok(Some(
                codec::decode(what, version, &bytes).map_err(graph_error)?,
            )),
            None => Ok(None),
        }
    }

    fn idea(&self, project_id: &str, idea_id: &str) -> Result<Option<Idea>, GraphError> {
        self.record(&key(b'i', &[project_id, idea_id]), "idea", IDEA_VERSION)
    }

    /// Ideas named by an index prefix, in index order, that pass `keep`, up to `limit`.
    fn indexed(
        &self,
        project_id: &str,
        index_prefix: &[u8],
        limit: usize,
        keep: &dyn Fn(&Idea) -> bool,
    ) -> Result<Vec<Idea>, GraphError> {
        let mut ideas = Vec::new();
        if limit == 0 {
            return Ok(ideas);
        }
        self.0.scan(index_prefix, &mut |key, _| {
            if let Some(idea) = self.idea(project_id, &last_part(key))?
                && keep(&idea)
            {
                ideas.push(idea);
            }
            Ok(ideas.len() < limit)
        })?;
        Ok(ideas)
    }

    fn entity(&self, project_id: &str, entity_id: &str) -> Result<Option<Entity>, GraphError> {
        self.record(
            &key(b'e', &[project_id, entity_id]),
            "entity",
            ENTITY_VERSION,
        )
    }

    fn entity_by_key(
        &self,
        project_id: &str,
        entity_key: &str,
    ) -> Result<Option<Entity>, GraphError> {
        match self.0.get(&key(b'k', &[project_id, entity_key]))? {
            Some(id) => self.entity(project_id, &String::from_utf8_lossy(&id)),
            None => Ok(None),
        }
    }

    fn search_entities(
        &self,
        project_id: &str,
        name: &str,
        limit: usize,
    ) -> Result<Vec<Entity>, GraphError> {
        let needle = name.trim().to_lowercase();
        let mut entities = Vec::new();
        if limit == 0 {
            return Ok(entities);
        }
        self.0.scan(&prefix(b'e', &[project_id]), &mut |_, value| {
            let entity: Entity =
                codec::decode("entity", ENTITY_VERSION, value).map_err(graph_error)?;
            if entity_matches(&entity, &needle) {
                entities.push(entity);
            }
            Ok(entities.len() < limit)
        })?;
        Ok(entities)
    }

    fn session_spans(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<TopicSpan>, GraphError> {
        let mut spans = Vec::new();
        self.0
            .scan(&prefix(b'p', &[project_id, session_id]), &mut |_, value| {
                spans.push(codec::decode("topic span", SPAN_VERSION, value).map_err(graph_error)?);
                Ok(true)
            })?;
        sort_spans(&mut spans);
        Ok(spans)
    }

    fn project_spans(&self, project_id: &str, limit: usize) -> Result<Vec<TopicSpan>, GraphError> {
        let mut spans = Vec::new();
        self.0.scan(&prefix(b'p', &[project_id]), &mut |_, value| {
            spans.push(codec::decode("topic span", SPAN_VERSION, value).map_err(graph_error)?);
            Ok(true)
        })?;
        Ok(latest_spans(spans, limit))
    }

    fn relations(&self, project_id: &str, idea_id: &str) -> Result<Vec<Relation>, GraphError> {
        let mut relations: Vec<Relation> = Vec::new();
        self.0
            .scan(&prefix(b'l', &[project_id, idea_id]), &mut |_, value| {
                relations
                    .push(codec::decode("relation", RELATION_VERSION, value).map_err(graph_error)?);
                Ok(true)
            })?;
        relations.sort_by(|a, b| {
            (
                a.timestamp_ms,
                &a.from_idea_id,
                &a.to_idea_id,
                a.relation_type,
            )
                .cmp(&(
                    b.timestamp_ms,
                    &b.from_idea_id,
                    &b.to_idea_id,
                    b.relation_type,
                ))
        });
        Ok(relations)
    }

    fn skipped(&self, project_id: &str, session_id: &str) -> Result<Vec<SkippedEvent>, GraphError> {
        let mut skipped = Vec::new();
        self.0
            .scan(&prefix(b'z', &[project_id, session_id]), &mut |_, value| {
                skipped.push(
                    codec::decode("skipped event", SKIPPED_VERSION, value).map_err(graph_error)?,
                );
                Ok(true)
            })?;
        Ok(skipped)
    }
}

/// Implements [`GraphView`] for a type with a [`Kv`].
macro_rules! graph_view {
    ($type:ty) => {
        impl GraphView for $type {
            fn idea(&self, project_id: &str, idea_id: &str) -> Result<Option<Idea>, GraphError> {
                Reader(self.kv()).idea(project_id, idea_id)
            }

            fn recent_ideas(
                &self,
                project_id: &str,
                session_id: Option<&str>,
                intent: Option<Intent>,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                let index = match session_id {
                    Some(session) => prefix(b's', &[project_id, session]),
                    None => prefix(b'r', &[project_id]),
                };
                Reader(self.kv()).indexed(project_id, &index, limit, &|idea| {
                    matches_filters(idea, session_id, intent)
                })
            }

            fn open_questions(
                &self,
                project_id: &str,
                session_id: Option<&str>,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                Reader(self.kv()).indexed(
                    project_id,
                    &prefix(b'o', &[project_id, "q"]),
                    limit,
                    &|idea| is_open_question(idea) && matches_filters(idea, session_id, None),
                )
            }

            fn open_todos(
                &self,
                project_id: &str,
                session_id: Option<&str>,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                Reader(self.kv()).indexed(
                    project_id,
                    &prefix(b'o', &[project_id, "t"]),
                    limit,
                    &|idea| is_open_todo(idea) && matches_filters(idea, session_id, None),
                )
            }

            fn current_decisions(
                &self,
                project_id: &str,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                Reader(self.kv()).indexed(
                    project_id,
                    &prefix(b'd', &[project_id]),
                    limit,
                    &is_current_decision,
                )
            }

            fn search_ideas(
                &self,
                project_id: &str,
                query: &str,
                session_id: Option<&str>,
                intent: Option<Intent>,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                let candidates =
                    self.recent_ideas(project_id, session_id, intent, SEARCH_SCAN_LIMIT)?;
                Ok(rank_by_terms(candidates, query, limit))
            }

            fn entity(
                &self,
                project_id: &str,
                entity_id: &str,
            ) -> Result<Option<Entity>, GraphError> {
                Reader(self.kv()).entity(project_id, entity_id)
            }

            fn entity_by_key(
                &self,
                project_id: &str,
                entity_key: &str,
            ) -> Result<Option<Entity>, GraphError> {
                Reader(self.kv()).entity_by_key(project_id, entity_key)
            }

            fn search_entities(
                &self,
                project_id: &str,
                name: &str,
                limit: usize,
            ) -> Result<Vec<Entity>, GraphError> {
                Reader(self.kv()).search_entities(project_id, name, limit)
            }

            fn entity_ideas(
                &self,
                project_id: &str,
                entity_id: &str,
                limit: usize,
            ) -> Result<Vec<Idea>, GraphError> {
                Reader(self.kv()).indexed(
                    project_id,
                    &prefix(b'x', &[project_id, entity_id]),
                    limit,
                    &|_| true,
                )
            }

            fn session_spans(
                &self,
                project_id: &str,
                session_id: &str,
            ) -> Result<Vec<TopicSpan>, GraphError> {
                Reader(self.kv()).session_spans(project_id, session_id)
            }

            fn project_spans(
                &self,
                project_id: &str,
                limit: usize,
            ) -> Result<Vec<TopicSpan>, GraphError> {
                Reader(self.kv()).project_spans(project_id, limit)
            }

            fn relations(
                &self,
                project_id: &str,
                idea_id: &str,
            ) -> Result<Vec<Relation>, GraphError> {
                Reader(self.kv()).relations(project_id, idea_id)
            }
        }
    };
}

fn read_chain<K: Kv + ?Sized>(kv: &K, project_id: &str) -> Result<ProposalChain, GraphError> {
    match kv.get(&key(b'c', &[project_id]))? {
        Some(value) => codec::decode("chain", CHAIN_VERSION, &value).map_err(graph_error),
        None => Ok(ProposalChain::default()),
    }
}

/// The stored ideas graph: the read model queries use and the base an engine reads.
#[derive(Clone)]
pub struct IdeaGraph {
    keyspace: Keyspace,
}

graph_view!(IdeaGraph);

impl IdeaGraph {
    fn kv(&self) -> &Keyspace {
        &self.keyspace
    }

    /// Opens the projection's keyspace.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store) -> Result<IdeaGraph, StoreError> {
        Ok(IdeaGraph {
            keyspace: store.projection_keyspace(IDEAS)?,
        })
    }

    /// A session's skipped events.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn skipped(
        &self,
        project_id: &str,
        session_id: &str,
    ) -> Result<Vec<SkippedEvent>, GraphError> {
        Reader(&self.keyspace).skipped(project_id, session_id)
    }

    /// The ideas taken from one event (what a search hit on that event stands for).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn ideas_of_event(
        &self,
        project_id: &str,
        event_id: &str,
    ) -> Result<Vec<Idea>, GraphError> {
        Reader(&self.keyspace).indexed(
            project_id,
            &prefix(b'v', &[project_id, event_id]),
            usize::MAX,
            &|_| true,
        )
    }

    /// Every idea of every project, in key order (index rebuilds).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn every_idea(&self) -> Result<Vec<Idea>, GraphError> {
        let mut ideas = Vec::new();
        self.keyspace.scan(&[b'i', 0], &mut |_, value| {
            ideas.push(codec::decode("idea", IDEA_VERSION, value).map_err(graph_error)?);
            Ok(true)
        })?;
        Ok(ideas)
    }

    /// Where the chain of `ideas_proposed` events of a project stands (default: none
    /// applied, nothing seen).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn chain(&self, project_id: &str) -> Result<ProposalChain, GraphError> {
        read_chain(&self.keyspace, project_id)
    }

    /// Every project's chain of `ideas_proposed` events, by project.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn chains(&self) -> Result<BTreeMap<String, ProposalChain>, GraphError> {
        let mut chains = BTreeMap::new();
        self.keyspace.scan(&[b'c', 0], &mut |key, value| {
            let project = String::from_utf8_lossy(&key[2..]).into_owned();
            let chain = codec::decode("chain", CHAIN_VERSION, value).map_err(graph_error)?;
            chains.insert(project, chain);
            Ok(true)
        })?;
        Ok(chains)
    }

    /// Every idea of a project, newest first (tests and exports).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn all_ideas(&self, project_id: &str) -> Result<Vec<Idea>, GraphError> {
        self.recent_ideas(project_id, None, None, usize::MAX)
    }

    /// Every record of the projection as (key, value) bytes, in key order: what two
    /// graphs are compared by (a rebuild against the incremental state), with each
    /// idea's record time zeroed — the one field that is not a function of the log.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn dump(&self) -> Result<Vec<GraphRecord>, GraphError> {
        let mut records = Vec::new();
        self.keyspace.scan(&[], &mut |key, value| {
            // A chain holds this store's log positions, which another replica's store
            // need not share.
            if key.first() == Some(&b'c') {
                return Ok(true);
            }
            // A backfill's bookkeeping (`status` shows an unfinished one).
            if key.first() == Some(&BACKFILL_TABLE) {
                return Ok(true);
            }
            let value = if key.first() == Some(&b'i') {
                let mut idea: Idea =
                    codec::decode("idea", IDEA_VERSION, value).map_err(graph_error)?;
                idea.recorded_at_ms = 0;
                codec::encode("idea", IDEA_VERSION, &idea).map_err(graph_error)?
            } else {
                value.to_vec()
            };
            records.push((key.to_vec(), value));
            Ok(true)
        })?;
        Ok(records)
    }

    /// [`IdeaGraph::dump`] readable: each record as its project, its key (the table
    /// letter and the parts after the project, NUL shown as ` | `) and its value decoded
    /// (`Debug`; the index tables' values are empty, an alias's is an entity id), for
    /// `admin verify` to compare and show.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn dump_rendered(&self) -> Result<Vec<(String, String, String)>, GraphError> {
        let mut records = Vec::new();
        for (key, value) in self.dump()? {
            let text = String::from_utf8_lossy(&key).into_owned();
            let mut parts = text.split('\0');
            let table = parts.next().unwrap_or_default().to_owned();
            let project = parts.next().unwrap_or_default().to_owned();
            let rest: Vec<&str> = parts.collect();
            let rendered_key = format!("{table} | {}", rest.join(" | "));
            let rendered = match table.as_str() {
                "i" => format!(
                    "{:?}",
                    codec::decode::<Idea>("idea", IDEA_VERSION, &value).map_err(graph_error)?
                ),
                "e" => format!(
                    "{:?}",
                    codec::decode::<Entity>("entity", ENTITY_VERSION, &value)
                        .map_err(graph_error)?
                ),
                "l" => format!(
                    "{:?}",
                    codec::decode::<Relation>("relation", RELATION_VERSION, &value)
                        .map_err(graph_error)?
                ),
                "p" => format!(
                    "{:?}",
                    codec::decode::<TopicSpan>("topic span", SPAN_VERSION, &value)
                        .map_err(graph_error)?
                ),
                "z" => format!(
                    "{:?}",
                    codec::decode::<SkippedEvent>("skipped event", SKIPPED_VERSION, &value)
                        .map_err(graph_error)?
                ),
                _ => String::from_utf8_lossy(&value).into_owned(),
            };
            records.push((project, rendered_key, rendered));
        }
        Ok(records)
    }

    /// Adds the removal of every record to `batch` (a rebuild), so that the empty graph
    /// is committed with the agent's reset cursor: cleared on its own, a crash before
    /// the cursor's reset left the old cursor over an empty graph, and the agent went on
    /// from there without the ideas of everything before it.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn clear_into(&self, batch: &mut ProjectionBatch) -> Result<(), StoreError> {
        for guard in self.keyspace.iter() {
            let (key, _) = guard.into_inner()?;
            batch.remove(&self.keyspace, key);
        }
        Ok(())
    }

    /// Deletes every record of one project (a project backfill), in one batch.
    ///
    /// # Errors
    /// Store failures.
    pub fn clear_project(&self, store: &Store, project_id: &str) -> Result<(), ConsumerError> {
        let mut batch = store.projection_batch();
        self.clear_project_into(&mut batch, project_id)?;
        store.commit_projection(batch)?;
        Ok(())
    }

    /// Adds the removal of every record of one project to `batch` (a backfill commits
    /// it with its plan).
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn clear_project_into(
        &self,
        batch: &mut ProjectionBatch,
        project_id: &str,
    ) -> Result<(), StoreError> {
        for table in [
            b'i', b'r', b's', b'o', b'd', b'x', b'v', b'e', b'k', b'l', b'p', b'z',
        ] {
            for guard in self.keyspace.prefix(prefix(table, &[project_id])) {
                let (key, _) = guard.into_inner()?;
                batch.remove(&self.keyspace, key);
            }
        }
        batch.remove(&self.keyspace, key(b'c', &[project_id]));
        Ok(())
    }

    /// One record of the unfinished backfill (`part`: `plan` or `mark`).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub(crate) fn backfill_record<T: serde::de::DeserializeOwned>(
        &self,
        part: &str,
        what: &'static str,
        version: u8,
    ) -> Result<Option<T>, StoreError> {
        match self.keyspace.get(key(BACKFILL_TABLE, &[part]))? {
            Some(bytes) => Ok(Some(codec::decode(what, version, &bytes)?)),
            None => Ok(None),
        }
    }

    /// Adds one record of the backfill to `batch`.
    ///
    /// # Errors
    /// When the record cannot be encoded.
    pub(crate) fn put_backfill_record<T: serde::Serialize>(
        &self,
        batch: &mut ProjectionBatch,
        part: &str,
        what: &'static str,
        version: u8,
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = codec::encode(what, version, value)?;
        batch.insert(&self.keyspace, key(BACKFILL_TABLE, &[part]), bytes);
        Ok(())
    }

    /// Adds the removal of the backfill's records to `batch` (it is done).
    pub(crate) fn remove_backfill(&self, batch: &mut ProjectionBatch) {
        for part in [BACKFILL_PLAN, BACKFILL_MARK, BACKFILL_FAILURE] {
            batch.remove(&self.keyspace, key(BACKFILL_TABLE, &[part]));
        }
    }

    /// Adds the removal of the backfill's failure record to `batch` (a batch passed).
    pub(crate) fn remove_backfill_failure(&self, batch: &mut ProjectionBatch) {
        batch.remove(&self.keyspace, key(BACKFILL_TABLE, &[BACKFILL_FAILURE]));
    }

    /// A write buffer over this graph.
    #[must_use]
    pub fn txn(&self) -> GraphTxn<'_> {
        GraphTxn {
            graph: self,
            pending: BTreeMap::new(),
        }
    }
}

/// Writes of one batch, buffered over the stored graph: reads see them (point reads
/// and prefix scans merge the buffer with the keyspace), [`GraphTxn::write_into`] hands
/// them to a projection batch committed with the cursor.
pub struct GraphTxn<'a> {
    graph: &'a IdeaGraph,
    pending: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Kv for GraphTxn<'_> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
        match self.pending.get(key) {
            Some(value) => Ok(value.clone()),
            None => Kv::get(&self.graph.keyspace, key),
        }
    }

    fn scan(&self, prefix: &[u8], visit: &mut Visit<'_>) -> Result<(), GraphError> {
        let mut buffered = self
            .pending
            .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .peekable();
        let mut stored = self.graph.keyspace.prefix(prefix);
        let mut next_stored = || -> Result<Option<GraphRecord>, GraphError> {
            match stored.next() {
                Some(guard) => {
                    let (key, value) = guard.into_inner().map_err(graph_error)?;
                    Ok(Some((key.to_vec(), value.to_vec())))
                }
                None => Ok(None),
            }
        };
        let mut head = next_stored()?;
        loop {
            let take_buffered = match (buffered.peek(), &head) {
                (None, None) => return Ok(()),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((key, _)), Some((stored_key, _))) => key.as_slice() <= stored_key.as_slice(),
            };
            let proceed = if take_buffered {
                let Some((key, value)) = buffered.next() else {
                    return Ok(());
                };
                if head
                    .as_ref()
                    .is_some_and(|(stored_key, _)| stored_key == key)
                {
                    head = next_stored()?;
                }
                match value {
                    Some(value) => visit(key, value)?,
                    None => true,
                }
            } else {
                let Some((key, value)) = head.take() else {
                    return Ok(());
                };
                head = next_stored()?;
                visit(&key, &value)?
            };
            if !proceed {
                return Ok(());
            }
        }
    }
}

graph_view!(GraphTxn<'_>);

impl GraphTxn<'_> {
    fn kv(&self) -> &Self {
        self
    }

    fn set(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.pending.insert(key, Some(value));
    }

    fn delete(&mut self, key: Vec<u8>) {
        self.pending.insert(key, None);
    }

    /// The index keys an idea is listed under.
    fn index_keys(idea: &Idea) -> Vec<Vec<u8>> {
        let project = idea.project_id.as_str();
        let time = rev_time(idea.valid_from_ms);
        let id = idea.idea_id.as_str();
        let mut keys = vec![
            key(b'r', &[project, &time, id]),
            key(b's', &[project, &idea.source.session_id, &time, id]),
            key(b'v', &[project, &idea.source.event_id, id]),
        ];
        if is_open_question(idea) {
            keys.push(key(b'o', &[project, "q", &time, id]));
        }
        if is_open_todo(idea) {
            keys.push(key(b'o', &[project, "t", &time, id]));
        }
        if is_current_decision(idea) {
            keys.push(key(b'd', &[project, &time, id]));
        }
        for entity in &idea.entity_ids {
            keys.push(key(b'x', &[project, entity, &time, id]));
        }
        keys
    }

    /// Whether nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// A project's chain as this buffer would leave it.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn chain(&self, project_id: &str) -> Result<ProposalChain, GraphError> {
        read_chain(self, project_id)
    }

    /// Sets a project's chain.
    ///
    /// # Errors
    /// Encoding failures.
    pub fn set_chain(&mut self, project_id: &str, chain: &ProposalChain) -> Result<(), GraphError> {
        let value = codec::encode("chain", CHAIN_VERSION, chain).map_err(graph_error)?;
        self.set(key(b'c', &[project_id]), value);
        Ok(())
    }

    /// Moves the buffered writes into `batch`.
    pub fn write_into(self, batch: &mut ProjectionBatch) {
        for (key, value) in self.pending {
            match value {
                Some(value) => batch.insert(&self.graph.keyspace, key, value),
                None => batch.remove(&self.graph.keyspace, key),
            }
        }
    }
}

impl GraphStore for GraphTxn<'_> {
    fn put_idea(&mut self, idea: Idea) -> Result<(), GraphError> {
        if let Some(old) = Reader(&*self).idea(&idea.project_id, &idea.idea_id)? {
            for stale in Self::index_keys(&old) {
                self.delete(stale);
            }
        }
        for index in Self::index_keys(&idea) {
            self.set(index, Vec::new());
        }
        let value = codec::encode("idea", IDEA_VERSION, &idea).map_err(graph_error)?;
        self.set(key(b'i', &[&idea.project_id, &idea.idea_id]), value);
        Ok(())
    }

    fn put_entity(&mut self, entity: Entity) -> Result<(), GraphError> {
        let project = entity.project_id.clone();
        for entity_key in std::iter::once(entity.key.clone())
            .chain(entity.aliases.iter().map(|alias| canonical_key(alias)))
        {
            let alias_key = key(b'k', &[&project, &entity_key]);
            if Kv::get(self, &alias_key)?.is_none() {
                self.set(alias_key, entity.entity_id.clone().into_bytes());
            }
        }
        let value = codec::encode("entity", ENTITY_VERSION, &entity).map_err(graph_error)?;
        self.set(key(b'e', &[&project, &entity.entity_id]), value);
        Ok(())
    }

    fn put_relation(&mut self, project_id: &str, relation: Relation) -> Result<(), GraphError> {
        let value = codec::encode("relation", RELATION_VERSION, &relation).map_err(graph_error)?;
        for end in [&relation.from_idea_id, &relation.to_idea_id] {
            self.set(
                key(
                    b'l',
                    &[
                        project_id,
                        end,
                        &relation.from_idea_id,
                        &relation.to_idea_id,
                        relation.relation_type.as_str(),
                    ],
                ),
                value.clone(),
            );
        }
        Ok(())
    }

    fn put_span(&mut self, span: TopicSpan) -> Result<(), GraphError> {
        let value = codec::encode("topic span", SPAN_VERSION, &span).map_err(graph_error)?;
        self.set(
            key(b'p', &[&span.project_id, &span.session_id, &span.span_id]),
            value,
        );
        Ok(())
    }

    fn put_skipped(&mut self, project_id: &str, skipped: SkippedEvent) -> Result<(), GraphError> {
        let value =
            codec::encode("skipped event", SKIPPED_VERSION, &skipped).map_err(graph_error)?;
        self.set(
            key(b'z', &[project_id, &skipped.session_id, &skipped.event_id]),
            value,
        );
        Ok(())
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
