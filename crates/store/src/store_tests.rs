use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_types::{AppendOutcome, Event, EventKind, OutboxSeq, Role};
use proptest::prelude::*;

use super::*;
use crate::compact::compact_after_forget;
use crate::error::{Result, StoreError};
use crate::records::{DeadLetter, DerivedEntry, FeedItem};

fn event(project: &str, id: &str, session: &str, ts: u64) -> Event {
    Event {
        event_id: id.to_owned(),
        session_id: session.to_owned(),
        project_id: project.to_owned(),
        agent_id: None,
        timestamp_ms: ts,
        kind: EventKind::UserMessage,
        role: Role::User,
        text: format!("text of {id}"),
        metadata: BTreeMap::from([("id".to_owned(), id.to_owned())]),
    }
}

fn open(dir: &Path) -> Store {
    Store::open(dir, &StoreOptions::default()).expect("open store")
}

#[test]
fn store_is_shared_across_threads() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Store>();
}

#[test]
fn append_dedupes_against_log_and_within_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let first = store
        .append_events(&[event("p", "a", "s", 1), event("p", "b", "s", 2)])
        .expect("append");
    assert_eq!(
        first,
        vec![
            AppendOutcome::Appended(OutboxSeq(1)),
            AppendOutcome::Appended(OutboxSeq(2))
        ]
    );
    let second = store
        .append_events(&[
            event("p", "b", "s", 2),
            event("p", "c", "s", 3),
            event("p", "c", "s", 3),
            event("q", "a", "s", 1),
        ])
        .expect("append");
    assert_eq!(
        second,
        vec![
            AppendOutcome::Duplicate(OutboxSeq(2)),
            AppendOutcome::Appended(OutboxSeq(3)),
            AppendOutcome::Duplicate(OutboxSeq(3)),
            AppendOutcome::Appended(OutboxSeq(4)),
        ]
    );
    assert_eq!(store.event_count("p"), 3);
    assert_eq!(store.event_count("q"), 1);
    assert_eq!(store.head(), OutboxSeq(4));
}

#[test]
fn a_second_process_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _store = open(dir.path());
    match Store::open(dir.path(), &StoreOptions::default()) {
        Err(StoreError::Locked { .. }) => {}
        Err(other) => panic!("expected Locked, got {other}"),
        Ok(_) => panic!("expected Locked, opened twice"),
    }
}

#[test]
fn scans_in_time_order_by_project_and_session_and_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    store
        .append_events(&[
            event("p", "late", "s1", 30),
            event("p", "early", "s2", 10),
            event("p", "mid", "s1", 20),
            event("pp", "other", "s1", 15),
        ])
        .expect("append");
    let ids = |items: Vec<Result<(OutboxSeq, Event)>>| -> Vec<String> {
        items
            .into_iter()
            .map(|r| r.expect("scan").1.event_id)
            .collect()
    };
    assert_eq!(
        ids(store.scan_events("p", None, None, None).collect()),
        ["early", "mid", "late"]
    );
    assert_eq!(
        ids(store.scan_events("p", Some("s1"), None, None).collect()),
        ["mid", "late"]
    );
    assert_eq!(
        ids(store.scan_events("p", None, Some(15), Some(30)).collect()),
        ["mid"]
    );
    assert_eq!(
        ids(store.scan_events("pp", None, None, None).collect()),
        ["other"]
    );
    assert!(store.scan_events("nope", None, None, None).next().is_none());
}

#[test]
fn projection_batches_commit_cursor_derived_entries_and_dead_letters_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    store
        .append_events(&[event("p", "a", "s", 1)])
        .expect("append");
    let keyspace = store.projection_keyspace("test").expect("keyspace");
    let mut batch = store.projection_batch();
    batch.insert(&keyspace, b"k", b"v");
    batch.append_derived(DerivedEntry {
        kind: "seen".into(),
        project_id: "p".into(),
        key: "a".into(),
    });
    batch.dead_letter(DeadLetter::new("test", Some(1), "boom", b"payload", 3));
    batch.set_cursor("test", OutboxSeq(1));
    assert_eq!(
        store.commit_projection(batch).expect("commit"),
        vec![OutboxSeq(2)]
    );
    assert_eq!(store.cursor("test").expect("cursor"), OutboxSeq(1));
    assert_eq!(keyspace.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
    let feed = store.read_feed(OutboxSeq(1), 10).expect("feed");
    assert!(
        matches!(&feed[..], [FeedItem::Derived { seq: OutboxSeq(2), entry }] if entry.key == "a")
    );
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.error, "boom");
    assert_eq!(store.status().expect("status").dead_letters, 1);
}

