//! `Segmenter`: cuts each (project, session) stream of events into segments, the leaves
//! of the time table of contents. Upstream: outbox events. Downstream: the grip
//! extractor and the rollup builder, through `segment_closed` outbox entries.
//!
//! A segment closes when the next event of its session comes more than `gap` after the
//! last one (event time), when it reaches `max_tokens` (text length / 4), on
//! `session_end`, or — for a live stream that simply stops — when no event of the session
//! has arrived for `gap` of wall-clock time. In cluster mode the wall clock is not asked
//! (replicas' clocks and apply times differ): the group's lease holder publishes a
//! `segment_close` event to the log instead ([`Segmenter::idle_segments`] says which),
//! and every replica closes the segment where the log says, if it is still the segment
//! the event names (first event, number of events) and the event's lease tenure is not
//! older than one of the same group this project already applied. The tail of a closed segment (up to
//! `overlap_tokens`) is carried into the next one as context, not as its own events.
//!
//! Open segments are kept in `proj_segmenter_open` and closed ones in `proj_segments`,
//! written with the cursor in one batch, so a crash resumes exactly. Segment ids are
//! derived from the project and the first event (`memory_toc::TocNodeId::segment_for`),
//! so a rebuild from the log produces the same ids and two projects never share one.

use std::collections::BTreeMap;
use std::time::Duration;

use memory_store::{
    DerivedEntry, FeedItem, Keyspace, OutboxSeq, ProjectionBatch, Store, StoreError, codec,
};
use memory_toc::{TocNodeId, Tz, calendar};
use memory_types::{Clock, Event, EventKind};
use serde::{Deserialize, Serialize};

use crate::consumer::{ConsumerError, OutboxConsumer};
use crate::keys::project_scoped_key;

/// The consumer's name: cursor key and metrics label.
pub const SEGMENTER: &str = "segmenter";
/// Outbox entry kind announcing a closed segment; its key is the segment id.
pub const SEGMENT_CLOSED: &str = "segment_closed";
/// Outbox entry kind announcing that a session's open segment gained events; its key is
/// the session id. Lets the rollup builder show today's work before the segment closes.
pub const SEGMENT_OPEN: &str = "segment_open";
const OPEN_KEYSPACE: &str = "segmenter_open";
const SEGMENTS_KEYSPACE: &str = "segments";
/// Per project and lease group, the highest lease `(epoch, tenure)` of a `segment_close`
/// applied (two big-endian u64s).
const FENCE_KEYSPACE: &str = "segmenter_fence";
const RECORD_VERSION: u8 = 1;

/// When segments close.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmenterConfig {
    /// Gap between two events of a session that closes the segment; also the wall-clock
    /// idle time after which a live session's open segment closes. Default 30 minutes.
    pub gap: Duration,
    /// Token estimate (characters / 4) at which a segment closes. Default 4 000.
    pub max_tokens: u64,
    /// Tokens of a closed segment's tail carried into the next as context. Default 400.
    pub overlap_tokens: u64,
    /// Zone whose local date names the segment's day. Default UTC.
    pub timezone: Tz,
    /// Where idle closing reads the wall clock. Default the system clock; tests move a
    /// manual one.
    pub clock: Clock,
    /// Whether idle segments close on this process's wall clock (single mode). Cluster
    /// mode turns it off: idle closes come through the log as `segment_close` events.
    pub idle_close_by_clock: bool,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        SegmenterConfig {
            gap: Duration::from_secs(30 * 60),
            max_tokens: 4_000,
            overlap_tokens: 400,
            timezone: Tz::UTC,
            clock: Clock::system(),
            idle_close_by_clock: true,
        }
    }
}

/// Why a segment closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// The next event came more than `gap` later.
    Gap,
    /// The token estimate reached `max_tokens`.
    Tokens,
    /// The session ended.
    SessionEnd,
    /// No event arrived for `gap` of wall-clock time.
    Idle,
}

/// One event of a segment: its position and what the segmenter needs to know about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEvent {
    /// Outbox position of the event (its key in the log).
    pub seq: u64,
    /// Event time, epoch ms.
    pub timestamp_ms: u64,
    /// The event's token estimate.
    pub tokens: u64,
}

