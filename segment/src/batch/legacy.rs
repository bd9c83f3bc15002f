//! Kafka's legacy message formats (magic 0 and 1, `LegacyRecord`/`AbstractLegacyRecordBatch`),
//! read only: a data directory carried over from an older Kafka holds them, and Kafka 4 still
//! reads, serves and recovers them (KIP-724 removed only their writing). The layout is in
//! `segment/FORMAT.md`.
//!
//! A legacy log entry is one message with a 12-byte offset/size prefix; it is what a
//! [`RecordBatch`] of magic 0 or 1 wraps. An uncompressed entry holds one record; a compressed
//! one (a "wrapper") holds, compressed in its value, further entries (the inner messages) and
//! carries the offset of the last of them.

use super::compression::{self, Compression};
use super::record::Record;
use super::{BatchError, MAX_DECOMPRESSED_BYTES, RecordBatch, TimestampType, be_i32, be_i64};
use bytes::Bytes;
use mirrorlog_index::{Offset, Sequence, TimestampMs};

/// `RecordBatch.MAGIC_VALUE_V0`.
pub const MAGIC_V0: i8 = 0;
/// `RecordBatch.MAGIC_VALUE_V1`.
pub const MAGIC_V1: i8 = 1;
/// Kafka's `LegacyRecord.RECORD_OVERHEAD_V0`: crc, magic, attributes, key and value lengths.
pub const RECORD_OVERHEAD_V0: usize = 14;
/// Kafka's `LegacyRecord.RECORD_OVERHEAD_V1`: v0's plus the timestamp.
pub const RECORD_OVERHEAD_V1: usize = 22;

/// Byte offsets of a legacy entry's fields, from the entry's start (see `FORMAT.md`).
pub mod field {
    /// `offset int64` (the last inner offset of a compressed wrapper)
    pub const OFFSET: usize = 0;
    /// `size int32`: the message's bytes after this field
    pub const SIZE: usize = 8;
    /// `crc uint32`: CRC-32 (IEEE, not CRC-32C) of magic..end
    pub const CRC: usize = 12;
    /// `magic int8`
    pub const MAGIC: usize = 16;
    /// `attributes int8`
    pub const ATTRIBUTES: usize = 17;
    /// `timestamp int64`, v1 only
    pub const TIMESTAMP: usize = 18;
}

/// Attribute bits of a legacy message.
pub mod attr {
    /// Bits 0–2: compression codec id (zstd is not allowed).
    pub const COMPRESSION_MASK: u8 = 0x07;
    /// Bit 3 (v1 only): timestamp type, set = LogAppendTime.
    pub const TIMESTAMP_TYPE: u8 = 0x08;
}

/// The smallest `size` (bytes after the 12-byte prefix) an entry of `magic` can have, for the
/// three magics Kafka reads; `None` for any other magic. For magic 2 this is the v2 header's
/// `RECORD_BATCH_OVERHEAD - LOG_OVERHEAD`.
pub fn min_entry_length(magic: i8) -> Option<usize> {
    match magic {
        MAGIC_V0 => Some(RECORD_OVERHEAD_V0),
        MAGIC_V1 => Some(RECORD_OVERHEAD_V1),
        super::MAGIC_V2 => Some(super::RECORD_BATCH_OVERHEAD - super::LOG_OVERHEAD),
        _ => None,
    }
}

/// The CRC-32 (IEEE) a legacy message stores: over magic..end.
pub(crate) fn compute_crc(entry: &[u8]) -> u32 {
    crc32fast::hash(&entry[field::MAGIC..])
}

/// The message's timestamp: v1's field, or −1 (v0 has none).
pub(crate) fn timestamp(entry: &[u8]) -> TimestampMs {
    if entry[field::MAGIC] as i8 == MAGIC_V1 {
        TimestampMs(be_i64(entry, field::TIMESTAMP))
    } else {
        TimestampMs::NONE
    }
}

