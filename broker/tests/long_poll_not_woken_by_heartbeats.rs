//! A Heartbeat writes no log, so in Kafka it completes no delayed fetch. Here every request a
//! coordinator answered (Heartbeat, OffsetFetch, DescribeGroups... all of them) woke every
//! long-polling fetch of the broker, which re-read all its partitions and slept again.
//! Wake-ups are counted through the notifier's test hook.

use crate::common;

use common::long_poll::*;
use kafka_protocol::messages::{ApiKey, GroupId, HeartbeatRequest, RequestHeader, RequestKind};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::server::{Handler, RequestContext};

fn heartbeat(b: &Broker) {
    let ctx = RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some("t".into()),
        api_key: ApiKey::Heartbeat,
        api_version: 4,
        correlation_id: 1,
    };
    let mut r = HeartbeatRequest::default();
    r.group_id = GroupId(StrBytes::from_static_str("g"));
    r.member_id = StrBytes::from_static_str("m");
    r.generation_id = 1;
    let resp = Handler::handle(
        b,
        &ctx,
        &RequestHeader::default(),
        RequestKind::Heartbeat(r),
    );
    assert!(resp.is_some());
}

#[test]
fn a_long_poll_is_not_woken_by_heartbeats() {
    let dir = tempfile::tempdir().unwrap();
    let dst = RunningBroker::start_local(dir.path(), 1).unwrap();
    let woken = wakeups_of_an_unconcerned_long_poll(&dst, |b| {
        for _ in 0..20 {
            heartbeat(b);
        }
    });
    assert_eq!(woken, 0, "Heartbeats woke the long poll on a");
    dst.shutdown().unwrap();
}
