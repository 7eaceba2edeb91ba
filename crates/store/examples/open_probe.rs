//! What opening a store costs in memory: opens the store at PATH (a copy: the open may
//! flush what it replays), prints the process's VmRSS / VmHWM after the open, after a
//! few idle seconds, after a reopen and after reading the whole feed.
//!
//! `cargo run --release -p memory-store --example open_probe -- PATH [WRITE_BUFFER_MB]`
//! (WRITE_BUFFER_MB 0: no budget, fjall's own limits; default the store's). Used for
//! docs/benchmarks.md, "The store's write buffer budget".

use memory_store::{OutboxSeq, Store, StoreOptions};

fn rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|line| line.starts_with("VmRSS") || line.starts_with("VmHWM"))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: open_probe PATH [WRITE_BUFFER_MB]")?;
    let mut options = StoreOptions::default();
    if let Some(mb) = args.next() {
        options.write_buffer_mb = mb.parse()?;
    }
    eprintln!("before:   {}", rss());
    let store = Store::open(&path, &options)?;
    eprintln!("opened:   {}", rss());
    std::thread::sleep(std::time::Duration::from_secs(5));
    eprintln!("idle 5 s: {}", rss());
    drop(store);
    let store = Store::open(&path, &options)?;
    eprintln!("reopened: {}", rss());
    let fed = store.read_feed(OutboxSeq::ZERO, usize::MAX)?.len();
    eprintln!("fed {fed}: {}", rss());
    Ok(())
}
