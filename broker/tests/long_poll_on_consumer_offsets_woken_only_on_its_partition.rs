//! An OffsetCommit appends to one `__consumer_offsets` partition, the group's; in Kafka it
//! completes the delayed fetches of that partition and no other. Here every group request that
//! writes woke every long poll on every partition of `__consumer_offsets`, which re-read and
//! slept again. Wake-ups are counted through the notifier's test hook.

use crate::common;

use common::internal_topics::*;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, OFFSETS_TOPIC};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[test]
fn an_offset_commit_wakes_the_long_poll_on_its_group_partition_only() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _clock) = manual_broker_with_orders(dir.path());
    let g = "g";
    let n = GroupConfig::default().offsets_topic_partitions;
    let p = partition_for(g, n);
    let other = (p + 1) % n;

    let rx = park_long_poll(&b, OFFSETS_TOPIC, p);
    let rx_other = park_long_poll(&b, OFFSETS_TOPIC, other);
    let before = b.appends.wakeups();
    let mut part = OffsetCommitRequestPartition::default();
    part.partition_index = 0;
    part.committed_offset = 0;
    part.committed_leader_epoch = -1;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s("orders"));
    t.partitions = vec![part];
    let mut r = OffsetCommitRequest::default();
    r.group_id = GroupId(s(g));
    r.generation_id_or_member_epoch = -1;
    r.member_id = s("");
    r.topics = vec![t];
    match call(&b, ApiKey::OffsetCommit, 8, RequestKind::OffsetCommit(r)) {
        ResponseKind::OffsetCommit(resp) => {
            assert_eq!(resp.topics[0].partitions[0].error_code, 0, "{resp:?}")
        }
        other => panic!("{other:?}"),
    }
    let caused = b.appends.wakeups() - before;
    let resp = end_and_answer(&b, &rx);
    let resp_other = end_and_answer(&b, &rx_other);
    assert_eq!(
        caused, 1,
        "the commit to {OFFSETS_TOPIC}-{p} should wake its long poll alone, not the one on partition {other}"
    );
    assert!(answered_bytes(&resp) > 0, "{resp:?}");
    assert_eq!(answered_bytes(&resp_other), 0, "{resp_other:?}");
}
