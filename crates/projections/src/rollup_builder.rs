//! `RollupBuilder`: owns the time table of contents. Upstream: `grips_extracted`
//! (closed segments) and `segment_open` (sessions still going) outbox entries.
//! Downstream: the query side, and the accelerator indexes through `toc_node_written`.
//!
//! For a closed segment it writes the segment node with the configured summarizer
//! (title, summary, bullets citing the segment's grips, keywords). For a session that is
//! still going it writes a *provisional* node of the open segment with the extractive
//! summarizer, so today's work is navigable seconds after it happens instead of after the
//! 30-minute gap that closes the segment; the closed node replaces it under the same id.
//!
//! Then it refreshes the parents of every node it wrote — day, ISO week, month of the
//! week's Thursday, year — once per batch, bottom up: the batch is the debounce, so a
//! backfill of a thousand segments rewrites each day once, not a thousand times. A
//! parent is written from its children alone, never from events.
//!
//! Everything a node holds is derived from the log in a fixed order: segment keywords
//! use this actor's own document-frequency table (`proj_toc_term_df`, counted in
//! segment-close order), provisional nodes use no corpus statistics, parents use only
//! their children, and `version` is derived from content (see [`node_version`]). So a
//! rebuild with the extractive summarizer writes the same tree.
//!
//! In cluster mode a model's summaries come from the log instead: the group's lease
//! holder asks the model for a node that is final (a closed segment, or a parent with
//! no open segment under it) and publishes a `toc_summary` event naming the node and
//! the version it summarizes. Every replica keeps each one it applies and, whenever it
//! writes that node at that version, uses it in place of the extractive summary — if
//! it keeps the bounds and cites only grips the node holds
//! ([`memory_summarize::check_summary`]); otherwise the extractive one stays. A node
//! is therefore a function of the log whichever comes first on a replica, the summary
//! or the node's version, and a rebuild writes the same tree without a model.
//!
//! Records: `proj_toc_nodes` (`project \0 node id` → [`TocNode`]), `proj_toc_children`
//! (`project \0 parent id \0 child id` → empty, the membership index that lists a
//! node's children without scanning), `proj_toc_model_summaries` (`project \0 node id
//! \0 version` → [`Summary`], the log's model summaries).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use memory_store::{
    DerivedEntry, FeedItem, Keyspace, OutboxSeq, ProjectionBatch, Store, StoreError, codec,
};
use memory_summarize::{
    ExtractiveSummarizer, ParentInput, SegmentInput, Summarizer, Summary, SummaryEvent,
    check_summary,
};
use memory_toc::{Grip, GripId, TocLevel, TocNode, TocNodeId, Tz};
use memory_types::{Event, EventKind, Role, TOC_NODE, TOC_NODE_VERSION, TOC_SUMMARY_SESSION};
use tracing::{debug, warn};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::grip_extractor::{GRIPS_EXTRACTED, GripExtractor};
use crate::keys::project_scoped_key;
use crate::legacy_ids;
use crate::metrics::TOC_METRICS;
use crate::segmenter::{SEGMENT_OPEN, SegmentEvent, Segmenter};
use crate::term_df::{DocumentFrequency, segment_stems};

/// The consumer's name: cursor key and metrics label.
pub const ROLLUP_BUILDER: &str = "rollup_builder";
/// Outbox entry kind announcing a written (new or changed) TOC node; its key is the
/// node id.
pub const TOC_NODE_WRITTEN: &str = "toc_node_written";
/// Outbox entry kind a reset appends after deleting the TOC: every TOC node and grip
/// document goes from the accelerator indexes (key and project empty: all projects).
///
/// A rebuild announces every node and grip it writes again, but not the ones it no
/// longer writes (segment and grip ids changed in TOC format 2; a changed segmenting
/// rule cuts other segments), so without it their documents would stay searchable with
/// nothing behind them. The indexes re-add what the rebuild announces after it, and
/// keep their event documents (nothing is embedded again but the TOC itself).
pub const TOC_CLEARED: &str = "toc_cleared";
/// The TOC projection's format, kept in `proj_toc_format` (see [`toc_format`]).
/// 2: segment and grip ids carry the project ([`TocNodeId::segment_for`],
/// [`GripId::derive`]). 1 (or none recorded in a store that has a TOC): the ids did
/// not; the pipeline rebuilds such a TOC once when it starts.
pub const TOC_FORMAT_VERSION: u64 = 2;
const TOC_FORMAT_KEYSPACE: &str = "toc_format";
const TOC_FORMAT_KEY: &[u8] = b"format";
const TOC_FORMAT_RECORD_VERSION: u8 = 1;
const NODES_KEYSPACE: &str = "toc_nodes";
pub(crate) const CHILDREN_KEYSPACE: &str = "toc_children";
pub(crate) const TERM_DF_KEYSPACE: &str = "toc_term_df";
pub(crate) const MODEL_SUMMARIES_KEYSPACE: &str = "toc_model_summaries";
const RECORD_VERSION: u8 = 1;

/// How the rollup builder writes nodes. Its time zone is the segmenter's
/// ([`crate::SegmenterConfig::timezone`]), passed by the pipeline, so the two cannot
/// disagree about which day a segment belongs to.
#[derive(Clone)]
pub struct RollupConfig {
    /// Writes closed segments and parents: extractive by default, an LLM when configured.
    pub summarizer: Arc<dyn Summarizer>,
}

impl Default for RollupConfig {
    fn default() -> Self {
        RollupConfig {
            summarizer: Arc::new(ExtractiveSummarizer::default()),
        }
    }
}

impl std::fmt::Debug for RollupConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RollupConfig")
            .field("summarizer", &self.summarizer.name())
            .finish()
    }
}

/// A node's `version`, derived from what it holds so that it grows whenever its content
/// grows and a rebuild computes the same: a segment counts its events plus one once it
/// is closed; a parent sums its children's versions.
#[must_use]
pub fn node_version(level: TocLevel, num_events: u64, closed: bool, children: &[TocNode]) -> u64 {
    match level {
        TocLevel::Segment => num_events + u64::from(closed),
        _ => children.iter().map(|child| child.version).sum(),
    }
}

/// The consumer.
pub struct RollupBuilder {
    config: RollupConfig,
    /// The segmenter's zone: open segments are named by their first event's local day.
    timezone: Tz,
    provisional: ExtractiveSummarizer,
    nodes: Keyspace,
    children: Keyspace,
    term_df: Keyspace,
    model_summaries: Keyspace,
}

