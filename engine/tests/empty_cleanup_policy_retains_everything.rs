//! `cleanup.policy` set to the empty list (Kafka 4.2: "infinite retention") keeps every
//! segment whatever `retention.ms` and `retention.bytes` say; only segments wholly below a log
//! start moved by DeleteRecords go. Before, the empty list was refused as a malformed value.

use crate::common;

use common::*;
use mirrorlog_engine::config::{CleanupPolicy, LogConfig};
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::LeaderEpoch;

#[test]
fn empty_cleanup_policy_ignores_retention_limits_but_not_delete_records() {
    let parsed = LogConfig::default()
        .with_topic_overrides([("cleanup.policy", "")])
        .unwrap();
    assert_eq!(parsed.cleanup_policy, CleanupPolicy::Retain);
    assert!(
        parsed
            .to_kafka_pairs()
            .iter()
            .any(|(k, v)| *k == "cleanup.policy" && v.is_empty()),
        "described as the empty list"
    );

    let dir = tempfile::tempdir().unwrap();
    let clk = clock();
    let mut c = small_config();
    c.retention_ms = 3_600_000;
    c.retention_bytes = 0;
    c.cleanup_policy = parsed.cleanup_policy;
    let mut log = open(dir.path(), c, clk.clone(), Shutdown::Clean);
    while log.segment_count() < 4 {
        log.append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    clk.advance(24 * 3_600_000);
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    let before = log.segment_count();
    assert_eq!(
        log.delete_old_segments().unwrap(),
        0,
        "day-old segments far over retention.bytes=0 are kept"
    );
    assert_eq!(log.segment_count(), before);

    // DeleteRecords still trims: everything below the third segment's base goes at the next
    // retention pass (as Kafka's), and a pass afterwards still deletes nothing more.
    let third = log.segment_base_offsets()[2];
    assert!(log.maybe_increment_log_start_offset(third).unwrap());
    assert_eq!(log.delete_old_segments().unwrap(), 2);
    assert_eq!(log.segment_count(), before - 2);
    assert_eq!(log.delete_old_segments().unwrap(), 0);
    assert_eq!(log.segment_count(), before - 2);
    assert_eq!(log.log_start_offset(), third);
}