/// A closed segment (record format v1), keyed by its id in `proj_segments`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// `toc:segment:<day>:<ULID>`.
    pub segment_id: String,
    /// The project.
    pub project_id: String,
    /// The session.
    pub session_id: String,
    /// First and last event time, epoch ms.
    pub start_ms: u64,
    /// Last event time, epoch ms.
    pub end_ms: u64,
    /// The segment's own events, in arrival order.
    pub events: Vec<SegmentEvent>,
    /// The previous segment's tail, for context only.
    pub overlap: Vec<SegmentEvent>,
    /// Sum of the own events' token estimates.
    pub token_estimate: u64,
    /// Why it closed.
    pub close_reason: CloseReason,
}

/// The events a session's open segment holds so far, as [`Segmenter::open_segment`]
/// reads it: what a provisional TOC node is written from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenSegmentView {
    /// The id the segment will have when it closes (derived from its first event).
    pub segment_id: String,
    /// The project.
    pub project_id: String,
    /// The session.
    pub session_id: String,
    /// Time of the first own event, epoch ms.
    pub start_ms: u64,
    /// Time of the last own event, epoch ms.
    pub end_ms: u64,
    /// The own events so far, in arrival order.
    pub events: Vec<SegmentEvent>,
}

impl OpenSegmentView {
    fn of(open: OpenSegment, timezone: Tz) -> Option<Self> {
        if open.events.is_empty() {
            return None;
        }
        Some(OpenSegmentView {
            segment_id: open.segment_id(timezone),
            start_ms: open
                .events
                .iter()
                .map(|e| e.timestamp_ms)
                .min()
                .unwrap_or(0),
            end_ms: open.last_timestamp_ms(),
            project_id: open.project_id,
            session_id: open.session_id,
            events: open.events,
        })
    }
}

/// An open segment idle for at least the gap of wall-clock time on this replica: what the
/// lease holder of a cluster group publishes a `segment_close` for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdleSegment {
    /// The project.
    pub project_id: String,
    /// The session.
    pub session_id: String,
    /// Its first own event's id: with `events`, names the segment exactly.
    pub first_event_id: String,
    /// How many own events it holds.
    pub events: u64,
    /// Time of its last event, epoch ms.
    pub last_timestamp_ms: u64,
}

/// A session's open segment (record format v1), keyed by project and session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct OpenSegment {
    project_id: String,
    session_id: String,
    first_event_id: String,
    events: Vec<SegmentEvent>,
    overlap: Vec<SegmentEvent>,
    token_estimate: u64,
    /// Wall-clock time the last event was applied, for idle closing of live streams.
    last_applied_wall_ms: u64,
}

impl OpenSegment {
    /// The segment's id and day: both from the first own event, so the open segment and
    /// the closed one (and a rebuild) name it the same.
    fn segment_id(&self, timezone: Tz) -> String {
        let first_ts = self.events.first().map_or(0, |e| e.timestamp_ms);
        let day = calendar::day_of(first_ts, timezone);
        TocNodeId::segment_for(&self.project_id, day, first_ts, &self.first_event_id).to_string()
    }

    fn last_timestamp_ms(&self) -> u64 {
        self.events
            .iter()
            .map(|e| e.timestamp_ms)
            .max()
            .unwrap_or(0)
    }
}

/// Token estimate of an event's text, the TOC's one rule (characters / 4, at least 1).
fn event_tokens(text: &str) -> u64 {
    memory_text::estimate_tokens(text.chars().count()) as u64
}

/// The consumer.
pub struct Segmenter {
    config: SegmenterConfig,
    open: Keyspace,
    segments: Keyspace,
    fence: Keyspace,
}

impl Segmenter {
    /// Opens the segmenter's keyspaces.
    ///
    /// # Errors
    /// Store failures.
    pub fn open(store: &Store, config: SegmenterConfig) -> Result<Self, ConsumerError> {
        Ok(Segmenter {
            config,
            open: store.projection_keyspace(OPEN_KEYSPACE)?,
            segments: store.projection_keyspace(SEGMENTS_KEYSPACE)?,
            fence: store.projection_keyspace(FENCE_KEYSPACE)?,
        })
    }

