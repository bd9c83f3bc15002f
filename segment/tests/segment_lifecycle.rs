//! Scenario: one segment through its life — append, sparse indexes, reads, lookups by offset and
//! timestamp, roll conditions, truncation, sealing and reopening — on the real backends.

mod common;

use bytes::Bytes;
use common::{batch, batches};
use mirrorlog_index::{FilePosition, Offset, TimestampMs};
use mirrorlog_segment::RecordBatch;
use mirrorlog_segment::io::{PwriteStorage, Storage, UringStorage};
use mirrorlog_segment::segment::{
    ActiveSegment, INDEX_SUFFIX, LOG_SUFFIX, RollReason, SealedSegment, SegmentConfig,
    SegmentError, TIME_INDEX_SUFFIX, segment_path,
};
use std::sync::Arc;

fn backends() -> Vec<Arc<dyn Storage>> {
    let mut v: Vec<Arc<dyn Storage>> = vec![Arc::new(PwriteStorage::new())];
    match UringStorage::new() {
        Ok(u) => v.push(Arc::new(u)),
        Err(e) if std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some() => {
            eprintln!("io_uring unavailable ({e}); skipped as asked")
        }
        Err(e) => panic!("io_uring unavailable: {e} (set MIRRORLOG_SKIP_IO_URING_TESTS=1 to skip)"),
    }
    v
}

fn config(interval: u32) -> SegmentConfig {
    SegmentConfig {
        index_interval_bytes: interval,
        index_bytes_max: 4096,
        ..SegmentConfig::default()
    }
}

/// Kafka's sparse-index rule, computed independently: an entry (lastOffset, position) for a
/// batch whenever more than `interval` bytes were written since the last entry.
fn expected_index(sizes_and_last: &[(u32, i64)], interval: u32) -> Vec<(i64, u32)> {
    let mut since = 0u32;
    let mut pos = 0u32;
    let mut out = vec![];
    for &(size, last) in sizes_and_last {
        if since > interval {
            out.push((last, pos));
            since = 0;
        }
        pos += size;
        since += size;
    }
    out
}

#[test]
fn appended_batches_are_indexed_sparsely_as_kafka_does() {
    for storage in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(100), config(1000), 0)
                .unwrap();
        let bs = batches(100, 40, 3, 150, 1_000);
        let mut meta = vec![];
        for b in &bs {
            let rb = RecordBatch::new(b.clone()).unwrap();
            meta.push((rb.size_bytes() as u32, rb.last_offset().get()));
            seg.append(b.clone()).unwrap();
        }
        assert_eq!(seg.next_offset(), Offset(100 + 120));
        let want = expected_index(&meta, 1000);
        assert!(want.len() > 3, "the test must produce several entries");
        let got: Vec<(i64, u32)> = (0..seg.offset_index().entries())
            .map(|i| {
                seg.offset_index()
                    .entry(i)
                    .map(|(o, p)| (o.get(), p.get()))
                    .unwrap()
            })
            .collect();
        assert_eq!(got, want, "{}", storage.name());
        // Every offset resolves to the batch that holds it.
        for o in 100..220 {
            let loc = seg.find_batch(Offset(o)).unwrap().unwrap();
            assert!(
                loc.base_offset.get() <= o && o <= loc.last_offset.get(),
                "offset {o}: {loc:?}"
            );
        }
        assert!(seg.find_batch(Offset(220)).unwrap().is_none());
        seg.sanity_check().unwrap();
    }
}

