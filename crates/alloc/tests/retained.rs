//! Under mimalloc's default purge delay (1 s), memory a finished burst freed stays
//! resident while nothing calls into the allocator: what `purge.rs` removes, and why
//! the daemon sets the delay (`[allocator] purge_delay_ms`).

use std::time::Duration;

use memory_alloc::{MiMalloc, purge_delay_ms};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

mod burst;

#[test]
fn memory_a_finished_burst_freed_stays_resident_under_the_default_purge_delay() {
    let Some((before, after)) = burst::resident_around_a_burst(Duration::from_millis(1_500)) else {
        return;
    };
    assert!(purge_delay_ms() > 0, "{}", purge_delay_ms());
    assert!(
        after > before + 192 * burst::MIB,
        "mimalloc returned the burst on its own: {} MiB before, {} MiB after",
        before / burst::MIB,
        after / burst::MIB
    );
}
