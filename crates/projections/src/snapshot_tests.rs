//! Snapshots of a real store and real indexes on disk, installed into another data dir.

use memory_search::DocType;
use memory_store::{Store, StoreOptions};
use memory_types::EventKind;

use super::*;
use crate::testsuite::{bm25_hit_ids, event, sample_store_with_bm25, sample_store_with_indexes};
use crate::{Bm25Handle, VectorHandle, model_identity};

fn open(dir: &Path) -> Store {
    Store::open(dir, &StoreOptions::default()).expect("open store")
}

#[test]
fn a_snapshot_installed_elsewhere_is_the_same_store_and_index_at_the_same_position() {
    let temp = tempfile::tempdir().expect("tempdir");
    let source = temp.path().join("a");
    let (store, settings) = sample_store_with_bm25(&source);
    let bm25 = Bm25Handle::open(settings);
    let head = store.head();
    let manifest = take(&store, Some(&bm25), None, &temp.path().join("snap")).expect("take");
    assert_eq!(manifest.store.outbox_head, head.0);
    assert_eq!(manifest.bm25.as_ref().expect("bm25").cursor, head.0);
    assert!(manifest.vector.is_none());
    // Writes after the instant are not in the snapshot.
    store
        .append_events(&[event(
            "late-1",
            "s99",
            1_900_000_000_000,
            EventKind::UserMessage,
            "late",
        )])
        .expect("append");
    let status = store.status().expect("status");

    let target = temp.path().join("b");
    let installed = install(
        &temp.path().join("snap"),
        &target,
        &InstallTargets {
            bm25: Some((target.join("bm25-index"), "events=true".to_owned())),
            vector: None,
        },
    )
    .expect("install");
    assert!(installed.bm25 && !installed.vector, "{installed:?}");
    assert!(!install_interrupted(&temp.path().join("snap")));
    let restored = open(&target);
    assert_eq!(restored.head(), head);
    let restored_status = restored.status().expect("status");
    assert_eq!(
        restored_status
            .events_by_project
            .get("p")
            .copied()
            .unwrap_or(0)
            + 1,
        status.events_by_project.get("p").copied().unwrap_or(0)
    );
    // No consumer ran since: the cursors are the source's.
    assert_eq!(restored_status.cursors, status.cursors);
    assert_eq!(
        restored_status.events_by_project.get("webapp"),
        status.events_by_project.get("webapp")
    );
    let restored_bm25 = Bm25Handle::open(crate::Bm25Settings::new(target.join("bm25-index")));
    assert!(
        restored_bm25.error().is_none(),
        "{:?}",
        restored_bm25.error()
    );
    assert!(!restored_bm25.needs_population());
    assert_eq!(restored_bm25.committed_cursor(), head);
    assert_eq!(
        bm25_hit_ids(
            &restored_bm25,
            "refresh token TTL",
            "webapp",
            DocType::Event
        ),
        bm25_hit_ids(&bm25, "refresh token TTL", "webapp", DocType::Event)
    );
}

#[test]
fn the_vector_index_travels_with_its_model_and_is_left_out_for_another() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, bm25_settings, vector_settings) = sample_store_with_indexes(&temp.path().join("a"));
    let bm25 = Bm25Handle::open(bm25_settings);
    let vector = VectorHandle::open(vector_settings.clone());
    assert!(vector.error().is_none(), "{:?}", vector.error());
    let head = store.head();
    for (name, model) in [
        ("b", model_identity(&vector_settings)),
        ("c", "other.onnx/384/events=true".to_owned()),
    ] {
        let snap = temp.path().join(format!("snap-{name}"));
        let manifest = take(&store, Some(&bm25), Some(&vector), &snap).expect("take");
        let part = manifest.vector.clone().expect("vector part");
        assert_eq!(part.cursor, head.0);
        assert!(part.files >= 1 && part.bytes > 0, "{part:?}");
        let target = temp.path().join(name);
        let installed = install(
            &snap,
            &target,
            &InstallTargets {
                bm25: Some((target.join("bm25-index"), "events=true".to_owned())),
                vector: Some((target.join("vector-index"), model.clone())),
            },
        )
        .expect("install");
        if name == "b" {
            assert!(
                installed.vector && installed.left_out.is_empty(),
                "{installed:?}"
            );
            let restored =
                VectorHandle::open(crate::VectorSettings::new(target.join("vector-index")));
            assert!(restored.error().is_none(), "{:?}", restored.error());
            assert_eq!(restored.committed_cursor(), head);
            assert_eq!(restored.status(head).num_docs, vector.status(head).num_docs);
        } else {
            assert!(!installed.vector, "{installed:?}");
            assert!(
                installed.left_out[0].contains("other.onnx"),
                "{installed:?}"
            );
            assert!(!target.join("vector-index").exists());
        }
    }
}

#[test]
fn a_manifest_of_another_format_is_refused() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = open(&temp.path().join("a"));
    let manifest = take(&store, None, None, &temp.path().join("snap")).expect("take");
    assert_eq!(manifest.store.outbox_head, 0);
    let mut other = manifest.clone();
    other.format = SNAPSHOT_FORMAT + 1;
    write_manifest(&temp.path().join("snap"), &other).expect("write");
    let err = install(
        &temp.path().join("snap"),
        &temp.path().join("b"),
        &InstallTargets::default(),
    )
    .expect_err("another format");
    assert!(err.to_string().contains("snapshot format"), "{err}");
    assert!(!temp.path().join("b").exists());
}

