//! A full truncation to the offset of one of the old log's producer snapshots
//! (`truncate_fully_and_start_at(LEO)`, what a follower or mirror does when the leader's log
//! start is its own log end) removes that snapshot without syncing the directory, as Kafka does,
//! so a crash right after brings it back. Kafka's `truncateAndReload` deletes every snapshot at
//! or below the log start; a snapshot exactly at the log start was kept and loaded here, and the
//! emptied log came back with the old log's producers (a producer's next sequence refused as
//! out of order, or a retry taken for a duplicate of a batch that is gone). Found by the engine
//! simulation once full truncations and crashes after them joined its workload.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
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

#[test]
fn a_snapshot_at_the_new_log_start_is_not_loaded_after_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean, OpenOffsets::default());
    for seq in 0..4 {
        log.append_as_leader(
            producer_batch(42, 1, seq, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    // A clean close writes a snapshot at the log end, 4: producer 42 at sequence 3.
    log.close().unwrap();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean, OpenOffsets::default());
    log.truncate_fully_and_start_at(Offset(4)).unwrap();
    assert_eq!(log.producer_state().producers().count(), 0);
    let crashed = sim.crash(TornTail::None);
    assert!(
        crashed.exists(&dir.join("00000000000000000004.snapshot")),
        "the removed snapshot is back"
    );
    drop(log);
    let offsets = OpenOffsets {
        log_start_offset: Offset(4),
        recovery_point: Offset(4),
        ..OpenOffsets::default()
    };
    let log = open_sim(&crashed, &dir, Shutdown::Unclean, offsets);
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset()),
        (Offset(4), Offset(4))
    );
    assert_eq!(
        log.producer_state().producers().count(),
        0,
        "the old log's producers came back from a snapshot the full truncation removed"
    );
}