    /// The open segments with events of their own to which no event was applied for
    /// `gap` of wall-clock time before `now_ms`, oldest activity first.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn idle_segments(
        store: &Store,
        now_ms: u64,
        gap: Duration,
    ) -> Result<Vec<IdleSegment>, ConsumerError> {
        let gap_ms = u64::try_from(gap.as_millis()).unwrap_or(u64::MAX);
        let keyspace = store.projection_keyspace(OPEN_KEYSPACE)?;
        let mut idle = Vec::new();
        for guard in keyspace.iter() {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            let open: OpenSegment = codec::decode("open segment", RECORD_VERSION, &value)?;
            if open.events.is_empty() || now_ms.saturating_sub(open.last_applied_wall_ms) < gap_ms {
                continue;
            }
            idle.push((
                open.last_applied_wall_ms,
                IdleSegment {
                    last_timestamp_ms: open.last_timestamp_ms(),
                    events: open.events.len() as u64,
                    project_id: open.project_id,
                    session_id: open.session_id,
                    first_event_id: open.first_event_id,
                },
            ));
        }
        idle.sort_by_key(|(at, _)| *at);
        Ok(idle.into_iter().map(|(_, segment)| segment).collect())
    }

    /// Applies a `segment_close` from the log: closes the session's open segment when it
    /// is the one the event names and the event's lease tenure is not older than one of
    /// the same group this project applied already (a stale lease holder's word is
    /// ignored). Tenures of different groups are not compared: their numbers come from
    /// one bucket but mean nothing to each other.
    fn apply_close(
        &self,
        batch: &mut ProjectionBatch,
        touched: &mut BTreeMap<Vec<u8>, Option<OpenSegment>>,
        fences: &mut BTreeMap<Vec<u8>, (u64, u64)>,
        event: &Event,
    ) -> Result<(), ConsumerError> {
        let field = |name: &str| event.metadata.get(name).map(String::as_str);
        let number = |name: &str| field(name).and_then(|n| n.parse::<u64>().ok());
        let (Some(first), Some(events), Some(group), Some(epoch), Some(tenure)) = (
            field(memory_types::SEGMENT_FIRST_EVENT),
            number(memory_types::SEGMENT_EVENTS),
            field(memory_types::LEASE_GROUP),
            number(memory_types::LEASE_EPOCH),
            number(memory_types::LEASE_REVISION),
        ) else {
            tracing::warn!(event_id = %event.event_id, "a segment_close without its fields; ignored");
            return Ok(());
        };
        let fence_key = project_scoped_key(&event.project_id, group);
        let fence = match fences.get(&fence_key) {
            Some(fence) => *fence,
            None => self
                .fence
                .get(&fence_key)
                .map_err(StoreError::from)?
                .and_then(|bytes| <[u8; 16]>::try_from(bytes.as_ref()).ok())
                .map_or((0, 0), |bytes| {
                    let (epoch, tenure) = bytes.split_at(8);
                    (
                        u64::from_be_bytes(epoch.try_into().unwrap_or_default()),
                        u64::from_be_bytes(tenure.try_into().unwrap_or_default()),
                    )
                }),
        };
        if (epoch, tenure) < fence {
            tracing::info!(
                event_id = %event.event_id,
                tenure,
                fence = ?fence,
                "a segment_close from a stale lease holder; ignored"
            );
            return Ok(());
        }
        fences.insert(fence_key.clone(), (epoch, tenure));
        let mut value = epoch.to_be_bytes().to_vec();
        value.extend_from_slice(&tenure.to_be_bytes());
        batch.insert(&self.fence, &fence_key, value);
        let key = project_scoped_key(&event.project_id, &event.session_id);
        let current = match touched.remove(&key) {
            Some(current) => current,
            None => self.load_open(&key)?,
        };
        let next = match current {
            Some(open)
                if !open.events.is_empty()
                    && open.first_event_id == first
                    && open.events.len() as u64 == events =>
            {
                let overlap = self.close(batch, open.clone(), CloseReason::Idle)?;
                Some(OpenSegment {
                    first_event_id: String::new(),
                    events: Vec::new(),
                    overlap,
                    token_estimate: 0,
                    ..open
                })
            }
            // The session moved on (or closed) since the holder looked: nothing to do.
            other => other,
        };
        touched.insert(key, next);
        Ok(())
    }

    /// A closed segment by id.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn segment(store: &Store, segment_id: &str) -> Result<Option<Segment>, ConsumerError> {
        let keyspace = store.projection_keyspace(SEGMENTS_KEYSPACE)?;
        Ok(codec::get_record(
            &keyspace,
            segment_id,
            "segment",
            RECORD_VERSION,
        )?)
    }

    /// The open segment of a session, when it holds events of its own.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn open_segment(
        store: &Store,
        timezone: Tz,
        project_id: &str,
        session_id: &str,
    ) -> Result<Option<OpenSegmentView>, ConsumerError> {
        let keyspace = store.projection_keyspace(OPEN_KEYSPACE)?;
        let open: Option<OpenSegment> = codec::get_record(
            &keyspace,
            project_scoped_key(project_id, session_id),
            "open segment",
            RECORD_VERSION,
        )?;
        Ok(open.and_then(|open| OpenSegmentView::of(open, timezone)))
    }

    /// Every open segment of a project that holds events of its own.
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn open_segments(
        store: &Store,
        timezone: Tz,
        project_id: &str,
    ) -> Result<Vec<OpenSegmentView>, ConsumerError> {
        let keyspace = store.projection_keyspace(OPEN_KEYSPACE)?;
        let mut views = Vec::new();
        for guard in keyspace.prefix(project_scoped_key(project_id, "")) {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            let open: OpenSegment = codec::decode("open segment", RECORD_VERSION, &value)?;
            if let Some(view) = OpenSegmentView::of(open, timezone) {
                views.push(view);
            }
        }
        Ok(views)
    }

    /// Whether the segmenter holds no segment, open or closed.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) fn holds_nothing(store: &Store) -> Result<bool, ConsumerError> {
        for name in [SEGMENTS_KEYSPACE, OPEN_KEYSPACE] {
            let keyspace = store.projection_keyspace(name)?;
            if !keyspace.is_empty().map_err(StoreError::from)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Every closed segment, by id (for tests and rebuild checks).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn all_segments(store: &Store) -> Result<Vec<Segment>, ConsumerError> {
        let keyspace = store.projection_keyspace(SEGMENTS_KEYSPACE)?;
        let mut out = Vec::new();
        for guard in keyspace.iter() {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            out.push(codec::decode("segment", RECORD_VERSION, &value)?);
        }
        Ok(out)
    }

    /// Every open-segment record, including one that holds only the context carried from
    /// the session's last closed segment, as (project, session, `Debug` of the record)
    /// with the wall-clock time of its last apply zeroed: that time is when this
    /// process applied the event, not a function of the log (`admin verify` compares
    /// the rest).
    ///
    /// # Errors
    /// Store or decoding failures.
    pub fn open_records(store: &Store) -> Result<Vec<(String, String, String)>, ConsumerError> {
        let keyspace = store.projection_keyspace(OPEN_KEYSPACE)?;
        let mut records = Vec::new();
        for guard in keyspace.iter() {
            let (_, value) = guard.into_inner().map_err(StoreError::from)?;
            let open: OpenSegment = codec::decode("open segment", RECORD_VERSION, &value)?;
            let open = OpenSegment {
                last_applied_wall_ms: 0,
                ..open
            };
            records.push((
                open.project_id.clone(),
                open.session_id.clone(),
                format!("{open:?}"),
            ));
        }
        Ok(records)
    }

    /// Every lease fence (per project and lease group, the highest `(epoch, tenure)` of
    /// a `segment_close` applied) as (project, group, `(epoch, tenure)`).
    ///
    /// # Errors
    /// Store failures.
    pub fn fences(store: &Store) -> Result<Vec<(String, String, String)>, ConsumerError> {
        let keyspace = store.projection_keyspace(FENCE_KEYSPACE)?;
        let mut records = Vec::new();
        for guard in keyspace.iter() {
            let (key, value) = guard.into_inner().map_err(StoreError::from)?;
            let text = String::from_utf8_lossy(&key).into_owned();
            let (project, group) = text.split_once('\0').unwrap_or((&text, ""));
            let number =
                |bytes: &[u8]| <[u8; 8]>::try_from(bytes).map_or(u64::MAX, u64::from_be_bytes);
            let rendered = match value.len() {
                16 => format!("({}, {})", number(&value[..8]), number(&value[8..])),
                _ => format!("{:?}", value.as_ref()),
            };
            records.push((project.to_owned(), group.to_owned(), rendered));
        }
        Ok(records)
    }

    fn load_open(&self, key: &[u8]) -> Result<Option<OpenSegment>, ConsumerError> {
        Ok(codec::get_record(
            &self.open,
            key,
            "open segment",
            RECORD_VERSION,
        )?)
    }

    /// Writes the closed segment and announces it; returns the overlap for the next one.
    fn close(
        &self,
        batch: &mut ProjectionBatch,
        open: OpenSegment,
        reason: CloseReason,
    ) -> Result<Vec<SegmentEvent>, ConsumerError> {
        let start_ms = open
            .events
            .iter()
            .map(|e| e.timestamp_ms)
            .min()
            .unwrap_or(0);
        let end_ms = open.last_timestamp_ms();
        let segment_id = open.segment_id(self.config.timezone);
        let mut overlap = Vec::new();
        let mut overlap_tokens = 0u64;
        for event in open.events.iter().rev() {
            if overlap_tokens + event.tokens > self.config.overlap_tokens {
                break;
            }
            overlap_tokens += event.tokens;
            overlap.push(event.clone());
        }
        overlap.reverse();
        let segment = Segment {
            segment_id: segment_id.clone(),
            project_id: open.project_id.clone(),
            session_id: open.session_id.clone(),
            start_ms,
            end_ms,
            events: open.events,
            overlap: open.overlap,
            token_estimate: open.token_estimate,
            close_reason: reason,
        };
        batch.insert(
            &self.segments,
            segment_id.as_bytes(),
            codec::encode("segment", RECORD_VERSION, &segment)?,
        );
        batch.append_derived(DerivedEntry {
            kind: SEGMENT_CLOSED.into(),
            project_id: open.project_id,
            key: segment_id,
        });
        Ok(overlap)
    }

    fn apply_event(
        &self,
        batch: &mut ProjectionBatch,
        touched: &mut BTreeMap<Vec<u8>, Option<OpenSegment>>,
        seq: OutboxSeq,
        event: &Event,
        now_ms: u64,
    ) -> Result<(), ConsumerError> {
        let key = project_scoped_key(&event.project_id, &event.session_id);
        let current = match touched.remove(&key) {
            Some(current) => current,
            None => self.load_open(&key)?,
        };
        // Replaying an event the open segment already holds changes nothing.
        if current
            .as_ref()
            .is_some_and(|open| open.events.iter().any(|e| e.seq == seq.0))
        {
            touched.insert(key, current);
            return Ok(());
        }
        let gap_ms = u64::try_from(self.config.gap.as_millis()).unwrap_or(u64::MAX);
        let (mut open, carried_overlap) = match current {
            Some(open)
                if !open.events.is_empty()
                    && event.timestamp_ms > open.last_timestamp_ms().saturating_add(gap_ms) =>
            {
                let overlap = self.close(batch, open, CloseReason::Gap)?;
                (None, overlap)
            }
            other => (other, Vec::new()),
        };
        let tokens = event_tokens(&event.text);
        let segment = open.get_or_insert_with(|| OpenSegment {
            project_id: event.project_id.clone(),
            session_id: event.session_id.clone(),
            first_event_id: event.event_id.clone(),
            events: Vec::new(),
            overlap: carried_overlap,
            token_estimate: 0,
            last_applied_wall_ms: now_ms,
        });
        if segment.events.is_empty() {
            // The id derives from the first own event, so a rebuild names it the same.
            segment.first_event_id.clone_from(&event.event_id);
        }
        segment.events.push(SegmentEvent {
            seq: seq.0,
            timestamp_ms: event.timestamp_ms,
            tokens,
        });
        segment.token_estimate += tokens;
        segment.last_applied_wall_ms = now_ms;
        let reason = if event.kind == EventKind::SessionEnd {
            Some(CloseReason::SessionEnd)
        } else if segment.token_estimate >= self.config.max_tokens {
            Some(CloseReason::Tokens)
        } else {
            None
        };
        let next = match (reason, open) {
            (Some(reason), Some(full)) => {
                let overlap = self.close(batch, full, reason)?;
                // A session that ended starts afresh; a full segment hands its tail on.
                (reason == CloseReason::Tokens && !overlap.is_empty()).then(|| OpenSegment {
                    project_id: event.project_id.clone(),
                    session_id: event.session_id.clone(),
                    first_event_id: String::new(),
                    events: Vec::new(),
                    overlap,
                    token_estimate: 0,
                    last_applied_wall_ms: now_ms,
                })
            }
            (_, open) => open,
        };
        touched.insert(key, next);
        Ok(())
    }
}

