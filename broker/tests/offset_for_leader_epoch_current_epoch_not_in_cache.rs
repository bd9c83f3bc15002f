//! OffsetForLeaderEpoch for the partition's *current* leader epoch when that epoch is not (yet)
//! in the epoch cache: a fresh partition (Metadata and ListOffsets advertise epoch 0, the cache is
//! empty) and a partition whose leader epoch was raised above its cache (a mirror's epoch bump).
//!
//! Kafka's leader always holds its current epoch in the cache (`Partition.makeLeader` assigns
//! `(leaderEpoch, LEO)`), so `endOffsetFor(currentEpoch)` is `(currentEpoch, LEO)`. A consumer
//! validating a position carrying the epoch ListOffsets handed it must not be told the epoch is
//! unknown (`(-1, -1)`), which Kafka clients treat as log truncation.

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{admin, offsets};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;

fn open(dir: &std::path::Path) -> Broker {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW_MS),
    )
    .expect("open broker")
}

fn tn(v: &str) -> TopicName {
    TopicName(StrBytes::from_string(v.to_string()))
}

fn create(b: &Broker, name: &str) {
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = tn(name);
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    r.timeout_ms = 1000;
    let resp = admin::create_topics(b, r, 7);
    assert_eq!(resp.topics[0].error_code, 0);
}

/// (error, leader epoch) of ListOffsets LATEST.
fn latest_epoch(b: &Broker, topic: &str) -> (i16, i64, i32) {
    let mut p = ListOffsetsPartition::default();
    p.partition_index = 0;
    p.timestamp = -1;
    p.current_leader_epoch = -1;
    let mut t = ListOffsetsTopic::default();
    t.name = tn(topic);
    t.partitions = vec![p];
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![t];
    let resp = offsets::list_offsets(b, r, 8);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.offset, p.leader_epoch)
}

/// (error, leader epoch, end offset) of OffsetForLeaderEpoch.
fn end_offset(b: &Broker, topic: &str, leader_epoch: i32, current: i32) -> (i16, i32, i64) {
    let mut p = OffsetForLeaderPartition::default();
    p.partition = 0;
    p.leader_epoch = leader_epoch;
    p.current_leader_epoch = current;
    let mut t = OffsetForLeaderTopic::default();
    t.topic = tn(topic);
    t.partitions = vec![p];
    let mut r = OffsetForLeaderEpochRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![t];
    let resp = offsets::offset_for_leader_epoch(b, r, 4);
    let p = &resp.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

#[test]
fn a_fresh_partition_answers_its_advertised_epoch_with_the_log_end() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "fresh");
    // The broker advertises epoch 0 for the empty partition (ListOffsets LATEST) ...
    assert_eq!(latest_epoch(&b, "fresh"), (0, 0, 0));
    // ... so a consumer validating (offset 0, epoch 0) must be told epoch 0 ends at the log end,
    // as Kafka answers, not (-1, -1) (truncation detected).
    assert_eq!(end_offset(&b, "fresh", 0, 0), (0, 0, 0));
}

#[test]
fn a_raised_leader_epoch_answers_itself_with_the_log_end() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "bumped");
    let h = b.partition("bumped", 0).unwrap();
    {
        let mut log = h.write();
        let mut builder = BatchBuilder::new();
        builder.append(TimestampMs(NOW_MS), None, Some(b"v"), &[]);
        log.append_as_leader(
            builder.build().into_bytes(),
            LeaderEpoch(5),
            LeaderOrigin::Client,
        )
        .unwrap();
        log.update_high_watermark(Offset(1));
        // A mirror's epoch bump (KIP-1279 §7): the partition's leader epoch goes to 7 while the
        // cache keeps the data's epochs.
        log.raise_leader_epoch(LeaderEpoch(7));
    }
    assert_eq!(latest_epoch(&b, "bumped"), (0, 1, 7));
    // Kafka: the leader's cache holds (7, LEO at the bump), so endOffsetFor(7) = (7, LEO).
    assert_eq!(end_offset(&b, "bumped", 7, 7), (0, 7, 1));
    // An epoch between the data's and the leader's: the floor epoch, ending at the bump.
    assert_eq!(end_offset(&b, "bumped", 6, 7), (0, 5, 1));
}
