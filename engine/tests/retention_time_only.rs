//! Time retention with the default unlimited `retention.bytes` (−1) deletes only the expired
//! segments. It used to overflow the byte count at the first segment deleted by time: a panic
//! in debug builds, and in release every later sealed segment below the high watermark counted
//! as over the size limit and was deleted, however new (found in review).

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::LeaderEpoch;

#[test]
fn time_retention_with_unlimited_bytes_deletes_only_expired_segments() {
    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.retention_ms = 3_600_000;
    assert_eq!(c.retention_bytes, -1, "the default: unlimited");
    let mut log = open(dir.path(), c, clk.clone(), Shutdown::Clean);
    // Old data: two or more sealed segments at T0.
    while log.segment_count() < 3 {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    // Every segment so far holds only day-old records (the active one is rolled below).
    let old_segments = log.segment_count();
    // A day later: fresh data filling several more segments.
    clk.advance(24 * 3_600_000);
    let now = T0 + 24 * 3_600_000;
    log.roll(log.log_end_offset()).unwrap();
    while log.segment_count() < old_segments + 5 {
        log.append_as_leader(client_batch(3, now), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let before = log.segment_count();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    let deleted = log.delete_old_segments().unwrap();
    assert_eq!(
        (deleted, log.segment_count()),
        (old_segments, before - old_segments),
        "only the day-old segments are past retention.ms"
    );
}
