//! Model-based property test of the projections: random sequences of appends, restarts,
//! partial catch-ups, replays, rebuilds and outbox truncation must leave the session
//! catalog, the segments, the grips, the TOC and the BM25 index exactly as a fresh store
//! leaves them after appending the same events in one go and catching up once. The
//! appended events are also folded into a tiny in-memory model (per session: events,
//! first and last time) that the catalog, the segments and the index must agree with.
//!
//! Outbox positions are not compared as such: a store fed in batches interleaves derived
//! entries with events, so the same event has another position than in the reference.
//! Every position is replaced by the id of the event it names before comparing.
//!
//! Idle closing (a live session's segment closed after `gap` of wall-clock silence) is
//! left out: where the close lands depends on what the segmenter had applied when the
//! clock moved, which a store fed in one go cannot reproduce. The segmenter's clock is a
//! `ManualClock` that never moves, so idle close never fires on either side.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use memory_projections::testsuite::{TocProjections, catch_up, event};
use memory_projections::{
    Bm25Handle, Bm25Indexer, Bm25Settings, CloseReason, GRIP_EXTRACTOR, GripExtractor,
    OutboxConsumer, ROLLUP_BUILDER, RollupBuilder, SEGMENTER, SESSION_CATALOG, Segmenter,
    SegmenterConfig, SessionCatalog,
};
use memory_search::layout::IndexDir;
use memory_search::{Bm25Query, event_doc};
use memory_store::{Durability, OutboxSeq, Store, StoreOptions};
use memory_toc::{Grip, TocNode, TocNodeId, Tz};
use memory_types::{Event, EventKind, ManualClock};
use proptest::prelude::*;
use tantivy::TantivyDocument;
use tantivy::collector::DocSetCollector;
use tantivy::query::AllQuery;
use tantivy::schema::Value;

const BASE_MS: u64 = 1_769_764_500_000; // 2026-01-30T09:15:00Z
const SECOND_MS: u64 = 1_000;
const MINUTE_MS: u64 = 60 * SECOND_MS;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const PROJECTS: [&str; 2] = ["alpha", "beta"];
const SESSIONS: [&str; 3] = ["s1", "s2", "s3"];
/// Small budgets, so that a few dozen events close segments by size too.
const MAX_TOKENS: u64 = 120;
const OVERLAP_TOKENS: u64 = 30;
/// Texts with what grips and summaries look for: decisions, questions, errors, fixes,
/// conclusions, paths, identifiers, numbers; one long enough to fill a segment alone.
const PHRASES: [&str; 10] = [
    "We decided to keep the refresh token TTL at 15 minutes.",
    "Why does cargo build fail on the CI runner?",
    "error[E0308]: mismatched types in src/auth/refresh.rs",
    "Fixed it by pinning tantivy to 0.27 and rebuilding the index.",
    "The getUserToken helper returns an expired JWT after logout.",
    "Conclusion: the fjall journal must be fsynced before acknowledging.",
    "Let me run the migration script again.",
    "ok",
    "Segment overlap carries context into the next segment of the session.",
    "The outbox consumer replays everything after its cursor, so a crash between the \
     write and the cursor is harmless; the segmenter, the grip extractor and the rollup \
     builder each keep their cursor in the same batch as their records, and the BM25 \
     index keeps it in the tantivy commit payload.",
];
/// Searches whose hits are compared (as sets: scores may differ with deleted documents).
const QUERIES: [&str; 4] = [
    "refresh token expiry decided",
    "cargo build fails",
    "tantivy index rebuild",
    "outbox cursor replay",
];

/// How far an event lies from the previous event of its session.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Seconds later: the same segment.
    Turn(u64),
    /// Minutes later, at least the 30-minute gap (exactly 30 is not a gap).
    Gap(u64),
    /// Hours later: another day, sometimes another week.
    LongGap(u64),
    /// Minutes earlier: out of order within the session.
    Earlier(u64),
}

