//! A roll whose sealing of the old segment fails (here the `fsync` of its `.txnindex`) keeps
//! that segment in the log, poisoned, and fails the log, on a bare `PartitionLog` too: it
//! refuses reads, appends and further rolls until it is reopened, which recovers the segment
//! with its aborted transaction.
//!
//! The roll used to swap the new segment in before sealing the old one, so a failed seal
//! dropped the old segment from the log: a bare log (no log manager to take its directory
//! offline) then listed no segment for offsets it still claimed, served the new segment and
//! took appends into it.
//!
//! The failing sync is `/dev/null` behind the `.txnindex` path (a symlink): writes to it succeed
//! and vanish, `fsync` fails with `EINVAL`, for root too.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn a_failed_seal_at_a_roll_keeps_the_segment_and_fails_the_log() {
    let d = tempfile::tempdir().unwrap();
    let txn_index = d.path().join("00000000000000000000.txnindex");
    {
        let mut log = open(d.path(), small_config(), clock(), Shutdown::Clean);
        std::os::unix::fs::symlink("/dev/null", &txn_index).unwrap();
        let e = LeaderEpoch(0);
        for (batch, origin) in aborted_txn() {
            log.append_as_leader(batch, e, origin).unwrap();
        }
        assert_eq!(log.log_end_offset(), Offset(3));

        log.roll(Offset(3))
            .expect_err("sealing cannot sync the transaction index");
        assert_eq!(
            log.segment_base_offsets(),
            vec![Offset(0)],
            "the segment whose seal failed left the log"
        );
        assert_eq!(log.log_end_offset(), Offset(3));
        assert!(log.failure().is_some(), "the log did not fail");
        assert!(matches!(
            log.read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true),
            Err(EngineError::LogDirOffline { .. })
        ));
        assert!(matches!(
            log.append_as_leader(keyed_batch("b"), e, LeaderOrigin::Client),
            Err(EngineError::LogDirOffline { .. })
        ));
        assert!(matches!(
            log.roll(Offset(3)),
            Err(EngineError::LogDirOffline { .. })
        ));
        assert!(
            !d.path().join("00000000000000000003.log").exists(),
            "the unused new segment was left behind"
        );
    }
    std::fs::remove_file(&txn_index).unwrap();

    let (mut log, _) = reopen_unclean(d.path(), clock(), OpenOffsets::default());
    assert_eq!(log.log_end_offset(), Offset(3));
    let aborted = read_committed_aborted(&mut log, Offset(3)).unwrap();
    assert_eq!(aborted.len(), 1, "the aborted transaction was not rebuilt");
}
