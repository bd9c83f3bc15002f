//! The empty group id, per API, as Kafka's `GroupCoordinatorService` answers it. SyncGroup,
//! Heartbeat and LeaveGroup refuse it with INVALID_GROUP_ID (they used to look the group up and
//! answer UNKNOWN_MEMBER_ID), as JoinGroup, OffsetCommit and OffsetDelete already did. OffsetFetch,
//! DescribeGroups and DeleteGroups accept it "for backwards compatibility" (Kafka refuses only a
//! null id): OffsetFetch answers no offset and no error (it used to answer INVALID_GROUP_ID),
//! DeleteGroups GROUP_ID_NOT_FOUND (it used to answer INVALID_GROUP_ID).

use crate::common;

use common::groups::logs_with;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn empty() -> GroupId {
    GroupId(s(""))
}

#[test]
fn an_empty_group_id_is_refused_or_looked_up_as_kafka_does_per_api() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let c = GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap();
    let invalid = E::InvalidGroupId.code();

    let sync = SyncGroupRequest::default()
        .with_group_id(empty())
        .with_member_id(s("m"))
        .with_generation_id(1);
    match c.handle(5, RequestKind::SyncGroup(sync)) {
        ResponseKind::SyncGroup(r) => assert_eq!(r.error_code, invalid, "SyncGroup"),
        other => panic!("{other:?}"),
    }
    let hb = HeartbeatRequest::default()
        .with_group_id(empty())
        .with_member_id(s("m"))
        .with_generation_id(1);
    match c.handle(4, RequestKind::Heartbeat(hb)) {
        ResponseKind::Heartbeat(r) => assert_eq!(r.error_code, invalid, "Heartbeat"),
        other => panic!("{other:?}"),
    }
    for v in [1, 5] {
        let leave = LeaveGroupRequest::default()
            .with_group_id(empty())
            .with_member_id(s("m"))
            .with_members(vec![MemberIdentity::default().with_member_id(s("m"))]);
        match c.handle(v, RequestKind::LeaveGroup(leave)) {
            ResponseKind::LeaveGroup(r) => {
                assert_eq!(r.error_code, invalid, "LeaveGroup v{v}");
                assert!(r.members.is_empty(), "LeaveGroup v{v}: {r:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    // OffsetFetch: looked up, nothing committed, no error (v1–7 and v8+).
    let v7 = OffsetFetchRequest::default()
        .with_group_id(empty())
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partition_indexes(vec![0]),
        ]));
    match c.handle(7, RequestKind::OffsetFetch(v7)) {
        ResponseKind::OffsetFetch(r) => {
            assert_eq!(r.error_code, 0, "OffsetFetch v7: {r:?}");
            let p = &r.topics[0].partitions[0];
            assert_eq!((p.committed_offset, p.error_code), (-1, 0));
        }
        other => panic!("{other:?}"),
    }
    let v8 = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(empty())
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(TopicName(s("orders")))
                    .with_partition_indexes(vec![0]),
            ])),
    ]);
    match c.handle(8, RequestKind::OffsetFetch(v8)) {
        ResponseKind::OffsetFetch(r) => {
            assert_eq!(r.groups[0].error_code, 0, "OffsetFetch v8: {r:?}");
            let p = &r.groups[0].topics[0].partitions[0];
            assert_eq!((p.committed_offset, p.error_code), (-1, 0));
        }
        other => panic!("{other:?}"),
    }

    let del = DeleteGroupsRequest::default().with_groups_names(vec![empty()]);
    match c.handle(2, RequestKind::DeleteGroups(del)) {
        ResponseKind::DeleteGroups(r) => {
            assert_eq!(r.results[0].error_code, E::GroupIdNotFound.code())
        }
        other => panic!("{other:?}"),
    }
}
