//! Bug: `PartitionLog::open` deletes every `*.swap` file as a leftover (log/mod.rs
//! `is_leftover`). In Kafka a `.log.swap` is a finished replacement segment (the log cleaner's
//! `replaceSegments`: `.cleaned` → `.swap`, old segments deleted, then `.swap` → `.log`); a crash
//! after the old segments went (`.deleted`) leaves the `.swap` as the only copy of their records, and Kafka's
//! `LogLoader` completes the swap (renames it to `.log`) instead of deleting it
//! (spec/kafka-storage-format.md §11: "Swap/cleaned/deleted files are completed or removed").
//! Opening such a Kafka data directory here loses those records.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn an_interrupted_kafka_segment_swap_is_completed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for _ in 0..100 {
        log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    assert!(log.segment_count() >= 3);
    log.close().unwrap();
    // Kafka crashed in the middle of the cleaner's `replaceSegments` for the first two segments:
    // their replacement (here simply both segments' batches) is `<first>.log.swap`, the second
    // segment was already renamed `.deleted`, the first is overwritten only by the final rename.
    let bases = log_bases(dir.path());
    let p = |b: u64, ext: &str| dir.path().join(format!("{b:020}.{ext}"));
    let mut swap = std::fs::read(p(bases[0], "log")).unwrap();
    swap.extend(std::fs::read(p(bases[1], "log")).unwrap());
    std::fs::write(p(bases[0], "log.swap"), swap).unwrap();
    for ext in ["log", "index", "timeindex"] {
        std::fs::rename(p(bases[1], ext), p(bases[1], &format!("{ext}.deleted"))).unwrap();
    }

    let log = open(dir.path(), small_config(), clock, Shutdown::Unclean);
    assert_eq!(
        log.segment_base_offsets()[0],
        Offset(0),
        "the swap segment is swapped in"
    );
    assert_eq!(values(&log, Offset(0)).len(), 200);
}

fn log_bases(dir: &std::path::Path) -> Vec<u64> {
    let mut v: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().into_string().unwrap();
            n.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    v.sort();
    v
}
