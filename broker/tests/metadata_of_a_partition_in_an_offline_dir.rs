//! Metadata for a partition whose data directory is offline answers as Kafka's KRaft metadata
//! cache does once the controller has taken the leadership off a replica in an offline log dir:
//! leader −1, `LEADER_NOT_AVAILABLE`, the replicas and ISR as they are, and this node in
//! `offline_replicas` (`KRaftMetadataCache.getPartitionMetadata`, `isReplicaInOfflineDir`), in
//! every version (no broker is fenced, so v0's filtering of replicas keeps this node).
//!
//! Bug: a partition whose directory went offline after its log was loaded was answered as
//! healthy (no error, this node the leader), one whose directory failed at load with
//! `LEADER_NOT_AVAILABLE` but an empty ISR and no offline replica — a client could not tell an
//! offline replica from a partition being created.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponsePartition;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;
const NODE: i32 = 1; // BrokerConfig's default node.id

fn open(dirs: &[&Path], sim: &SimStorage) -> Broker {
    let mut config = BrokerConfig::new(dirs[0], "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.logs.recovery_threads = 1;
    Broker::open(config, Arc::new(sim.clone()), ManualClock::new(NOW_MS)).unwrap()
}

/// Two dirs, the internal topics in the first; topic `t` with 4 partitions over both. Returns a
/// partition of `t` in the second dir.
fn setup(d1: &Path, d2: &Path, sim: &SimStorage) -> (Broker, i32) {
    open(&[d1], sim).shutdown().unwrap();
    let b = open(&[d1, d2], sim);
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    t.num_partitions = 4;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let p = (0..4)
        .find(|&p| b.partition("t", p).unwrap().data_dir() == d2)
        .expect("a partition of t in d2");
    (b, p)
}

fn partition(b: &Broker, p: i32, v: i16) -> MetadataResponsePartition {
    let mut t = MetadataRequestTopic::default();
    t.name = Some(TopicName(StrBytes::from_static_str("t")));
    let mut r = MetadataRequest::default();
    r.topics = Some(vec![t]);
    let resp = admin::metadata(b, r, v);
    assert_eq!(resp.topics[0].error_code, 0, "v{v}");
    resp.topics[0].partitions[p as usize].clone()
}

fn assert_offline(b: &Broker, p: i32, epoch: i32) {
    for v in [0, 1, 5, 9, 12] {
        let got = partition(b, p, v);
        assert_eq!(
            (
                got.error_code,
                got.leader_id.0,
                got.leader_epoch,
                got.replica_nodes.iter().map(|n| n.0).collect::<Vec<_>>(),
                got.isr_nodes.iter().map(|n| n.0).collect::<Vec<_>>(),
                got.offline_replicas.iter().map(|n| n.0).collect::<Vec<_>>(),
            ),
            (
                ResponseError::LeaderNotAvailable.code(),
                -1,
                epoch,
                vec![NODE],
                vec![NODE],
                vec![NODE]
            ),
            "v{v}: {got:?}"
        );
    }
    // The partitions in the online dir keep their leader.
    let online = (0..4)
        .find(|&q| q != p && b.logs.lookup(&tp(q)).is_ok())
        .unwrap();
    let got = partition(b, online, 12);
    assert_eq!((got.error_code, got.leader_id.0), (0, NODE));
    assert!(got.offline_replicas.is_empty());
}

fn tp(p: i32) -> mirrorlog_index::TopicPartition {
    mirrorlog_index::TopicPartition {
        topic: "t".into(),
        partition: p,
    }
}

fn batch() -> bytes::Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(NOW_MS), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

#[test]
fn a_partition_whose_dir_failed_at_load_is_answered_offline() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let (b, p) = setup(d1.path(), d2.path(), &sim);
    b.shutdown().unwrap();
    let bad = d2.path().join(format!("t-{p}"));
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let b = open(&[d1.path(), d2.path()], &sim);
    assert!(b.partition("t", p).is_none(), "its load failed");
    assert_offline(&b, p, -1);
    b.shutdown().unwrap();
}

#[test]
fn a_partition_whose_dir_failed_while_serving_is_answered_offline() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    let (b, p) = setup(d1.path(), d2.path(), &sim);
    let h = b.partition("t", p).unwrap();
    h.append_as_leader_durable(batch(), LeaderEpoch(3), LeaderOrigin::Client)
        .unwrap();
    let log = d2.path().join(format!("t-{p}"));
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path(log.to_str().unwrap()));
    assert!(
        h.append_as_leader_durable(batch(), LeaderEpoch(3), LeaderOrigin::Client)
            .is_err()
    );
    assert!(h.check_online().is_err(), "the failed sync took d2 offline");
    assert_offline(&b, p, 3);
}
