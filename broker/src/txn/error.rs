//! What the transaction coordinator answers instead of success, each variant named after the
//! Kafka error it becomes.

use kafka_protocol::ResponseError;
use mirrorlog_engine::error::EngineError;
use mirrorlog_index::ErrorChain;

/// A transaction request the coordinator refused or could not complete.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    /// `INVALID_REQUEST`: e.g. an empty transactional id, or only one of producer id and epoch.
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    /// `INVALID_TRANSACTION_TIMEOUT`: not in `1 ..= transaction.max.timeout.ms`.
    #[error("transaction timeout {timeout_ms} ms is outside 1..={max_ms}")]
    InvalidTransactionTimeout {
        /// The timeout asked for.
        timeout_ms: i32,
        /// `transaction.max.timeout.ms`.
        max_ms: i32,
    },
    /// `INVALID_PRODUCER_ID_MAPPING`: the transactional id is unknown, or uses another producer
    /// id.
    #[error("the producer id is not the one assigned to this transactional id")]
    InvalidProducerIdMapping,
    /// `PRODUCER_FENCED` (`INVALID_PRODUCER_EPOCH` for requests older than KIP-588): a newer
    /// producer incarnation, or a timeout abort, bumped the epoch.
    #[error("the producer epoch is not the current one: the producer was fenced")]
    ProducerFenced,
    /// `CONCURRENT_TRANSACTIONS`: the previous transaction's markers are still being written.
    #[error("the previous transaction is still completing")]
    ConcurrentTransactions,
    /// `INVALID_TXN_STATE`: the request does not fit the transaction's state.
    #[error("{0}")]
    InvalidTxnState(String),
    /// `INVALID_TXN_STATE` (request v4) / `TRANSACTION_ABORTABLE` (v5): a partition verified
    /// by AddPartitionsToTxn v4+ is not in the transaction.
    #[error("the partition is not in the transaction")]
    PartitionNotInTransaction,
    /// `__transaction_state` could not be written: answered as Kafka's `TransactionStateManager`
    /// maps the append's error ([`state_log_error`]) — a storage failure NOT_COORDINATOR (the
    /// client looks the coordinator up again and retries), a record too large
    /// UNKNOWN_SERVER_ERROR.
    #[error("the transaction log could not be written ({append_error:?}): {reason}")]
    StateLogWrite {
        /// The append's error, as a Produce would get it.
        append_error: ResponseError,
        /// What failed.
        reason: String,
    },
    /// `COORDINATOR_NOT_AVAILABLE`: no producer id could be allocated.
    #[error("no producer id could be allocated: {0}")]
    ProducerIdUnavailable(String),
    /// `NOT_COORDINATOR`: the transactional id's `__transaction_state` partition is not loaded
    /// here (its data directory was offline at start), as Kafka answers for a partition it does
    /// not lead. Its state is neither read nor written until a restart loads it.
    #[error("the transaction state of this transactional id is not loaded: {0}")]
    NotLoaded(String),
    /// `COORDINATOR_LOAD_IN_PROGRESS`: no producer-id block can be read or written (the
    /// `__transaction_state` partition holding them is not loaded), as Kafka answers while it has
    /// no producer-id block; the client retries.
    #[error("producer ids are unavailable: {0}")]
    ProducerIdsNotLoaded(String),
    /// `UNKNOWN_SERVER_ERROR`.
    #[error("{0}")]
    Internal(String),
}

impl TxnError {
    /// A failed append to `__transaction_state`.
    pub(crate) fn state_log_write(e: &EngineError) -> TxnError {
        TxnError::StateLogWrite {
            append_error: crate::errors::engine_error(e),
            reason: ErrorChain(e).to_string(),
        }
    }

