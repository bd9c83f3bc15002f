//! Metadata and topic administration: Metadata, CreateTopics, DeleteTopics, CreatePartitions,
//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster and FindCoordinator.
//!
//! The cluster is this one node: it is the only broker, the controller, the leader and only
//! replica of every partition and the coordinator for every key. Replication factor is always 1
//! and every manual assignment must name this node.
//!
//! Topics live in the [`TopicRegistry`](crate::topics::TopicRegistry); their configs are the
//! engine's [`LogConfig`], stored by the log manager as overrides of the broker default. A config
//! is a topic override (`DYNAMIC_TOPIC_CONFIG`) when it was set for the topic (CreateTopics,
//! IncrementalAlterConfigs SET/APPEND/SUBTRACT, a mirror's config sync) — even to the broker
//! default's value, which it then keeps when that default changes, as in Kafka — or when its
//! value differs from the broker default; DELETE makes it the default again. Otherwise it is
//! `STATIC_BROKER_CONFIG` when the broker default differs from Kafka's default, else
//! `DEFAULT_CONFIG`. A topic's DescribeConfigs (and CreateTopics' answer) also lists, as Kafka
//! does, the Kafka topic configs mirrorlog does not implement (`min.insync.replicas`,
//! `unclean.leader.election.enable`, compaction, tiered storage, …) at the value mirrorlog
//! behaves as, `DEFAULT_CONFIG`; altering one is still refused.
//!
//! Behaviour follows Kafka's KRaft broker and controller (`KafkaApis`, `ControllerApis`,
//! `ReplicationControlManager`, `ConfigAdminManager`), with these single-node choices:
//! - Metadata auto-creation answers the new topic ready with `NONE` (Kafka's KRaft broker sends
//!   the creation to its controller and answers `UNKNOWN_TOPIC_OR_PARTITION` at once, and the
//!   client retries): the partitions exist when the response is sent, so every client can use
//!   them at once instead of backing off. A creation refused (a name colliding with an existing
//!   topic) is answered `UNKNOWN_TOPIC_OR_PARTITION`, as Kafka's. Internal topic names are never
//!   auto-created (their coordinators create them at start and own their partition counts).
//! - Deleting an internal topic, or adding partitions to one, is refused with
//!   `INVALID_TOPIC_EXCEPTION` (Kafka's broker allows both; the group and transaction
//!   coordinators here depend on them, as Kafka's own `DeleteRecords` refusal on internal topics
//!   does).
//! - There is no authorizer: authorized-operation bit fields, when asked for, hold every
//!   operation the resource type supports, as Kafka answers without an authorizer.
//! - A topic holds at most [`MAX_PARTITIONS_PER_TOPIC`] partitions.
//! - On a mirror topic, a change to a key its cluster mirror copies from the source (every key
//!   but those in `mirror.topic.properties.exclude`) is refused with `INVALID_CONFIG`, by
//!   IncrementalAlterConfigs and AlterConfigs alike, and AlterConfigs keeps the copied keys it
//!   leaves out. KIP-1279's prototype accepts the change and its next sync, which compares the
//!   source's values with the destination's at every refresh, overwrites it; the sync here
//!   writes only when the source's configs changed, so an accepted change would last until then.
//!   A read-only topic no mirror owns whose mirror state is in an unavailable `__mirror_state`
//!   partition (offline data directory) may be a mirror topic nobody restored: a change to those
//!   keys answers `KAFKA_STORAGE_ERROR`, as a start of the topic does.

use crate::broker::{Broker, BrokerConfig};
use crate::errors::engine_error_code;
use crate::topics::{
    INTERNAL_TOPICS, TopicError, TopicMeta, check_no_partition_offline, colliding, sb,
    topic_log_config, validate_topic_name,
};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, BrokerId, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, DescribeClusterRequest, DescribeClusterResponse, DescribeConfigsRequest,
    DescribeConfigsResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_engine::config::{ConfigError, InvalidReason, LogConfig};
use mirrorlog_engine::error::EngineError;
use mirrorlog_index::{ErrorChain, TopicPartition};
use mirrorlog_mirror::manager::MirrorManager;
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;
use std::collections::{BTreeMap, HashMap, HashSet};
use uuid::Uuid;

/// The most partitions one topic may have (CreateTopics, CreatePartitions), as `num.partitions`.
pub const MAX_PARTITIONS_PER_TOPIC: i32 = 100_000;

/// Config resource type `TOPIC` (DescribeConfigs, IncrementalAlterConfigs).
pub const RESOURCE_TOPIC: i8 = 2;
/// Config resource type `BROKER`.
pub const RESOURCE_BROKER: i8 = 4;
/// Config resource type `BROKER_LOGGER`: this broker's log levels (see [`crate::loggers`]).
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// Whether Kafka's `ConfigResource.Type.forId` knows a config resource type: TOPIC (2), BROKER
/// (4), BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32). Any other id is its `UNKNOWN`, which
/// fails a whole DescribeConfigs and is UNSUPPORTED_VERSION in the alter requests.
fn is_known_config_resource_type(t: i8) -> bool {
    matches!(t, 2 | 4 | 8 | 16 | 32)
}

/// Kafka's `Errors.INVALID_REQUEST` message, which a request failed whole carries
/// (`AbstractRequest.getErrorResponse` answers each entry with the error's own message).
const INVALID_REQUEST_MESSAGE: &str = "This most likely occurs because of a request being \
    malformed by the client library or the message was sent to an incompatible broker. See the \
    broker logs for more details.";

/// Config source `DYNAMIC_TOPIC_CONFIG`: a topic override.
pub const SOURCE_DYNAMIC_TOPIC_CONFIG: i8 = 1;
/// Config source `STATIC_BROKER_CONFIG`: the broker's configuration sets it.
pub const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
/// Config source `DEFAULT_CONFIG`: Kafka's default.
pub const SOURCE_DEFAULT_CONFIG: i8 = 5;
/// Config source `DYNAMIC_BROKER_LOGGER_CONFIG`: a logger's current level.
pub const SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;

/// IncrementalAlterConfigs operation `SET`.
pub const OP_SET: i8 = 0;
/// IncrementalAlterConfigs operation `DELETE` (back to the broker default).
pub const OP_DELETE: i8 = 1;
/// IncrementalAlterConfigs operation `APPEND` (list-valued configs only).
pub const OP_APPEND: i8 = 2;
/// IncrementalAlterConfigs operation `SUBTRACT` (list-valued configs only).
pub const OP_SUBTRACT: i8 = 3;

/// Authorized-operations value meaning "not requested" (Kafka's `INT32_MIN`).
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;
/// Every operation Kafka supports on a topic (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS), as a bit field of `AclOperation` codes.
pub const TOPIC_AUTHORIZED_OPERATIONS: i32 = ops_bits(&[3, 4, 5, 6, 7, 8, 10, 11]);
/// Every operation Kafka supports on the cluster (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE), as a bit field.
pub const CLUSTER_AUTHORIZED_OPERATIONS: i32 = ops_bits(&[5, 7, 8, 9, 10, 11, 12]);

const fn ops_bits(codes: &[i32]) -> i32 {
    let mut bits = 0;
    let mut i = 0;
    while i < codes.len() {
        bits |= 1 << codes[i];
        i += 1;
    }
    bits
}

// DescribeConfigs `ConfigType` values.
const TYPE_BOOLEAN: i8 = 1;
const TYPE_STRING: i8 = 2;
const TYPE_INT: i8 = 3;
const TYPE_LONG: i8 = 5;
const TYPE_LIST: i8 = 7;

/// One topic config: its broker (`server.properties`) name, type and a line of documentation.
struct TopicKey {
    topic: &'static str,
    broker: &'static str,
    config_type: i8,
    doc: &'static str,
}

/// Every key of [`LogConfig::SUPPORTED_TOPIC_KEYS`] with its broker synonym.
const TOPIC_KEYS: &[TopicKey] = &[
    TopicKey {
        topic: "cleanup.policy",
        broker: "log.cleanup.policy",
        config_type: TYPE_LIST,
        doc: "What happens to old segments: `delete`, or the empty list to keep every record \
              (retention.ms and retention.bytes ignored, as Kafka 4.2); compaction is not \
              supported.",
    },
    TopicKey {
        topic: "compression.type",
        broker: "compression.type",
        config_type: TYPE_STRING,
        doc: "The codec stored batches use; `producer` keeps the producer's.",
    },
    TopicKey {
        topic: "file.delete.delay.ms",
        broker: "log.segment.delete.delay.ms",
        config_type: TYPE_LONG,
        doc: "How long a deleted segment's files stay before removal.",
    },
    TopicKey {
        topic: "flush.messages",
        broker: "log.flush.interval.messages",
        config_type: TYPE_LONG,
        doc: "Fsync the log after this many messages.",
    },
    TopicKey {
        topic: "flush.ms",
        broker: "log.flush.interval.ms",
        config_type: TYPE_LONG,
        doc: "Fsync the log when the oldest unflushed message is this old.",
    },
    TopicKey {
        topic: "index.interval.bytes",
        broker: "log.index.interval.bytes",
        config_type: TYPE_INT,
        doc: "Bytes of log between two offset index entries.",
    },
    TopicKey {
        topic: "max.message.bytes",
        broker: "message.max.bytes",
        config_type: TYPE_INT,
        doc: "The largest record batch a producer may append.",
    },
    TopicKey {
        topic: "message.timestamp.after.max.ms",
        broker: "log.message.timestamp.after.max.ms",
        config_type: TYPE_LONG,
        doc: "How far a CreateTime timestamp may lie after the broker's clock.",
    },
    TopicKey {
        topic: "message.timestamp.before.max.ms",
        broker: "log.message.timestamp.before.max.ms",
        config_type: TYPE_LONG,
        doc: "How far a CreateTime timestamp may lie before the broker's clock.",
    },
    TopicKey {
        topic: "message.timestamp.type",
        broker: "log.message.timestamp.type",
        config_type: TYPE_STRING,
        doc: "CreateTime (the producer's timestamps) or LogAppendTime (the broker's clock).",
    },
    TopicKey {
        topic: "retention.bytes",
        broker: "log.retention.bytes",
        config_type: TYPE_LONG,
        doc: "Delete the oldest segments while the partition is larger than this; -1 = unlimited.",
    },
    TopicKey {
        topic: "retention.ms",
        broker: "log.retention.ms",
        config_type: TYPE_LONG,
        doc: "Delete segments whose newest record is older than this; -1 = unlimited.",
    },
    TopicKey {
        topic: "segment.bytes",
        broker: "log.segment.bytes",
        config_type: TYPE_INT,
        doc: "Roll a new segment at this size.",
    },
    TopicKey {
        topic: "segment.index.bytes",
        broker: "log.index.size.max.bytes",
        config_type: TYPE_INT,
        doc: "The size of a segment's offset and time indexes.",
    },
    TopicKey {
        topic: "segment.jitter.ms",
        broker: "log.roll.jitter.ms",
        config_type: TYPE_LONG,
        doc: "The most a time-based roll may come early (drawn once per log here).",
    },
    TopicKey {
        topic: "segment.ms",
        broker: "log.roll.ms",
        config_type: TYPE_LONG,
        doc: "Roll a new segment after this long even if it is not full.",
    },
];

/// A Kafka 4.x topic config (Kafka's `LogConfig` key set, as kafka-clients 4.3's `TopicConfig`
/// names it) that mirrorlog does not implement but lists, as Kafka lists every topic config,
/// with the value mirrorlog behaves as: Kafka's default, which here says what happens (one
/// replica, no compaction, no tiered storage, no replication throttle; the codecs' levels are
/// the ones the segment crate compresses with). Always `DEFAULT_CONFIG`; setting one is refused
/// `INVALID_CONFIG` (it is in [`LogConfig::UNSUPPORTED_KAFKA_TOPIC_KEYS`]). `preallocate` is not
/// listed: `log.preallocate` here writes zeros ahead of the synced end (README "Durable
/// appends"), neither Kafka's `false` nor its whole-segment preallocation.
struct DefaultTopicKey {
    topic: &'static str,
    /// Kafka's broker synonym (`ServerTopicConfigSynonyms`), listed `DEFAULT_CONFIG` with the
    /// same value (Kafka's broker default); `None` where Kafka has none (no synonyms then).
    broker: Option<&'static str>,
    config_type: i8,
    value: &'static str,
    doc: &'static str,
}

const TYPE_DOUBLE: i8 = 6;

