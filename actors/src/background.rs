//! Where background work runs: threads at a lower CPU priority than ingest and queries.
//!
//! Why: on a small machine (the reference is two cores) the projections — BM25
//! indexing, embedding, the TOC — and the store's flushes and compactions can take
//! every core while a backlog lasts, and the commit path then waits behind them for
//! CPU: ingest slows down and acknowledgements are late because of work nobody waits
//! for. Linux gives a thread at nice 10 about a tenth of the CPU of one at nice 0 when
//! both want it, and all of it when the other does not, so background work still uses
//! every idle cycle and is never starved; it only stops competing with the requests.
//!
//! Everything a consumer does on its blocking threads (applying a batch, opening,
//! rebuilding, the scheduled prune) runs on [`spawn_blocking`] here; threads started
//! from these threads inherit the priority (tantivy's indexing threads of the BM25
//! writer opened here, the HNSW builds' pool, the indexing embedder's ONNX Runtime
//! threads: [`crate::open_vector_handle`] loads it here). Not lowered: the commit path,
//! queries, the query embedder, and the store's flush and compaction workers, which an
//! append waits for when memtables pile up.
//! The nice value is `[consumers] background_nice` ([`set_nice`], default
//! [`DEFAULT_NICE`]); 0 leaves everything at the process's priority.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tracing::warn;

/// The default nice value of background threads.
pub const DEFAULT_NICE: i32 = 10;

static NICE: AtomicI32 = AtomicI32::new(DEFAULT_NICE);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static WARNED: AtomicBool = AtomicBool::new(false);

/// Sets the nice value background threads take (clamped to 0–19). Effective for
/// threads started afterwards: call it before the pipeline starts.
pub fn set_nice(nice: i32) {
    NICE.store(nice.clamp(0, 19), Ordering::Relaxed);
}

/// The configured nice value.
fn nice() -> i32 {
    NICE.load(Ordering::Relaxed)
}

/// Runs `work` on a background thread (see the module doc) and hands back its result.
pub fn spawn_blocking<F, R>(work: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    runtime().spawn_blocking(work)
}

fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("memory-background")
            .on_thread_start(lower_this_thread)
            .enable_all()
            .build()
            .unwrap_or_else(|err| panic!("cannot build the background runtime: {err}"))
    })
}

/// Lowers the calling thread's CPU priority to [`nice`] (Linux: priorities are per
/// thread). A refusal (a container without the right, another OS) is logged once and
/// leaves the thread as it was.
fn lower_this_thread() {
    let nice = nice();
    if nice == 0 {
        return;
    }
    // Never raises a thread's priority: a daemon started at nice 15 stays there.
    #[cfg(target_os = "linux")]
    let lowered = {
        let tid = Some(rustix::thread::gettid());
        match rustix::process::getpriority_process(tid) {
            Ok(current) if current >= nice => Ok(()),
            _ => rustix::process::setpriority_process(tid, nice),
        }
    };
    #[cfg(not(target_os = "linux"))]
    let lowered: std::io::Result<()> = Ok(());
    if let Err(err) = lowered
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        warn!(error = %err, nice, "cannot lower the priority of background threads");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).expect("getpriority")
    }

    #[tokio::test]
    async fn background_work_runs_at_the_lower_priority_and_requests_do_not() {
        let ours = own_nice();
        let theirs = spawn_blocking(own_nice).await.expect("join");
        assert_eq!(theirs, DEFAULT_NICE.max(ours), "background thread");
        assert_eq!(own_nice(), ours, "the caller keeps its priority");
        // Threads it starts inherit the priority (tantivy's indexing threads).
        let inherited = spawn_blocking(|| std::thread::spawn(own_nice).join().expect("join"))
            .await
            .expect("join");
        assert_eq!(inherited, DEFAULT_NICE.max(ours));
    }
}
