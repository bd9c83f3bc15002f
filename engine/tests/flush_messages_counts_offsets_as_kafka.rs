//! `flush.messages` counts what Kafka's `UnifiedLog.append` counts: `unflushedMessages`, the log
//! end less the recovery point, so offsets, not the records an append says it holds. The two
//! differ for a replica's or a mirror's appends: batches with gaps between their offsets (a
//! compacted source) and compressed legacy wrappers, whose records are unknown until
//! decompressed, which counted as one record each here. Such appends flushed later than
//! Kafka's would, or never as long as each left the count below the setting. A flush is seen
//! as the recovery point reaching the log end.

use crate::common;

use bytes::{Bytes, BytesMut};
use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{LeaderOrigin, PartitionLog, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::Compression;
use std::path::{Path, PathBuf};

fn log_flushing_every(dir: &Path, flush_messages: i64, read_only: bool) -> PartitionLog {
    let mut c: LogConfig = small_config();
    c.flush_messages = flush_messages;
    c.read_only = read_only;
    open(dir, c, clock(), Shutdown::Clean)
}

/// A follower's log and a mirror's (read-only), each with the origin its appends take, in
/// their temporary directories.
fn replica_logs_flushing_every(
    flush_messages: i64,
) -> Vec<(tempfile::TempDir, PartitionLog, ReplicaOrigin)> {
    [
        (ReplicaOrigin::Replication, false),
        (ReplicaOrigin::Mirror, true),
    ]
    .into_iter()
    .map(|(origin, read_only)| {
        let dir = tempfile::tempdir().unwrap();
        let log = log_flushing_every(dir.path(), flush_messages, read_only);
        (dir, log, origin)
    })
    .collect()
}

#[test]
fn a_leaders_appends_flush_once_the_offsets_since_the_last_flush_reach_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = log_flushing_every(dir.path(), 5, false);
    for _ in 0..2 {
        log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
    assert_eq!(
        (log.recovery_point(), log.log_end_offset()),
        (Offset(0), Offset(4))
    );
    log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(
        (log.recovery_point(), log.log_end_offset()),
        (Offset(6), Offset(6))
    );
}

#[test]
fn a_replicas_offset_gap_counts_toward_flush_messages() {
    for (_dir, mut log, origin) in replica_logs_flushing_every(10) {
        // Two records at offsets 0 and 20 (a compacted source's batches): 21 offsets.
        let mut answer = BytesMut::new();
        answer.extend_from_slice(&replica_batch(0, 1, 1, Compression::None, T0));
        answer.extend_from_slice(&replica_batch(20, 1, 1, Compression::None, T0));
        let info = log.append_as_follower(answer.freeze(), origin).unwrap();
        assert_eq!(info.record_count, 2);
        // Flushed: the recovery point is the log end.
        let (end, recovery_point) = (log.log_end_offset(), log.recovery_point());
        assert_eq!(
            (end, recovery_point),
            (Offset(21), Offset(21)),
            "{origin:?}: 21 offsets since the last flush reach flush.messages=10"
        );
    }
}

/// The legacy entries a Kafka 4 source still serves from an older Kafka's segments
/// (`tests/fixtures/kafka-java-legacy/`): 17 offsets in 10 entries, 4 of them compressed
/// wrappers of 2 or 3 records.
fn legacy_fixture() -> Bytes {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kafka-java-legacy/00000000000000000000.log");
    Bytes::from(std::fs::read(path).unwrap())
}

#[test]
fn a_compressed_legacy_wrapper_counts_its_offsets_toward_flush_messages() {
    for (_dir, mut log, origin) in replica_logs_flushing_every(17) {
        let info = log.append_as_follower(legacy_fixture(), origin).unwrap();
        assert_eq!(info.batch_count, 10);
        // Flushed: the recovery point is the log end.
        let (end, recovery_point) = (log.log_end_offset(), log.recovery_point());
        assert_eq!(
            (end, recovery_point),
            (Offset(17), Offset(17)),
            "{origin:?}: 17 offsets reach flush.messages=17"
        );
    }
}
