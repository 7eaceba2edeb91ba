//! `memory-alloc`: the daemon's allocators, and how soon what it frees goes back to the
//! OS.
//!
//! The daemon allocates with mimalloc ([`MiMalloc`], which the binary declares
//! `#[global_allocator]`): the store's memtables and the JSON path allocate many small
//! objects per event, and embedded ingest ran markedly faster with it than with the
//! system allocator (docs/benchmarks.md).
//!
//! mimalloc 3 keeps memory freed for a purge delay (1 s) before it hands it back to the
//! OS, so that a page freed and soon needed again is not returned and faulted in anew.
//! In this daemon that cost 110–130 MiB of resident memory: searches,
//! catch-ups and ingest free in bursts on many threads, and what a burst freed in its
//! last second stayed resident (docs/benchmarks.md, "Memory with vectors on: freed
//! memory returned at once"). [`set_purge_delay`] sets it from `[allocator]
//! purge_delay_ms` (0: at once), measured against searches and the commit path. A
//! thread that asks mimalloc to purge every second instead (`mi_collect`) gave nothing
//! back: the delay is what holds the memory, not a missing call.
//!
//! ONNX Runtime allocates with the C allocator, and glibc keeps what a model load freed
//! (the parsed model, ~35 MiB for the daemon's two): [`trim_c_heap`] returns it.
//!
//! [`resident_bytes`] reads the process's resident set for the
//! `memory_process_resident_bytes` gauge, which [`register_metrics`] registers with
//! `memory_allocator_purge_delay_ms`.
//!
//! `unsafe` is allowed in this crate for its C calls (`mi_option_set_default`,
//! `mi_option_get`, `malloc_trim`) and nowhere else; none takes a pointer.

use std::sync::LazyLock;

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntGauge, Opts};

pub use mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (mimalloc 3): libmimalloc-sys names no
/// constant for it. The test `purge.rs` fails if this is not the purge delay.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The environment variable by which mimalloc reads its purge delay at start (also
/// in lower case, and as `MIMALLOC_RESET_DELAY`, its old name).
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// The longest purge delay [`set_purge_delay`] passes on: an hour, the bound
/// `[allocator] purge_delay_ms` is validated against. mimalloc adds the delay to its
/// clock, so a larger value could overflow it.
const MAX_PURGE_DELAY_MS: u64 = 3_600_000;

/// Sets how long mimalloc keeps memory freed before it returns it to the OS,
/// milliseconds (0: at once; at most an hour), unless the environment set
/// it (`MIMALLOC_PURGE_DELAY` under any of the names mimalloc reads), which wins. Returns
/// the delay in effect. Call it early, before the work that frees memory starts: ranges
/// freed before are purged on the old schedule.
pub fn set_purge_delay(delay_ms: u64) -> i64 {
    let delay = std::os::raw::c_long::try_from(delay_ms.min(MAX_PURGE_DELAY_MS))
        .unwrap_or(std::os::raw::c_long::MAX);
    // SAFETY: `mi_option_set_default` takes an option index and a value, no pointers,
    // and changes the value only when the environment did not set it. It writes a plain
    // C `long` that allocating threads read when they schedule a purge, without
    // synchronisation: a thread reading it meanwhile sees the old or the new delay (an
    // aligned word on the targets we build for), and the daemon calls this before its
    // store and actors start.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, delay);
    }
    purge_delay_ms()
}

/// mimalloc's purge delay now, milliseconds (negative: never purges).
#[must_use]
pub fn purge_delay_ms() -> i64 {
    // SAFETY: `mi_option_get` takes an option index, no pointers.
    #[allow(unsafe_code)]
    let delay = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
    // A C `long`: `i64` on 64-bit Linux, `i32` on Windows.
    #[allow(clippy::useless_conversion)]
    i64::from(delay)
}

/// Returns to the OS the memory the C allocator holds freed (glibc's `malloc_trim(0)`,
/// which also releases free pages inside its heaps), for what C and C++ libraries
/// allocate with it — ONNX Runtime loading a model. Returns whether any was released;
/// `false` where the C library is not glibc.
pub fn trim_c_heap() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` takes a byte count, no pointers, and is thread-safe
        // (it locks each arena it trims).
        #[allow(unsafe_code)]
        let released = unsafe { libc::malloc_trim(0) };
        released != 0
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// The process's resident set in bytes (`VmRSS` in `/proc/self/status`), `None` where
/// that file is not there or not understood.
#[must_use]
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// `memory_process_resident_bytes` and `memory_allocator_purge_delay_ms`, read when
/// `/metrics` is scraped: what the daemon holds, and the setting that most changes it.
#[derive(Clone)]
struct AllocatorCollector {
    resident: IntGauge,
    purge_delay: IntGauge,
}

impl Collector for AllocatorCollector {
    fn desc(&self) -> Vec<&Desc> {
        [&self.resident, &self.purge_delay]
            .into_iter()
            .flat_map(|gauge| gauge.desc())
            .collect()
    }

    /// No resident sample where it cannot be read (a 0 would look like one).
    fn collect(&self) -> Vec<MetricFamily> {
        let mut families = Vec::with_capacity(2);
        if let Some(bytes) = resident_bytes() {
            self.resident.set(i64::try_from(bytes).unwrap_or(i64::MAX));
            families.extend(self.resident.collect());
        }
        self.purge_delay.set(purge_delay_ms());
        families.extend(self.purge_delay.collect());
        families
    }
}

static ALLOCATOR: LazyLock<AllocatorCollector> = LazyLock::new(|| {
    let gauge = |name: &str, help: &str| {
        IntGauge::with_opts(Opts::new(name, help))
            .unwrap_or_else(|error| panic!("invalid metric {name}: {error}"))
    };
    let collector = AllocatorCollector {
        resident: gauge(
            "memory_process_resident_bytes",
            "The daemon's resident memory (VmRSS), read at the scrape",
        ),
        purge_delay: gauge(
            "memory_allocator_purge_delay_ms",
            "How long the allocator keeps freed memory before returning it to the OS, ms (negative: never)",
        ),
    };
    memory_metrics::collector("memory_process_resident_bytes", collector)
});

/// Registers the resident-memory and purge-delay gauges in the default registry
/// (idempotent).
pub fn register_metrics() {
    LazyLock::force(&ALLOCATOR);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resident_set_is_read_in_bytes() {
        let bytes = resident_bytes().expect("/proc/self/status on Linux");
        // A test binary is more than a megabyte and less than a terabyte resident.
        assert!(bytes > 1 << 20 && bytes < 1 << 40, "{bytes}");
    }
}
