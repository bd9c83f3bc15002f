//! A client's compressed batch is validated by streaming its records, as Kafka's LogValidator
//! does, not by inflating it whole: a zstd batch of a few KiB holding one 200 MiB record of
//! zeros is appended as leader while the allocations stay in the MiB. Before, each such Produce
//! held the whole decompressed batch (up to 256 MiB) while its records were checked.
//!
//! This binary counts every allocation (its own global allocator); the zstd decoder's internal
//! buffers come from C's malloc and are not counted.

mod common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, TimestampMs};
use mirrorlog_segment::batch::{LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, field, varint};
use mirrorlog_segment::{BatchBuilder, BatchHeaderMut, Compression, RecordBatch};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only the byte counts are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a pointer this allocator handed out, with its layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const VALUE_BYTES: usize = 200 << 20;

/// One record of `VALUE_BYTES` zeros at `T0`, as a zstd records area, compressed piece by
/// piece so that the test itself never holds the record.
fn zstd_records_area() -> Vec<u8> {
    let mut head = vec![0u8, 0, 0, 1]; // attributes, timestampDelta, offsetDelta, null key
    varint::write_varint(&mut head, VALUE_BYTES as i32);
    let body_len = head.len() + VALUE_BYTES + 1; // + headersCount
    let mut record = Vec::new();
    varint::write_varint(&mut record, body_len as i32);
    record.extend_from_slice(&head);
    let mut z = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    z.write_all(&record).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..VALUE_BYTES / zeros.len() {
        z.write_all(&zeros).unwrap();
    }
    z.write_all(&[0]).unwrap(); // headersCount
    z.finish().unwrap()
}

/// A valid client batch (header of a one-record zstd batch) over that records area.
fn bomb_batch() -> Bytes {
    let template = BatchBuilder::new()
        .compression(Compression::Zstd)
        .record(TimestampMs(T0), None, Some(b"x"))
        .build();
    let mut bytes = template.as_bytes()[..RECORD_BATCH_OVERHEAD].to_vec();
    bytes.extend_from_slice(&zstd_records_area());
    let len = (bytes.len() - LOG_OVERHEAD) as i32;
    bytes[field::BATCH_LENGTH..field::BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
    BatchHeaderMut::new(&mut bytes).unwrap().update_crc();
    let bytes = Bytes::from(bytes);
    RecordBatch::new(bytes.clone()).unwrap().validate().unwrap();
    bytes
}

#[test]
fn a_zstd_batch_inflating_to_200_mib_is_appended_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config();
    config.segment.segment_bytes_max = 1 << 20;
    let mut log = open(dir.path(), config, clock(), Shutdown::Clean);
    let batch = bomb_batch();
    assert!(batch.len() < 64 << 10, "{} bytes compressed", batch.len());

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let info = log
        .append_as_leader(batch, LeaderEpoch(0), LeaderOrigin::Client)
        .expect("a valid batch (compression.type=producer keeps it as it is)");
    let growth = PEAK.load(Ordering::Relaxed) - before;

    assert_eq!(
        (info.record_count, info.max_timestamp),
        (1, TimestampMs(T0))
    );
    assert!(
        growth < 16 << 20,
        "validating the batch allocated {} MiB at its peak",
        growth >> 20
    );
}
