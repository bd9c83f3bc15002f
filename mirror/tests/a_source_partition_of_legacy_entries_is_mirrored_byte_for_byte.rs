//! Scenario: a source partition that starts with legacy entries (magic 0 and 1: a Kafka 4 source
//! whose topic still holds data from before message format v2, here the entries Kafka's own
//! client library wrote in `tests/fixtures/kafka-java-legacy/`), then v2 batches. The mirror
//! used to call the first of them a corrupt batch and put the partition FAILED; it copies them
//! now byte for byte at their offsets, as any batch, also when a fetch answer's byte limit cuts
//! one in two (the partial entry at the end is fetched again).

use crate::common;

use bytes::Bytes;
use common::{T0, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::ReplicaOrigin;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{Offset, TopicId};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use std::path::PathBuf;
use std::sync::Arc;

/// The fixture's last offset + 1.
const LEGACY_END: i64 = 17;
/// Where the fixture's v1 entries (offsets 8..=16, relative inner offsets) start.
const V1_AT: usize = 309;

fn fixture() -> Bytes {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kafka-java-legacy/00000000000000000000.log");
    Bytes::from(std::fs::read(path).unwrap())
}

/// The fixture's v1 entries again, `shift` offsets later: an entry's offset sits outside its
/// CRC-32, and a v1 wrapper's inner offsets are relative to it.
fn shifted_v1(legacy: &[u8], shift: i64) -> Bytes {
    let mut out = legacy[V1_AT..].to_vec();
    let mut at = 0;
    while at < out.len() {
        let offset = i64::from_be_bytes(out[at..at + 8].try_into().unwrap());
        out[at..at + 8].copy_from_slice(&(offset + shift).to_be_bytes());
        let size = i32::from_be_bytes(out[at + 8..at + 12].try_into().unwrap());
        at += 12 + size as usize;
    }
    Bytes::from(out)
}

/// A source whose `orders-0` holds the fixture, its v1 entries four times more, then v2.
fn source(dir: &std::path::Path) -> (Arc<LogManager>, Offset) {
    let src = common::manager(dir);
    src.create(&tp(0), TopicId([1; 16]), Default::default())
        .unwrap();
    let legacy = fixture();
    {
        let h = src.get(&tp(0)).unwrap();
        let mut log = h.write();
        log.append_as_follower(legacy.clone(), ReplicaOrigin::Replication)
            .unwrap();
        for k in 1..=4 {
            log.append_as_follower(shifted_v1(&legacy, 9 * k), ReplicaOrigin::Replication)
                .unwrap();
        }
        assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 4 * 9));
    }
    common::produce_to(&src, &tp(0), b"v2", 5);
    let leo = src.get(&tp(0)).unwrap().read().log_end_offset();
    (src, leo)
}

#[test]
fn a_source_partition_of_legacy_entries_is_mirrored_byte_for_byte() {
    // The default fetch size takes the partition in one answer; 1 KiB cuts entries in two.
    for partition_fetch_max_bytes in [1 << 20, 1024] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (src, leo) = source(a.path());
        let dst = common::manager(b.path());
        let mut config = MirrorConfig::new("m");
        config.partition_fetch_max_bytes = partition_fetch_max_bytes;
        config.response_max_bytes = partition_fetch_max_bytes;
        let mirror = MirrorManager::new(
            config,
            EngineSource::new(src.clone(), "source-cluster", 1),
            dst.clone(),
            Arc::new(common::Dest(dst.clone())),
            Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
            ManualClock::new(T0),
        )
        .unwrap();
        mirror.start_topics(&["orders".to_string()]).unwrap();
        common::catch_up(&mirror);

        let status = mirror.describe().into_iter().next().unwrap();
        assert_eq!(status.state, S::Mirroring, "{status:?}");
        let (s, d) = (src.get(&tp(0)).unwrap(), dst.get(&tp(0)).unwrap());
        assert_eq!(d.read().log_end_offset(), leo);
        assert_eq!(common::log_bytes(&d), common::log_bytes(&s));
        assert_eq!(
            d.read().epoch_cache().entries(),
            s.read().epoch_cache().entries()
        );
    }
}