fn node_key(project_id: &str, node_id: &TocNodeId) -> Vec<u8> {
    project_scoped_key(project_id, &node_id.to_string())
}

fn children_prefix(project_id: &str, parent: &TocNodeId) -> Vec<u8> {
    let mut key = node_key(project_id, parent);
    key.push(0);
    key
}

fn child_key(project_id: &str, parent: &TocNodeId, child: &TocNodeId) -> Vec<u8> {
    let mut key = children_prefix(project_id, parent);
    key.extend_from_slice(child.to_string().as_bytes());
    key
}

/// The keys of a node version's model summaries: `project \0 node id \0 version`, then
/// the log position of each (so they list in log order).
fn model_summary_prefix(project_id: &str, node_id: &TocNodeId, version: u64) -> Vec<u8> {
    let mut key = node_key(project_id, node_id);
    key.push(0);
    key.extend_from_slice(&version.to_be_bytes());
    key
}

fn model_summary_key(
    project_id: &str,
    node_id: &TocNodeId,
    version: u64,
    seq: OutboxSeq,
) -> Vec<u8> {
    let mut key = model_summary_prefix(project_id, node_id, version);
    key.extend_from_slice(&seq.0.to_be_bytes());
    key
}

/// The stored model summaries of a node version, in log order.
fn stored_candidates(keyspace: &Keyspace, prefix: &[u8]) -> Result<Vec<Summary>, ConsumerError> {
    let mut found = Vec::new();
    for guard in keyspace.prefix(prefix) {
        let (_, value) = guard.into_inner().map_err(StoreError::from)?;
        found.push(codec::decode("toc model summary", RECORD_VERSION, &value)?);
    }
    Ok(found)
}

/// The first of `candidates` that keeps the bounds and cites only `grips`: the one a
/// node shows, whichever order the node and the summaries reached a replica in.
fn first_fit(candidates: Vec<Summary>, grips: &BTreeSet<GripId>) -> Option<Summary> {
    candidates
        .into_iter()
        .find(|summary| check_summary(summary, grips).is_ok())
}

/// The model summary `node` shows, if any: the first of `candidates` (its version's, in
/// log order) that keeps the bounds and cites only `grips` as it is; else the first
/// format-1 summary that does once its format-1 grip ids are translated — among
/// `candidates` and, for a closed segment, those `candidates_of` finds under the
/// segment's format-1 id (see [`crate::legacy_ids`]). `any_stored` is false when no
/// model summary is kept at all (single mode), which spares the format-1 lookups.
fn shown_summary(
    store: &Store,
    node: &TocNode,
    candidates: Vec<Summary>,
    candidates_of: &dyn Fn(&TocNodeId) -> Result<Vec<Summary>, ConsumerError>,
    grips: &BTreeSet<GripId>,
    any_stored: bool,
) -> Result<Option<Summary>, ConsumerError> {
    if let Some(summary) = first_fit(candidates.clone(), grips) {
        return Ok(Some(summary));
    }
    if !any_stored || !legacy_ids::may_have_legacy_summary(node) {
        return Ok(None);
    }
    let mut legacy = candidates;
    if node.level == TocLevel::Segment
        && let Some(legacy_id) = legacy_ids::legacy_segment_id(store, node)?
    {
        legacy.extend(candidates_of(&legacy_id)?);
    }
    if legacy.is_empty() {
        return Ok(None);
    }
    let translation = legacy_ids::grip_translation(store, &node.project_id, grips)?;
    Ok(legacy
        .iter()
        .map(|summary| legacy_ids::translated(summary, &translation))
        .find(|summary| check_summary(summary, grips).is_ok()))
}

/// Whether `node` is final: a closed segment, or a parent whose children are all final
/// (`finals` holds the final nodes of the levels below).
fn is_final(node: &TocNode, finals: &BTreeSet<(String, TocNodeId)>) -> bool {
    match node.level {
        TocLevel::Segment => node.version == node.num_events + 1,
        _ => node
            .child_ids
            .iter()
            .all(|child| finals.contains(&(node.project_id.clone(), *child))),
    }
}

/// The grips the bullets of `nodes` cite: what a parent's summary may cite.
fn cited_grips(nodes: &[TocNode]) -> BTreeSet<GripId> {
    nodes
        .iter()
        .flat_map(|node| &node.bullets)
        .flat_map(|bullet| bullet.grip_ids.iter().copied())
        .collect()
}

/// `node` with `summary`'s readable content.
fn summarized(node: TocNode, summary: Summary) -> TocNode {
    TocNode {
        title: summary.title,
        summary: summary.summary,
        bullets: summary.bullets,
        keywords: summary.keywords,
        ..node
    }
}

/// What a `toc_summary` event says: the node, its version, the summary.
fn parse_model_summary(event: &Event) -> Result<(TocNodeId, u64, Summary), String> {
    let node_id = event
        .metadata
        .get(TOC_NODE)
        .ok_or_else(|| format!("no {TOC_NODE}"))?;
    let node_id: TocNodeId = node_id
        .parse()
        .map_err(|err| format!("{TOC_NODE} {node_id:?}: {err}"))?;
    let version = event
        .metadata
        .get(TOC_NODE_VERSION)
        .and_then(|version| version.parse::<u64>().ok())
        .ok_or_else(|| format!("no numeric {TOC_NODE_VERSION}"))?;
    let summary: Summary =
        serde_json::from_str(&event.text).map_err(|err| format!("text: {err}"))?;
    Ok((node_id, version, summary))
}

fn decode_node(bytes: &[u8]) -> Result<TocNode, ConsumerError> {
    Ok(codec::decode("toc node", RECORD_VERSION, bytes)?)
}

