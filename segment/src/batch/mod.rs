//! Kafka's RecordBatch v2 (magic 2): a zero-copy view, validation, record iteration, a builder
//! and in-place header stamping. The byte layout is in `segment/FORMAT.md`.
//!
//! The same view reads the legacy entries (magic 0 and 1, [`legacy`]) that a segment written by
//! an older Kafka holds, as Kafka's `RecordBatch` interface covers both: their header fields
//! read as Kafka's `AbstractLegacyRecordBatch` gives them (no producer, no leader epoch).
//! [`Batches`], which frames what clients send, takes magic 2 only unless told
//! [`legacy`](Batches::legacy) (a replica's fetch answer, a coordinator's load), and nothing here
//! writes a legacy entry.
//!
//! A [`RecordBatch`] is a cheap handle on one batch's bytes (a `bytes::Bytes` slice of a request
//! or a segment): reading a header field is a big-endian load at a fixed offset, validating is one
//! CRC32C pass, and iterating an uncompressed batch hands out key and value slices of the same
//! buffer without copying them.

mod batches;
mod builder;
mod compression;
mod control;
mod error;
pub mod legacy;
mod record;
mod stamp;
pub mod varint;

pub use batches::{Batches, TruncatedTail};
pub use builder::BatchBuilder;
pub use compression::{Compression, MAX_DECOMPRESSED_BYTES};
pub use control::{ControlRecord, ControlRecordType, EndTxnMarker, MirrorPidReset};
pub use error::BatchError;
pub use record::{Header, Record, RecordMeta, RecordMetas, Records, STREAM_BUFFER_BYTES};
pub use stamp::BatchHeaderMut;

use bytes::Bytes;
use mirrorlog_index::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use std::fmt;

/// Bytes before `batchLength`'s end: baseOffset (8) + batchLength (4). Kafka's `LOG_OVERHEAD`.
pub const LOG_OVERHEAD: usize = 12;
/// The fixed header of a v2 batch. Kafka's `RECORD_BATCH_OVERHEAD`.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The only magic this crate writes, and the only one [`Batches`] frames.
pub const MAGIC_V2: i8 = 2;

/// Byte offsets of the header fields (see `FORMAT.md`).
pub mod field {
    /// `baseOffset int64`
    pub const BASE_OFFSET: usize = 0;
    /// `batchLength int32`
    pub const BATCH_LENGTH: usize = 8;
    /// `partitionLeaderEpoch int32` (outside the CRC)
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    /// `magic int8`
    pub const MAGIC: usize = 16;
    /// `crc uint32` (CRC32C of attributes..end)
    pub const CRC: usize = 17;
    /// `attributes int16`
    pub const ATTRIBUTES: usize = 21;
    /// `lastOffsetDelta int32`
    pub const LAST_OFFSET_DELTA: usize = 23;
    /// `baseTimestamp int64`
    pub const BASE_TIMESTAMP: usize = 27;
    /// `maxTimestamp int64`
    pub const MAX_TIMESTAMP: usize = 35;
    /// `producerId int64`
    pub const PRODUCER_ID: usize = 43;
    /// `producerEpoch int16`
    pub const PRODUCER_EPOCH: usize = 51;
    /// `baseSequence int32`
    pub const BASE_SEQUENCE: usize = 53;
    /// `recordsCount int32`
    pub const RECORDS_COUNT: usize = 57;
    /// First byte of the records area.
    pub const RECORDS: usize = 61;
}
const _: () = assert!(field::RECORDS == RECORD_BATCH_OVERHEAD);

/// Attribute bits (low byte of `attributes`).
pub mod attr {
    /// Bits 0–2: compression codec id.
    pub const COMPRESSION_MASK: i16 = 0x07;
    /// Bit 3: timestamp type, set = LogAppendTime.
    pub const TIMESTAMP_TYPE: i16 = 0x08;
    /// Bit 4: transactional.
    pub const TRANSACTIONAL: i16 = 0x10;
    /// Bit 5: control batch.
    pub const CONTROL: i16 = 0x20;
    /// Bit 6: `baseTimestamp` holds the delete horizon (compaction).
    pub const DELETE_HORIZON: i16 = 0x40;
    // Bits 7–15 Kafka defines none of, and checks none of: a batch with one set is appended
    // and served as it came (its CRC covers them), and so it is here.
}