    /// The Kafka error, at the newest request versions.
    pub fn response_error(&self) -> ResponseError {
        match self {
            TxnError::InvalidRequest(_) => ResponseError::InvalidRequest,
            TxnError::InvalidTransactionTimeout { .. } => ResponseError::InvalidTransactionTimeout,
            TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping,
            TxnError::ProducerFenced => ResponseError::ProducerFenced,
            TxnError::ConcurrentTransactions => ResponseError::ConcurrentTransactions,
            TxnError::InvalidTxnState(_) => ResponseError::InvalidTxnState,
            TxnError::PartitionNotInTransaction => ResponseError::TransactionAbortable,
            TxnError::StateLogWrite { append_error, .. } => state_log_error(*append_error),
            TxnError::ProducerIdUnavailable(_) => ResponseError::CoordinatorNotAvailable,
            TxnError::NotLoaded(_) => ResponseError::NotCoordinator,
            TxnError::ProducerIdsNotLoaded(_) => ResponseError::CoordinatorLoadInProgress,
            TxnError::Internal(_) => ResponseError::UnknownServerError,
        }
    }

    /// The error code for a request of `version` of an API that learned `PRODUCER_FENCED` at
    /// `fenced_since` (older clients get `INVALID_PRODUCER_EPOCH`, as Kafka answers them) and,
    /// for AddPartitionsToTxn verification, `TRANSACTION_ABORTABLE` at `abortable_since`.
    pub fn code_for(&self, version: i16, fenced_since: i16, abortable_since: i16) -> i16 {
        match self {
            TxnError::ProducerFenced if version < fenced_since => {
                ResponseError::InvalidProducerEpoch.code()
            }
            TxnError::PartitionNotInTransaction if version < abortable_since => {
                ResponseError::InvalidTxnState.code()
            }
            e => e.response_error().code(),
        }
    }
}

/// What the coordinator answers for an append to `__transaction_state` that failed with
/// `append_error`, as Kafka's `TransactionStateManager.appendTransactionToLog` maps it: the
/// partition missing or short of replicas (or the append timed out) COORDINATOR_NOT_AVAILABLE,
/// the partition not led here or its log dir failed NOT_COORDINATOR, a record or batch too
/// large UNKNOWN_SERVER_ERROR (retrying or moving cannot help), any other error as it is.
pub fn state_log_error(append_error: ResponseError) -> ResponseError {
    match append_error {
        ResponseError::UnknownTopicOrPartition
        | ResponseError::NotEnoughReplicas
        | ResponseError::NotEnoughReplicasAfterAppend
        | ResponseError::RequestTimedOut => ResponseError::CoordinatorNotAvailable,
        ResponseError::NotLeaderOrFollower | ResponseError::KafkaStorageError => {
            ResponseError::NotCoordinator
        }
        ResponseError::MessageTooLarge | ResponseError::RecordListTooLarge => {
            ResponseError::UnknownServerError
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_log_append_errors_map_as_kafkas_transaction_state_manager() {
        for (append, answer) in [
            (
                ResponseError::UnknownTopicOrPartition,
                ResponseError::CoordinatorNotAvailable,
            ),
            (
                ResponseError::NotEnoughReplicas,
                ResponseError::CoordinatorNotAvailable,
            ),
            (
                ResponseError::NotEnoughReplicasAfterAppend,
                ResponseError::CoordinatorNotAvailable,
            ),
            (
                ResponseError::RequestTimedOut,
                ResponseError::CoordinatorNotAvailable,
            ),
            (
                ResponseError::NotLeaderOrFollower,
                ResponseError::NotCoordinator,
            ),
            (
                ResponseError::KafkaStorageError,
                ResponseError::NotCoordinator,
            ),
            (
                ResponseError::MessageTooLarge,
                ResponseError::UnknownServerError,
            ),
            (
                ResponseError::RecordListTooLarge,
                ResponseError::UnknownServerError,
            ),
            (ResponseError::CorruptMessage, ResponseError::CorruptMessage),
        ] {
            let e = TxnError::StateLogWrite {
                append_error: append,
                reason: String::new(),
            };
            assert_eq!(e.response_error(), answer, "{append:?}");
        }
    }
}