#[test]
fn reads_return_file_slices_bounded_by_bytes_and_position() {
    for storage in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
        let bs = batches(0, 10, 2, 100, 5_000);
        let mut all = vec![];
        for b in &bs {
            all.extend_from_slice(b);
            seg.append(b.clone()).unwrap();
        }
        let size0 = bs[0].len() as u32;
        // From offset 3 (in batch 1), unbounded: everything from batch 1 on.
        let d = seg.read(Offset(3), u32::MAX, None, false).unwrap().unwrap();
        assert_eq!(d.first_batch_offset, Offset(2));
        assert_eq!(d.slice.position, FilePosition(size0));
        assert_eq!(&d.slice.read_all().unwrap()[..], &all[size0 as usize..]);
        // Into a reused buffer, longer and then shorter than the slice: exactly the slice.
        let mut buf = vec![7u8; all.len() + 100];
        d.slice.read_into(&mut buf).unwrap();
        assert_eq!(&buf[..], &all[size0 as usize..]);
        let small = seg.read(Offset(0), size0, None, false).unwrap().unwrap();
        small.slice.read_into(&mut buf).unwrap();
        assert_eq!(&buf[..], &all[..size0 as usize]);
        assert!(
            d.slice.file.raw_fd().is_some(),
            "real backends expose a descriptor for sendfile"
        );
        // A byte limit smaller than a batch: nothing, unless min_one_batch.
        assert!(
            seg.read(Offset(0), 10, None, false)
                .unwrap()
                .is_some_and(|d| d.slice.length == 10)
        );
        let d = seg.read(Offset(0), 10, None, true).unwrap().unwrap();
        assert_eq!(d.slice.length, size0);
        // Bounded by a max position (the high watermark's byte position).
        let hw_pos = FilePosition(size0 * 3);
        let d = seg
            .read(Offset(0), u32::MAX, Some(hw_pos), false)
            .unwrap()
            .unwrap();
        assert_eq!(d.slice.length, size0 * 3);
        assert!(
            seg.read(Offset(7), u32::MAX, Some(hw_pos), false)
                .unwrap()
                .is_none()
        );
        assert!(
            seg.read(Offset(20), u32::MAX, None, false)
                .unwrap()
                .is_none()
        );
    }
}

#[test]
fn lookup_by_timestamp_finds_the_first_record_at_or_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
    // Batch i holds offsets 3i..3i+2 with timestamps 1000+10i .. +2.
    for b in batches(0, 20, 3, 50, 1_000) {
        seg.append(b).unwrap();
    }
    let f = |ts: i64, start: i64| {
        seg.find_offset_by_timestamp(TimestampMs(ts), Offset(start))
            .unwrap()
    };
    assert_eq!(f(0, 0), Some((Offset(0), TimestampMs(1000))));
    assert_eq!(f(1000, 0), Some((Offset(0), TimestampMs(1000))));
    assert_eq!(f(1001, 0), Some((Offset(1), TimestampMs(1001))));
    assert_eq!(f(1003, 0), Some((Offset(3), TimestampMs(1010))));
    assert_eq!(f(1095, 0), Some((Offset(30), TimestampMs(1100))));
    assert_eq!(f(1000, 31), Some((Offset(31), TimestampMs(1101))));
    assert_eq!(f(1193, 0), None);
    let (ts, off) = seg.max_timestamp_so_far();
    assert_eq!((ts, off), (TimestampMs(1192), Offset(59)));
}

#[test]
fn truncation_is_batch_granular_and_keeps_indexes_consistent() {
    for storage in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
        let bs = batches(0, 10, 4, 64, 1_000);
        for b in &bs {
            seg.append(b.clone()).unwrap();
        }
        let before = seg.size_bytes();
        // Offset 13 sits in batch 3 (offsets 12..15): the whole batch goes.
        let removed = seg.truncate_to(Offset(13), 0).unwrap();
        let kept: u32 = bs[..3].iter().map(|b| b.len() as u32).sum();
        assert_eq!(seg.size_bytes(), kept);
        assert_eq!(removed, (before - kept) as u64);
        assert_eq!(seg.next_offset(), Offset(12));
        assert_eq!(seg.offset_index().last_offset(), Offset(11));
        assert!(seg.time_index().last_entry().1 <= Offset(11));
        assert_eq!(seg.max_timestamp_so_far(), (TimestampMs(1023), Offset(11)));
        seg.sanity_check().unwrap();
        // Appending continues from the truncation point.
        let extra = batch(12, 2, 10, 9_999);
        seg.append(extra.clone()).unwrap();
        assert_eq!(seg.next_offset(), Offset(14));
        assert_eq!(seg.truncate_to(Offset(100), 0).unwrap(), 0);
        assert_eq!(
            seg.truncate_to(Offset(0), 0).unwrap(),
            kept as u64 + extra.len() as u64
        );
        assert_eq!(seg.size_bytes(), 0);
        assert_eq!(seg.next_offset(), Offset(0));
    }
}