/// How a batch's timestamps were assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// The producer's clock.
    CreateTime,
    /// The broker's clock at append (the batch's `maxTimestamp`).
    LogAppendTime,
}

impl TimestampType {
    /// The name `mirrorlog dump --json` prints.
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "create_time",
            TimestampType::LogAppendTime => "log_append_time",
        }
    }
}

/// Magic 0 or 1.
#[inline]
fn is_legacy_magic(magic: i8) -> bool {
    magic == legacy::MAGIC_V0 || magic == legacy::MAGIC_V1
}

#[inline]
pub(crate) fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
pub(crate) fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
#[inline]
pub(crate) fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The CRC32C Kafka stores in a batch: over attributes..end.
#[inline]
pub fn compute_crc(batch: &[u8]) -> u32 {
    mirrorlog_index::crc32c(&batch[field::ATTRIBUTES..])
}

/// A zero-copy view of one RecordBatch v2.
///
/// Made by [`RecordBatch::new`], which checks only what every accessor relies on (the buffer is
/// exactly `12 + batchLength` bytes and at least the 61-byte header); [`RecordBatch::validate`]
/// does the full check Kafka's `ensureValid` does plus header sanity.
#[derive(Clone)]
pub struct RecordBatch {
    buf: Bytes,
    position: u64,
}

impl RecordBatch {
    /// Wraps one batch's bytes. `buf` must hold exactly one batch.
    pub fn new(buf: Bytes) -> Result<RecordBatch, BatchError> {
        RecordBatch::at(buf, 0)
    }

    /// Wraps one batch's bytes that sit at `position` of some larger buffer or file; errors name
    /// that position.
    pub fn at(buf: Bytes, position: u64) -> Result<RecordBatch, BatchError> {
        if buf.len() > field::MAGIC && is_legacy_magic(buf[field::MAGIC] as i8) {
            return RecordBatch::legacy_at(buf, position);
        }
        if buf.len() < RECORD_BATCH_OVERHEAD {
            return Err(BatchError::Truncated {
                position,
                needed: RECORD_BATCH_OVERHEAD,
                available: buf.len(),
            });
        }
        let batch_length = be_i32(&buf, field::BATCH_LENGTH);
        let min = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
        if batch_length < min {
            return Err(BatchError::invalid(
                position,
                "batchLength",
                format!(">= {min}"),
                batch_length,
            ));
        }
        let size = LOG_OVERHEAD + batch_length as usize;
        if buf.len() < size {
            return Err(BatchError::Truncated {
                position,
                needed: size,
                available: buf.len(),
            });
        }
        if buf.len() > size {
            return Err(BatchError::invalid(
                position,
                "batchLength",
                format!("{} (the buffer's length - 12)", buf.len() - LOG_OVERHEAD),
                batch_length,
            ));
        }
        Ok(RecordBatch { buf, position })
    }

    /// [`at`](Self::at) for a legacy entry: at least its magic's overhead, exactly its size.
    fn legacy_at(buf: Bytes, position: u64) -> Result<RecordBatch, BatchError> {
        let magic = buf[field::MAGIC] as i8;
        let min = legacy::min_entry_length(magic).expect("a legacy magic");
        if buf.len() < LOG_OVERHEAD + min {
            return Err(BatchError::Truncated {
                position,
                needed: LOG_OVERHEAD + min,
                available: buf.len(),
            });
        }
        let size_field = be_i32(&buf, field::BATCH_LENGTH);
        if size_field < min as i32 || buf.len() != LOG_OVERHEAD + size_field as usize {
            return Err(BatchError::invalid(
                position,
                "size",
                format!(
                    ">= {min} and {} (the buffer's length - 12)",
                    buf.len() - LOG_OVERHEAD
                ),
                size_field,
            ));
        }
        Ok(RecordBatch { buf, position })
    }

