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

/// Creates topic `a` on `dst`, parks a long poll on its partition 0, runs `noise` (events that
/// must not concern `a`) and counts the wake-ups the long poll got from it. Then ends the long
/// poll with a produce to `a` through `dst`'s listener and checks that it answers with that
/// record and had not answered before. Returns the wake-ups `noise` caused.
pub fn wakeups_of_an_unconcerned_long_poll(
    dst: &RunningBroker,
    noise: impl FnOnce(&Broker),
) -> u64 {
    let b = &dst.broker;
    b.topics
        .create(
            &b.logs,
            "a",
            1,
            mirrorlog_engine::config::LogConfig::default(),
            None,
        )
        .unwrap();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        scope.spawn(move || {
            let resp = mirrorlog_broker::handlers::fetch::handle(b, long_poll("a", 0), 12);
            tx.send(resp).unwrap();
        });
        wait_until_long_polling(b);
        let before = b.appends.wakeups();
        noise(b);
        let caused = b.appends.wakeups() - before;
        let answered_early = rx.try_recv().is_ok();
        // Ends the long poll before asserting, so that a failure does not leave it waiting.
        Client::connect(&dst.addr.to_string())
            .unwrap()
            .produce("a", 0, one_record(), 1, None)
            .unwrap();
        let resp = rx
            .recv_timeout(HANG_GUARD)
            .expect("the append to a did not wake its long poll");
        assert!(!answered_early, "the long poll on a answered without data");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
        caused
    })
}
