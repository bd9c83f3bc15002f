use super::*;
use proptest::prelude::*;

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

#[derive(Debug, Clone)]
struct Rec {
    ts: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

fn rec_strategy() -> impl Strategy<Value = Rec> {
    (
        0i64..2_000_000_000_000,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..10),
                proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
            ),
            0..4,
        ),
    )
        .prop_map(|(ts, key, value, headers)| Rec {
            ts,
            key,
            value,
            headers,
        })
}

#[derive(Debug, Clone)]
struct Spec {
    codec: Compression,
    base_offset: i64,
    leader_epoch: i32,
    producer: Option<(i64, i16, i32)>,
    transactional: bool,
    log_append_time: Option<i64>,
    records: Vec<Rec>,
}

fn spec_strategy() -> impl Strategy<Value = Spec> {
    (
        proptest::sample::select(CODECS.to_vec()),
        0i64..(1 << 40),
        -1i32..1000,
        proptest::option::of((0i64..(1 << 40), 0i16..100, 0i32..i32::MAX)),
        any::<bool>(),
        proptest::option::of(0i64..2_000_000_000_000),
        proptest::collection::vec(rec_strategy(), 1..20),
    )
        .prop_map(
            |(codec, base_offset, leader_epoch, producer, transactional, lat, records)| Spec {
                codec,
                base_offset,
                leader_epoch,
                producer,
                transactional,
                log_append_time: lat,
                records,
            },
        )
}

fn build(spec: &Spec) -> RecordBatch {
    let mut b = BatchBuilder::new()
        .compression(spec.codec)
        .base_offset(Offset(spec.base_offset))
        .partition_leader_epoch(LeaderEpoch(spec.leader_epoch))
        .transactional(spec.transactional);
    if let Some((pid, epoch, seq)) = spec.producer {
        b = b.producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq));
    }
    if let Some(t) = spec.log_append_time {
        b = b.log_append_time(TimestampMs(t));
    }
    for r in &spec.records {
        let headers: Vec<(&[u8], Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
            .collect();
        b.append(
            TimestampMs(r.ts),
            r.key.as_deref(),
            r.value.as_deref(),
            &headers,
        );
    }
    b.build()
}

