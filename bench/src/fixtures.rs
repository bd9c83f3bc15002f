//! Deterministic inputs shared by the criterion benches and the harness.

use mirrorlog_index::TimestampMs;
use mirrorlog_segment::{BatchBuilder, Compression, RecordBatch};

/// A batch of about 16 KiB: `16384 / record_bytes` records whose values are `record_bytes` long
/// (minus a small key), filled with a cheap deterministic pattern that does not compress to
/// nothing.
pub fn batch_16k(codec: Compression, record_bytes: usize) -> RecordBatch {
    let n = (16 * 1024 / record_bytes).max(1);
    let mut b = BatchBuilder::new().compression(codec);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..n {
        let mut value = vec![0u8; record_bytes.saturating_sub(24)];
        for v in value.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *v = x as u8;
        }
        let key = format!("key-{i:08}");
        b.append(
            TimestampMs(1_700_000_000_000 + i as i64),
            Some(key.as_bytes()),
            Some(&value),
            &[],
        );
    }
    b.build()
}
