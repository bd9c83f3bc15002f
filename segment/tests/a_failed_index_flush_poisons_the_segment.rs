//! A failed sync of an index in [`ActiveSegment::flush`] poisons the segment, as a failed sync
//! of its `.log` does: the kernel may have dropped the index's dirty pages, so a later sync that
//! succeeds proves nothing, and Kafka's `LogSegment.flush` treats any `IOException` as a failure
//! of the log directory. The segment used to stay usable: the next flush reported success with
//! the aborted transaction possibly lost, and appends went on.
//!
//! The same holds when sealing fails: the caller keeps the segment (poisoned, not sealed) with
//! [`ActiveSegment::prepare_seal`].
//!
//! The failing sync is `/dev/null` behind the `.txnindex` path (a symlink): writes to it succeed
//! and vanish, `fsync` fails with `EINVAL`, for root too.

mod common;

use common::batch;
use mirrorlog_index::txn_index::AbortedTxn;
use mirrorlog_index::{Offset, ProducerId};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{ActiveSegment, SegmentConfig, SegmentError, segment_path};
use std::sync::Arc;

/// A segment holding offsets 0..3 and one aborted transaction, whose `.txnindex` is
/// `/dev/null`.
fn segment_with_an_unsyncable_txn_index(dir: &std::path::Path) -> ActiveSegment {
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg =
        ActiveSegment::create(storage, dir, Offset(0), SegmentConfig::default(), 0).unwrap();
    std::os::unix::fs::symlink("/dev/null", segment_path(dir, Offset(0), ".txnindex")).unwrap();
    seg.append(batch(0, 3, 10, 1_000)).unwrap();
    seg.append_aborted_txn(AbortedTxn {
        producer_id: ProducerId(1),
        first_offset: Offset(0),
        last_offset: Offset(2),
        last_stable_offset: Offset(0),
    })
    .unwrap();
    seg
}

#[test]
fn a_failed_index_sync_in_flush_poisons_the_segment() {
    let d = tempfile::tempdir().unwrap();
    let mut seg = segment_with_an_unsyncable_txn_index(d.path());
    seg.flush()
        .expect_err("the transaction index's fsync fails on /dev/null");
    assert!(
        matches!(seg.check_usable(), Err(SegmentError::Failed { .. })),
        "a failed index sync left the segment usable"
    );
    assert!(matches!(seg.flush(), Err(SegmentError::Failed { .. })));
    assert!(matches!(
        seg.append(batch(3, 1, 10, 1_001)),
        Err(SegmentError::Failed { .. })
    ));
}

#[test]
fn a_failed_prepare_seal_keeps_the_segment_poisoned() {
    let d = tempfile::tempdir().unwrap();
    let mut seg = segment_with_an_unsyncable_txn_index(d.path());
    seg.prepare_seal()
        .expect_err("the transaction index's fsync fails on /dev/null");
    assert!(matches!(
        seg.check_usable(),
        Err(SegmentError::Failed { .. })
    ));
    // Still readable by its holder: nothing was dropped.
    assert_eq!(seg.next_offset(), Offset(3));
    assert!(matches!(
        seg.prepare_seal(),
        Err(SegmentError::Failed { .. })
    ));
}

/// The poisoned segment's error names the operating system's error of the index's failed sync:
/// the index crate's error keeps it as its source only, and the cause was its message alone
/// ("I/O error during fsync of …/00000000000000000000.txnindex"), which reaches the reason a
/// data directory goes offline with.
#[test]
fn a_poisoned_segment_names_the_os_error_of_its_failed_index_sync() {
    let d = tempfile::tempdir().unwrap();
    let mut seg = segment_with_an_unsyncable_txn_index(d.path());
    seg.flush()
        .expect_err("the transaction index's fsync fails on /dev/null");
    let einval = std::io::Error::from_raw_os_error(22).to_string();
    let e = seg.check_usable().expect_err("poisoned");
    assert!(e.to_string().contains(".txnindex"), "{e}");
    assert!(
        e.to_string().contains(&einval),
        "{e} does not name {einval:?}"
    );
}