/// A snapshot says format 2 (its store's TOC ids carry the project), so a build that
/// reads format 1 only refuses it; this build still reads format 1 (an older replica's
/// snapshot, whose TOC the pipeline upgrades at its start) and nothing before it.
#[test]
fn snapshots_are_format_2_and_format_1_is_still_read() {
    let temp = tempfile::tempdir().expect("tempdir");
    let store = open(&temp.path().join("a"));
    let manifest = take(&store, None, None, &temp.path().join("snap")).expect("take");
    assert_eq!(manifest.format, 2);
    assert_eq!(
        read_manifest(&temp.path().join("snap"))
            .expect("read")
            .format,
        2
    );
    let older = SnapshotManifest {
        format: 1,
        ..manifest.clone()
    };
    older.check_format().expect("format 1 is read");
    let none = SnapshotManifest {
        format: 0,
        ..manifest
    };
    assert!(none.check_format().is_err());
    write_manifest(&temp.path().join("snap"), &older).expect("write");
    install(
        &temp.path().join("snap"),
        &temp.path().join("b"),
        &InstallTargets::default(),
    )
    .expect("a format-1 snapshot installs");
}

#[test]
fn an_install_cut_short_is_finished_by_the_next_one() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(&temp.path().join("a"));
    let bm25 = Bm25Handle::open(settings);
    let head = store.head();
    let snap = temp.path().join("b/.restore");
    take(&store, Some(&bm25), None, &snap).expect("take");
    // A crash after the index and part of the store were moved.
    let target = temp.path().join("b");
    std::fs::write(snap.join(INSTALLING), b"").expect("marker");
    std::fs::rename(snap.join(BM25_DIR), target.join("bm25-index")).expect("move");
    std::fs::rename(snap.join(STORE_DIR).join("version"), target.join("version")).expect("move");
    assert!(install_interrupted(&snap));
    let targets = InstallTargets {
        bm25: Some((target.join("bm25-index"), "events=true".to_owned())),
        vector: None,
    };
    install(&snap, &target, &targets).expect("finish");
    assert!(!install_interrupted(&snap));
    let restored = open(&target);
    assert_eq!(restored.head(), head);
    let restored_bm25 = Bm25Handle::open(crate::Bm25Settings::new(target.join("bm25-index")));
    assert_eq!(restored_bm25.committed_cursor(), head);
}

/// Snapshots taken while the index takes documents and commits (each commit may start
/// a tantivy merge, whose end rewrites `meta.json` and deletes the merged files): each
/// restores into an index that opens healthy at the cursor its manifest says.
#[test]
fn snapshots_taken_while_the_index_commits_restore_whole() {
    let temp = tempfile::tempdir().expect("tempdir");
    let (store, settings) = sample_store_with_bm25(&temp.path().join("a"));
    let bm25 = Bm25Handle::open(settings);
    let writing = {
        let (store, bm25) = (store.clone(), bm25.clone());
        std::thread::spawn(move || {
            let mut cursor = bm25.committed_cursor();
            for round in 0..60u64 {
                let events: Vec<_> = (0..20u64)
                    .map(|n| {
                        event(
                            &format!("w{round}-{n}"),
                            &format!("w{round}"),
                            1_900_000_000_000 + round * 100_000 + n * 1_000,
                            EventKind::UserMessage,
                            &format!("round {round} turn {n}: we moved the cache to redis"),
                        )
                    })
                    .collect();
                store.append_events(&events).expect("append");
                let items = store.read_feed(cursor, 10_000).expect("feed");
                let up_to = items
                    .last()
                    .map(memory_store::FeedItem::seq)
                    .expect("items");
                bm25.apply(&store, &items, up_to).expect("apply");
                bm25.commit(&store).expect("commit");
                cursor = up_to;
            }
        })
    };
    let mut restored_cursors = Vec::new();
    for n in 0..8 {
        let snap = temp.path().join(format!("snap-{n}"));
        let manifest = take(&store, Some(&bm25), None, &snap).expect("take");
        let part = manifest.bm25.clone().expect("bm25 part");
        let target = temp.path().join(format!("b-{n}"));
        install(
            &snap,
            &target,
            &InstallTargets {
                bm25: Some((target.join("bm25-index"), "events=true".to_owned())),
                vector: None,
            },
        )
        .expect("install");
        let restored = open(&target);
        assert!(restored.head().0 >= part.cursor, "{manifest:?}");
        let index = Bm25Handle::open(crate::Bm25Settings::new(target.join("bm25-index")));
        assert!(index.error().is_none(), "snapshot {n}: {:?}", index.error());
        assert_eq!(index.committed_cursor().0, part.cursor, "snapshot {n}");
        restored_cursors.push(part.cursor);
    }
    writing.join().expect("writer");
    assert!(
        restored_cursors.windows(2).all(|pair| pair[0] <= pair[1])
            && restored_cursors.first() < restored_cursors.last(),
        "{restored_cursors:?}"
    );
}
