//! A source whose nodes do not speak the mirror RPCs (a plain Kafka cluster, a node not upgraded
//! yet) answers the last-mirror-epoch lookup `Unsupported`. LOG_ALIGNMENT then copies a partition
//! that holds nothing from scratch, as a first start must, but fails one that holds records
//! rather than drop them on an answer that says nothing about whether the source mirrored us.

mod common;

use common::{Dest, T0, manager, orders, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::*;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use std::sync::Arc;

/// An engine source whose last-mirror-epoch lookup is not offered.
#[derive(Debug)]
struct WithoutLookup(Arc<EngineSource>);

impl SourceCluster for WithoutLookup {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.0.metadata(topics)
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
    fn last_mirror_epoch(
        &self,
        _: &str,
        _: [u8; 16],
        _: i32,
    ) -> Result<Option<(LeaderEpoch, Offset)>, SourceError> {
        Err(SourceError::Unsupported(
            "DescribeClusterMirrors (the source node at test:9092 does not offer it)".into(),
        ))
    }
}

#[test]
fn an_empty_partition_is_copied_from_scratch_and_a_partition_with_records_fails_untouched() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(a.path()), manager(b.path()));
    src.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&src, &orders(0), b"v", 3);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let mut config = MirrorConfig::new("m");
    config.local_cluster_id = Some("destination-cluster".into());
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        config,
        Arc::new(WithoutLookup(source)),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    let status = || mirror.describe().remove(0);

    // A first start: nothing here to lose.
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    assert_eq!(status().state, S::Mirroring, "{:?}", status().failure);
    mirror.fetch_round(0);
    assert_eq!(status().log_end_offset, Offset(3));

    // A failback onto the records: the log stays as it is and the reason names the lookup.
    mirror.stop_topic("orders").unwrap();
    let end = dst.get(&orders(0)).unwrap().read().log_end_offset();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    let s = status();
    assert_eq!(s.state, S::Failed);
    let reason = s.failure.unwrap();
    assert!(
        reason.contains("last-mirror-epoch lookup") && reason.contains("DescribeClusterMirrors"),
        "{reason}"
    );
    let log = dst.get(&orders(0)).unwrap();
    assert_eq!(
        (log.read().log_start_offset(), log.read().log_end_offset()),
        (Offset(0), end)
    );
}