impl RollupBuilder {
    /// Opens the builder's keyspaces.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store, config: RollupConfig, timezone: Tz) -> Result<Self, ConsumerError> {
        Ok(RollupBuilder {
            config,
            timezone,
            provisional: ExtractiveSummarizer::default(),
            nodes: store.projection_keyspace(NODES_KEYSPACE)?,
            children: store.projection_keyspace(CHILDREN_KEYSPACE)?,
            term_df: store.projection_keyspace(TERM_DF_KEYSPACE)?,
            model_summaries: store.projection_keyspace(MODEL_SUMMARIES_KEYSPACE)?,
        })
    }

    /// The final nodes — closed segments, and parents with no open segment under them —
    /// that do not show a model summary of their version (none in the log, or none
    /// that passes the check against the node's grips), segments first, then days,
    /// weeks, months, years, each level oldest first: what a cluster's lease holder
    /// asks the model for, bottom up so that a parent is summarized from its children's
    /// model summaries.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn awaiting_model_summary(store: &Store) -> Result<Vec<TocNode>, ConsumerError> {
        let keyspace = store.projection_keyspace(MODEL_SUMMARIES_KEYSPACE)?;
        let any_stored = !keyspace.is_empty().map_err(StoreError::from)?;
        let nodes = Self::all_nodes(store)?;
        let mut finals = BTreeSet::new();
        let mut awaiting = Vec::new();
        for level in [
            TocLevel::Segment,
            TocLevel::Day,
            TocLevel::Week,
            TocLevel::Month,
            TocLevel::Year,
        ] {
            let mut at_level: Vec<&TocNode> = nodes
                .values()
                .filter(|node| node.level == level && is_final(node, &finals))
                .collect();
            at_level.sort_by_key(|node| (node.start_ms, node.node_id));
            for node in at_level {
                finals.insert((node.project_id.clone(), node.node_id));
                let prefix = model_summary_prefix(&node.project_id, &node.node_id, node.version);
                let candidates = stored_candidates(&keyspace, &prefix)?;
                let shown = any_stored && {
                    let grips = if node.level == TocLevel::Segment {
                        Self::summary_grips(store, node)?
                    } else {
                        let children: Vec<TocNode> = node
                            .child_ids
                            .iter()
                            .filter_map(|child| {
                                nodes.get(&(node.project_id.clone(), *child)).cloned()
                            })
                            .collect();
                        cited_grips(&children)
                    };
                    let candidates_of = |node_id: &TocNodeId| {
                        stored_candidates(
                            &keyspace,
                            &model_summary_prefix(&node.project_id, node_id, node.version),
                        )
                    };
                    shown_summary(store, node, candidates, &candidates_of, &grips, true)?.is_some()
                };
                if !shown {
                    awaiting.push(node.clone());
                }
            }
        }
        Ok(awaiting)
    }

    /// The grips a summary of `node` may cite: a segment's own grips, or those its
    /// stored children's bullets cite.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn summary_grips(store: &Store, node: &TocNode) -> Result<BTreeSet<GripId>, ConsumerError> {
        if node.level == TocLevel::Segment {
            return Ok(
                GripExtractor::segment_grips(store, &node.node_id.to_string())?
                    .iter()
                    .map(|grip| grip.grip_id)
                    .collect(),
            );
        }
        let mut children = Vec::with_capacity(node.child_ids.len());
        for child_id in &node.child_ids {
            if let Some(child) = Self::node(store, &node.project_id, child_id)? {
                children.push(child);
            }
        }
        Ok(cited_grips(&children))
    }

    /// `summarizer`'s summary of `node` as stored: a segment from its events and grips
    /// (no corpus statistics), a parent from its stored children.
    ///
    /// # Errors
    /// Store failures, a segment no longer stored, or the summarizer's failure
    /// ([`ConsumerError::Transient`]).
    pub fn summarize_node(
        store: &Store,
        node: &TocNode,
        summarizer: &dyn Summarizer,
    ) -> Result<Summary, ConsumerError> {
        let failed =
            |err: memory_summarize::SummarizeError| ConsumerError::Transient(err.to_string());
        if node.level == TocLevel::Segment {
            let segment_id = node.node_id.to_string();
            let segment = Segmenter::segment(store, &segment_id)?.ok_or_else(|| {
                ConsumerError::BadInput(format!("segment {segment_id} is not stored"))
            })?;
            let grips = GripExtractor::segment_grips(store, &segment_id)?;
            // A guard (ids hash the project since TOC format 2): another project's
            // record under this id lends this node none of its events.
            let mut events = load_events(store, &segment.events)?;
            events.retain(|event| event.project_id == node.project_id);
            let sources = summary_events(&events);
            let no_corpus = |_: &str| 0;
            let input = SegmentInput {
                segment_id: &node.node_id,
                project_id: &node.project_id,
                session_id: &segment.session_id,
                events: &sources,
                grips: &grips,
                corpus_document_frequency: &no_corpus,
                num_corpus_documents: 0,
            };
            return summarizer.summarize_segment(&input).map_err(failed);
        }
        let mut children = Vec::with_capacity(node.child_ids.len());
        for child_id in &node.child_ids {
            if let Some(child) = Self::node(store, &node.project_id, child_id)? {
                children.push(child);
            }
        }
        let input = ParentInput {
            node_id: &node.node_id,
            project_id: &node.project_id,
            children: &children,
        };
        summarizer.summarize_parent(&input).map_err(failed)
    }

    /// Keeps again every model summary the log holds up to `start` (a reset restarts
    /// the builder at the head, past them), under their log positions as when they are
    /// applied. They are all in [`TOC_SUMMARY_SESSION`], so only they are read.
    fn restore_model_summaries(
        &self,
        store: &Store,
        start: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let mut found = Vec::new();
        for project_id in store.status()?.events_by_project.keys() {
            for item in store.scan_events(project_id, Some(TOC_SUMMARY_SESSION), None, None) {
                let (seq, event) = item?;
                if seq <= start && event.kind == EventKind::TocSummary {
                    found.push((seq, event));
                }
            }
        }
        found.sort_by_key(|(seq, _)| *seq);
        let mut batch = store.projection_batch();
        for (seq, event) in &found {
            let Ok((node_id, version, summary)) = parse_model_summary(event) else {
                continue;
            };
            if let Ok(bytes) = codec::encode("toc model summary", RECORD_VERSION, &summary) {
                let key = model_summary_key(&event.project_id, &node_id, version, *seq);
                batch.insert(&self.model_summaries, &key, bytes);
            }
        }
        store.commit_projection(batch)?;
        Ok(())
    }

    /// `node` with the first of the log's model summaries of its version that keeps
    /// the bounds and cites only `grips` in place of its own; `node` as it is when none
    /// does.
    fn with_model_summary(
        &self,
        work: &RollupWork<'_>,
        node: TocNode,
        grips: &BTreeSet<GripId>,
    ) -> Result<TocNode, ConsumerError> {
        let prefix = model_summary_prefix(&node.project_id, &node.node_id, node.version);
        let candidates = work.model_summaries(self, &prefix)?;
        let any_stored = !work.model_summaries.is_empty()
            || !self.model_summaries.is_empty().map_err(StoreError::from)?;
        let candidates_of = |node_id: &TocNodeId| {
            work.model_summaries(
                self,
                &model_summary_prefix(&node.project_id, node_id, node.version),
            )
        };
        match shown_summary(
            work.store,
            &node,
            candidates,
            &candidates_of,
            grips,
            any_stored,
        )? {
            Some(summary) => Ok(summarized(node, summary)),
            None => Ok(node),
        }
    }

    /// The closed segment of `project_id` whose format-1 id is `legacy_id`, if any: a
    /// segment of the same day whose id has the same time part (the first event's).
    fn node_of_legacy_segment(
        &self,
        work: &RollupWork<'_>,
        project_id: &str,
        legacy_id: &TocNodeId,
    ) -> Result<Option<TocNode>, ConsumerError> {
        let TocNodeId::Segment { day, ulid } = *legacy_id else {
            return Ok(None);
        };
        for child in work.children_of(self, project_id, &TocNodeId::Day(day))? {
            let TocNodeId::Segment {
                ulid: child_ulid, ..
            } = child.node_id
            else {
                continue;
            };
            if child_ulid.timestamp_ms() == ulid.timestamp_ms()
                && legacy_ids::legacy_segment_id(work.store, &child)? == Some(*legacy_id)
            {
                return Ok(Some(child));
            }
        }
        Ok(None)
    }

    /// Keeps a `toc_summary` from the log (at `seq`) beside any earlier one of the same
    /// node version and, when its node is at that version, writes the node with the
    /// first of them that passes the check (this one, unless an earlier one does).
    /// Whatever is wrong with it is logged and counted, never an error: the log is not
    /// ours to refuse.
    fn apply_model_summary(
        &self,
        work: &mut RollupWork<'_>,
        seq: OutboxSeq,
        event: &Event,
    ) -> Result<(), ConsumerError> {
        let outcome = |label: &str| {
            TOC_METRICS
                .model_summaries
                .with_label_values(&[label])
                .inc();
        };
        let parsed = if event.session_id == TOC_SUMMARY_SESSION {
            parse_model_summary(event)
        } else {
            Err(format!(
                "written to session {:?}, not {TOC_SUMMARY_SESSION}",
                event.session_id
            ))
        };
        let (node_id, version, summary) = match parsed {
            Ok(parsed) => parsed,
            Err(reason) => {
                warn!(event_id = %event.event_id, %reason, "a toc_summary that is not one; ignored");
                outcome("malformed");
                return Ok(());
            }
        };
        let key = model_summary_key(&event.project_id, &node_id, version, seq);
        match codec::encode("toc model summary", RECORD_VERSION, &summary) {
            Ok(bytes) => work.batch.insert(&self.model_summaries, &key, bytes),
            Err(err) => {
                warn!(event_id = %event.event_id, error = %err, "a toc_summary not encodable; ignored");
                outcome("malformed");
                return Ok(());
            }
        }
        work.model_summaries
            .entry(model_summary_prefix(&event.project_id, &node_id, version))
            .or_default()
            .push(summary.clone());
        let current = match work.node(self, &node_key(&event.project_id, &node_id))? {
            Some(node) => Some(node),
            // A summary written under TOC format 1 names a segment by its format-1 id.
            None => self.node_of_legacy_segment(work, &event.project_id, &node_id)?,
        };
        let Some(node) = current.filter(|node| node.version == version) else {
            outcome("waiting");
            return Ok(());
        };
        let grips = if node.level == TocLevel::Segment {
            if node.version != node.num_events + 1 {
                // Open: the closed node picks it up.
                outcome("waiting");
                return Ok(());
            }
            GripExtractor::segment_grips(work.store, &node.node_id.to_string())?
                .iter()
                .map(|grip| grip.grip_id)
                .collect()
        } else {
            cited_grips(&work.children_of(self, &event.project_id, &node.node_id)?)
        };
        let summary = match check_summary(&summary, &grips) {
            Ok(()) => summary,
            Err(reason) => {
                // Format-1 grip ids, perhaps: the same summary with them translated.
                let translation =
                    legacy_ids::grip_translation(work.store, &node.project_id, &grips)?;
                let summary = legacy_ids::translated(&summary, &translation);
                if check_summary(&summary, &grips).is_err() {
                    warn!(node_id = %node_id, version, %reason, "a toc_summary out of bounds; the node keeps its summary");
                    outcome("rejected");
                    return Ok(());
                }
                summary
            }
        };
        // The node shows the first summary of its version that passes: an earlier one
        // stays.
        let updated = self.with_model_summary(work, node, &grips)?;
        let shown = updated.title == summary.title
            && updated.summary == summary.summary
            && updated.bullets == summary.bullets
            && updated.keywords == summary.keywords;
        work.write(self, updated);
        outcome(if shown { "applied" } else { "duplicate" });
        Ok(())
    }

    /// One node of a project.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn node(
        store: &Store,
        project_id: &str,
        node_id: &TocNodeId,
    ) -> Result<Option<TocNode>, ConsumerError> {
        let keyspace = store.projection_keyspace(NODES_KEYSPACE)?;
        Ok(codec::get_record(
            &keyspace,
            node_key(project_id, node_id),
            "toc node",
            RECORD_VERSION,
        )?)
    }

    /// A project's nodes of one level in chronological order, optionally only those
    /// whose id lies in `[from, to]` (same level).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn nodes_at_level(
        store: &Store,
        project_id: &str,
        level: TocLevel,
    ) -> Result<Vec<TocNode>, ConsumerError> {
        let keyspace = store.projection_keyspace(NODES_KEYSPACE)?;
        let prefix = project_scoped_key(project_id, &format!("toc:{}:", level.as_str()));
        let mut nodes = Vec::new();
        for guard in keyspace.prefix(prefix) {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            nodes.push(decode_node(&value)?);
        }
        nodes.sort_by_key(|node| node.node_id);
        Ok(nodes)
    }

    /// The projects that have a TOC, sorted.
    ///
    /// # Errors
    /// Store failures.
    pub fn projects(store: &Store) -> Result<Vec<String>, ConsumerError> {
        let keyspace = store.projection_keyspace(NODES_KEYSPACE)?;
        let mut projects = BTreeSet::new();
        for guard in keyspace.prefix(b"") {
            let key = guard.key().map_err(StoreError::from)?;
            if let Some(end) = key.iter().position(|byte| *byte == 0) {
                projects.insert(String::from_utf8_lossy(&key[..end]).into_owned());
            }
        }
        Ok(projects.into_iter().collect())
    }

    /// Every node of every project, keyed by project and node id (tests and rebuild
    /// checks).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn all_nodes(
        store: &Store,
    ) -> Result<BTreeMap<(String, TocNodeId), TocNode>, ConsumerError> {
        let keyspace = store.projection_keyspace(NODES_KEYSPACE)?;
        let mut nodes = BTreeMap::new();
        for guard in keyspace.iter() {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            let node = decode_node(&value)?;
            nodes.insert((node.project_id.clone(), node.node_id), node);
        }
        Ok(nodes)
    }

    fn apply_closed_segment(
        &self,
        work: &mut RollupWork<'_>,
        df: &mut DocumentFrequency<'_>,
        segment_id: &str,
    ) -> Result<(), ConsumerError> {
        let segment = Segmenter::segment(work.store, segment_id)?.ok_or_else(|| {
            ConsumerError::BadInput(format!("segment {segment_id} announced but not stored"))
        })?;
        let node_id = parse_node_id(segment_id)?;
        let grips = GripExtractor::segment_grips(work.store, segment_id)?;
        let events = load_events(work.store, &segment.events)?;
        let corpus = df.counts(
            &segment.project_id,
            &segment_stems(events.iter().map(|event| event.text.as_str())),
        )?;
        let frequency = |term: &str| corpus.frequency(term);
        let sources = summary_events(&events);
        let input = SegmentInput {
            segment_id: &node_id,
            project_id: &segment.project_id,
            session_id: &segment.session_id,
            events: &sources,
            grips: &grips,
            corpus_document_frequency: &frequency,
            num_corpus_documents: corpus.num_documents,
        };
        let summary = self
            .config
            .summarizer
            .summarize_segment(&input)
            .map_err(|err| ConsumerError::Transient(err.to_string()))?;
        df.add_document(&mut work.batch, corpus)?;
        let node = segment_node(
            node_id,
            &segment.project_id,
            summary,
            (segment.start_ms, segment.end_ms),
            events.len(),
            true,
        );
        let held = grips.iter().map(|grip| grip.grip_id).collect();
        let node = self.with_model_summary(work, node, &held)?;
        work.write(self, node);
        Ok(())
    }

    fn apply_open_segment(
        &self,
        work: &mut RollupWork<'_>,
        project_id: &str,
        session_id: &str,
    ) -> Result<(), ConsumerError> {
        let Some(open) =
            Segmenter::open_segment(work.store, self.timezone, project_id, session_id)?
        else {
            return Ok(());
        };
        // A segment that closed meanwhile gets its final node from `grips_extracted`
        // (this project's only, a guard: ids hash the project since TOC format 2).
        if Segmenter::segment(work.store, &open.segment_id)?
            .is_some_and(|closed| closed.project_id == open.project_id)
        {
            return Ok(());
        }
        let node_id = parse_node_id(&open.segment_id)?;
        let events = load_events(work.store, &open.events)?;
        let sources = summary_events(&events);
        let no_corpus = |_: &str| 0;
        let input = SegmentInput {
            segment_id: &node_id,
            project_id,
            session_id,
            events: &sources,
            grips: &[],
            corpus_document_frequency: &no_corpus,
            num_corpus_documents: 0,
        };
        let summary = self
            .provisional
            .summarize_segment(&input)
            .map_err(|err| ConsumerError::Transient(err.to_string()))?;
        let node = segment_node(
            node_id,
            project_id,
            summary,
            (open.start_ms, open.end_ms),
            events.len(),
            false,
        );
        work.write(self, node);
        Ok(())
    }

    /// Rewrites every dirty parent from its children, days first, so each level sees
    /// its children's new versions.
    fn refresh_parents(&self, work: &mut RollupWork<'_>) -> Result<(), ConsumerError> {
        for level in [
            TocLevel::Day,
            TocLevel::Week,
            TocLevel::Month,
            TocLevel::Year,
        ] {
            let dirty: Vec<(String, TocNodeId)> = work
                .dirty
                .iter()
                .filter(|(_, node_id)| node_id.level() == level)
                .cloned()
                .collect();
            for (project_id, node_id) in dirty {
                work.dirty.remove(&(project_id.clone(), node_id));
                let children = work.children_of(self, &project_id, &node_id)?;
                if children.is_empty() {
                    continue;
                }
                let input = ParentInput {
                    node_id: &node_id,
                    project_id: &project_id,
                    children: &children,
                };
                let summary = match self.config.summarizer.summarize_parent(&input) {
                    Ok(summary) => summary,
                    Err(err) => {
                        warn!(node_id = %node_id, error = %err, "parent summary failed; using extractive");
                        self.provisional
                            .summarize_parent(&input)
                            .map_err(|err| ConsumerError::Transient(err.to_string()))?
                    }
                };
                let node = TocNode {
                    node_id,
                    project_id: project_id.clone(),
                    level,
                    title: summary.title,
                    summary: summary.summary,
                    bullets: summary.bullets,
                    keywords: summary.keywords,
                    start_ms: children.iter().map(|c| c.start_ms).min().unwrap_or(0),
                    end_ms: children.iter().map(|c| c.end_ms).max().unwrap_or(0),
                    child_ids: children.iter().map(|c| c.node_id).collect(),
                    num_events: children.iter().map(|c| c.num_events).sum(),
                    version: node_version(level, 0, false, &children),
                };
                let node = self.with_model_summary(work, node, &cited_grips(&children))?;
                work.write(self, node);
            }
        }
        Ok(())
    }
}

