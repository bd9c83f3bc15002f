//! What the mirror needs from a source cluster, in our own types. The wire implementation
//! (`mirrorlog_broker::source_client::KafkaSource`) speaks Kafka's protocol to any
//! Kafka-protocol cluster; [`EngineSource`](crate::engine_source::EngineSource) serves an
//! in-process engine for simulations and tests.

use bytes::Bytes;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use std::fmt::Debug;

/// A Kafka error code returned by the source, per partition or request.
pub type ErrorCode = i16;

/// Why a call to the source failed as a whole (per-partition errors are in the responses).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The source could not be reached or the connection broke (retryable).
    #[error("source unreachable: {0}")]
    Unreachable(String),
    /// The source answered with a request-level Kafka error.
    #[error("source returned error {code}: {message}")]
    Kafka {
        /// Kafka error code.
        code: ErrorCode,
        /// What it said, or the error's name.
        message: String,
    },
    /// The source does not implement a needed API or version.
    #[error("source does not support {0}")]
    Unsupported(String),
    /// The source's answer could not be decoded or made no sense.
    #[error("bad answer from the source: {0}")]
    Protocol(String),
}

/// One partition of a source topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePartition {
    /// Partition index.
    pub partition: i32,
    /// The leader's node id (−1: no leader now).
    pub leader: i32,
    /// The leader epoch the source advertises.
    pub leader_epoch: LeaderEpoch,
    /// Per-partition error from metadata (0 = none).
    pub error: ErrorCode,
}

/// One source topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceTopic {
    /// Name.
    pub name: String,
    /// Topic id (16 bytes; all zero when the source does not report ids).
    pub id: [u8; 16],
    /// Internal topic (`__consumer_offsets`…): never mirrored.
    pub internal: bool,
    /// Partitions, by index.
    pub partitions: Vec<SourcePartition>,
    /// Topic-level error from metadata (0 = none; 3 = UNKNOWN_TOPIC_OR_PARTITION).
    pub error: ErrorCode,
}

/// A node of the source cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceNode {
    /// Node id.
    pub id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
}

/// The source's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceMetadata {
    /// The source cluster id.
    pub cluster_id: String,
    /// Its nodes.
    pub nodes: Vec<SourceNode>,
    /// The topics asked for (all when none were named).
    pub topics: Vec<SourceTopic>,
}

/// One partition of a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFetch {
    /// Topic name.
    pub topic: String,
    /// Topic id (all zero: by name).
    pub topic_id: [u8; 16],
    /// Partition.
    pub partition: i32,
    /// Where to read from (the destination's log end).
    pub fetch_offset: Offset,
    /// Epoch of the last batch the destination holds (−1: none) — the source answers a
    /// [`PartitionData::diverging_epoch`] when its log disagrees.
    pub last_fetched_epoch: LeaderEpoch,
    /// The source leader epoch the destination believes in (−1: don't check).
    pub current_leader_epoch: LeaderEpoch,
    /// Per-partition byte limit (`fetch.max.bytes` of the mirror).
    pub max_bytes: i32,
}

/// A fetch from one source node, READ_UNCOMMITTED (the mirror copies to the source's high
/// watermark, transactions included; KIP-1279 §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Partitions led by that node.
    pub partitions: Vec<PartitionFetch>,
    /// Long-poll bound.
    pub max_wait_ms: i32,
    /// Answer as soon as this many bytes are there.
    pub min_bytes: i32,
    /// Whole-response byte limit (`fetch.response.max.bytes`).
    pub max_bytes: i32,
}

/// One partition of a fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    /// Topic name.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Kafka error code (0 = none).
    pub error: ErrorCode,
    /// The source's high watermark.
    pub high_watermark: Offset,
    /// The source's log start offset.
    pub log_start_offset: Offset,
    /// `(epoch, end offset)` when the destination's last fetched epoch is not on the source's log.
    pub diverging_epoch: Option<(LeaderEpoch, Offset)>,
    /// The record batches exactly as the source stores them (may end with a partial batch).
    pub records: Bytes,
    /// With NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH: the partition's leader and its epoch
    /// as the answering node knows them (KIP-951: Fetch v12+ `CurrentLeader`, which Kafka 3.7+
    /// fills), when it names both and the source can be asked at that node (its address is in
    /// the metadata held, or the answer's `NodeEndpoints` gave it). `None`: no such hint; the
    /// source's metadata says who leads.
    pub current_leader: Option<CurrentLeader>,
}

