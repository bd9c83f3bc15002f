//! Graceful shutdown must not wait out a consumer's long poll.
//!
//! A Fetch may ask to wait up to `max_wait_ms` (an `i32`: up to ~24 days) for data. Kafka's
//! shutdown does not wait for parked fetches (the purgatory and the socket server are shut
//! down). Here `RunningBroker::shutdown` waits for every in-flight request, and the fetch's wait
//! on the `AppendNotifier` only ends at its deadline or on an append, so SIGTERM hangs for as
//! long as any consumer's `fetch.max.wait.ms`.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader, RequestKind, TopicName};
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn fetch_frame(topic: &str, max_wait_ms: i32) -> Vec<u8> {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = 0;
    p.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions.push(p);
    let mut r = FetchRequest::default();
    r.replica_id = kafka_protocol::messages::BrokerId(-1);
    r.max_wait_ms = max_wait_ms;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.topics.push(t);
    let version = 4;
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("long-poller")))
        .encode(&mut buf, ApiKey::Fetch.request_header_version(version))
        .unwrap();
    RequestKind::Fetch(r).encode(&mut buf, version).unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

#[test]
fn shutdown_does_not_wait_for_a_long_polling_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let running = RunningBroker::start_local(dir.path(), 1).unwrap();
    running
        .broker
        .topics
        .create(&running.broker.logs, "t", 1, LogConfig::default(), None)
        .unwrap();

    // An empty partition: the fetch parks for up to ten minutes.
    let mut s = TcpStream::connect(running.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(&fetch_frame("t", 600_000)).unwrap();
    // Make sure the request is parked, not still on its way.
    let mut b = [0u8; 4];
    assert!(s.read(&mut b).is_err(), "the fetch answered at once");

    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(running.shutdown().map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(Duration::from_secs(15)) {
        Ok(r) => r.unwrap(),
        Err(_) => panic!("graceful shutdown still waiting for the long poll after 15 s"),
    }
}
