//! A partition no longer written to keeps all its records in its active segment. Kafka's
//! `deletableSegments` takes the active segment too once it is not empty, the high watermark is
//! at the log end and it breaches retention, and `deleteSegments` rolls before deleting every
//! segment: the records expire. The active segment used to be kept whatever its age or size,
//! so such a partition kept its records for good (found in review, session 14).

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn an_expired_active_segment_is_rolled_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.retention_ms = 3_600_000;
    let mut log = open(dir.path(), c, clk.clone(), Shutdown::Clean);
    log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    assert_eq!(log.segment_count(), 1);
    clk.advance(2 * 3_600_000);
    // Not yet replicated: the high watermark below the log end keeps the segment.
    assert_eq!(log.delete_old_segments().unwrap(), 0);
    log.update_high_watermark(leo);
    assert_eq!(log.delete_old_segments().unwrap(), 1);
    assert_eq!(log.segment_base_offsets(), vec![leo]);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (leo, leo));
    assert_eq!(log.size_bytes(), 0);
    // The new, empty active segment is never rolled or deleted again.
    clk.advance(2 * 3_600_000);
    assert_eq!(log.delete_old_segments().unwrap(), 0);
    assert_eq!(log.segment_base_offsets(), vec![leo]);
    // Appends go on from the log end.
    log.append_as_leader(
        client_batch(1, T0 + 4 * 3_600_000),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), Offset(leo.get() + 1));
}

#[test]
fn a_retention_bytes_of_zero_deletes_every_segment_the_active_one_rolled_first() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.retention_bytes = 0;
    let mut log = open(dir.path(), c, clk.clone(), Shutdown::Clean);
    while log.segment_count() < 3 {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    assert_eq!(log.delete_old_segments().unwrap(), 3);
    assert_eq!(log.segment_base_offsets(), vec![leo]);
    assert_eq!(log.log_start_offset(), leo);
}
