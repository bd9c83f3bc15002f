//! A source leader answering a partition's fetch with a retriable error at once (here
//! KAFKA_STORAGE_ERROR, its log directory offline) was asked again at every fetch round — some
//! 50 times a second, for as long as the error lasted. Kafka's fetchers pause such a partition
//! (`replica.fetch.backoff.ms`, 1 s); so does the mirror now, on its own clock, which the test
//! moves by hand.

mod common;

use common::{Dest, T0, manager, orders, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::*;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use parking_lot::Mutex;
use std::sync::Arc;

const KAFKA_STORAGE_ERROR: i16 = 56;

/// An engine source that answers every partition with KAFKA_STORAGE_ERROR while `failing`, and
/// counts fetches.
#[derive(Debug)]
struct Failing {
    inner: Arc<EngineSource>,
    failing: Mutex<bool>,
    fetches: Mutex<usize>,
}

impl SourceCluster for Failing {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.inner.metadata(topics)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        *self.fetches.lock() += 1;
        let mut r = self.inner.fetch(node, request)?;
        if *self.failing.lock() {
            for p in &mut r.partitions {
                p.error = KAFKA_STORAGE_ERROR;
                p.records = Default::default();
            }
        }
        Ok(r)
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        self.inner.list_offset(topic, partition, spec)
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.inner.end_offset_for_epoch(topic, partition, epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.inner.topic_configs(topic)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.inner.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.inner.committed_offsets(group_id)
    }
}

#[test]
fn a_storage_error_pauses_the_partition_for_a_second() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    src.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&src, &orders(0), b"v", 3);
    let source = Arc::new(Failing {
        inner: EngineSource::new(src.clone(), "source-cluster", 1),
        failing: Mutex::new(true),
        fetches: Mutex::new(0),
    });
    let clock = ManualClock::new(T0);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        clock.clone(),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();

    for _ in 0..3 {
        mirror.fetch_round(0);
    }
    assert_eq!(*source.fetches.lock(), 1, "asked once within the pause");
    clock.advance(999);
    mirror.fetch_round(0);
    assert_eq!(*source.fetches.lock(), 1);
    clock.advance(1);
    mirror.fetch_round(0);
    assert_eq!(*source.fetches.lock(), 2, "asked again after it");

    // Still MIRRORING, and it copies once the source is well again.
    *source.failing.lock() = false;
    clock.advance(1_000);
    mirror.fetch_round(0);
    let s = mirror.describe().remove(0);
    assert_eq!((s.state, s.log_end_offset), (S::Mirroring, Offset(3)));
}
