//! A v2 client batch whose records' offset deltas are not 0, 1, 2, … while its header is
//! consistent (`lastOffsetDelta` = `recordsCount` − 1) was refused `INVALID_RECORD`. Kafka's
//! `LogValidator` accepts it: uncompressed in place, the deltas kept (`assignOffsetsNonCompressed`
//! checks no record offset); compressed, rebuilt with consecutive offsets
//! (`validateMessagesAndAssignOffsetsCompressed` turns `inPlaceAssignment` off at the first
//! record whose offset is not the expected one, for old clients that set inner offsets wrongly),
//! and rebuilt so too whenever the topic's codec differs.

use crate::common;

use bytes::{Bytes, BytesMut};
use common::*;
use mirrorlog_engine::config::CompressionConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, PartitionLog, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::batch::field;
use mirrorlog_segment::{BatchBuilder, BatchHeaderMut, Batches, Compression, RecordBatch};

/// Three records at deltas 0, 3 and 7 under a header saying 3 records, `lastOffsetDelta` 2.
fn gapped_batch(codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for (i, delta) in [0i64, 3, 7].into_iter().enumerate() {
        let key = format!("k{i}");
        b.append_at(
            Offset(delta),
            TimestampMs(T0 - 3 + i as i64),
            Some(key.as_bytes()),
            Some(b"v"),
            &[],
        );
    }
    let mut buf = BytesMut::from(&b.build().into_bytes()[..]);
    buf[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]
        .copy_from_slice(&2i32.to_be_bytes());
    BatchHeaderMut::new(&mut buf).unwrap().update_crc();
    let out = buf.freeze();
    RecordBatch::new(out.clone()).unwrap().validate().unwrap();
    out
}

/// The log (in `dir`) and the batch stored at offset 2, after a first client batch of two
/// records.
fn append_after_two(
    dir: &tempfile::TempDir,
    topic: CompressionConfig,
    batch: Bytes,
) -> (PartitionLog, RecordBatch) {
    let mut c = small_config();
    c.compression = topic;
    let mut log = open(dir.path(), c, clock(), Shutdown::Clean);
    log.append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let info = log
        .append_as_leader(batch, LeaderEpoch(0), LeaderOrigin::Client)
        .expect("Kafka accepts the batch");
    assert_eq!(
        (info.first_offset, info.last_offset),
        (Offset(2), Offset(4))
    );
    let data = log
        .read(Offset(2), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let stored = Batches::new(data.records.unwrap().slice.read_all().unwrap())
        .map(|b| b.unwrap())
        .find(|b| b.base_offset() == Offset(2))
        .unwrap();
    stored.validate().unwrap();
    (log, stored)
}

/// (offset, timestamp, key) of each stored record.
fn records(b: &RecordBatch) -> Vec<(i64, i64, String)> {
    b.records()
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let key = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
            (r.offset.get(), r.timestamp.get(), key)
        })
        .collect()
}

fn expected(offsets: [i64; 3]) -> Vec<(i64, i64, String)> {
    (0..3)
        .map(|i| (offsets[i], T0 - 3 + i as i64, format!("k{i}")))
        .collect()
}

#[test]
fn an_uncompressed_batch_keeps_its_deltas_in_place() {
    let batch = gapped_batch(Compression::None);
    let dir = tempfile::tempdir().unwrap();
    let (mut log, stored) = append_after_two(&dir, CompressionConfig::Producer, batch.clone());
    assert_eq!(stored.last_offset(), Offset(4));
    assert_eq!(records(&stored), expected([2, 5, 9]));
    // In place: the records' bytes are the client's.
    let area = |b: &[u8]| b[mirrorlog_segment::batch::RECORD_BATCH_OVERHEAD..].to_vec();
    assert_eq!(area(stored.as_bytes()), area(&batch));
    // The next append follows the header's last offset.
    let next = log
        .append_as_leader(client_batch(1, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(next.first_offset, Offset(5));
}

#[test]
fn a_compressed_batch_is_rebuilt_with_consecutive_offsets() {
    for (codec, topic) in [
        (Compression::Gzip, CompressionConfig::Producer),
        (Compression::Lz4, CompressionConfig::Lz4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (_log, stored) = append_after_two(&dir, topic, gapped_batch(codec));
        assert_eq!(stored.compression().unwrap(), codec, "{codec:?}");
        assert_eq!(stored.last_offset(), Offset(4));
        assert_eq!(records(&stored), expected([2, 3, 4]), "{codec:?}");
    }
}

#[test]
fn a_batch_recompressed_for_its_topic_takes_consecutive_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let (_log, stored) = append_after_two(
        &dir,
        CompressionConfig::Gzip,
        gapped_batch(Compression::None),
    );
    assert_eq!(stored.compression().unwrap(), Compression::Gzip);
    assert_eq!(records(&stored), expected([2, 3, 4]));
}