#[test]
fn a_redelivered_dead_letter_is_parked_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let first = store
        .record_dead_letter(
            DeadLetter::new("jetstream", None, "bad", b"x", 1),
            Some("S:7"),
        )
        .expect("park");
    let again = store
        .record_dead_letter(
            DeadLetter::new("jetstream", None, "bad", b"x", 1),
            Some("S:7"),
        )
        .expect("park");
    let other = store
        .record_dead_letter(
            DeadLetter::new("jetstream", None, "bad", b"y", 1),
            Some("S:8"),
        )
        .expect("park");
    assert_eq!(first, again);
    assert_ne!(first, other);
    assert_eq!(store.dead_letters(10).expect("list").len(), 2);
    drop(store);
    let store = open(dir.path());
    assert_eq!(
        store
            .record_dead_letter(
                DeadLetter::new("jetstream", None, "bad", b"x", 1),
                Some("S:7")
            )
            .expect("park"),
        first
    );
    assert_eq!(store.status().expect("status").dead_letters, 2);
}

#[test]
fn the_feed_merges_the_log_with_what_the_outbox_keeps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let derived = |key: &str| {
        let mut batch = store.projection_batch();
        batch.append_derived(DerivedEntry {
            kind: "k".into(),
            project_id: "p".into(),
            key: key.into(),
        });
        store.commit_projection(batch).expect("commit");
    };
    // Events 1-20, derived 21, events 22-41, derived 42, derived 43.
    let events = |from: u64| -> Vec<Event> {
        (from..from + 20)
            .map(|i| event("p", &format!("e{i}"), "s", i))
            .collect()
    };
    store.append_events(&events(0)).expect("append");
    derived("d1");
    store.append_events(&events(20)).expect("append");
    derived("d2");
    derived("d3");
    // Events never go to the outbox: only the three derived entries are there.
    assert_eq!(store.outbox_low().expect("low"), OutboxSeq(21));
    let read_all = |page: usize| {
        let mut cursor = OutboxSeq::ZERO;
        let mut seen = Vec::new();
        loop {
            let items = store.read_feed(cursor, page).expect("feed");
            let Some(last) = items.last() else { break };
            cursor = last.seq();
            seen.extend(items.into_iter().map(|item| match item {
                FeedItem::Event { seq, event } => (seq.0, event.event_id),
                FeedItem::Derived { seq, entry } => (seq.0, entry.key),
                FeedItem::Truncated { seq } => (seq.0, "truncated".to_owned()),
            }));
        }
        (seen, cursor)
    };
    let mut expected: Vec<(u64, String)> = (0..20).map(|i| (i + 1, format!("e{i}"))).collect();
    expected.push((21, "d1".into()));
    expected.extend((20..40).map(|i| (i + 2, format!("e{i}"))));
    expected.extend([(42, "d2".into()), (43, "d3".into())]);
    for page in [1, 7, 1000] {
        assert_eq!(read_all(page).0, expected, "page {page}");
    }

    // Truncated below every cursor, d1 and d2 go; a replay from zero still sees every
    // event in order, and the entry the outbox keeps.
    store.set_cursor("slow", OutboxSeq(42)).expect("cursor");
    store.set_cursor("fast", OutboxSeq(43)).expect("cursor");
    assert_eq!(store.truncate_outbox().expect("truncate"), 2);
    assert_eq!(store.outbox_low().expect("low"), OutboxSeq(43));
    expected.retain(|(_, key)| key != "d1" && key != "d2");
    assert_eq!(read_all(7).0, expected);

    // A truncated entry at the head: the reader's cursor still reaches it.
    store.set_cursor("slow", OutboxSeq(43)).expect("cursor");
    store.truncate_outbox().expect("truncate");
    expected.pop();
    expected.push((43, "truncated".into()));
    let (seen, cursor) = read_all(7);
    assert_eq!(seen, expected);
    assert_eq!(cursor, store.head());
}