/// One generated event before it gets its id and time.
#[derive(Clone, Debug)]
struct EventSpec {
    project: usize,
    session: usize,
    step: Step,
    kind: EventKind,
    phrases: Vec<usize>,
    /// Reuse the id of an earlier event (a duplicate when the project is the same).
    duplicate_of: Option<prop::sample::Index>,
}

/// A batch of concrete events, printed one line each.
#[derive(Clone)]
struct Batch(Vec<Event>);

impl fmt::Debug for Batch {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = formatter.debug_list();
        for event in &self.0 {
            list.entry(&format_args!(
                "{}/{}/{} @{} {} {:?}",
                event.project_id,
                event.session_id,
                event.event_id,
                event.timestamp_ms,
                event.kind.as_str(),
                event.text
            ));
        }
        list.finish()
    }
}

/// One step of a scenario; `A` is what an append carries (specs, then concrete events).
#[derive(Clone, Debug)]
enum Op<A> {
    /// Append a batch to the log; nothing catches up.
    Append(A),
    /// Every consumer catches up, in pipeline order.
    CatchUp,
    /// Only some consumers catch up (bit i: catalog, segmenter, grips, rollups, BM25):
    /// actors run concurrently, so any of them may be ahead when the process stops.
    CatchUpSome(u8),
    /// Drop the store, every projection and the BM25 handle; reopen the same dirs.
    Reopen,
    /// Reset the session catalog to the start and let it catch up alone.
    ReplayCatalog,
    /// Reset the BM25 indexer to the start (a rebuild at `ZERO`) and let it catch up.
    ReplayBm25,
    /// `TocProjections::rebuild`; with `crash`, stop right after the resets and reopen.
    RebuildToc { crash: bool },
    /// `Store::truncate_outbox`.
    TruncateOutbox,
    /// Drop and reopen the BM25 handle; with `crash`, after applying a batch that was
    /// not committed.
    ReopenBm25 { crash: bool },
    /// `Bm25Handle::rebuild` at the head, whatever the TOC has applied so far.
    RebuildBm25,
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (5u64..900).prop_map(Step::Turn),
        2 => (30u64..300).prop_map(Step::Gap),
        1 => (20u64..200).prop_map(Step::LongGap),
        1 => (1u64..60).prop_map(Step::Earlier),
    ]
}

fn kind_strategy() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        3 => Just(EventKind::UserMessage),
        3 => Just(EventKind::AssistantMessage),
        1 => Just(EventKind::ToolCall),
        1 => Just(EventKind::ToolResult),
        1 => Just(EventKind::Note),
        1 => Just(EventKind::SessionStart),
        2 => Just(EventKind::SessionEnd),
    ]
}

fn event_spec_strategy() -> impl Strategy<Value = EventSpec> {
    (
        0..PROJECTS.len(),
        0..SESSIONS.len(),
        step_strategy(),
        kind_strategy(),
        prop::collection::vec(0..PHRASES.len(), 0..4),
        prop::option::weighted(0.15, any::<prop::sample::Index>()),
    )
        .prop_map(
            |(project, session, step, kind, phrases, duplicate_of)| EventSpec {
                project,
                session,
                step,
                kind,
                phrases,
                duplicate_of,
            },
        )
}

fn op_strategy() -> impl Strategy<Value = Op<Vec<EventSpec>>> {
    prop_oneof![
        8 => prop::collection::vec(event_spec_strategy(), 1..6).prop_map(Op::Append),
        4 => Just(Op::CatchUp),
        2 => (1u8..32).prop_map(Op::CatchUpSome),
        2 => Just(Op::Reopen),
        1 => Just(Op::ReplayCatalog),
        1 => Just(Op::ReplayBm25),
        2 => any::<bool>().prop_map(|crash| Op::RebuildToc { crash }),
        2 => Just(Op::TruncateOutbox),
        1 => any::<bool>().prop_map(|crash| Op::ReopenBm25 { crash }),
        1 => Just(Op::RebuildBm25),
    ]
}

