//! From Fetch v16 (KIP-951) Kafka's `KafkaApis.handleFetchRequest` answers a partition failing
//! `NOT_LEADER_OR_FOLLOWER` or `FENCED_LEADER_EPOCH` with its current leader and leader epoch,
//! and lists that leader's endpoint in the response's `node_endpoints`, so a client moves to the
//! new epoch without a Metadata round trip (the Java consumer's `updatePartitionLeadership`).
//! The broker left both empty. A consumer is fenced here when a partition's leader epoch rises
//! (a mirror's epoch bump, the stop sequence at failover).

use crate::common;

use common::current_leader::{NODE, assert_lists_node, leader_at_epoch_5};
use common::fetch_session::{by_topic_id, fetch_at, session_fetch};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::BrokerId;
use kafka_protocol::messages::fetch_response::LeaderIdAndEpoch;
use mirrorlog_broker::broker::Broker;

fn fenced_broker(dir: &tempfile::TempDir) -> Broker {
    leader_at_epoch_5(dir, &[("t", 1)])
}

#[test]
fn a_fenced_consumer_is_told_the_current_leader_and_its_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let b = fenced_broker(&dir);
    let mut r = by_topic_id(&b, session_fetch(0, -1, &[("t", 0, 0)]));
    r.topics[0].partitions[0].current_leader_epoch = 2;

    let resp = fetch_at(&b, r.clone(), 16);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, ResponseError::FencedLeaderEpoch.code());
    let mut leader = LeaderIdAndEpoch::default();
    leader.leader_id = BrokerId(NODE.0);
    leader.leader_epoch = 5;
    assert_eq!(d.current_leader, leader);
    assert_lists_node!(resp.node_endpoints);

    // Before v16 Kafka sets neither (the field exists from v12).
    let resp = fetch_at(&b, r, 15);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, ResponseError::FencedLeaderEpoch.code());
    assert_eq!(d.current_leader, LeaderIdAndEpoch::default());
    assert!(resp.node_endpoints.is_empty());
}

#[test]
fn only_not_leader_and_fenced_errors_name_the_leader() {
    let dir = tempfile::tempdir().unwrap();
    let b = fenced_broker(&dir);
    // A replica's fetch (this node has no followers): NOT_LEADER_OR_FOLLOWER, with the leader.
    let mut r = by_topic_id(&b, session_fetch(0, -1, &[("t", 0, 0)]));
    r.replica_state.replica_id = BrokerId(2);
    let resp = fetch_at(&b, r, 16);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, ResponseError::NotLeaderOrFollower.code());
    assert_eq!(
        (d.current_leader.leader_id, d.current_leader.leader_epoch),
        (BrokerId(NODE.0), 5)
    );
    assert_eq!(resp.node_endpoints.len(), 1);

    // A newer epoch than ours (UNKNOWN_LEADER_EPOCH) and a good read name nobody.
    let mut r = by_topic_id(&b, session_fetch(0, -1, &[("t", 0, 0)]));
    r.topics[0].partitions[0].current_leader_epoch = 9;
    let resp = fetch_at(&b, r.clone(), 16);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, ResponseError::UnknownLeaderEpoch.code());
    assert_eq!(d.current_leader, LeaderIdAndEpoch::default());
    assert!(resp.node_endpoints.is_empty());
    r.topics[0].partitions[0].current_leader_epoch = 5;
    let resp = fetch_at(&b, r, 16);
    assert_eq!(resp.responses[0].partitions[0].error_code, 0);
    assert!(resp.node_endpoints.is_empty());
}
