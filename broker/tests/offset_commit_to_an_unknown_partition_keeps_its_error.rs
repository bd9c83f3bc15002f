//! A commit's partitions the broker does not have are answered UNKNOWN_TOPIC_OR_PARTITION
//! whatever the group says, as in Kafka, whose `KafkaApis` answers them before the group
//! coordinator sees the request (which gets only the other partitions, and is not called at all
//! when none is left). Group-level errors (an unknown group, a stale generation) used to replace
//! that error, a commit of only unknown partitions was validated against the group, and an unknown
//! partition with oversized metadata was answered OFFSET_METADATA_TOO_LARGE. Both OffsetCommit and
//! TxnOffsetCommit.

use crate::common;

use common::groups::{commit_as, logs_with};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// OffsetCommit v9 of `parts` (topic, partition, metadata) by a member of generation 5 that
/// the group does not know: the codes in order.
fn commit(c: &GroupCoordinator, group: &str, parts: &[(&str, i32, &str)]) -> Vec<i16> {
    let parts: Vec<_> = parts.iter().map(|&(t, p, m)| (t, p, 1, m)).collect();
    commit_as(c, group, 5, "ghost", None, &parts)
}

/// TxnOffsetCommit v3 of `parts` by the same stale member: the codes in order.
fn txn_commit(c: &GroupCoordinator, group: &str, parts: &[(&str, i32)]) -> Vec<i16> {
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s("tx")))
        .with_group_id(GroupId(s(group)))
        .with_producer_id(ProducerId(9))
        .with_producer_epoch(0)
        .with_generation_id(5)
        .with_member_id(s("ghost"))
        .with_topics(
            parts
                .iter()
                .map(|(t, p)| {
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(TopicName(s(t)))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(1),
                        ])
                })
                .collect(),
        );
    match c.handle(3, RequestKind::TxnOffsetCommit(req)) {
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_partitions_keep_unknown_topic_or_partition_whatever_the_group_says() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let config = GroupConfig {
        offset_metadata_max_bytes: 4,
        ..GroupConfig::default()
    };
    let c = GroupCoordinator::open(logs, config, clock).unwrap();
    let unknown = E::UnknownTopicOrPartition.code();

    // The group does not exist: GROUP_ID_NOT_FOUND (v9) for the partition the broker has only.
    assert_eq!(
        commit(
            &c,
            "nobody",
            &[("orders", 0, ""), ("nosuch", 0, ""), ("orders", 9, "")]
        ),
        vec![E::GroupIdNotFound.code(), unknown, unknown]
    );
    // Only unknown partitions: the group is not consulted (nor made).
    assert_eq!(
        commit(&c, "nobody", &[("nosuch", 0, ""), ("orders", 9, "")]),
        vec![unknown, unknown]
    );
    assert!(c.group_snapshot("nobody").is_none());
    // An unknown partition is unknown before its metadata is too large.
    assert_eq!(
        commit(&c, "nobody", &[("nosuch", 0, "too long")]),
        vec![unknown]
    );
    // TxnOffsetCommit of a group that does not exist, generation 5: ILLEGAL_GENERATION.
    assert_eq!(
        txn_commit(&c, "nobody", &[("orders", 0), ("nosuch", 0)]),
        vec![E::IllegalGeneration.code(), unknown]
    );
    assert_eq!(txn_commit(&c, "nobody", &[("nosuch", 0)]), vec![unknown]);
}
