//! Long polls on the coordinators' internal topics (`__consumer_offsets`,
//! `__transaction_state`) of a broker on a manual clock: no ticker and no listener, so time
//! moves and `tick` runs only when a test says, and requests go through the broker's dispatcher
//! as a connection's would. Waits are bounded only to fail a hung test.

use super::long_poll::HANG_GUARD;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, RequestHeader, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_engine::clock::ManualClock;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Instant;

/// The manual clock's start.
pub const T0: i64 = 1_700_000_000_000;

/// A broker on `dir` with its group and transaction coordinators, on a manual clock.
pub fn manual_broker(dir: &Path) -> (Arc<Broker>, Arc<ManualClock>) {
    let clock = ManualClock::new(T0);
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    let b = Arc::new(
        Broker::open(
            config,
            mirrorlog_segment::io::default_storage(),
            clock.clone(),
        )
        .unwrap(),
    );
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b).unwrap();
    (b, clock)
}

/// [`manual_broker`] holding topic `orders`, one partition.
pub fn manual_broker_with_orders(dir: &Path) -> (Arc<Broker>, Arc<ManualClock>) {
    let (b, clock) = manual_broker(dir);
    b.topics
        .create(
            &b.logs,
            "orders",
            1,
            mirrorlog_engine::config::LogConfig::default(),
            None,
        )
        .unwrap();
    (b, clock)
}

/// Kafka's partition of a group or transactional id in an internal topic of `partitions`
/// partitions: `abs(String.hashCode) % partitions`.
pub fn partition_for(id: &str, partitions: i32) -> i32 {
    let h = id
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}

/// The log end of `topic`-`partition`.
pub fn log_end(b: &Broker, topic: &str, partition: i32) -> i64 {
    b.partition(topic, partition)
        .expect("hosted")
        .read()
        .log_end_offset()
        .get()
}

/// Answers `request` through the broker's dispatcher, as for a connection of client `t`.
pub fn call(b: &Broker, api: ApiKey, version: i16, request: RequestKind) -> ResponseKind {
    let ctx = RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some("t".into()),
        api_key: api,
        api_version: version,
        correlation_id: 1,
    };
    Handler::handle(b, &ctx, &RequestHeader::default(), request).expect("an answer")
}

/// A Fetch of `topic`-`partition` from its log end that waits up to 600 s for one byte.
fn long_poll_at_end(b: &Broker, topic: &str, partition: i32) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 600_000;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.session_epoch = -1;
    let mut fp = FetchPartition::default();
    fp.partition = partition;
    fp.fetch_offset = log_end(b, topic, partition);
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions.push(fp);
    r.topics.push(t);
    r
}

/// Starts a long poll on `topic`-`partition` from its log end on its own thread and returns
/// once it is parked; its answer comes through the receiver.
pub fn park_long_poll(b: &Arc<Broker>, topic: &str, partition: i32) -> Receiver<FetchResponse> {
    let parked = b.appends.waiting();
    let req = long_poll_at_end(b, topic, partition);
    let (tx, rx) = std::sync::mpsc::channel();
    let b2 = b.clone();
    std::thread::spawn(move || {
        let _ = tx.send(mirrorlog_broker::handlers::fetch::handle(&b2, req, 12));
    });
    let hang_guard = Instant::now() + HANG_GUARD;
    while b.appends.waiting() == parked {
        assert!(
            Instant::now() < hang_guard,
            "the fetch of {topic}-{partition} never long-polled"
        );
        std::thread::yield_now();
    }
    rx
}

/// The records a long poll answered with (bytes; 0 when it answered empty).
pub fn answered_bytes(resp: &FetchResponse) -> usize {
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, 0, "{d:?}");
    d.records.as_ref().map_or(0, |r| r.len())
}

/// Ends every long poll still parked (as shutdown does: they answer with what they have), so
/// that a failing check does not leave one waiting out its 600 s; then returns `rx`'s answer.
pub fn end_and_answer(b: &Broker, rx: &Receiver<FetchResponse>) -> FetchResponse {
    b.appends.close();
    rx.recv_timeout(HANG_GUARD).expect("the long poll answers")
}
