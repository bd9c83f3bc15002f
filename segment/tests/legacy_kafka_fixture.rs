//! Scenario: a segment of legacy entries (magic 0 and 1: uncompressed, gzip, snappy and lz4
//! wrappers, the v0 lz4 header-checksum quirk included) written by Apache Kafka's own client
//! library (`tests/kafka-java/GenerateLegacy.java`, kafka-clients 4.3.0), as a data directory
//! carried over from an older Kafka holds them. Every entry scans and validates as Kafka reads it
//! (`tests/fixtures/kafka-java-legacy/expected.txt`); recovery after an unclean shutdown keeps
//! them all and rebuilds the indexes; a clean open finds the log end; fetch serves the bytes as
//! they are; lookups by offset and timestamp work; v2 batches append after them; and a flipped
//! byte in a legacy entry truncates the log there, as a corrupt v2 batch does.

use mirrorlog_index::{FilePosition, Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::scan::FileBatches;
use mirrorlog_segment::segment::{ActiveSegment, SealedSegment, SegmentConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const LOG: &str = "00000000000000000000.log";

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kafka-java-legacy")
}

/// A `record` line: offset, timestamp, key, value.
type KafkaRecord = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// One `batch` line of Kafka's view and its `record` lines.
#[derive(Debug)]
struct KafkaBatch {
    position: u64,
    size: usize,
    magic: i8,
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    codec: String,
    timestamp_type: String,
    records: Vec<KafkaRecord>,
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    match s {
        "-" => None,
        "\"\"" => Some(vec![]),
        s => Some(
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect(),
        ),
    }
}

fn kafka_view() -> Vec<KafkaBatch> {
    let text = std::fs::read_to_string(fixture_dir().join("expected.txt")).unwrap();
    let mut out: Vec<KafkaBatch> = vec![];
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "batch" => out.push(KafkaBatch {
                position: f[1].parse().unwrap(),
                size: f[2].parse().unwrap(),
                magic: f[3].parse().unwrap(),
                base_offset: f[4].parse().unwrap(),
                last_offset: f[5].parse().unwrap(),
                max_timestamp: f[6].parse().unwrap(),
                codec: f[7].to_string(),
                timestamp_type: f[8].to_string(),
                records: vec![],
            }),
            "record" => out.last_mut().unwrap().records.push((
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                unhex(f[3]),
                unhex(f[4]),
            )),
            other => panic!("unexpected line kind {other}"),
        }
    }
    out
}

/// The fixture's `.log` copied alone into a fresh directory (no indexes: as after a crash that
/// lost them, or a carried-over directory whose indexes are rebuilt).
fn copy_of_fixture() -> (tempfile::TempDir, Arc<dyn Storage>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture_dir().join(LOG), dir.path().join(LOG)).unwrap();
    (dir, Arc::new(PwriteStorage::new()))
}

/// Small interval: an index entry per entry, so that lookups go through the rebuilt index.
fn config() -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: 1,
        ..SegmentConfig::default()
    }
}

fn recover(storage: &Arc<dyn Storage>, dir: &Path) -> ActiveSegment {
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir, Offset(0), config(), 0).unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(report.stopped_by, None, "{report:?}");
    assert_eq!(report.truncated_bytes, 0);
    seg
}

