//! The engine's one error type. Each variant says which Kafka error code the broker answers with
//! (the mapping itself lives in `broker`, the only crate that knows wire types).

use crate::producer_state::ProducerStateError;
use mirrorlog_index::Offset;
use mirrorlog_segment::segment::SegmentError;
use std::path::PathBuf;

/// What can go wrong in a partition log operation.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A batch failed its CRC or could not be framed (`CORRUPT_MESSAGE`).
    #[error("corrupt batch: {0}")]
    Corrupt(#[from] mirrorlog_segment::BatchError),
    /// A batch breaks a rule a leader enforces (`INVALID_RECORD`).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// A batch is larger than `max.message.bytes` (`MESSAGE_TOO_LARGE`).
    #[error("batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordTooLarge {
        /// Batch size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A batch cannot fit in a segment (`RECORD_BATCH_TOO_LARGE`).
    #[error("batch of {size} bytes cannot fit a segment of segment.bytes {segment_bytes}")]
    RecordBatchTooLarge {
        /// Batch size.
        size: usize,
        /// The segment size limit.
        segment_bytes: u32,
    },
    /// A record's timestamp is outside the topic's bounds (`INVALID_TIMESTAMP`).
    #[error(
        "record at index {record_index} has timestamp {timestamp}: {reason}{}",
        if .invalid.len() > 1 { format!(" ({} records of the batch are out of bounds)", .invalid.len()) } else { String::new() }
    )]
    InvalidTimestamp {
        /// The first such record of the batch.
        record_index: u32,
        /// Its timestamp.
        timestamp: i64,
        /// The bound it broke.
        reason: String,
        /// The timestamps the topic accepted, `[now − message.timestamp.before.max.ms,
        /// now + message.timestamp.after.max.ms]`, each computed as Kafka's `LogValidator` does
        /// (Java `long` arithmetic, which wraps) for the record errors' messages.
        valid_range: (i64, i64),
        /// Every record of the batch out of bounds, the first included (Kafka answers one
        /// record error each).
        invalid: Vec<OutOfRangeRecord>,
    },
    /// A client batch flagged LogAppendTime where Kafka's `LogValidator.validateTimestamp`
    /// refuses it (`INVALID_TIMESTAMP`): on a LogAppendTime topic, or on a CreateTime one when
    /// its header has no max timestamp (−1). Every record is refused, one record error each.
    #[error(
        "producers may not set LogAppendTime on this topic ({} records refused)",
        .records.len()
    )]
    LogAppendTimeSet {
        /// The timestamp every record of the batch reads as (the header's max timestamp).
        timestamp: i64,
        /// Each record in order, as Kafka's record error names it.
        records: Vec<FlaggedRecord>,
        /// Kafka names the records as its key- and value-skipping iterator reads them
        /// (`PartialDefaultRecord`, a null key or value of −1 bytes): a compressed batch whose
        /// codec the topic keeps. Otherwise `DefaultRecord` (a null one of 0 bytes).
        partial: bool,
    },
    /// A producer-state check failed (`INVALID_PRODUCER_EPOCH`, `OUT_OF_ORDER_SEQUENCE_NUMBER`,
    /// `INVALID_TXN_STATE`, `TRANSACTION_COORDINATOR_FENCED`).
    #[error(transparent)]
    ProducerState(#[from] ProducerStateError),
    /// A client append to a read-only (mirror) partition (`READ_ONLY_TOPIC`).
    #[error("partition {0} is a read-only mirror: client appends are refused")]
    ReadOnly(String),
    /// A replica append does not start at or after the log end (`OFFSET_OUT_OF_RANGE` to a
    /// follower; the mirror truncates and refetches).
    #[error("replica append starts at {first_offset}, below the log end offset {log_end_offset}")]
    UnexpectedAppendOffset {
        /// The append's first offset.
        first_offset: Offset,
        /// The log end offset.
        log_end_offset: Offset,
    },
    /// Batches of a replica append go backwards (`CORRUPT_MESSAGE`).
    #[error("replica append has offsets out of order: {next} after {previous_last}")]
    OffsetsOutOfOrder {
        /// Last offset of the previous batch.
        previous_last: Offset,
        /// Base offset of the next.
        next: Offset,
    },
    /// A read or offset request outside `[log start, log end]` (`OFFSET_OUT_OF_RANGE`).
    #[error("offset {requested} is outside [{log_start}, {log_end}]")]
    OffsetOutOfRange {
        /// The offset asked for.
        requested: Offset,
        /// Log start offset.
        log_start: Offset,
        /// Log end offset.
        log_end: Offset,
    },
    /// Storage failed (`KAFKA_STORAGE_ERROR`): the partition should be taken offline.
    #[error(transparent)]
    Segment(#[from] SegmentError),
    /// An index, checkpoint or snapshot file failed (`KAFKA_STORAGE_ERROR`).
    #[error(transparent)]
    Index(#[from] mirrorlog_index::Error),
    /// A configuration value was rejected (`INVALID_CONFIG`).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The partition's data directory was taken offline by an earlier storage failure (a failed
    /// `fdatasync` or write) and serves nothing until the process restarts and recovers it
    /// (`KAFKA_STORAGE_ERROR`, as Kafka answers for a partition in an offline log dir).
    #[error("log dir {} is offline: {reason}", path.display())]
    LogDirOffline {
        /// The data directory.
        path: PathBuf,
        /// The failure that took it offline.
        reason: String,
    },
    /// A durable append's wait found the log truncated since the append: the truncation (a
    /// follower's or mirror's divergence, a failback's log alignment) may have removed the
    /// appended batches, so they cannot be acknowledged as durable (`NOT_LEADER_OR_FOLLOWER`,
    /// what Kafka answers a produce request still waiting when its partition stops being led).
    #[error(
        "{partition}: the log was truncated while the append ending at offset {last_offset} waited for its sync; it may be gone"
    )]
    TruncatedBeforeDurable {
        /// The partition.
        partition: String,
        /// The append's last offset.
        last_offset: Offset,
    },
    /// The partition was deleted (DeleteTopics) while the caller still held it
    /// (`UNKNOWN_TOPIC_OR_PARTITION`).
    #[error("partition {0} was deleted")]
    PartitionDeleted(String),
    /// The partition directory is not usable.
    #[error("{}: {reason}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The engine's result type.
pub type EngineResult<T> = Result<T, EngineError>;

impl From<mirrorlog_segment::io::IoError> for EngineError {
    fn from(e: mirrorlog_segment::io::IoError) -> Self {
        EngineError::Segment(SegmentError::Io(e))
    }
}

/// A record of a client batch whose timestamp is out of the topic's bounds
/// ([`EngineError::InvalidTimestamp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfRangeRecord {
    /// Its index in the batch.
    pub index: u32,
    /// Its offset delta (its offset in the client's batch, whose base offset is 0), which
    /// Kafka's record error names: not always the index, as Kafka accepts any deltas.
    pub offset_delta: i32,
    /// Its timestamp.
    pub timestamp: i64,
}

/// A record of a client batch flagged LogAppendTime ([`EngineError::LogAppendTimeSet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlaggedRecord {
    /// Its offset delta (its offset in the client's batch).
    pub offset_delta: i32,
    /// Its key's length, −1 when null.
    pub key_bytes: i32,
    /// Its value's length, −1 when null.
    pub value_bytes: i32,
}