/// Gives every spec its id (`e000`, … or an earlier one's) and its time (from the
/// previous event of its session), in scenario order.
fn materialize(ops: Vec<Op<Vec<EventSpec>>>) -> Vec<Op<Batch>> {
    let mut ids: Vec<String> = Vec::new();
    let mut last_ms: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut materialize_spec = |spec: EventSpec| {
        let key = (spec.project, spec.session);
        let previous = *last_ms.entry(key).or_insert(
            BASE_MS + (spec.project * SESSIONS.len() + spec.session) as u64 * 11 * MINUTE_MS,
        );
        let timestamp_ms = match spec.step {
            Step::Turn(seconds) => previous + seconds * SECOND_MS,
            Step::Gap(minutes) => previous + minutes * MINUTE_MS,
            Step::LongGap(hours) => previous + hours * HOUR_MS,
            Step::Earlier(minutes) => previous - minutes * MINUTE_MS,
        };
        last_ms.insert(key, timestamp_ms);
        let id = match spec.duplicate_of {
            Some(index) if !ids.is_empty() => ids[index.index(ids.len())].clone(),
            _ => format!("e{:03}", ids.len()),
        };
        ids.push(id.clone());
        let lifecycle = matches!(spec.kind, EventKind::SessionStart | EventKind::SessionEnd);
        let text = match spec.phrases.is_empty() {
            true if lifecycle => String::new(),
            true => "ok".to_owned(),
            false => spec
                .phrases
                .iter()
                .map(|phrase| PHRASES[*phrase])
                .collect::<Vec<_>>()
                .join(" "),
        };
        let mut event = event(&id, SESSIONS[spec.session], timestamp_ms, spec.kind, &text);
        event.project_id = PROJECTS[spec.project].to_owned();
        event
    };
    ops.into_iter()
        .map(|op| match op {
            Op::Append(specs) => Op::Append(Batch(
                specs.into_iter().map(&mut materialize_spec).collect(),
            )),
            Op::CatchUp => Op::CatchUp,
            Op::CatchUpSome(mask) => Op::CatchUpSome(mask),
            Op::Reopen => Op::Reopen,
            Op::ReplayCatalog => Op::ReplayCatalog,
            Op::ReplayBm25 => Op::ReplayBm25,
            Op::RebuildToc { crash } => Op::RebuildToc { crash },
            Op::TruncateOutbox => Op::TruncateOutbox,
            Op::ReopenBm25 { crash } => Op::ReopenBm25 { crash },
            Op::RebuildBm25 => Op::RebuildBm25,
        })
        .collect()
}

/// A store with every projection and the BM25 index, as one daemon process holds them.
struct Node {
    dir: PathBuf,
    clock: ManualClock,
    store: Store,
    toc: TocProjections,
    bm25_handle: Bm25Handle,
    bm25: Bm25Indexer,
}

impl Node {
    fn open(dir: &Path, clock: ManualClock) -> Node {
        // A restart here is a process restart, not a power loss: the journal handed to
        // the OS is enough, and the test does not wait on an fsync per append.
        let options = StoreOptions {
            durability: Durability::Buffer,
            ..StoreOptions::default()
        };
        let store = Store::open(dir.join("store"), &options).expect("store");
        let segmenter = SegmenterConfig {
            max_tokens: MAX_TOKENS,
            overlap_tokens: OVERLAP_TOKENS,
            clock: clock.clock(),
            ..SegmenterConfig::default()
        };
        let toc = TocProjections::open_with(&store, segmenter).expect("projections");
        // Outbox truncation keeps what every consumer with a cursor still needs; a
        // consumer that never committed has none, so it is registered at the start.
        let cursors = store.cursors().expect("cursors");
        for name in [SESSION_CATALOG, SEGMENTER, GRIP_EXTRACTOR, ROLLUP_BUILDER] {
            if !cursors.contains_key(name) {
                store.set_cursor(name, OutboxSeq::ZERO).expect("register");
            }
        }
        let bm25_handle = Bm25Handle::open(Self::bm25_settings(dir));
        assert_eq!(bm25_handle.error(), None, "the bm25 index opens");
        Node {
            dir: dir.to_path_buf(),
            store,
            toc,
            bm25: Bm25Indexer::new(bm25_handle.clone()),
            bm25_handle,
            clock,
        }
    }