#[test]
fn every_legacy_entry_scans_and_reads_as_kafka_reads_it() {
    let kafka = kafka_view();
    assert!(kafka.iter().any(|b| b.magic == 0) && kafka.iter().any(|b| b.magic == 1));
    for codec in ["none", "gzip", "snappy", "lz4"] {
        assert!(kafka.iter().any(|b| b.codec == codec), "{codec} present");
    }
    let (dir, storage) = copy_of_fixture();
    let file = storage
        .open(&dir.path().join(LOG), mirrorlog_segment::io::OpenMode::Read)
        .unwrap();
    let len = file.len().unwrap();
    let ours: Vec<_> = FileBatches::new(&*file, 0, len)
        .chunk_bytes(64)
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(ours.len(), kafka.len(), "entry count");
    for (o, k) in ours.iter().zip(&kafka) {
        let at = k.position;
        o.validate_stored().unwrap();
        assert!(o.is_legacy());
        // What a client or source sends must be v2: the strict check refuses these.
        assert!(o.validate().is_err(), "{at}");
        assert_eq!(o.position(), k.position);
        assert_eq!(o.size_bytes(), k.size, "{at}");
        assert_eq!(o.magic(), k.magic, "{at}");
        assert_eq!(o.last_offset().get(), k.last_offset, "{at}");
        assert_eq!(o.max_timestamp().get(), k.max_timestamp, "{at}");
        assert_eq!(o.compression().unwrap().name(), k.codec, "{at}");
        if k.magic == 1 {
            let t = match o.timestamp_type() {
                mirrorlog_segment::TimestampType::CreateTime => "CreateTime",
                mirrorlog_segment::TimestampType::LogAppendTime => "LogAppendTime",
            };
            assert_eq!(t, k.timestamp_type, "{at}");
        }
        assert_eq!(o.producer_id().get(), -1);
        assert_eq!(o.partition_leader_epoch().get(), -1);
        assert!(!o.is_transactional() && !o.is_control());
        let records: Vec<_> = o.records().unwrap().map(|r| r.unwrap()).collect();
        let got: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.offset.get(),
                    r.timestamp.get(),
                    r.key.as_ref().map(|b| b.to_vec()),
                    r.value.as_ref().map(|b| b.to_vec()),
                )
            })
            .collect();
        assert_eq!(got, k.records, "{at}");
        // Kafka's `baseOffset` is the first record's (a wrapper's needs decompressing).
        assert_eq!(records[0].offset.get(), k.base_offset, "{at}");
        let metas: Vec<_> = o
            .record_metas()
            .unwrap()
            .map(|m| m.unwrap().offset.get())
            .collect();
        assert_eq!(metas, k.records.iter().map(|r| r.0).collect::<Vec<_>>());
    }
}

#[test]
fn recovery_after_an_unclean_shutdown_keeps_every_legacy_entry_and_indexes_them() {
    let kafka = kafka_view();
    let (dir, storage) = copy_of_fixture();
    let before = std::fs::read(dir.path().join(LOG)).unwrap();
    let mut seen = vec![];
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config(), 0)
            .unwrap();
    let report = seg
        .recover(|_, b| {
            seen.push(b.position());
            Ok(())
        })
        .unwrap();
    assert_eq!(report.stopped_by, None);
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(report.batches, kafka.len() as u64);
    assert_eq!(seen, kafka.iter().map(|k| k.position).collect::<Vec<_>>());
    let last = kafka.last().unwrap();
    assert_eq!(report.last_offset, Some(Offset(last.last_offset)));
    assert_eq!(seg.next_offset(), Offset(last.last_offset + 1));
    assert_eq!(std::fs::read(dir.path().join(LOG)).unwrap(), before);
    // The offset index maps each entry's last offset to its position (Kafka's rule), after the
    // first (the interval rule counts the bytes before an entry).
    seg.sanity_check().unwrap();
    assert_eq!(seg.offset_index().entries(), kafka.len() - 1);
    for (i, k) in kafka.iter().skip(1).enumerate() {
        assert_eq!(
            seg.offset_index().entry(i).unwrap(),
            (Offset(k.last_offset), FilePosition(k.position as u32))
        );
    }
    // The time index holds v1 entries' max timestamps only (v0 has none).
    let max = kafka.iter().map(|k| k.max_timestamp).max().unwrap();
    let max_at = kafka.iter().find(|k| k.max_timestamp == max).unwrap();
    assert_eq!(
        seg.time_index().last_entry(),
        (TimestampMs(max), Offset(max_at.last_offset))
    );
    assert_eq!(
        seg.max_timestamp_so_far(),
        (TimestampMs(max), Offset(max_at.last_offset))
    );
}

