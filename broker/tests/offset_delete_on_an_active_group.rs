//! OffsetDelete on a group with members, as Kafka's `ClassicGroup.validateOffsetDelete` and
//! `isSubscribedToTopic` decide it: a group whose members use another protocol type than
//! `consumer` (Kafka Connect's `connect`, say) keeps its offsets (NON_EMPTY_GROUP: they are its
//! members' to manage), and a `consumer` group whose subscriptions are not known yet (no
//! generation completed, or metadata that is not the consumer protocol) counts as subscribed to
//! every topic (GROUP_SUBSCRIBED_TO_TOPIC). Both used to delete the offsets under the members.
//!
//! The member's JoinGroup parks in the initial rebalance delay, which never ends on the manual
//! clock: the group stays PreparingRebalance with one member while the test runs.

use bytes::Bytes;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::default_storage;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on waiting for the parked join, only reached on a hang.
const HANG: Duration = Duration::from_secs(30);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn commit(c: &GroupCoordinator, group: &str, topic: &str, offset: i64) {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ]);
    match c.handle(9, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => {
            assert_eq!(r.topics[0].partitions[0].error_code, 0, "{r:?}")
        }
        other => panic!("{other:?}"),
    }
}

fn fetch(c: &GroupCoordinator, group: &str, topic: &str) -> i64 {
    let req = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(TopicName(s(topic)))
                    .with_partition_indexes(vec![0]),
            ])),
    ]);
    match c.handle(8, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => r.groups[0].topics[0].partitions[0].committed_offset,
        other => panic!("{other:?}"),
    }
}

/// OffsetDelete of `topic`-0: (top-level error, the partition's error).
fn delete(c: &GroupCoordinator, group: &str, topic: &str) -> (i16, Option<i16>) {
    let req = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(vec![
            OffsetDeleteRequestTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(0),
                ]),
        ]);
    match c.handle(0, RequestKind::OffsetDelete(req)) {
        ResponseKind::OffsetDelete(r) => (
            r.error_code,
            r.topics
                .first()
                .and_then(|t| t.partitions.first())
                .map(|p| p.error_code),
        ),
        other => panic!("{other:?}"),
    }
}

/// A member joining `group` with `protocol_type` on its own thread; returns once the group
/// holds it (the join itself stays parked).
fn park_a_member(c: &Arc<GroupCoordinator>, group: &str, protocol_type: &str) {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(60_000)
        .with_member_id(s(""))
        .with_protocol_type(s(protocol_type))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"not the consumer protocol")),
        ]);
    let joiner = c.clone();
    std::thread::spawn(move || joiner.handle(3, RequestKind::JoinGroup(req)));
    let start = Instant::now();
    loop {
        if c.group_snapshot(group)
            .is_some_and(|g| g.members.len() == 1)
        {
            return;
        }
        assert!(start.elapsed() < HANG, "{:?}", c.group_snapshot(group));
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn offset_delete_leaves_the_offsets_of_an_active_group_alone() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let (logs, _) = LogManager::open(
        LogManagerConfig::new(dir.path()),
        default_storage(),
        clock.clone(),
    )
    .unwrap();
    let logs = Arc::new(logs);
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    logs.create(&tp, TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let c = GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap();

    // A Connect-style group: its offsets are its members' while it has any.
    commit(&c, "connect-group", "orders", 10);
    park_a_member(&c, "connect-group", "connect");
    assert_eq!(
        delete(&c, "connect-group", "orders"),
        (E::NonEmptyGroup.code(), None),
        "a group with members that does not use the consumer protocol"
    );
    assert_eq!(fetch(&c, "connect-group", "orders"), 10, "the offset stays");

    // A consumer group whose subscriptions are not known: subscribed to everything.
    commit(&c, "consumers", "orders", 20);
    park_a_member(&c, "consumers", "consumer");
    assert_eq!(
        delete(&c, "consumers", "orders"),
        (0, Some(E::GroupSubscribedToTopic.code())),
        "a consumer group whose subscriptions are unknown"
    );
    assert_eq!(fetch(&c, "consumers", "orders"), 20, "the offset stays");
}
