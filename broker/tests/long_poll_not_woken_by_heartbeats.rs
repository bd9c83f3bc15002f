//! A Heartbeat writes no log, so in Kafka it completes no delayed fetch. Here every request a
//! coordinator answered (Heartbeat, OffsetFetch, DescribeGroups... all of them) woke every
//! long-polling fetch of the broker, which re-read all its partitions and slept again.
//! Wake-ups are counted through the notifier's test hook.

mod common;

use common::long_poll::*;
use kafka_protocol::messages::{ApiKey, GroupId, HeartbeatRequest, RequestHeader, RequestKind};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::fetch;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_engine::config::LogConfig;
use std::sync::mpsc;

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
    let b = dst.broker.clone();
    b.topics
        .create(&b.logs, "a", 1, LogConfig::default(), None)
        .unwrap();

    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let resp = fetch::handle(b, long_poll("a", 0), 12);
            tx.send(resp).unwrap();
        });
        wait_until_long_polling(b);
        let before = b.appends.wakeups();
        for _ in 0..20 {
            heartbeat(b);
        }
        let after_heartbeats = b.appends.wakeups();
        let answered_early = rx.try_recv().is_ok();
        // Ends the long poll before asserting, so that a failure does not leave it waiting.
        Client::connect(&dst.addr.to_string())
            .unwrap()
            .produce("a", 0, one_record(), 1, None)
            .unwrap();
        let resp = rx
            .recv_timeout(HANG_GUARD)
            .expect("the append to a did not wake its long poll");
        assert_eq!(
            after_heartbeats, before,
            "Heartbeats woke the long poll on a"
        );
        assert!(!answered_early, "the long poll on a answered without data");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
    drop(b);
    dst.shutdown().unwrap();
}
