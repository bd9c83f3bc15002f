//! Bug: `PartitionLog::open` deletes every `*.swap` file as a leftover (log/mod.rs
//! `is_leftover`). In Kafka a `.log.swap` is a finished replacement segment (the log cleaner's
//! `replaceSegments`: `.cleaned` → `.swap`, old segments deleted, then `.swap` → `.log`); a crash
//! after the old segments went leaves the `.swap` as the only copy of its records, and Kafka's
//! `LogLoader` completes the swap (renames it to `.log`) instead of deleting it
//! (spec/kafka-storage-format.md §11: "Swap/cleaned/deleted files are completed or removed").
//! Opening such a Kafka data directory here loses those records.

mod common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn a_swap_segment_whose_original_is_gone_is_swapped_in() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for _ in 0..100 {
        log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    assert!(log.segment_count() >= 3);
    log.close().unwrap();
    // Kafka crashed mid-swap of the first segment: its replacement is `.log.swap`, the original
    // and its indexes were already deleted.
    let p = |ext: &str| dir.path().join(format!("{:020}.{ext}", 0));
    std::fs::rename(p("log"), p("log.swap")).unwrap();
    std::fs::remove_file(p("index")).unwrap();
    std::fs::remove_file(p("timeindex")).unwrap();

    let log = open(dir.path(), small_config(), clock, Shutdown::Unclean);
    assert_eq!(
        log.segment_base_offsets()[0],
        Offset(0),
        "the swap segment is swapped in"
    );
    assert_eq!(values(&log, Offset(0)).len(), 200);
}
