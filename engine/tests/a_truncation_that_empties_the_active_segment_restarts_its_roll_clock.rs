//! `segment.ms` for batches without timestamps counts from the segment's creation (Kafka's
//! `LogSegment.timeWaitedForRoll`: `now − created` when the first batch has no timestamp). A
//! truncation that leaves the active segment empty makes it a new segment in that respect:
//! Kafka's `LogSegment.truncateTo` sets `created` to now. Here the clock kept counting from
//! the segment's creation, so the first appends after such a truncation rolled at once once
//! `segment.ms` had passed since then, a segment holding a single batch. A full truncation
//! that keeps the active segment's name (it starts where that segment did) empties it the same
//! way, and Kafka's `truncateFullyAndStartAt` makes a new segment, created now.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

const SEGMENT_MS: i64 = 10_000;

fn append_without_timestamps(log: &mut PartitionLog) {
    log.append_as_leader(client_batch(2, -1), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
}

/// Appends to a log whose segment was created at `T0`, 9 s later empties its active segment
/// with `truncate`, and appends twice 3 s after that: `segment.ms` (10 s) has passed since
/// the segment was created, not since it was emptied.
fn appends_after_an_emptying_truncation(truncate: impl FnOnce(&mut PartitionLog)) {
    let dir = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.segment.segment_ms = SEGMENT_MS;
    let clock = clock();
    let mut log = open(dir.path(), c, clock.clone(), Shutdown::Clean);
    append_without_timestamps(&mut log);
    clock.advance(9_000);
    truncate(&mut log);
    assert_eq!(log.log_end_offset(), Offset(0));
    assert_eq!(log.segment_base_offsets(), vec![Offset(0)]);
    clock.advance(3_000);
    append_without_timestamps(&mut log);
    append_without_timestamps(&mut log);
    assert_eq!(
        log.segment_base_offsets(),
        vec![Offset(0)],
        "3 s after the truncation emptied it, the segment is within segment.ms"
    );
    // The clock does run from the truncation: past segment.ms after it, the next append rolls.
    clock.advance(SEGMENT_MS - 3_000 + 1);
    append_without_timestamps(&mut log);
    assert_eq!(log.segment_base_offsets(), vec![Offset(0), Offset(4)]);
}

#[test]
fn a_truncation_to_the_active_segments_base_restarts_its_roll_clock() {
    appends_after_an_emptying_truncation(|log| {
        assert!(log.truncate_to(Offset(0)).unwrap());
    });
}

#[test]
fn a_full_truncation_at_the_active_segments_base_restarts_its_roll_clock() {
    appends_after_an_emptying_truncation(|log| {
        log.truncate_fully_and_start_at(Offset(0)).unwrap();
    });
}
