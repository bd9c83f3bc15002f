//! A client batch whose codec id Kafka does not know (5–7), or whose compressed records do not
//! decompress, is not a corrupt batch to Kafka: `CompressionType.forId` throws an
//! `IllegalArgumentException` and the decompressing iterator a `KafkaException`, which
//! `ReplicaManager.appendToLocalLog` answers as an unexpected error, `UNKNOWN_SERVER_ERROR`
//! (not retriable, with the partition's log start offset and no message). Before Produce v7,
//! `ProduceRequest.validateRecords` reads the codec itself, and its exception, which no
//! partition catches, fails the whole request. mirrorlog answered these CORRUPT_MESSAGE, which
//! a producer retries until its delivery timeout. A CRC failure stays CORRUPT_MESSAGE.

use crate::common;

use bytes::Bytes;
use common::produce::{answered, batch, request, running_with_topic, send};
use kafka_protocol::ResponseError;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::batch::{compute_crc, field};
use mirrorlog_segment::{BatchBuilder, Compression};

const UNKNOWN: i16 = ResponseError::UnknownServerError.code();
const CORRUPT: i16 = ResponseError::CorruptMessage.code();

/// `records` with the CRC computed again.
fn with_crc(mut b: Vec<u8>) -> Bytes {
    let crc = compute_crc(&b);
    b[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

/// A plain batch flagged with codec `id`, its CRC matching.
fn with_codec(id: u8) -> Bytes {
    let mut b = batch(b"v").to_vec();
    b[field::ATTRIBUTES + 1] = (b[field::ATTRIBUTES + 1] & !0x07) | id;
    with_crc(b)
}

/// A batch of `codec` whose compressed records area is overwritten with garbage, its CRC
/// matching.
fn undecompressible(codec: Compression) -> Bytes {
    let mut bb = BatchBuilder::new().compression(codec);
    bb.append(TimestampMs(1_700_000_000_000), None, Some(&[b'v'; 64]), &[]);
    bb.append(TimestampMs(1_700_000_000_000), None, Some(&[b'w'; 64]), &[]);
    let mut b = bb.build().into_bytes().to_vec();
    for x in &mut b[61..] {
        *x = 0x5a;
    }
    with_crc(b)
}

/// The log end of t-`p`.
fn log_end(running: &RunningBroker, p: i32) -> i64 {
    common::internal_topics::log_end(&running.broker, "t", p)
}

#[test]
fn an_unknown_codec_or_undecompressible_records_fail_their_partition_from_v7() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    let mut cases: Vec<(String, Bytes)> = (5..=7)
        .map(|id| (format!("codec id {id}"), with_codec(id)))
        .collect();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        cases.push((format!("{codec} garbage"), undecompressible(codec)));
    }
    let mut appended = 0;
    for (case, bad) in cases {
        for version in [7, 9] {
            let r = request(
                1,
                vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(bad.clone()))],
            );
            let resp = send(running.addr, version, &r);
            assert_eq!(
                answered(&resp),
                vec![t(0, 0), t(1, UNKNOWN)],
                "{case}, v{version}"
            );
            appended += 1;
            let p = &resp.responses[0].partition_responses[1];
            // Kafka's `unknownLogAppendInfoWithLogStartOffset`: the partition's log start.
            assert_eq!(
                (p.base_offset, p.log_append_time_ms, p.log_start_offset),
                (-1, -1, 0),
                "{case}"
            );
            assert_eq!(p.error_message, None, "{case}");
        }
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (appended, 0));

    // The CRC is checked first: a mismatch is still CORRUPT_MESSAGE.
    let mut crc_off = with_codec(5).to_vec();
    crc_off[field::CRC] ^= 1;
    let r = request(1, vec![("t", 1, Some(Bytes::from(crc_off)))]);
    assert_eq!(answered(&send(running.addr, 9, &r)), vec![t(1, CORRUPT)]);
    running.shutdown().unwrap();
}

#[test]
fn an_unknown_codec_fails_the_whole_request_before_v7() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let t = |p: i32, code: i16| ("t".to_string(), p, code);
    for version in [3, 6] {
        let r = request(
            1,
            vec![("t", 0, Some(batch(b"a"))), ("t", 1, Some(with_codec(6)))],
        );
        let resp = send(running.addr, version, &r);
        assert_eq!(
            answered(&resp),
            vec![t(0, UNKNOWN), t(1, UNKNOWN)],
            "v{version}"
        );
        for p in &resp.responses[0].partition_responses {
            assert_eq!(
                (p.base_offset, p.log_append_time_ms, p.log_start_offset),
                (-1, -1, -1)
            );
        }
        // Named first and again later with a good batch: Kafka's loop still reads it.
        let r = request(
            1,
            vec![
                ("t", 1, Some(with_codec(6))),
                ("t", 0, Some(batch(b"a"))),
                ("t", 1, Some(batch(b"b"))),
            ],
        );
        assert_eq!(
            answered(&send(running.addr, version, &r)),
            vec![t(1, UNKNOWN), t(0, UNKNOWN)],
            "v{version}"
        );
    }
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (0, 0));

    // Kafka reads the codec only of a known partition's whole v2 first batch.
    let r = request(
        1,
        vec![
            ("t", 0, Some(batch(b"a"))),
            ("nope", 0, Some(with_codec(6))),
        ],
    );
    assert_eq!(
        answered(&send(running.addr, 6, &r)),
        vec![
            t(0, 0),
            (
                "nope".to_string(),
                0,
                ResponseError::UnknownTopicOrPartition.code()
            )
        ]
    );
    // Decompression is the log's: the partition's own error, as from v7.
    let r = request(
        1,
        vec![
            ("t", 0, Some(batch(b"a"))),
            ("t", 1, Some(undecompressible(Compression::Lz4))),
        ],
    );
    assert_eq!(
        answered(&send(running.addr, 6, &r)),
        vec![t(0, 0), t(1, UNKNOWN)]
    );
    assert_eq!((log_end(&running, 0), log_end(&running, 1)), (2, 0));
    running.shutdown().unwrap();
}