    fn bm25_settings(dir: &Path) -> Bm25Settings {
        Bm25Settings::new(dir.join("bm25"))
    }

    /// A restart: everything is dropped before the same dirs open again.
    fn reopen(self) -> Node {
        let Node {
            dir,
            clock,
            store,
            toc,
            bm25_handle,
            bm25,
        } = self;
        drop((bm25, bm25_handle, toc, store));
        Node::open(&dir, clock)
    }

    /// Drops the BM25 handle (its writer first, with the indexer holding a clone) and
    /// opens the index again.
    fn reopen_bm25(self) -> Node {
        let Node {
            dir,
            clock,
            store,
            toc,
            bm25_handle,
            bm25,
        } = self;
        drop(bm25);
        drop(bm25_handle);
        let bm25_handle = Bm25Handle::open(Self::bm25_settings(&dir));
        assert_eq!(bm25_handle.error(), None, "the bm25 index reopens");
        Node {
            bm25: Bm25Indexer::new(bm25_handle.clone()),
            bm25_handle,
            dir,
            clock,
            store,
            toc,
        }
    }

    fn catch_up_all(&mut self) {
        self.toc
            .catch_up(&self.store, &mut [&mut self.bm25])
            .expect("catch up");
    }

    fn catch_up_some(&mut self, mask: u8) {
        let toc = &mut self.toc;
        let candidates: [&mut dyn OutboxConsumer; 5] = [
            &mut toc.session_catalog,
            &mut toc.segmenter,
            &mut toc.grip_extractor,
            &mut toc.rollup_builder,
            &mut self.bm25,
        ];
        let mut consumers: Vec<&mut dyn OutboxConsumer> = candidates
            .into_iter()
            .enumerate()
            .filter(|(bit, _)| mask & (1 << bit) != 0)
            .map(|(_, consumer)| consumer)
            .collect();
        catch_up(&self.store, &mut consumers).expect("partial catch up");
    }

    fn run(mut self, op: Op<Batch>) -> Node {
        match op {
            Op::Append(Batch(events)) => {
                self.store.append_events(&events).expect("append");
            }
            Op::CatchUp => self.catch_up_all(),
            Op::CatchUpSome(mask) => self.catch_up_some(mask),
            Op::Reopen => return self.reopen(),
            Op::ReplayCatalog => {
                let catalog = &mut self.toc.session_catalog;
                catalog.reset(&self.store, OutboxSeq::ZERO).expect("reset");
                catch_up(&self.store, &mut [catalog]).expect("replay");
            }
            Op::ReplayBm25 => {
                self.bm25
                    .reset(&self.store, OutboxSeq::ZERO)
                    .expect("reset");
                catch_up(&self.store, &mut [&mut self.bm25]).expect("replay");
            }
            Op::RebuildToc { crash: false } => self.toc.rebuild(&self.store).expect("rebuild"),
            Op::RebuildToc { crash: true } => {
                // `TocProjections::rebuild` up to its last catch-up.
                self.toc.catch_up(&self.store, &mut []).expect("catch up");
                let head = self.store.head();
                self.toc
                    .rollup_builder
                    .reset(&self.store, head)
                    .expect("reset");
                self.toc
                    .grip_extractor
                    .reset(&self.store, head)
                    .expect("reset");
                self.toc
                    .segmenter
                    .reset(&self.store, OutboxSeq::ZERO)
                    .expect("reset");
                return self.reopen();
            }
            Op::TruncateOutbox => {
                self.store.truncate_outbox().expect("truncate");
            }
            Op::ReopenBm25 { crash } => {
                if crash {
                    let cursor = self.bm25.load_cursor(&self.store).expect("cursor");
                    let items = self.store.read_feed(cursor, 256).expect("feed");
                    if let Some(last) = items.last().map(memory_store::FeedItem::seq) {
                        self.bm25.apply(&self.store, &items, last).expect("apply");
                    }
                }
                return self.reopen_bm25();
            }
            Op::RebuildBm25 => {
                self.bm25_handle
                    .rebuild(&self.store, self.store.head())
                    .expect("rebuild");
            }
        }
        self
    }
}

