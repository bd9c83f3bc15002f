//! Scenario: a follower's or a mirror's fetch answer holds legacy entries (magic 0 and 1) that a
//! Kafka 4 leader or source still serves from segments an older Kafka wrote
//! (`tests/fixtures/kafka-java-legacy/`, written by Kafka's own client library). They used to be
//! refused as corrupt (a mirror partition went FAILED); Kafka's replica append takes them, and so
//! does this one now: byte for byte at their offsets, rolled and indexed as recovery would, no
//! producer state, v2 batches after them; a partial entry at the end of the answer is left for
//! the next fetch, a corrupt one refused with nothing written, and a legacy entry after v2 ones
//! clears the epoch cache as Kafka's `UnifiedLog.append` does.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, PartitionLog, ReplicaOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_segment::Compression;
use mirrorlog_segment::batch::Batches;
use std::path::PathBuf;

/// The fixture's last offset + 1.
const LEGACY_END: i64 = 17;

fn fixture() -> Bytes {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kafka-java-legacy/00000000000000000000.log");
    Bytes::from(std::fs::read(path).unwrap())
}

/// `(position, size, last offset)` of each entry, from the fixture's `expected.txt`.
fn fixture_entries() -> Vec<(usize, usize, i64)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kafka-java-legacy/expected.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("batch "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let size: usize = f[1].parse().unwrap();
            (f[0].parse().unwrap(), 12 + size, f[4].parse().unwrap())
        })
        .collect()
}

/// A log whose segments are at most 150 bytes, so that the fixture's entries roll.
fn replica(dir: &std::path::Path, read_only: bool) -> PartitionLog {
    let mut c: LogConfig = small_config();
    c.segment.segment_bytes_max = 150;
    c.segment.index_interval_bytes = 0;
    c.read_only = read_only;
    open(dir, c, clock(), Shutdown::Clean)
}

/// Every byte of the log from `from`, segment after segment.
fn all_bytes(log: &PartitionLog, from: Offset) -> Vec<u8> {
    let mut out = vec![];
    let mut at = from;
    while at < log.log_end_offset() {
        let info = log.read(at, 1 << 20, FetchIsolation::LogEnd, true).unwrap();
        let bytes = info.records.unwrap().slice.read_all().unwrap();
        for b in Batches::new(bytes.clone()).legacy(true) {
            at = b.unwrap().next_offset();
        }
        out.extend_from_slice(&bytes);
    }
    out
}

#[test]
fn a_follower_and_a_mirror_copy_legacy_entries_byte_for_byte_then_v2_after_them() {
    let legacy = fixture();
    let v2 = replica_batch(LEGACY_END, 3, 4, Compression::Lz4, T0);
    for (origin, read_only) in [
        (ReplicaOrigin::Replication, false),
        (ReplicaOrigin::Mirror, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = replica(dir.path(), read_only);
        let info = log.append_as_follower(legacy.clone(), origin).unwrap();
        assert_eq!(info.batch_count, 10, "{origin:?}");
        assert_eq!(info.last_offset, Offset(LEGACY_END - 1));
        assert_eq!(log.log_end_offset(), Offset(LEGACY_END));
        assert_eq!(log.producer_state().producers().count(), 0);
        assert!(log.epoch_cache().is_empty());
        // Rolled at the log end, as Kafka's `maybeRoll` without a first offset: a compressed
        // wrapper's segment starts at its first inner offset (3, 6, 10, 13, 15), not its last.
        assert_eq!(
            log.segment_base_offsets(),
            [0, 3, 6, 9, 10, 13, 15].map(Offset).to_vec()
        );
        assert_eq!(all_bytes(&log, Offset(0)), legacy[..]);
        // Indexed as recovery indexes them: a read inside any entry starts at that entry.
        for (position, _, last) in fixture_entries() {
            let got = log
                .read(Offset(last), 1 << 20, FetchIsolation::LogEnd, true)
                .unwrap()
                .records
                .unwrap()
                .slice
                .read_all()
                .unwrap();
            assert_eq!(got[..], legacy[position..position + got.len()], "{last}");
        }

        // v2 after them, its epoch recorded.
        log.append_as_follower(v2.clone(), origin).unwrap();
        assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 3));
        assert_eq!(
            log.epoch_cache().epoch_for_offset(Offset(LEGACY_END)),
            Some(LeaderEpoch(4))
        );
        let all = [&legacy[..], &v2[..]].concat();
        assert_eq!(all_bytes(&log, Offset(0)), all);
        log.flush().unwrap();
        drop(log);

        // Reopened after a crash: recovery finds exactly what was appended.
        let (log, report) = reopen_unclean(dir.path(), clock(), Default::default());
        assert_eq!(report.problems, Vec::<String>::new());
        assert_eq!(report.bytes_truncated, 0);
        assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 3));
        assert_eq!(all_bytes(&log, Offset(0)), all);
    }
}

#[test]
fn a_partial_legacy_entry_at_the_end_is_left_and_a_corrupt_one_refused() {
    let legacy = fixture();
    let entries = fixture_entries();
    let dir = tempfile::tempdir().unwrap();
    let mut log = replica(dir.path(), true);
    // Cut inside the v1 gzip wrapper (offsets 10..=12, position 396): what came before is taken.
    let cut = legacy.slice(..400);
    let info = log.append_as_follower(cut, ReplicaOrigin::Mirror).unwrap();
    assert_eq!(info.last_offset, Offset(9));
    assert_eq!(log.log_end_offset(), Offset(10));

    // One bit flipped in the wrapper's compressed value: its CRC-32 fails, nothing is written.
    let (position, size, _) = entries[7];
    let mut bad = legacy[position..].to_vec();
    bad[size - 1] ^= 1;
    assert!(
        log.append_as_follower(Bytes::from(bad), ReplicaOrigin::Mirror)
            .is_err()
    );
    assert_eq!(log.log_end_offset(), Offset(10));
    log.append_as_follower(legacy.slice(position..), ReplicaOrigin::Mirror)
        .unwrap();
    assert_eq!(all_bytes(&log, Offset(0)), legacy[..]);
}

#[test]
fn a_legacy_entry_after_v2_batches_clears_the_epoch_cache() {
    let legacy = fixture();
    let dir = tempfile::tempdir().unwrap();
    let mut log = replica(dir.path(), false);
    log.append_as_follower(
        replica_batch(0, 3, 2, Compression::None, T0),
        ReplicaOrigin::Replication,
    )
    .unwrap();
    assert!(!log.epoch_cache().is_empty());
    // The fixture's uncompressed v1 entry (offset 8), moved to offset 3: the offset is outside
    // what its CRC-32 covers.
    let mut entry = legacy[309..353].to_vec();
    entry[..8].copy_from_slice(&3i64.to_be_bytes());
    log.append_as_follower(Bytes::from(entry), ReplicaOrigin::Replication)
        .unwrap();
    assert_eq!(log.log_end_offset(), Offset(4));
    assert!(log.epoch_cache().is_empty(), "cleared, as Kafka's append");
    drop(log);
    let log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    assert!(
        log.epoch_cache().is_empty(),
        "and its checkpoint written empty"
    );
}
