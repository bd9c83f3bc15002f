//! A waiting Fetch judges its wait from where its first read started (segment and byte position)
//! and where its bound lies now (Kafka's `DelayedFetch`). A mirror's log alignment truncates a
//! log that consumers read, and may append past the fetch offset again before the waiting fetch
//! looks (its wake-up comes once the mirror's round is over): the read's position then names
//! bytes that are gone. The broker compared it with the new bound all the same — a bound in the
//! same segment but at a lower position counted no bytes, a bound in a segment below the read's
//! counted nothing — and the fetch waited out its `max_wait_ms` with records to answer.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, session_fetch};
use common::long_poll::{HANG_GUARD, wait_until_long_polling};
use common::produce::{batch, request};
use kafka_protocol::messages::FetchResponse;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::produce;
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use std::sync::{Arc, mpsc};

fn produce_to(b: &Broker, records: bytes::Bytes) {
    let resp = produce::handle(b, request(1, vec![("t", 0, Some(records))]), 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// One batch of two small records.
fn two_small_records() -> bytes::Bytes {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(1_700_000_000_000), None, Some(b"x"), &[]);
    bb.append(TimestampMs(1_700_000_000_000), None, Some(b"y"), &[]);
    bb.build().into_bytes()
}

/// Partition 0 of `t` holds two large one-record batches (offsets 0 and 1), the second in a
/// segment of its own when `roll`. A fetch from offset 2 waits; the log is truncated to 1 (no
/// wake-up: the mirror's comes at the end of its round) and a batch of two small records
/// (offsets 1 and 2) is appended, which wakes it. Returns its answer, failing if it hangs.
fn fetch_across_a_truncation(roll: bool) -> FetchResponse {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    let b = Arc::new(broker_with(config, &[("t", 1)]).0);
    produce_to(&b, batch(&[b'a'; 300]));
    if roll {
        b.partition("t", 0)
            .unwrap()
            .write()
            .roll(Offset(1))
            .unwrap();
    }
    produce_to(&b, batch(&[b'b'; 300]));

    let mut r = session_fetch(0, -1, &[("t", 0, 2)]);
    r.max_wait_ms = 600_000;
    let (tx, rx) = mpsc::channel();
    let fetcher = Arc::clone(&b);
    std::thread::spawn(move || {
        let _ = tx.send(fetch_at(&fetcher, r, 12));
    });
    wait_until_long_polling(&b);
    assert!(
        b.partition("t", 0)
            .unwrap()
            .write()
            .truncate_to(Offset(1))
            .unwrap()
    );
    produce_to(&b, two_small_records());
    let resp = rx.recv_timeout(HANG_GUARD);
    // Ends a hung fetch before failing, so that it does not outlive the test.
    b.appends.close();
    resp.expect("the fetch waited out max_wait_ms with records at its offset")
}

fn assert_answers_the_new_batch(resp: &FetchResponse) {
    let d = &resp.responses[0].partitions[0];
    assert_eq!((d.error_code, d.high_watermark), (0, 3));
    // The batch appended after the truncation: at offset 1, holding offset 2.
    let records = d.records.as_deref().expect("records");
    assert_eq!(records.len(), two_small_records().len());
    assert_eq!(records[..8], 1i64.to_be_bytes());
}

#[test]
fn a_bound_below_the_reads_position_in_its_segment_ends_the_wait() {
    assert_answers_the_new_batch(&fetch_across_a_truncation(false));
}

#[test]
fn a_bound_in_a_segment_below_the_reads_ends_the_wait() {
    assert_answers_the_new_batch(&fetch_across_a_truncation(true));
}
