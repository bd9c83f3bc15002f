//! Bug: a compacted source topic (`cleanup.policy=compact`: Kafka Streams changelogs, CDC
//! tables) was mirrored onto a topic that kept the destination's `delete` with its default
//! 7-day `retention.ms`, as the config sync refused `compact` (no compaction here). Kafka never
//! deletes a `compact`-only topic's records by time or size; the destination deleted a
//! catch-up of a months-old changelog right after copying it, and a failover lost keys.
//!
//! Now `compact` alone is mirrored as `cleanup.policy=` (the empty list: infinite retention)
//! and `compact,delete` as `delete` with the source's retention limits: the destination keeps
//! every record the source holds (and those its cleaner removes since), not compacted.

use crate::common;

use common::compacted_source::{NOW_MS, SIXTY_DAYS_MS, World, described, log_bytes, world};
use mirrorlog_engine::config::CleanupPolicy;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::BatchBuilder;

/// Ten batches of keyed records, timestamped sixty days ago: past the destination's default
/// retention.
fn old_changelog(h: &mirrorlog_engine::manager::PartitionHandle) {
    let mut log = h.write();
    for i in 0..10 {
        let mut b = BatchBuilder::new();
        b.append(
            TimestampMs(NOW_MS - SIXTY_DAYS_MS + i),
            Some(format!("key-{}", i % 3).as_bytes()),
            Some(format!("value-{i}").as_bytes()),
            &[],
        );
        log.append_as_leader(b.build().into_bytes(), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

/// Runs the destination's retention on its partition; asserts it still holds the source's log,
/// byte for byte, from the same log start (a failed-over topic has appended after it).
fn retention_keeps_every_record(w: &World) {
    w.destination().write().delete_old_segments().unwrap();
    let (src, dst) = (w.source(), w.destination());
    assert_eq!(dst.read().log_start_offset(), src.read().log_start_offset());
    assert!(dst.read().log_end_offset() >= src.read().log_end_offset());
    let (src, dst) = (log_bytes(&src), log_bytes(&dst));
    assert_eq!(dst[..src.len()], src[..], "every source record is kept");
}

#[test]
fn a_compact_only_topic_is_mirrored_with_infinite_retention() {
    let w = world(
        &[("cleanup.policy", "compact"), ("retention.ms", "86400000")],
        old_changelog,
    );
    retention_keeps_every_record(&w);
    assert_eq!(
        w.destination().read().config().cleanup_policy,
        CleanupPolicy::Retain
    );
    // DescribeConfigs says what the destination does: it keeps everything, it does not compact.
    assert_eq!(described(&w.dst, "cleanup.policy").as_deref(), Some(""));

    // Failed over (STOPPED, writable): still every record, whatever the retention passes.
    w.mirror
        .stop_topic(common::compacted_source::TOPIC)
        .unwrap();
    assert!(!w.destination().read().is_read_only());
    retention_keeps_every_record(&w);
}

#[test]
fn a_compact_and_delete_topic_is_mirrored_with_the_sources_retention() {
    let ninety_days = (90 * 86_400_000_i64).to_string();
    let w = world(
        &[
            ("cleanup.policy", "compact,delete"),
            ("retention.ms", &ninety_days),
        ],
        old_changelog,
    );
    let dst = w.destination();
    let config = dst.read().config().clone();
    assert_eq!(config.cleanup_policy, CleanupPolicy::Delete);
    assert_eq!(config.retention_ms.to_string(), ninety_days);
    retention_keeps_every_record(&w);
    assert_eq!(
        described(&w.dst, "cleanup.policy").as_deref(),
        Some("delete")
    );
}