/// The leader of a partition that a node which no longer leads it (or leads it in a newer
/// epoch) names in its fetch answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurrentLeader {
    /// The leader's node id.
    pub id: i32,
    /// Its leader epoch.
    pub epoch: LeaderEpoch,
}

/// A fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// Request-level error (0 = none).
    pub error: ErrorCode,
    /// Per partition.
    pub partitions: Vec<PartitionData>,
}

/// Which offset to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// Log start.
    Earliest,
    /// High watermark.
    Latest,
    /// First offset with a timestamp ≥ this.
    Timestamp(TimestampMs),
}

/// A consumer group's committed offset for one partition on the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Committed offset.
    pub offset: Offset,
    /// Leader epoch stored with the commit (−1: none).
    pub leader_epoch: LeaderEpoch,
    /// Commit metadata.
    pub metadata: Option<String>,
}

/// A group listed on the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// Group id.
    pub group_id: String,
    /// Protocol type (`consumer`, or empty).
    pub protocol_type: String,
    /// State (`Stable`, `Empty`, …) when the source reports it.
    pub state: Option<String>,
    /// Group type (`classic`, `consumer`, `share`) when the source reports it (KIP-848).
    pub group_type: Option<String>,
}

/// Everything the mirror asks of a source cluster. Implementations follow partition leaders
/// across a multi-node source and retry transient failures with backoff; errors that remain are
/// returned. All calls may block (network).
pub trait SourceCluster: Send + Sync + Debug {
    /// Metadata for `topics` (all topics when `None`).
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError>;
    /// A fetch from the leader `node` of the requested partitions.
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError>;
    /// ListOffsets for one partition: (offset, leader epoch of that offset if known).
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError>;
    /// OffsetForLeaderEpoch for one partition: the source's `(epoch, end offset)` for `epoch`,
    /// asked of the leader in `current_leader_epoch` (the epoch the caller's metadata names;
    /// −1: don't check). As for a fetch, a leader in another epoch answers
    /// `FENCED_LEADER_EPOCH` (the caller's is older) or `UNKNOWN_LEADER_EPOCH` (newer) rather
    /// than where the epoch ends in its own log.
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError>;
    /// Whether a fetch from `node` can answer a [`PartitionData::diverging_epoch`] — Kafka's
    /// Fetch v12+ (Kafka 2.7+), which carries [`PartitionFetch::last_fetched_epoch`]. When it
    /// cannot, the mirror finds a divergence as Kafka's `ReplicaFetcherThread` does with such a
    /// leader: before fetching a partition that enters MIRRORING or whose source leader changed
    /// (from the metadata, or from fetched records of an epoch it had not heard of), it asks
    /// [`end_offset_for_epoch`](Self::end_offset_for_epoch) about its latest epoch.
    ///
    /// The default answers `true` (a source that always reports divergence).
    fn fetch_reports_divergence(&self, node: i32) -> Result<bool, SourceError> {
        let _ = node;
        Ok(true)
    }
    /// The topic's own configs (DescribeConfigs entries whose source is `DYNAMIC_TOPIC_CONFIG`,
    /// not values inherited from the source's broker settings), as Kafka key/value pairs; and
    /// its `cleanup.policy` wherever it comes from when that policy compacts (a topic compacted
    /// by its brokers' default is never deleted by retention, so neither may its mirror be).
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError>;
    /// Groups on the source (ListGroups).
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError>;
    /// A group's committed offsets (OffsetFetch, all partitions).
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError>;

    /// Failback's question (KIP-1279 §8, §14): the last mirror epoch of the source's own mirror
    /// *from* cluster `requester_cluster_id` for partition `partition` of topic `topic_id`, and
    /// where that epoch ends in the source's log. `None`: the source holds no such mirror — the
    /// partition is copied from scratch. [`SourceError::Unsupported`]: the source's node does not
    /// speak the mirror RPCs, so it cannot say (the partition is copied from scratch only when it
    /// holds nothing). An error when the source still mirrors it from us (not STOPPED): failing
    /// back then would lose its data.
    ///
    /// The default answers `None` (a source without cluster mirroring).
    fn last_mirror_epoch(
        &self,
        requester_cluster_id: &str,
        topic_id: [u8; 16],
        partition: i32,
    ) -> Result<Option<(LeaderEpoch, Offset)>, SourceError> {
        let _ = (requester_cluster_id, topic_id, partition);
        Ok(None)
    }
}