/// One batch's writes, with what they changed visible to the rest of the batch.
struct RollupWork<'a> {
    store: &'a Store,
    batch: ProjectionBatch,
    /// Nodes written in this batch, by key.
    written: HashMap<Vec<u8>, TocNode>,
    /// Membership entries added in this batch.
    new_children: BTreeSet<Vec<u8>>,
    /// Parents to rewrite at the end of the batch.
    dirty: BTreeSet<(String, TocNodeId)>,
    /// Model summaries kept in this batch, by node version (prefix), in log order.
    model_summaries: HashMap<Vec<u8>, Vec<Summary>>,
}

impl RollupWork<'_> {
    /// A node version's model summaries, stored and kept in this batch, in log order.
    fn model_summaries(
        &self,
        builder: &RollupBuilder,
        prefix: &[u8],
    ) -> Result<Vec<Summary>, ConsumerError> {
        let mut found = stored_candidates(&builder.model_summaries, prefix)?;
        if let Some(pending) = self.model_summaries.get(prefix) {
            found.extend(pending.iter().cloned());
        }
        Ok(found)
    }

    fn node(&self, builder: &RollupBuilder, key: &[u8]) -> Result<Option<TocNode>, ConsumerError> {
        if let Some(node) = self.written.get(key) {
            return Ok(Some(node.clone()));
        }
        match builder.nodes.get(key).map_err(StoreError::from)? {
            Some(bytes) => Ok(Some(decode_node(&bytes)?)),
            None => Ok(None),
        }
    }

    /// Stores `node` unless it is unchanged, files it under its parent and marks the
    /// parent for a refresh.
    fn write(&mut self, builder: &RollupBuilder, node: TocNode) {
        let key = node_key(&node.project_id, &node.node_id);
        if let Some(parent) = node.node_id.parent() {
            let membership = child_key(&node.project_id, &parent, &node.node_id);
            if !self.new_children.contains(&membership) {
                self.batch.insert(&builder.children, &membership, []);
                self.new_children.insert(membership);
            }
            self.dirty.insert((node.project_id.clone(), parent));
        }
        let unchanged = matches!(self.node(builder, &key), Ok(Some(stored)) if stored == node);
        if unchanged {
            return;
        }
        match codec::encode("toc node", RECORD_VERSION, &node) {
            Ok(bytes) => self.batch.insert(&builder.nodes, &key, bytes),
            Err(err) => {
                warn!(node_id = %node.node_id, error = %err, "toc node not encodable; skipped");
                return;
            }
        }
        self.batch.append_derived(DerivedEntry {
            kind: TOC_NODE_WRITTEN.into(),
            project_id: node.project_id.clone(),
            key: node.node_id.to_string(),
        });
        debug!(node_id = %node.node_id, version = node.version, "toc node written");
        self.written.insert(key, node);
    }

    /// The stored children of a parent (plus those filed in this batch), loaded and in
    /// chronological order.
    fn children_of(
        &self,
        builder: &RollupBuilder,
        project_id: &str,
        parent: &TocNodeId,
    ) -> Result<Vec<TocNode>, ConsumerError> {
        let prefix = children_prefix(project_id, parent);
        let mut child_ids = BTreeSet::new();
        for guard in builder.children.prefix(&prefix) {
            let key = guard.key().map_err(StoreError::from)?;
            child_ids.insert(key.to_vec());
        }
        child_ids.extend(
            self.new_children
                .range(prefix.clone()..)
                .take_while(|key| key.starts_with(&prefix))
                .cloned(),
        );
        let mut children = Vec::with_capacity(child_ids.len());
        for membership in child_ids {
            let child_text = String::from_utf8_lossy(&membership[prefix.len()..]).into_owned();
            let child_id = parse_node_id(&child_text)?;
            if let Some(child) = self.node(builder, &node_key(project_id, &child_id))? {
                children.push(child);
            }
        }
        children.sort_by_key(|child| child.node_id);
        Ok(children)
    }
}

