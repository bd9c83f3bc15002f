//! The one place where mirrorlog errors become Kafka error codes.

use kafka_protocol::ResponseError;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::producer_state::ProducerStateError;

/// KIP-1279's READ_ONLY_TOPIC (prototype code 134): a client produced to a mirror topic.
pub const READ_ONLY_TOPIC: i16 = 134;

/// The Kafka error code an engine error is answered with.
pub fn engine_error_code(e: &EngineError) -> i16 {
    if let EngineError::ReadOnly(_) = e {
        return READ_ONLY_TOPIC;
    }
    engine_error(e).code()
}

fn engine_error(e: &EngineError) -> ResponseError {
    match e {
        EngineError::Corrupt(_) => ResponseError::CorruptMessage,
        EngineError::InvalidRecord(_) => ResponseError::InvalidRecord,
        EngineError::RecordTooLarge { .. } => ResponseError::MessageTooLarge,
        EngineError::RecordBatchTooLarge { .. } => ResponseError::RecordListTooLarge,
        EngineError::InvalidTimestamp { .. } => ResponseError::InvalidTimestamp,
        EngineError::ProducerState(p) => match p {
            ProducerStateError::InvalidProducerEpoch { .. } => ResponseError::InvalidProducerEpoch,
            ProducerStateError::OutOfOrderSequence { .. } => {
                ResponseError::OutOfOrderSequenceNumber
            }
            ProducerStateError::InvalidTxnState { .. } => ResponseError::InvalidTxnState,
            ProducerStateError::CoordinatorFenced { .. } => {
                ResponseError::TransactionCoordinatorFenced
            }
            _ => ResponseError::UnknownServerError,
        },
        EngineError::UnexpectedAppendOffset { .. } | EngineError::OffsetOutOfRange { .. } => {
            ResponseError::OffsetOutOfRange
        }
        EngineError::OffsetsOutOfOrder { .. } => ResponseError::CorruptMessage,
        EngineError::Config(_) => ResponseError::InvalidConfig,
        EngineError::Segment(_)
        | EngineError::Index(_)
        | EngineError::Directory { .. }
        | EngineError::LogDirOffline { .. } => ResponseError::KafkaStorageError,
        _ => ResponseError::UnknownServerError,
    }
}
