//! ListOffsets and OffsetForLeaderEpoch for a partition whose data directory went offline (a
//! failed fsync, Kafka's `LogDirFailureChannel`): Kafka answers KAFKA_STORAGE_ERROR (the
//! partition is offline, `ReplicaManager.getPartitionOrException`), as mirrorlog's Fetch does
//! (`check_online`). The offsets handlers answer from the in-memory log instead — including the
//! log end of a batch whose sync failed and that was never acknowledged.

use kafka_protocol::ResponseError;
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
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;

fn tn(v: &str) -> TopicName {
    TopicName(StrBytes::from_string(v.to_string()))
}

fn batch() -> bytes::Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(NOW_MS), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

#[test]
fn offsets_of_a_partition_in_an_offline_dir_are_a_storage_error() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    let b = Broker::open(config, Arc::new(sim.clone()), ManualClock::new(NOW_MS)).unwrap();
    let mut t = create_topics_request::CreatableTopic::default();
    t.name = tn("t");
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let h = b.partition("t", 0).unwrap();
    h.append_as_leader_durable(batch(), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path("t-0"));
    assert!(
        h.append_as_leader_durable(batch(), LeaderEpoch(1), LeaderOrigin::Client)
            .is_err()
    );
    assert!(h.check_online().is_err(), "the data dir is offline");

    let storage_error = ResponseError::KafkaStorageError.code();

    let mut p = OffsetForLeaderPartition::default();
    p.partition = 0;
    p.leader_epoch = 1;
    p.current_leader_epoch = -1;
    let mut ot = OffsetForLeaderTopic::default();
    ot.topic = tn("t");
    ot.partitions = vec![p];
    let mut r = OffsetForLeaderEpochRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![ot];
    let resp = offsets::offset_for_leader_epoch(&b, r, 4);
    let e = &resp.topics[0].partitions[0];
    assert_eq!(
        (e.error_code, e.leader_epoch, e.end_offset),
        (storage_error, -1, -1),
        "OffsetForLeaderEpoch answered from an offline log"
    );

    let mut lp = ListOffsetsPartition::default();
    lp.partition_index = 0;
    lp.timestamp = -1;
    lp.current_leader_epoch = -1;
    let mut lt = ListOffsetsTopic::default();
    lt.name = tn("t");
    lt.partitions = vec![lp];
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.topics = vec![lt];
    let resp = offsets::list_offsets(&b, r, 8);
    let l = &resp.topics[0].partitions[0];
    assert_eq!(
        l.error_code, storage_error,
        "ListOffsets answered offset {} from an offline log",
        l.offset
    );
}
