//! Where background work runs: threads at a lower CPU priority than ingest and queries.
//!
//! Why: on a small machine (the reference is two cores) the projections — BM25
//! indexing, embedding, the TOC — and the store's flushes and compactions can take
//! every core while a backlog lasts, and the commit path then waits behind them for
//! CPU: ingest slows down and acknowledgements are late because of work nobody waits
//! for. Linux gives a thread at nice 10 about a tenth of the CPU of one at nice 0 when
//! both want it, and all of it when the other does not, so background work still uses
//! every idle cycle; it only stops competing with the requests.
//!
//! On Linux the threads are also put in the `SCHED_IDLE` class (`[consumers]
//! background_idle`, default on, [`set_idle`]): a nice value only shares the CPU, so
//! a request thread that wakes behind a running nice-10 thread can still wait for its
//! turn, while a waking thread of the normal class preempts a `SCHED_IDLE` one at once
//! and the scheduler counts a core that runs only such threads as free when it places
//! the wakeup. Measured after a 400 000-event backfill (docs/benchmarks.md, "Background
//! threads in the idle scheduling class"): ack latency p50 and durable ingest both
//! better. The costs: under a load that keeps every core busy for good, background work
//! waits until it ends (a backlog, never a loss; the lag gauges show it), and so does a
//! request that waits for a lock a background thread holds — a vector search while the
//! indexer holds the index to apply or commit a batch (`vector_index.rs`). Linux also
//! gives a `SCHED_IDLE` thread the idle I/O class unless one is set, which I/O
//! schedulers that honour classes (BFQ, mq-deadline) serve after other I/O. Both are
//! why `background_idle = false` exists.
//!
//! Everything a consumer does on its blocking threads (applying a batch, opening,
//! rebuilding, the scheduled prune) runs on [`spawn_blocking`] here; threads started
//! from these threads inherit the priority (tantivy's indexing threads of the BM25
//! writer opened here, the HNSW builds' pool, the indexing embedder's ONNX Runtime
//! threads: [`crate::open_vector_handle`] loads it here). Not lowered: the commit path,
//! queries, the query embedder, and the store's flush and compaction workers, which an
//! append waits for when memtables pile up.
//! The nice value is `[consumers] background_nice` ([`set_nice`], default
//! [`DEFAULT_NICE`]); 0 with `background_idle = false` leaves everything at the
//! process's priority.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tracing::warn;

/// The default nice value of background threads.
pub const DEFAULT_NICE: i32 = 10;

static NICE: AtomicI32 = AtomicI32::new(DEFAULT_NICE);
static IDLE: AtomicBool = AtomicBool::new(true);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static WARNED: AtomicBool = AtomicBool::new(false);

/// Sets the nice value background threads take (clamped to 0–19). Effective for
/// threads started afterwards: call it before the pipeline starts.
pub fn set_nice(nice: i32) {
    NICE.store(nice.clamp(0, 19), Ordering::Relaxed);
}

/// Whether background threads go into the `SCHED_IDLE` class too (Linux; see the
/// module doc). Effective for threads started afterwards: call it before the pipeline
/// starts.
pub fn set_idle(idle: bool) {
    IDLE.store(idle, Ordering::Relaxed);
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

/// Lowers the calling thread's CPU priority to [`nice`], and into `SCHED_IDLE` when
/// [`set_idle`] asks (Linux: both are per thread, and threads it starts inherit them).
/// A refusal (a container without the right, another OS) is logged once; the nice value
/// is set even where the class is refused.
fn lower_this_thread() {
    let nice = nice();
    let idle = IDLE.load(Ordering::Relaxed);
    if nice == 0 && !idle {
        return;
    }
    // Never raises a thread's priority: a daemon started at nice 15 stays there.
    #[cfg(target_os = "linux")]
    let lowered = {
        let tid = Some(rustix::thread::gettid());
        // Unknown, the thread's nice is left alone (setting ours could raise it).
        let current = rustix::process::getpriority_process(tid);
        // The class first: `thread-priority` sets nice 0 with it (all the idle class
        // allows it to name), which the nice below then lowers again.
        let classed = if idle { enter_idle_class() } else { Ok(()) };
        let niced = current
            .and_then(|current| rustix::process::setpriority_process(tid, nice.max(current)))
            .map_err(std::io::Error::from);
        classed.and(niced)
    };
    #[cfg(not(target_os = "linux"))]
    let lowered: std::io::Result<()> = Ok(());
    if let Err(err) = lowered
        && !WARNED.swap(true, Ordering::Relaxed)
    {
        warn!(error = %err, nice, idle, "cannot lower the priority of background threads");
    }
}

/// Puts the calling thread in the `SCHED_IDLE` class (a thread may always lower its
/// own class).
#[cfg(target_os = "linux")]
fn enter_idle_class() -> std::io::Result<()> {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
        thread_native_id,
    };
    let set = set_thread_priority_and_policy(
        thread_native_id(),
        thread_priority::ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    );
    // Its nice 0 after the class is refused to a thread already lowered without the
    // right to raise it again; the class is what counts here.
    if in_idle_class() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "cannot enter the SCHED_IDLE class: {set:?}"
        )))
    }
}

/// Whether the calling thread is in the `SCHED_IDLE` class.
#[cfg(target_os = "linux")]
fn in_idle_class() -> bool {
    use thread_priority::unix::{
        NormalThreadSchedulePolicy, ThreadSchedulePolicy, thread_schedule_policy,
    };
    thread_schedule_policy().ok()
        == Some(ThreadSchedulePolicy::Normal(
            NormalThreadSchedulePolicy::Idle,
        ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        rustix::process::getpriority_process(Some(rustix::thread::gettid())).expect("getpriority")
    }

    #[tokio::test]
    async fn background_work_runs_at_the_lower_priority_and_requests_do_not() {
        let ours = own_nice();
        let our_class = in_idle_class();
        assert!(!our_class, "the test runs in the normal class");
        let theirs = spawn_blocking(|| (own_nice(), in_idle_class()))
            .await
            .expect("join");
        assert_eq!(theirs, (DEFAULT_NICE.max(ours), true), "background thread");
        assert_eq!(
            (own_nice(), in_idle_class()),
            (ours, our_class),
            "the caller keeps its priority"
        );
        // Threads it starts inherit the priority (tantivy's indexing threads).
        let inherited = spawn_blocking(|| {
            std::thread::spawn(|| (own_nice(), in_idle_class()))
                .join()
                .expect("join")
        })
        .await
        .expect("join");
        assert_eq!(inherited, (DEFAULT_NICE.max(ours), true));
    }
}
