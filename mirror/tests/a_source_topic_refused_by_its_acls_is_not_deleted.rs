//! A source topic its metadata answers with an error other than UNKNOWN_TOPIC_OR_PARTITION (and
//! so without partitions) — TOPIC_AUTHORIZATION_FAILED after an ACL change on the source, or
//! LEADER_NOT_AVAILABLE still after the client's retries — is not a deleted topic: the mirror
//! counted it as missing and failed its partitions for good, "deleted", at the second sync.

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

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

/// An engine source whose metadata answers every topic with `error` (no partitions) when set.
#[derive(Debug)]
struct Refusing(Arc<EngineSource>, Mutex<Option<i16>>);

impl SourceCluster for Refusing {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        let mut m = self.0.metadata(topics)?;
        if let Some(error) = *self.1.lock() {
            for t in &mut m.topics {
                t.error = error;
                t.partitions.clear();
            }
        }
        Ok(m)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        self.0.fetch(node, request)
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        self.0.list_offset(topic, partition, spec)
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.0.end_offset_for_epoch(topic, partition, epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.0.topic_configs(topic)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.0.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.0.committed_offsets(group_id)
    }
}

#[test]
fn only_an_unknown_topic_counts_as_missing() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    src.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&src, &orders(0), b"v", 3);
    let source = Arc::new(Refusing(
        EngineSource::new(src.clone(), "source-cluster", 1),
        Mutex::new(None),
    ));
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    let state = || mirror.describe().remove(0).state;
    assert_eq!(state(), S::Mirroring);

    for error in [TOPIC_AUTHORIZATION_FAILED, LEADER_NOT_AVAILABLE] {
        *source.1.lock() = Some(error);
        for _ in 0..3 {
            mirror.sync().unwrap();
        }
        assert_eq!(state(), S::Mirroring, "{:?}", mirror.describe()[0].failure);
    }
    // Deleted for real: failed at the second sync.
    *source.1.lock() = Some(UNKNOWN_TOPIC_OR_PARTITION);
    mirror.sync().unwrap();
    assert_eq!(state(), S::Mirroring);
    mirror.sync().unwrap();
    assert_eq!(state(), S::Failed);
}