/// An event as a segment lists it: id, time, tokens.
type EventRef = (String, u64, u64);

#[derive(Debug, PartialEq)]
struct SessionShape {
    project_id: String,
    session_id: String,
    first_timestamp_ms: u64,
    last_timestamp_ms: u64,
    num_events: u64,
    /// The event at the summary's `last_seq`.
    last_event_id: String,
}

#[derive(Debug, PartialEq)]
struct SegmentShape {
    segment_id: String,
    project_id: String,
    session_id: String,
    start_ms: u64,
    end_ms: u64,
    events: Vec<EventRef>,
    overlap: Vec<EventRef>,
    token_estimate: Option<u64>,
    /// `None` for an open segment.
    close_reason: Option<CloseReason>,
}

/// A BM25 document as stored (keywords are indexed only).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct IndexedDoc {
    project_id: String,
    doc_type: String,
    doc_id: String,
    session_id: Option<String>,
    level: Option<String>,
    text: String,
    timestamp_ms: u64,
}

/// The (type, id) of every hit of a search, sorted.
type HitIds = Vec<(String, String)>;

/// Everything the projections hold, positions replaced by event ids.
#[derive(Debug, PartialEq)]
struct Snapshot {
    sessions: Vec<SessionShape>,
    segments: Vec<SegmentShape>,
    open_segments: Vec<SegmentShape>,
    segment_grips: BTreeMap<String, Vec<Grip>>,
    grips: Vec<Grip>,
    nodes: BTreeMap<(String, TocNodeId), TocNode>,
    /// The grip extractor's and the rollup builder's document-frequency tables and the
    /// TOC's membership index, raw: what later segments' grips and keywords depend on.
    /// Keys are shown as text (NUL as ` | `), values as bytes.
    internal_tables: BTreeMap<&'static str, Vec<(String, Vec<u8>)>>,
    bm25_doc_counts: BTreeMap<String, u64>,
    bm25_docs: Vec<IndexedDoc>,
    /// Per project and query, every hit.
    bm25_hits: BTreeMap<(String, String), HitIds>,
    bm25_cursor_at_head: bool,
}

fn event_ref(store: &Store, seq: u64, timestamp_ms: u64, tokens: u64) -> EventRef {
    let event = store
        .event(OutboxSeq(seq))
        .expect("read event")
        .expect("a segment names a stored event");
    (event.event_id, timestamp_ms, tokens)
}