#[test]
fn roll_conditions_match_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let cfg = SegmentConfig {
        segment_bytes_max: 2_000,
        segment_ms: 1_000,
        roll_jitter_ms: 100,
        index_bytes_max: 24,
        index_interval_bytes: 0,
    };
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(1_000), cfg, 50_000).unwrap();
    let b = batch(1_000, 1, 100, 10_000);
    let n = b.len() as u32;
    // An empty segment never rolls on time, whatever the clock says.
    assert_eq!(
        seg.should_roll(n, Offset(1_000), TimestampMs(10_000_000), 10_000_000),
        None
    );
    seg.append(b).unwrap();
    // Size: the append would pass segment.bytes.
    assert_eq!(
        seg.should_roll(2_000 - n + 1, Offset(1_001), TimestampMs(10_000), 0),
        Some(RollReason::Size)
    );
    assert_eq!(
        seg.should_roll(2_000 - n, Offset(1_001), TimestampMs(10_000), 0),
        None
    );
    // Time: measured from the first batch's max timestamp to the incoming one, minus jitter.
    assert_eq!(
        seg.should_roll(10, Offset(1_001), TimestampMs(10_900), 0),
        None
    );
    assert_eq!(
        seg.should_roll(10, Offset(1_001), TimestampMs(10_901), 0),
        Some(RollReason::Time)
    );
    // Relative offset overflow.
    let far = Offset(1_000 + i32::MAX as i64 + 1);
    assert_eq!(
        seg.should_roll(10, far, TimestampMs(10_000), 0),
        Some(RollReason::OffsetOverflow)
    );
    // Index full. 36-byte indexes: 4 offset entries, 3 time entries of which Kafka keeps the
    // last for the roll (full at 2). Equal timestamps add no time entries, so the offset index
    // fills first; interval 0 indexes every batch after the first.
    let cfg = SegmentConfig {
        segment_bytes_max: 1 << 20,
        index_bytes_max: 36,
        ..cfg
    };
    let dir2 = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(storage.clone(), dir2.path(), Offset(0), cfg, 0).unwrap();
    for i in 0..5 {
        seg.append(batch(i, 1, 10, 10_000)).unwrap();
    }
    assert!(seg.offset_index().is_full());
    assert_eq!(
        seg.should_roll(10, Offset(5), TimestampMs(10_000), 0),
        Some(RollReason::OffsetIndexFull)
    );
    // Rising timestamps fill the time index (one slot kept for the roll) first.
    let dir3 = tempfile::tempdir().unwrap();
    let mut seg = ActiveSegment::create(storage, dir3.path(), Offset(0), cfg, 0).unwrap();
    for i in 0..3 {
        seg.append(batch(i, 1, 10, 10_000 + i)).unwrap();
    }
    assert!(!seg.offset_index().is_full());
    assert_eq!(
        seg.should_roll(10, Offset(3), TimestampMs(10_003), 0),
        Some(RollReason::TimeIndexFull)
    );
}

#[test]
fn an_append_beyond_int32_relative_offsets_is_refused_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
    let err = seg
        .append(batch(i32::MAX as i64 + 1, 1, 10, 0))
        .unwrap_err();
    assert!(matches!(err, SegmentError::DoesNotFit { .. }), "{err}");
    assert_eq!(seg.size_bytes(), 0);
}