fn parse_node_id(text: &str) -> Result<TocNodeId, ConsumerError> {
    text.parse()
        .map_err(|err| ConsumerError::Internal(format!("node id {text:?}: {err}")))
}

fn load_events(store: &Store, events: &[SegmentEvent]) -> Result<Vec<Event>, ConsumerError> {
    let mut loaded = Vec::with_capacity(events.len());
    for segment_event in events {
        if let Some(event) = store.event(OutboxSeq(segment_event.seq))? {
            loaded.push(event);
        }
    }
    Ok(loaded)
}

/// The events as the summarizer sees them. A tool call is the assistant's, but its text
/// is a machine-written invocation (`edit_file: src/auth/refresh.ts: …`), not something
/// said: it is passed as `tool` text, so it counts for keywords but does not headline
/// a segment over what the people in it said.
fn summary_events(events: &[Event]) -> Vec<SummaryEvent<'_>> {
    events
        .iter()
        .map(|event| SummaryEvent {
            event_id: &event.event_id,
            timestamp_ms: event.timestamp_ms,
            role: if event.kind == EventKind::ToolCall {
                Role::Tool.as_str()
            } else {
                event.role.as_str()
            },
            text: &event.text,
        })
        .collect()
}

fn segment_node(
    node_id: TocNodeId,
    project_id: &str,
    summary: Summary,
    (start_ms, end_ms): (u64, u64),
    num_events: usize,
    closed: bool,
) -> TocNode {
    let num_events = num_events as u64;
    TocNode {
        node_id,
        project_id: project_id.to_string(),
        level: TocLevel::Segment,
        title: summary.title,
        summary: summary.summary,
        bullets: summary.bullets,
        keywords: summary.keywords,
        start_ms,
        end_ms,
        child_ids: Vec::new(),
        num_events,
        version: node_version(TocLevel::Segment, num_events, closed, &[]),
    }
}

