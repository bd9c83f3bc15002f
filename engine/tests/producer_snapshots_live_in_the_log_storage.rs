//! Producer-state snapshots are written, listed, read and removed through the log's `Storage`,
//! so that the simulated storage's crashes decide which snapshots survive.
//!
//! They were plain files written with `std::fs` beside the simulated `.log` files: a simulated
//! crash never lost one, so the crash tests never exercised recovery from a lost snapshot, and
//! a snapshot taken after the crash point could survive beside a log that lost its tail. Now a
//! snapshot is durable exactly when the storage says so (its bytes synced, its rename into place
//! synced into the partition directory); a lost one is rebuilt by replaying the log.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

fn open_sim(sim: &SimStorage, dir: &Path, shutdown: Shutdown) -> PartitionLog {
    open_with(
        Arc::new(sim.clone()),
        dir,
        small_config(),
        clock(),
        shutdown,
        OpenOffsets::default(),
    )
}

/// Appends producer 42's batches `from..to` (one record each) and flushes.
fn append(log: &mut PartitionLog, from: i32, to: i32) {
    append_producer_42(log, from, to);
    log.flush().unwrap();
}

fn snapshots(storage: &dyn Storage, dir: &Path) -> Vec<String> {
    storage
        .list_dir(dir)
        .unwrap()
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .filter(|n| n.contains(".snapshot"))
        .collect()
}

#[test]
fn a_snapshot_taken_at_a_roll_is_in_the_storage_and_survives_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean);
    append(&mut log, 0, 4);
    log.roll(Offset(4)).unwrap();
    let crashed = sim.crash(TornTail::None);
    assert_eq!(
        snapshots(&crashed, &dir),
        vec!["00000000000000000004.snapshot".to_string()],
        "the roll's snapshot is not in the log's storage"
    );
    drop(log);
}

#[test]
fn a_snapshot_lost_in_a_crash_is_rebuilt_by_replaying_the_log() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let mut log = open_sim(&sim, &dir, Shutdown::Clean);
    append(&mut log, 0, 4);
    // The power fails after the snapshot's bytes are synced, before its rename is: the roll
    // fails and the crash keeps no snapshot.
    sim.halt_after_syncs(sim.syncs_completed() + 1);
    assert!(log.roll(Offset(4)).is_err());
    drop(log);
    let crashed = sim.crash(TornTail::None);
    assert_eq!(snapshots(&crashed, &dir), Vec::<String>::new());
    let mut log = open_sim(&crashed, &dir, Shutdown::Unclean);
    assert_eq!(log.log_end_offset(), Offset(4));
    assert_eq!(
        log.producer_state()
            .entry(ProducerId(42))
            .unwrap()
            .last_seq()
            .get(),
        3,
        "producer state rebuilt from the log"
    );
    let retry = log
        .append_as_leader(
            producer_batch(42, 1, 3, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    assert!(retry.duplicate, "the retried last batch is a duplicate");
    assert_eq!(retry.first_offset, Offset(3));
    assert!(
        log.append_as_leader(
            producer_batch(42, 1, 6, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .is_err(),
        "a sequence gap is refused"
    );
}