impl OutboxConsumer for Segmenter {
    fn name(&self) -> &str {
        SEGMENTER
    }

    fn apply(
        &mut self,
        store: &Store,
        items: &[FeedItem],
        up_to: OutboxSeq,
    ) -> Result<(), ConsumerError> {
        let now_ms = self.config.clock.now_ms();
        let mut batch = store.projection_batch();
        let mut touched: BTreeMap<Vec<u8>, Option<OpenSegment>> = BTreeMap::new();
        let mut fences: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
        for item in items {
            if let FeedItem::Event { seq, event } = item {
                if event.kind == EventKind::SegmentClose {
                    self.apply_close(&mut batch, &mut touched, &mut fences, event)?;
                } else if event.kind.is_conversation() {
                    self.apply_event(&mut batch, &mut touched, *seq, event, now_ms)?;
                }
            }
        }
        for (key, open) in touched {
            match open {
                // A segment that holds only carried context has no first event yet.
                Some(open) if !open.events.is_empty() || !open.overlap.is_empty() => {
                    if !open.events.is_empty() {
                        batch.append_derived(DerivedEntry {
                            kind: SEGMENT_OPEN.into(),
                            project_id: open.project_id.clone(),
                            key: open.session_id.clone(),
                        });
                    }
                    batch.insert(
                        &self.open,
                        &key,
                        codec::encode("open segment", RECORD_VERSION, &open)?,
                    );
                }
                _ => batch.remove(&self.open, &key),
            }
        }
        batch.set_cursor(SEGMENTER, up_to);
        store.commit_projection(batch)?;
        Ok(())
    }

