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

/// The Kafka error of an engine error (READ_ONLY_TOPIC, which Kafka does not know, is
/// [`engine_error_code`]'s).
pub(crate) fn engine_error(e: &EngineError) -> ResponseError {
    match e {
        // An unknown codec id or records that do not decompress: Kafka's log fails these with
        // `CompressionType.forId`'s `IllegalArgumentException` or a `KafkaException`, which
        // `ReplicaManager` answers as an unexpected error (not retriable), where a CRC or
        // framing failure is the retriable CORRUPT_MESSAGE.
        EngineError::Corrupt(b) if b.is_codec_failure() => ResponseError::UnknownServerError,
        EngineError::Corrupt(_) => ResponseError::CorruptMessage,
        EngineError::InvalidRecord(_) => ResponseError::InvalidRecord,
        EngineError::RecordTooLarge { .. } => ResponseError::MessageTooLarge,
        EngineError::RecordBatchTooLarge { .. } => ResponseError::RecordListTooLarge,
        EngineError::InvalidTimestamp { .. } | EngineError::LogAppendTimeSet { .. } => {
            ResponseError::InvalidTimestamp
        }
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
        EngineError::TruncatedBeforeDurable { .. } => ResponseError::NotLeaderOrFollower,
        EngineError::PartitionDeleted(_) => ResponseError::UnknownTopicOrPartition,
        EngineError::Segment(_)
        | EngineError::Index(_)
        | EngineError::Directory { .. }
        | EngineError::LogDirOffline { .. } => ResponseError::KafkaStorageError,
        _ => ResponseError::UnknownServerError,
    }
}

/// KIP-1279's error codes, with the prototype's numbers (spec §5; 135 is unassigned there).
/// `kafka-protocol` 0.18 knows none of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
#[non_exhaustive]
pub enum MirrorErrorCode {
    /// 134: produce to a mirror topic.
    ReadOnlyTopic = 134,
    /// 136: create a mirror that exists.
    ClusterMirrorAlreadyExists = 136,
    /// 137: the mirror does not exist; or the topic is in no mirror.
    UnknownClusterMirror = 137,
    /// 138: start a topic that another mirror holds (not STOPPED there).
    TopicAlreadyInClusterMirror = 138,
    /// 139: the topic belongs to another mirror; stop on STOPPED (MM14).
    TopicNotInClusterMirror = 139,
    /// 140: stop on PAUSED.
    MirrorTopicAlreadyPaused = 140,
    /// 141: resume on a topic that is neither PAUSED nor MIRRORING.
    MirrorTopicNotPaused = 141,
    /// 142: pause on STOPPED.
    MirrorTopicBeingStopped = 142,
    /// 143: delete a mirror with topics not STOPPED.
    ClusterMirrorNotEmpty = 143,
    /// 144: ClusterMirror ACL refused (no ACLs here: never raised).
    ClusterMirrorAuthorizationFailed = 144,
    /// 145: the `StateOffset` race check failed.
    InvalidClusterMirrorStates = 145,
    /// 146: start on a topic of this mirror that is not STOPPED (MIRRORING: success).
    MirrorTopicNotStopped = 146,
}

impl MirrorErrorCode {
    /// Every code.
    pub const ALL: &'static [MirrorErrorCode] = &[
        MirrorErrorCode::ReadOnlyTopic,
        MirrorErrorCode::ClusterMirrorAlreadyExists,
        MirrorErrorCode::UnknownClusterMirror,
        MirrorErrorCode::TopicAlreadyInClusterMirror,
        MirrorErrorCode::TopicNotInClusterMirror,
        MirrorErrorCode::MirrorTopicAlreadyPaused,
        MirrorErrorCode::MirrorTopicNotPaused,
        MirrorErrorCode::MirrorTopicBeingStopped,
        MirrorErrorCode::ClusterMirrorNotEmpty,
        MirrorErrorCode::ClusterMirrorAuthorizationFailed,
        MirrorErrorCode::InvalidClusterMirrorStates,
        MirrorErrorCode::MirrorTopicNotStopped,
    ];

    /// The wire code.
    pub fn code(self) -> i16 {
        self as i16
    }

    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            MirrorErrorCode::ReadOnlyTopic => "READ_ONLY_TOPIC",
            MirrorErrorCode::ClusterMirrorAlreadyExists => "CLUSTER_MIRROR_ALREADY_EXISTS",
            MirrorErrorCode::UnknownClusterMirror => "UNKNOWN_CLUSTER_MIRROR",
            MirrorErrorCode::TopicAlreadyInClusterMirror => "TOPIC_ALREADY_IN_CLUSTER_MIRROR",
            MirrorErrorCode::TopicNotInClusterMirror => "TOPIC_NOT_IN_CLUSTER_MIRROR",
            MirrorErrorCode::MirrorTopicAlreadyPaused => "MIRROR_TOPIC_ALREADY_PAUSED",
            MirrorErrorCode::MirrorTopicNotPaused => "MIRROR_TOPIC_NOT_PAUSED",
            MirrorErrorCode::MirrorTopicBeingStopped => "MIRROR_TOPIC_BEING_STOPPED",
            MirrorErrorCode::ClusterMirrorNotEmpty => "CLUSTER_MIRROR_NOT_EMPTY",
            MirrorErrorCode::ClusterMirrorAuthorizationFailed => {
                "CLUSTER_MIRROR_AUTHORIZATION_FAILED"
            }
            MirrorErrorCode::InvalidClusterMirrorStates => "INVALID_CLUSTER_MIRROR_STATES",
            MirrorErrorCode::MirrorTopicNotStopped => "MIRROR_TOPIC_NOT_STOPPED",
        }
    }

    /// The code for a wire value, if it is one of these.
    pub fn from_code(code: i16) -> Option<MirrorErrorCode> {
        Self::ALL.iter().copied().find(|c| c.code() == code)
    }
}

/// Kafka's name for any error code: the mirror codes, then the ones `kafka-protocol` knows
/// (`UNKNOWN_TOPIC_OR_PARTITION`…); `NONE` for 0.
pub fn error_name(code: i16) -> String {
    if code == 0 {
        return "NONE".into();
    }
    if let Some(m) = MirrorErrorCode::from_code(code) {
        return m.name().into();
    }
    let name = ResponseError::try_from_code(code).map(|e| format!("{e:?}"));
    match name {
        // The codec's catch-all `Unknown(code)` is not a name.
        Some(n) if !n.contains('(') => screaming_snake(&n),
        _ => format!("UNKNOWN_ERROR_CODE_{code}"),
    }
}

/// `UnknownTopicOrPartition` → `UNKNOWN_TOPIC_OR_PARTITION`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_error_codes_are_the_prototypes_and_distinct() {
        assert_eq!(MirrorErrorCode::ReadOnlyTopic.code(), READ_ONLY_TOPIC);
        let codes: Vec<i16> = MirrorErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(
            codes,
            vec![134, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146]
        );
    }

    #[test]
    fn error_names_cover_mirror_and_kafka_codes() {
        assert_eq!(error_name(143), "CLUSTER_MIRROR_NOT_EMPTY");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(40), "INVALID_CONFIG");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(135), "UNKNOWN_ERROR_CODE_135");
    }
}
