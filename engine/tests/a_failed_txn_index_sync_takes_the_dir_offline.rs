//! A failed `fsync` of a segment's `.txnindex` while the segment is sealed (a roll inside an
//! append) takes the data directory offline, as a failed sync of its `.log` does: Linux may have
//! dropped the entries' dirty pages, so a later successful sync would prove nothing (Kafka's
//! `LogDirFailureChannel` takes any `IOException` of a flush).
//!
//! Index I/O errors raised inside a segment operation came back wrapped in the segment's error,
//! which the manager did not count as a storage failure: the append failed, yet the directory
//! stayed online with the sealed segment's aborted transactions possibly lost, and took further
//! appends.
//!
//! The failing sync is `/dev/null` behind the `.txnindex` path (a symlink): writes to it succeed
//! and vanish, `fsync` fails with `EINVAL`, for root too.

use crate::common;

use common::pwrite_manager as manager;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};

#[test]
fn a_failed_txn_index_sync_at_a_roll_takes_the_dir_offline() {
    let d = tempfile::tempdir().unwrap();
    let tp = orders(0);
    let txn_index = d
        .path()
        .join("orders-0")
        .join("00000000000000000000.txnindex");
    {
        let mgr = manager(d.path());
        let h = mgr.create(&tp, TopicId([7; 16]), small_config()).unwrap();
        std::os::unix::fs::symlink("/dev/null", &txn_index).unwrap();
        let e = LeaderEpoch(0);
        for (batch, origin) in aborted_txn() {
            h.append_as_leader_durable(batch, e, origin).unwrap();
        }
        // Too big for what is left of the 4 KiB segment: the append rolls, sealing (and
        // syncing) the segment holding the marker.
        let err = h
            .append_as_leader_durable(keyed_batch(&"x".repeat(3900)), e, LeaderOrigin::Client)
            .expect_err("the append whose roll could not sync the transaction index");
        assert!(
            h.check_online().is_err(),
            "a failed sync of the transaction index left the data dir online: {err}"
        );
        assert!(matches!(
            h.append_as_leader_durable(keyed_batch("b"), e, LeaderOrigin::Client),
            Err(EngineError::LogDirOffline { .. })
        ));
        drop(h);
        mgr.shutdown().unwrap();
    }
    std::fs::remove_file(&txn_index).unwrap();

    let mgr = manager(d.path());
    let h = mgr.lookup(&tp).unwrap().expect("the partition");
    let mut log = h.write();
    assert_eq!(log.log_end_offset(), Offset(3));
    let aborted = read_committed_aborted(&mut log, Offset(3)).unwrap();
    assert_eq!(
        aborted.len(),
        1,
        "the entry the failed sync lost was not rebuilt"
    );
}
