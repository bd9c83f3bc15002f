//! `segment.ms` for batches without timestamps counts from when the segment was created or
//! loaded (Kafka's `LogSegment.timeWaitedForRoll`: `now − created`, `created` set when the
//! `LogSegment` is constructed, at a roll or at the log's load). A truncation into a sealed
//! segment makes it the active one again; Kafka's `truncateTo` keeps its `created` unless it
//! empties it. Here the segment was reopened with the clock restarted at the truncation, so it
//! took appends for another full `segment.ms` where Kafka's rolls at the first one.

use crate::common;

use common::*;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::{LeaderOrigin, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

const SEGMENT_MS: i64 = 10_000;

fn append_without_timestamps(log: &mut PartitionLog) {
    log.append_as_leader(client_batch(2, -1), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
}

fn config() -> mirrorlog_engine::config::LogConfig {
    let mut c = small_config();
    c.segment.segment_ms = SEGMENT_MS;
    c
}

/// Two batches (0..=3) in the first segment, then a roll to 4 and a batch there.
fn two_segments(log: &mut PartitionLog, clock: &ManualClock) {
    append_without_timestamps(log);
    append_without_timestamps(log);
    clock.advance(1_000);
    log.roll(Offset(4)).unwrap();
    append_without_timestamps(log);
    assert_eq!(log.segment_base_offsets(), vec![Offset(0), Offset(4)]);
}

/// 9 s after the first segment's clock started, truncates into it (it keeps 0..=1 and becomes
/// the active segment), then appends 2 s later: 11 s since that start, past `segment.ms`.
fn truncate_into_the_first_and_append(log: &mut PartitionLog, clock: &ManualClock, start: i64) {
    clock.set(start + 9_000);
    assert!(log.truncate_to(Offset(2)).unwrap());
    assert_eq!(log.segment_base_offsets(), vec![Offset(0)]);
    assert_eq!(log.log_end_offset(), Offset(2));
    clock.advance(2_000);
    append_without_timestamps(log);
    assert_eq!(
        log.segment_base_offsets(),
        vec![Offset(0), Offset(2)],
        "segment.ms has passed since the segment was created or loaded: the append rolls"
    );
}

#[test]
fn a_segment_truncated_into_keeps_the_time_it_was_created() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), config(), clock.clone(), Shutdown::Clean);
    two_segments(&mut log, &clock);
    truncate_into_the_first_and_append(&mut log, &clock, T0);
}

#[test]
fn a_segment_truncated_into_keeps_the_time_it_was_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), config(), clock.clone(), Shutdown::Clean);
    two_segments(&mut log, &clock);
    log.close().unwrap();
    // Loaded 100 s later: its clock starts again there, as Kafka's load constructs the segment.
    let loaded = T0 + 100_000;
    clock.set(loaded);
    let mut log = open(dir.path(), config(), clock.clone(), Shutdown::Clean);
    assert_eq!(log.segment_base_offsets(), vec![Offset(0), Offset(4)]);
    truncate_into_the_first_and_append(&mut log, &clock, loaded);
}