#[test]
fn a_store_whose_outbox_still_names_its_events_feeds_each_event_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let events: Vec<Event> = (0..5)
        .map(|i| event("p", &format!("e{i}"), "s", i))
        .collect();
    store.append_events(&events).expect("append");
    // What builds before the outbox left events out wrote beside each event.
    for seq in 1..=5 {
        let record = crate::records::encode_outbox(&crate::records::OutboxRecordV1::Event {
            project_id: "p".into(),
        })
        .expect("encode");
        store
            .inner
            .outbox
            .insert(crate::keys::seq_key(OutboxSeq(seq)), record)
            .expect("insert");
    }
    // A format-1 store: opened again, it is upgraded and its event entries are gone.
    store
        .inner
        .meta
        .insert(
            super::handle::META_FORMAT,
            crate::records::encode_u64(1).expect("encode"),
        )
        .expect("insert");
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.outbox_low().expect("low"), store.head().next());
    let format = store
        .inner
        .meta
        .get(super::handle::META_FORMAT)
        .expect("get")
        .expect("format");
    assert_eq!(
        crate::records::decode_u64(&format).expect("decode"),
        STORE_FORMAT_VERSION
    );
    let feed = store.read_feed(OutboxSeq::ZERO, 100).expect("feed");
    let ids: Vec<String> = feed
        .into_iter()
        .map(|item| match item {
            FeedItem::Event { event, .. } => event.event_id,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(ids, ["e0", "e1", "e2", "e3", "e4"]);
}

#[test]
fn reopening_many_times_keeps_every_acknowledged_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut total = 0u64;
    for round in 0..20u64 {
        let store = open(dir.path());
        assert_eq!(store.head(), OutboxSeq(total));
        assert_eq!(store.event_count("p"), total);
        let events: Vec<Event> = (0..round + 1)
            .map(|i| event("p", &format!("r{round}-{i}"), "s", i))
            .collect();
        store.append_events(&events).expect("append");
        // A retried batch after a reopen is a duplicate, not a second copy.
        if round > 0 {
            let retry = store
                .append_events(&[event("p", &format!("r{}-0", round - 1), "s", 0)])
                .expect("retry");
            assert!(matches!(retry[0], AppendOutcome::Duplicate(_)));
        }
        total += round + 1;
    }
    let store = open(dir.path());
    assert_eq!(
        store
            .read_feed(OutboxSeq::ZERO, 10_000)
            .expect("feed")
            .len() as u64,
        total
    );
}

#[test]
fn a_mangled_journal_tail_recovers_to_the_last_whole_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open(dir.path());
        store
            .append_events(&[event("p", "a", "s", 1)])
            .expect("append");
        store
            .append_events(&[event("p", "b", "s", 2)])
            .expect("append");
    }
    // Append garbage to the newest journal file, as a torn write would leave it.
    let journal = newest_journal(dir.path()).expect("a journal file exists");
    let mut bytes = std::fs::read(&journal).expect("read journal");
    bytes.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03]);
    std::fs::write(&journal, bytes).expect("write journal");
    let store = open(dir.path());
    assert_eq!(store.head(), OutboxSeq(2));
    let ids: Vec<String> = store
        .read_feed(OutboxSeq::ZERO, 10)
        .expect("feed")
        .into_iter()
        .map(|i| match i {
            FeedItem::Event { event, .. } => event.event_id,
            FeedItem::Derived { .. } | FeedItem::Truncated { .. } => String::new(),
        })
        .collect();
    assert_eq!(ids, ["a", "b"]);
    store
        .append_events(&[event("p", "c", "s", 3)])
        .expect("append after recovery");
    assert_eq!(store.head(), OutboxSeq(3));
}