impl OutboxConsumer for RollupBuilder {
    fn name(&self) -> &str {
        ROLLUP_BUILDER
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let mut work = RollupWork {
            store,
            batch: store.projection_batch(),
            written: HashMap::new(),
            new_children: BTreeSet::new(),
            dirty: BTreeSet::new(),
            model_summaries: HashMap::new(),
        };
        let mut df = DocumentFrequency::new(&self.term_df);
        for item in items {
            let entry = match item {
                FeedItem::Derived { entry, .. } => entry,
                FeedItem::Event { seq, event } if event.kind == EventKind::TocSummary => {
                    self.apply_model_summary(&mut work, *seq, event)?;
                    continue;
                }
                _ => continue,
            };
            match entry.kind.as_str() {
                GRIPS_EXTRACTED => self.apply_closed_segment(&mut work, &mut df, &entry.key)?,
                SEGMENT_OPEN => {
                    self.apply_open_segment(&mut work, &entry.project_id, &entry.key)?
                }
                _ => {}
            }
        }
        self.refresh_parents(&mut work)?;
        let mut batch = work.batch;
        batch.set_cursor(ROLLUP_BUILDER, up_to);
        store.commit_projection(batch)?;
        Ok(())
    }

    /// Deletes the tree and keeps the log's model summaries again, then announces
    /// [`TOC_CLEARED`] with the new cursor, so the indexes drop the documents of nodes
    /// and grips the replay may not write again.
    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.nodes.clear().map_err(StoreError::from)?;
        self.children.clear().map_err(StoreError::from)?;
        self.term_df.clear().map_err(StoreError::from)?;
        self.model_summaries.clear().map_err(StoreError::from)?;
        self.restore_model_summaries(store, start)?;
        let mut batch = store.projection_batch();
        batch.append_derived(toc_cleared());
        batch.set_cursor(ROLLUP_BUILDER, start);
        store.commit_projection(batch)?;
        Ok(())
    }
}

