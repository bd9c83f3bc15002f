//! Bug: a produce, fetch or ListOffsets of a partition whose data directory went offline before its log was loaded
//! was answered UNKNOWN_TOPIC_OR_PARTITION (the partition was simply absent); Kafka answers
//! KAFKA_STORAGE_ERROR for a replica in an offline log dir.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{admin, fetch, offsets, produce};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;

fn open(dirs: &[&Path], sim: &SimStorage) -> Broker {
    let mut config = BrokerConfig::new(dirs[0], "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.logs.recovery_threads = 1;
    Broker::open(config, Arc::new(sim.clone()), ManualClock::new(NOW_MS)).unwrap()
}

fn produce_code(b: &Broker, topic: &str, partition: i32) -> i16 {
    let mut batch = BatchBuilder::new();
    batch.append(TimestampMs(NOW_MS), None, Some(b"v"), &[]);
    let mut pd = PartitionProduceData::default();
    pd.index = partition;
    pd.records = Some(batch.build().into_bytes());
    let mut t = TopicProduceData::default();
    t.name = TopicName(StrBytes::from_string(topic.into()));
    t.partition_data = vec![pd];
    let mut r = ProduceRequest::default();
    r.acks = 1;
    r.timeout_ms = 30_000;
    r.topic_data = vec![t];
    let resp = produce::handle(b, r, 9).unwrap();
    resp.responses[0].partition_responses[0].error_code
}

/// A sessionless, non-waiting fetch (v12, by topic name) of one partition: its error.
fn fetch_code(b: &Broker, topic: &str, partition: i32) -> i16 {
    let mut fp = FetchPartition::default();
    fp.partition = partition;
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.into()));
    t.partitions = vec![fp];
    let mut r = FetchRequest::default();
    r.max_wait_ms = 0;
    r.min_bytes = 1;
    r.max_bytes = 50 << 20;
    r.session_epoch = -1;
    r.topics = vec![t];
    fetch::handle(b, r, 12).responses[0].partitions[0].error_code
}

/// ListOffsets (v8, latest) of one partition: its error.
fn list_offsets_code(b: &Broker, topic: &str, partition: i32) -> i16 {
    let mut lp = ListOffsetsPartition::default();
    lp.partition_index = partition;
    lp.timestamp = -1;
    lp.current_leader_epoch = -1;
    let mut lt = ListOffsetsTopic::default();
    lt.name = TopicName(StrBytes::from_string(topic.into()));
    lt.partitions = vec![lp];
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![lt];
    offsets::list_offsets(b, r, 8).topics[0].partitions[0].error_code
}

#[test]
fn a_produce_to_a_partition_of_an_offline_dir_is_a_storage_error() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    // The internal topics go to d1 alone, so that d2 failing leaves the coordinators whole.
    open(&[d1.path()], &sim).shutdown().unwrap();
    let b = open(&[d1.path(), d2.path()], &sim);
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    t.num_partitions = 4;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let p = (0..4)
        .find(|&p| b.partition("t", p).unwrap().data_dir() == d2.path())
        .expect("a partition of t in d2");
    assert_eq!(produce_code(&b, "t", p), 0);
    b.shutdown().unwrap();

    let bad = d2.path().join(format!("t-{p}"));
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let b = open(&[d1.path(), d2.path()], &sim);
    assert!(b.partition("t", p).is_none(), "its load failed");
    assert_eq!(
        produce_code(&b, "t", p),
        ResponseError::KafkaStorageError.code()
    );
    assert_eq!(
        fetch_code(&b, "t", p),
        ResponseError::KafkaStorageError.code()
    );
    assert_eq!(
        list_offsets_code(&b, "t", p),
        ResponseError::KafkaStorageError.code()
    );
    // Deleting the topic is refused whole: the offline partition's files could not go, and the
    // topic would come back, half deleted, at the next start.
    let e = b.topics.delete(&b.logs, "t").unwrap_err();
    assert_eq!(e.code, ResponseError::KafkaStorageError.code(), "{e:?}");
    assert!(b.topics.get("t").is_some());
    assert!(
        (0..4)
            .filter(|&q| q != p)
            .all(|q| b.partition("t", q).is_some())
    );
    b.shutdown().unwrap();
}
