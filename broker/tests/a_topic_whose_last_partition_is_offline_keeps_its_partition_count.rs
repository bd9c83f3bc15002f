//! Bug: the topic registry was rebuilt at start from the partitions whose logs loaded, so a
//! topic whose last partition is in a data directory offline since start had one partition
//! fewer: Metadata listed the topic without it (producers hashed keys over the smaller count,
//! sending to partition 0 the records of partition 1's keys) and CreatePartitions to the real
//! count tried to create the partition again (refused by the engine: KAFKA_STORAGE_ERROR);
//! DeleteTopics deleted the loaded partitions and left the offline one, which brought the topic
//! back, half deleted, once its directory was repaired.
//! Kafka's metadata keeps the partition, answered offline (leader −1, `LEADER_NOT_AVAILABLE`,
//! this node in `offline_replicas`), and the count is the topic's.

use crate::common;

use common::offline_partition::{s, topic_t_with_partition_offline};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin;

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
    r.timeout_ms = 30_000;
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
    let setup = topic_t_with_partition_offline(1, &[]);
    let b = &setup.broker;

    let node = b.config.node_id;
    assert_eq!(
        partitions(b),
        vec![
            (0, 0, node, vec![]),
            (1, E::LeaderNotAvailable.code(), -1, vec![node])
        ]
    );
    assert_eq!(
        grow(b, 2),
        (
            E::InvalidPartitions.code(),
            Some("Topic already has 2 partition(s).".to_string())
        )
    );
    assert_eq!(grow(b, 3), (0, None));
    assert!(b.partition("t", 2).is_some());
    assert_eq!(partitions(b).len(), 3);
    // Deleting it is refused whole while a partition is offline (its files could not go, and
    // would bring the topic back half deleted at the next start).
    let mut r = DeleteTopicsRequest::default();
    r.topic_names = vec![TopicName(s("t"))];
    let got = admin::delete_topics(b, r, 5);
    assert_eq!(got.responses[0].error_code, E::KafkaStorageError.code());
    assert!(b.partition("t", 0).is_some() && b.topics.get("t").is_some());
    setup.broker.shutdown().unwrap();
}
