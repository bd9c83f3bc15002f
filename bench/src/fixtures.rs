//! Deterministic inputs shared by the criterion benches and the harness.

use bytes::Bytes;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_segment::{BatchBuilder, BatchHeaderMut, Compression, RecordBatch};

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

/// Many copies of one batch laid back to back in one buffer, restamped with consecutive offsets:
/// what a segment of identical batches holds. Slices of it ([`BatchRun::batch`],
/// [`BatchRun::chunk`]) are zero-copy views, so the same bytes feed every variant and baseline.
#[derive(Debug, Clone)]
pub struct BatchRun {
    /// All batches, back to back.
    pub bytes: Bytes,
    /// Bytes per batch (every copy has the same size).
    pub batch_bytes: usize,
    /// Offsets per batch (records per batch).
    pub offsets_per_batch: i64,
    /// Number of batches.
    pub count: usize,
    /// Base offset of the first batch.
    pub base: Offset,
}

impl BatchRun {
    /// Batch `i`.
    pub fn batch(&self, i: usize) -> Bytes {
        self.bytes
            .slice(i * self.batch_bytes..(i + 1) * self.batch_bytes)
    }

    /// Chunk `i` of `per` consecutive batches (the last chunk may be shorter).
    pub fn chunk(&self, i: usize, per: usize) -> Bytes {
        let start = i * per;
        let end = ((i + 1) * per).min(self.count);
        self.bytes
            .slice(start * self.batch_bytes..end * self.batch_bytes)
    }

    /// How many chunks of `per` batches cover the run.
    pub fn chunks(&self, per: usize) -> usize {
        self.count.div_ceil(per)
    }

    /// Total bytes.
    pub fn len_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The offset after the last batch.
    pub fn next_offset(&self) -> Offset {
        Offset(self.base.get() + self.count as i64 * self.offsets_per_batch)
    }
}

/// `count` copies of [`batch_16k`]`(Compression::None, 1024)` (16 records of ~1 KiB incompressible
/// values, ~16 KiB per batch) with base offsets `base`, `base + 16`, …: the base offset sits
/// outside the CRC, so a copy is restamped in place and stays valid.
pub fn batch_run(base: Offset, count: usize) -> BatchRun {
    batch_run_in_epoch(base, count, LeaderEpoch::NONE)
}

/// [`batch_run`] with every batch's partition leader epoch set to `epoch` (a field outside the
/// CRC, like the base offset): what a source cluster's leader wrote, as a mirror fetches it.
pub fn batch_run_in_epoch(base: Offset, count: usize, epoch: LeaderEpoch) -> BatchRun {
    let one = batch_16k(Compression::None, 1024);
    let batch_bytes = one.size_bytes();
    let offsets_per_batch = one.last_offset_delta() as i64 + 1;
    let mut buf = Vec::with_capacity(batch_bytes * count);
    for i in 0..count {
        let start = buf.len();
        buf.extend_from_slice(one.as_bytes());
        let mut h = BatchHeaderMut::new(&mut buf[start..]).expect("one whole batch");
        h.set_base_offset(Offset(base.get() + i as i64 * offsets_per_batch));
        h.set_partition_leader_epoch(epoch);
    }
    BatchRun {
        bytes: Bytes::from(buf),
        batch_bytes,
        offsets_per_batch,
        count,
        base,
    }
}

/// How many ~16 KiB batches of [`batch_run`] make about `bytes` bytes (at least one).
pub fn batches_for(bytes: u64) -> usize {
    let one = batch_16k(Compression::None, 1024).size_bytes() as u64;
    (bytes / one).max(1) as usize
}

/// `count` producer batches as a client sends them: distinct, uniquely owned copies of
/// `template` (a client batch, base offset 0), each in its own allocation, so that an append that
/// stamps offsets in place may take the buffer without copying it.
pub fn client_batches(template: &RecordBatch, count: usize) -> Vec<Bytes> {
    (0..count)
        .map(|_| Bytes::from(template.as_bytes().to_vec()))
        .collect()
}
