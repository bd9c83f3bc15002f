//! Index limits and damaged index files (found in review): an index filling up half-way
//! through a multi-batch append must refuse it before a byte is written; a lowered
//! `segment.index.bytes` must not panic a reopen; a time-index entry past the log fails the
//! sanity check (so the engine rebuilds the indexes) instead of panicking the next append.

mod common;

use bytes::{Bytes, BytesMut};
use common::batch;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{ActiveSegment, SegmentConfig, SegmentError};
use std::sync::Arc;

fn concat(bs: &[Bytes]) -> Bytes {
    let mut m = BytesMut::new();
    for b in bs {
        m.extend_from_slice(b);
    }
    m.freeze()
}

/// An append of several batches whose index entries overflow the offset index: the log bytes
/// are written, `size` advances, but `next_offset` stays behind and the segment is not poisoned.
#[test]
fn index_full_in_the_middle_of_a_multi_batch_append_leaves_log_and_next_offset_disagreeing() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig {
        index_bytes_max: 36, // 4 offset slots, 3 time slots (2 usable)
        index_interval_bytes: 0,
        ..SegmentConfig::default()
    };
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config, 0).unwrap();
    // Same timestamp everywhere: the time index holds a single entry.
    for o in 0..4 {
        seg.append(batch(o, 1, 10, 1_000)).unwrap();
    }
    assert_eq!(seg.offset_index().entries(), 3);
    assert!(
        seg.should_roll(200, Offset(5), mirrorlog_index::TimestampMs(1_000), 0)
            .is_none()
    );
    let run = concat(&[batch(4, 1, 10, 1_000), batch(5, 1, 10, 1_000)]);
    let size_before = seg.size_bytes();
    let err = seg.append(run.clone()).unwrap_err();
    eprintln!("append error: {err}");
    let size_after = seg.size_bytes();
    let next = seg.next_offset();
    // A failed append must leave the segment as it was, or poison it.
    let poisoned = matches!(seg.flush(), Err(SegmentError::Failed { .. }));
    assert!(
        size_after == size_before || poisoned,
        "append failed but the log grew {size_before} -> {size_after} bytes while next_offset stayed {next} \
         and the segment still takes appends"
    );
}

/// The same situation, then the caller retries the failed batches (its log end offset is
/// `next_offset`, which did not move): the segment accepts them and panics in the offset index.
#[test]
fn retrying_after_a_mid_append_index_full_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig {
        index_bytes_max: 36,
        index_interval_bytes: 0,
        ..SegmentConfig::default()
    };
    let mut seg = ActiveSegment::create(storage, dir.path(), Offset(0), config, 0).unwrap();
    for o in 0..4 {
        seg.append(batch(o, 1, 10, 1_000)).unwrap();
    }
    let run = concat(&[batch(4, 1, 10, 1_000), batch(5, 1, 10, 1_000)]);
    seg.append(run.clone()).unwrap_err();
    assert_eq!(seg.next_offset(), Offset(4), "caller's log end offset");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = seg.append(batch(4, 1, 10, 1_000));
    }));
    assert!(r.is_ok(), "append of offset 4 (== next_offset) panicked");
}

/// `segment.index.bytes` lowered below what an existing (crash-left, untrimmed) index holds: the
/// reopen for recovery panics in `MmapIndex::resize` instead of returning an error.
#[test]
fn recovery_open_with_a_smaller_index_size_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig {
        index_interval_bytes: 0,
        ..SegmentConfig::default()
    };
    {
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
        for o in 0..10 {
            seg.append(batch(o, 1, 10, 1_000 + o)).unwrap();
        }
        seg.flush().unwrap();
        // crash: dropped without sealing
    }
    let smaller = SegmentConfig {
        index_bytes_max: 24,
        ..config
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), smaller, 0)
            .map(|_| ())
    }));
    assert!(r.is_ok(), "open_for_recovery panicked");
}

/// A damaged `.timeindex` whose last entry names an offset past the log passes the segment's
/// sanity check, and the next append panics in `TimeIndex::maybe_append` instead of failing.
#[test]
fn a_time_index_entry_past_the_log_is_caught_before_an_append_panics() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig {
        index_interval_bytes: 0,
        ..SegmentConfig::default()
    };
    {
        let mut seg =
            ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
        for o in 0..10 {
            seg.append(batch(o, 1, 10, 1_000 + o)).unwrap();
        }
        seg.flush().unwrap();
    }
    let ti = dir.path().join("00000000000000000000.timeindex");
    let mut bytes = std::fs::read(&ti).unwrap();
    let n = bytes
        .chunks_exact(12)
        .take_while(|s| s.iter().any(|&b| b != 0))
        .count();
    assert!(n >= 2);
    // last entry: keep its timestamp, point it at relative offset 1000 (no such offset)
    bytes[(n - 1) * 12 + 8..n * 12].copy_from_slice(&1000i32.to_be_bytes());
    std::fs::write(&ti, &bytes).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut seg =
            ActiveSegment::open(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
        if seg.sanity_check().is_err() {
            return; // caught: fine
        }
        let _ = seg.append(batch(10, 1, 10, 5_000));
        let _ = seg.append(batch(11, 1, 10, 5_001));
    }));
    assert!(r.is_ok(), "append after a sanity-checked open panicked");
}

/// A recovery that fails part-way (here its caller's `on_batch` refuses a batch) leaves the
/// segment half-rebuilt: it refuses appends rather than take one at a wrong place (found in
/// review: `recover` cleared the failure first and left it cleared).
#[test]
fn a_failed_recovery_leaves_the_segment_refusing_appends() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig::default();
    let mut seg = ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
    for o in 0..3 {
        seg.append(batch(o, 1, 10, 1_000)).unwrap();
    }
    seg.flush().unwrap();
    drop(seg);
    let mut seg =
        ActiveSegment::open_for_recovery(storage, dir.path(), Offset(0), config, 0).unwrap();
    let mut seen = 0;
    let r = seg.recover(|_, _| {
        seen += 1;
        if seen == 2 {
            Err(SegmentError::Inconsistent {
                path: "test".into(),
                reason: "refused by the caller".into(),
            })
        } else {
            Ok(())
        }
    });
    assert!(r.is_err());
    assert!(seg.append(batch(3, 1, 10, 1_000)).is_err());
}