impl Snapshot {
    fn of(node: &Node) -> Snapshot {
        let store = &node.store;
        let mut sessions = Vec::new();
        let mut open_segments = Vec::new();
        for project in PROJECTS {
            for summary in SessionCatalog::sessions(store, project).expect("sessions") {
                let last = store
                    .event(OutboxSeq(summary.last_seq))
                    .expect("read event")
                    .expect("last_seq names a stored event");
                sessions.push(SessionShape {
                    project_id: summary.project_id,
                    session_id: summary.session_id,
                    first_timestamp_ms: summary.first_timestamp_ms,
                    last_timestamp_ms: summary.last_timestamp_ms,
                    num_events: summary.num_events,
                    last_event_id: last.event_id,
                });
            }
            for open in Segmenter::open_segments(store, Tz::UTC, project).expect("open segments") {
                open_segments.push(SegmentShape {
                    segment_id: open.segment_id,
                    project_id: open.project_id,
                    session_id: open.session_id,
                    start_ms: open.start_ms,
                    end_ms: open.end_ms,
                    events: open
                        .events
                        .iter()
                        .map(|e| event_ref(store, e.seq, e.timestamp_ms, e.tokens))
                        .collect(),
                    overlap: Vec::new(),
                    token_estimate: None,
                    close_reason: None,
                });
            }
        }
        let mut segments: Vec<SegmentShape> = Segmenter::all_segments(store)
            .expect("segments")
            .into_iter()
            .map(|segment| SegmentShape {
                events: segment
                    .events
                    .iter()
                    .map(|e| event_ref(store, e.seq, e.timestamp_ms, e.tokens))
                    .collect(),
                overlap: segment
                    .overlap
                    .iter()
                    .map(|e| event_ref(store, e.seq, e.timestamp_ms, e.tokens))
                    .collect(),
                segment_id: segment.segment_id,
                project_id: segment.project_id,
                session_id: segment.session_id,
                start_ms: segment.start_ms,
                end_ms: segment.end_ms,
                token_estimate: Some(segment.token_estimate),
                close_reason: Some(segment.close_reason),
            })
            .collect();
        segments.sort_by(|a, b| a.segment_id.cmp(&b.segment_id));
        let segment_grips = segments
            .iter()
            .map(|segment| {
                let grips =
                    GripExtractor::segment_grips(store, &segment.segment_id).expect("grips");
                (segment.segment_id.clone(), grips)
            })
            .collect();
        let grips = GripExtractor::all_grips(store)
            .collect::<Result<Vec<Grip>, _>>()
            .expect("grips");
        let nodes = RollupBuilder::all_nodes(store).expect("nodes");
        let internal_tables = ["term_df", "toc_term_df", "toc_children"]
            .into_iter()
            .map(|name| {
                let keyspace = store.projection_keyspace(name).expect("keyspace");
                let rows = keyspace
                    .iter()
                    .map(|guard| {
                        let (key, value) = guard.into_inner().expect("row");
                        let key = String::from_utf8_lossy(&key).replace('\0', " | ");
                        (key, value.to_vec())
                    })
                    .collect();
                (name, rows)
            })
            .collect();

        let head = store.head();
        let status = node.bm25_handle.status(head);
        assert!(status.healthy, "bm25 unhealthy: {:?}", status.error);
        let mut bm25_hits = BTreeMap::new();
        for project in PROJECTS {
            for text in QUERIES {
                let query = Bm25Query::new(text, project).expect("terms");
                let mut hits: HitIds = node
                    .bm25_handle
                    .search(&query, 1_000)
                    .expect("search")
                    .hits
                    .into_iter()
                    .map(|hit| (hit.doc_type.as_str().to_owned(), hit.doc_id))
                    .collect();
                hits.sort();
                bm25_hits.insert((project.to_owned(), text.to_owned()), hits);
            }
        }
        Snapshot {
            sessions,
            segments,
            open_segments,
            segment_grips,
            grips,
            nodes,
            internal_tables,
            bm25_doc_counts: status.doc_counts,
            bm25_docs: bm25_documents(&Node::bm25_settings(&node.dir)),
            bm25_hits,
            bm25_cursor_at_head: status.cursor == head.0,
        }
    }
}

/// Every live document of the current generation, read through a second, read-only
/// view of the index.
fn bm25_documents(settings: &Bm25Settings) -> Vec<IndexedDoc> {
    let index = IndexDir::new(&settings.index_dir)
        .open_read_only(settings.memory_budget_bytes)
        .expect("open read-only")
        .expect("an index exists");
    let schema = index.schema().clone();
    let searcher = index.searcher();
    let addresses = searcher
        .search(&AllQuery, &DocSetCollector)
        .expect("every document");
    let mut docs: Vec<IndexedDoc> = addresses
        .into_iter()
        .map(|address| {
            let document: TantivyDocument = searcher.doc(address).expect("stored document");
            let text = |field| {
                document
                    .get_first(field)
                    .and_then(|value| value.as_str().map(str::to_owned))
            };
            IndexedDoc {
                project_id: text(schema.project_id).expect("project_id"),
                doc_type: text(schema.doc_type).expect("doc_type"),
                doc_id: text(schema.doc_id).expect("doc_id"),
                session_id: text(schema.session_id),
                level: text(schema.level),
                text: text(schema.text).expect("text"),
                timestamp_ms: document
                    .get_first(schema.timestamp_ms)
                    .and_then(|value| value.as_u64())
                    .expect("timestamp_ms"),
            }
        })
        .collect();
    docs.sort();
    docs
}