    fn on_idle(&mut self, store: &Store) -> Result<(), ConsumerError> {
        if !self.config.idle_close_by_clock {
            return Ok(());
        }
        let now_ms = self.config.clock.now_ms();
        let gap_ms = u64::try_from(self.config.gap.as_millis()).unwrap_or(u64::MAX);
        let mut batch = store.projection_batch();
        let mut num_closed = 0usize;
        for guard in self.open.iter() {
            let (key, value) = guard.into_inner().map_err(StoreError::from)?;
            let open: OpenSegment = codec::decode("open segment", RECORD_VERSION, &value)?;
            if open.events.is_empty() || now_ms.saturating_sub(open.last_applied_wall_ms) < gap_ms {
                continue;
            }
            let overlap = self.close(&mut batch, open.clone(), CloseReason::Idle)?;
            let next = OpenSegment {
                first_event_id: String::new(),
                events: Vec::new(),
                overlap,
                token_estimate: 0,
                ..open
            };
            batch.insert(
                &self.open,
                key.as_ref(),
                codec::encode("open segment", RECORD_VERSION, &next)?,
            );
            num_closed += 1;
        }
        if num_closed > 0 {
            store.commit_projection(batch)?;
        }
        Ok(())
    }

    fn reset(&mut self, store: &Store, start: OutboxSeq) -> Result<(), ConsumerError> {
        self.open.clear().map_err(StoreError::from)?;
        self.segments.clear().map_err(StoreError::from)?;
        self.fence.clear().map_err(StoreError::from)?;
        store.set_cursor(SEGMENTER, start)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use memory_store::StoreOptions;
    use memory_types::ManualClock;

    use super::*;
    use crate::testsuite::{catch_up, event};

    const T0: u64 = 1_769_764_500_000; // 2026-01-30T09:15:00Z
    const MINUTE: u64 = 60_000;

    fn note(id: &str, session: &str, ts: u64) -> Event {
        event(id, session, ts, EventKind::UserMessage, "short turn")
    }

    /// Appends `events` and lets `segmenter` apply everything.
    fn append_and_apply(store: &Store, segmenter: &mut Segmenter, events: &[Event]) {
        store.append_events(events).expect("append");
        catch_up(store, &mut [segmenter]).expect("apply");
    }

    fn by_start(store: &Store) -> Vec<Segment> {
        let mut segments = Segmenter::all_segments(store).expect("segments");
        segments.sort_by_key(|s| (s.session_id.clone(), s.start_ms));
        segments
    }

    #[test]
    fn gaps_and_session_end_close_segments_with_overlap_and_announce_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let mut segmenter = Segmenter::open(&store, SegmenterConfig::default()).expect("open");
        append_and_apply(
            &store,
            &mut segmenter,
            &[
                note("a1", "s1", T0),
                note("a2", "s1", T0 + MINUTE),
                note("b1", "s2", T0 + 2 * MINUTE),
                note("a3", "s1", T0 + 2 * MINUTE),
                note("a4", "s1", T0 + 45 * MINUTE),
                event("a5", "s1", T0 + 46 * MINUTE, EventKind::SessionEnd, ""),
            ],
        );
        let segments = by_start(&store);
        assert_eq!(segments.len(), 2, "{segments:?}");
        let (first, second) = (&segments[0], &segments[1]);
        assert_eq!(first.close_reason, CloseReason::Gap);
        assert_eq!(
            first.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 4]
        );
        assert_eq!((first.start_ms, first.end_ms), (T0, T0 + 2 * MINUTE));
        assert!(first.segment_id.starts_with("toc:segment:2026-01-30:"));
        assert_eq!(second.close_reason, CloseReason::SessionEnd);
        assert_eq!(
            second.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [5, 6]
        );
        assert!(
            !second.overlap.is_empty(),
            "the first segment's tail is carried as context"
        );
        assert_eq!(second.overlap.last().map(|e| e.seq), Some(4));
        // Session s2 is still open: nothing closed for it.
        assert!(segments.iter().all(|s| s.session_id == "s1"));
        // Each closed segment was announced on the outbox for downstream actors.
        let announced: Vec<String> = store
            .read_feed(OutboxSeq::ZERO, 100)
            .expect("feed")
            .into_iter()
            .filter_map(|item| match item {
                FeedItem::Derived { entry, .. } if entry.kind == SEGMENT_CLOSED => Some(entry.key),
                _ => None,
            })
            .collect();
        let mut expected: Vec<String> = segments.iter().map(|s| s.segment_id.clone()).collect();
        expected.sort();
        let mut announced_sorted = announced.clone();
        announced_sorted.sort();
        assert_eq!(announced_sorted, expected);
    }

    #[test]
    fn token_budget_closes_segments_and_a_rebuild_yields_identical_segments() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let config = SegmenterConfig {
            max_tokens: 100,
            overlap_tokens: 30,
            ..SegmenterConfig::default()
        };
        let mut segmenter = Segmenter::open(&store, config).expect("open");
        let long_text = "x".repeat(120); // 30 tokens
        let events: Vec<Event> = (0..12)
            .map(|i| {
                event(
                    &format!("e{i}"),
                    "s",
                    T0 + i * 1000,
                    EventKind::AssistantMessage,
                    &long_text,
                )
            })
            .collect();
        append_and_apply(&store, &mut segmenter, &events);
        let before = by_start(&store);
        assert_eq!(
            before.len(),
            3,
            "12 events of 30 tokens with a 100-token budget: {before:?}"
        );
        assert!(
            before
                .iter()
                .all(|s| s.close_reason == CloseReason::Tokens && s.token_estimate >= 100)
        );
        assert!(
            before[1..].iter().all(|s| s.overlap.len() == 1),
            "30 overlap tokens carry one event"
        );

        segmenter.reset(&store, OutboxSeq::ZERO).expect("reset");
        catch_up(&store, &mut [&mut segmenter]).expect("replay");
        assert_eq!(
            by_start(&store),
            before,
            "replaying the log rebuilds the same segments, ids included"
        );
    }

    /// A store and a segmenter with a 30 min gap on a manual wall clock, closing idle
    /// segments on that clock or not (cluster mode).
    fn live(by_clock: bool) -> (tempfile::TempDir, Store, ManualClock, Segmenter) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
        let wall = ManualClock::new(T0 + 60 * MINUTE);
        let config = SegmenterConfig {
            gap: Duration::from_secs(30 * 60),
            clock: wall.clock(),
            idle_close_by_clock: by_clock,
            ..SegmenterConfig::default()
        };
        let segmenter = Segmenter::open(&store, config).expect("open");
        (dir, store, wall, segmenter)
    }

    #[test]
    fn a_live_session_that_falls_silent_is_closed_by_wall_clock() {
        let (_dir, store, wall, mut segmenter) = live(true);
        append_and_apply(
            &store,
            &mut segmenter,
            &[note("l1", "live", T0), note("l2", "live", T0 + 10)],
        );
        wall.advance(Duration::from_secs(30 * 60 - 1));
        segmenter.on_idle(&store).expect("idle");
        assert!(
            Segmenter::all_segments(&store)
                .expect("segments")
                .is_empty(),
            "a second short of the gap, the live segment stays open"
        );
        wall.advance(Duration::from_secs(1));
        segmenter.on_idle(&store).expect("idle");
        let segments = Segmenter::all_segments(&store).expect("segments");
        assert_eq!(segments.len(), 1, "{segments:?}");
        assert_eq!(segments[0].close_reason, CloseReason::Idle);
        assert_eq!(segments[0].events.len(), 2);
        let announced = store
            .read_feed(OutboxSeq::ZERO, 100)
            .expect("feed")
            .into_iter()
            .filter(|item| {
                matches!(item, FeedItem::Derived { entry, .. } if entry.kind == SEGMENT_CLOSED)
            })
            .count();
        assert_eq!(announced, 1, "the idle close is announced like any other");
    }

    /// A `segment_close` as a cluster's lease holder publishes it.
    fn close_event(id: &str, session: &str, first: &str, events: u64, revision: u64) -> Event {
        let mut close = event(id, session, T0 + 20, EventKind::SegmentClose, "");
        close.metadata = BTreeMap::from([
            (
                memory_types::SEGMENT_FIRST_EVENT.to_owned(),
                first.to_owned(),
            ),
            (memory_types::SEGMENT_EVENTS.to_owned(), events.to_string()),
            (memory_types::LEASE_GROUP.to_owned(), "g1".to_owned()),
            (memory_types::LEASE_EPOCH.to_owned(), "1".to_owned()),
            (
                memory_types::LEASE_REVISION.to_owned(),
                revision.to_string(),
            ),
        ]);
        close
    }

    #[test]
    fn in_cluster_mode_idle_segments_close_where_the_log_says() {
        let (_dir, store, wall, mut segmenter) = live(false);
        append_and_apply(
            &store,
            &mut segmenter,
            &[note("l1", "live", T0), note("l2", "live", T0 + 10)],
        );
        wall.advance(Duration::from_secs(30 * 60));
        segmenter.on_idle(&store).expect("idle");
        assert!(
            Segmenter::all_segments(&store)
                .expect("segments")
                .is_empty(),
            "the wall clock closes nothing in cluster mode"
        );
        let idle =
            Segmenter::idle_segments(&store, wall.clock().now_ms(), Duration::from_secs(1_800))
                .expect("idle");
        assert_eq!(
            idle,
            vec![IdleSegment {
                project_id: "p".into(),
                session_id: "live".into(),
                first_event_id: "l1".into(),
                events: 2,
                last_timestamp_ms: T0 + 10,
            }]
        );
        // A close that names another state of the segment, then one from a lease older
        // than one already applied, change nothing; the right one closes it.
        append_and_apply(
            &store,
            &mut segmenter,
            &[
                close_event("c1", "live", "l1", 1, 7),
                close_event("c2", "live", "l1", 2, 6),
            ],
        );
        assert!(
            Segmenter::all_segments(&store)
                .expect("segments")
                .is_empty()
        );
        append_and_apply(
            &store,
            &mut segmenter,
            &[close_event("c3", "live", "l1", 2, 7)],
        );
        let segments = Segmenter::all_segments(&store).expect("segments");
        assert_eq!(segments.len(), 1, "{segments:?}");
        assert_eq!(segments[0].close_reason, CloseReason::Idle);
        assert_eq!(
            segments[0].events.len(),
            2,
            "the close is not an event of the segment"
        );
        assert!(
            Segmenter::idle_segments(&store, wall.clock().now_ms(), Duration::from_secs(1_800))
                .expect("idle")
                .is_empty()
        );
        // The next turn starts a new segment, carrying the closed one's tail.
        append_and_apply(&store, &mut segmenter, &[note("l3", "live", T0 + 30)]);
        let open = Segmenter::open_segment(&store, Tz::UTC, "p", "live")
            .expect("read")
            .expect("open");
        assert_eq!(open.events.len(), 1);
    }

    #[test]
    fn event_tokens_count_characters_not_bytes() {
        assert_eq!(event_tokens(""), 1);
        assert_eq!(event_tokens("abcde"), 2);
        assert_eq!(event_tokens("ééééé"), 2);
    }
}