#[test]
fn after_a_clean_shutdown_lookups_and_fetches_serve_legacy_entries_as_they_are() {
    let kafka = kafka_view();
    let (dir, storage) = copy_of_fixture();
    drop(recover(&storage, dir.path()).seal().unwrap());
    let file = std::fs::read(dir.path().join(LOG)).unwrap();
    for seg in [
        SealedSegment::open(storage.clone(), dir.path(), Offset(0), config(), 0).unwrap(),
        ActiveSegment::open(storage.clone(), dir.path(), Offset(0), config(), 0)
            .unwrap()
            .seal()
            .unwrap(),
    ] {
        let last = kafka.last().unwrap();
        assert_eq!(seg.next_offset(), Offset(last.last_offset + 1));
        seg.sanity_check().unwrap();
        for k in &kafka {
            for (offset, ..) in &k.records {
                let loc = seg.find_batch(Offset(*offset)).unwrap().unwrap();
                assert_eq!(loc.position.as_u64(), k.position, "offset {offset}");
                assert_eq!(loc.last_offset, Offset(k.last_offset));
                assert_eq!(loc.size as usize, k.size);
                // Fetch from this offset: the bytes from the entry on, unconverted.
                let d = seg
                    .read(Offset(*offset), 1 << 20, None, false)
                    .unwrap()
                    .unwrap();
                let got = d.slice.read_all().unwrap();
                assert_eq!(&got[..], &file[k.position as usize..], "offset {offset}");
            }
        }
        assert!(
            seg.find_batch(Offset(last.last_offset + 1))
                .unwrap()
                .is_none()
        );
        // By timestamp: the first record at or after it, through the inner records of a
        // compressed v1 wrapper (v0 entries have no timestamp and never match).
        for (target, want) in [
            (0, (8, 1_600_000_000_000)),
            (1_600_000_000_001, (9, 1_600_000_000_500)),
            (1_600_000_001_500, (11, 1_600_000_001_900)),
            (1_600_000_002_050, (14, 1_600_000_002_100)),
            (1_600_000_003_300, (16, 1_600_000_003_300)),
        ] {
            assert_eq!(
                seg.find_offset_by_timestamp(TimestampMs(target), Offset(0))
                    .unwrap(),
                Some((Offset(want.0), TimestampMs(want.1))),
                "timestamp {target}"
            );
        }
        assert_eq!(
            seg.find_offset_by_timestamp(TimestampMs(1_600_000_003_301), Offset(0))
                .unwrap(),
            None
        );
        assert_eq!(
            seg.largest_timestamp_and_offset().unwrap(),
            (TimestampMs(1_600_000_003_300), Offset(16))
        );
    }
}

#[test]
fn v2_batches_append_after_legacy_entries_and_survive_recovery() {
    let kafka = kafka_view();
    let (dir, storage) = copy_of_fixture();
    let next = kafka.last().unwrap().last_offset + 1;
    let mut seg = recover(&storage, dir.path());
    let b = BatchBuilder::new()
        .base_offset(Offset(next))
        .record(
            TimestampMs(1_700_000_000_000),
            None,
            Some(b"v2 after legacy"),
        )
        .record(TimestampMs(1_700_000_000_001), None, Some(b"and another"))
        .build();
    seg.append(b.as_bytes().clone()).unwrap();
    assert_eq!(seg.next_offset(), Offset(next + 2));
    drop(seg);
    // Reopened clean and recovered: both kinds kept, in order.
    let seg = ActiveSegment::open(storage.clone(), dir.path(), Offset(0), config(), 0).unwrap();
    assert_eq!(seg.next_offset(), Offset(next + 2));
    let loc = seg.find_batch(Offset(next + 1)).unwrap().unwrap();
    assert_eq!(loc.base_offset, Offset(next));
    drop(seg);
    let mut seg = recover(&storage, dir.path());
    assert_eq!(seg.next_offset(), Offset(next + 2));
    let magics: Vec<i8> = seg.batches().map(|b| b.unwrap().magic()).collect();
    assert_eq!(magics.len(), kafka.len() + 1);
    assert_eq!(*magics.last().unwrap(), 2);
    assert_eq!(
        seg.find_offset_by_timestamp(TimestampMs(1_700_000_000_001), Offset(0))
            .unwrap(),
        Some((Offset(next + 1), TimestampMs(1_700_000_000_001)))
    );
    seg.flush().unwrap();
}

#[test]
fn a_flipped_byte_in_a_legacy_entry_truncates_the_log_there() {
    let kafka = kafka_view();
    // Inside an uncompressed v0 entry's value, a gzip wrapper's compressed bytes and a v1
    // entry's timestamp: each covered by the entry's CRC-32.
    for (victim, at_in_entry) in [(0, 30), (3, 40), (5, 20)] {
        let k = &kafka[victim];
        let (dir, storage) = copy_of_fixture();
        let path = dir.path().join(LOG);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[k.position as usize + at_in_entry] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let mut seg =
            ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config(), 0)
                .unwrap();
        let report = seg.recover(|_, _| Ok(())).unwrap();
        let reason = report.stopped_by.expect("a corrupt entry stops recovery");
        assert!(reason.contains("CRC") || reason.contains("crc"), "{reason}");
        assert_eq!(report.valid_bytes, k.position, "entry {victim}");
        assert_eq!(report.batches, victim as u64);
        let expect_next = if victim == 0 {
            0
        } else {
            kafka[victim - 1].last_offset + 1
        };
        assert_eq!(seg.next_offset(), Offset(expect_next));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), k.position);
    }
    // Sanity of the fixture's byte choice: the mutation above hit the entries, not past them.
    assert!(kafka[0].size > 30 && kafka[3].size > 40 && kafka[5].size > 20);
}
