//! Scenario: read compatibility with a partition directory written by a real Apache Kafka broker
//! (`shared/kafka-fixtures/`): open each segment as a sealed segment, check its indexes against
//! the log, and read every batch through the indexes, by offset and by timestamp.

use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{SealedSegment, SegmentConfig};
use std::path::PathBuf;
use std::sync::Arc;

fn fixture(partition: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/kafka-fixtures/kraft-combined-logs")
        .join(partition)
}

fn open(partition: &str) -> SealedSegment {
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    // The fixture files are read-only: a sealed segment never opens anything for writing.
    SealedSegment::open(
        storage,
        &fixture(partition),
        Offset(0),
        SegmentConfig::default(),
        0,
    )
    .unwrap()
}

#[test]
fn kafkas_foo_0_segment_reads_through_its_indexes() {
    let seg = open("foo-0");
    seg.sanity_check().unwrap();
    assert_eq!(seg.next_offset(), Offset(1));
    let loc = seg.find_batch(Offset(0)).unwrap().unwrap();
    assert_eq!(
        (
            loc.base_offset,
            loc.last_offset,
            loc.position.get(),
            loc.size
        ),
        (Offset(0), Offset(0), 0, 80)
    );
    let batch = seg.read_batch(&loc).unwrap();
    batch.validate().unwrap();
    let r = batch.records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.value.as_deref(), Some(&b"Hello World!"[..]));
    let d = seg.read(Offset(0), 1 << 20, None, false).unwrap().unwrap();
    assert_eq!(d.slice.length, 80);
    let ts = TimestampMs(1_726_045_973_899);
    assert_eq!(
        seg.find_offset_by_timestamp(ts, Offset(0)).unwrap(),
        Some((Offset(0), ts))
    );
    assert_eq!(
        seg.find_offset_by_timestamp(TimestampMs(ts.get() + 1), Offset(0))
            .unwrap(),
        None
    );
    assert_eq!(seg.time_index().last_entry(), (ts, Offset(0)));
}

#[test]
fn kafkas_metadata_segment_reads_every_offset_through_its_indexes() {
    let seg = open("__cluster_metadata-0");
    seg.sanity_check().unwrap();
    assert!(
        seg.offset_index().entries() > 0,
        "this segment has index entries to check"
    );
    // Every index entry names a batch's last offset at that batch's start position.
    for i in 0..seg.offset_index().entries() {
        let (offset, position) = seg.offset_index().entry(i).unwrap();
        let loc = seg.translate_offset(offset, position).unwrap().unwrap();
        assert_eq!(
            (loc.position, loc.last_offset),
            (position, offset),
            "index entry {i}"
        );
    }
    // Every batch validates, and every offset in it resolves to it through the index.
    let mut batches = 0;
    let mut next = Offset(0);
    for b in seg.batches() {
        let b = b.unwrap();
        assert!(b.base_offset() >= next);
        for o in b.base_offset().get()..=b.last_offset().get() {
            let loc = seg.find_batch(Offset(o)).unwrap().unwrap();
            assert_eq!(loc.position.as_u64(), b.position(), "offset {o}");
        }
        // Lookup by this batch's max timestamp lands at or before its last offset.
        let (off, ts) = seg
            .find_offset_by_timestamp(b.max_timestamp(), Offset(0))
            .unwrap()
            .unwrap();
        assert!(off <= b.last_offset() && ts >= b.max_timestamp().min(ts));
        next = b.next_offset();
        batches += 1;
    }
    assert!(batches > 10);
    assert_eq!(seg.next_offset(), next);
    // The producer snapshot Kafka wrote at shutdown is named after the log end offset.
    assert!(
        fixture("__cluster_metadata-0")
            .join(format!("{:020}.snapshot", next.get()))
            .exists()
    );
}

/// Write compatibility: feeding Kafka's own batches through our segment writer (offsets kept, as
/// a follower or mirror appends) with Kafka's default settings, then sealing, reproduces Kafka's
/// `.log`, `.index` and `.timeindex` byte for byte.
#[test]
fn our_writer_reproduces_kafkas_segment_files_byte_for_byte() {
    for partition in ["foo-0", "__cluster_metadata-0"] {
        let src = open(partition);
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
        let mut seg = mirrorlog_segment::segment::ActiveSegment::create(
            storage,
            dir.path(),
            Offset(0),
            SegmentConfig::default(),
            0,
        )
        .unwrap();
        for b in src.batches() {
            seg.append(b.unwrap().into_bytes()).unwrap();
        }
        drop(seg.seal().unwrap());
        for suffix in [".log", ".index", ".timeindex"] {
            let name = format!("{:020}{suffix}", 0);
            let ours = std::fs::read(dir.path().join(&name)).unwrap();
            let kafka = std::fs::read(fixture(partition).join(&name)).unwrap();
            assert_eq!(ours, kafka, "{partition}/{name} differs from Kafka's");
        }
    }
}