fn simple_batch(codec: Compression) -> RecordBatch {
    BatchBuilder::new()
        .compression(codec)
        .base_offset(Offset(42))
        .record(TimestampMs(1000), Some(b"k1"), Some(b"v1"))
        .record(TimestampMs(1005), None, Some(b"v2"))
        .record(TimestampMs(999), Some(b"k3"), None)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn builder_output_round_trips_through_the_view(spec in spec_strategy()) {
        let batch = build(&spec);
        prop_assert_eq!(batch.validate(), Ok(()));
        prop_assert_eq!(batch.magic(), 2);
        prop_assert_eq!(batch.base_offset(), Offset(spec.base_offset));
        prop_assert_eq!(batch.partition_leader_epoch(), LeaderEpoch(spec.leader_epoch));
        prop_assert_eq!(batch.compression().unwrap(), spec.codec);
        prop_assert_eq!(batch.is_transactional(), spec.transactional);
        prop_assert!(!batch.is_control());
        let n = spec.records.len() as i32;
        prop_assert_eq!(batch.records_count(), n);
        prop_assert_eq!(batch.last_offset_delta(), n - 1);
        prop_assert_eq!(batch.last_offset(), Offset(spec.base_offset + n as i64 - 1));
        prop_assert_eq!(batch.base_timestamp(), TimestampMs(spec.records[0].ts));
        let max_ts = spec.records.iter().map(|r| r.ts).max().unwrap();
        match spec.log_append_time {
            Some(t) => {
                prop_assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
                prop_assert_eq!(batch.max_timestamp(), TimestampMs(t));
            }
            None => {
                prop_assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
                prop_assert_eq!(batch.max_timestamp(), TimestampMs(max_ts));
            }
        }
        match spec.producer {
            Some((pid, epoch, seq)) => {
                prop_assert_eq!(batch.producer_id(), ProducerId(pid));
                prop_assert_eq!(batch.producer_epoch(), ProducerEpoch(epoch));
                prop_assert_eq!(batch.base_sequence(), Sequence(seq));
                prop_assert_eq!(batch.last_sequence(), Sequence(seq).increment(n - 1));
            }
            None => {
                prop_assert_eq!(batch.producer_id(), ProducerId::NONE);
                prop_assert_eq!(batch.last_sequence(), Sequence::NONE);
            }
        }
        let records: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(records.len(), spec.records.len());
        for (i, (got, want)) in records.iter().zip(&spec.records).enumerate() {
            prop_assert_eq!(got.offset, Offset(spec.base_offset + i as i64));
            let want_ts = spec.log_append_time.unwrap_or(want.ts);
            prop_assert_eq!(got.timestamp, TimestampMs(want_ts));
            prop_assert_eq!(got.key.as_deref(), want.key.as_deref());
            prop_assert_eq!(got.value.as_deref(), want.value.as_deref());
            prop_assert_eq!(got.headers.len(), want.headers.len());
            for (h, (k, v)) in got.headers.iter().zip(&want.headers) {
                prop_assert_eq!(&h.key[..], &k[..]);
                prop_assert_eq!(h.value.as_deref(), v.as_deref());
            }
        }
    }

    #[test]
    fn truncation_at_any_byte_is_a_clean_tail_never_a_panic(
        spec in spec_strategy(),
        cut in any::<prop::sample::Index>(),
    ) {
        let batch = build(&spec);
        let full = batch.as_bytes().clone();
        let n = cut.index(full.len());
        let part = full.slice(..n);
        let is_truncated = matches!(
            RecordBatch::new(part.clone()),
            Err(BatchError::Truncated { .. })
        );
        prop_assert!(is_truncated);
        let mut it = Batches::new(part);
        prop_assert!(it.next().is_none());
        if n > 0 {
            prop_assert_eq!(it.truncated_tail().map(|t| t.position), Some(0));
        }
        prop_assert_eq!(it.first_corrupt(), None);
        prop_assert_eq!(it.valid_end(), 0);
    }

    #[test]
    fn a_bit_flip_in_crc_covered_bytes_is_a_crc_mismatch(
        spec in spec_strategy(),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let batch = build(&spec);
        let mut bytes = batch.as_bytes().to_vec();
        let i = field::CRC + at.index(bytes.len() - field::CRC);
        bytes[i] ^= 1 << bit;
        let flipped = RecordBatch::new(bytes.into()).unwrap();
        let is_crc_mismatch = matches!(flipped.validate(), Err(BatchError::CrcMismatch { .. }));
        prop_assert!(is_crc_mismatch);
    }

    #[test]
    fn header_bit_flips_give_errors_not_panics(
        spec in spec_strategy(),
        at in 0usize..RECORD_BATCH_OVERHEAD,
        bit in 0u8..8,
    ) {
        let batch = build(&spec);
        let mut bytes = batch.as_bytes().to_vec();
        bytes[at] ^= 1 << bit;
        let bytes = Bytes::from(bytes);
        let mut it = Batches::new(bytes.clone());
        let first = it.next();
        match at {
            // baseOffset is outside the CRC: still valid unless it went negative or overflows.
            0..=7 => {
                let ok = matches!(
                    first,
                    Some(Ok(_)) | Some(Err(BatchError::InvalidField { field: "baseOffset", .. }))
                );
                prop_assert!(ok, "flip at {} gave {:?}", at, first);
            }
            // partitionLeaderEpoch is outside the CRC too: any value is valid.
            12..=15 => {
                let ok = matches!(first, Some(Ok(_)));
                prop_assert!(ok, "flip at {} gave {:?}", at, first);
            }
            // batchLength: the batch either runs past the buffer (a tail) or ends early.
            8..=11 => prop_assert!(!matches!(first, Some(Ok(_)))),
            16 => {
                let is_magic = matches!(first, Some(Err(BatchError::InvalidField { field: "magic", .. })));
                prop_assert!(is_magic);
            }
            _ => {
                let is_crc = matches!(first, Some(Err(BatchError::CrcMismatch { .. })));
                prop_assert!(is_crc);
            }
        }
        // Whatever the flip, decoding never panics.
        if let Ok(b) = RecordBatch::new(bytes) {
            let _ = b.validate();
            if let Ok(recs) = b.records() {
                for r in recs { let _ = r; }
            }
            let _ = b.control_record();
        }
    }

    #[test]
    fn garbage_records_with_a_valid_crc_never_panic(
        codec in proptest::sample::select(CODECS.to_vec()),
        count in 0i32..50,
        area in proptest::collection::vec(any::<u8>(), 0..300),
        control in any::<bool>(),
    ) {
        let mut bytes = simple_batch(Compression::None).as_bytes()[..RECORD_BATCH_OVERHEAD].to_vec();
        bytes.extend_from_slice(&area);
        let len = (bytes.len() - LOG_OVERHEAD) as i32;
        bytes[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        let mut attributes = codec.id() as i16;
        if control { attributes |= attr::CONTROL; }
        bytes[field::ATTRIBUTES..field::ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
        bytes[field::RECORDS_COUNT..field::RECORDS_COUNT + 4].copy_from_slice(&count.to_be_bytes());
        let mut buf = bytes.clone();
        BatchHeaderMut::new(&mut buf).unwrap().update_crc();
        let b = RecordBatch::new(buf.into()).unwrap();
        let _ = b.validate();
        if let Ok(recs) = b.records() {
            let n = recs.take(100).filter(|r| r.is_ok()).count();
            prop_assert!(n <= count as usize);
        }
        let _ = b.control_record();
    }
}

#[test]
fn every_codec_builds_valid_batches_that_decode() {
    for codec in CODECS {
        let b = simple_batch(codec);
        b.validate().unwrap();
        let recs: Vec<_> = b.records().unwrap().map(Result::unwrap).collect();
        assert_eq!(recs.len(), 3, "{codec}");
        assert_eq!(recs[1].key, None);
        assert_eq!(recs[2].value, None, "tombstone");
        assert_eq!(recs[2].timestamp, TimestampMs(999));
        assert_eq!(b.max_timestamp(), TimestampMs(1005));
    }
}

#[test]
fn uncompressed_records_share_the_batch_buffer() {
    let b = BatchBuilder::new()
        .record(TimestampMs(1), Some(b"key"), Some(b"value"))
        .build();
    let r = b.records().unwrap().next().unwrap().unwrap();
    let buf = b.as_bytes().as_ptr_range();
    let v = r.value.unwrap();
    assert!(
        buf.contains(&v.as_ptr()),
        "value must be a slice of the batch, not a copy"
    );
}

#[test]
fn header_offsets_match_kafkas_layout() {
    let b = BatchBuilder::new()
        .base_offset(Offset(0x0102030405060708))
        .partition_leader_epoch(LeaderEpoch(0x0a0b0c0d))
        .producer(
            ProducerId(0x1112131415161718),
            ProducerEpoch(0x2122),
            Sequence(0x31323334),
        )
        .record(TimestampMs(0x4142434445464748), None, None)
        .build();
    let x = b.as_bytes();
    assert_eq!(&x[0..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(&x[8..12], &((x.len() - 12) as i32).to_be_bytes());
    assert_eq!(&x[12..16], &[0x0a, 0x0b, 0x0c, 0x0d]);
    assert_eq!(x[16], 2);
    assert_eq!(&x[17..21], &crc32c::crc32c(&x[21..]).to_be_bytes());
    assert_eq!(&x[21..23], &[0, 0]);
    assert_eq!(&x[23..27], &[0, 0, 0, 0]);
    assert_eq!(
        &x[27..35],
        &[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48]
    );
    assert_eq!(
        &x[35..43],
        &[0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48]
    );
    assert_eq!(
        &x[43..51],
        &[0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]
    );
    assert_eq!(&x[51..53], &[0x21, 0x22]);
    assert_eq!(&x[53..57], &[0x31, 0x32, 0x33, 0x34]);
    assert_eq!(&x[57..61], &[0, 0, 0, 1]);
    // The one record: length 6, attributes 0, tsDelta 0, offsetDelta 0, key -1, value -1, 0 headers.
    assert_eq!(&x[61..], &[0x0c, 0, 0, 0, 0x01, 0x01, 0]);
}

#[test]
fn kafka_fixture_batch_decodes() {
    // foo-0/00000000000000000000.log from a real Kafka broker (see shared/kafka-fixtures).
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/kafka-fixtures/kraft-combined-logs/foo-0/00000000000000000000.log"
    );
    let bytes = std::fs::read(path).expect("shared/kafka-fixtures beside the checkout");
    let b = RecordBatch::new(Bytes::from(bytes)).unwrap();
    b.validate().unwrap();
    assert_eq!(b.crc(), 0x98ec18d3);
    assert_eq!(b.max_timestamp(), TimestampMs(1726045973899));
    let r = b.records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.key, None);
    assert_eq!(r.value.as_deref(), Some(&b"Hello World!"[..]));
}

#[test]
fn end_txn_markers_look_like_kafkas() {
    let b =
        BatchBuilder::end_txn_marker(ProducerId(7), ProducerEpoch(3), false, 12, TimestampMs(5))
            .base_offset(Offset(10))
            .build();
    b.validate().unwrap();
    assert!(b.is_control() && b.is_transactional());
    assert_eq!(b.base_sequence(), Sequence::NONE);
    assert_eq!(b.producer_id(), ProducerId(7));
    let c = b.control_record().unwrap().unwrap();
    assert_eq!(c.kind, ControlRecordType::Abort);
    assert_eq!(
        c.end_txn,
        Some(EndTxnMarker {
            version: 0,
            coordinator_epoch: 12
        })
    );
}

#[test]
fn mirror_pid_reset_batches_carry_type_7() {
    let b = BatchBuilder::mirror_pid_reset(Some("src-cluster"), TimestampMs(5)).build();
    b.validate().unwrap();
    assert!(b.is_control() && !b.is_transactional());
    assert_eq!(b.producer_id(), ProducerId::NONE);
    let c = b.control_record().unwrap().unwrap();
    assert_eq!(c.kind, ControlRecordType::MirrorPidReset);
    assert_eq!(
        c.mirror_pid_reset.unwrap().source_cluster_id.as_deref(),
        Some("src-cluster")
    );
}

#[test]
fn unknown_control_types_are_tolerated() {
    let b =
        BatchBuilder::control(ControlRecordType::Unknown(99), b"whatever", TimestampMs(1)).build();
    let c = b.control_record().unwrap().unwrap();
    assert_eq!(c.kind, ControlRecordType::Unknown(99));
    assert_eq!(c.kind.dump_name(), "unknown");
}

#[test]
fn negative_control_key_version_is_corrupt() {
    let b = BatchBuilder::control(
        ControlRecordType::Commit,
        &[0, 0, 0, 0, 0, 1],
        TimestampMs(1),
    )
    .build();
    let mut bytes = b.as_bytes().to_vec();
    // The record's key starts after length(1) attrs(1) tsDelta(1) offsetDelta(1) keyLen(1).
    let key_at = RECORD_BATCH_OVERHEAD + 5;
    bytes[key_at] = 0xff;
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let b = RecordBatch::new(bytes.into()).unwrap();
    assert!(matches!(
        b.control_record(),
        Err(BatchError::CorruptRecord { .. })
    ));
}

#[test]
fn stamping_offset_and_epoch_keeps_the_crc() {
    let b = simple_batch(Compression::Lz4);
    let crc = b.crc();
    let mut bytes = b.as_bytes().to_vec();
    let mut h = BatchHeaderMut::new(&mut bytes).unwrap();
    h.set_base_offset(Offset(1_000_000));
    h.set_partition_leader_epoch(LeaderEpoch(77));
    let b = RecordBatch::new(bytes.into()).unwrap();
    b.validate().unwrap();
    assert_eq!(b.crc(), crc);
    assert_eq!(b.base_offset(), Offset(1_000_000));
    assert_eq!(b.partition_leader_epoch(), LeaderEpoch(77));
    assert_eq!(
        b.records().unwrap().next().unwrap().unwrap().offset,
        Offset(1_000_000)
    );
}

#[test]
fn stamping_log_append_time_recomputes_the_crc() {
    let b = simple_batch(Compression::None);
    let mut bytes = b.as_bytes().to_vec();
    BatchHeaderMut::new(&mut bytes)
        .unwrap()
        .set_max_timestamp(TimestampType::LogAppendTime, TimestampMs(123_456));
    let b2 = RecordBatch::new(bytes.into()).unwrap();
    b2.validate().unwrap();
    assert_ne!(b2.crc(), b.crc());
    assert_eq!(b2.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(b2.max_timestamp(), TimestampMs(123_456));
    for r in b2.records().unwrap() {
        assert_eq!(r.unwrap().timestamp, TimestampMs(123_456));
    }
}

#[test]
fn header_sanity_errors_name_field_and_values() {
    let mut bytes = simple_batch(Compression::None).as_bytes().to_vec();
    bytes[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]
        .copy_from_slice(&0i32.to_be_bytes());
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let err = RecordBatch::new(bytes.into())
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(
        err,
        BatchError::InvalidField {
            position: 0,
            field: "lastOffsetDelta",
            expected: ">= recordsCount - 1 = 2".into(),
            found: "0".into()
        }
    );
    let mut bytes = simple_batch(Compression::None).as_bytes().to_vec();
    bytes[field::ATTRIBUTES + 1] = 0x05;
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let err = RecordBatch::new(bytes.into())
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err, BatchError::UnknownCodec { position: 0, id: 5 });
    assert!(err.to_string().contains("codec id 5"), "{err}");
    // Kafka answers a codec it does not know, or records that do not decompress, otherwise
    // than a corrupt batch.
    assert!(err.is_codec_failure());
    let decompression = BatchError::Decompression {
        position: 0,
        codec: Compression::Lz4,
        reason: "bad frame".into(),
    };
    assert!(decompression.is_codec_failure());
    let crc = BatchError::CrcMismatch {
        position: 0,
        stored: 1,
        computed: 2,
    };
    assert!(!crc.is_codec_failure());
}

#[test]
fn batches_report_the_first_corrupt_batch_by_position() {
    let mut buf = Vec::new();
    simple_batch(Compression::None)
        .as_bytes()
        .iter()
        .for_each(|b| buf.push(*b));
    let second_at = buf.len();
    buf.extend_from_slice(simple_batch(Compression::Gzip).as_bytes());
    let third_at = buf.len();
    buf.extend_from_slice(simple_batch(Compression::Zstd).as_bytes());
    buf[third_at + 40] ^= 0xff;
    buf.extend_from_slice(simple_batch(Compression::None).as_bytes());
    let mut it = Batches::new(buf.into());
    assert_eq!(it.next().unwrap().unwrap().position(), 0);
    assert_eq!(it.next().unwrap().unwrap().position(), second_at as u64);
    let err = it.next().unwrap().unwrap_err();
    assert_eq!(err.position(), third_at as u64);
    assert!(
        it.next().is_none(),
        "iteration stops at the first corrupt batch"
    );
    assert_eq!(it.first_corrupt(), Some(third_at as u64));
    assert_eq!(it.valid_end(), third_at as u64);
}

#[test]
fn batches_stop_at_a_torn_tail_and_say_where() {
    let mut buf = simple_batch(Compression::Snappy).as_bytes().to_vec();
    let tail_at = buf.len();
    let b = simple_batch(Compression::None);
    buf.extend_from_slice(&b.as_bytes()[..30]);
    let mut it = Batches::at(buf.into(), 1000);
    assert_eq!(it.next().unwrap().unwrap().position(), 1000);
    assert!(it.next().is_none());
    assert_eq!(
        it.truncated_tail(),
        Some(TruncatedTail {
            position: 1000 + tail_at as u64,
            available: 30,
            needed: Some(b.size_bytes())
        })
    );
    assert_eq!(it.valid_end(), 1000 + tail_at as u64);
}

#[test]
fn records_count_beyond_the_bytes_is_rejected_before_iteration() {
    let mut bytes = simple_batch(Compression::None).as_bytes().to_vec();
    bytes[field::RECORDS_COUNT..field::RECORDS_COUNT + 4]
        .copy_from_slice(&1_000_000i32.to_be_bytes());
    bytes[field::LAST_OFFSET_DELTA..field::LAST_OFFSET_DELTA + 4]
        .copy_from_slice(&1_000_000i32.to_be_bytes());
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let b = RecordBatch::new(bytes.into()).unwrap();
    assert!(matches!(
        b.validate(),
        Err(BatchError::InvalidField {
            field: "recordsCount",
            ..
        })
    ));
    // Iterating anyway reports a premature end, not a panic.
    let errs: Vec<_> = b.records().unwrap().filter_map(Result::err).collect();
    assert_eq!(errs.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn the_metadata_walk_agrees_with_the_full_decode(spec in spec_strategy()) {
        let (full, meta) = both_walks(&build(&spec));
        prop_assert_eq!(meta, full);
    }
}

/// Each record's offset and timestamp, in order.
type Metas = Vec<(Offset, TimestampMs)>;

/// [`Metas`] of a valid batch from the full decode and from the metadata walk.
fn both_walks(batch: &RecordBatch) -> (Metas, Metas) {
    let full = batch
        .records()
        .unwrap()
        .map(|r| r.map(|r| (r.offset, r.timestamp)).unwrap())
        .collect();
    let mut records = batch.records().unwrap();
    let mut meta = vec![];
    while let Some(m) = records.next_meta() {
        let m = m.unwrap();
        meta.push((m.offset, m.timestamp));
    }
    (full, meta)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The metadata walk's lean path must accept exactly the records the full decode accepts:
    /// bytes of the records area overwritten at random, both walks agree record by record,
    /// errors included.
    #[test]
    fn the_metadata_walk_agrees_with_the_full_decode_on_damaged_records(
        spec in spec_strategy(),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let spec = Spec { codec: Compression::None, ..spec };
        let mut bytes = build(&spec).as_bytes().to_vec();
        let area = bytes.len() - field::RECORDS;
        prop_assume!(area > 0);
        for (at, byte) in damage {
            bytes[field::RECORDS + at.index(area)] = byte;
        }
        let batch = RecordBatch::new(bytes.into()).unwrap();
        let full: Vec<_> = batch
            .records()
            .unwrap()
            .map(|r| r.map(|r| (r.offset, r.timestamp)))
            .collect();
        let mut records = batch.records().unwrap();
        let mut meta = vec![];
        while let Some(m) = records.next_meta() {
            meta.push(m.map(|m| (m.offset, m.timestamp)));
        }
        prop_assert_eq!(meta, full);
    }
}

#[test]
fn the_metadata_walk_reports_corruption_like_the_full_decode() {
    let mut bytes = simple_batch(Compression::None).as_bytes().to_vec();
    bytes[field::RECORDS_COUNT..field::RECORDS_COUNT + 4].copy_from_slice(&2i32.to_be_bytes());
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let b = RecordBatch::new(bytes.into()).unwrap();
    let mut r = b.records().unwrap();
    assert!(r.next_meta().unwrap().is_ok());
    assert!(r.next_meta().unwrap().is_ok());
    assert!(
        matches!(r.next_meta(), Some(Err(BatchError::CorruptRecord { .. }))),
        "bytes remain after the declared count"
    );
}

#[test]
fn the_metadata_walk_reads_varints_of_one_two_and_three_bytes() {
    // Zigzag lengths 63/64 and 8191/8192 sit on the one/two- and two/three-byte boundaries of
    // the walk's varint fast paths, for the value length and the record length alike.
    let mut b = BatchBuilder::new();
    for (i, len) in [0usize, 63, 64, 100, 8191, 8192, 20_000]
        .into_iter()
        .enumerate()
    {
        let value = vec![7u8; len];
        b.append(
            TimestampMs(1_000 + 100 * i as i64),
            Some(b"k"),
            Some(&value),
            &[],
        );
    }
    let (full, meta) = both_walks(&b.build());
    assert_eq!(meta, full);
    assert_eq!(meta.len(), 7);
}

/// `batch`'s header over `area` compressed with `codec` as its records area, `count` records
/// declared, the CRC updated: a batch whose decompressed bytes are exactly `area`.
fn with_records_area(
    batch: &RecordBatch,
    codec: Compression,
    area: &[u8],
    count: i32,
) -> RecordBatch {
    let mut bytes = batch.as_bytes()[..RECORD_BATCH_OVERHEAD].to_vec();
    bytes.extend_from_slice(&compression::compress(codec, area));
    let len = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
    let attributes = (batch.attributes() & !attr::COMPRESSION_MASK) | codec.id() as i16;
    bytes[field::ATTRIBUTES..field::ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    bytes[field::RECORDS_COUNT..field::RECORDS_COUNT + 4].copy_from_slice(&count.to_be_bytes());
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    RecordBatch::new(bytes.into()).unwrap()
}

type MetaResults = Vec<Result<(Offset, TimestampMs), BatchError>>;

/// What the full decode says of each record's offset and timestamp, errors included.
fn full_walk(batch: &RecordBatch) -> Result<MetaResults, BatchError> {
    Ok(batch
        .records()?
        .map(|r| r.map(|r| (r.offset, r.timestamp)))
        .collect())
}

/// What the streamed walk says, through a buffer of `buffer_bytes`.
fn streamed_walk(batch: &RecordBatch, buffer_bytes: usize) -> Result<MetaResults, BatchError> {
    Ok(batch
        .record_metas_with(MAX_DECOMPRESSED_BYTES, buffer_bytes)?
        .map(|r| r.map(|m| (m.offset, m.timestamp)))
        .collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// On the same decompressed bytes the streamed walk says what the full decode says, record
    /// by record, for every codec: the records area overwritten at random (or not) and the
    /// declared count off by a little (or not), errors and their reasons included.
    #[test]
    fn the_streamed_walk_agrees_with_the_full_decode_on_any_records_area(
        spec in spec_strategy(),
        codec in proptest::sample::select(CODECS.to_vec()),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        count_change in prop_oneof![4 => Just(0i32), 1 => -2i32..3],
        buffer_bytes in prop_oneof![Just(STREAM_BUFFER_BYTES), 1usize..40],
    ) {
        let plain = build(&Spec { codec: Compression::None, ..spec });
        let mut area = plain.as_bytes()[field::RECORDS..].to_vec();
        let len = area.len();
        for (at, byte) in damage {
            area[at.index(len)] = byte;
        }
        let count = (plain.records_count() + count_change).max(0);
        let batch = with_records_area(&plain, codec, &area, count);
        prop_assert_eq!(streamed_walk(&batch, buffer_bytes), full_walk(&batch), "{}", codec);
    }

    /// Damaged compressed bytes (cut short, or overwritten): when the full decode can still
    /// decompress them both walks agree exactly; when it cannot, the streamed walk fails too —
    /// after records that the undamaged batch holds when the stream was only cut short
    /// (overwritten bytes may decode to other records before a checksum gives them away).
    #[test]
    fn damaged_compressed_bytes_fail_the_streamed_walk_too(
        spec in spec_strategy(),
        cut in proptest::option::of(any::<prop::sample::Index>()),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
        buffer_bytes in prop_oneof![Just(STREAM_BUFFER_BYTES), 1usize..40],
    ) {
        prop_assume!(spec.codec != Compression::None);
        let good = build(&spec);
        let mut area = good.as_bytes()[field::RECORDS..].to_vec();
        if let Some(cut) = cut {
            area.truncate(cut.index(area.len()));
        }
        let len = area.len();
        let only_cut = damage.is_empty();
        for (at, byte) in damage {
            if len > 0 {
                area[at.index(len)] = byte;
            }
        }
        let mut bytes = good.as_bytes()[..field::RECORDS].to_vec();
        bytes.extend_from_slice(&area);
        let total = (bytes.len() - LOG_OVERHEAD) as i32;
        bytes[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&total.to_be_bytes());
        BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
        let batch = RecordBatch::new(bytes.into()).unwrap();
        let streamed = streamed_walk(&batch, buffer_bytes);
        if compression::decompress(spec.codec, &batch.as_bytes().slice(field::RECORDS..), MAX_DECOMPRESSED_BYTES).is_ok() {
            prop_assert_eq!(streamed, full_walk(&batch));
        } else {
            prop_assert!(full_walk(&batch).is_err());
            // Failing before the first record (a bad header) is failing too.
            if let Ok(items) = streamed {
                prop_assert!(matches!(items.last(), Some(Err(_))), "{:?}", items);
                let oks = &items[..items.len() - 1];
                if only_cut {
                    let original = full_walk(&good).unwrap();
                    prop_assert_eq!(oks, &original[..oks.len()]);
                }
            }
        }
    }
}

#[test]
fn a_streamed_walk_past_the_limit_is_a_decompression_error() {
    let big = BatchBuilder::new()
        .record(TimestampMs(1), None, Some(&[0u8; 100_000]))
        .build();
    for codec in CODECS.into_iter().skip(1) {
        let area = &big.as_bytes()[field::RECORDS..];
        let batch = with_records_area(&big, codec, area, 1);
        let errs: Vec<_> = batch
            .record_metas_with(50_000, STREAM_BUFFER_BYTES)
            .and_then(|m| m.collect::<Result<Vec<_>, _>>())
            .err()
            .into_iter()
            .collect();
        assert!(
            matches!(&errs[..], [BatchError::Decompression { reason, .. }] if reason.contains("limit")),
            "{codec}: {errs:?}"
        );
        let at_the_limit = batch.record_metas_with(area.len(), STREAM_BUFFER_BYTES);
        assert_eq!(at_the_limit.unwrap().count(), 1);
    }
}

#[test]
fn uncompressed_batches_are_walked_in_place() {
    let b = simple_batch(Compression::None);
    let metas = b.record_metas().unwrap();
    assert!(format!("{metas:?}").contains("Records"), "{metas:?}");
    assert_eq!(metas.count(), 3);
}

#[test]
fn try_each_yields_what_the_iterator_yields_and_stops_at_the_first_error() {
    for codec in CODECS {
        let b = simple_batch(codec);
        let mut seen = vec![];
        b.record_metas()
            .unwrap()
            .try_each(|m| -> Result<(), BatchError> {
                seen.push(m);
                Ok(())
            })
            .unwrap();
        let iterated: Vec<_> = b.record_metas().unwrap().map(Result::unwrap).collect();
        assert_eq!(seen, iterated, "{codec}");
        // The walk's own error: a count one short leaves bytes behind.
        let plain = simple_batch(Compression::None);
        let short = with_records_area(&plain, codec, &plain.as_bytes()[field::RECORDS..], 2);
        let mut calls = 0;
        let err = short
            .record_metas()
            .unwrap()
            .try_each(|_| -> Result<(), BatchError> {
                calls += 1;
                Ok(())
            })
            .unwrap_err();
        assert!(
            matches!(
                err,
                BatchError::CorruptRecord {
                    record_index: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(calls, 2);
    }
}

/// Kafka defines no attribute bit above 6 and checks none (`ensureValid`: size and CRC;
/// `LogValidator`: no attribute bit), so a batch with bits 7–15 set is valid as it came, its
/// codec and flags read from bits 0–6; the CRC still covers them.
#[test]
fn attribute_bits_kafka_defines_none_of_are_accepted_and_covered_by_the_crc() {
    for codec in CODECS {
        let mut bytes = simple_batch(codec).as_bytes().to_vec();
        let attributes =
            i16::from_be_bytes([bytes[field::ATTRIBUTES], bytes[field::ATTRIBUTES + 1]])
                | 0x0080
                | i16::MIN;
        bytes[field::ATTRIBUTES..field::ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
        let mut flipped = bytes.clone();
        BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
        let b = RecordBatch::new(bytes.into()).unwrap();
        assert_eq!(b.validate(), Ok(()), "{codec}");
        assert_eq!(b.validate_stored(), Ok(()), "{codec}");
        assert_eq!(b.attributes(), attributes);
        assert_eq!(b.compression(), Ok(codec));
        assert!(!b.is_transactional() && !b.is_control());
        assert_eq!(b.records().unwrap().count(), 3, "{codec}");
        // Set without the CRC updated: the CRC finds it.
        flipped[field::CRC..field::CRC + 4].copy_from_slice(&b.crc().to_be_bytes());
        flipped[field::ATTRIBUTES] ^= 0x01;
        let f = RecordBatch::new(flipped.into()).unwrap();
        assert!(
            matches!(f.validate(), Err(BatchError::CrcMismatch { .. })),
            "{codec}: {:?}",
            f.validate()
        );
    }
}
