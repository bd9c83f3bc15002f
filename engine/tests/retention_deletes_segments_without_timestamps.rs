//! Time retention of segments whose records carry no timestamp (−1, which Kafka and the engine
//! accept from clients). Kafka's `LogSegment.largestTimestamp` falls back to the file's
//! last-modified time when no batch has a timestamp, so such a segment lives for `retention.ms`
//! after it was written. The engine took the segment's largest timestamp, −1, as is: `now − (−1)`
//! is always past `retention.ms`, so every sealed segment without timestamps below the high
//! watermark is deleted at the first retention pass, however new.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn fresh_segments_without_timestamps_survive_time_retention() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.retention_ms = 3_600_000;
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    // Written just now, records without timestamps (−1), several sealed segments.
    while log.segment_count() < 4 {
        log.append_as_leader(client_batch(3, -1), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    let before = log.segment_count();
    let deleted = log.delete_old_segments().unwrap();
    assert_eq!(
        (deleted, log.segment_count(), log.log_start_offset()),
        (0, before, Offset(0)),
        "segments written a moment ago are within retention.ms=1h"
    );
}