/// Where the key length field starts.
fn key_at(magic: i8) -> usize {
    if magic == MAGIC_V1 {
        field::TIMESTAMP + 8
    } else {
        field::TIMESTAMP
    }
}

/// A message's key and value ranges (of `entry`), or why they do not fit. A negative length is
/// null, as Kafka reads it.
type KeyValue = (
    Option<std::ops::Range<usize>>,
    Option<std::ops::Range<usize>>,
);

fn key_value(entry: &[u8]) -> Result<KeyValue, String> {
    let magic = entry[field::MAGIC] as i8;
    let mut at = key_at(magic);
    let mut bytes = |what: &str| -> Result<Option<std::ops::Range<usize>>, String> {
        if at + 4 > entry.len() {
            return Err(format!("{what} length runs past the message's end"));
        }
        let len = be_i32(entry, at);
        at += 4;
        if len < 0 {
            return Ok(None);
        }
        let end = at + len as usize;
        if end > entry.len() {
            return Err(format!(
                "{what} of {len} bytes runs past the message's end ({} bytes left)",
                entry.len() - at
            ));
        }
        let r = at..end;
        at = end;
        Ok(Some(r))
    };
    let key = bytes("key")?;
    let value = bytes("value")?;
    Ok((key, value))
}

/// The header sanity of a legacy entry beyond its CRC: a codec legacy messages may use, a
/// non-negative offset, and a key and value that fit the message.
pub(crate) fn validate_header(batch: &RecordBatch) -> Result<(), BatchError> {
    let p = batch.position();
    batch.compression()?;
    let offset = batch.base_offset().get();
    if offset < 0 {
        return Err(BatchError::invalid(p, "offset", ">= 0", offset));
    }
    key_value(batch.as_bytes()).map_err(|reason| BatchError::CorruptRecord {
        position: p,
        record_index: 0,
        reason,
    })?;
    Ok(())
}

/// The codec of a legacy attributes byte; zstd and ids above it are errors.
pub(crate) fn compression(attributes: u8, position: u64) -> Result<Compression, BatchError> {
    let id = attributes & attr::COMPRESSION_MASK;
    match Compression::from_id(id) {
        Some(c) if c != Compression::Zstd => Ok(c),
        None => Err(BatchError::UnknownCodec { position, id }),
        Some(_) => Err(BatchError::invalid(
            position,
            "attributes.compression",
            "0..=3 (a legacy message)",
            id,
        )),
    }
}