/// A full disk stops a journal write at a page boundary, and the rest of the journal
/// file (fjall preallocates it, sparse) reads as zeros: the last batch is cut anywhere,
/// its tail zeros. Every such cut must open to the batches before it. (fjall 3.1's
/// journal reader checks two length fields of an item with a `debug_assert_eq!` before
/// its torn-tail handling, so a cut inside an item's header panicked the open in debug
/// builds: the workspace builds fjall without debug assertions, see `Cargo.toml`.)
#[test]
fn a_journal_cut_anywhere_in_its_last_batch_and_zeroed_opens_to_the_batches_before() {
    let original = tempfile::tempdir().expect("tempdir");
    let (first_end, second_end) = {
        let store = open(original.path());
        store
            .append_events(&[event("p", "a", "s", 1)])
            .expect("append");
        let journal = newest_journal(original.path()).expect("a journal file exists");
        let first_end = written_len(&journal);
        store
            .append_events(&[event("p", "b", "s", 2)])
            .expect("append");
        (first_end, written_len(&journal))
    };
    assert!(
        second_end > first_end + 40,
        "the second batch spans its items: {first_end}..{second_end}"
    );
    let files = StoreFiles::read(original.path());
    let journal = newest_journal(original.path()).expect("a journal file exists");
    let journal = journal.strip_prefix(original.path()).expect("inside");
    for at in first_end..second_end {
        let dir = tempfile::tempdir().expect("tempdir");
        files.write(dir.path());
        zero_range(&dir.path().join(journal), at, second_end);
        let store = open(dir.path());
        let cut = at - first_end;
        assert_eq!(
            store.head(),
            OutboxSeq(1),
            "cut at {cut} of the second batch"
        );
        assert_eq!(store.event_count("p"), 1, "cut at {cut}");
        store
            .append_events(&[event("p", "c", "s", 3)])
            .expect("append after recovery");
        assert_eq!(store.head(), OutboxSeq(2));
    }
}

/// A closed store's files, to write out again and again: a journal only up to what was
/// written, the rest left sparse as fjall preallocates it (64 MiB copied byte by byte
/// for every cut would make the test slow).
struct StoreFiles(Vec<(PathBuf, Vec<u8>, u64)>);

impl StoreFiles {
    fn read(root: &Path) -> Self {
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let mut bytes = std::fs::read(&path).expect("read");
                let len = bytes.len() as u64;
                bytes.truncate(written_part(&bytes));
                let relative = path.strip_prefix(root).expect("inside").to_path_buf();
                files.push((relative, bytes, len));
            }
        }
        StoreFiles(files)
    }

    fn write(&self, root: &Path) {
        for (relative, bytes, len) in &self.0 {
            let path = root.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            let file = std::fs::File::create(&path).expect("create");
            std::io::Write::write_all(&mut &file, bytes).expect("write");
            file.set_len(*len).expect("length");
        }
    }
}

/// Where the written part of a journal ends: its last non-zero byte, plus one.
fn written_len(journal: &Path) -> u64 {
    written_part(&std::fs::read(journal).expect("read journal")) as u64
}

/// The length of `bytes` without its trailing zeros.
fn written_part(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |last| last + 1)
}

fn zero_range(path: &Path, from: u64, to: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open journal");
    file.seek(SeekFrom::Start(from)).expect("seek");
    file.write_all(&vec![0; usize::try_from(to - from).expect("small")])
        .expect("zero");
    file.sync_all().expect("sync");
}

fn newest_journal(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().and_then(|e| e.to_str()) == Some("jnl")
                || path
                    .parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    == Some("journals")
            {
                found.push((entry.metadata().ok()?.modified().ok()?, path));
            }
        }
    }
    found.sort();
    found.pop().map(|(_, path)| path)
}

/// Operations of the model-based test.
#[derive(Clone, Debug)]
enum Op {
    /// Append a batch of (project index, id number) events.
    Append(Vec<(u8, u8)>),
    /// Drop the store and open it again.
    Reopen,
    /// A consumer commits a derived entry and moves its cursor to the head.
    Derive(u8),
    /// Truncate the outbox below the slowest cursor.
    Truncate,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec((0u8..2, 0u8..40), 1..12).prop_map(Op::Append),
        2 => Just(Op::Reopen),
        2 => (0u8..5).prop_map(Op::Derive),
        1 => Just(Op::Truncate),
    ]
}

