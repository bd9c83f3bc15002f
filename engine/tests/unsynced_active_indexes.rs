//! Scenario: `PartitionLog::flush` makes the active segment's `.log` durable but not its indexes
//! (they are rebuilt by the scan every unclean reopen does of the active segment). A crash after
//! a flush, with the active segment's index pages lost (the files zero-filled, as if no page of
//! them reached the disk), loses nothing: the reopen scans the active segment, rebuilds both
//! indexes, and every offset and timestamp lookup finds its batch. (`small_config`: 4 KiB
//! segments, an index entry every 256 bytes — sealed segments and an active one with a dozen
//! entries.)

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, OffsetLookup, OpenOffsets, ReplicaOrigin, Shutdown};
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::Compression;

const BATCHES: i64 = 120;
const PER_BATCH: i64 = 3;

#[test]
fn a_crash_after_flush_that_loses_the_active_indexes_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..BATCHES {
        log.append_as_follower(
            replica_batch(
                i * PER_BATCH,
                PER_BATCH as usize,
                0,
                Compression::None,
                T0 + i * 10,
            ),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.flush().unwrap();
    let end = Offset(BATCHES * PER_BATCH);
    assert_eq!(log.recovery_point(), end);
    // The crash: no close, so no index sync and no clean marker.
    drop(log);

    let mut logs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() >= 3, "sealed segments and an active one");
    let active = logs.last().unwrap();
    for ext in ["index", "timeindex"] {
        let p = active.with_extension(ext);
        let len = std::fs::metadata(&p).unwrap().len();
        assert!(len > 0, "{} was written", p.display());
        std::fs::write(&p, vec![0u8; len as usize]).unwrap();
    }

    let (log, report) = reopen_unclean(
        dir.path(),
        clock,
        OpenOffsets {
            recovery_point: end,
            ..OpenOffsets::default()
        },
    );
    assert_eq!(
        report.segments_recovered, 1,
        "only the active segment scanned"
    );
    assert_eq!(log.log_end_offset(), end);
    for o in 0..end.get() {
        let d = log
            .read(Offset(o), 1, FetchIsolation::LogEnd, true)
            .unwrap()
            .records
            .unwrap();
        assert_eq!(
            d.first_batch_offset.get(),
            o / PER_BATCH * PER_BATCH,
            "offset {o}"
        );
    }
    for i in (0..BATCHES).step_by(7) {
        let (o, ts, _) = log
            .fetch_offset(OffsetLookup::Timestamp(TimestampMs(T0 + i * 10)))
            .unwrap()
            .unwrap();
        assert_eq!((o, ts), (Offset(i * PER_BATCH), TimestampMs(T0 + i * 10)));
    }
}