/// What the log holds, folded from the appends: the first event of each
/// (project, event id) wins, in append order.
#[derive(Default)]
struct Model {
    events: Vec<Event>,
    ids: BTreeSet<(String, String)>,
}

#[derive(Debug, PartialEq)]
struct SessionFold {
    num_events: u64,
    first_timestamp_ms: u64,
    last_timestamp_ms: u64,
    last_event_id: String,
    event_ids: BTreeSet<String>,
}

impl Model {
    fn append(&mut self, events: &[Event]) {
        for event in events {
            if self
                .ids
                .insert((event.project_id.clone(), event.event_id.clone()))
            {
                self.events.push(event.clone());
            }
        }
    }

    fn sessions(&self) -> BTreeMap<(String, String), SessionFold> {
        let mut sessions: BTreeMap<(String, String), SessionFold> = BTreeMap::new();
        for event in &self.events {
            let key = (event.project_id.clone(), event.session_id.clone());
            let fold = sessions.entry(key).or_insert_with(|| SessionFold {
                num_events: 0,
                first_timestamp_ms: u64::MAX,
                last_timestamp_ms: 0,
                last_event_id: String::new(),
                event_ids: BTreeSet::new(),
            });
            fold.num_events += 1;
            fold.first_timestamp_ms = fold.first_timestamp_ms.min(event.timestamp_ms);
            fold.last_timestamp_ms = fold.last_timestamp_ms.max(event.timestamp_ms);
            fold.last_event_id.clone_from(&event.event_id);
            fold.event_ids.insert(event.event_id.clone());
        }
        sessions
    }
}

/// The model's view checked against a snapshot: the catalog matches the fold, every
/// event is in exactly one segment (closed or open) of its session, every indexable
/// event is a BM25 document.
fn check_against_model(model: &Model, snapshot: &Snapshot) -> Result<(), TestCaseError> {
    let folds = model.sessions();
    let catalog: BTreeMap<(String, String), SessionFold> = snapshot
        .sessions
        .iter()
        .map(|shape| {
            let key = (shape.project_id.clone(), shape.session_id.clone());
            let event_ids = folds
                .get(&key)
                .map(|fold| fold.event_ids.clone())
                .unwrap_or_default();
            let fold = SessionFold {
                num_events: shape.num_events,
                first_timestamp_ms: shape.first_timestamp_ms,
                last_timestamp_ms: shape.last_timestamp_ms,
                last_event_id: shape.last_event_id.clone(),
                event_ids,
            };
            (key, fold)
        })
        .collect();
    prop_assert_eq!(&catalog, &folds, "the session catalog is the model's fold");

    let mut segmented: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for segment in snapshot.segments.iter().chain(&snapshot.open_segments) {
        segmented
            .entry((segment.project_id.clone(), segment.session_id.clone()))
            .or_default()
            .extend(segment.events.iter().map(|(id, _, _)| id.clone()));
    }
    for ids in segmented.values_mut() {
        ids.sort();
    }
    let expected: BTreeMap<(String, String), Vec<String>> = folds
        .iter()
        .map(|(key, fold)| (key.clone(), fold.event_ids.iter().cloned().collect()))
        .collect();
    prop_assert_eq!(
        segmented,
        expected,
        "every event is in exactly one segment of its session"
    );

    let indexable: Vec<IndexedDoc> = model
        .events
        .iter()
        .filter_map(event_doc)
        .map(|doc| IndexedDoc {
            project_id: doc.project_id,
            doc_type: doc.doc_type.as_str().to_owned(),
            doc_id: doc.doc_id,
            session_id: doc.session_id,
            level: doc.level,
            text: doc.text,
            timestamp_ms: doc.timestamp_ms,
        })
        .collect();
    let mut indexed_events: Vec<&IndexedDoc> = snapshot
        .bm25_docs
        .iter()
        .filter(|doc| doc.doc_type == "event")
        .collect();
    indexed_events.sort();
    let mut expected_events: Vec<&IndexedDoc> = indexable.iter().collect();
    expected_events.sort();
    prop_assert_eq!(
        indexed_events,
        expected_events,
        "bm25 holds every event with text"
    );
    Ok(())
}

