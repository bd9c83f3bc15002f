//! Bug: the topic registry was rebuilt at start from the partitions whose logs loaded, so a
//! topic whose last partition is in a data directory offline since start had one partition
//! fewer: Metadata listed the topic without it (producers hashed keys over the smaller count,
//! sending to partition 0 the records of partition 1's keys) and CreatePartitions to the real
//! count tried to create the partition again (refused by the engine: KAFKA_STORAGE_ERROR);
//! DeleteTopics deleted the loaded partitions and left the offline one, which brought the topic
//! back, half deleted, once its directory was repaired.
//! Kafka's metadata keeps the partition, answered offline (leader −1, `LEADER_NOT_AVAILABLE`,
//! this node in `offline_replicas`), and the count is the topic's.

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn open(dirs: &[&Path], sim: &SimStorage) -> Broker {
    let mut config = BrokerConfig::new(dirs[0], "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.logs.recovery_threads = 1;
    Broker::open(
        config,
        Arc::new(sim.clone()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap()
}

/// (partition, error, leader, offline replicas) of `t` as Metadata answers them.
fn partitions(b: &Broker) -> Vec<(i32, i16, i32, Vec<i32>)> {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(s("t")));
    let mut r = MetadataRequest::default();
    r.allow_auto_topic_creation = false;
    r.topics = Some(vec![t]);
    let resp = admin::metadata(b, r, 12);
    assert_eq!(resp.topics[0].error_code, 0);
    resp.topics[0]
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.error_code,
                p.leader_id.0,
                p.offline_replicas.iter().map(|n| n.0).collect(),
            )
        })
        .collect()
}

fn grow(b: &Broker, count: i32) -> (i16, Option<String>) {
    let mut g = CreatePartitionsTopic::default();
    g.name = TopicName(s("t"));
    g.count = count;
    g.assignments = None;
    let mut r = CreatePartitionsRequest::default();
    r.topics = vec![g];
    let got = admin::create_partitions(b, r, 3);
    let got = &got.results[0];
    (
        got.error_code,
        got.error_message.as_ref().map(|m| m.to_string()),
    )
}

#[test]
fn metadata_and_create_partitions_count_the_offline_partition() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    open(&[d1.path()], &sim).shutdown().unwrap();
    let b = open(&[d1.path(), d2.path()], &sim);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let dir1 = b.partition("t", 1).unwrap().data_dir().to_path_buf();
    assert_ne!(
        b.partition("t", 0).unwrap().data_dir(),
        dir1,
        "one partition per dir"
    );
    b.shutdown().unwrap();
    let bad = dir1.join("t-1");
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let b = open(&[d1.path(), d2.path()], &sim);
    assert!(
        b.partition("t", 1).is_none(),
        "partition 1's directory failed at load"
    );
    assert!(b.partition("t", 0).is_some());

    let node = b.config.node_id;
    assert_eq!(
        partitions(&b),
        vec![
            (0, 0, node, vec![]),
            (1, E::LeaderNotAvailable.code(), -1, vec![node])
        ]
    );
    assert_eq!(
        grow(&b, 2),
        (
            E::InvalidPartitions.code(),
            Some("Topic already has 2 partition(s).".to_string())
        )
    );
    assert_eq!(grow(&b, 3), (0, None));
    assert!(b.partition("t", 2).is_some());
    assert_eq!(partitions(&b).len(), 3);
    // Deleting it is refused whole while a partition is offline (its files could not go, and
    // would bring the topic back half deleted at the next start).
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![TopicName(s("t"))];
    let got = admin::delete_topics(&b, r, 5);
    assert_eq!(got.responses[0].error_code, E::KafkaStorageError.code());
    assert!(b.partition("t", 0).is_some() && b.topics.get("t").is_some());
    b.shutdown().unwrap();
}
