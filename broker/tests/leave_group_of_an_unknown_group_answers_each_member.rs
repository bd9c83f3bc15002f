//! LeaveGroup of a group the coordinator does not have, as Kafka's `GroupCoordinatorService`
//! answers it: from v3 (a batch of members) no group-level error, each member UNKNOWN_MEMBER_ID
//! (the AdminClient's `removeMembersFromConsumerGroup` reports it per member); before v3 the one
//! member's error is the response's. It used to answer v3+ with a group-level UNKNOWN_MEMBER_ID
//! and no member, which fails the whole admin call.

use crate::common;

use common::groups::logs_with;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn leave(c: &GroupCoordinator, v: i16, req: LeaveGroupRequest) -> LeaveGroupResponse {
    match c.handle(v, RequestKind::LeaveGroup(req)) {
        ResponseKind::LeaveGroup(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn leave_group_of_an_unknown_group_answers_each_member_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[]);
    let coord = GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap();

    let batch = LeaveGroupRequest::default()
        .with_group_id(GroupId(s("nobody")))
        .with_members(vec![
            MemberIdentity::default().with_member_id(s("m-1")),
            MemberIdentity::default()
                .with_member_id(s(""))
                .with_group_instance_id(Some(s("i-2"))),
        ]);
    for v in [3, 4, 5] {
        let r = leave(&coord, v, batch.clone());
        assert_eq!(r.error_code, 0, "v{v}: no group-level error");
        let members: Vec<_> = r
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|i| i.to_string()),
                    m.error_code,
                )
            })
            .collect();
        assert_eq!(
            members,
            vec![
                ("m-1".to_string(), None, E::UnknownMemberId.code()),
                (
                    String::new(),
                    Some("i-2".to_string()),
                    E::UnknownMemberId.code()
                ),
            ],
            "v{v}"
        );
    }
    for v in [0, 1, 2] {
        let r = leave(
            &coord,
            v,
            LeaveGroupRequest::default()
                .with_group_id(GroupId(s("nobody")))
                .with_member_id(s("m-1")),
        );
        assert_eq!(r.error_code, E::UnknownMemberId.code(), "v{v}");
    }
}
