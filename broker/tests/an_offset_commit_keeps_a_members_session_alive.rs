//! An OffsetCommit from a member of a Stable or PreparingRebalance group counts as its
//! heartbeat, as in Kafka (`OffsetMetadataManager.validateOffsetCommit` reschedules the member's
//! session, as the old `GroupCoordinator.doCommitOffsets` did). A member committing within its
//! session timeout but not heartbeating was expelled at the session's end, and the group
//! rebalanced under it. A transactional commit does not count (nor in Kafka).

use crate::common;

use bytes::Bytes;
use common::groups::{commit_as, logs_with};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::{Clock, ManualClock};

const SESSION_MS: i64 = 10_000;
const GROUP: &str = "committer";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// One static member through a first rebalance: (member id, generation).
fn stable_member(c: &GroupCoordinator) -> (String, i32) {
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_session_timeout_ms(SESSION_MS as i32)
        .with_rebalance_timeout_ms(30_000)
        .with_group_instance_id(Some(s("i-1")))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"sub")),
        ]);
    let r = match c.handle(9, RequestKind::JoinGroup(join)) {
        ResponseKind::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.error_code, 0);
    let id = r.member_id.to_string();
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_generation_id(r.generation_id)
        .with_member_id(s(&id))
        .with_group_instance_id(Some(s("i-1")))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s(&id))
                .with_assignment(Bytes::from_static(b"p0")),
        ]);
    match c.handle(5, RequestKind::SyncGroup(sync)) {
        ResponseKind::SyncGroup(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    (id, r.generation_id)
}

#[test]
fn an_offset_commit_keeps_a_members_session_alive() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let c = GroupCoordinator::open(logs, GroupConfig::default(), clock.clone()).unwrap();
    let (id, generation) = stable_member(&c);
    // Commits, and no heartbeat, for three session timeouts.
    for n in 0..6 {
        clock.advance(SESSION_MS / 2);
        c.tick(clock.now_ms());
        assert_eq!(
            commit_as(
                &c,
                GROUP,
                generation,
                &id,
                Some("i-1"),
                &[("orders", 0, n, "")]
            ),
            vec![0]
        );
    }
    let snap = c.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.members),
        ("Stable", vec![id]),
        "a committing member keeps its session"
    );
    // Without commits (or heartbeats), the session ends as before.
    clock.advance(SESSION_MS);
    c.tick(clock.now_ms());
    let snap = c.group_snapshot(GROUP).unwrap();
    assert_eq!((snap.state, snap.members.len()), ("Empty", 0));
}
