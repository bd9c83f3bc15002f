//! Long-poll scenarios: a one-record batch, a fetch that waits up to 600 s on one partition,
//! waits bounded only to fail a hung test, and a source whose topic `events` a destination's
//! mirror `m` copies.

use kafka_protocol::messages::FetchRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{MirrorRequest, StartMirrorTopicsRequest, StartTopic};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a wait may take before the test counts as hung (never what decides it).
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// A batch of one record.
pub fn one_record() -> bytes::Bytes {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
    bb.build().into_bytes()
}

/// A Fetch of partition 0 of `topic` from `offset` that waits up to 600 s for one byte.
pub fn long_poll(topic: &str, offset: i64) -> FetchRequest {
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
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions.push(fp);
    r.topics.push(t);
    r
}

/// Waits until a fetch is parked in `b`'s notifier.
pub fn wait_until_long_polling(b: &Broker) {
    let hang_guard = Instant::now() + HANG_GUARD;
    while b.appends.waiting() == 0 {
        assert!(Instant::now() < hang_guard, "the fetch never long-polled");
        std::thread::yield_now();
    }
}

/// Waits until partition 0 of `topic` on `b` holds `end` records.
pub fn wait_log_end(b: &Broker, topic: &str, end: i64) {
    let hang_guard = Instant::now() + HANG_GUARD;
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

/// A source (node 1) with topic `events` holding one record, a client on it, and a destination
/// (node 2) whose mirror `m` has copied that record.
pub fn mirrored_events(dir: &Path) -> (RunningBroker, Client, RunningBroker) {
    let src = RunningBroker::start_local(&dir.join("src"), 1).unwrap();
    let mut sc = Client::connect(&src.addr.to_string()).unwrap();
    sc.create_topic("events", 1, &[]).unwrap();
    sc.produce("events", 0, one_record(), 1, None).unwrap();
    let dst = RunningBroker::start_local(&dir.join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    b.mirrors.create_durable(&b, "m", configs).unwrap();
    let r = handle(
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
    (src, sc, dst)
}
