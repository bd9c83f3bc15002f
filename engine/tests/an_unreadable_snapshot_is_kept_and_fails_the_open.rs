//! A producer snapshot that cannot be read because the storage fails (`EIO`) is a storage
//! failure, not a corrupt file: the open fails with the I/O error (so the manager takes the data
//! directory offline, as Kafka's `loadFromSnapshot` lets an `IOException` through and deletes
//! only a `CorruptSnapshotException`'s file) and the snapshot stays on disk for the next start.
//!
//! It was deleted as "corrupt" and the log opened from an older snapshot or from the log start:
//! one transient read error destroyed producer state that no replay can bring back once
//! retention has removed the batches below the snapshot.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::LeaderEpoch;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::sync::Arc;

#[test]
fn an_eio_reading_a_snapshot_fails_the_open_and_keeps_the_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimStorage::new();
    let open = |shutdown| {
        PartitionLog::open(
            Arc::new(sim.clone()),
            &dir,
            "t-0",
            small_config(),
            clock(),
            shutdown,
            OpenOffsets::default(),
        )
    };
    let mut log = open(Shutdown::Clean).unwrap().0;
    for seq in 0..4 {
        log.append_as_leader(
            producer_batch(42, 1, seq, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    log.close().unwrap();
    let snapshot = dir.join("00000000000000000004.snapshot");
    assert!(sim.exists(&snapshot), "the close wrote no snapshot");

    sim.inject(Fault::new(IoOp::ReadAt, FaultKind::Eio).on_path(".snapshot"));
    let err = open(Shutdown::Clean)
        .map(|_| ())
        .expect_err("an unreadable snapshot must fail the open as a storage failure");
    assert!(
        matches!(&err, EngineError::Index(mirrorlog_index::Error::Io { .. })),
        "not a storage failure: {err}"
    );
    assert!(
        sim.exists(&snapshot),
        "the snapshot was deleted as corrupt after a read error"
    );

    // The storage works again: the next start loads the snapshot.
    let log = open(Shutdown::Clean).unwrap().0;
    assert_eq!(
        log.producer_state()
            .entry(mirrorlog_index::ProducerId(42))
            .unwrap()
            .last_seq()
            .get(),
        3
    );
}