    /// Whether this is a legacy entry (magic 0 or 1), read as Kafka's
    /// `AbstractLegacyRecordBatch` reads it.
    #[inline]
    pub fn is_legacy(&self) -> bool {
        is_legacy_magic(self.magic())
    }

    /// The batch's bytes.
    #[inline]
    pub fn as_bytes(&self) -> &Bytes {
        &self.buf
    }

    /// The batch's bytes, by value.
    #[inline]
    pub fn into_bytes(self) -> Bytes {
        self.buf
    }

    /// Where the batch sits in the buffer or file it was read from.
    #[inline]
    pub fn position(&self) -> u64 {
        self.position
    }

    /// `baseOffset`. For a legacy entry, its offset: the one record's offset, or for a
    /// compressed wrapper the offset of its *last* inner message — the wrapper's base offset
    /// (Kafka's `AbstractLegacyRecordBatch.baseOffset`) takes decompressing it
    /// ([`decompressed_base_offset`](Self::decompressed_base_offset)).
    #[inline]
    pub fn base_offset(&self) -> Offset {
        Offset(be_i64(&self.buf, field::BASE_OFFSET))
    }
    /// Kafka's `baseOffset` of the whole batch: [`base_offset`](Self::base_offset), but for a
    /// compressed legacy wrapper its first inner record's offset, which takes decompressing it
    /// (`AbstractLegacyRecordBatch.baseOffset`); no other batch costs more than a header read.
    ///
    /// # Errors
    /// A wrapper whose inner messages do not decompress or frame (see
    /// [`records`](Self::records)).
    pub fn decompressed_base_offset(&self) -> Result<Offset, BatchError> {
        if !self.is_legacy() || self.records_count() == 1 {
            return Ok(self.base_offset());
        }
        // A wrapper without inner messages is an error of `records`.
        legacy::records(self)?
            .next()
            .map_or(Ok(self.base_offset()), |r| r.map(|r| r.offset))
    }
    /// `batchLength`: the bytes after this field.
    #[inline]
    pub fn batch_length(&self) -> i32 {
        be_i32(&self.buf, field::BATCH_LENGTH)
    }
    /// Total size in bytes (`12 + batchLength`).
    #[inline]
    pub fn size_bytes(&self) -> usize {
        self.buf.len()
    }
    /// `partitionLeaderEpoch`.
    #[inline]
    pub fn partition_leader_epoch(&self) -> LeaderEpoch {
        if self.is_legacy() {
            return LeaderEpoch(-1);
        }
        LeaderEpoch(be_i32(&self.buf, field::PARTITION_LEADER_EPOCH))
    }
    /// `magic`.
    #[inline]
    pub fn magic(&self) -> i8 {
        self.buf[field::MAGIC] as i8
    }
    /// The stored `crc` (a legacy entry's CRC-32 sits at its own place).
    #[inline]
    pub fn crc(&self) -> u32 {
        let at = if self.is_legacy() {
            legacy::field::CRC
        } else {
            field::CRC
        };
        u32::from_be_bytes(self.buf[at..at + 4].try_into().expect("4 bytes"))
    }
    /// The CRC32C of the bytes the stored CRC covers (a legacy entry's CRC-32, IEEE, over
    /// magic..end).
    #[inline]
    pub fn computed_crc(&self) -> u32 {
        if self.is_legacy() {
            return legacy::compute_crc(&self.buf);
        }
        compute_crc(&self.buf)
    }
    /// `attributes`, all 16 bits (a legacy entry's one byte).
    #[inline]
    pub fn attributes(&self) -> i16 {
        if self.is_legacy() {
            return self.buf[legacy::field::ATTRIBUTES] as i16;
        }
        be_i16(&self.buf, field::ATTRIBUTES)
    }
    /// The compression codec; an id above 4 (above 3 in a legacy entry) is an error.
    #[inline]
    pub fn compression(&self) -> Result<Compression, BatchError> {
        if self.is_legacy() {
            return legacy::compression(self.buf[legacy::field::ATTRIBUTES], self.position);
        }
        let id = (self.attributes() & attr::COMPRESSION_MASK) as u8;
        Compression::from_id(id).ok_or(BatchError::UnknownCodec {
            position: self.position,
            id,
        })
    }
    /// The timestamp type (attribute bit 3; a v0 entry, which has no timestamp, reads as
    /// CreateTime).
    #[inline]
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic() != legacy::MAGIC_V0 && self.attributes() & attr::TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    /// Attribute bit 4.
    #[inline]
    pub fn is_transactional(&self) -> bool {
        !self.is_legacy() && self.attributes() & attr::TRANSACTIONAL != 0
    }
    /// Attribute bit 5.
    #[inline]
    pub fn is_control(&self) -> bool {
        !self.is_legacy() && self.attributes() & attr::CONTROL != 0
    }
    /// Attribute bit 6: `baseTimestamp` is the delete horizon set by compaction.
    #[inline]
    pub fn has_delete_horizon(&self) -> bool {
        !self.is_legacy() && self.attributes() & attr::DELETE_HORIZON != 0
    }
    /// `lastOffsetDelta` (0 for a legacy entry, whose base offset reads as its last).
    #[inline]
    pub fn last_offset_delta(&self) -> i32 {
        if self.is_legacy() {
            return 0;
        }
        be_i32(&self.buf, field::LAST_OFFSET_DELTA)
    }
    /// `baseOffset + lastOffsetDelta` (saturating: [`validate`](Self::validate) rejects
    /// overflow).
    #[inline]
    pub fn last_offset(&self) -> Offset {
        Offset(
            self.base_offset()
                .get()
                .saturating_add(self.last_offset_delta() as i64),
        )
    }
    /// The offset after this batch.
    #[inline]
    pub fn next_offset(&self) -> Offset {
        Offset(self.last_offset().get().saturating_add(1))
    }
    /// `baseTimestamp` (the first record's timestamp, or the delete horizon).
    #[inline]
    pub fn base_timestamp(&self) -> TimestampMs {
        if self.is_legacy() {
            return legacy::timestamp(&self.buf);
        }
        TimestampMs(be_i64(&self.buf, field::BASE_TIMESTAMP))
    }
    /// The delete horizon, when attribute bit 6 is set.
    #[inline]
    pub fn delete_horizon(&self) -> Option<TimestampMs> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }
    /// `maxTimestamp` (the broker's append time for LogAppendTime batches). A legacy entry's
    /// timestamp (a wrapper's is its inner messages' largest, or the append time), −1 for v0.
    #[inline]
    pub fn max_timestamp(&self) -> TimestampMs {
        if self.is_legacy() {
            return legacy::timestamp(&self.buf);
        }
        TimestampMs(be_i64(&self.buf, field::MAX_TIMESTAMP))
    }
    /// `producerId`.
    #[inline]
    pub fn producer_id(&self) -> ProducerId {
        if self.is_legacy() {
            return ProducerId(-1);
        }
        ProducerId(be_i64(&self.buf, field::PRODUCER_ID))
    }
    /// `producerEpoch`.
    #[inline]
    pub fn producer_epoch(&self) -> ProducerEpoch {
        if self.is_legacy() {
            return ProducerEpoch(-1);
        }
        ProducerEpoch(be_i16(&self.buf, field::PRODUCER_EPOCH))
    }
    /// `baseSequence`.
    #[inline]
    pub fn base_sequence(&self) -> Sequence {
        if self.is_legacy() {
            return Sequence::NONE;
        }
        Sequence(be_i32(&self.buf, field::BASE_SEQUENCE))
    }
    /// Kafka's `lastSequence`: `baseSequence + lastOffsetDelta` with wrap-around, or none.
    #[inline]
    pub fn last_sequence(&self) -> Sequence {
        let base = self.base_sequence();
        if base == Sequence::NONE {
            Sequence::NONE
        } else {
            base.increment(self.last_offset_delta())
        }
    }
    /// `recordsCount`. A legacy entry: 1 uncompressed, −1 for a compressed wrapper (unknown
    /// until decompressed; Kafka's `countOrNull` is null).
    #[inline]
    pub fn records_count(&self) -> i32 {
        if self.is_legacy() {
            return if self.attributes() as u8 & legacy::attr::COMPRESSION_MASK == 0 {
                1
            } else {
                -1
            };
        }
        be_i32(&self.buf, field::RECORDS_COUNT)
    }
    /// Whether the stored CRC matches (Kafka's `isValid`).
    #[inline]
    pub fn is_crc_valid(&self) -> bool {
        self.crc() == self.computed_crc()
    }

    /// Checks the batch as Kafka's `ensureValid` does (size, CRC32C over attributes..end) plus
    /// the header sanity a broker relies on: magic 2, a known codec,
    /// `lastOffsetDelta`/`recordsCount` consistent, no offset overflow, and for a control batch
    /// the absence of compression. The first problem found is returned.
    ///
    /// A legacy entry is refused here: what a client sends must be v2 (Produce v3+ carries
    /// magic 2 only). A segment's entries, and what a replica copies, are checked by
    /// [`validate_stored`](Self::validate_stored).
    pub fn validate(&self) -> Result<(), BatchError> {
        let p = self.position;
        if self.magic() != MAGIC_V2 {
            return Err(BatchError::invalid(p, "magic", "2", self.magic()));
        }
        self.validate_stored()
    }

    /// [`validate`](Self::validate) for bytes read from a segment, which may also hold legacy
    /// entries (magic 0 or 1) an older Kafka wrote: such an entry is checked as Kafka's
    /// `LegacyRecord.ensureValid` checks it (its CRC-32 over magic..end) plus a codec legacy
    /// messages may use, a non-negative offset and a key and value that fit it.
    pub fn validate_stored(&self) -> Result<(), BatchError> {
        let p = self.position;
        let stored = self.crc();
        let computed = self.computed_crc();
        if stored != computed {
            return Err(BatchError::CrcMismatch {
                position: p,
                stored,
                computed,
            });
        }
        self.validate_header()
    }

    /// The header checks of [`validate`](Self::validate) without the CRC pass (for callers that
    /// just computed it, such as the builder's own assertion).
    pub fn validate_header(&self) -> Result<(), BatchError> {
        let p = self.position;
        if self.is_legacy() {
            return legacy::validate_header(self);
        }
        if self.magic() != MAGIC_V2 {
            return Err(BatchError::invalid(p, "magic", "2", self.magic()));
        }
        // Attribute bits 7–15 are not checked, as Kafka's `ensureValid` and `LogValidator` check
        // none of them (see `attr`).
        let codec = self.compression()?;
        let count = self.records_count();
        if count < 0 {
            return Err(BatchError::invalid(p, "recordsCount", ">= 0", count));
        }
        let delta = self.last_offset_delta();
        if delta < 0 {
            return Err(BatchError::invalid(p, "lastOffsetDelta", ">= 0", delta));
        }
        // Compaction may remove records but keeps lastOffsetDelta, so the delta can exceed
        // count - 1; it can never be smaller.
        if count > 0 && delta < count - 1 {
            return Err(BatchError::invalid(
                p,
                "lastOffsetDelta",
                format!(">= recordsCount - 1 = {}", count - 1),
                delta,
            ));
        }
        let base = self.base_offset().get();
        if base < 0 || base.checked_add(delta as i64).is_none() {
            return Err(BatchError::invalid(
                p,
                "baseOffset",
                "0 <= baseOffset and baseOffset + lastOffsetDelta <= i64::MAX",
                base,
            ));
        }
        if codec == Compression::None {
            // Every record takes at least 7 bytes (length, attributes, timestampDelta,
            // offsetDelta, keyLength, valueLength, headersCount).
            let max = (self.size_bytes() - RECORD_BATCH_OVERHEAD) / record::MIN_RECORD_SIZE;
            if count as usize > max {
                return Err(BatchError::invalid(
                    p,
                    "recordsCount",
                    format!(
                        "<= {max} (what {} record bytes can hold)",
                        self.size_bytes() - 61
                    ),
                    count,
                ));
            }
        }
        if self.is_control() && codec != Compression::None {
            return Err(BatchError::invalid(
                p,
                "attributes.compression",
                "none for a control batch",
                codec.name(),
            ));
        }
        Ok(())
    }

    /// The records, decompressed if needed. Uncompressed batches hand out slices of this batch's
    /// buffer; compressed ones decompress the records area once into a new buffer (bounded by
    /// [`MAX_DECOMPRESSED_BYTES`]) and slice that.
    pub fn records(&self) -> Result<Records, BatchError> {
        if self.is_legacy() {
            return Ok(Records::legacy(self, legacy::records(self)?));
        }
        let (codec, area) = self.records_area()?;
        let data = if codec == Compression::None {
            area
        } else {
            compression::decompress(codec, &area, MAX_DECOMPRESSED_BYTES)
                .map_err(|reason| self.decompression_error(codec, reason))?
        };
        Ok(Records::new(self, data))
    }

    /// Each record's offset and timestamp, checked as [`records`](Self::records) checks them,
    /// without decompressing the batch whole: memory stays bounded whatever a compressed batch
    /// inflates to (see [`RecordMetas`]). Uncompressed batches are walked in place.
    pub fn record_metas(&self) -> Result<RecordMetas, BatchError> {
        self.record_metas_with(MAX_DECOMPRESSED_BYTES, STREAM_BUFFER_BYTES)
    }

    /// [`record_metas`](Self::record_metas) with another bound on the decompressed bytes and
    /// another buffer size.
    pub(crate) fn record_metas_with(
        &self,
        limit: usize,
        buffer_bytes: usize,
    ) -> Result<RecordMetas, BatchError> {
        if self.is_legacy() {
            // Legacy wrappers are decompressed whole, as Kafka's deep iterator does.
            return Ok(RecordMetas::in_place(self.records()?));
        }
        let (codec, area) = self.records_area()?;
        if codec == Compression::None {
            return Ok(RecordMetas::in_place(Records::new(self, area)));
        }
        let decoder = compression::Decompressor::new(codec, area, limit)
            .map_err(|reason| self.decompression_error(codec, reason))?;
        Ok(RecordMetas::streamed(self, codec, decoder, buffer_bytes))
    }

    /// The codec and the (possibly compressed) records area, once the count is known sane.
    fn records_area(&self) -> Result<(Compression, Bytes), BatchError> {
        let codec = self.compression()?;
        let count = self.records_count();
        if count < 0 {
            return Err(BatchError::invalid(
                self.position,
                "recordsCount",
                ">= 0",
                count,
            ));
        }
        Ok((codec, self.buf.slice(RECORD_BATCH_OVERHEAD..)))
    }

    fn decompression_error(&self, codec: Compression, reason: String) -> BatchError {
        BatchError::Decompression {
            position: self.position,
            codec,
            reason,
        }
    }

    /// The control record of a control batch (its first record), or `None` for a data batch.
    pub fn control_record(&self) -> Result<Option<ControlRecord>, BatchError> {
        if !self.is_control() {
            return Ok(None);
        }
        let mut records = self.records()?;
        match records.next() {
            None => Ok(None),
            Some(r) => {
                let r = r?;
                ControlRecord::parse(&r)
                    .map(Some)
                    .map_err(|reason| BatchError::CorruptRecord {
                        position: self.position,
                        record_index: 0,
                        reason,
                    })
            }
        }
    }
}

impl fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordBatch")
            .field("position", &self.position)
            .field("base_offset", &self.base_offset())
            .field("last_offset", &self.last_offset())
            .field("size_bytes", &self.size_bytes())
            .field("magic", &self.magic())
            .field(
                "attributes",
                &format_args!("{:#06x}", self.attributes() as u16),
            )
            .field("records_count", &self.records_count())
            .finish()
    }
}

#[cfg(test)]
mod tests;