/// Sorted by name; see [`DefaultTopicKey`].
const DEFAULT_TOPIC_KEYS: &[DefaultTopicKey] = &[
    DefaultTopicKey {
        topic: "compression.gzip.level",
        broker: Some("compression.gzip.level"),
        config_type: TYPE_INT,
        value: "-1",
        doc: "The gzip level stored batches are compressed with: zlib's default (6); not settable \
              here.",
    },
    DefaultTopicKey {
        topic: "compression.lz4.level",
        broker: Some("compression.lz4.level"),
        config_type: TYPE_INT,
        value: "9",
        doc: "The lz4 level stored batches are compressed with: LZ4's fast compressor, as Kafka's \
              default level 9; not settable here.",
    },
    DefaultTopicKey {
        topic: "compression.zstd.level",
        broker: Some("compression.zstd.level"),
        config_type: TYPE_INT,
        value: "3",
        doc: "The zstd level stored batches are compressed with; not settable here.",
    },
    DefaultTopicKey {
        topic: "delete.retention.ms",
        broker: Some("log.cleaner.delete.retention.ms"),
        config_type: TYPE_LONG,
        value: "86400000",
        doc: "Compaction's tombstone retention; mirrorlog does not compact, so it has no effect.",
    },
    DefaultTopicKey {
        topic: "follower.replication.throttled.replicas",
        broker: None,
        config_type: TYPE_LIST,
        value: "",
        doc: "Replicas whose replication is throttled: none (no replication throttle here).",
    },
    DefaultTopicKey {
        topic: "leader.replication.throttled.replicas",
        broker: None,
        config_type: TYPE_LIST,
        value: "",
        doc: "Replicas whose replication is throttled: none (no replication throttle here).",
    },
    DefaultTopicKey {
        topic: "local.retention.bytes",
        broker: Some("log.local.retention.bytes"),
        config_type: TYPE_LONG,
        value: "-2",
        doc: "Tiered storage's local retention; -2 = retention.bytes (no tiered storage here).",
    },
    DefaultTopicKey {
        topic: "local.retention.ms",
        broker: Some("log.local.retention.ms"),
        config_type: TYPE_LONG,
        value: "-2",
        doc: "Tiered storage's local retention; -2 = retention.ms (no tiered storage here).",
    },
    DefaultTopicKey {
        topic: "max.compaction.lag.ms",
        broker: Some("log.cleaner.max.compaction.lag.ms"),
        config_type: TYPE_LONG,
        value: "9223372036854775807",
        doc: "Compaction's longest lag; mirrorlog does not compact, so it has no effect.",
    },
    DefaultTopicKey {
        topic: "min.cleanable.dirty.ratio",
        broker: Some("log.cleaner.min.cleanable.ratio"),
        config_type: TYPE_DOUBLE,
        value: "0.5",
        doc: "Compaction's dirty ratio; mirrorlog does not compact, so it has no effect.",
    },
    DefaultTopicKey {
        topic: "min.compaction.lag.ms",
        broker: Some("log.cleaner.min.compaction.lag.ms"),
        config_type: TYPE_LONG,
        value: "0",
        doc: "Compaction's shortest lag; mirrorlog does not compact, so it has no effect.",
    },
    DefaultTopicKey {
        topic: "min.insync.replicas",
        broker: Some("min.insync.replicas"),
        config_type: TYPE_INT,
        value: "1",
        doc: "Replicas an acks=all write needs: this node, the only replica.",
    },
    DefaultTopicKey {
        topic: "remote.log.copy.disable",
        broker: None,
        config_type: TYPE_BOOLEAN,
        value: "false",
        doc: "Tiered storage's copy switch; no tiered storage here.",
    },
    DefaultTopicKey {
        topic: "remote.log.delete.on.disable",
        broker: None,
        config_type: TYPE_BOOLEAN,
        value: "false",
        doc: "Tiered storage's delete switch; no tiered storage here.",
    },
    DefaultTopicKey {
        topic: "remote.storage.enable",
        broker: None,
        config_type: TYPE_BOOLEAN,
        value: "false",
        doc: "Tiered storage: not implemented here.",
    },
    DefaultTopicKey {
        topic: "unclean.leader.election.enable",
        broker: Some("unclean.leader.election.enable"),
        config_type: TYPE_BOOLEAN,
        value: "false",
        doc: "No unclean election: this node is the only replica.",
    },
];

fn topic_key(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.topic == name)
}

fn error(e: ResponseError, message: impl Into<String>) -> TopicError {
    TopicError {
        code: e.code(),
        message: message.into(),
    }
}

fn name_of(s: &StrBytes) -> String {
    s.as_str().to_string()
}

/// Kafka's KRaft metadata log (`Topic.CLUSTER_METADATA_TOPIC_NAME`): not a topic a client may
/// create.
const KAFKA_METADATA_TOPIC: &str = "__cluster_metadata";

