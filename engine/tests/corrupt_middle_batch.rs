//! Scenario: a bit flips inside a batch in the middle of the log (an older, sealed segment).
//! Unclean recovery from the start truncates the log at that batch and deletes every later
//! segment, so nothing corrupt is ever served; the batches before it stay.

use crate::common;

use common::*;
use mirrorlog_engine::log::{OpenOffsets, Shutdown};
use mirrorlog_index::Offset;
use std::sync::Arc;

#[test]
fn recovery_truncates_at_a_corrupt_batch_in_a_middle_segment() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let bases = closed_replica_log(dir.path(), clock.clone());
    // Flip a byte in the second segment's third batch.
    let bad = corrupt_third_batch(dir.path(), bases[1]);
    let (log, report) = mirrorlog_engine::log::PartitionLog::open(
        Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        dir.path(),
        "t-0",
        small_config(),
        clock,
        Shutdown::Unclean,
        OpenOffsets::default(),
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), bad.base_offset());
    assert_eq!(log.segment_base_offsets(), bases[..2].to_vec());
    assert!(report.segments_deleted >= 2);
    assert!(
        report.problems.iter().any(|p| p.contains("crc mismatch")),
        "{:?}",
        report.problems
    );
    let vals = values(&log, Offset(0));
    assert_eq!(vals.len() as i64, bad.base_offset().get());
}
