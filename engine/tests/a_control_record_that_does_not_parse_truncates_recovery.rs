//! Scenario: a control batch whose CRC matches but whose control record does not parse (an ABORT
//! marker with a 3-byte value; Kafka's `EndTransactionMarker` needs 6) lies in a segment that
//! recovery scans. As Kafka's `LogSegment.recover` stops at the `InvalidRecordException` the
//! marker raises, recovery truncates the log there — the batch and everything after it go —
//! instead of failing the start; producer state and the transaction index are those of the
//! batches kept (the transaction the marker would have ended is still open, and a good ABORT
//! appended later ends it and is indexed). A replica append of such a batch is refused whole
//! before anything is written (`Corrupt`, CORRUPT_MESSAGE to a client).

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{OpenOffsets, PartitionLog, ReplicaOrigin, Shutdown};
use mirrorlog_index::{Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::batch::ControlRecordType;
use std::io::Write;
use std::path::Path;

/// Producer 7's transactional batch of two records at `base`, as a leader wrote it.
fn txn_batch(base: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .base_offset(Offset(base))
        .producer(ProducerId(7), ProducerEpoch(0), Sequence(0))
        .transactional(true);
    for _ in 0..2 {
        b.append(TimestampMs(T0), None, Some(b"t"), &[]);
    }
    b.build().into_bytes()
}

/// Producer 7's ABORT marker at `base`; its value is `value` (6 bytes for a good one).
fn abort_marker(base: i64, value: &[u8]) -> Bytes {
    BatchBuilder::control(ControlRecordType::Abort, value, TimestampMs(T0))
        .producer(ProducerId(7), ProducerEpoch(0), Sequence::NONE)
        .transactional(true)
        .base_offset(Offset(base))
        .build()
        .into_bytes()
}

/// The marker value Kafka writes: version 0, coordinator epoch 0.
const GOOD_VALUE: [u8; 6] = [0; 6];

fn active_log_file(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

/// A log of four plain batches (offsets 0..8), producer 7's open transaction (8, 9), then,
/// written past the log's back as a buggy writer would, a CRC-valid ABORT marker at 10 whose
/// value does not parse and a plain batch at 11..13.
fn log_with_unparsable_marker(dir: &Path) {
    let mut log = open(dir, small_config(), clock(), Shutdown::Clean);
    for i in 0..4 {
        log.append_as_follower(
            replica_batch(i * 2, 2, 0, mirrorlog_segment::Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.append_as_follower(txn_batch(8), ReplicaOrigin::Replication)
        .unwrap();
    assert_eq!(log.log_end_offset(), Offset(10));
    log.close().unwrap();
    let bad = abort_marker(10, &[0, 0, 0]);
    let parsed = mirrorlog_segment::RecordBatch::new(bad.clone()).unwrap();
    assert_eq!(
        parsed.crc(),
        parsed.computed_crc(),
        "the marker's CRC matches"
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(active_log_file(dir))
        .unwrap();
    f.write_all(&bad).unwrap();
    f.write_all(&replica_batch(
        11,
        2,
        0,
        mirrorlog_segment::Compression::None,
        T0,
    ))
    .unwrap();
    f.sync_all().unwrap();
}

fn reopen(dir: &Path) -> (PartitionLog, mirrorlog_engine::log::LoadReport) {
    reopen_unclean(dir, clock(), OpenOffsets::default())
}

#[test]
fn recovery_truncates_at_a_control_batch_whose_record_does_not_parse() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    log_with_unparsable_marker(&dir);

    let (mut log, report) = reopen(&dir);
    assert_eq!(log.log_end_offset(), Offset(10), "cut at the bad marker");
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("end transaction marker value is 3 bytes")),
        "{:?}",
        report.problems
    );
    assert!(report.bytes_truncated > 0);
    // Producer 7's transaction is still open: the marker that would have ended it is gone.
    assert_eq!(
        log.producer_state().first_unstable_offset(),
        Some(Offset(8))
    );
    assert_eq!(read_committed_aborted(&mut log, Offset(10)), Some(vec![]));

    // The log goes on at 10; a good ABORT ends the transaction and is indexed, and the whole
    // survives another crash.
    log.append_as_follower(abort_marker(10, &GOOD_VALUE), ReplicaOrigin::Replication)
        .unwrap();
    log.flush().unwrap();
    drop(log);
    let (mut log, report) = reopen(&dir);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(log.log_end_offset(), Offset(11));
    let aborted = read_committed_aborted(&mut log, Offset(11)).unwrap();
    assert_eq!(log.producer_state().first_unstable_offset(), None);
    assert_eq!(aborted.len(), 1);
    assert_eq!(aborted[0].producer_id, ProducerId(7));
    assert_eq!(aborted[0].first_offset, Offset(8));
}

#[test]
fn a_replica_append_of_a_control_batch_that_does_not_parse_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let mut log = open(d.path(), small_config(), clock(), Shutdown::Clean);
    log.append_as_follower(txn_batch(0), ReplicaOrigin::Mirror)
        .unwrap();
    // A good batch before the bad marker in the same append: the append is refused whole.
    let mut records = replica_batch(2, 2, 0, mirrorlog_segment::Compression::None, T0).to_vec();
    records.extend_from_slice(&abort_marker(4, &[0, 0, 0]));
    for origin in [ReplicaOrigin::Replication, ReplicaOrigin::Mirror] {
        let e = log
            .append_as_follower(Bytes::from(records.clone()), origin)
            .unwrap_err();
        assert!(matches!(e, EngineError::Corrupt(_)), "{e}");
        assert_eq!(log.log_end_offset(), Offset(2));
        assert!(log.check_usable().is_ok(), "the log is not failed");
    }
    assert_eq!(
        log.producer_state().first_unstable_offset(),
        Some(Offset(0))
    );
}
