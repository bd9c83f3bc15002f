//! The one error type of batch decoding: every variant names the batch's position in the buffer
//! or file it came from, so a caller can say exactly where the bad bytes are.

use super::Compression;

/// What is wrong with a batch. `position` is the byte position of the batch's first byte in the
/// buffer (or segment file) it was read from.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Fewer bytes than the header or the declared length needs.
    #[error("batch at position {position}: truncated: needs {needed} bytes, {available} available")]
    Truncated {
        /// Position of the batch.
        position: u64,
        /// Bytes the batch needs.
        needed: usize,
        /// Bytes that are there.
        available: usize,
    },
    /// A header field holds a value Kafka would reject.
    #[error("batch at position {position}: invalid {field}: expected {expected}, found {found}")]
    InvalidField {
        /// Position of the batch.
        position: u64,
        /// The header field, named as in Kafka's `DefaultRecordBatch`.
        field: &'static str,
        /// What a valid value looks like.
        expected: String,
        /// The value found.
        found: String,
    },
    /// The stored CRC32C does not match the bytes (attributes..end).
    #[error(
        "batch at position {position}: crc mismatch: stored {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        /// Position of the batch.
        position: u64,
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// The records area cannot be decoded (Kafka's `InvalidRecordException`).
    #[error("batch at position {position}: corrupt record {record_index}: {reason}")]
    CorruptRecord {
        /// Position of the batch.
        position: u64,
        /// Index of the record within the batch (0-based).
        record_index: u32,
        /// What is wrong.
        reason: String,
    },
    /// The codec id (attributes bits 0–2) is one Kafka does not know (5–7; 4 in a legacy entry
    /// is [`InvalidField`](Self::InvalidField)): Kafka's `CompressionType.forId` throws for it.
    #[error("batch at position {position}: unknown compression codec id {id}")]
    UnknownCodec {
        /// Position of the batch.
        position: u64,
        /// The codec id found.
        id: u8,
    },
    /// The compressed records stream cannot be decompressed.
    #[error("batch at position {position}: {codec} decompression failed: {reason}")]
    Decompression {
        /// Position of the batch.
        position: u64,
        /// The batch's codec.
        codec: Compression,
        /// What the decoder said.
        reason: String,
    },
}

impl BatchError {
    /// The position of the batch the error is about.
    pub fn position(&self) -> u64 {
        match self {
            BatchError::Truncated { position, .. }
            | BatchError::InvalidField { position, .. }
            | BatchError::CrcMismatch { position, .. }
            | BatchError::CorruptRecord { position, .. }
            | BatchError::UnknownCodec { position, .. }
            | BatchError::Decompression { position, .. } => *position,
        }
    }

    /// Whether the batch's records cannot be read for their codec: an unknown codec id, or
    /// compressed records that do not decompress. Kafka fails these with exceptions that are
    /// not a `CorruptRecordException` (`CompressionType.forId`'s `IllegalArgumentException`,
    /// `KafkaException("Failed to decompress record stream")`), which its broker answers
    /// `UNKNOWN_SERVER_ERROR`; a CRC or framing failure is `CORRUPT_MESSAGE` there.
    pub fn is_codec_failure(&self) -> bool {
        matches!(
            self,
            BatchError::UnknownCodec { .. } | BatchError::Decompression { .. }
        )
    }

    pub(crate) fn invalid(
        position: u64,
        field: &'static str,
        expected: impl Into<String>,
        found: impl ToString,
    ) -> BatchError {
        BatchError::InvalidField {
            position,
            field,
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}