/// The records of a legacy entry, as Kafka's `AbstractLegacyRecordBatch.iterator` gives them:
/// an uncompressed entry is its own one record; a compressed wrapper's inner messages are
/// decompressed (bounded by [`MAX_DECOMPRESSED_BYTES`]) and given absolute offsets (v1 inner
/// offsets are relative to the wrapper's, which is the last inner offset; v0's are absolute)
/// and, under a LogAppendTime v1 wrapper, the wrapper's timestamp. Inner CRCs are not checked
/// (Kafka's deep iterator does not); a compressed inner message is corrupt.
///
/// The inner messages are framed once here (the v1 base needs the last one's offset, and Kafka
/// fails the wrapper before its first record), then decoded one at a time as the iterator is
/// read: memory stays the decompressed bytes, whatever their number.
pub(crate) fn records(batch: &RecordBatch) -> Result<LegacyRecords, BatchError> {
    let position = batch.position();
    let corrupt = |reason: String| BatchError::CorruptRecord {
        position,
        record_index: 0,
        reason,
    };
    let entry = batch.as_bytes();
    let codec = batch.compression()?;
    let mut records = LegacyRecords {
        data: entry.clone(),
        pos: 0,
        wrapper: None,
        position,
        index: 0,
        count: 1,
    };
    if codec == Compression::None {
        return Ok(records);
    }
    let (_, value) = key_value(entry).map_err(corrupt)?;
    let value =
        value.ok_or_else(|| corrupt("compressed legacy message with a null value".into()))?;
    let mut compressed = entry.slice(value);
    let wrapper_magic = batch.magic();
    if codec == Compression::Lz4 && wrapper_magic == MAGIC_V0 {
        compressed = fix_lz4_v0_header_checksum(&compressed);
    }
    let data =
        compression::decompress(codec, &compressed, MAX_DECOMPRESSED_BYTES).map_err(|reason| {
            BatchError::Decompression {
                position,
                codec,
                reason,
            }
        })?;
    let (mut count, mut last, mut at) = (0u32, None, 0);
    while let Some(end) =
        frame_inner(&data, at).map_err(|r| corrupt(format!("inner message {count}: {r}")))?
    {
        last = Some(be_i64(&data, at + field::OFFSET));
        count += 1;
        at = end;
    }
    let Some(last) = last else {
        return Err(corrupt(
            "compressed legacy message with no inner messages".into(),
        ));
    };
    let mut base = 0;
    if wrapper_magic == MAGIC_V1 {
        let wrapper = batch.last_offset().get();
        // librdkafka once produced wrappers of offset 0: the inner offsets are then taken as
        // they are (Kafka's `absoluteBaseOffset = 0`).
        if wrapper != 0 {
            if wrapper < last {
                return Err(corrupt(format!(
                    "wrapper offset {wrapper} is less than the last inner offset {last}"
                )));
            }
            base = wrapper.wrapping_sub(last);
        }
    }
    let log_append_time = batch.timestamp_type() == TimestampType::LogAppendTime;
    records.data = data.slice(..at);
    records.count = count;
    records.wrapper = Some(Wrapper {
        base,
        log_append_time: log_append_time.then(|| timestamp(entry)),
    });
    Ok(records)
}

/// Frames the inner message at `at` of a wrapper's decompressed bytes: its end, or `None` at
/// the end (a partial prefix or message ends the stream, as Kafka's `DataLogInputStream`).
fn frame_inner(data: &[u8], at: usize) -> Result<Option<usize>, String> {
    if data.len() - at < 12 {
        return Ok(None);
    }
    let size = be_i32(data, at + field::SIZE);
    if size < RECORD_OVERHEAD_V0 as i32 {
        return Err(format!("size {size} is less than {RECORD_OVERHEAD_V0}"));
    }
    let end = at + 12 + size as usize;
    if end > data.len() {
        return Ok(None);
    }
    let magic = data[at + field::MAGIC] as i8;
    if magic != MAGIC_V0 && magic != MAGIC_V1 || end - at < 12 + overhead(magic) {
        return Err(format!("magic {magic} and size {size}"));
    }
    if data[at + field::ATTRIBUTES] & attr::COMPRESSION_MASK != 0 {
        return Err("inner messages must not be compressed".into());
    }
    Ok(Some(end))
}

/// What a compressed wrapper gives its inner records.
#[derive(Debug, Clone, Copy)]
struct Wrapper {
    /// Added to each inner offset (a v1 wrapper's base; 0 for v0).
    base: i64,
    /// A LogAppendTime v1 wrapper's timestamp, which every inner v1 record reads as.
    log_append_time: Option<TimestampMs>,
}

/// The records of one legacy entry (see [`records`]).
#[derive(Debug)]
pub(crate) struct LegacyRecords {
    /// The entry itself, or a wrapper's framed inner messages.
    data: Bytes,
    pos: usize,
    wrapper: Option<Wrapper>,
    position: u64,
    index: u32,
    count: u32,
}

impl LegacyRecords {
    /// How many records are left.
    pub(crate) fn remaining(&self) -> u32 {
        self.count - self.index
    }
}

