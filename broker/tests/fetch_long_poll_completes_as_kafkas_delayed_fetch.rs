//! A Fetch that read fewer than `min_bytes` waits (Kafka's `DelayedFetch`), and Kafka decides
//! when it is done from where each partition's read started and where its bound (high watermark
//! or last stable offset) lies — not from the bytes a read would return: the wait ends at once
//! when a bound lies in a later segment than the read (the read stops at its segment's end),
//! when a fetch offset is above its bound, or when the bytes below the bounds, each capped at its
//! partition's `partition_max_bytes`, reach `min_bytes`. The broker counted the bytes each read
//! returned, so a consumer with a large `fetch.min.bytes` waited out its `max_wait_ms` at every
//! segment end of a backlog, and whenever a later partition's first batch did not fit the
//! response.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, session_fetch};
use common::long_poll::HANG_GUARD;
use common::produce::{batch, request};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::produce;
use mirrorlog_index::Offset;
use std::sync::{Arc, mpsc};
use std::time::Instant;

fn broker(dir: &tempfile::TempDir, partitions: i32) -> Arc<Broker> {
    let config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    Arc::new(broker_with(config, &[("t", partitions)]).0)
}

fn produce_to(b: &Broker, partition: i32, records: bytes::Bytes) {
    let resp = produce::handle(b, request(1, vec![("t", partition, Some(records))]), 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// Runs `r` (made to wait up to 600 s) and returns its answer, failing if it ever parks in
/// the broker's notifier: a fetch that registers for appends is waiting for more.
fn answered_without_waiting(b: &Arc<Broker>, mut r: FetchRequest) -> FetchResponse {
    r.max_wait_ms = 600_000;
    let (tx, rx) = mpsc::channel();
    let fetcher = Arc::clone(b);
    std::thread::spawn(move || {
        let _ = tx.send(fetch_at(&fetcher, r, 12));
    });
    let hang_guard = Instant::now() + HANG_GUARD;
    loop {
        if let Ok(resp) = rx.try_recv() {
            return resp;
        }
        assert_eq!(b.appends.waiting(), 0, "the fetch waits for more bytes");
        assert!(Instant::now() < hang_guard, "the fetch hung");
        std::thread::yield_now();
    }
}

fn records_len(resp: &FetchResponse, i: usize) -> usize {
    let d = &resp.responses[0].partitions[i];
    assert_eq!(d.error_code, 0);
    d.records.as_ref().map_or(0, |r| r.len())
}

#[test]
fn a_bound_in_a_later_segment_than_the_read_ends_the_wait_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(&dir, 1);
    let first = batch(&[b'a'; 300]);
    let second = batch(&[b'b'; 300]);
    produce_to(&b, 0, first.clone());
    b.partition("t", 0)
        .unwrap()
        .write()
        .roll(Offset(1))
        .unwrap();
    produce_to(&b, 0, second.clone());

    // Both batches would make `min_bytes`, but a read stops at its segment's end.
    let mut r = session_fetch(0, -1, &[("t", 0, 0)]);
    r.min_bytes = (first.len() + second.len()) as i32;
    let resp = answered_without_waiting(&b, r);
    assert_eq!(records_len(&resp, 0), first.len());
}

#[test]
fn a_later_partition_whose_first_batch_does_not_fit_still_counts_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(&dir, 2);
    let small = batch(&[b'a'; 100]);
    let big = batch(&[b'b'; 1000]);
    produce_to(&b, 0, small.clone());
    produce_to(&b, 1, big.clone());

    // Partition 1's batch does not fit what partition 0 left of `max_bytes`: it answers no
    // records, but its bytes below the high watermark count towards `min_bytes`, as Kafka's.
    let mut r = session_fetch(0, -1, &[("t", 0, 0), ("t", 1, 0)]);
    r.max_bytes = (small.len() + big.len() / 2) as i32;
    r.min_bytes = r.max_bytes;
    let resp = answered_without_waiting(&b, r);
    assert_eq!(records_len(&resp, 0), small.len());
    assert_eq!(records_len(&resp, 1), 0);
}

#[test]
fn a_read_committed_fetch_above_the_last_stable_offset_answers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(&dir, 1);
    // An open transaction holds the last stable offset at 0; the high watermark is 1.
    let mut open = request(1, vec![("t", 0, Some(common::produce::txn_batch(7, 0, 0)))]);
    open.transactional_id = Some(TransactionalId(StrBytes::from_static_str("tx")));
    let resp = produce::handle(&b, open, 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);

    // Kafka's `DelayedFetch` (case F): a fetch offset above the bound completes the wait.
    let mut r = session_fetch(0, -1, &[("t", 0, 1)]);
    r.isolation_level = 1;
    let resp = answered_without_waiting(&b, r);
    let d = &resp.responses[0].partitions[0];
    assert_eq!(
        (d.error_code, d.high_watermark, d.last_stable_offset),
        (0, 1, 0)
    );
    assert_eq!(records_len(&resp, 0), 0);
}

#[test]
fn a_wait_ends_once_the_bytes_below_the_bound_reach_min_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(&dir, 1);
    let one = batch(&[b'a'; 200]);
    let mut r = session_fetch(0, -1, &[("t", 0, 0)]);
    r.max_wait_ms = 600_000;
    r.min_bytes = (2 * one.len()) as i32;
    let (tx, rx) = mpsc::channel();
    let fetcher = Arc::clone(&b);
    std::thread::spawn(move || {
        let _ = tx.send(fetch_at(&fetcher, r, 12));
    });
    common::long_poll::wait_until_long_polling(&b);
    // One batch is not enough: the answer, when it comes, holds both.
    produce_to(&b, 0, one.clone());
    produce_to(&b, 0, one.clone());
    let resp = rx.recv_timeout(HANG_GUARD).expect("the fetch hung");
    assert_eq!(records_len(&resp, 0), 2 * one.len());
}