/// Compares two snapshots part by part, so a failure names the part.
fn check_identical(actual: &Snapshot, expected: &Snapshot) -> Result<(), TestCaseError> {
    prop_assert_eq!(&actual.sessions, &expected.sessions, "session catalog");
    prop_assert_eq!(&actual.segments, &expected.segments, "closed segments");
    prop_assert_eq!(
        &actual.open_segments,
        &expected.open_segments,
        "open segments"
    );
    prop_assert_eq!(
        &actual.segment_grips,
        &expected.segment_grips,
        "grips per segment"
    );
    prop_assert_eq!(&actual.grips, &expected.grips, "all grips");
    prop_assert_eq!(&actual.nodes, &expected.nodes, "toc nodes");
    prop_assert_eq!(
        &actual.internal_tables,
        &expected.internal_tables,
        "df tables, membership"
    );
    prop_assert_eq!(
        &actual.bm25_doc_counts,
        &expected.bm25_doc_counts,
        "bm25 doc counts"
    );
    prop_assert_eq!(&actual.bm25_docs, &expected.bm25_docs, "bm25 documents");
    prop_assert_eq!(&actual.bm25_hits, &expected.bm25_hits, "bm25 hits");
    prop_assert!(actual.bm25_cursor_at_head, "bm25 committed up to the head");
    prop_assert!(
        expected.bm25_cursor_at_head,
        "reference bm25 committed up to the head"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any interleaving of appends, restarts, partial catch-ups, replays, rebuilds and
    /// truncation ends, once everything caught up, in the state a fresh store reaches
    /// from the same events appended at once: catalog, segments, grips, TOC, BM25.
    #[test]
    fn projections_match_a_fresh_build_and_the_model(
        ops in prop::collection::vec(op_strategy(), 1..=8).prop_map(materialize)
    ) {
        // The wall clock of idle closing never moves (see the module docs).
        let clock = ManualClock::new(BASE_MS);
        let temp = scratch_dir();
        let mut node = Node::open(&temp.path().join("node"), clock.clone());
        let mut model = Model::default();
        let mut appended: Vec<Event> = Vec::new();
        for op in ops {
            if let Op::Append(Batch(events)) = &op {
                model.append(events);
                appended.extend(events.iter().cloned());
            }
            node = node.run(op);
        }
        node.catch_up_all();
        let actual = Snapshot::of(&node);

        let mut reference = Node::open(&temp.path().join("reference"), clock);
        // The same events, duplicates included, in one append.
        reference.store.append_events(&appended).expect("append");
        reference.catch_up_all();
        let expected = Snapshot::of(&reference);

        for project in PROJECTS {
            let num_events = model.events.iter().filter(|e| e.project_id == project).count() as u64;
            prop_assert_eq!(node.store.event_count(project), num_events);
        }
        check_against_model(&model, &expected)?;
        check_against_model(&model, &actual)?;
        check_identical(&actual, &expected)?;
    }
}

/// A scratch directory, in memory where the system has one: a fresh store and its
/// projections create a dozen keyspaces, each with a directory fsync, and on a busy
/// disk that is seconds per case; a restart in this test is a process restart, never a
/// power loss, so nothing here depends on what an fsync guarantees.
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new().prefix("model-").tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("tempdir")
}