impl Iterator for LegacyRecords {
    type Item = Result<Record, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.index == self.count {
            return None;
        }
        let end = match self.wrapper {
            None => self.data.len(),
            // Framed in `records`.
            Some(_) => self.pos + 12 + be_i32(&self.data, self.pos + field::SIZE) as usize,
        };
        let msg = self.data.slice(self.pos..end);
        let (offset, ts) = match self.wrapper {
            None => (Offset(be_i64(&msg, field::OFFSET)), None),
            Some(w) => (
                Offset(be_i64(&msg, field::OFFSET).wrapping_add(w.base)),
                w.log_append_time
                    .filter(|_| msg[field::MAGIC] as i8 == MAGIC_V1),
            ),
        };
        self.pos = end;
        let index = self.index;
        self.index += 1;
        Some(record(&msg, offset, ts).map_err(|reason| {
            // A record that fails ends the walk, as a v2 record does.
            self.index = self.count;
            BatchError::CorruptRecord {
                position: self.position,
                record_index: index,
                reason,
            }
        }))
    }
}

fn overhead(magic: i8) -> usize {
    if magic == MAGIC_V1 {
        RECORD_OVERHEAD_V1
    } else {
        RECORD_OVERHEAD_V0
    }
}

/// One message as a record; `ts` overrides its own timestamp (a LogAppendTime wrapper's).
fn record(msg: &Bytes, offset: Offset, ts: Option<TimestampMs>) -> Result<Record, String> {
    let (key, value) = key_value(msg)?;
    Ok(Record {
        offset,
        timestamp: ts.unwrap_or_else(|| timestamp(msg)),
        sequence: Sequence::NONE,
        attributes: msg[field::ATTRIBUTES] as i8,
        key: key.map(|r| msg.slice(r)),
        value: value.map(|r| msg.slice(r)),
        headers: Vec::new(),
        size_bytes: msg.len(),
    })
}