/// A stored item: Ok((project, event id)) or Err(derived key).
type ModelItem = std::result::Result<(String, String), String>;

#[derive(Default)]
struct Model {
    /// Every stored item by position.
    items: Vec<ModelItem>,
    ids: BTreeMap<(String, String), u64>,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Appends, reopens, derived commits and truncation, folded into an in-memory model:
    /// the store must agree on outcomes, head, counts and the full replayed feed.
    #[test]
    fn store_matches_the_model(ops in proptest::collection::vec(op_strategy(), 1..30)) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = open(dir.path());
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Append(batch) => {
                    let events: Vec<Event> = batch.iter().map(|(p, n)| {
                        let project = format!("p{p}");
                        event(&project, &format!("id{n}"), "s", u64::from(*n))
                    }).collect();
                    let outcomes = store.append_events(&events).expect("append");
                    for (event, outcome) in events.iter().zip(outcomes) {
                        let key = (event.project_id.clone(), event.event_id.clone());
                        match model.ids.get(&key) {
                            Some(seq) => prop_assert_eq!(outcome, AppendOutcome::Duplicate(OutboxSeq(*seq))),
                            None => {
                                model.items.push(Ok(key.clone()));
                                let seq = model.items.len() as u64;
                                model.ids.insert(key, seq);
                                prop_assert_eq!(outcome, AppendOutcome::Appended(OutboxSeq(seq)));
                            }
                        }
                    }
                }
                Op::Reopen => {
                    drop(store);
                    store = open(dir.path());
                }
                Op::Derive(n) => {
                    let mut batch = store.projection_batch();
                    let key = format!("d{}-{n}", model.items.len());
                    batch.append_derived(DerivedEntry { kind: "k".into(), project_id: "p0".into(), key: key.clone() });
                    batch.set_cursor(&format!("c{n}"), store.head());
                    store.commit_projection(batch).expect("commit");
                    model.items.push(Err(key));
                }
                Op::Truncate => {
                    store.truncate_outbox().expect("truncate");
                }
            }
            prop_assert_eq!(store.head(), OutboxSeq(model.items.len() as u64));
        }
        for project in ["p0", "p1"] {
            let expected = model.ids.keys().filter(|(p, _)| p == project).count() as u64;
            prop_assert_eq!(store.event_count(project), expected);
        }
        // Replay from zero: every event in order; derived entries unless truncated away.
        let low = store.outbox_low().expect("low").0;
        let feed = store.read_feed(OutboxSeq::ZERO, 100_000).expect("feed");
        let mut replayed = Vec::new();
        let mut batch_feed = feed;
        let mut replay_cursor = OutboxSeq::ZERO;
        while let Some(last) = batch_feed.last() {
            let cursor = last.seq();
            replay_cursor = cursor;
            replayed.extend(batch_feed);
            batch_feed = store.read_feed(cursor, 100_000).expect("feed");
        }
        let expected: Vec<(u64, ModelItem)> = model.items.iter().enumerate()
            .map(|(i, item)| (i as u64 + 1, item.clone()))
            .filter(|(seq, item)| item.is_ok() || *seq >= low)
            .collect();
        let actual: Vec<(u64, ModelItem)> = replayed.into_iter().filter_map(|item| match item {
            FeedItem::Event { seq, event } => Some((seq.0, Ok((event.project_id, event.event_id)))),
            FeedItem::Derived { seq, entry } => Some((seq.0, Err(entry.key))),
            FeedItem::Truncated { .. } => None,
        }).collect();
        prop_assert_eq!(actual, expected);
        // A replaying consumer ends at the head, truncated derived entries or not.
        prop_assert_eq!(replay_cursor, store.head());
    }
}

