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
//!
//! The class is not enough on a small virtual machine: with every core busy, even
//! with `SCHED_IDLE` work alone, the disk's flushes stall. Measured on the two-core
//! reference (docs/benchmarks.md, "Acknowledgements against their floor"): a bare
//! group-commit responder at 5 000 fsynced requests a second answers at p99 6–17 ms
//! beside nothing, 131–2 667 ms beside two spinning `SCHED_IDLE` threads, 6–29 ms when
//! those two are confined to one core; after a backfill, the same responder at p99
//! 12–278 ms beside the daemon's catch-up and 6–11 ms with the daemon stopped. A core
//! that can go idle is what the host needs to complete the guest's I/O. So background
//! threads also keep off `[consumers] background_spare_cores` of the cores the process
//! may use ([`set_spare_cores`]; [`DEFAULT_SPARE_CORES`] under `serve` and `mcp`, which
//! answer requests, 0 — every core — elsewhere): on two cores, background work gets
//! one, and a backfill's catch-up takes longer when nothing else runs. The cores are
//! those of the process's affinity (its cpuset), not a CPU quota: a container limited
//! by quota alone shows every host core, and the spare one is then a host core.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tracing::warn;

/// The default nice value of background threads.
pub const DEFAULT_NICE: i32 = 10;

/// The number of cores background threads keep off in a process that answers requests
/// (`serve`, `mcp`); other processes keep none.
pub const DEFAULT_SPARE_CORES: usize = 1;

static NICE: AtomicI32 = AtomicI32::new(DEFAULT_NICE);
static SPARE_CORES: AtomicUsize = AtomicUsize::new(0);
static IDLE: AtomicBool = AtomicBool::new(true);
static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static WARNED: AtomicBool = AtomicBool::new(false);
static WARNED_CORES: AtomicBool = AtomicBool::new(false);

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

/// Sets how many of the process's cores background threads keep off (the lowest
/// numbered ones; at most all but one: on one core nothing changes). 0 by default.
/// Effective for threads started afterwards: call it before the pipeline starts.
pub fn set_spare_cores(spare: usize) {
    SPARE_CORES.store(spare, Ordering::Relaxed);
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
            .on_thread_start(|| {
                lower_this_thread();
                confine_this_thread();
            })
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

/// Keeps the calling thread off the first [`set_spare_cores`] cores of the process (Linux;
/// threads it starts inherit the set). A refusal is logged once.
fn confine_this_thread() {
    let spare = SPARE_CORES.load(Ordering::Relaxed);
    if spare == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(err) = keep_off_cores(spare)
        && !WARNED_CORES.swap(true, Ordering::Relaxed)
    {
        warn!(error = %err, spare, "cannot keep background threads off spare cores");
    }
}

/// The cores in `set`, lowest first.
#[cfg(target_os = "linux")]
fn cores_of(set: &rustix::thread::CpuSet) -> Vec<usize> {
    (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&core| set.is_set(core))
        .collect()
}

/// The cores of `allowed` without its first `spare` ones, and never fewer than one.
#[cfg(target_os = "linux")]
fn background_cores(allowed: &rustix::thread::CpuSet, spare: usize) -> rustix::thread::CpuSet {
    let cores = cores_of(allowed);
    let spare = spare.min(cores.len().saturating_sub(1));
    let mut set = rustix::thread::CpuSet::new();
    for &core in &cores[spare..] {
        set.set(core);
    }
    set
}

/// Confines the calling thread to the process's cores (its main thread's: a thread
/// started by a background thread inherits a set already narrowed) without the spare.
#[cfg(target_os = "linux")]
fn keep_off_cores(spare: usize) -> std::io::Result<()> {
    let process = rustix::process::getpid();
    let allowed = rustix::thread::sched_getaffinity(Some(process))?;
    Ok(rustix::thread::sched_setaffinity(
        None,
        &background_cores(&allowed, spare),
    )?)
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

    #[test]
    fn background_cores_leave_the_first_spare_ones_and_at_least_one() {
        let mut allowed = rustix::thread::CpuSet::new();
        for core in [0, 2, 3, 5] {
            allowed.set(core);
        }
        let kept = |spare| cores_of(&background_cores(&allowed, spare));
        assert_eq!(kept(1), vec![2, 3, 5]);
        assert_eq!(kept(3), vec![5]);
        assert_eq!(kept(0), vec![0, 2, 3, 5]);
        assert_eq!(kept(4), vec![5], "never every core");
        assert_eq!(kept(9), vec![5]);
    }

    /// On a thread of its own, not the shared pool: the spare setting is global, and
    /// pool threads that other tests started keep the setting they were started with.
    #[test]
    fn a_confined_thread_keeps_off_the_spare_core_and_passes_it_on() {
        let process = cores_of(
            &rustix::thread::sched_getaffinity(Some(rustix::process::getpid())).expect("affinity"),
        );
        let expected = process[1.min(process.len() - 1)..].to_vec();
        let (own, child, grandchild) = std::thread::spawn(|| {
            keep_off_cores(1).expect("affinity");
            let own = cores_of(&rustix::thread::sched_getaffinity(None).expect("affinity"));
            // A confined thread confining again narrows nothing further.
            let (child, grandchild) = std::thread::spawn(|| {
                let inherited = cores_of(&rustix::thread::sched_getaffinity(None).expect("a"));
                keep_off_cores(1).expect("affinity");
                let again = cores_of(&rustix::thread::sched_getaffinity(None).expect("a"));
                (inherited, again)
            })
            .join()
            .expect("join");
            (own, child, grandchild)
        })
        .join()
        .expect("join");
        assert_eq!(own, expected, "the confined thread");
        assert_eq!(child, expected, "its child inherits the set");
        assert_eq!(grandchild, expected, "confining again");
        assert_eq!(
            cores_of(&rustix::thread::sched_getaffinity(None).expect("affinity")),
            process,
            "the caller keeps its cores"
        );
    }
}
