//! Shared helpers for the segment scenario tests.
#![allow(dead_code)]

use bytes::Bytes;
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::{BatchBuilder, Compression};

/// A batch at `base` with `records` records of `value_len` bytes each, timestamps `ts + i`.
pub fn batch(base: i64, records: usize, value_len: usize, ts: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .base_offset(Offset(base))
        .compression(Compression::None);
    for i in 0..records {
        let value = vec![(base as usize + i) as u8; value_len];
        b.append(
            TimestampMs(ts + i as i64),
            Some(format!("k{i}").as_bytes()),
            Some(&value),
            &[],
        );
    }
    b.build().into_bytes()
}

/// `n` consecutive batches of `records` records starting at offset `start`; timestamps rise by
/// 10 per batch from `ts0`.
pub fn batches(start: i64, n: usize, records: usize, value_len: usize, ts0: i64) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(n);
    let mut off = start;
    for i in 0..n {
        out.push(batch(off, records, value_len, ts0 + 10 * i as i64));
        off += records as i64;
    }
    out
}
