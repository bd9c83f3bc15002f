//! A client batch whose CRC is sound but whose records do not frame as its `recordsCount`
//! declares — more records than declared, fewer, a compressed batch of none, a count its bytes
//! cannot hold — or whose `lastOffsetDelta` is below `recordsCount − 1` is refused as Kafka's
//! `LogValidator` refuses it: `validateBatch` ("Inconsistent batch offset range") and the record
//! iterators ("Incorrect declared batch size, premature EOF reached" / "records still
//! remaining") throw `InvalidRecordException`, `INVALID_RECORD`. It was `CORRUPT_MESSAGE`,
//! which producers retry: the same bad batch was resent until the delivery timeout.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::batch::{compute_crc, field};
use mirrorlog_segment::{BatchBuilder, Compression};

/// `batch` with `recordsCount` and `lastOffsetDelta` set to agree with each other on `count`
/// records, and its CRC recomputed: only the records disagree.
fn declaring(batch: Bytes, count: i32) -> Bytes {
    declaring_delta(batch, count, count - 1)
}

/// `batch` with `recordsCount` `count` and `lastOffsetDelta` `delta`, its CRC recomputed.
fn declaring_delta(batch: Bytes, count: i32, delta: i32) -> Bytes {
    let mut b = batch.to_vec();
    b[field::RECORDS_COUNT..field::RECORDS_COUNT + 4].copy_from_slice(&count.to_be_bytes());
    b[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4].copy_from_slice(&delta.to_be_bytes());
    let crc = compute_crc(&b);
    b[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

fn records(codec: Compression, n: usize) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..n {
        b.append(TimestampMs(T0), None, Some(format!("v{i}").as_bytes()), &[]);
    }
    b.build().into_bytes()
}

#[test]
fn records_that_do_not_match_the_declared_count_are_an_invalid_record() {
    let cases = [
        (
            "2 records declared as 3",
            declaring(records(Compression::None, 2), 3),
        ),
        (
            "2 records declared as 1",
            declaring(records(Compression::None, 2), 1),
        ),
        (
            "2 gzip records declared as 3",
            declaring(records(Compression::Gzip, 2), 3),
        ),
        (
            "2 gzip records declared as 1",
            declaring(records(Compression::Gzip, 2), 1),
        ),
        (
            "a gzip batch of no records declared as 1",
            declaring(records(Compression::Gzip, 0), 1),
        ),
        (
            "3 records with lastOffsetDelta 1",
            declaring_delta(records(Compression::None, 3), 3, 1),
        ),
        (
            "1 record declared as -1",
            declaring_delta(records(Compression::None, 1), -1, 0),
        ),
    ];
    for (case, batch) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
        let r = log.append_as_leader(batch, LeaderEpoch(0), LeaderOrigin::Client);
        assert!(
            matches!(r, Err(EngineError::InvalidRecord(_))),
            "{case}: {r:?}"
        );
        assert_eq!(log.log_end_offset().get(), 0, "{case}: nothing appended");
    }
}
