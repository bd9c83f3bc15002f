//! Kafka's `UnifiedLog.analyzeAndValidateRecords` checks a client batch's base offset (0, else
//! `INVALID_RECORD`) and size (`max.message.bytes`, else `MESSAGE_TOO_LARGE`) before its CRC,
//! and `LogValidator` the rest after. mirrorlog checked the CRC first and the size last, so a
//! batch both too large and corrupt was `CORRUPT_MESSAGE` — retriable: the producer resent it
//! as it was rather than splitting it — and a too-large control batch `INVALID_RECORD`. A batch
//! cut short of the 61-byte v2 header (Kafka's iterator frames one from a length of 14) went
//! without the base offset check, so one not at 0 was `CORRUPT_MESSAGE` where Kafka answers
//! `INVALID_RECORD`.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::LeaderEpoch;
use mirrorlog_segment::batch::{LOG_OVERHEAD, compute_crc, field};

/// `batch` with `at..at + bytes.len()` replaced, then its CRC recomputed when `fix_crc`.
fn patched(batch: &Bytes, at: usize, bytes: &[u8], fix_crc: bool) -> Bytes {
    let mut b = batch.to_vec();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    if fix_crc {
        let crc = compute_crc(&b);
        b[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    }
    Bytes::from(b)
}

/// The first `size` bytes of `batch`, its length field saying so (shorter than the v2 header,
/// Kafka's iterator still frames it from a length of 14).
fn cut(batch: &Bytes, size: usize) -> Bytes {
    let length = (size - LOG_OVERHEAD) as i32;
    let mut b = batch[..size].to_vec();
    b[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&length.to_be_bytes());
    Bytes::from(b)
}

fn corrupt(batch: &Bytes) -> Bytes {
    let last = batch.len() - 1;
    patched(batch, last, &[batch[last] ^ 0xff], false)
}

/// The Kafka error an engine error is answered with, for the cases here.
fn kafka_error(e: &EngineError) -> &'static str {
    match e {
        EngineError::InvalidRecord(_) => "INVALID_RECORD",
        EngineError::RecordTooLarge { .. } => "MESSAGE_TOO_LARGE",
        EngineError::Corrupt(_) => "CORRUPT_MESSAGE",
        _ => "other",
    }
}

#[test]
fn base_offset_and_size_come_before_the_crc_and_the_validator() {
    let one = client_batch(1, T0);
    let big = client_batch(20, T0);
    let control = patched(&big, field::ATTRIBUTES + 1, &[0x20], true);
    let cases = [
        (
            "base offset 5, corrupt",
            corrupt(&patched(
                &one,
                field::BASE_OFFSET,
                &5i64.to_be_bytes(),
                false,
            )),
            "INVALID_RECORD",
        ),
        ("too large, corrupt", corrupt(&big), "MESSAGE_TOO_LARGE"),
        ("too large, a control batch", control, "MESSAGE_TOO_LARGE"),
        ("within bounds, corrupt", corrupt(&one), "CORRUPT_MESSAGE"),
        // Cut short of the 61-byte header: Kafka's CRC check (`isValid`) fails it, after the
        // base offset check.
        (
            "cut to 55 bytes, base offset 5",
            cut(
                &patched(&one, field::BASE_OFFSET, &5i64.to_be_bytes(), false),
                55,
            ),
            "INVALID_RECORD",
        ),
        (
            "cut to 55 bytes, base offset 0",
            cut(&one, 55),
            "CORRUPT_MESSAGE",
        ),
        (
            "cut to 26 bytes, base offset 5",
            cut(
                &patched(&one, field::BASE_OFFSET, &5i64.to_be_bytes(), false),
                26,
            ),
            "INVALID_RECORD",
        ),
    ];
    assert!(big.len() > 200 && one.len() < 200);
    for (case, batch, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut c = small_config();
        c.max_message_bytes = 200;
        let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
        let r = log.append_as_leader(batch, LeaderEpoch(0), LeaderOrigin::Client);
        let got = r.as_ref().err().map(kafka_error);
        assert_eq!(got, Some(expected), "{case}: {r:?}");
    }
}