/// The TOC format the store's TOC was built with: `None` when none was recorded (a
/// store from before formats were recorded, which is format 1, or a new one).
///
/// # Errors
/// Store or decoding failures.
pub fn toc_format(store: &Store) -> Result<Option<u64>, ConsumerError> {
    let keyspace = store.projection_keyspace(TOC_FORMAT_KEYSPACE)?;
    match keyspace.get(TOC_FORMAT_KEY).map_err(StoreError::from)? {
        Some(bytes) => Ok(Some(codec::decode(
            "toc format",
            TOC_FORMAT_RECORD_VERSION,
            &bytes,
        )?)),
        None => Ok(None),
    }
}

/// The entry that tells the indexes the TOC was cleared.
fn toc_cleared() -> DerivedEntry {
    DerivedEntry {
        kind: TOC_CLEARED.to_owned(),
        project_id: String::new(),
        key: String::new(),
    }
}

/// Records that the TOC is of [`TOC_FORMAT_VERSION`]: written when a new store starts,
/// or once the resets of an upgrade's rebuild are done (the replay that follows resumes
/// from its cursors after a crash; a crash before this write repeats the resets).
///
/// # Errors
/// Store failures.
pub fn mark_toc_format(store: &Store) -> Result<(), ConsumerError> {
    commit_toc_format(store, false)
}

/// Marks an unbuilt TOC ([`toc_is_unbuilt`]) that recorded no current format as of
/// [`TOC_FORMAT_VERSION`]. When the log already holds something, the same batch
/// announces [`TOC_CLEARED`]: such a TOC was reset by an older build that stopped
/// before replaying (or never ran), and the indexes may still hold that build's node and
/// grip documents under the old ids, which no replay would delete. A new store (an
/// empty log) gets the marker alone. Returns whether it announced.
///
/// # Errors
/// Store failures.
pub fn mark_unbuilt_toc_format(store: &Store) -> Result<bool, ConsumerError> {
    let announce = store.head() != OutboxSeq::ZERO;
    commit_toc_format(store, announce)?;
    Ok(announce)
}

/// Writes the TOC format record, with a [`TOC_CLEARED`] entry in the same batch when
/// `announce_cleared`.
fn commit_toc_format(store: &Store, announce_cleared: bool) -> Result<(), ConsumerError> {
    let keyspace = store.projection_keyspace(TOC_FORMAT_KEYSPACE)?;
    let mut batch = store.projection_batch();
    if announce_cleared {
        batch.append_derived(toc_cleared());
    }
    batch.insert(
        &keyspace,
        TOC_FORMAT_KEY,
        codec::encode("toc format", TOC_FORMAT_RECORD_VERSION, &TOC_FORMAT_VERSION)?,
    );
    store.commit_projection(batch)?;
    Ok(())
}

/// Whether the segmenter has built nothing yet: cursor at the start, no segment open or
/// closed. Such a TOC has no ids of any format, so it needs no rebuild to be marked
/// current (a new store, or an upgrade whose resets were all done before a crash).
///
/// # Errors
/// Store failures.
pub fn toc_is_unbuilt(store: &Store) -> Result<bool, ConsumerError> {
    if store.cursor(crate::segmenter::SEGMENTER)? != OutboxSeq::ZERO {
        return Ok(false);
    }
    Segmenter::holds_nothing(store)
}

/// The grips a node's bullets cite, loaded (missing ones, and any of another project —
/// a guard, since grip ids hash the project — skipped).
///
/// # Errors
/// Store or decoding failures.
pub fn bullet_grips(store: &Store, node: &TocNode) -> Result<Vec<Grip>, ConsumerError> {
    let mut grips = Vec::new();
    let mut seen = BTreeSet::new();
    for bullet in &node.bullets {
        for grip_id in &bullet.grip_ids {
            if seen.insert(*grip_id)
                && let Some(grip) = GripExtractor::grip(store, grip_id)?
                && grip.project_id == node.project_id
            {
                grips.push(grip);
            }
        }
    }
    Ok(grips)
}