/// Two sessions interleaved in the log, one event out of time order, another project
/// with a session of the same name.
fn interleaved_sessions(store: &Store) {
    store
        .append_events(&[
            event("p", "a1", "a", 10),
            event("p", "b1", "b", 11),
            event("p", "a3", "a", 30),
            event("p", "a2", "a", 20),
            event("q", "a9", "a", 25),
            event("p", "a4", "a", 40),
        ])
        .expect("append");
}

/// The stored event `id` of project `p`, with its position.
fn stored(store: &Store, id: &str) -> (Event, OutboxSeq) {
    let seq = store
        .seq_of_event_id("p", id)
        .expect("read")
        .expect("stored");
    (store.event(seq).expect("read").expect("stored"), seq)
}

#[test]
fn session_neighbors_are_the_turns_around_an_event_in_its_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    interleaved_sessions(&store);
    let at = |id: &str| {
        let (event, seq) = stored(&store, id);
        let (before, after) = store.session_neighbors(&event, seq).expect("neighbors");
        (before.map(|e| e.event_id), after.map(|e| e.event_id))
    };
    assert_eq!(at("a2"), (Some("a1".into()), Some("a3".into())));
    assert_eq!(at("a1"), (None, Some("a2".into())));
    assert_eq!(at("a3"), (Some("a2".into()), Some("a4".into())));
    assert_eq!(at("a4"), (Some("a3".into()), None));
    assert_eq!(at("b1"), (None, None));
}

#[test]
fn session_before_is_the_turns_before_an_event_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    interleaved_sessions(&store);
    let before = |id: &str, limit: usize| {
        let (event, seq) = stored(&store, id);
        store
            .session_before(&event, seq, limit)
            .expect("before")
            .into_iter()
            .map(|e| e.event_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(before("a4", 10), ["a1", "a2", "a3"]);
    assert_eq!(before("a4", 2), ["a2", "a3"]);
    assert_eq!(before("a3", 10), ["a1", "a2"]);
    assert!(before("a1", 10).is_empty());
    assert!(before("b1", 10).is_empty());
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("read dir") {
                stack.push(entry.expect("entry").path());
            }
        } else if std::fs::read(&path)
            .expect("read")
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
        {
            found.push(path);
        }
    }
    found
}

/// Appends three events (one with `secret`), a projection record and a dead letter that
/// hold it, and a consumer cursor; returns the store.
fn store_with_secret(dir: &Path, secret: &str) -> Store {
    let store = open(dir);
    let mut leaked = event("p", "e2", "s", 2);
    leaked.text = format!("the vault passphrase is {secret}");
    leaked
        .metadata
        .insert("command".to_owned(), format!("login {secret}"));
    store
        .append_events(&[event("p", "e1", "s", 1), leaked, event("p", "e3", "s", 3)])
        .expect("append");
    let projection = store.projection_keyspace("toc").expect("keyspace");
    let mut batch = store.projection_batch();
    batch.insert(&projection, b"segment", format!("summary: {secret}"));
    batch.set_cursor("segmenter", OutboxSeq(3));
    store.commit_projection(batch).expect("commit");
    store
        .record_dead_letter(
            DeadLetter::new(
                "ingest",
                None,
                "missing timestamp",
                format!("{{\"text\":\"{secret}\"}}").as_bytes(),
                1,
            ),
            None,
        )
        .expect("dead letter");
    store
}

fn forget_secret(store: &Store, secret: &str) -> ForgetBatch {
    let mut forget = ForgetBatch::default();
    for item in store.log_events(OutboxSeq::ZERO) {
        let (seq, mut event) = item.expect("event");
        if event.text.contains(secret) {
            event.text = event.text.replace(secret, "[FORGOTTEN]");
            for value in event.metadata.values_mut() {
                *value = value.replace(secret, "[FORGOTTEN]");
            }
            forget.rewrites.push((seq, event));
        }
    }
    for item in store.all_dead_letters() {
        let (id, mut dead_letter) = item.expect("dead letter");
        dead_letter.payload = b"[FORGOTTEN]".to_vec();
        forget.dead_letters.push((id, dead_letter));
    }
    let mut tombstone = event("p", "forget-1", "memory-forget", 9);
    tombstone.kind = EventKind::MemoryForgotten;
    tombstone.role = Role::System;
    forget.tombstones.push(tombstone);
    forget
}

