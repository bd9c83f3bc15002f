//! Kafka's `DelayedFetch` purgatory is keyed by partition: an append completes only the fetches
//! watching that partition. Here every append (to any partition) woke every long-polling
//! fetch, which re-read all its partitions and slept again: with many idle consumers, each
//! produce was a thundering herd. Wake-ups are counted through the notifier's test hook.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{FetchRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{fetch, produce};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const NOW: i64 = 1_700_000_000_000;

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

fn produce_one(b: &Broker, topic: &str) {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(NOW), None, Some(b"v"), &[]);
    let mut r = ProduceRequest::default();
    r.acks = 1;
    r.timeout_ms = 30_000;
    let mut pd = PartitionProduceData::default();
    pd.index = 0;
    pd.records = Some(bb.build().into_bytes());
    let mut t = TopicProduceData::default();
    t.name = TopicName(s(topic));
    t.partition_data.push(pd);
    r.topic_data.push(t);
    let resp = produce::handle(b, r, 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

fn long_poll(topic: &str) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 600_000;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.session_epoch = -1;
    let mut fp = FetchPartition::default();
    fp.partition = 0;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(s(topic));
    t.partitions.push(fp);
    r.topics.push(t);
    r
}

#[test]
fn a_long_poll_is_woken_by_appends_to_its_partition_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    for t in ["a", "b"] {
        b.topics
            .create(&b.logs, t, 1, LogConfig::default(), None)
            .unwrap();
    }
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let start = Instant::now();
            let resp = fetch::handle(b, long_poll("a"), 12);
            tx.send((resp, start.elapsed())).unwrap();
        });
        // Until the fetch waits (the bound only fails the test; nothing is timed).
        let hang_guard = Instant::now() + Duration::from_secs(120);
        while b.appends.waiting() == 0 {
            assert!(Instant::now() < hang_guard, "the fetch never long-polled");
            std::thread::yield_now();
        }
        let before = b.appends.wakeups();
        for _ in 0..20 {
            produce_one(b, "b");
        }
        let after_b = b.appends.wakeups();
        let answered_early = rx.try_recv().is_ok();
        // Checked after the append to a, so that a failure does not leave the fetch waiting.
        produce_one(b, "a");
        let (resp, took) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the append to a did not wake its long poll");
        assert_eq!(
            after_b, before,
            "appends to partition b woke the long poll on partition a"
        );
        assert!(!answered_early, "the long poll on a answered without data");
        assert!(took < Duration::from_secs(300), "answered at its deadline");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
        assert_eq!(b.appends.wakeups(), before + 1, "one wake-up, by a");
        assert_eq!(b.appends.waiting(), 0, "the answered fetch deregistered");
    });
}
