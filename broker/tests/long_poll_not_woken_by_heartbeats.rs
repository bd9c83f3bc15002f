//! A Heartbeat writes no log, so in Kafka it completes no delayed fetch. Here every request a
//! coordinator answered (Heartbeat, OffsetFetch, DescribeGroups... all of them) woke every
//! long-polling fetch of the broker, which re-read all its partitions and slept again.
//! Wake-ups are counted through the notifier's test hook.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, GroupId, HeartbeatRequest, RequestHeader, RequestKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::fetch;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

fn one_record() -> bytes::Bytes {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
    bb.build().into_bytes()
}

fn long_poll(topic: &str, offset: i64) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 600_000;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.session_epoch = -1;
    let mut fp = FetchPartition::default();
    fp.partition = 0;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(s(topic));
    t.partitions.push(fp);
    r.topics.push(t);
    r
}

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
    r.group_id = GroupId(s("g"));
    r.member_id = s("m");
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
        let hang_guard = Instant::now() + Duration::from_secs(120);
        while b.appends.waiting() == 0 {
            assert!(Instant::now() < hang_guard, "the fetch never long-polled");
            std::thread::yield_now();
        }
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
            .recv_timeout(Duration::from_secs(120))
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
