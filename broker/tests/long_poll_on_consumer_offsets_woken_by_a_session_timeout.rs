//! A member expired by its session timeout: the group coordinator's tick writes the group's new
//! state (Empty, the next generation) to its `__consumer_offsets` partition. In Kafka that
//! append completes the delayed fetches on the partition, so a tool long-polling it (a console
//! consumer with the offsets formatter, Burrow) sees the change at once. Here the coordinator's
//! own writes woke no long poll: the fetch waited out its `max_wait_ms`. Wake-ups are counted
//! through the notifier's test hook; the clock is manual and the tick runs when the test says.

use crate::common;

use bytes::Bytes;
use common::internal_topics::*;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, GroupId, JoinGroupRequest, RequestKind, ResponseKind, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::group::{GroupConfig, OFFSETS_TOPIC};

const SESSION_MS: i32 = 10_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn join(b: &Broker, group: &str, member: &str) -> (i16, String, i32) {
    let req = JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(SESSION_MS)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"sub")),
        ]);
    match call(b, ApiKey::JoinGroup, 9, RequestKind::JoinGroup(req)) {
        ResponseKind::JoinGroup(r) => (r.error_code, r.member_id.to_string(), r.generation_id),
        other => panic!("{other:?}"),
    }
}

fn sync(b: &Broker, group: &str, member: &str, generation: i32) -> i16 {
    let req = SyncGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_protocol_type(Some(s("consumer")))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s(member))
                .with_assignment(Bytes::from_static(b"all")),
        ]);
    match call(b, ApiKey::SyncGroup, 5, RequestKind::SyncGroup(req)) {
        ResponseKind::SyncGroup(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_session_timeout_expiry_wakes_the_long_poll_on_its_offsets_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (b, clock) = manual_broker(dir.path());
    let g = "burrow-watched";
    let p = partition_for(g, GroupConfig::default().offsets_topic_partitions);

    // One member joins (no initial delay: the join completes at once) and syncs: Stable.
    let (code, member, _) = join(&b, g, "");
    assert_eq!(code, kafka_protocol::ResponseError::MemberIdRequired.code());
    let (code, _, generation) = join(&b, g, &member);
    assert_eq!((code, generation), (0, 1));
    assert_eq!(sync(&b, g, &member, generation), 0);

    let rx = park_long_poll(&b, OFFSETS_TOPIC, p);
    let end = log_end(&b, OFFSETS_TOPIC, p);
    let before = b.appends.wakeups();
    // The member goes silent: the tick expires it and stores the group, now Empty.
    clock.advance(i64::from(SESSION_MS) + 1);
    b.tick();
    let caused = b.appends.wakeups() - before;
    let wrote = log_end(&b, OFFSETS_TOPIC, p) > end;
    let resp = end_and_answer(&b, &rx);
    assert!(wrote, "the tick wrote nothing to {OFFSETS_TOPIC}-{p}");
    assert!(
        caused >= 1,
        "the tick's write to {OFFSETS_TOPIC}-{p} did not wake the long poll there"
    );
    assert!(answered_bytes(&resp) > 0, "{resp:?}");
}