#[test]
fn forget_then_compaction_leaves_no_copy_of_the_old_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "zq7vkplmxwr9tbnq4hd2";
    let store = store_with_secret(dir.path(), secret);
    assert!(
        !files_holding(dir.path(), secret).is_empty(),
        "the test needs the secret on disk first"
    );
    let head_before = store.head();
    let forget = forget_secret(&store, secret);
    assert_eq!(forget.rewrites.len(), 1);
    let outcomes = store.forget(&forget).expect("forget");
    assert_eq!(outcomes, vec![AppendOutcome::Appended(head_before.next())]);
    assert!(store.forget_pending().expect("pending").is_some());
    drop(store);
    // Nothing may read the store until the forget has finished.
    assert!(matches!(
        Store::open(dir.path(), &StoreOptions::default()),
        Err(StoreError::ForgetUnfinished { .. })
    ));

    let report = compact_after_forget(dir.path(), &StoreOptions::default()).expect("compact");
    assert!(report.records > 0);
    assert_eq!(files_holding(dir.path(), secret), Vec::<PathBuf>::new());
    assert!(!dir.path().join(".forget-new").exists());
    assert!(!dir.path().join(".forget-old").exists());

    let store = open(dir.path());
    assert!(store.forget_pending().expect("pending").is_none());
    assert_eq!(store.head(), head_before.next());
    assert_eq!(store.event_count("p"), 4);
    let events: Vec<Event> = store
        .log_events(OutboxSeq::ZERO)
        .map(|item| item.expect("event").1)
        .collect();
    assert_eq!(events.len(), 4);
    assert_eq!(events[1].text, "the vault passphrase is [FORGOTTEN]");
    assert_eq!(events[1].metadata["command"], "login [FORGOTTEN]");
    assert_eq!(events[3].kind, EventKind::MemoryForgotten);
    // Indexes still answer for the rewritten event.
    assert_eq!(
        store.seq_of_event_id("p", "e2").expect("id index"),
        Some(OutboxSeq(2))
    );
    // Projections, cursors and the outbox start over, replayed from the log.
    assert!(store.cursors().expect("cursors").is_empty());
    assert!(
        store
            .projection_keyspace("toc")
            .expect("keyspace")
            .is_empty()
            .expect("empty")
    );
    let feed = store.read_feed(OutboxSeq::ZERO, 100).expect("feed");
    let replayed: Vec<&str> = feed
        .iter()
        .filter_map(|item| match item {
            FeedItem::Event { event, .. } => Some(event.event_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(replayed, ["e1", "e2", "e3", "forget-1"]);
    let dead = store.dead_letters(10).expect("dead letters");
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].1.payload, b"[FORGOTTEN]");
    // The log goes on after the tombstone.
    assert_eq!(
        store
            .append_events(&[event("p", "e4", "s", 4)])
            .expect("append"),
        vec![AppendOutcome::Appended(OutboxSeq(5))]
    );
}

#[test]
fn a_rewrite_cannot_change_an_events_identity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    store
        .append_events(&[event("p", "e1", "s", 1)])
        .expect("append");
    let mut moved = event("p", "e1", "other-session", 1);
    moved.text = "x".to_owned();
    let forget = ForgetBatch {
        rewrites: vec![(OutboxSeq(1), moved)],
        ..ForgetBatch::default()
    };
    assert!(matches!(
        store.forget(&forget),
        Err(StoreError::InvalidRewrite { seq: 1, .. })
    ));
    let missing = ForgetBatch {
        rewrites: vec![(OutboxSeq(7), event("p", "e1", "s", 1))],
        ..ForgetBatch::default()
    };
    assert!(store.forget(&missing).is_err());
    assert!(store.forget_pending().expect("pending").is_none());
    assert_eq!(
        store.event(OutboxSeq(1)).expect("read"),
        Some(event("p", "e1", "s", 1))
    );
}

