//! A Kafka source cluster serving a compacted topic, in process, and a destination broker
//! mirroring it: the source is an engine log behind
//! [`EngineSource`](mirrorlog_mirror::engine_source::EngineSource), its topic configs
//! rewritten as a Kafka broker with a log cleaner describes them (`cleanup.policy=compact`,
//! which mirrorlog's own engine refuses); the destination is a broker on a manual clock whose
//! topics the mirror writes through [`BrokerTopics`]. And a compacted log's batches as Kafka's
//! cleaner leaves them, to fill such a source with.

use bytes::Bytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::mirrors::{BrokerTopics, MIRROR_STATE_PARTITIONS};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::ReplicaOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::{
    CommittedOffset, FetchRequest, FetchResponse, GroupListing, OffsetSpec, SourceCluster,
    SourceError, SourceMetadata,
};
use mirrorlog_mirror::state::MirrorStateStore;
use mirrorlog_segment::batch::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, compute_crc, field};
use mirrorlog_segment::{BatchBuilder, Batches};
use std::sync::Arc;

/// Both clocks' time (2023-11-14).
pub const NOW_MS: i64 = 1_700_000_000_000;
/// Sixty days, in ms: older than the destination's default 7-day `retention.ms`.
pub const SIXTY_DAYS_MS: i64 = 60 * 86_400_000;
/// The mirrored topic.
pub const TOPIC: &str = "changelog";

/// An engine source whose topic configs are `configs` over the engine's own.
#[derive(Debug)]
pub struct CompactedSource {
    pub inner: Arc<EngineSource>,
    pub configs: Vec<(String, String)>,
}

impl SourceCluster for CompactedSource {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.inner.metadata(topics)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        self.inner.fetch(node, request)
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
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.inner
            .end_offset_for_epoch(topic, partition, epoch, current_leader_epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        let mut configs = self.inner.topic_configs(topic)?;
        configs.retain(|(k, _)| !self.configs.iter().any(|(c, _)| c == k));
        configs.extend(self.configs.iter().cloned());
        Ok(configs)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.inner.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.inner.committed_offsets(group_id)
    }
}

/// A source holding [`TOPIC`] (one partition, filled by `fill`) described with topic configs
/// `configs`, and a destination broker with mirror `m` of it, started and caught up.
pub struct World {
    pub dirs: (tempfile::TempDir, tempfile::TempDir),
    pub src: Arc<LogManager>,
    pub dst: Arc<Broker>,
    pub mirror: Arc<MirrorManager>,
}

impl World {
    /// The source's partition.
    pub fn source(&self) -> Arc<PartitionHandle> {
        self.src.get(&tp()).unwrap()
    }
    /// The destination's partition.
    pub fn destination(&self) -> Arc<PartitionHandle> {
        self.dst.partition(TOPIC, 0).unwrap()
    }
}

/// Partition 0 of [`TOPIC`].
pub fn tp() -> TopicPartition {
    TopicPartition {
        topic: TOPIC.into(),
        partition: 0,
    }
}

/// The source's logs on `dir`, at [`NOW_MS`].
pub fn source_logs(dir: &std::path::Path) -> Arc<LogManager> {
    let (src, _) = LogManager::open(
        LogManagerConfig::new(dir),
        Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        ManualClock::new(NOW_MS),
    )
    .unwrap();
    Arc::new(src)
}

