//! The smallest `segment.index.bytes` the config accepts must give a log that takes appends.
//! The floor was 12 (room for one time-index entry), but the time index keeps one slot for the
//! entry written on roll, so an index of one slot is full before its first append: every append
//! rolled an empty segment and then failed (a topic created with 12..=23 answered every produce
//! KAFKA_STORAGE_ERROR, and `log.index.size.max.bytes=12` stopped `mirrorlog serve` at start,
//! when the transaction coordinator wrote its first record).

use crate::common;

use bytes::BytesMut;
use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{LeaderOrigin, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::Compression;

/// The smallest value `with_overrides` takes for `key`, searched upward from 0.
fn smallest_accepted(key: &str) -> u32 {
    (0..=64u32)
        .find(|n| {
            LogConfig::default()
                .with_overrides([(key, n.to_string())])
                .is_ok()
        })
        .expect("some small value is accepted")
}

fn config_with_index_bytes(n: u32) -> LogConfig {
    let mut c = small_config();
    c.segment.index_bytes_max = n;
    // An index entry for every batch, so the indexes fill as fast as they can.
    c.segment.index_interval_bytes = 0;
    c
}

#[test]
fn a_leader_log_at_the_smallest_accepted_segment_index_bytes_takes_appends() {
    for key in ["segment.index.bytes", "log.index.size.max.bytes"] {
        let n = smallest_accepted(key);
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(
            dir.path(),
            config_with_index_bytes(n),
            clock(),
            Shutdown::Clean,
        );
        for i in 0..6 {
            log.append_as_leader(
                client_batch(2, T0 + i),
                LeaderEpoch(0),
                LeaderOrigin::Client,
            )
            .unwrap_or_else(|e| panic!("{key}={n}: append {i} failed: {e}"));
        }
        assert_eq!(log.log_end_offset(), Offset(12), "{key}={n}");
        log.close().unwrap();
        let log = open(
            dir.path(),
            config_with_index_bytes(n),
            clock(),
            Shutdown::Clean,
        );
        assert_eq!(
            values(&log, Offset(0)).len(),
            12,
            "{key}={n}: every record reads back after a reopen"
        );
    }
}

#[test]
fn a_mirror_log_at_the_smallest_accepted_segment_index_bytes_takes_a_run_of_batches() {
    let n = smallest_accepted("segment.index.bytes");
    let dir = tempfile::tempdir().unwrap();
    let mut c = config_with_index_bytes(n);
    c.read_only = true;
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    // One fetch answer of five batches, more than one segment's indexes hold.
    let mut answer = BytesMut::new();
    for b in 0..5 {
        answer.extend_from_slice(&replica_batch(b * 2, 2, 1, Compression::None, T0 + b));
    }
    log.append_as_follower(answer.freeze(), ReplicaOrigin::Mirror)
        .unwrap_or_else(|e| panic!("segment.index.bytes={n}: {e}"));
    assert_eq!(log.log_end_offset(), Offset(10));
}