#[cfg(test)]
#[path = "rollup_model_summary_tests.rs"]
mod model_summary_tests;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use memory_store::StoreOptions;

    use super::*;
    use crate::segmenter::SegmenterConfig;
    use crate::testsuite::{TocProjections, event, sample_events};

    fn start(dir: &std::path::Path, timezone: Tz) -> (Store, TocProjections) {
        let store = Store::open(dir, &StoreOptions::default()).expect("store");
        let segmenter = SegmenterConfig {
            timezone,
            ..SegmenterConfig::default()
        };
        let toc = TocProjections::open_with(&store, segmenter).expect("open");
        (store, toc)
    }

    fn append_and_apply(store: &Store, toc: &mut TocProjections, events: &[Event]) {
        store.append_events(events).expect("append");
        toc.catch_up(store, &mut []).expect("apply");
    }

    /// Checks the links and counts of every node of the tree; returns the segments.
    fn check_tree(nodes: &BTreeMap<(String, TocNodeId), TocNode>) -> usize {
        let mut num_segments = 0;
        for ((project, node_id), node) in nodes {
            assert_eq!(node.level, node_id.level());
            assert!(!node.title.is_empty(), "{node_id} has a title");
            assert!(node.start_ms <= node.end_ms);
            if let Some(parent_id) = node_id.parent() {
                let parent = nodes
                    .get(&(project.clone(), parent_id))
                    .unwrap_or_else(|| panic!("{node_id}'s parent {parent_id} is written"));
                assert!(
                    parent.child_ids.contains(node_id),
                    "{parent_id} lists {node_id}"
                );
                assert!(parent.start_ms <= node.start_ms && node.end_ms <= parent.end_ms);
            }
            if node.level == TocLevel::Segment {
                num_segments += 1;
                assert!(node.child_ids.is_empty());
                continue;
            }
            let children: Vec<&TocNode> = node
                .child_ids
                .iter()
                .map(|child| &nodes[&(project.clone(), *child)])
                .collect();
            assert!(!children.is_empty(), "{node_id} has children");
            assert_eq!(
                node.num_events,
                children.iter().map(|c| c.num_events).sum::<u64>(),
                "{node_id} counts its children's events"
            );
            assert_eq!(
                node.version,
                children.iter().map(|c| c.version).sum::<u64>()
            );
            assert!(
                node.child_ids.windows(2).all(|w| w[0] < w[1]),
                "chronological"
            );
        }
        num_segments
    }

    #[test]
    fn the_sample_becomes_a_consistent_tree_that_a_rebuild_reproduces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, mut toc) = start(dir.path(), Tz::UTC);
        let events = sample_events();
        let num_events = events.len() as u64;
        append_and_apply(&store, &mut toc, &events);

        let nodes = RollupBuilder::all_nodes(&store).expect("nodes");
        let num_segments = check_tree(&nodes);
        assert!(num_segments >= 15, "segments: {num_segments}");
        let years_events: u64 = nodes
            .values()
            .filter(|node| node.level == TocLevel::Year)
            .map(|node| node.num_events)
            .sum();
        assert_eq!(
            years_events, num_events,
            "every event is under a year, once"
        );
        assert_eq!(
            RollupBuilder::projects(&store).expect("projects"),
            ["ingest-pipeline", "webapp"]
        );
        // The JWT expiry decision is reachable from the TOC: some segment's bullet
        // cites the grip holding it.
        let decision = nodes.values().any(|node| {
            node.level == TocLevel::Segment
                && node
                    .bullets
                    .iter()
                    .any(|bullet| bullet.text.contains("15 minutes") && !bullet.grip_ids.is_empty())
        });
        assert!(decision, "a bullet cites the JWT expiry decision");
        toc.rebuild(&store).expect("rebuild");
        let rebuilt = RollupBuilder::all_nodes(&store).expect("nodes");
        assert_eq!(rebuilt.len(), nodes.len());
        for (key, node) in &nodes {
            assert_eq!(
                rebuilt.get(key),
                Some(node),
                "{} differs after rebuild",
                key.1
            );
        }
    }

    #[test]
    fn days_weeks_and_months_follow_the_time_zone_and_iso_weeks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tz: Tz = "America/Los_Angeles".parse().expect("zone");
        let (store, mut toc) = start(dir.path(), tz);
        // 2026-01-01T03:00Z is still 31 December 2025 in Los Angeles. That Wednesday is in
        // ISO week 2026-W01, whose Thursday (1 January) files it under January 2026.
        let ts = 1_767_236_400_000;
        append_and_apply(
            &store,
            &mut toc,
            &[
                event(
                    "a1",
                    "s",
                    ts,
                    EventKind::UserMessage,
                    "Rotate the JWT signing key tonight?",
                ),
                event(
                    "a2",
                    "s",
                    ts + 60_000,
                    EventKind::AssistantMessage,
                    "Rotated the signing key.",
                ),
                event("a3", "s", ts + 120_000, EventKind::SessionEnd, ""),
            ],
        );
        let nodes = RollupBuilder::all_nodes(&store).expect("nodes");
        check_tree(&nodes);
        let ids: Vec<String> = nodes
            .keys()
            .filter(|(_, id)| id.level() != TocLevel::Segment)
            .map(|(_, id)| id.to_string())
            .collect();
        assert_eq!(
            ids,
            [
                "toc:year:2026",
                "toc:month:2026-01",
                "toc:week:2026-W01",
                "toc:day:2025-12-31"
            ]
        );
    }

    #[test]
    fn a_session_still_going_is_in_the_tree_before_its_segment_closes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, mut toc) = start(dir.path(), Tz::UTC);
        let ts = 1_769_764_500_000; // 2026-01-30T09:15:00Z
        let day: TocNodeId = "toc:day:2026-01-30".parse().expect("id");
        append_and_apply(
            &store,
            &mut toc,
            &[
                event(
                    "l1",
                    "live",
                    ts,
                    EventKind::UserMessage,
                    "Why does the tantivy merge stall?",
                ),
                event(
                    "l2",
                    "live",
                    ts + 1_000,
                    EventKind::AssistantMessage,
                    "The merge policy waits on the writer lock.",
                ),
            ],
        );
        let provisional = RollupBuilder::node(&store, "p", &day)
            .expect("read")
            .expect("day written");
        assert_eq!(provisional.num_events, 2);
        let segment_id = provisional.child_ids[0];
        let segment = RollupBuilder::node(&store, "p", &segment_id)
            .expect("read")
            .expect("segment");
        assert_eq!(
            segment.version, 2,
            "an open segment: its events, not yet closed"
        );
        assert!(
            segment.keywords.iter().any(|k| k == "tantivy"),
            "{:?}",
            segment.keywords
        );

        append_and_apply(
            &store,
            &mut toc,
            &[event("l3", "live", ts + 2_000, EventKind::SessionEnd, "")],
        );
        let closed = RollupBuilder::node(&store, "p", &segment_id)
            .expect("read")
            .expect("segment");
        assert_eq!(
            (closed.num_events, closed.version),
            (3, 4),
            "closed: same id, final node"
        );
        let day_node = RollupBuilder::node(&store, "p", &day)
            .expect("read")
            .expect("day");
        assert_eq!((day_node.num_events, day_node.child_ids.len()), (3, 1));
    }

    /// An unbuilt TOC is marked current; the indexes are told to drop TOC documents
    /// only when the log already holds something (an older build's reset TOC may have
    /// left documents under old ids), never for a new store.
    #[test]
    fn an_unbuilt_toc_with_a_log_announces_toc_cleared_once_marked() {
        let cleared = |store: &Store| {
            store
                .read_feed(OutboxSeq::ZERO, usize::MAX)
                .expect("feed")
                .iter()
                .filter(|item| matches!(item, FeedItem::Derived { entry, .. } if entry.kind == TOC_CLEARED))
                .count()
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        assert!(toc_is_unbuilt(&store).expect("unbuilt"));
        assert!(!mark_unbuilt_toc_format(&store).expect("mark"));
        assert_eq!(
            toc_format(&store).expect("format"),
            Some(TOC_FORMAT_VERSION)
        );
        assert_eq!(cleared(&store), 0);

        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        store
            .append_events(&[event("e1", "s1", 1_000, EventKind::UserMessage, "hello")])
            .expect("append");
        assert!(toc_is_unbuilt(&store).expect("unbuilt"));
        assert!(mark_unbuilt_toc_format(&store).expect("mark"));
        assert_eq!(
            toc_format(&store).expect("format"),
            Some(TOC_FORMAT_VERSION)
        );
        assert_eq!(cleared(&store), 1);
    }

    /// The TOC format record as it is on disk: keyspace `proj_toc_format`, key
    /// `format`, a record version byte (1) and the format as a postcard varint. Older
    /// and newer builds read this record: it must not change shape.
    #[test]
    fn the_toc_format_record_is_pinned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        mark_toc_format(&store).expect("mark");
        let keyspace = store.projection_keyspace("toc_format").expect("keyspace");
        let bytes = keyspace.get(b"format").expect("read").expect("record");
        assert_eq!(&bytes[..], &[1, 2][..]);
        for (raw, format) in [([1u8, 1u8], 1u64), ([1, 3], 3)] {
            keyspace.insert(b"format", raw.to_vec()).expect("write");
            assert_eq!(toc_format(&store).expect("format"), Some(format));
        }
    }
}