/// See [`World`].
pub fn world(configs: &[(&str, &str)], fill: impl FnOnce(&PartitionHandle)) -> World {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = source_logs(dirs.0.path());
    src.create(&tp(), TopicId([7; 16]), LogConfig::default())
        .unwrap();
    fill(&src.get(&tp()).unwrap());
    let dst = Arc::new(super::plain_broker(dirs.1.path(), NOW_MS));
    let source = CompactedSource {
        inner: EngineSource::new(src.clone(), "source-cluster", 1),
        configs: (configs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let store =
        Arc::new(MirrorStateStore::open(dst.logs.clone(), MIRROR_STATE_PARTITIONS).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        Arc::new(source),
        dst.logs.clone(),
        Arc::new(BrokerTopics::new(&dst)),
        store,
        ManualClock::new(NOW_MS),
    )
    .unwrap();
    mirror.start_topics(&[TOPIC.to_string()]).unwrap();
    catch_up(&mirror);
    World {
        dirs,
        src,
        dst,
        mirror,
    }
}

/// Drives `mirror` until three fetch rounds in a row append nothing.
pub fn catch_up(mirror: &MirrorManager) {
    let mut idle = 0;
    for _ in 0..200 {
        mirror.drive();
        if mirror.fetch_round(0) == 0 {
            idle += 1;
            if idle == 3 {
                return;
            }
        } else {
            idle = 0;
        }
    }
    panic!("no convergence");
}

/// Every byte of a partition's log from its log start to its end.
pub fn log_bytes(h: &PartitionHandle) -> bytes::Bytes {
    let log = h.read();
    log.read(
        log.log_start_offset(),
        i32::MAX as u32,
        mirrorlog_engine::log::FetchIsolation::LogEnd,
        true,
    )
    .unwrap()
    .records
    .map(|r| r.slice.read_all().unwrap())
    .unwrap_or_default()
}

/// The destination's DescribeConfigs value of `key` for [`TOPIC`].
pub fn described(b: &Broker, key: &str) -> Option<String> {
    use kafka_protocol::messages::DescribeConfigsRequest;
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::protocol::StrBytes;
    use mirrorlog_broker::handlers::admin;
    let s = |v: &str| StrBytes::from_string(v.to_string());
    let mut res = DescribeConfigsResource::default();
    res.resource_type = admin::RESOURCE_TOPIC;
    res.resource_name = s(TOPIC);
    res.configuration_keys = Some(vec![s(key)]);
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    let got = admin::describe_configs(b, r, 4);
    let got = &got.results[0];
    assert_eq!(got.error_code, 0, "{:?}", got.error_message);
    got.configs[0].value.as_ref().map(|v| v.to_string())
}

pub const PRODUCER: ProducerId = ProducerId(4242);
pub const TXN_PRODUCER: ProducerId = ProducerId(5151);

fn builder(base: i64) -> BatchBuilder {
    BatchBuilder::new()
        .base_offset(Offset(base))
        .partition_leader_epoch(LeaderEpoch(0))
}

/// A batch of records at `offsets` (the first is the base), keyed by their offset.
pub fn records_at(offsets: &[i64]) -> Bytes {
    let mut b = builder(offsets[0]);
    for &o in offsets {
        b.append_at(
            Offset(o),
            TimestampMs(NOW_MS + o),
            Some(format!("k{o}").as_bytes()),
            Some(b"v"),
            &[],
        );
    }
    b.build().into_bytes()
}

/// `batch` as the cleaner keeps it once all its records are removed: its header alone.
pub fn emptied(batch: Bytes) -> Bytes {
    let mut empty = batch[..RECORD_BATCH_OVERHEAD].to_vec();
    let length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
    empty[field::BATCH_LENGTH..][..4].copy_from_slice(&length.to_be_bytes());
    empty[field::BASE_TIMESTAMP..][..8].copy_from_slice(&(-1i64).to_be_bytes());
    empty[field::RECORDS_COUNT..][..4].copy_from_slice(&0i32.to_be_bytes());
    let crc = compute_crc(&empty);
    empty[field::CRC..][..4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(empty)
}

/// Producer `pid`'s batch of `n` records from offset `base` (sequences from 0), emptied.
pub fn emptied_batch(pid: ProducerId, base: i64, n: i64, transactional: bool) -> Bytes {
    let mut b = builder(base)
        .producer(pid, ProducerEpoch(0), Sequence(0))
        .transactional(transactional);
    for i in 0..n {
        b.append(
            TimestampMs(NOW_MS + base + i),
            Some(b"gone"),
            Some(b"v"),
            &[],
        );
    }
    emptied(b.build().into_bytes())
}

/// Producer `pid`'s COMMIT marker at `offset`.
pub fn commit_at(pid: ProducerId, offset: i64) -> Bytes {
    BatchBuilder::end_txn_marker(pid, ProducerEpoch(0), true, 0, TimestampMs(NOW_MS + offset))
        .base_offset(Offset(offset))
        .partition_leader_epoch(LeaderEpoch(0))
        .build()
        .into_bytes()
}

/// The source's log, appended as a Kafka follower of a compacted leader would take it:
/// nothing at the log start (0, 1 removed), a batch at 2 with a hole (2, 4), a gap, a batch at 10 with a hole (10, 13), [`PRODUCER`]'s emptied batch
/// 20..=24, [`TXN_PRODUCER`]'s emptied transactional batch at 25 and its COMMIT marker at 26
/// (the transaction's records removed, the marker not yet), a gap, 30..=31.
pub fn compacted_log(h: &PartitionHandle) {
    let mut log = h.write();
    for batch in [
        records_at(&[2, 4]),
        records_at(&[10, 13]),
        emptied_batch(PRODUCER, 20, 5, false),
        emptied_batch(TXN_PRODUCER, 25, 1, true),
        commit_at(TXN_PRODUCER, 26),
        records_at(&[30, 31]),
    ] {
        log.append_as_follower(batch, ReplicaOrigin::Replication)
            .unwrap();
    }
    let leo = log.log_end_offset();
    assert_eq!(leo, Offset(32));
    log.update_high_watermark(leo);
}

/// A consumer of partition 0 of `topic` on `b` from offset 0 to its high watermark, through the
/// broker's Fetch at `isolation_level`: the offsets of the data records it reads.
pub fn consume(b: &Broker, topic: &str, isolation_level: i8) -> Vec<i64> {
    let hw = b.partition(topic, 0).unwrap().read().high_watermark().get();
    let (mut offset, mut read) = (0, vec![]);
    while offset < hw {
        let mut r = super::fetch_session::session_fetch(0, -1, &[(topic, 0, offset)]);
        r.isolation_level = isolation_level;
        let resp = super::fetch_session::fetch_at(b, r, 12);
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "at {offset}");
        assert_eq!(p.high_watermark, hw);
        let records = p.records.clone().unwrap_or_default();
        let batches: Vec<_> = Batches::new(records).map(|b| b.unwrap()).collect();
        assert!(!batches.is_empty(), "nothing served at {offset}");
        for b in batches {
            for r in b.records().unwrap().filter(|_| !b.is_control()) {
                read.push(r.unwrap().offset.get());
            }
            // As Kafka's consumer: on past the batch, whatever it held.
            offset = b.next_offset().get();
        }
    }
    read
}

/// `b`'s ListOffsets (v7) answer for `timestamp` on partition 0 of `topic`: the offset.
pub fn list_offset(b: &Broker, topic: &str, timestamp: i64) -> i64 {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
    let mut p = ListOffsetsPartition::default();
    p.timestamp = timestamp;
    p.current_leader_epoch = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = TopicName(kafka_protocol::protocol::StrBytes::from_string(
        topic.into(),
    ));
    t.partitions = vec![p];
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![t];
    let resp = mirrorlog_broker::handlers::offsets::list_offsets(b, r, 7);
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}
