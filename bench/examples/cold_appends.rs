//! A driver for counting the engine's own work per append on cold per-partition state (issue 4,
//! the `append` bench's `1000-partitions` variant): client batches of 16 × 1 KiB records
//! appended round-robin over the partitions of one [`LogManager`] (created as the bench creates
//! them), each through its handle's lock, as the bench does. Not a benchmark: run it under
//! callgrind, which is deterministic (arguments: partitions, measured rounds),
//!
//! ```text
//! cargo build --release --example cold_appends -p mirrorlog-bench
//! valgrind --tool=callgrind --cache-sim=yes --D1=32768,8,64 --LL=2097152,16,64 \
//!     --collect-atstart=no --toggle-collect='cold_appends::measured' \
//!     target/release/examples/cold_appends 1000 2
//! ```
//!
//! and divide the counts by partitions × rounds. One warm-up round (every partition's first
//! append of its segment) runs before the measured ones and is not counted. Run natively, it
//! prints the measured rounds' wall time and the thread's user and system CPU time.

use bytes::Bytes;
use mirrorlog_bench::fixtures::{batch_16k, client_batches};
use mirrorlog_bench::scenarios::append::{EPOCH, create_partitions};
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_segment::Compression;
use mirrorlog_segment::io::default_storage;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let partitions: usize = args.next().map_or(1000, |a| a.parse().expect("partitions"));
    let rounds: usize = args.next().map_or(2, |a| a.parse().expect("rounds"));
    let dir = tempfile::tempdir().expect("a scratch directory");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (mgr, _) = LogManager::open(LogManagerConfig::new(dir.path()), default_storage(), clock)
        .expect("open the log manager");
    let handles = create_partitions(&mgr, partitions);
    let template = batch_16k(Compression::None, 1024);
    let batches = |n: usize| client_batches(&template, n);
    warm_up(&handles, batches(partitions));
    let input = batches(partitions * rounds);
    let (t, cpu) = (std::time::Instant::now(), thread_cpu_ms());
    measured(&handles, input);
    let (wall, cpu_after) = (t.elapsed(), thread_cpu_ms());
    let appended: u64 = handles.iter().map(|h| h.read().size_bytes()).sum();
    assert_eq!(
        appended,
        ((rounds + 1) * partitions * template.size_bytes()) as u64
    );
    println!(
        "{} appends measured: {:.1} ms, user {} ms, system {} ms (thread CPU, 10 ms ticks)",
        partitions * rounds,
        wall.as_secs_f64() * 1e3,
        cpu_after.0 - cpu.0,
        cpu_after.1 - cpu.1
    );
}

/// The first round (every partition's first append of its segment), not counted.
#[inline(never)]
fn warm_up(handles: &[Arc<PartitionHandle>], batches: Vec<Bytes>) {
    for (h, b) in handles.iter().zip(batches) {
        h.write()
            .append_as_leader(b, EPOCH, LeaderOrigin::Client)
            .expect("leader append");
    }
}

/// The counted rounds.
#[inline(never)]
fn measured(handles: &[Arc<PartitionHandle>], batches: Vec<Bytes>) {
    for (i, b) in batches.into_iter().enumerate() {
        handles[i % handles.len()]
            .write()
            .append_as_leader(b, EPOCH, LeaderOrigin::Client)
            .expect("leader append");
    }
}

/// This thread's user and system CPU time so far, in ms (`/proc/thread-self/stat`).
fn thread_cpu_ms() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("thread stat");
    let after_name = &stat[stat.rfind(')').expect("stat format") + 2..];
    let f: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 (utime, stime), counted from the state (field 3), in 10 ms ticks.
    let ticks = |i: usize| f[i].parse::<u64>().expect("ticks") * 10;
    (ticks(11), ticks(12))
}