/// Kafka wrote v0 lz4 wrappers with a wrong frame header checksum (computed over the magic as
/// well as the descriptor; `useBrokenFlagDescriptorChecksum`) and reads them so: the frame is
/// given the checksum a standard decoder expects before it is decoded.
fn fix_lz4_v0_header_checksum(frame: &Bytes) -> Bytes {
    // magic (4) | FLG | BD | [content size (8)] | HC
    if frame.len() < 7 {
        return frame.clone();
    }
    let flg = frame[4];
    let hc_at = if flg & 0x08 != 0 { 14 } else { 6 };
    if frame.len() <= hc_at {
        return frame.clone();
    }
    let hc = (twox_hash::XxHash32::oneshot(0, &frame[4..hc_at]) >> 8) as u8;
    let mut v = frame.to_vec();
    v[hc_at] = hc;
    Bytes::from(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batches;

    /// A legacy entry as an older Kafka wrote it (`LegacyRecord.write`).
    fn entry(
        magic: i8,
        offset: i64,
        attributes: u8,
        ts: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut m = vec![0, 0, 0, 0, magic as u8, attributes];
        if magic == MAGIC_V1 {
            m.extend_from_slice(&ts.to_be_bytes());
        }
        for b in [key, value] {
            match b {
                None => m.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    m.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    m.extend_from_slice(b);
                }
            }
        }
        let crc = crc32fast::hash(&m[4..]);
        m[..4].copy_from_slice(&crc.to_be_bytes());
        let mut e = offset.to_be_bytes().to_vec();
        e.extend_from_slice(&(m.len() as i32).to_be_bytes());
        e.extend_from_slice(&m);
        e
    }

    /// A compressed wrapper around `inner` entries.
    fn wrapper(
        magic: i8,
        offset: i64,
        codec: Compression,
        ts_attr: u8,
        ts: i64,
        inner: &[Vec<u8>],
    ) -> RecordBatch {
        let value = compression::compress(codec, &inner.concat());
        let e = entry(magic, offset, codec.id() | ts_attr, ts, None, Some(&value));
        RecordBatch::new(Bytes::from(e)).unwrap()
    }

    fn offsets_and_timestamps(b: &RecordBatch) -> Vec<(i64, i64)> {
        b.records()
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.offset.get(), r.timestamp.get())
            })
            .collect()
    }

    #[test]
    fn a_v1_log_append_time_wrapper_gives_its_timestamp_to_every_inner_record() {
        let inner: Vec<_> = (0..3)
            .map(|i| entry(MAGIC_V1, i, 0, 100 + i, None, Some(b"v")))
            .collect();
        let b = wrapper(
            MAGIC_V1,
            42,
            Compression::Gzip,
            attr::TIMESTAMP_TYPE,
            9_000,
            &inner,
        );
        b.validate_stored().unwrap();
        assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(b.max_timestamp(), TimestampMs(9_000));
        assert_eq!(
            offsets_and_timestamps(&b),
            vec![(40, 9_000), (41, 9_000), (42, 9_000)]
        );
        // Create time: each record its own.
        let b = wrapper(MAGIC_V1, 42, Compression::Snappy, 0, 102, &inner);
        assert_eq!(
            offsets_and_timestamps(&b),
            vec![(40, 100), (41, 101), (42, 102)]
        );
    }

    #[test]
    fn v1_inner_offsets_are_relative_to_the_wrapper_and_v0_ones_absolute() {
        let rel: Vec<_> = (0..2)
            .map(|i| entry(MAGIC_V1, i, 0, 5, None, None))
            .collect();
        // librdkafka's wrapper offset 0: the inner offsets are taken as they are.
        let b = wrapper(MAGIC_V1, 0, Compression::Lz4, 0, 5, &rel);
        assert_eq!(offsets_and_timestamps(&b), vec![(0, 5), (1, 5)]);
        // A wrapper below its last inner offset is corrupt.
        let rel: Vec<_> = (0..4)
            .map(|i| entry(MAGIC_V1, i, 0, 5, None, None))
            .collect();
        let b = wrapper(MAGIC_V1, 2, Compression::Gzip, 0, 5, &rel);
        assert!(matches!(b.records(), Err(BatchError::CorruptRecord { .. })));
        let abs: Vec<_> = (7..9)
            .map(|i| entry(MAGIC_V0, i, 0, 0, Some(b"k"), None))
            .collect();
        let b = wrapper(MAGIC_V0, 8, Compression::Gzip, 0, 0, &abs);
        assert_eq!(offsets_and_timestamps(&b), vec![(7, -1), (8, -1)]);
        assert_eq!((b.base_offset(), b.last_offset()), (Offset(8), Offset(8)));
        assert_eq!(b.max_timestamp(), TimestampMs::NONE);
        assert_eq!(b.records_count(), -1);
    }

    #[test]
    fn what_kafka_would_not_read_is_refused() {
        // A compressed inner message.
        let inner = wrapper(
            MAGIC_V1,
            0,
            Compression::Gzip,
            0,
            5,
            &[entry(MAGIC_V1, 0, 0, 5, None, None)],
        );
        let b = wrapper(
            MAGIC_V1,
            0,
            Compression::Gzip,
            0,
            5,
            &[inner.into_bytes().to_vec()],
        );
        assert!(matches!(b.records(), Err(BatchError::CorruptRecord { .. })));
        // zstd never was a legacy codec.
        let b = RecordBatch::new(Bytes::from(entry(MAGIC_V1, 0, 4, 5, None, Some(b"x")))).unwrap();
        assert!(matches!(
            b.validate_stored(),
            Err(BatchError::InvalidField {
                field: "attributes.compression",
                ..
            })
        ));
        // A value running past the message, under a matching CRC.
        let mut e = entry(MAGIC_V0, 0, 0, 0, None, Some(b"abc"));
        let at = e.len() - 7;
        e[at..at + 4].copy_from_slice(&9i32.to_be_bytes());
        let crc = crc32fast::hash(&e[16..]);
        e[12..16].copy_from_slice(&crc.to_be_bytes());
        let b = RecordBatch::new(Bytes::from(e)).unwrap();
        assert!(matches!(
            b.validate_stored(),
            Err(BatchError::CorruptRecord { .. })
        ));
        // Shorter than a v1 message can be.
        let mut e = entry(MAGIC_V1, 0, 0, 0, None, None);
        e.truncate(12 + RECORD_OVERHEAD_V1 - 1);
        e[8..12].copy_from_slice(&((RECORD_OVERHEAD_V1 - 1) as i32).to_be_bytes());
        assert!(RecordBatch::new(Bytes::from(e)).is_err());
    }

    proptest::proptest! {
        /// Whatever the bytes after a legacy magic (and inside a wrapper), reading them ends in
        /// records or errors, never a panic.
        #[test]
        fn arbitrary_legacy_bytes_never_panic(
            magic in 0i8..=1,
            codec in 0u8..=7,
            offset in proptest::prelude::any::<i64>(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            inner in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
        ) {
            let mut e = offset.to_be_bytes().to_vec();
            e.extend_from_slice(&((body.len() + 6) as i32).to_be_bytes());
            e.extend_from_slice(&[0, 0, 0, 0, magic as u8, codec]);
            e.extend_from_slice(&body);
            if let Ok(b) = RecordBatch::new(Bytes::from(e)) {
                let _ = b.validate_stored();
                let _ = (b.base_offset(), b.max_timestamp(), b.records_count(), format!("{b:?}"));
                if let Ok(r) = b.records() {
                    r.take(1000).for_each(drop);
                }
                if let Ok(m) = b.record_metas() {
                    m.take(1000).for_each(drop);
                }
            }
            // A well-formed wrapper around arbitrary decompressed bytes.
            for c in [Compression::Gzip, Compression::Lz4] {
                let b = wrapper(magic, offset, c, 0, 1, std::slice::from_ref(&inner));
                if let Ok(r) = b.records() {
                    r.take(1000).for_each(drop);
                }
            }
        }
    }

    #[test]
    fn a_flipped_bit_fails_the_crc_32_and_clients_never_get_legacy_through() {
        let e = entry(MAGIC_V1, 3, 0, 77, Some(b"key"), Some(b"value"));
        let b = RecordBatch::new(Bytes::from(e.clone())).unwrap();
        b.validate_stored().unwrap();
        assert!(b.validate().is_err(), "the strict check stays v2 only");
        for i in field::MAGIC + 1..e.len() {
            let mut bad = e.clone();
            bad[i] ^= 1;
            let b = RecordBatch::new(Bytes::from(bad)).unwrap();
            assert!(
                matches!(b.validate_stored(), Err(BatchError::CrcMismatch { .. })),
                "byte {i}"
            );
        }
        // What clients send is framed by `Batches`: magic 2 only; a replica's answer may hold
        // legacy entries, framed and checked by their CRC-32 when told.
        assert!(
            Batches::new(Bytes::from(e.clone()))
                .next()
                .unwrap()
                .is_err()
        );
        let mut it = Batches::new(Bytes::from(e.clone())).legacy(true);
        assert_eq!(it.next().unwrap().unwrap().as_bytes()[..], e[..]);
        assert!(it.next().is_none() && it.truncated_tail().is_none());
        let mut bad = e.clone();
        bad[e.len() - 1] ^= 1;
        let mut it = Batches::new(Bytes::from(bad)).legacy(true);
        assert!(matches!(
            it.next(),
            Some(Err(BatchError::CrcMismatch { .. }))
        ));
        let mut it = Batches::new(Bytes::from(e[..e.len() - 1].to_vec())).legacy(true);
        assert!(it.next().is_none());
        assert_eq!(it.truncated_tail().unwrap().needed, Some(e.len()));
    }
}
