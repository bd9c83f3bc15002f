//! A compacted Kafka log as its source serves it: batches whose base offsets skip the offsets
//! the cleaner removed, a batch with holes between its records' offsets, and a v2 batch the
//! cleaner emptied but kept for its producer's state (Kafka's `MemoryRecords.filterTo` writes
//! it with `DefaultRecordBatch.writeEmptyHeader`: the 61-byte header alone, record count 0,
//! `lastOffsetDelta` of the original batch, base timestamp −1, max timestamp kept, the
//! producer id, epoch and base sequence kept). The mirror copies it byte for byte at the same
//! offsets; the destination's consumers fetch across every gap; ListOffsets and the high
//! watermark are the source's; the producer state the empty batch carries is kept, as a Kafka
//! follower keeps it.

use crate::common;

use common::compacted_source::{
    NOW_MS, PRODUCER, TOPIC, compacted_log, consume, list_offset, log_bytes, world,
};
use mirrorlog_engine::manager::PartitionHandle;
use mirrorlog_index::{Offset, ProducerEpoch, Sequence};

#[test]
fn the_mirror_copies_gaps_and_emptied_batches_at_the_same_offsets() {
    let w = world(&[("cleanup.policy", "compact")], compacted_log);
    let (src, dst) = (w.source(), w.destination());
    assert_eq!(log_bytes(&dst), log_bytes(&src), "byte for byte");
    assert_eq!(dst.read().log_end_offset(), Offset(32));
    assert_eq!(dst.read().high_watermark(), src.read().high_watermark());
    for isolation_level in [0, 1] {
        assert_eq!(
            consume(&w.dst, TOPIC, isolation_level),
            vec![2, 4, 10, 13, 30, 31]
        );
    }
    assert_eq!(
        dst.read().last_stable_offset(),
        src.read().last_stable_offset()
    );
    // ListOffsets: the log start, the high watermark, and a time in a gap or in an emptied
    // batch finds the next record (Kafka's `searchForTimestamp` goes on past a batch with no
    // records; a marker's record counts, as there).
    for (timestamp, expected) in [(-2, 0), (-1, 32), (NOW_MS + 5, 10), (NOW_MS + 14, 26)] {
        assert_eq!(
            list_offset(&w.dst, TOPIC, timestamp),
            expected,
            "ListOffsets {timestamp}"
        );
    }

    // The producer state the emptied batch keeps: sequences 0..=4 ending at offset 24.
    let kept = |h: &PartitionHandle| h.read().producer_state().entry(PRODUCER).cloned();
    let entry = kept(&dst).expect("the emptied batch's producer is known");
    assert_eq!(entry.producer_epoch, ProducerEpoch(0));
    assert_eq!(entry.last_seq(), Sequence(4));
    assert_eq!(entry.batches.back().unwrap().last_offset, Offset(24));
    assert_eq!(Some(entry), kept(&src));
}

/// The same log on a `mirrorlog serve` source, mirrored over the wire (a chain: a compacted
/// Kafka topic mirrored here, mirrored on again): the same bytes, offsets and answers.
#[test]
fn a_mirrorlog_source_serves_it_the_same_over_the_wire() {
    use common::mirror::{source_and_destination, start_orders};
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination(dir.path(), &["m"]);
    let (s, d) = (src.broker.clone(), dst.broker.clone());
    compacted_log(&s.partition("orders", 0).unwrap());
    assert_eq!(start_orders(&d, "m"), 0);
    common::long_poll::wait_log_end(&d, "orders", 32);
    let (sp, dp) = (
        s.partition("orders", 0).unwrap(),
        d.partition("orders", 0).unwrap(),
    );
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while dp.read().high_watermark() < Offset(32) {
        assert!(std::time::Instant::now() < guard, "no high watermark");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(log_bytes(&dp), log_bytes(&sp), "byte for byte");
    for isolation_level in [0, 1] {
        assert_eq!(
            consume(&d, "orders", isolation_level),
            vec![2, 4, 10, 13, 30, 31]
        );
    }
    for timestamp in [-2, -1, -3, NOW_MS + 5, NOW_MS + 14] {
        assert_eq!(
            list_offset(&d, "orders", timestamp),
            list_offset(&s, "orders", timestamp),
            "ListOffsets {timestamp}"
        );
    }
    let kept = |h: &PartitionHandle| h.read().producer_state().entry(PRODUCER).cloned();
    assert!(kept(&dp).is_some());
    assert_eq!(kept(&dp), kept(&sp));
    drop((s, d, sp, dp));
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
