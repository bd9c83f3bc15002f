//! From Produce v10 (KIP-951) Kafka's `KafkaApis.handleProduceRequest` answers a partition failing
//! `NOT_LEADER_OR_FOLLOWER` with its current leader and leader epoch (`getCurrentLeader`), and
//! lists that leader's endpoint in the response's `node_endpoints`, so the producer moves to it
//! without a Metadata round trip; below v10 it sets neither, and no other error names a leader.
//! Here a Produce partition is answered `NOT_LEADER_OR_FOLLOWER` when its `acks = -1` append is
//! undone by a truncation (a mirror's log alignment) before its sync: the broker left both
//! fields empty.

use crate::common;

use common::current_leader::{NODE, assert_lists_node, leader_at_epoch_5};
use common::produce::{batch, request};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_response::LeaderIdAndEpoch;
use kafka_protocol::messages::{BrokerId, ProduceResponse, ResponseKind};
use kafka_protocol::protocol::Encodable;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::produce;
use mirrorlog_broker::server::Reply;
use mirrorlog_index::Offset;

/// An `acks = -1` Produce at `version` of one batch to each partition of `t`, whose append to
/// partition 0 a truncation undoes before the request waits for its syncs.
fn produce_undone_in_partition_0(b: &Broker, version: i16) -> ProduceResponse {
    let r = request(
        -1,
        vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(batch(b"b")))],
    );
    let Reply::Later(finish) = produce::handle_pipelined(b, r, version, None) else {
        panic!("an acks=-1 Produce answers after its syncs");
    };
    b.partition("t", 0)
        .unwrap()
        .write()
        .truncate_to(Offset(0))
        .unwrap();
    let ResponseKind::Produce(resp) = finish() else {
        panic!("a Produce response");
    };
    resp.encode(&mut bytes::BytesMut::new(), version)
        .expect("the response encodes at its version");
    resp
}

#[test]
fn an_append_a_truncation_undid_names_this_leader_from_v10() {
    let dir = tempfile::tempdir().unwrap();
    let b = leader_at_epoch_5(&dir, &[("t", 2)]);
    let resp = produce_undone_in_partition_0(&b, 10);
    let [undone, appended] = &resp.responses[0].partition_responses[..] else {
        panic!("two partitions answered");
    };
    assert_eq!(undone.error_code, ResponseError::NotLeaderOrFollower.code());
    let mut leader = LeaderIdAndEpoch::default();
    leader.leader_id = BrokerId(NODE.0);
    leader.leader_epoch = 5;
    assert_eq!(undone.current_leader, leader);
    // A partition without an error names nobody.
    assert_eq!(appended.error_code, 0);
    assert_eq!(appended.current_leader, LeaderIdAndEpoch::default());
    assert_lists_node!(resp.node_endpoints);
}

#[test]
fn before_v10_the_error_names_no_leader() {
    let dir = tempfile::tempdir().unwrap();
    let b = leader_at_epoch_5(&dir, &[("t", 2)]);
    let resp = produce_undone_in_partition_0(&b, 9);
    let undone = &resp.responses[0].partition_responses[0];
    assert_eq!(undone.error_code, ResponseError::NotLeaderOrFollower.code());
    assert_eq!(undone.current_leader, LeaderIdAndEpoch::default());
    assert!(resp.node_endpoints.is_empty());
}

#[test]
fn other_errors_name_no_leader() {
    let dir = tempfile::tempdir().unwrap();
    let b = leader_at_epoch_5(&dir, &[("t", 2)]);
    // An unknown partition and a refused batch, at v11: Kafka names a leader only for
    // NOT_LEADER_OR_FOLLOWER.
    let r = request(
        1,
        vec![
            ("t", 0, Some(bytes::Bytes::new())),
            ("t", 7, Some(batch(b"c"))),
        ],
    );
    let resp = produce::handle(&b, r, 11).unwrap();
    let errors: Vec<_> = resp.responses[0]
        .partition_responses
        .iter()
        .map(|p| (p.error_code, p.current_leader.clone()))
        .collect();
    assert_eq!(
        errors,
        [
            (
                ResponseError::InvalidRecord.code(),
                LeaderIdAndEpoch::default()
            ),
            (
                ResponseError::UnknownTopicOrPartition.code(),
                LeaderIdAndEpoch::default()
            ),
        ]
    );
    assert!(resp.node_endpoints.is_empty());
}
