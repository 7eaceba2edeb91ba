//! With the purge delay at 0, memory a finished burst freed goes back to the OS at once:
//! with mimalloc as the global allocator (as in the daemon), a thread allocates and
//! frees 256 MiB and ends, and the process is not that much larger afterwards.
//! (`retained.rs` shows the same burst staying resident under mimalloc's default delay,
//! so this test fails if [`set_purge_delay`] set anything but the purge delay.) Each its
//! own test binary: the resident set is the process's, and no other test may allocate
//! meanwhile.

use std::time::Duration;

use memory_alloc::{MiMalloc, purge_delay_ms, set_purge_delay};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

mod burst;

#[test]
fn memory_a_finished_burst_freed_goes_back_at_once_with_no_purge_delay() {
    if std::env::var_os(memory_alloc::PURGE_DELAY_ENV).is_none() {
        assert_eq!(set_purge_delay(0), 0);
        assert_eq!(purge_delay_ms(), 0);
    }
    let Some((before, after)) = burst::resident_around_a_burst(Duration::ZERO) else {
        return;
    };
    assert!(
        after < before + 64 * burst::MIB,
        "the burst stayed resident: {} MiB before, {} MiB after",
        before / burst::MIB,
        after / burst::MIB
    );
}
