//! A burst of allocations on a thread of its own, freed before the thread ends, and the
//! process's resident set around it.

use std::time::Duration;

/// A mebibyte.
pub const MIB: u64 = 1 << 20;
const BURST_BYTES: usize = 256 << 20;
const CHUNK_BYTES: usize = 16 << 10;

/// The resident set before and `settle` after a thread allocated and wrote 256 MiB in
/// 16 KiB pieces, freed them and ended; `None` (the test is skipped) when
/// `MIMALLOC_PURGE_DELAY` is set in the environment, which wins over the test's delay.
pub fn resident_around_a_burst(settle: Duration) -> Option<(u64, u64)> {
    if std::env::var_os(memory_alloc::PURGE_DELAY_ENV).is_some() {
        eprintln!("skipped: MIMALLOC_PURGE_DELAY is set in the environment");
        return None;
    }
    let resident = || memory_alloc::resident_bytes().expect("/proc/self/status on Linux");
    let before = resident();
    std::thread::spawn(|| {
        let chunks: Vec<Vec<u8>> = (0..BURST_BYTES / CHUNK_BYTES)
            .map(|index| vec![u8::try_from(index % 251).unwrap_or(1); CHUNK_BYTES])
            .collect();
        assert_eq!(chunks.len() * CHUNK_BYTES, BURST_BYTES);
    })
    .join()
    .expect("the burst's thread");
    std::thread::sleep(settle);
    Some((before, resident()))
}
