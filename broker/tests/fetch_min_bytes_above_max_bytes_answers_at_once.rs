//! Kafka's `KafkaApis.handleFetchRequest` caps a fetch's `min_bytes` at its `max_bytes` (itself
//! capped by the broker's `fetch.max.bytes`): a fetch can never carry more than that, so a
//! response that holds it is enough. The broker compared the bytes read with the request's
//! `min_bytes` alone, so a consumer asking more than the response may carry waited out its whole
//! `max_wait_ms` on every fetch, its data there.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, session_fetch};
use common::long_poll::HANG_GUARD;
use common::produce::{batch, request};
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::produce;
use std::sync::{Arc, mpsc};

/// Asserts that a fetch of `t-0` from 0 asking `min_bytes` 1 MiB with `max_bytes` answers
/// without long-polling, on a broker whose `fetch.max.bytes` is `broker_max`: the partition holds
/// one batch larger than the smaller of the two, which the first partition's read returns whole.
fn answers_at_once(broker_max: i32, max_bytes: i32) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.fetch_max_bytes = broker_max;
    let (b, _) = broker_with(config, &[("t", 1)]);
    let b = Arc::new(b);
    let records = batch(&[b'v'; 5000]);
    let resp = produce::handle(&b, request(1, vec![("t", 0, Some(records.clone()))]), 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);

    let mut r = session_fetch(0, -1, &[("t", 0, 0)]);
    r.max_wait_ms = 600_000;
    r.min_bytes = 1 << 20;
    r.max_bytes = max_bytes;
    let (tx, rx) = mpsc::channel();
    let fetcher = Arc::clone(&b);
    std::thread::spawn(move || {
        let _ = tx.send(fetch_at(&fetcher, r, 12));
    });
    // The answer comes from the first read, which registers nothing; a fetch that registers
    // for appends is long-polling.
    let hang_guard = std::time::Instant::now() + HANG_GUARD;
    let resp = loop {
        if let Ok(resp) = rx.try_recv() {
            break resp;
        }
        assert_eq!(
            b.appends.waiting(),
            0,
            "broker max {broker_max}, max_bytes {max_bytes}: the fetch long-polls with its data there"
        );
        assert!(std::time::Instant::now() < hang_guard, "the fetch hung");
        std::thread::yield_now();
    };
    let d = &resp.responses[0].partitions[0];
    assert_eq!(d.error_code, 0);
    assert_eq!(d.records.as_ref().unwrap().len(), records.len());
}

#[test]
fn a_fetch_asking_more_than_its_max_bytes_answers_at_once() {
    answers_at_once(50 << 20, 4096);
}

#[test]
fn a_fetch_asking_more_than_the_brokers_fetch_max_bytes_answers_at_once() {
    answers_at_once(4096, 50 << 20);
}
