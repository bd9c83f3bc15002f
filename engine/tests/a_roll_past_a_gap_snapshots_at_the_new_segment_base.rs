//! Scenario: a roll to a new segment above the log end (a replica's batch after a gap, as a
//! mirror of a compacted topic sees) took the producer snapshot at the old log end, below the
//! new segment's base. Kafka's roll names it by the new base (`updateMapEndOffset` before
//! `takeSnapshot`). With the log start then moved into the gap (DeleteRecords), the snapshot
//! at the old log end is at or below the log start, so a reload after a crash removed it and
//! replayed from the log start: producer 7, whose batch lies below, was forgotten, and its
//! retried batch was appended a second time instead of being answered as a duplicate.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn a_roll_past_a_gap_snapshots_at_the_new_segment_base() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let mut log = open(dir.path(), small_config(), c.clone(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    log.append_as_leader(
        producer_batch(7, 0, 0, 2, false, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    log.roll(Offset(10)).unwrap();
    let snapshots: Vec<Offset> = log
        .producer_state()
        .snapshots()
        .unwrap()
        .iter()
        .map(|s| s.offset)
        .collect();
    assert_eq!(snapshots, vec![Offset(10)]);

    log.append_as_leader(client_batch(2, T0), e, LeaderOrigin::Client)
        .unwrap();
    log.update_high_watermark(Offset(12));
    log.maybe_increment_log_start_offset(Offset(5)).unwrap();
    log.flush().unwrap();
    drop(log); // a crash: no clean-shutdown snapshot

    let offsets = OpenOffsets {
        log_start_offset: Offset(5),
        recovery_point: Offset(12),
        high_watermark: Offset(12),
    };
    let (mut log, _) = reopen_unclean(dir.path(), c, offsets);
    let retry = log
        .append_as_leader(
            producer_batch(7, 0, 0, 2, false, T0),
            e,
            LeaderOrigin::Client,
        )
        .unwrap();
    assert!(retry.duplicate, "{retry:?}");
    assert_eq!(retry.first_offset, Offset(0));
    assert_eq!(log.log_end_offset(), Offset(12));
}
