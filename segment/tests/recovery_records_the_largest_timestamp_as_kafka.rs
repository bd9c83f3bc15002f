//! Kafka's `LogSegment.recover` ends as a clean close does: after rebuilding the indexes from
//! the batches it appends the segment's largest timestamp (and the last offset of its batch) to
//! the time index ("a normally closed segment always appends the biggest timestamp ever seen").
//! Recovery here rebuilt only the interval entries, so after an unclean shutdown the recovered
//! segment's `.timeindex` lacked the entry Kafka's has.

mod common;

use common::batches;
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{ActiveSegment, SegmentConfig};
use std::sync::Arc;

#[test]
fn recovery_appends_the_largest_timestamp_to_the_time_index() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    // 4096-byte interval: the few small batches get no interval entry.
    let config = SegmentConfig {
        index_bytes_max: 4096,
        ..SegmentConfig::default()
    };
    let mut seg = ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
    // 5 batches of 2 records, timestamps rising: the largest, 1_041, is in the batch 8..=9.
    for b in batches(0, 5, 2, 20, 1_000) {
        seg.append(b).unwrap();
    }
    seg.sync_log().unwrap();
    drop(seg);

    let mut seg =
        ActiveSegment::open_for_recovery(storage, dir.path(), Offset(0), config, 0).unwrap();
    seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(
        (seg.time_index().entries(), seg.time_index().last_entry()),
        (1, (TimestampMs(1_041), Offset(9))),
        "Kafka's recovery leaves one time index entry: the largest timestamp and its batch's \
         last offset"
    );
    // Appends go on after it; a larger timestamp adds its entry after the recovered one.
    assert_eq!(seg.max_timestamp_so_far(), (TimestampMs(1_041), Offset(9)));
    seg.sanity_check().unwrap();
}
