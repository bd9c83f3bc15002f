//! Kafka's `ProduceRequest.validateRecords` walks a partition's records with `MemoryRecords`'s
//! batch iterator (`ByteBufferLogInputStream`), which stops, without an error, at a batch the
//! buffer does not hold whole; the log's append (`analyzeAndValidateRecords`,
//! `trimInvalidBytes`) then keeps only the bytes of the whole batches. So one whole batch
//! followed by a partial one is appended, the tail dropped. Only a tail whose framing is
//! corrupt (a length below 14, a magic outside 0–2) fails the partition (`CORRUPT_MESSAGE`),
//! and a second whole batch `INVALID_RECORD`. mirrorlog refused every such tail
//! `INVALID_RECORD`.

use crate::common;

use common::produce::{answered, batch, request, running_with_topic, send};
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_index::Offset;

const CORRUPT_MESSAGE: i16 = 2;
const INVALID_RECORD: i16 = 87;

/// `tail` with its 4-byte length field (bytes 8–11) set to `length` and its magic (byte 16)
/// to `magic`, where it has those bytes.
fn framed(mut tail: Vec<u8>, length: i32, magic: u8) -> Vec<u8> {
    if tail.len() >= 12 {
        tail[8..12].copy_from_slice(&length.to_be_bytes());
    }
    if tail.len() > 16 {
        tail[16] = magic;
    }
    tail
}

#[test]
fn a_whole_batch_is_appended_and_a_partial_one_after_it_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 8);
    let b = &running.broker;

    let whole = batch(b"whole");
    let next = batch(b"next batch");
    let with_tail = |tail: &[u8]| {
        let mut v = whole.to_vec();
        v.extend_from_slice(tail);
        Some(bytes::Bytes::from(v))
    };
    let r = request(
        1,
        vec![
            // The next batch cut short: dropped.
            ("t", 0, with_tail(&next[..next.len() - 1])),
            ("t", 1, with_tail(&next[..40])),
            // Too short to hold a length (12 bytes): dropped.
            ("t", 2, with_tail(&next[..5])),
            // A legacy (v1) magic, cut short: still only a partial batch to Kafka.
            ("t", 3, with_tail(&framed(next[..30].to_vec(), 60, 1))),
            // A second whole batch: more than one batch.
            ("t", 4, with_tail(&next)),
            // A length below Kafka's smallest record (14): corrupt.
            ("t", 5, with_tail(&framed(next[..12].to_vec(), 13, 2))),
            // A magic Kafka does not know: corrupt, even in a partial batch.
            ("t", 6, with_tail(&framed(next[..30].to_vec(), 60, 7))),
            // A short length, but too few bytes (< 17) to reach the magic: dropped.
            ("t", 7, with_tail(&framed(next[..16].to_vec(), 20, 2))),
        ],
    );
    let resp = send(running.addr, 9, &r);
    let codes: Vec<(i32, i16)> = answered(&resp)
        .into_iter()
        .map(|(_, p, e)| (p, e))
        .collect();
    assert_eq!(
        codes,
        vec![
            (0, 0),
            (1, 0),
            (2, 0),
            (3, 0),
            (4, INVALID_RECORD),
            (5, CORRUPT_MESSAGE),
            (6, CORRUPT_MESSAGE),
            (7, 0),
        ]
    );
    for p in [0, 1, 2, 3, 7] {
        let h = b.partition("t", p).unwrap();
        assert_eq!(h.read().log_end_offset().get(), 1, "t-{p}: the whole batch");
        let info = h
            .read()
            .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
            .unwrap();
        let stored = info.records.unwrap().slice.read_all().unwrap();
        assert_eq!(
            stored.len(),
            whole.len(),
            "t-{p}: exactly the whole batch, no tail"
        );
        assert!(stored.windows(5).any(|w| w == b"whole"));
    }
    for p in [4, 5, 6] {
        let end = b.partition("t", p).unwrap().read().log_end_offset().get();
        assert_eq!(end, 0, "t-{p}: nothing appended");
    }
    running.shutdown().unwrap();
}