#[test]
fn a_swap_cut_short_is_completed_at_the_next_open() {
    let secret = "pq8wnvc3lkx7rmt5yb6s";
    // Crash after the copy was complete and one old file had been moved away.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_secret(dir.path(), secret);
    store
        .forget(&forget_secret(&store, secret))
        .expect("forget");
    drop(store);
    crate::compact::copy_fresh(dir.path(), &StoreOptions::default()).expect("copy");
    let old = dir.path().join(".forget-old");
    std::fs::create_dir_all(&old).expect("mkdir");
    std::fs::rename(dir.path().join("version"), old.join("version")).expect("move");
    let store = open(dir.path());
    assert_eq!(store.event_count("p"), 4);
    assert_eq!(files_holding(dir.path(), secret), Vec::<PathBuf>::new());
    drop(store);

    // Crash before the copy was complete: the old database stays, still pending.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_secret(dir.path(), secret);
    store
        .forget(&forget_secret(&store, secret))
        .expect("forget");
    drop(store);
    crate::compact::copy_fresh(dir.path(), &StoreOptions::default()).expect("copy");
    std::fs::remove_file(dir.path().join(".forget-new").join("READY")).expect("rm");
    assert!(matches!(
        Store::open(dir.path(), &StoreOptions::default()),
        Err(StoreError::ForgetUnfinished { .. })
    ));
    assert!(!dir.path().join(".forget-new").exists());
    compact_after_forget(dir.path(), &StoreOptions::default()).expect("compact");
    let store = open(dir.path());
    assert_eq!(store.event_count("p"), 4);
}

#[test]
fn no_open_while_a_compaction_holds_the_forget_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(open(dir.path()));
    let lock = crate::compact::ForgetLock::acquire(dir.path()).expect("lock");
    assert!(matches!(
        Store::open(dir.path(), &StoreOptions::default()),
        Err(StoreError::Locked { .. })
    ));
    assert!(matches!(
        compact_after_forget(dir.path(), &StoreOptions::default()),
        Err(StoreError::Locked { .. })
    ));
    drop(lock);
    drop(open(dir.path()));
}

#[test]
fn a_replica_records_how_far_it_applied_the_log_with_the_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    assert_eq!(store.applied_stream_seq().expect("read"), 0);
    let outcomes = store
        .append_replicated(
            &[
                (event("p", "a", "s", 1), 100),
                (event("p", "b", "s", 2), 100),
            ],
            7,
        )
        .expect("append");
    assert_eq!(outcomes.len(), 2);
    // A message whose events are all known still moves the sequence on.
    store
        .append_replicated(&[(event("p", "a", "s", 1), 100)], 9)
        .expect("append");
    drop(store);
    let store = open(dir.path());
    assert_eq!(store.applied_stream_seq().expect("read"), 9);
    assert_eq!(store.event_count("p"), 2);
    assert_eq!(store.head(), OutboxSeq(2));
}

#[test]
fn a_replica_remembers_its_partitions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    assert_eq!(store.replica_partitions().expect("read"), None);
    store.set_replica_partitions(&[0, 7, 300]).expect("write");
    drop(store);
    let store = open(dir.path());
    assert_eq!(
        store.replica_partitions().expect("read"),
        Some(vec![0, 7, 300])
    );
}

#[test]
fn derived_work_that_succeeds_does_not_end_a_refusal_of_ingest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let available = fs4::available_space(dir.path()).expect("free space");
    // Ingest needs more than there is, derived work half of that: less.
    let store = Store::open(
        dir.path(),
        &StoreOptions {
            min_free_mb: (available + available / 2) >> 20,
            ..StoreOptions::default()
        },
    )
    .expect("store");
    let err = store
        .append_events(&[event("p", "e1", "s", 1)])
        .expect_err("refused");
    assert!(matches!(err, StoreError::NoSpace { .. }), "{err}");
    assert!(store.write_failure().is_some());
    let mut batch = store.projection_batch();
    batch.set_cursor("c", OutboxSeq::ZERO);
    store
        .commit_projection(batch)
        .expect("derived work goes on");
    let failure = store.write_failure().expect("still refusing ingest");
    assert!(failure.contains("min_free_mb"), "{failure}");
    assert!(!store.is_poisoned());
}
