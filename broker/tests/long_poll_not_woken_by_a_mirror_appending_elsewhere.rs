//! Kafka's `DelayedFetch` purgatory is keyed by partition: a follower's (here a mirror's)
//! append completes only the delayed fetches of the partitions it appended to. Here every
//! mirror append woke every long-polling fetch of the broker, which re-read all its partitions
//! and slept again. Wake-ups are counted through the notifier's test hook.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::fetch;
use mirrorlog_broker::mirror_rpc::{MirrorRequest, StartMirrorTopicsRequest, StartTopic};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use std::collections::BTreeMap;
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

/// Waits (the bound only fails the test) until the destination holds `end` records of `topic`.
fn wait_log_end(b: &Broker, topic: &str, end: i64) {
    let hang_guard = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(h) = b.partition(topic, 0)
            && h.read().log_end_offset().get() >= end
        {
            return;
        }
        assert!(Instant::now() < hang_guard, "{topic} never reached {end}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_long_poll_is_not_woken_by_a_mirror_appending_to_another_topic() {
    let dir = tempfile::tempdir().unwrap();
    let src = RunningBroker::start_local(&dir.path().join("src"), 1).unwrap();
    let mut sc = Client::connect(&src.addr.to_string()).unwrap();
    sc.create_topic("events", 1, &[]).unwrap();
    sc.produce("events", 0, one_record(), 1, None).unwrap();
    let dst = RunningBroker::start_local(&dir.path().join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    b.mirrors.create_durable(&b, "m", configs).unwrap();
    let r = mirrorlog_broker::handlers::mirror_admin::handle(
        &b,
        MirrorRequest::StartMirrorTopics(StartMirrorTopicsRequest {
            mirror_name: "m".into(),
            topics: vec![StartTopic {
                name: "events".into(),
                topic_id: [0; 16],
                num_partitions: -1,
            }],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    assert!(format!("{r:?}").contains("error_code: 0"), "{r:?}");
    wait_log_end(&b, "events", 1);
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
        // One record at a time, each mirrored before the next is produced: the mirror applies
        // them in separate answers, and the one before the last has signalled by the time the
        // last is in the log.
        for end in 2..=6 {
            sc.produce("events", 0, one_record(), 1, None).unwrap();
            wait_log_end(b, "events", end);
        }
        let after_mirror = b.appends.wakeups();
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
            after_mirror, before,
            "the mirror's appends to events woke the long poll on a"
        );
        assert!(!answered_early, "the long poll on a answered without data");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