fn is_internal(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// The topic's config, from its first loaded partition (every partition of a topic shares it).
fn topic_config(b: &Broker, t: &TopicMeta) -> Option<LogConfig> {
    topic_log_config(&b.logs, &t.name, t.partitions)
}

// ---------------------------------------------------------------------------------------------
// Metadata

/// Metadata v0–12: this node as the only broker and controller; all, none or the named topics
/// (by name, or by id from v12), auto-creating unknown names when both the broker and (v4+) the
/// request allow it.
pub fn metadata(b: &Broker, r: MetadataRequest, v: i16) -> MetadataResponse {
    let node = b.config.node_id;
    let mut resp = MetadataResponse::default();
    let mut broker = MetadataResponseBroker::default();
    broker.node_id = BrokerId(node);
    broker.host = sb(&b.config.advertised_host);
    broker.port = b.config.advertised_port;
    broker.rack = None;
    resp.brokers = vec![broker];
    resp.cluster_id = Some(sb(&b.cluster_id));
    resp.controller_id = BrokerId(node);
    if (8..=10).contains(&v) && r.include_cluster_authorized_operations {
        resp.cluster_authorized_operations = CLUSTER_AUTHORIZED_OPERATIONS;
    }
    let include_ops = v >= 8 && r.include_topic_authorized_operations;
    // v0: an empty list means every topic; v1+: null means every topic, empty means none.
    let requested = match r.topics {
        None => None,
        Some(t) if t.is_empty() && v == 0 => None,
        Some(t) => Some(t),
    };
    if v < 12
        && let Some(topics) = &requested
        && topics
            .iter()
            .any(|t| t.name.is_none() || !t.topic_id.is_nil())
    {
        return refused_before_v12(topics);
    }
    let Some(requested) = requested else {
        resp.topics = b
            .topics
            .all()
            .iter()
            .map(|t| describe_topic(b, t, include_ops))
            .collect();
        return resp;
    };
    let auto_create = b.config.auto_create_topics && r.allow_auto_topic_creation;
    let mut seen_names = HashSet::new();
    let mut seen_ids = HashSet::new();
    // As Kafka's `handleTopicMetadataRequest`: from v12, a request naming any topic id is a
    // request by id, whatever names it carries. The Java client's request by id sends each
    // topic's name as "" (the field's default), not null.
    let by_id = v >= 12 && requested.iter().any(|t| !t.topic_id.is_nil());
    for t in requested {
        let name = if by_id {
            if t.topic_id.is_nil() {
                continue;
            }
            None
        } else {
            t.name
        };
        match name {
            Some(name) => {
                let name = name_of(&name.0);
                if seen_names.insert(name.clone()) {
                    resp.topics
                        .push(topic_by_name(b, &name, auto_create, include_ops));
                }
            }
            None => {
                if !seen_ids.insert(t.topic_id) {
                    continue;
                }
                match b.topics.by_id(t.topic_id) {
                    Some(meta) => resp.topics.push(describe_topic(b, &meta, include_ops)),
                    None => {
                        let mut out = MetadataResponseTopic::default();
                        out.error_code = ResponseError::UnknownTopicId.code();
                        out.name = None;
                        out.topic_id = t.topic_id;
                        resp.topics.push(out);
                    }
                }
            }
        }
    }
    resp
}

/// The answer to a Metadata request before v12 that names a topic by id or leaves a name null
/// (v10–11 carry both fields; ids are accepted from v12 only): Kafka's `handleTopicMetadataRequest`
/// refuses the whole request with an `InvalidRequestException`, answered by
/// `MetadataRequest.getErrorResponse` — every requested topic, in order, `INVALID_REQUEST` with
/// its name ("" for a null one) and id and no partitions; no brokers, cluster id or controller.
fn refused_before_v12(topics: &[MetadataRequestTopic]) -> MetadataResponse {
    let mut resp = MetadataResponse::default();
    resp.controller_id = BrokerId(-1);
    resp.cluster_id = None;
    resp.topics = topics
        .iter()
        .map(|t| {
            let mut out = MetadataResponseTopic::default();
            out.error_code = ResponseError::InvalidRequest.code();
            out.name = Some(t.name.clone().unwrap_or_else(|| TopicName(sb(""))));
            out.topic_id = t.topic_id;
            out.is_internal = false;
            out
        })
        .collect();
    resp
}

fn topic_by_name(
    b: &Broker,
    name: &str,
    auto_create: bool,
    include_ops: bool,
) -> MetadataResponseTopic {
    if let Some(t) = b.topics.get(name) {
        return describe_topic(b, &t, include_ops);
    }
    let failed = |e: i16| {
        let mut out = MetadataResponseTopic::default();
        out.error_code = e;
        out.name = Some(TopicName(sb(name)));
        out.is_internal = is_internal(name);
        // Kafka's `handleTopicMetadataRequest` sets the bit field on every topic it answers by
        // name, found or not (only unknown topic ids go without).
        if include_ops {
            out.topic_authorized_operations = TOPIC_AUTHORIZED_OPERATIONS;
        }
        out
    };
    if validate_topic_name(name).is_err() {
        return failed(ResponseError::InvalidTopicException.code());
    }
    // Kafka's KRaft metadata log is a valid name that no metadata cache holds: Kafka's
    // `AutoTopicCreationManager` forwards a CreateTopics for it to the controller, which refuses
    // it (logged at debug only), and answers the Metadata request at once
    // UNKNOWN_TOPIC_OR_PARTITION, not internal. Creating it here would reach the engine, which
    // refuses its directory (a storage error and a warning).
    if !auto_create || is_internal(name) || name == KAFKA_METADATA_TOPIC {
        return failed(ResponseError::UnknownTopicOrPartition.code());
    }
    let config = b.logs.default_log_config().clone();
    match b
        .topics
        .create(&b.logs, name, b.config.num_partitions, config, None)
    {
        Ok(t) => {
            tracing::info!(
                topic = name,
                partitions = t.partitions,
                "auto-created topic"
            );
            describe_topic(b, &t, include_ops)
        }
        Err(e) if e.code == ResponseError::TopicAlreadyExists.code() => match b.topics.get(name) {
            Some(t) => describe_topic(b, &t, include_ops),
            // Created and deleted again meanwhile.
            None => failed(ResponseError::UnknownTopicOrPartition.code()),
        },
        // A name colliding with an existing topic once '.' and '_' are alike: Kafka's broker
        // sends its creation to the controller, which refuses it (logged at debug), and has
        // answered UNKNOWN_TOPIC_OR_PARTITION already, as for any creation it sends.
        Err(e) if e.code == ResponseError::InvalidTopicException.code() => {
            tracing::debug!(
                topic = name,
                "auto-creating the topic was refused: {}",
                e.message
            );
            failed(ResponseError::UnknownTopicOrPartition.code())
        }
        Err(e) => {
            tracing::warn!(
                topic = name,
                "auto-creating the topic failed: {}",
                e.message
            );
            failed(e.code)
        }
    }
}

fn describe_topic(b: &Broker, t: &TopicMeta, include_ops: bool) -> MetadataResponseTopic {
    let node = BrokerId(b.config.node_id);
    let mut out = MetadataResponseTopic::default();
    out.error_code = 0;
    out.name = Some(TopicName(sb(&t.name)));
    out.topic_id = t.id;
    out.is_internal = t.internal;
    if include_ops {
        out.topic_authorized_operations = TOPIC_AUTHORIZED_OPERATIONS;
    }
    out.partitions = (0..t.partitions)
        .map(|p| {
            let mut part = MetadataResponsePartition::default();
            part.partition_index = p;
            part.replica_nodes = vec![node];
            part.offline_replicas = vec![];
            let tp = TopicPartition {
                topic: t.name.clone(),
                partition: p,
            };
            let loaded = b.partition(&t.name, p);
            if b.logs.lookup(&tp).is_err() {
                // In a data directory that is offline (since its load, or since a storage
                // failure): as Kafka's KRaft metadata cache answers once the controller has
                // moved the leadership off a replica in an offline directory — no leader,
                // LEADER_NOT_AVAILABLE, the replicas and ISR as they are (no broker is fenced,
                // so v0's filtering keeps them) and this node among the offline replicas
                // (`isReplicaInOfflineDir`). The leader epoch is the log's when it was loaded
                // (not raised, so that the answer after a restart is not older than this
                // one), else unknown.
                part.error_code = ResponseError::LeaderNotAvailable.code();
                part.leader_id = BrokerId(-1);
                part.leader_epoch = loaded.map_or(-1, |h| b.leader_epoch(&h));
                part.isr_nodes = vec![node];
                part.offline_replicas = vec![node];
                return part;
            }
            match loaded {
                Some(h) => {
                    part.error_code = 0;
                    part.leader_id = node;
                    part.leader_epoch = b.leader_epoch(&h);
                    part.isr_nodes = vec![node];
                }
                // The registry knows a partition the log manager does not (a half-created or
                // half-deleted topic): no leader for now.
                None => {
                    part.error_code = ResponseError::LeaderNotAvailable.code();
                    part.leader_id = BrokerId(-1);
                    part.leader_epoch = -1;
                    part.isr_nodes = vec![];
                }
            }
            part
        })
        .collect();
    out
}

// ---------------------------------------------------------------------------------------------
// CreateTopics

/// What a valid CreatableTopic asks for.
struct NewTopic {
    partitions: i32,
    config: LogConfig,
}

/// Kafka's admin rule for a request that names one resource more than once: that resource is
/// answered once, with INVALID_REQUEST (`duplicate`), and its other entries not at all; every
/// other item gets `run`'s outcome. In request order.
fn each_once<'a, T, K, R>(
    items: &'a [T],
    key: impl Fn(&T) -> K,
    duplicate: &str,
    mut run: impl FnMut(&'a T) -> Result<R, TopicError>,
) -> Vec<(&'a T, Result<R, TopicError>)>
where
    K: Eq + std::hash::Hash,
{
    let mut counts: HashMap<K, usize> = HashMap::new();
    for t in items {
        *counts.entry(key(t)).or_default() += 1;
    }
    let mut out = Vec::with_capacity(items.len());
    for t in items {
        match counts.get_mut(&key(t)) {
            // Answered already (the first of its duplicates).
            Some(0) => {}
            Some(n) if *n > 1 => {
                *n = 0;
                out.push((t, Err(error(ResponseError::InvalidRequest, duplicate))));
            }
            _ => out.push((t, run(t))),
        }
    }
    out
}

/// Whether a CreateTopics or CreatePartitions request fails whole with `REQUEST_TIMED_OUT`
/// (every entry, no message, nothing created or grown): Kafka's controller takes `timeout_ms` as
/// the deadline of the request's one write event (`ControllerApis`:
/// `requestTimeoutMsToDeadlineNs`), and its event queue (`KafkaEventQueue`) fails an event
/// whose deadline has passed before running it — always so with 0 or less. Only a request
/// reaching the controller has that event: one naming some topic once, other than `kept_back`
/// (answered by `ControllerApis` itself).
fn no_time_left<T>(
    timeout_ms: i32,
    items: &[T],
    name: impl Fn(&T) -> String,
    kept_back: Option<&str>,
) -> bool {
    if timeout_ms > 0 {
        return false;
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for t in items {
        *counts.entry(name(t)).or_default() += 1;
    }
    counts
        .iter()
        .any(|(n, &c)| c == 1 && Some(n.as_str()) != kept_back)
}

/// CreateTopics v2–7: per topic, validates the name, partitions, replication factor (1 or -1),
/// manual assignment (this node only) and configs, then creates it unless `validate_only`. A
/// name colliding ('.' and '_' alike) with a topic that existed before the request is
/// `INVALID_TOPIC_EXCEPTION`; two colliding names of one request are both created, as Kafka's
/// controller checks only against the topics it had. A `timeout_ms` of 0 or less times the
/// request out (`no_time_left`).
/// v5+ answers the partition count, replication factor and every config with its source; v7
/// the topic id.
pub fn create_topics(b: &Broker, r: CreateTopicsRequest, v: i16) -> CreateTopicsResponse {
    let mut resp = CreateTopicsResponse::default();
    let kept_back = Some(KAFKA_METADATA_TOPIC);
    if no_time_left(r.timeout_ms, &r.topics, |t| name_of(&t.name.0), kept_back) {
        resp.topics = r
            .topics
            .iter()
            .map(|t| {
                let mut out = CreatableTopicResult::default();
                out.name = t.name.clone();
                out.error_code = ResponseError::RequestTimedOut.code();
                out.num_partitions = -1;
                out.replication_factor = -1;
                out.configs = None;
                out
            })
            .collect();
        return resp;
    }
    // The topics this request created so far: Kafka checks a name's collisions against the
    // topics that existed before the request only.
    let mut created = HashSet::new();
    for (t, outcome) in each_once(
        &r.topics,
        |t| name_of(&t.name.0),
        "Duplicate topic name.",
        |t| {
            let name = name_of(&t.name.0);
            let outcome = create_one(b, &name, t, r.validate_only, &created);
            if outcome.is_ok() && !r.validate_only {
                created.insert(name);
            }
            outcome
        },
    ) {
        let mut out = CreatableTopicResult::default();
        out.name = t.name.clone();
        out.configs = None;
        match outcome {
            Err(e) => {
                out.error_code = e.code;
                out.error_message = Some(sb(&e.message));
                out.num_partitions = -1;
                out.replication_factor = -1;
            }
            Ok((topic_id, partitions, config)) => {
                out.error_code = 0;
                out.error_message = None;
                if v >= 7 {
                    out.topic_id = topic_id;
                }
                if v >= 5 {
                    out.num_partitions = partitions;
                    out.replication_factor = 1;
                    out.topic_config_error_code = 0;
                    out.configs = Some(created_configs(b, &config));
                }
            }
        }
        resp.topics.push(out);
    }
    resp
}

/// Validates (and unless `validate_only` creates) one topic: its id (nil when only validated),
/// partition count and config. Its name may collide with `same_request`, the topics the
/// request created before it.
fn create_one(
    b: &Broker,
    name: &str,
    t: &CreatableTopic,
    validate_only: bool,
    same_request: &HashSet<String>,
) -> Result<(Uuid, i32, LogConfig), TopicError> {
    validate_topic_name(name)?;
    if name == KAFKA_METADATA_TOPIC {
        // Kafka's controller (`ControllerApis.createTopics`) refuses it before anything else is
        // looked at, validate_only or not; the engine would refuse its directory anyway.
        return Err(error(
            ResponseError::InvalidRequest,
            format!("Creation of internal topic {KAFKA_METADATA_TOPIC} is prohibited."),
        ));
    }
    // An existing topic, internal ones included, is TOPIC_ALREADY_EXISTS, as Kafka's
    // controller answers it.
    if b.topics.get(name).is_some() {
        return Err(error(
            ResponseError::TopicAlreadyExists,
            format!("Topic '{name}' already exists."),
        ));
    }
    if is_internal(name) {
        // Created by their owners only (a `__mirror_state` made by a client would carry another
        // topic id and partition count, and no mirror could start on this broker).
        return Err(error(
            ResponseError::InvalidRequest,
            format!("Creation of internal topic {name} is prohibited."),
        ));
    }
    let existing: Vec<String> = b.topics.all().into_iter().map(|o| o.name).collect();
    if let Some(other) = colliding(name, &existing, same_request) {
        return Err(error(
            ResponseError::InvalidTopicException,
            format!("Topic '{name}' collides with existing topic: {other}"),
        ));
    }
    let new = plan_topic(b, t)?;
    if validate_only {
        return Ok((Uuid::nil(), new.partitions, new.config));
    }
    let meta = b.topics.create_beside(
        &b.logs,
        name,
        new.partitions,
        new.config.clone(),
        None,
        same_request,
    )?;
    tracing::info!(topic = name, partitions = meta.partitions, "created topic");
    Ok((meta.id, meta.partitions, new.config))
}

fn plan_topic(b: &Broker, t: &CreatableTopic) -> Result<NewTopic, TopicError> {
    let nulls: Vec<String> = t
        .configs
        .iter()
        .filter(|c| c.value.is_none())
        .map(|c| name_of(&c.name))
        .collect();
    if !nulls.is_empty() {
        return Err(error(
            ResponseError::InvalidConfig,
            format!(
                "Null value not supported for topic configs: {}",
                nulls.join(",")
            ),
        ));
    }
    let pairs: Vec<(String, String)> = t
        .configs
        .iter()
        .map(|c| {
            (
                name_of(&c.name),
                c.value.as_ref().map(name_of).unwrap_or_default(),
            )
        })
        .collect();
    let config = apply_topic_configs(b.logs.default_log_config(), &pairs)?;
    let partitions = if !t.assignments.is_empty() {
        if t.replication_factor != -1 {
            return Err(error(
                ResponseError::InvalidRequest,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            ));
        }
        if t.num_partitions != -1 {
            return Err(error(
                ResponseError::InvalidRequest,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            ));
        }
        let mut seen = HashSet::new();
        for a in &t.assignments {
            if !seen.insert(a.partition_index) {
                return Err(error(
                    ResponseError::InvalidReplicaAssignment,
                    format!(
                        "Found multiple manual partition assignments for partition {}",
                        a.partition_index
                    ),
                ));
            }
            check_assignment(b, &a.broker_ids)?;
        }
        let n = t.assignments.len() as i32;
        if (0..n).any(|p| !seen.contains(&p)) {
            return Err(error(
                ResponseError::InvalidReplicaAssignment,
                "partitions should be a consecutive 0-based integer sequence",
            ));
        }
        n
    } else {
        if t.replication_factor < -1 || t.replication_factor == 0 {
            return Err(error(
                ResponseError::InvalidReplicationFactor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            ));
        }
        if t.replication_factor > 1 {
            return Err(error(
                ResponseError::InvalidReplicationFactor,
                format!(
                    "Unable to replicate the partition {} time(s): this is a single-node broker; \
                     the only replication factor is 1.",
                    t.replication_factor
                ),
            ));
        }
        if t.num_partitions < -1 || t.num_partitions == 0 {
            return Err(error(
                ResponseError::InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.",
            ));
        }
        if t.num_partitions == -1 {
            b.config.num_partitions
        } else {
            t.num_partitions
        }
    };
    if partitions > MAX_PARTITIONS_PER_TOPIC {
        return Err(error(
            ResponseError::InvalidPartitions,
            format!("{partitions} partitions; a topic has at most {MAX_PARTITIONS_PER_TOPIC}"),
        ));
    }
    Ok(NewTopic { partitions, config })
}

/// A manual assignment of one partition: exactly this node.
fn check_assignment(b: &Broker, broker_ids: &[BrokerId]) -> Result<(), TopicError> {
    let node = b.config.node_id;
    if broker_ids.is_empty() {
        return Err(error(
            ResponseError::InvalidReplicaAssignment,
            "The manual partition assignment includes an empty replica list.",
        ));
    }
    if let Some(other) = broker_ids.iter().find(|id| id.0 != node) {
        return Err(error(
            ResponseError::InvalidReplicaAssignment,
            format!(
                "The manual partition assignment includes broker {}, but no such broker is registered \
                 (this single-node cluster has only broker {node}).",
                other.0
            ),
        ));
    }
    if broker_ids.len() > 1 {
        return Err(error(
            ResponseError::InvalidReplicaAssignment,
            format!("The manual partition assignment includes the broker {node} more than once."),
        ));
    }
    Ok(())
}

/// Applies topic configs over `base`. Only Kafka topic config names are accepted (not the broker
/// spellings `with_overrides` also knows); the engine's message explains anything it rejects.
fn apply_topic_configs(
    base: &LogConfig,
    pairs: &[(String, String)],
) -> Result<LogConfig, TopicError> {
    for (k, _) in pairs {
        let known = LogConfig::SUPPORTED_TOPIC_KEYS.contains(&k.as_str())
            || LogConfig::UNSUPPORTED_KAFKA_TOPIC_KEYS.contains(&k.as_str());
        if !known {
            return Err(error(
                ResponseError::InvalidConfig,
                format!("Unknown topic config name: {k}"),
            ));
        }
    }
    base.with_topic_overrides(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| error(ResponseError::InvalidConfig, kafka_config_message(&e)))
}

/// A refused config value in the words of Kafka's `ConfigException` ("Invalid value 10 for
/// configuration segment.bytes: Value must be at least 14"), which clients show as the
/// `INVALID_CONFIG` message, built from the engine's [`InvalidReason`]: its range validator
/// says "at least" or "no more than" (the number as parsed, so trimmed), a number that does not
/// parse is "Not a number of type INT" (or `LONG`, the value as given), an enumerated value or
/// list lists the valid strings. The bounds are ours (module docs of
/// `mirrorlog_engine::config`); a reason of ours beyond the bound follows it in parentheses.
/// Other errors (unknown or unsupported keys) keep their own words.
fn kafka_config_message(e: &ConfigError) -> String {
    let ConfigError::InvalidValue { key, value, reason } = e else {
        return e.to_string();
    };
    let (shown, detail) = match reason {
        InvalidReason::OutOfRange {
            found,
            min,
            max,
            why,
        } => {
            let bound = if found < min {
                format!("Value must be at least {min}")
            } else {
                format!("Value must be no more than {max}")
            };
            let detail = match why {
                Some(why) => format!("{bound} ({why})"),
                None => bound,
            };
            (found.to_string(), detail)
        }
        InvalidReason::NotANumber(t) => (
            value.clone(),
            format!("Not a number of type {}", t.kafka_name()),
        ),
        InvalidReason::NotOneOf(valid) | InvalidReason::NotAListOf(valid) => (
            value.clone(),
            format!("String must be one of: {}", valid.join(", ")),
        ),
        other => (value.clone(), other.to_string()),
    };
    format!("Invalid value {shown} for configuration {key}: {detail}")
}

fn created_configs(b: &Broker, config: &LogConfig) -> Vec<CreatableTopicConfigs> {
    topic_config_entries(b, config)
        .into_iter()
        .map(|e| {
            let mut c = CreatableTopicConfigs::default();
            c.name = sb(&e.name);
            c.value = Some(sb(&e.value));
            c.read_only = false;
            c.config_source = e.source;
            c.is_sensitive = false;
            c
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Config views shared by CreateTopics and DescribeConfigs

/// One config as DescribeConfigs shows it.
struct ConfigView {
    name: String,
    value: String,
    source: i8,
    read_only: bool,
    config_type: i8,
    doc: &'static str,
    /// (name, value, source), highest precedence first, the entry's own source included.
    synonyms: Vec<(String, String, i8)>,
}

/// Every topic config Kafka lists, sorted by name: those of `config` with their source and
/// synonyms, and the [`DEFAULT_TOPIC_KEYS`] mirrorlog does not implement at the value it behaves
/// as.
fn topic_config_entries(b: &Broker, config: &LogConfig) -> Vec<ConfigView> {
    let broker: BTreeMap<&str, String> = b
        .logs
        .default_log_config()
        .to_kafka_pairs()
        .into_iter()
        .collect();
    let kafka: BTreeMap<&str, String> = LogConfig::default().to_kafka_pairs().into_iter().collect();
    let mut entries: Vec<ConfigView> = config
        .to_kafka_pairs()
        .into_iter()
        .map(|(name, value)| {
            let key = topic_key(name);
            let broker_name = key.map_or(name, |k| k.broker);
            let broker_value = broker.get(name).cloned().unwrap_or_default();
            let kafka_value = kafka.get(name).cloned().unwrap_or_default();
            let mut synonyms = vec![];
            // A topic override, even one equal to the broker default (Kafka's topic config).
            if value != broker_value || config.overrides.contains(name) {
                synonyms.push((name.to_string(), value.clone(), SOURCE_DYNAMIC_TOPIC_CONFIG));
            }
            if broker_value != kafka_value {
                synonyms.push((
                    broker_name.to_string(),
                    broker_value.clone(),
                    SOURCE_STATIC_BROKER_CONFIG,
                ));
            }
            synonyms.push((broker_name.to_string(), kafka_value, SOURCE_DEFAULT_CONFIG));
            ConfigView {
                name: name.to_string(),
                source: synonyms[0].2,
                value,
                read_only: false,
                config_type: key.map_or(0, |k| k.config_type),
                doc: key.map_or("", |k| k.doc),
                synonyms,
            }
        })
        .chain(DEFAULT_TOPIC_KEYS.iter().map(|k| ConfigView {
            name: k.topic.to_string(),
            value: k.value.to_string(),
            source: SOURCE_DEFAULT_CONFIG,
            read_only: false,
            config_type: k.config_type,
            doc: k.doc,
            synonyms: k.broker.map_or(vec![], |broker| {
                vec![(
                    broker.to_string(),
                    k.value.to_string(),
                    SOURCE_DEFAULT_CONFIG,
                )]
            }),
        }))
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// A broker key DescribeConfigs lists besides the topic configs' broker synonyms: its type and
/// a line of documentation.
struct BrokerKey {
    name: &'static str,
    config_type: i8,
    doc: &'static str,
}

const fn key(name: &'static str, config_type: i8, doc: &'static str) -> BrokerKey {
    BrokerKey {
        name,
        config_type,
        doc,
    }
}

/// Every key `mirrorlog serve` takes that is not in [`TOPIC_KEYS`] (the keys of Kafka's stock
/// file it ignores are not listed: they have no effect here).
const BROKER_KEYS: &[BrokerKey] = &[
    key("node.id", TYPE_INT, "This node's id."),
    key(
        "broker.id",
        TYPE_INT,
        "This node's id (node.id's older name).",
    ),
    key(
        "advertised.listeners",
        TYPE_STRING,
        "The address clients are told to connect to.",
    ),
    key(
        "listeners",
        TYPE_STRING,
        "The address this broker listens on (PLAINTEXT only).",
    ),
    key("log.dirs", TYPE_STRING, "The data directories."),
    key(
        "log.dir",
        TYPE_STRING,
        "The data directory, when log.dirs is not set.",
    ),
    key(
        "num.partitions",
        TYPE_INT,
        "Partitions of an auto-created topic or of a CreateTopics request giving -1.",
    ),
    key(
        "auto.create.topics.enable",
        TYPE_BOOLEAN,
        "Create unknown topics named in Metadata requests.",
    ),
    key(
        "socket.request.max.bytes",
        TYPE_INT,
        "The largest request accepted; a larger one closes its connection.",
    ),
    key(
        "connections.max.idle.ms",
        TYPE_LONG,
        "Close a connection silent this long while a request is awaited; negative: never.",
    ),
    key(
        "max.connections",
        TYPE_INT,
        "The most connections open at once; at the bound new ones wait until one closes.",
    ),
    key(
        "max.connections.per.ip",
        TYPE_INT,
        "The most connections open at once from one address; one more is closed at once.",
    ),
    key(
        "max.connections.per.ip.overrides",
        TYPE_STRING,
        "Per host or address overrides of max.connections.per.ip: host:count,host:count.",
    ),
    key(
        "fetch.max.bytes",
        TYPE_INT,
        "The most record bytes one Fetch answer carries (its first batch may exceed it).",
    ),
    key(
        "max.incremental.fetch.session.cache.slots",
        TYPE_INT,
        "The most incremental fetch sessions held; 0: none.",
    ),
    key(
        "num.recovery.threads.per.data.dir",
        TYPE_INT,
        "Logs opened at once at start, over all data directories together.",
    ),
    key(
        "log.retention.check.interval.ms",
        TYPE_LONG,
        "How often retention is applied.",
    ),
    key(
        "log.initial.task.delay.ms",
        TYPE_LONG,
        "The first retention check's delay after start.",
    ),
    key(
        "log.io.mode",
        TYPE_STRING,
        "How .log files are written: buffered, or direct (O_DIRECT through io_uring).",
    ),
    key(
        "log.io.direct.durability",
        TYPE_STRING,
        "How direct-mode appends become durable: dsync or fdatasync.",
    ),
    key(
        "log.preallocate",
        TYPE_BOOLEAN,
        "Keep written zeros ahead of synced active .log files (buffered mode).",
    ),
    key(
        "producer.id.expiration.ms",
        TYPE_INT,
        "Forget an idle producer id after this long.",
    ),
    key(
        "log.retention.minutes",
        TYPE_INT,
        "Retention in minutes, when log.retention.ms is not set.",
    ),
    key(
        "log.retention.hours",
        TYPE_INT,
        "Retention in hours, when neither log.retention.ms nor log.retention.minutes is set.",
    ),
    key(
        "log.roll.hours",
        TYPE_INT,
        "Roll a new segment after this many hours, when log.roll.ms is not set.",
    ),
    key(
        "log.roll.jitter.hours",
        TYPE_INT,
        "The most a time-based roll may come early, in hours, when log.roll.jitter.ms is not set.",
    ),
    key(
        "log.flush.scheduler.interval.ms",
        TYPE_LONG,
        "Fsync the log when the oldest unflushed message is this old, when log.flush.interval.ms \
         is not set.",
    ),
    key(
        "offsets.topic.num.partitions",
        TYPE_INT,
        "Partitions of __consumer_offsets.",
    ),
    key(
        "offsets.topic.segment.bytes",
        TYPE_INT,
        "Segment size of __consumer_offsets.",
    ),
    key(
        "group.min.session.timeout.ms",
        TYPE_INT,
        "The smallest session timeout a member may ask for.",
    ),
    key(
        "group.max.session.timeout.ms",
        TYPE_INT,
        "The largest session timeout a member may ask for.",
    ),
    key(
        "group.initial.rebalance.delay.ms",
        TYPE_INT,
        "How long an empty group's first rebalance waits for more members.",
    ),
    key(
        "group.max.size",
        TYPE_INT,
        "The most members one group may have.",
    ),
    key(
        "offsets.retention.minutes",
        TYPE_INT,
        "Committed offsets of a group without members expire this long after it became empty.",
    ),
    key(
        "offsets.retention.check.interval.ms",
        TYPE_LONG,
        "How often expired offsets are looked for.",
    ),
    key(
        "offset.metadata.max.bytes",
        TYPE_INT,
        "The longest metadata an offset commit may carry.",
    ),
    key(
        "offsets.load.buffer.size",
        TYPE_INT,
        "Bytes read at a time while loading __consumer_offsets.",
    ),
    key(
        "transaction.state.log.num.partitions",
        TYPE_INT,
        "Partitions of __transaction_state.",
    ),
    key(
        "transaction.state.log.segment.bytes",
        TYPE_INT,
        "Segment size of __transaction_state.",
    ),
    key(
        "transaction.max.timeout.ms",
        TYPE_INT,
        "The largest transaction timeout a producer may ask for.",
    ),
    key(
        "transactional.id.expiration.ms",
        TYPE_INT,
        "An idle transactional id is forgotten after this long.",
    ),
    key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        TYPE_INT,
        "How often transactions past their timeout are looked for.",
    ),
    key(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        TYPE_INT,
        "How often idle transactional ids are expired.",
    ),
];

/// The broker keys whose value sets broker key `name`, highest precedence first, `name` first
/// (Kafka's synonyms); just `name` for a key without alternate spellings.
fn broker_synonyms(name: &'static str) -> Vec<&'static str> {
    match name {
        "log.roll.ms" => vec![name, "log.roll.hours"],
        "log.roll.jitter.ms" => vec![name, "log.roll.jitter.hours"],
        "log.retention.ms" => vec![name, "log.retention.minutes", "log.retention.hours"],
        "log.flush.interval.ms" => vec![name, "log.flush.scheduler.interval.ms"],
        _ => vec![name],
    }
}

/// Every broker key this node takes with the value in effect, read-only, sorted by name (Kafka's
/// `ConfigHelper.allConfigs`: every non-internal config with its value, and the keys the file
/// sets). The source is `STATIC_BROKER_CONFIG` when the broker's configuration names the key
/// (or an alternate spelling of it, [`BrokerConfig::static_config`](crate::broker::BrokerConfig::static_config)) or
/// sets another value than the default, else `DEFAULT_CONFIG`; the synonyms list the keys named
/// and the default. Alternate spellings with a default of their own in Kafka
/// (`log.retention.hours` 168, …) are listed too; the others (`log.retention.minutes`,
/// `broker.id`, `log.dir`) and Kafka's internal `log.initial.task.delay.ms` only when named.
/// The listener's keys are listed when a listener serves this broker. Any other key named (the
/// Kafka keys `mirrorlog serve` ignores) is listed with the value named, type UNKNOWN.
fn broker_config_entries(b: &Broker) -> Vec<ConfigView> {
    let c = &b.config;
    let named = &c.static_config;
    let mut out = vec![];
    let mut add = |name: &'static str, value: String, default: Option<String>| {
        let (config_type, doc) = match (topic_key_of_broker(name), broker_key(name)) {
            (Some(k), _) => (k.config_type, k.doc),
            (None, Some(k)) => (k.config_type, k.doc),
            (None, None) => (0, ""),
        };
        let mut synonyms: Vec<(String, String, i8)> = broker_synonyms(name)
            .into_iter()
            .filter_map(|k| {
                let v = named.get(k)?;
                Some((
                    k.to_string(),
                    v.trim().to_string(),
                    SOURCE_STATIC_BROKER_CONFIG,
                ))
            })
            .collect();
        if synonyms.is_empty() && default.as_ref() != Some(&value) {
            synonyms.push((name.to_string(), value.clone(), SOURCE_STATIC_BROKER_CONFIG));
        }
        if let Some(d) = default {
            synonyms.push((name.to_string(), d, SOURCE_DEFAULT_CONFIG));
        }
        out.push(ConfigView {
            name: name.to_string(),
            source: synonyms[0].2,
            value,
            read_only: true,
            config_type,
            doc,
            synonyms,
        });
    };
    let some = |v: &dyn ToString| Some(v.to_string());
    // Listed only when the configuration names them, with the value given.
    for name in ["broker.id", "log.dir", "log.retention.minutes"] {
        if let Some(v) = named.get(name) {
            add(name, v.trim().to_string(), None);
        }
    }
    add("node.id", c.node_id.to_string(), None);
    add(
        "advertised.listeners",
        format!("PLAINTEXT://{}:{}", c.advertised_host, c.advertised_port),
        None,
    );
    let dirs: Vec<String> = c
        .logs
        .data_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    add("log.dirs", dirs.join(","), None);
    // Each setting read from this broker's config and from a new one's (the default).
    type Read = fn(&BrokerConfig) -> String;
    let settings: [(&'static str, Read); 10] = [
        ("num.partitions", |c| c.num_partitions.to_string()),
        ("auto.create.topics.enable", |c| {
            c.auto_create_topics.to_string()
        }),
        ("fetch.max.bytes", |c| c.fetch_max_bytes.to_string()),
        ("max.incremental.fetch.session.cache.slots", |c| {
            c.max_incremental_fetch_session_cache_slots.to_string()
        }),
        ("num.recovery.threads.per.data.dir", |c| {
            c.logs.recovery_threads.to_string()
        }),
        ("log.retention.check.interval.ms", |c| {
            c.logs.retention_check_interval_ms.to_string()
        }),
        ("log.initial.task.delay.ms", |c| {
            c.logs.initial_task_delay_ms.to_string()
        }),
        ("log.io.mode", |c| c.logs.io_mode.as_str().to_string()),
        ("log.io.direct.durability", |c| {
            c.logs.direct.durability.as_str().to_string()
        }),
        ("log.preallocate", |c| c.logs.preallocate.to_string()),
    ];
    let new = BrokerConfig::new("", "", 0);
    for (name, read) in settings {
        // Kafka's internal key: listed only when named.
        if name == "log.initial.task.delay.ms" && !named.contains_key(name) {
            continue;
        }
        add(name, read(c), Some(read(&new)));
    }
    let logs = &c.logs;
    let defaults = LogConfig::default();
    let kafka: BTreeMap<&str, String> = defaults.to_kafka_pairs().into_iter().collect();
    for (name, value) in logs.default_log_config.to_kafka_pairs() {
        let broker_name = topic_key(name).map_or(name, |k| k.broker);
        add(broker_name, value, kafka.get(name).cloned());
    }
    add(
        "producer.id.expiration.ms",
        logs.default_log_config
            .producer_id_expiration_ms
            .to_string(),
        some(&defaults.producer_id_expiration_ms),
    );
    // Alternate spellings with a Kafka default: the value named, else that default.
    for (name, default) in [
        ("log.retention.hours", "168"),
        ("log.roll.hours", "168"),
        ("log.roll.jitter.hours", "0"),
        ("log.flush.scheduler.interval.ms", "9223372036854775807"),
    ] {
        let value = named.get(name).map_or(default, |v| v.trim());
        add(name, value.to_string(), Some(default.to_string()));
    }
    let (group, new_group) = (&c.group, crate::group::GroupConfig::default());
    for name in crate::group::GroupConfig::KAFKA_KEYS {
        add(
            name,
            group.kafka_value(name).unwrap_or_default(),
            new_group.kafka_value(name),
        );
    }
    let (txn, new_txn) = (&c.txn, crate::txn::TxnConfig::default());
    for name in crate::txn::TxnConfig::KAFKA_KEYS {
        add(
            name,
            txn.kafka_value(name).unwrap_or_default(),
            new_txn.kafka_value(name),
        );
    }
    if let Some(l) = b.listener() {
        use crate::server::ServerConfig;
        add("listeners", format!("PLAINTEXT://{}", l.listen), None);
        add(
            "socket.request.max.bytes",
            l.request_max_bytes.to_string(),
            some(&ServerConfig::DEFAULT_REQUEST_MAX_BYTES),
        );
        let idle = if l.idle_timeout_ms == ServerConfig::IDLE_TIMEOUT_NEVER {
            named
                .get("connections.max.idle.ms")
                .map_or("-1".to_string(), |v| v.trim().to_string())
        } else {
            l.idle_timeout_ms.to_string()
        };
        add(
            "connections.max.idle.ms",
            idle,
            some(&ServerConfig::DEFAULT_IDLE_TIMEOUT_MS),
        );
        add(
            "max.connections",
            l.max_connections.to_string(),
            some(&ServerConfig::DEFAULT_MAX_CONNECTIONS),
        );
        add(
            "max.connections.per.ip",
            l.max_connections_per_ip.to_string(),
            some(&ServerConfig::DEFAULT_MAX_CONNECTIONS_PER_IP),
        );
        add(
            "max.connections.per.ip.overrides",
            l.per_ip_overrides_value(),
            Some(String::new()),
        );
    }
    // Any other key the configuration names, with its value, as Kafka lists its file's
    // `originals`: the keys of Kafka's stock file that `mirrorlog serve` accepts and ignores.
    let unlisted: Vec<(&String, &String)> = named
        .iter()
        .filter(|(k, _)| !out.iter().any(|e| e.name == **k))
        .collect();
    out.extend(unlisted.into_iter().map(|(name, value)| {
        let value = value.trim().to_string();
        ConfigView {
            name: name.clone(),
            source: SOURCE_STATIC_BROKER_CONFIG,
            synonyms: vec![(name.clone(), value.clone(), SOURCE_STATIC_BROKER_CONFIG)],
            value,
            read_only: true,
            config_type: 0,
            doc: "Named in this broker's configuration but not a setting of this node: \
                  accepted and ignored (a Kafka key with no effect on a single mirrorlog node).",
        }
    }));
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn broker_key(name: &str) -> Option<&'static BrokerKey> {
    BROKER_KEYS.iter().find(|k| k.name == name)
}

/// The topic config whose broker synonym is `name`.
fn topic_key_of_broker(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.broker == name)
}

// ---------------------------------------------------------------------------------------------
// DeleteTopics

/// DeleteTopics v1–6: by name (v1–5 `topic_names`, v6 `topics`) or by id (v6). Unknown names are
/// UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; internal topics are refused; a
/// topic named both by name and by id is left (the name's entry INVALID_REQUEST), as in Kafka.
pub fn delete_topics(b: &Broker, r: DeleteTopicsRequest, v: i16) -> DeleteTopicsResponse {
    let mut resp = DeleteTopicsResponse::default();
    let result = |name: Option<&str>, id: Uuid, outcome: Result<(), TopicError>| {
        let mut out = DeletableTopicResult::default();
        out.name = name.map(|n| TopicName(sb(n)));
        out.topic_id = if v >= 6 { id } else { Uuid::nil() };
        (out.error_code, out.error_message) = TopicError::response_fields(outcome);
        out
    };
    // (name or id as given) in request order.
    enum Target {
        Name(String),
        Id(Uuid),
    }
    let mut targets = vec![];
    if v >= 6 {
        for t in &r.topics {
            match (&t.name, t.topic_id.is_nil()) {
                (None, true) => resp.responses.push(result(
                    None,
                    Uuid::nil(),
                    Err(error(
                        ResponseError::InvalidRequest,
                        "Neither topic name nor id were specified.",
                    )),
                )),
                (Some(n), false) => resp.responses.push(result(
                    Some(n.0.as_str()),
                    t.topic_id,
                    Err(error(
                        ResponseError::InvalidRequest,
                        "You may not specify both topic name and topic id.",
                    )),
                )),
                (Some(n), true) => targets.push(Target::Name(name_of(&n.0))),
                (None, false) => targets.push(Target::Id(t.topic_id)),
            }
        }
    } else {
        targets.extend(r.topic_names.iter().map(|n| Target::Name(name_of(&n.0))));
    }
    let mut name_counts: HashMap<String, usize> = HashMap::new();
    let mut id_counts: HashMap<Uuid, usize> = HashMap::new();
    for t in &targets {
        match t {
            Target::Name(n) => *name_counts.entry(n.clone()).or_default() += 1,
            Target::Id(id) => *id_counts.entry(*id).or_default() += 1,
        }
    }
    // As Kafka's `ControllerApis.deleteTopics`: a topic named once by name and again by its id
    // makes the request ambiguous for it — the name's entry is INVALID_REQUEST, the id's is
    // dropped (not answered), and the topic stays.
    let mut ambiguous: HashMap<String, Uuid> = HashMap::new();
    for t in &targets {
        if let Target::Name(n) = t
            && name_counts[n] == 1
            && let Some(meta) = b.topics.get(n)
            && id_counts.contains_key(&meta.id)
        {
            ambiguous.insert(n.clone(), meta.id);
        }
    }
    let dropped_ids: HashSet<Uuid> = ambiguous.values().copied().collect();
    let mut answered_names = HashSet::new();
    let mut answered_ids = HashSet::new();
    for t in targets {
        match t {
            Target::Name(name) => {
                if !answered_names.insert(name.clone()) {
                    continue;
                }
                if name_counts[&name] > 1 {
                    let e = error(ResponseError::InvalidRequest, "Duplicate topic name.");
                    resp.responses
                        .push(result(Some(&name), Uuid::nil(), Err(e)));
                    continue;
                }
                if let Some(id) = ambiguous.get(&name) {
                    let e = error(
                        ResponseError::InvalidRequest,
                        "The provided topic name maps to an ID that was already supplied.",
                    );
                    resp.responses.push(result(Some(&name), *id, Err(e)));
                    continue;
                }
                let id = b.topics.get(&name).map_or(Uuid::nil(), |m| m.id);
                resp.responses
                    .push(result(Some(&name), id, delete_one(b, &name, None)));
            }
            Target::Id(id) => {
                if !answered_ids.insert(id) {
                    continue;
                }
                if id_counts[&id] > 1 {
                    let e = error(ResponseError::InvalidRequest, "Duplicate topic id.");
                    resp.responses.push(result(None, id, Err(e)));
                    continue;
                }
                if dropped_ids.contains(&id) {
                    continue;
                }
                match b.topics.by_id(id) {
                    None => {
                        let e = error(
                            ResponseError::UnknownTopicId,
                            format!("No topic with id {id}."),
                        );
                        resp.responses.push(result(None, id, Err(e)));
                    }
                    // The name is the id's now; `delete_one` deletes only while it still is.
                    Some(meta) => resp.responses.push(result(
                        Some(&meta.name),
                        id,
                        delete_one(b, &meta.name, Some(id)),
                    )),
                }
            }
        }
    }
    resp
}

/// Deletes topic `name`; with `id` (DeleteTopics by id, which resolved `name` from it), only
/// while the topic of that name has that id: one deleted and created again since the
/// resolution is another topic, left alone (UNKNOWN_TOPIC_ID).
fn delete_one(b: &Broker, name: &str, id: Option<Uuid>) -> Result<(), TopicError> {
    let unknown = || match id {
        Some(id) => error(
            ResponseError::UnknownTopicId,
            format!("No topic with id {id}."),
        ),
        None => error(
            ResponseError::UnknownTopicOrPartition,
            format!("Topic '{name}' does not exist."),
        ),
    };
    let known = b
        .topics
        .get(name)
        .is_some_and(|t| id.is_none_or(|id| t.id == id));
    if !known {
        return Err(unknown());
    }
    if is_internal(name) {
        return Err(error(
            ResponseError::InvalidTopicException,
            format!(
                "Topic {name} is an internal topic; its coordinator depends on it, so it cannot be deleted."
            ),
        ));
    }
    // The registry checks again under the lock that creation takes, so a topic recreated since
    // the check above is not deleted in the place of the one asked for. The coordinators drop
    // the topic's state under that lock too (also after a failure part-way that took the
    // topic out of the registry: a retry would answer UNKNOWN_TOPIC_OR_PARTITION), before the
    // name is free: offsets committed to a topic created again under it are never dropped.
    let deleted = b
        .topics
        .delete_then(&b.logs, name, id, |_| b.topic_deleted(name));
    if deleted.as_ref().is_err_and(|e| {
        e.code == ResponseError::UnknownTopicId.code()
            || e.code == ResponseError::UnknownTopicOrPartition.code()
    }) {
        // Deleted (or recreated) by someone else since the check: nothing of ours to tell.
        return Err(unknown());
    }
    // As Kafka's `stopPartitions` completing the delayed fetches of the partitions it stops
    // hosting: fetches parked on this topic answer now (UNKNOWN_TOPIC_…) instead of sleeping
    // out their max_wait_ms. Also after a partial failure: some partitions may be gone. Only
    // the fetches waiting on this topic.
    b.appends.notify_topic(name);
    deleted?;
    tracing::info!(topic = name, "deleted topic");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// CreatePartitions

/// CreatePartitions v0–3: grows a topic to `count` partitions (never shrinks); a manual
/// assignment must give one entry per new partition, each exactly this node. A `timeout_ms` of
/// 0 or less times the request out (`no_time_left`).
pub fn create_partitions(
    b: &Broker,
    r: CreatePartitionsRequest,
    _v: i16,
) -> CreatePartitionsResponse {
    let mut resp = CreatePartitionsResponse::default();
    if no_time_left(r.timeout_ms, &r.topics, |t| name_of(&t.name.0), None) {
        resp.results = r
            .topics
            .iter()
            .map(|t| {
                let mut out = CreatePartitionsTopicResult::default();
                out.name = t.name.clone();
                out.error_code = ResponseError::RequestTimedOut.code();
                out
            })
            .collect();
        return resp;
    }
    for (t, outcome) in each_once(
        &r.topics,
        |t| name_of(&t.name.0),
        "Duplicate topic name.",
        |t| {
            let name = name_of(&t.name.0);
            grow_one(b, &name, t.count, t.assignments.as_deref(), r.validate_only)
        },
    ) {
        let mut out = CreatePartitionsTopicResult::default();
        out.name = t.name.clone();
        (out.error_code, out.error_message) = TopicError::response_fields(outcome);
        resp.results.push(out);
    }
    resp
}

fn grow_one(
    b: &Broker,
    name: &str,
    count: i32,
    assignments: Option<
        &[kafka_protocol::messages::create_partitions_request::CreatePartitionsAssignment],
    >,
    validate_only: bool,
) -> Result<(), TopicError> {
    let Some(meta) = b.topics.get(name) else {
        return Err(error(
            ResponseError::UnknownTopicOrPartition,
            format!("Topic '{name}' does not exist."),
        ));
    };
    if meta.internal {
        return Err(error(
            ResponseError::InvalidTopicException,
            format!(
                "Topic {name} is an internal topic; its partition count is fixed by its coordinator."
            ),
        ));
    }
    if count == meta.partitions {
        return Err(error(
            ResponseError::InvalidPartitions,
            format!("Topic already has {count} partition(s)."),
        ));
    }
    if count < meta.partitions {
        return Err(error(
            ResponseError::InvalidPartitions,
            format!(
                "The topic {name} currently has {} partition(s); {count} would not be an increase.",
                meta.partitions
            ),
        ));
    }
    if count > MAX_PARTITIONS_PER_TOPIC {
        return Err(error(
            ResponseError::InvalidPartitions,
            format!("{count} partitions; a topic has at most {MAX_PARTITIONS_PER_TOPIC}"),
        ));
    }
    let additional = count - meta.partitions;
    if let Some(a) = assignments {
        if a.len() != additional as usize {
            return Err(error(
                ResponseError::InvalidReplicaAssignment,
                format!(
                    "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                    a.len()
                ),
            ));
        }
        for one in a {
            check_assignment(b, &one.broker_ids)?;
        }
    }
    if validate_only {
        return Ok(());
    }
    b.topics.add_partitions(&b.logs, name, count)?;
    tracing::info!(topic = name, partitions = count, "added partitions");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// DescribeConfigs

/// DescribeConfigs v1–4: TOPIC resources list every topic config with its value and source
/// (override, broker setting or default); BROKER resources (this node's id) list this node's
/// settings, read-only; the empty broker name (cluster-wide dynamic defaults) lists nothing, as
/// there are none. BROKER_LOGGER resources (this node's id) list every logger with its level
/// when the broker has the process's log levels ([`Broker::install_loggers`]), and are refused
/// as a type it does not serve otherwise. A resource of a type Kafka does not know fails the whole request: every
/// resource is answered INVALID_REQUEST with no configs, as Kafka's `ConfigHelper` throws before
/// describing any (its `KafkaApis` then answers `DescribeConfigsRequest.getErrorResponse`).
pub fn describe_configs(b: &Broker, r: DescribeConfigsRequest, v: i16) -> DescribeConfigsResponse {
    let mut resp = DescribeConfigsResponse::default();
    if r.resources
        .iter()
        .any(|res| !is_known_config_resource_type(res.resource_type))
    {
        resp.results = r
            .resources
            .into_iter()
            .map(|res| {
                let mut out = DescribeConfigsResult::default();
                out.resource_type = res.resource_type;
                out.resource_name = res.resource_name;
                out.error_code = ResponseError::InvalidRequest.code();
                out.error_message = Some(sb(INVALID_REQUEST_MESSAGE));
                out
            })
            .collect();
        return resp;
    }
    for res in r.resources {
        let mut out = DescribeConfigsResult::default();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name.clone();
        out.error_code = 0;
        out.error_message = None;
        let name = name_of(&res.resource_name);
        let entries = match res.resource_type {
            RESOURCE_TOPIC => describe_topic_configs(b, &name),
            RESOURCE_BROKER => describe_broker_configs(b, &name),
            RESOURCE_BROKER_LOGGER if b.loggers().is_some() => describe_broker_loggers(b, &name),
            t => Err(error(
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {t}."),
            )),
        };
        match entries {
            Err(e) => {
                out.error_code = e.code;
                out.error_message = Some(sb(&e.message));
            }
            Ok(entries) => {
                let wanted: Option<HashSet<String>> = res
                    .configuration_keys
                    .as_ref()
                    .filter(|k| !k.is_empty())
                    .map(|k| k.iter().map(name_of).collect());
                out.configs = entries
                    .into_iter()
                    .filter(|e| wanted.as_ref().is_none_or(|w| w.contains(&e.name)))
                    .map(|e| config_result(e, v, r.include_synonyms, r.include_documentation))
                    .collect();
            }
        }
        resp.results.push(out);
    }
    resp
}

fn describe_topic_configs(b: &Broker, name: &str) -> Result<Vec<ConfigView>, TopicError> {
    validate_topic_name(name)?;
    let unknown = || {
        error(
            ResponseError::UnknownTopicOrPartition,
            format!("Topic '{name}' does not exist."),
        )
    };
    let meta = b.topics.get(name).ok_or_else(unknown)?;
    let config = topic_config(b, &meta).ok_or_else(unknown)?;
    Ok(topic_config_entries(b, &config))
}

fn describe_broker_configs(b: &Broker, name: &str) -> Result<Vec<ConfigView>, TopicError> {
    if name.is_empty() {
        return Ok(vec![]);
    }
    names_this_node(b, name, " or empty string,")?;
    Ok(broker_config_entries(b))
}

/// Whether a DescribeConfigs resource `name` is this node's id, as Kafka's `ConfigHelper`
/// checks it (`resourceNameToBrokerId`): INVALID_REQUEST with its message if not, `or_empty`
/// saying what else the type takes.
fn names_this_node(b: &Broker, name: &str, or_empty: &str) -> Result<(), TopicError> {
    let id: i32 = name.parse().map_err(|_| {
        error(
            ResponseError::InvalidRequest,
            format!("Broker id must be an integer, but it is: {name}"),
        )
    })?;
    if id != b.config.node_id {
        return Err(error(
            ResponseError::InvalidRequest,
            format!(
                "Unexpected broker id, expected {}{or_empty} but received {name}",
                b.config.node_id
            ),
        ));
    }
    Ok(())
}

/// Every logger with its effective level, as Kafka's `ConfigHelper` lists `LoggingController`'s
/// loggers: source DYNAMIC_BROKER_LOGGER_CONFIG, not read-only, no synonyms, no type. The name
/// must be this node's id (INVALID_REQUEST with Kafka's message otherwise).
fn describe_broker_loggers(b: &Broker, name: &str) -> Result<Vec<ConfigView>, TopicError> {
    let Some(loggers) = b.loggers() else {
        return Ok(vec![]);
    };
    if name.is_empty() {
        return Err(error(
            ResponseError::InvalidRequest,
            "Broker id must not be empty",
        ));
    }
    names_this_node(b, name, "")?;
    Ok(loggers
        .loggers()
        .into_iter()
        .map(|(name, level)| ConfigView {
            name,
            value: crate::loggers::level_name(level).to_string(),
            source: SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG,
            read_only: false,
            config_type: 0,
            doc: "",
            synonyms: vec![],
        })
        .collect())
}

fn config_result(
    e: ConfigView,
    v: i16,
    synonyms: bool,
    documentation: bool,
) -> DescribeConfigsResourceResult {
    let mut out = DescribeConfigsResourceResult::default();
    out.name = sb(&e.name);
    out.value = Some(sb(&e.value));
    out.read_only = e.read_only;
    out.config_source = e.source;
    out.is_sensitive = false;
    if synonyms {
        out.synonyms = e
            .synonyms
            .into_iter()
            .map(|(name, value, source)| {
                let mut s = DescribeConfigsSynonym::default();
                s.name = sb(&name);
                s.value = Some(sb(&value));
                s.source = source;
                s
            })
            .collect();
    }
    out.config_type = if v >= 3 { e.config_type } else { 0 };
    out.documentation = if v >= 3 && documentation && !e.doc.is_empty() {
        Some(sb(e.doc))
    } else {
        None
    };
    out
}

// ---------------------------------------------------------------------------------------------
// IncrementalAlterConfigs

/// IncrementalAlterConfigs v0–1: TOPIC resources only. SET a topic config, DELETE it (back to the
/// broker default), APPEND/SUBTRACT list items (`cleanup.policy` is the only list); the result
/// is validated as a whole and, unless `validate_only`, stored for every partition. BROKER
/// resources are refused: this broker has no dynamic broker configs. BROKER_LOGGER resources
/// set or reset log levels (see `alter_broker_loggers`) when the broker has them. On a mirror topic the keys
/// its cluster mirror copies cannot change (`INVALID_CONFIG`, see `mirrored_keys`).
pub fn incremental_alter_configs(
    b: &Broker,
    r: IncrementalAlterConfigsRequest,
    _v: i16,
) -> IncrementalAlterConfigsResponse {
    let mut resp = IncrementalAlterConfigsResponse::default();
    for (res, outcome) in each_once(
        &r.resources,
        |res| (res.resource_type, name_of(&res.resource_name)),
        "Each resource must appear at most once.",
        |res| alter_one(b, res, r.validate_only, false),
    ) {
        let mut out = AlterConfigsResourceResponse::default();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name.clone();
        (out.error_code, out.error_message) = TopicError::response_fields(outcome);
        resp.responses.push(out);
    }
    resp
}

/// IncrementalAlterConfigs of BROKER_LOGGER `name`, as Kafka's `RuntimeLoggerManager`: the
/// name must be this node's id; every operation is checked before any is made (SET of an
/// existing logger to one of Kafka's levels, DELETE of an existing logger but root; APPEND and
/// SUBTRACT refused), then, unless `validate_only`, all are made at once. Each refusal is
/// Kafka's code and message.
fn alter_broker_loggers(
    b: &Broker,
    loggers: &crate::loggers::Loggers,
    name: &str,
    configs: &[kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig],
    validate_only: bool,
) -> Result<(), TopicError> {
    use crate::loggers::{LoggerChange, ROOT_LOGGER, VALID_LOG_LEVELS, parse_kafka_level};
    let id: i32 = name.parse().map_err(|_| {
        error(
            ResponseError::InvalidRequest,
            format!("Node id must be an integer, but it is: {name}"),
        )
    })?;
    if id != b.config.node_id {
        return Err(error(
            ResponseError::InvalidRequest,
            format!(
                "Unexpected node id. Expected {}, but received {id}",
                b.config.node_id
            ),
        ));
    }
    let exists = |logger: &str| {
        if loggers.exists(logger) {
            Ok(())
        } else {
            Err(error(
                ResponseError::InvalidConfig,
                format!("Logger {logger} does not exist!"),
            ))
        }
    };
    let not_allowed = |what: String| {
        error(
            ResponseError::InvalidRequest,
            format!("{what} is not allowed for the BROKER_LOGGER resource"),
        )
    };
    let mut changes = Vec::with_capacity(configs.len());
    for c in configs {
        let logger = name_of(&c.name);
        match c.config_operation {
            OP_SET => {
                exists(&logger)?;
                // Not null: refused before, as Kafka's preprocessing does.
                let value = c.value.as_ref().map(name_of).unwrap_or_default();
                let level = parse_kafka_level(&value).ok_or_else(|| {
                    error(
                        ResponseError::InvalidConfig,
                        format!(
                            "Cannot set the log level of {logger} to {value} as it is not a \
                             supported log level. Valid log levels are {VALID_LOG_LEVELS}"
                        ),
                    )
                })?;
                changes.push(LoggerChange::Set(logger, level));
            }
            OP_DELETE => {
                exists(&logger)?;
                if logger == ROOT_LOGGER {
                    return Err(error(
                        ResponseError::InvalidRequest,
                        format!(
                            "Removing the log level of the {ROOT_LOGGER} logger is not allowed"
                        ),
                    ));
                }
                changes.push(LoggerChange::Unset(logger));
            }
            OP_APPEND => return Err(not_allowed("APPEND operation".into())),
            OP_SUBTRACT => return Err(not_allowed("SUBTRACT operation".into())),
            op => return Err(not_allowed(format!("Unknown operation type {op}"))),
        }
    }
    if validate_only {
        return Ok(());
    }
    loggers.change(&changes).map_err(|e| {
        error(
            ResponseError::UnknownServerError,
            format!("The log levels could not be changed: {e}"),
        )
    })?;
    // As Kafka's `RuntimeLoggerManager`, at WARN: an operator's change shows in the log.
    for c in &changes {
        match c {
            LoggerChange::Set(logger, level) => tracing::warn!(
                "Updated the log level of {logger} to {}",
                crate::loggers::level_name(*level)
            ),
            LoggerChange::Unset(logger) => tracing::warn!("Unset the log level of {logger}"),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// AlterConfigs (the legacy, non-incremental form)

/// AlterConfigs v0–2: TOPIC resources only, as IncrementalAlterConfigs. The configs given become
/// the topic's whole set of overrides: each is SET, and every override the request leaves out
/// goes back to the broker default, as Kafka's controller does for this request
/// (`legacyAlterConfigResource`). A null value is INVALID_REQUEST, a key named twice too; BROKER
/// resources are refused, BROKER_LOGGER ones as a type Kafka's broker does not know here. Clients without IncrementalAlterConfigs (kafkajs 2.2, aiokafka 0.14)
/// alter topic configs only through this request. On a mirror topic the keys its cluster mirror
/// copies are not the client's: left out they are kept, named they must keep their value
/// (else `INVALID_CONFIG`, as IncrementalAlterConfigs; see `mirrored_keys`).
pub fn alter_configs(b: &Broker, r: AlterConfigsRequest, _v: i16) -> AlterConfigsResponse {
    use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse as Out;
    use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
    let mut resp = AlterConfigsResponse::default();
    for (res, outcome) in each_once(
        &r.resources,
        |res| (res.resource_type, name_of(&res.resource_name)),
        "Each resource must appear at most once.",
        |res| {
            let mut inc = AlterConfigsResource::default();
            inc.resource_type = res.resource_type;
            inc.resource_name = res.resource_name.clone();
            inc.configs = res
                .configs
                .iter()
                .map(|c| {
                    let mut a = AlterableConfig::default();
                    a.name = c.name.clone();
                    a.config_operation = OP_SET;
                    a.value = c.value.clone();
                    a
                })
                .collect();
            alter_one(b, &inc, r.validate_only, true)
        },
    ) {
        let mut out = Out::default();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name.clone();
        (out.error_code, out.error_message) = TopicError::response_fields(outcome);
        resp.responses.push(out);
    }
    resp
}

/// Applies one IncrementalAlterConfigs resource; with `replace` (AlterConfigs), the topic's
/// overrides the resource does not name also go back to the broker default, decided under the
/// same lock as the change.
fn alter_one(
    b: &Broker,
    res: &AlterConfigsResource,
    validate_only: bool,
    replace: bool,
) -> Result<(), TopicError> {
    let mut keys = HashSet::new();
    if !res.configs.iter().all(|c| keys.insert(c.name.as_str())) {
        return Err(error(
            ResponseError::InvalidRequest,
            "Error due to duplicate config keys",
        ));
    }
    let nulls: Vec<String> = res
        .configs
        .iter()
        .filter(|c| c.config_operation != OP_DELETE && c.value.is_none())
        .map(|c| name_of(&c.name))
        .collect();
    if !nulls.is_empty() {
        return Err(error(
            ResponseError::InvalidRequest,
            format!("Null value not supported for : {}", nulls.join(", ")),
        ));
    }
    let name = name_of(&res.resource_name);
    if res.resource_type == RESOURCE_BROKER_LOGGER
        && !replace
        && let Some(loggers) = b.loggers()
    {
        return alter_broker_loggers(b, loggers, &name, &res.configs, validate_only);
    }
    match res.resource_type {
        RESOURCE_TOPIC => {}
        // Kafka's broker answers the legacy request's BROKER_LOGGER as a type it does not know
        // (`ConfigAdminManager.preprocess`): log levels change only incrementally.
        RESOURCE_BROKER_LOGGER if replace => {
            return Err(error(
                ResponseError::InvalidRequest,
                format!("Unknown resource type {RESOURCE_BROKER_LOGGER}"),
            ));
        }
        RESOURCE_BROKER => {
            return Err(error(
                ResponseError::InvalidRequest,
                "mirrorlog has no dynamic broker configs: change the broker's configuration and restart it.",
            ));
        }
        // Kafka's controller (`ControllerApis.handleIncrementalAlterConfigs` and
        // `handleLegacyAlterConfigs`): a type `ConfigResource.Type.forId` does not know.
        t if !is_known_config_resource_type(t) => {
            return Err(error(
                ResponseError::UnsupportedVersion,
                format!("Unknown resource type {t}."),
            ));
        }
        t => {
            return Err(error(
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {t}."),
            ));
        }
    }
    if name.is_empty() {
        return Err(error(
            ResponseError::InvalidRequest,
            "Default topic resources are not allowed.",
        ));
    }
    // As Kafka's controller (`ControllerConfigurationValidator.validateTopicName`): a name no
    // topic could have is INVALID_TOPIC_EXCEPTION, not unknown.
    validate_topic_name(&name)?;
    let unknown = || {
        error(
            ResponseError::UnknownTopicOrPartition,
            format!("Topic '{name}' does not exist."),
        )
    };
    if name == MIRROR_STATE_TOPIC {
        // The mirror state store's own log: its configs are the store's, as its records are
        // (a Produce there is refused too); a client's max.message.bytes or segment settings
        // would fail or reshape the store's writes.
        return Err(error(
            ResponseError::InvalidConfig,
            format!("The configs of {name} are managed by mirrorlog and cannot be altered."),
        ));
    }
    // A mirror topic's keys that its cluster mirror copies from the source (decided before the
    // lock: the claims and the mirror's filters are never taken under it; a start racing this
    // request copies the source's configs after it, a stop makes the keys local a moment late).
    let mirrored = mirrored_keys(b, &name);
    let _serialised = b.topics.config_change_lock();
    let meta = b.topics.get(&name).ok_or_else(unknown)?;
    let current = topic_config(b, &meta).ok_or_else(unknown)?;
    let defaults: BTreeMap<&str, String> = b
        .logs
        .default_log_config()
        .to_kafka_pairs()
        .into_iter()
        .collect();
    let now: BTreeMap<&str, String> = current.to_kafka_pairs().into_iter().collect();
    let mut pairs: Vec<(String, String)> = vec![];
    // Deleted keys go back to the broker default and stop being topic overrides.
    let mut deleted: Vec<String> = vec![];
    if replace {
        // The copied keys of a mirror topic are kept: left out, they are not the client's to
        // reset (kafkajs and aiokafka can only send the whole set).
        for key in &current.overrides {
            if !keys.contains(key)
                && !mirrored.as_ref().is_some_and(|(_, m, _)| m.contains(key))
                && let Some(d) = defaults.get(key)
            {
                deleted.push(key.to_string());
                pairs.push((key.to_string(), d.clone()));
            }
        }
    }
    for c in &res.configs {
        let key = name_of(&c.name);
        let value = c.value.as_ref().map(name_of).unwrap_or_default();
        match c.config_operation {
            OP_SET => pairs.push((key, value)),
            // Back to the broker default; a key that cannot be set has nothing to delete.
            OP_DELETE => {
                if let Some(d) = defaults.get(key.as_str()) {
                    deleted.push(key.clone());
                    pairs.push((key, d.clone()));
                }
            }
            op @ (OP_APPEND | OP_SUBTRACT) => {
                let Some(k) = topic_key(&key) else {
                    // Not a supported topic config: the unknown/unsupported message says which.
                    let e = apply_topic_configs(&current, &[(key.clone(), value)]).err();
                    return Err(e.unwrap_or_else(|| {
                        error(
                            ResponseError::InvalidConfig,
                            format!("Unknown topic config name: {key}"),
                        )
                    }));
                };
                let verb = if op == OP_APPEND {
                    "APPEND"
                } else {
                    "SUBTRACT"
                };
                if k.config_type != TYPE_LIST {
                    return Err(error(
                        ResponseError::InvalidConfig,
                        format!("Can't {verb} to key {key} because its type is not LIST."),
                    ));
                }
                let mut items: Vec<String> = now
                    .get(key.as_str())
                    .map(|s| {
                        s.split(',')
                            .map(|i| i.trim().to_string())
                            .filter(|i| !i.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                    if op == OP_APPEND {
                        if !items.iter().any(|i| i == item) {
                            items.push(item.to_string());
                        }
                    } else {
                        items.retain(|i| i != item);
                    }
                }
                pairs.push((key, items.join(",")));
            }
            op => {
                return Err(error(
                    ResponseError::InvalidRequest,
                    format!("Unknown config operation {op} for {key}."),
                ));
            }
        }
    }
    let mut new = apply_topic_configs(&current, &pairs)?;
    new.overrides.retain(|k| !deleted.iter().any(|d| d == k));
    if let Some((owner, copied, unavailable)) = &mirrored {
        let after: BTreeMap<&str, String> = new.to_kafka_pairs().into_iter().collect();
        let changed: Vec<&str> = copied
            .iter()
            .copied()
            .filter(|k| now.get(k) != after.get(k))
            .collect();
        if let Some(e) = unavailable.as_ref().filter(|_| !changed.is_empty()) {
            return Err(TopicError {
                code: engine_error_code(e),
                message: format!(
                    "{} of read-only topic {name} cannot be altered: cluster mirror {owner} may \
                     mirror it and copy {it} from the source, but its mirror state is \
                     unavailable: {}",
                    changed.join(", "),
                    ErrorChain(e),
                    it = if changed.len() == 1 { "it" } else { "them" },
                ),
            });
        }
        if !changed.is_empty() {
            return Err(error(
                ResponseError::InvalidConfig,
                format!(
                    "{} of mirror topic {name} cannot be altered: cluster mirror {owner} copies \
                     {it} from the source topic. Change {it} on the source, or stop the mirror \
                     topic first (only the keys in mirror.topic.properties.exclude are the \
                     destination's own).",
                    changed.join(", "),
                    it = if changed.len() == 1 { "it" } else { "them" },
                ),
            ));
        }
        // Naming a copied key with its value (or deleting one whose value is the default)
        // changes nothing: whether it is a topic override stays the mirror's decision.
        new.overrides
            .retain(|k| !copied.contains(k) || current.overrides.contains(k));
        new.overrides.extend(
            current
                .overrides
                .iter()
                .copied()
                .filter(|k| copied.contains(k)),
        );
    }
    if is_internal(&name) && (new.retention_ms >= 0 || new.retention_bytes >= 0) {
        // Kafka keeps these topics compacted, so their retention settings never delete live
        // state; mirrorlog has no compaction and their owners reload state from every record.
        return Err(error(
            ResponseError::InvalidConfig,
            format!(
                "{name} keeps every record (mirrorlog has no log compaction): its retention.ms \
                 and retention.bytes stay -1."
            ),
        ));
    }
    if validate_only || new == current {
        return Ok(());
    }
    check_no_partition_offline(&b.logs, &name, meta.partitions, "change the config of")?;
    for p in 0..meta.partitions {
        let tp = TopicPartition {
            topic: name.clone(),
            partition: p,
        };
        b.logs
            .update_config(&tp, new.clone())
            .map_err(|e| TopicError {
                code: engine_error_code(&e),
                message: ErrorChain(&e).to_string(),
            })?;
    }
    tracing::info!(topic = name, "altered topic configs");
    Ok(())
}

/// For a mirror topic (one a cluster mirror owns: not STOPPED), the mirror's name and the topic
/// keys it copies from the source — every supported key but those matching its
/// `mirror.topic.properties.exclude`. Its config sync owns them: it sets them to the source's
/// values, resets the ones the source stops setting (after a restart, every one the source does
/// not set), and writes only when the source's configs changed — so a local change to one would
/// last until then and be lost after, and clients may change only the other keys (KIP-1279
/// §12: only the excluded keys are not copied). After a stop (failover) every key is the
/// topic's own again.
///
/// A read-only topic no mirror owns, whose states a mirror would keep in a `__mirror_state`
/// partition that is unavailable (offline data directory): that mirror may hold it without
/// knowing (it was not restored), so its copied keys are refused too, with the storage error
/// (the third field), as a start of the topic is. `None` for any other topic.
fn mirrored_keys(
    b: &Broker,
    topic: &str,
) -> Option<(String, HashSet<&'static str>, Option<EngineError>)> {
    let copied_by = |m: &MirrorManager| -> HashSet<&'static str> {
        LogConfig::SUPPORTED_TOPIC_KEYS
            .iter()
            .copied()
            .filter(|k| m.copies_topic_config(k))
            .collect()
    };
    if let Some(owner) = b.mirrors.topic_owner(topic) {
        let mirror = b.mirrors.get(&owner)?;
        return Some((owner, copied_by(&mirror), None));
    }
    let meta = b.topics.get(topic)?;
    if !topic_config(b, &meta)?.read_only {
        return None;
    }
    b.mirrors.all().into_iter().find_map(|m| {
        let e = m.states_unavailable_for(*meta.id.as_bytes(), meta.partitions)?;
        Some((m.name().to_string(), copied_by(&m), Some(e)))
    })
}

// ---------------------------------------------------------------------------------------------
// DescribeCluster and FindCoordinator

/// DescribeCluster v0–2: the cluster id, this node as controller and only broker (never fenced:
/// v2's `include_fenced_brokers` changes nothing). A request for
/// the controllers' endpoints (v1 `endpoint_type` 2) is MISMATCHED_ENDPOINT_TYPE, as a Kafka
/// broker answers; an unknown type UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0).
pub fn describe_cluster(b: &Broker, r: DescribeClusterRequest, v: i16) -> DescribeClusterResponse {
    let mut resp = DescribeClusterResponse::default();
    resp.endpoint_type = 1;
    resp.error_message = None;
    if r.endpoint_type != 1 {
        let (e, what) = if r.endpoint_type == 2 {
            (
                ResponseError::MismatchedEndpointType,
                "this endpoint is a broker, not a controller",
            )
        } else {
            (
                ResponseError::UnsupportedEndpointType,
                "unknown endpoint type",
            )
        };
        let e = if v == 0 {
            ResponseError::InvalidRequest
        } else {
            e
        };
        resp.error_code = e.code();
        resp.error_message = Some(sb(&format!("Endpoint type {}: {what}.", r.endpoint_type)));
        return resp;
    }
    resp.error_code = 0;
    resp.cluster_id = sb(&b.cluster_id);
    resp.controller_id = BrokerId(b.config.node_id);
    let mut broker = DescribeClusterBroker::default();
    broker.broker_id = BrokerId(b.config.node_id);
    broker.host = sb(&b.config.advertised_host);
    broker.port = b.config.advertised_port;
    broker.rack = None;
    resp.brokers = vec![broker];
    if r.include_cluster_authorized_operations {
        resp.cluster_authorized_operations = CLUSTER_AUTHORIZED_OPERATIONS;
    }
    resp
}

/// FindCoordinator v0–6: this node coordinates every group (key type 0) and transactional id
/// (key type 1) whose coordinator partition is loaded (otherwise the coordinator's answer,
/// COORDINATOR_NOT_AVAILABLE, as Kafka's for a partition without a leader); v4+ answers one
/// `coordinators` entry per key. Other key types (share groups included) are INVALID_REQUEST.
pub fn find_coordinator(b: &Broker, r: FindCoordinatorRequest, v: i16) -> FindCoordinatorResponse {
    let key_error = match r.key_type {
        0 | 1 => None,
        2 => Some("share group coordinators are not supported".to_string()),
        t => Some(format!("Unknown coordinator type {t}")),
    };
    let node = b.config.node_id;
    let host = sb(&b.config.advertised_host);
    let port = b.config.advertised_port;
    let mut resp = FindCoordinatorResponse::default();
    resp.error_message = None;
    if v >= 4 {
        resp.coordinators = r
            .coordinator_keys
            .iter()
            .map(|key| {
                let mut c = Coordinator::default();
                c.key = key.clone();
                let unavailable = match &key_error {
                    None => b.find_coordinator_error(r.key_type, key),
                    Some(_) => None,
                };
                match &key_error {
                    None if unavailable.is_some() => {
                        c.node_id = BrokerId(-1);
                        c.host = sb("");
                        c.port = -1;
                        c.error_code = unavailable.unwrap_or_default();
                        c.error_message = None;
                    }
                    None => {
                        c.node_id = BrokerId(node);
                        c.host = host.clone();
                        c.port = port;
                        c.error_code = 0;
                        c.error_message = None;
                    }
                    Some(m) => {
                        c.node_id = BrokerId(-1);
                        c.host = sb("");
                        c.port = -1;
                        c.error_code = ResponseError::InvalidRequest.code();
                        c.error_message = Some(sb(m));
                    }
                }
                c
            })
            .collect();
        return resp;
    }
    let unavailable = match &key_error {
        None => b.find_coordinator_error(r.key_type, &r.key),
        Some(_) => None,
    };
    match key_error {
        None if unavailable.is_some() => {
            resp.error_code = unavailable.unwrap_or_default();
            resp.node_id = BrokerId(-1);
            resp.host = sb("");
            resp.port = -1;
        }
        None => {
            resp.error_code = 0;
            resp.node_id = BrokerId(node);
            resp.host = host;
            resp.port = port;
        }
        Some(m) => {
            resp.error_code = ResponseError::InvalidRequest.code();
            resp.error_message = Some(sb(&m));
            resp.node_id = BrokerId(-1);
            resp.host = sb("");
            resp.port = -1;
        }
    }
    resp
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn every_topic_config_has_a_broker_synonym_the_engine_accepts() {
        let keys: Vec<&str> = TOPIC_KEYS.iter().map(|k| k.topic).collect();
        assert_eq!(keys, LogConfig::SUPPORTED_TOPIC_KEYS);
        let defaults = LogConfig::default();
        for (key, value) in defaults.to_kafka_pairs() {
            let broker = topic_key(key).expect("listed").broker;
            let same = defaults.with_overrides([(broker, value.as_str())]);
            assert_eq!(same.as_ref(), Ok(&defaults), "{broker}");
        }
    }

    #[test]
    fn listed_defaults_are_sorted_kafka_topic_configs_the_engine_refuses() {
        let keys: Vec<&str> = DEFAULT_TOPIC_KEYS.iter().map(|k| k.topic).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for key in keys {
            // Listed at a value mirrorlog cannot change, so setting it must stay refused.
            assert!(
                LogConfig::UNSUPPORTED_KAFKA_TOPIC_KEYS.contains(&key),
                "{key}"
            );
            assert!(!LogConfig::SUPPORTED_TOPIC_KEYS.contains(&key), "{key}");
        }
    }

    #[test]
    fn every_coordinator_key_has_a_type_and_documentation() {
        let coordinators = crate::group::GroupConfig::KAFKA_KEYS
            .iter()
            .chain(crate::txn::TxnConfig::KAFKA_KEYS);
        for name in coordinators {
            let k = broker_key(name).unwrap_or_else(|| panic!("{name}"));
            assert!(k.config_type != 0 && !k.doc.is_empty(), "{name}");
        }
        let mut names: Vec<&str> = BROKER_KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), BROKER_KEYS.len(), "each key once");
        assert!(
            BROKER_KEYS
                .iter()
                .all(|k| topic_key_of_broker(k.name).is_none())
        );
    }

    /// A broker on `dir` (no coordinators) with topic `t` of one partition; `t`'s id.
    fn broker_with_t(dir: &std::path::Path) -> (Broker, Uuid) {
        let b = Broker::open(
            crate::broker::BrokerConfig::new(dir, "127.0.0.1", 9092),
            std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
            mirrorlog_engine::clock::ManualClock::new(1_700_000_000_000),
        )
        .unwrap();
        let id = b
            .topics
            .create(&b.logs, "t", 1, LogConfig::default(), None)
            .unwrap()
            .id;
        (b, id)
    }

    fn delete_by_id(b: &Broker, id: Uuid) -> DeletableTopicResult {
        let mut t = kafka_protocol::messages::delete_topics_request::DeleteTopicState::default();
        t.topic_id = id;
        let mut r = DeleteTopicsRequest::default();
        r.topics = vec![t];
        delete_topics(b, r, 6).responses.remove(0)
    }

    /// DeleteTopics by id resolves the id to a name, then deletes by that name: a topic deleted
    /// and created again under the same name in between was deleted in the place of the one
    /// asked for. The second half of the handler runs here on a name resolved before the
    /// recreation, as the handler would after losing the race.
    #[test]
    fn a_delete_by_id_leaves_a_topic_recreated_under_its_name_since_it_was_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let (b, old) = broker_with_t(dir.path());
        // Resolved while the old topic exists (as the handler does first)...
        let resolved = b.topics.by_id(old).expect("the topic of the id");
        // ...then the topic is deleted and created again under a new id.
        b.topics.delete(&b.logs, "t").unwrap();
        let new = b
            .topics
            .create(&b.logs, "t", 1, LogConfig::default(), None)
            .unwrap()
            .id;
        let outcome = delete_one(&b, &resolved.name, Some(old));
        assert_eq!(
            outcome.map_err(|e| e.code),
            Err(ResponseError::UnknownTopicId.code()),
            "the delete of the old id took the new topic"
        );
        assert_eq!(b.topics.get("t").map(|t| t.id), Some(new));
        let tp = TopicPartition {
            topic: "t".into(),
            partition: 0,
        };
        assert!(
            b.logs.get(&tp).is_some(),
            "the new topic's partition is gone"
        );
    }

    /// The group coordinator behind a client that creates topic `t` again and commits offset 7
    /// of group `g` to it as soon as the registry lets it: from inside the deletion, if the
    /// name is free by the time the coordinators are told (before this coordinator drops the
    /// deleted topic's offsets, as a request on another thread may).
    pub(crate) struct RacingGroups {
        broker: std::sync::Weak<Broker>,
        groups: std::sync::Arc<crate::group::GroupCoordinator>,
        raced: std::sync::atomic::AtomicBool,
    }

    impl RacingGroups {
        /// A broker on `dir` with topic `t` (its id), offset 5 of group `g` committed to it,
        /// and this coordinator as its only one.
        pub(crate) fn install(
            dir: &std::path::Path,
        ) -> (std::sync::Arc<Broker>, Uuid, std::sync::Arc<RacingGroups>) {
            let (b, old) = broker_with_t(dir);
            let b = std::sync::Arc::new(b);
            let config = crate::group::GroupConfig {
                offsets_topic_partitions: 1,
                ..Default::default()
            };
            let groups =
                crate::group::GroupCoordinator::open(b.logs.clone(), config, b.clock().clone())
                    .unwrap();
            let racing = std::sync::Arc::new(RacingGroups {
                broker: std::sync::Arc::downgrade(&b),
                groups,
                raced: Default::default(),
            });
            b.add_coordinator(racing.clone());
            commit(&racing.groups, 5);
            assert_eq!(racing.committed(), Some(1));
            (b, old, racing)
        }

        fn recreate_and_commit(&self, b: &Broker) {
            b.topics
                .create(&b.logs, "t", 1, LogConfig::default(), None)
                .unwrap();
            commit(&self.groups, 7);
        }

        /// After the deletion: the client's turn, unless it came during the deletion.
        pub(crate) fn recreate_unless_raced(&self, b: &Broker) {
            if !self.raced.load(std::sync::atomic::Ordering::SeqCst) {
                self.recreate_and_commit(b);
            }
        }

        /// How many offsets group `g` has committed.
        pub(crate) fn committed(&self) -> Option<usize> {
            self.groups.group_snapshot("g").map(|g| g.committed_offsets)
        }
    }

    impl crate::broker::Coordinator for RacingGroups {
        fn apis(&self) -> Vec<kafka_protocol::messages::ApiKey> {
            vec![]
        }
        fn supported_versions(&self, _: kafka_protocol::messages::ApiKey) -> Option<(i16, i16)> {
            None
        }
        fn handle(
            &self,
            _: &crate::server::RequestContext,
            _: kafka_protocol::messages::RequestKind,
        ) -> kafka_protocol::messages::ResponseKind {
            unreachable!("answers no API")
        }
        fn tick(&self, _: i64) -> bool {
            false
        }
        fn topic_deleted(&self, topic: &str) {
            let b = self.broker.upgrade().expect("the broker");
            // `None`: the registry is locked (by the deletion), so no creation can run now.
            if matches!(b.topics.try_get(topic), Some(None)) {
                self.recreate_and_commit(&b);
                self.raced.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            self.groups.on_topic_deleted(topic);
        }
    }

    /// Commits `offset` of `t`-0 for group `g` (no generation, as a standalone consumer).
    fn commit(groups: &crate::group::GroupCoordinator, offset: i64) {
        assert_eq!(commit_code(groups, offset), 0);
    }

    /// [`commit`]'s answer for `t`-0.
    fn commit_code(groups: &crate::group::GroupCoordinator, offset: i64) -> i16 {
        use kafka_protocol::messages::offset_commit_request::{
            OffsetCommitRequestPartition, OffsetCommitRequestTopic,
        };
        let mut p = OffsetCommitRequestPartition::default();
        p.partition_index = 0;
        p.committed_offset = offset;
        let mut t = OffsetCommitRequestTopic::default();
        t.name = TopicName(sb("t"));
        t.partitions = vec![p];
        let mut r = kafka_protocol::messages::OffsetCommitRequest::default();
        r.group_id = kafka_protocol::messages::GroupId(sb("g"));
        r.generation_id_or_member_epoch = -1;
        r.topics = vec![t];
        match groups.handle(8, kafka_protocol::messages::RequestKind::OffsetCommit(r)) {
            kafka_protocol::messages::ResponseKind::OffsetCommit(resp) => {
                resp.topics[0].partitions[0].error_code
            }
            other => panic!("{other:?}"),
        }
    }

    /// An OffsetCommit checked that its partition exists, then wrote: a deletion in between
    /// (its offset drop included) left the commit's offset for the deleted topic, which a topic
    /// created again under the name would resume from. The commit clamp runs between the two,
    /// so the deletion runs from it.
    #[test]
    fn an_offset_commit_racing_a_deletion_leaves_no_offset_of_the_deleted_topic() {
        let dir = tempfile::tempdir().unwrap();
        let (b, _, racing) = RacingGroups::install(dir.path());
        let weak = std::sync::Arc::downgrade(&b);
        let deleted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = deleted.clone();
        racing.groups.set_commit_clamp(Box::new(move |_, offset| {
            if !done.swap(true, std::sync::atomic::Ordering::SeqCst) {
                let b = weak.upgrade().expect("the broker");
                delete_one(&b, "t", None).expect("deleted");
            }
            offset
        }));
        let code = commit_code(&racing.groups, 9);
        assert!(deleted.load(std::sync::atomic::Ordering::SeqCst));
        assert!(b.topics.get("t").is_none());
        assert_eq!(code, ResponseError::UnknownTopicOrPartition.code());
        assert_eq!(
            racing.committed(),
            Some(0),
            "an offset of the deleted topic stayed"
        );
    }

    /// DeleteTopics let go of the name before it told the coordinators to drop the topic's
    /// offsets: a topic created again under the name, and offsets committed to it, in between
    /// lost those offsets too. The coordinators must hear of the deletion before the name is
    /// free (Kafka's `onPartitionsDeleted` runs as the deletion is processed).
    #[test]
    fn offsets_committed_to_a_topic_created_again_during_its_deletion_stay() {
        let dir = tempfile::tempdir().unwrap();
        let (b, old, racing) = RacingGroups::install(dir.path());
        let mut st = kafka_protocol::messages::delete_topics_request::DeleteTopicState::default();
        st.name = Some(TopicName(sb("t")));
        let mut r = DeleteTopicsRequest::default();
        r.topics = vec![st];
        let r = delete_topics(&b, r, 6).responses.remove(0);
        assert_eq!(r.error_code, 0, "{r:?}");
        racing.recreate_unless_raced(&b);

        assert_ne!(b.topics.get("t").map(|t| t.id), Some(old));
        assert!(b.topics.get("t").is_some(), "created again");
        assert_eq!(
            racing.committed(),
            Some(1),
            "the offset committed to the topic created again was dropped with the old topic's"
        );
    }

    #[test]
    fn a_delete_by_id_deletes_the_topic_of_that_id_and_answers_an_unknown_one() {
        let dir = tempfile::tempdir().unwrap();
        let (b, id) = broker_with_t(dir.path());
        let r = delete_by_id(&b, id);
        assert_eq!((r.error_code, r.topic_id), (0, id), "{r:?}");
        assert_eq!(r.name.as_ref().map(|n| n.0.as_str()), Some("t"));
        assert!(b.topics.get("t").is_none());
        let r = delete_by_id(&b, id);
        assert_eq!(r.error_code, ResponseError::UnknownTopicId.code(), "{r:?}");
    }

    #[test]
    fn the_registry_deletes_by_id_only_the_topic_with_that_id() {
        let dir = tempfile::tempdir().unwrap();
        let (b, id) = broker_with_t(dir.path());
        let other = Uuid::new_v4();
        let e = b.topics.delete_with_id(&b.logs, "t", other).unwrap_err();
        assert_eq!(e.code, ResponseError::UnknownTopicId.code(), "{e:?}");
        assert!(b.topics.get("t").is_some());
        assert_eq!(b.topics.delete_with_id(&b.logs, "t", id).unwrap().id, id);
        assert!(b.topics.get("t").is_none());
    }

    #[test]
    fn authorized_operation_bits_are_kafkas() {
        assert_eq!(TOPIC_AUTHORIZED_OPERATIONS, 3576);
        assert_eq!(CLUSTER_AUTHORIZED_OPERATIONS, 8096);
    }
}
