//! The embedders' ONNX Runtime threads run at the priority of the work they do: the
//! indexing embedder's at the background priority, the query embedder's at the
//! daemon's. Its own test binary: it compares the process's threads before and after
//! the open, which other tests starting threads at the same time would disturb.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;

use memory_actors::background;
use memory_actors::open_vector_handle;
use memory_embed::Embedder;
use memory_projections::VectorSettings;

/// Every thread of this process (`/proc/self/task`) with its nice value, read as
/// `background` reads its own (`getpriority` takes a thread id on Linux).
fn threads() -> BTreeMap<i32, i32> {
    let mut threads = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("read /proc/self/task") {
        let name = entry.expect("task entry").file_name();
        let Some(tid) = name.to_str().and_then(|tid| tid.parse().ok()) else {
            continue;
        };
        // A thread that ended between the listing and the call is no longer ours.
        if let Ok(nice) = rustix::process::getpriority_process(rustix::process::Pid::from_raw(tid))
        {
            threads.insert(tid, nice);
        }
    }
    threads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onnx_runtime_threads_take_the_priority_of_their_embedders_work() {
    let ours = rustix::process::getpriority_process(None).expect("getpriority");
    if ours >= background::DEFAULT_NICE {
        eprintln!("skipped: the test runs at nice {ours}, background threads cannot be lower");
        return;
    }
    let temp = tempfile::tempdir().expect("tempdir");
    let mut settings = VectorSettings::new(temp.path().join("vector-index"));
    // Three and two intra-op threads: ONNX Runtime starts two and one threads of its own
    // when the models load (the loading thread is the other one).
    settings.index_threads = 3;
    settings.query_threads = 2;
    // What exists before the count: both runtimes' blocking threads, and ONNX
    // Runtime's environment (the first load sets it up).
    background::spawn_blocking(|| ()).await.expect("background");
    tokio::task::spawn_blocking(|| ()).await.expect("blocking");
    let warm = settings.embedder.clone();
    tokio::task::spawn_blocking(move || Embedder::load(&warm).map(drop))
        .await
        .expect("join")
        .expect("the model loads (scripts/setup.sh installs it)");

    let before = threads();
    let handle = open_vector_handle(settings).await.expect("open");
    assert_eq!(handle.error(), None);
    let started: Vec<i32> = threads()
        .into_iter()
        .filter(|(tid, _)| !before.contains_key(tid))
        .map(|(_, nice)| nice)
        .collect();
    let lowered = started
        .iter()
        .filter(|&&nice| nice == background::DEFAULT_NICE)
        .count();
    let normal = started.iter().filter(|&&nice| nice == ours).count();
    assert!(
        lowered >= 2,
        "the indexing embedder's two ONNX Runtime threads run at nice {}: nice of the threads started by the open {started:?}",
        background::DEFAULT_NICE
    );
    assert!(
        normal >= 1,
        "the query embedder's ONNX Runtime thread runs at nice {ours}: nice of the threads started by the open {started:?}"
    );
    drop(handle);
}
