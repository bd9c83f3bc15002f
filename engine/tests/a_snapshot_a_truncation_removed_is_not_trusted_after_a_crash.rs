//! A producer snapshot removed by a truncation may come back after a crash, and must not be
//! trusted then.
//!
//! `truncate_to` removes the snapshots above the new end without syncing the directory (as
//! Kafka's `truncateAndReload`), so when the log grows past the removed snapshot's offset again
//! inside the active segment (whose appends sync only the `.log`'s bytes) a crash brings the
//! stale snapshot back; on the simulated storage it does. Were it loaded, producer state would
//! describe batches no longer in the log, and a producer's retry of a sequence the truncation
//! removed would be answered as a duplicate at an offset holding another producer's record.
//! It is not loaded: after an unclean shutdown recovery reloads producer state only from a
//! snapshot at or below the first segment it scans (the one holding the recovery point, or an
//! earlier one) and deletes the later ones, and a snapshot inside a segment is newer than that
//! segment's base. This test keeps it so.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn open_sim(
    sim: &SimStorage,
    dir: &Path,
    shutdown: Shutdown,
    offsets: OpenOffsets,
) -> PartitionLog {
    open_with(
        Arc::new(sim.clone()),
        dir,
        small_config(),
        clock(),
        shutdown,
        offsets,
    )
}

fn append(log: &mut PartitionLog, pid: i64, seqs: std::ops::Range<i32>) {
    for seq in seqs {
        let info = log
            .append_as_leader(
                producer_batch(pid, 1, seq, 1, false, T0),
                LeaderEpoch(0),
                LeaderOrigin::Client,
            )
            .unwrap();
        assert!(!info.duplicate);
    }
}

#[test]
fn a_stale_snapshot_back_after_a_crash_is_not_loaded() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean, OpenOffsets::default());
    append(&mut log, 42, 0..4);
    // A clean close writes a snapshot at the log end (4): producer 42 at sequence 3.
    log.close().unwrap();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean, OpenOffsets::default());
    assert!(log.truncate_to(Offset(2)).unwrap());
    // Offsets 2..6 now hold producer 43's records, flushed (the `.log` bytes only).
    append(&mut log, 43, 0..4);
    log.flush().unwrap();
    let crashed = sim.crash(TornTail::None);
    assert!(
        mirrorlog_segment::io::Storage::exists(
            &crashed,
            &dir.join("00000000000000000004.snapshot")
        ),
        "the removed snapshot is back"
    );
    drop(log);
    // The recovery point a checkpoint after the flush holds.
    let offsets = OpenOffsets {
        recovery_point: Offset(6),
        ..OpenOffsets::default()
    };
    let mut log = open_sim(&crashed, &dir, Shutdown::Unclean, offsets);
    assert_eq!(log.log_end_offset(), Offset(6));
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .unwrap()
            .last_seq()
            .get(),
        1,
        "producer 42's state comes from a snapshot the truncation removed"
    );
    let info = log
        .append_as_leader(
            producer_batch(42, 1, 2, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    assert!(
        !info.duplicate,
        "sequence 2 was truncated away: a new write"
    );
    assert_eq!(info.first_offset, Offset(6));
}