#[test]
fn a_corrupt_buffer_is_refused_before_any_byte_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
    let mut two = batch(0, 1, 10, 0).to_vec();
    two.extend_from_slice(&batch(1, 1, 10, 0)[..30]);
    let err = seg.append(Bytes::from(two)).unwrap_err();
    assert!(matches!(err, SegmentError::Corrupt { .. }), "{err}");
    assert_eq!(seg.size_bytes(), 0);
    assert_eq!(seg.log_file().len().unwrap(), 0);
}

#[test]
#[should_panic(expected = "appended after offset")]
fn appending_offsets_that_go_backwards_is_a_programmer_error() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap();
    seg.append(batch(0, 5, 10, 0)).unwrap();
    let _ = seg.append(batch(3, 1, 10, 0));
}

#[test]
fn sealing_trims_indexes_and_the_sealed_segment_reopens_read_only() {
    for storage in backends() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(500), config(200), 0)
                .unwrap();
        let bs = batches(500, 30, 2, 100, 7_000);
        for b in &bs {
            seg.append(b.clone()).unwrap();
        }
        let entries = seg.offset_index().entries();
        let sealed = seg.seal().unwrap();
        let idx_len = std::fs::metadata(segment_path(dir.path(), Offset(500), INDEX_SUFFIX))
            .unwrap()
            .len();
        assert_eq!(
            idx_len,
            entries as u64 * 8,
            "offset index trimmed to its entries"
        );
        let tidx = std::fs::metadata(segment_path(dir.path(), Offset(500), TIME_INDEX_SUFFIX))
            .unwrap()
            .len();
        assert_eq!(tidx % 12, 0);
        assert_eq!(
            sealed.time_index().last_entry(),
            (TimestampMs(7_291), Offset(559)),
            "final max-timestamp entry"
        );
        assert_eq!(sealed.next_offset(), Offset(560));
        drop(sealed);
        let reopened =
            SealedSegment::open(storage.clone(), dir.path(), Offset(500), config(200), 0).unwrap();
        reopened.sanity_check().unwrap();
        assert_eq!(reopened.next_offset(), Offset(560));
        for o in 500..560 {
            let loc = reopened.find_batch(Offset(o)).unwrap().unwrap();
            assert!(loc.base_offset.get() <= o && o <= loc.last_offset.get());
        }
        let all: Vec<_> = reopened
            .batches()
            .map(|b| b.unwrap().into_bytes())
            .collect();
        assert_eq!(all, bs);
        // Back to active (as after truncation makes it the last segment): appends resume.
        let mut active = reopened.reopen_active().unwrap();
        assert_eq!(active.next_offset(), Offset(560));
        active.append(batch(560, 1, 5, 8_000)).unwrap();
        active.flush().unwrap();
        assert!(
            std::fs::metadata(segment_path(dir.path(), Offset(500), LOG_SUFFIX))
                .unwrap()
                .len()
                > 0
        );
    }
}

#[test]
fn reopening_an_active_segment_restores_its_append_state() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg =
        ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config(300), 0).unwrap();
    for b in batches(0, 25, 2, 80, 2_000) {
        seg.append(b).unwrap();
    }
    seg.flush().unwrap();
    let (next, max) = (seg.next_offset(), seg.max_timestamp_so_far());
    drop(seg);
    let seg = ActiveSegment::open(storage, dir.path(), Offset(0), config(300), 0).unwrap();
    assert_eq!(seg.next_offset(), next);
    assert_eq!(seg.max_timestamp_so_far(), max);
    seg.sanity_check().unwrap();
}

#[test]
fn creating_a_segment_over_an_existing_log_fails() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let _seg = ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config(0), 0).unwrap();
    let err = ActiveSegment::create(storage, dir.path(), Offset(0), config(0), 0).unwrap_err();
    assert!(
        err.to_string().contains("00000000000000000000.log"),
        "{err}"
    );
}
