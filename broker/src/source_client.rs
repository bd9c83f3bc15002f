//! The wire implementation of the mirror's [`SourceCluster`]: a small blocking Kafka client,
//! [`KafkaSource`], that reads from any Kafka-protocol cluster (Apache Kafka, or another
//! mirrorlog broker) on behalf of the mirror (KIP-1279 §2, §8, §10).
//!
//! # Connections
//! Connections are made lazily, kept, and remade after any transport or framing failure (the
//! next call reconnects). Each source node has two: a *fetch* connection used only by
//! [`SourceCluster::fetch`] (one fetcher thread per node is the expected use), and a *control*
//! connection for everything else, so that metadata, offset and group calls never queue behind a
//! long-polling fetch. Each sits behind its own mutex: calls on one connection run one at a time,
//! in order. The bootstrap servers are only used to find the cluster — until metadata names its
//! nodes, or when no known node answers — over short-lived connections.
//!
//! # Versions
//! On connect the client sends ApiVersions v3; a node that does not speak it answers with a v0
//! body carrying `UNSUPPORTED_VERSION` and its own ApiVersions range, and the client asks again
//! at the highest version it offers (v0 when it says nothing), as KIP-511 and Kafka's
//! `NetworkClient` do. For each API the connection then uses the highest version in
//! [`CLIENT_API_VERSIONS`] that the node and the codec also support. A call whose API has no
//! common version fails with [`SourceError::Unsupported`]; other calls keep working.
//!
//! | API | versions | what the version changes here |
//! |---|---|---|
//! | Metadata | 1–12 | cluster id v2+, leader epochs v7+, topic ids v10+, no auto-creation v4+ |
//! | Fetch | 4–16 | log start v5+, current leader epoch v9+, `LastFetchedEpoch`/`DivergingEpoch` v12+ and the answer's `CurrentLeader` (KIP-951) v12+, topic ids v13+, the answer's `NodeEndpoints` v16+ |
//! | ListOffsets | 1–8 | leader epoch of the offset v4+ |
//! | OffsetForLeaderEpoch | 2–4 | current leader epoch (all versions; `FENCED_LEADER_EPOCH` and `UNKNOWN_LEADER_EPOCH` are the caller's to handle, not retried), consumer replica id (−1) v3+ |
//! | DescribeConfigs | 1–4 | |
//! | ListGroups | 0–5 | state v4+, type v5+ |
//! | FindCoordinator | 0–6 | batched keys v4+ |
//! | OffsetFetch | 1–8 | all partitions as a null topic list v2+, leader epoch v5+, batched groups v8+ |
//!
//! Below Fetch v12 the source cannot check a `last_fetched_epoch`: it is not sent,
//! [`SourceCluster::fetch_reports_divergence`] answers `false`, and the mirror reconciles with
//! [`SourceCluster::end_offset_for_epoch`] instead (before fetching a partition that starts
//! mirroring or whose leader changed). From Fetch v13 partitions are
//! named by topic id: the caller's id when it gives one, else the id the source's metadata
//! reported for the name (asked once per name and cached; forgotten on `UNKNOWN_TOPIC_ID`).
//!
//! # Routing
//! [`SourceCluster::fetch`] goes to the node the caller names (it routes by leader and refreshes
//! metadata on `NOT_LEADER_OR_FOLLOWER` and friends, which come back per partition, unless the
//! answer names the new leader: [`PartitionData::current_leader`], whose endpoint the client
//! takes from the answer's `NodeEndpoints`). ListOffsets
//! and OffsetForLeaderEpoch go to the partition's leader from cached metadata, refreshed when the
//! leader is unknown or answers as if it were not the leader. DescribeConfigs and Metadata go to
//! any node, ListGroups to every node (each lists the groups it coordinates), OffsetFetch to the
//! group's coordinator (FindCoordinator).
//!
//! # Retries and timeouts
//! Transport failures (refused, reset, closed, timed out) and retriable Kafka errors
//! (`LEADER_NOT_AVAILABLE` in metadata, `COORDINATOR_LOAD_IN_PROGRESS` and friends for group
//! calls, stale leaders for leader calls) are retried up to
//! [`max_retries`](KafkaSourceConfig::max_retries) times with exponential backoff
//! (`retry_backoff_ms · 2ⁿ`, capped at `retry_backoff_max_ms`, ±20 % jitter, as Kafka's
//! `ExponentialBackoff`); what remains is returned. Every socket operation has a deadline: the
//! connect timeout, then the request timeout for the whole request and response (plus
//! `max_wait_ms` for a fetch). A response larger than
//! [`response_max_bytes`](KafkaSourceConfig::response_max_bytes) closes the connection. Host
//! names are resolved by the system resolver, which has no timeout of ours.
//!
//! # Fetches
//! Sessionless full fetches (`session_id` 0, `session_epoch` −1), `READ_UNCOMMITTED` (the mirror
//! copies to the source's high watermark, KIP-1279 §10), `replica_id` −1 (a consumer-like
//! client). Record bytes are handed over as the source sent them — never decoded, possibly ending
//! in a partial batch. A `throttle_time_ms` in a Fetch answer (v8+) holds that connection's next
//! request that long (at most the request timeout), as Kafka's clients do (KIP-219).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::{NodeEndpoint, PartitionData as FetchPartitionData};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic,
};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, DescribeConfigsRequest,
    DescribeConfigsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    ListGroupsRequest, ListGroupsResponse, ListOffsetsRequest, ListOffsetsResponse,
    MetadataRequest, MetadataResponse, OffsetFetchRequest, OffsetFetchResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, RequestHeader, ResponseHeader,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::source::{
    CommittedOffset, CurrentLeader, ErrorCode, FetchRequest, FetchResponse, GroupListing,
    OffsetSpec, PartitionData, SourceCluster, SourceError, SourceMetadata, SourceNode,
    SourcePartition, SourceTopic,
};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tracing::{debug, warn};
use uuid::Uuid;

// ---------------------------------------------------------------------------------------------
// Versions
// ---------------------------------------------------------------------------------------------

/// The versions this client implements, per API: `(api, lowest, highest)`. With each node it uses
/// the highest version that the node and the codec support too.
pub const CLIENT_API_VERSIONS: [(ApiKey, i16, i16); 8] = [
    (ApiKey::Metadata, 1, 12),
    (ApiKey::Fetch, 4, 16),
    (ApiKey::ListOffsets, 1, 8),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::OffsetFetch, 1, 8),
];

/// The ApiVersions version a connection opens with (v3: flexible, names the client software).
const API_VERSIONS_FIRST: i16 = 3;

/// What the ApiVersions v3+ request names as the client software (Kafka's pattern
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`).
const SOFTWARE_NAME: &str = "mirrorlog";
const SOFTWARE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// DescribeConfigs resource type of a topic.
const RESOURCE_TOPIC: i8 = 2;
/// DescribeConfigs `config_source` of a value set on the topic itself (Kafka's
/// `DYNAMIC_TOPIC_CONFIG`).
const CONFIG_SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// Whether a source topic's DescribeConfigs entry is copied to its mirror topic: the topic's
/// own settings only (KIP-1279 §12) — a value the source inherits from its brokers' settings
/// (`log.retention.hours` in server.properties, a dynamic broker default) is not the topic's,
/// and copied it would pin the source's broker defaults on the destination topic — except a
/// `cleanup.policy` that compacts, wherever it comes from: a topic that compacts because its
/// brokers' `log.cleanup.policy` says so is never deleted by time or size there, and its mirror
/// must not be either (the destination maps the policy, `broker::mirrors`).
fn copied_to_the_mirror(name: &str, value: &str, source: i8) -> bool {
    source == CONFIG_SOURCE_DYNAMIC_TOPIC
        || (name == "cleanup.policy" && value.split(',').any(|p| p.trim() == "compact"))
}

/// FindCoordinator key type of a consumer group.
const COORDINATOR_GROUP: i8 = 0;
/// The replica id of a consumer (Fetch, ListOffsets, OffsetForLeaderEpoch).
const CONSUMER_REPLICA_ID: i32 = -1;
/// The first Fetch version with `LastFetchedEpoch` and `DivergingEpoch` (KIP-595, Kafka 2.7).
const FETCH_VERSION_LAST_FETCHED_EPOCH: i16 = 12;

/// The first Fetch version with `CurrentLeaderEpoch` (KIP-320, Kafka 2.1).
const FETCH_VERSION_CURRENT_LEADER_EPOCH: i16 = 9;

/// One partition of a Fetch request at version `v`, with the fields `v` has: the leader epoch
/// the caller's metadata names (`CurrentLeaderEpoch`, v9+: the leader fences an older one) and
/// the epoch of its last batch (`LastFetchedEpoch`, v12+). Below those versions the request
/// has no such field, and such a source answers from its log whatever epoch the caller knows.
fn fetch_partition(p: &mirrorlog_mirror::source::PartitionFetch, v: i16) -> FetchPartition {
    let mut fp = FetchPartition::default();
    fp.partition = p.partition;
    fp.fetch_offset = p.fetch_offset.get();
    fp.partition_max_bytes = p.max_bytes;
    // −1: a consumer has no log start of its own to report.
    fp.log_start_offset = -1;
    if v >= FETCH_VERSION_CURRENT_LEADER_EPOCH {
        fp.current_leader_epoch = p.current_leader_epoch.get();
    }
    if v >= FETCH_VERSION_LAST_FETCHED_EPOCH {
        fp.last_fetched_epoch = p.last_fetched_epoch.get();
    }
    fp
}

/// The first Fetch version whose partition answers carry `CurrentLeader` (KIP-951's field,
/// tagged from v12; Kafka fills it from 3.7).
const FETCH_VERSION_CURRENT_LEADER: i16 = 12;

/// The first Fetch version whose answer carries `NodeEndpoints` (KIP-951).
const FETCH_VERSION_NODE_ENDPOINTS: i16 = 16;

/// The leader a partition's fetch answer names (KIP-951), when it names one: only with
/// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and only both a leader and an epoch (−1 in
/// either is no hint), as Kafka's consumer reads it.
fn leader_hint(p: &FetchPartitionData, v: i16) -> Option<CurrentLeader> {
    let l = &p.current_leader;
    (v >= FETCH_VERSION_CURRENT_LEADER
        && matches!(p.error_code, NOT_LEADER_OR_FOLLOWER | FENCED_LEADER_EPOCH)
        && l.leader_id.0 >= 0
        && l.leader_epoch >= 0)
        .then_some(CurrentLeader {
            id: l.leader_id.0,
            epoch: LeaderEpoch(l.leader_epoch),
        })
}

/// Read responses in chunks of at most this many bytes, so that a peer announcing a large frame
/// and sending little costs little memory. The default response size (16 MiB) and the records
/// of a default fetch answer (1 MiB plus its fields) fit one chunk: the buffer is not regrown
/// (and copied) under the answer.
const READ_CHUNK_BYTES: usize = 16 << 20;

/// A response body is received with `SO_RCVLOWAT` at this (or what is left of the body, if
/// less): the fetcher wakes and `recv`s once per this many bytes instead of once per segment
/// the loopback delivers.
const RCVLOWAT_BYTES: usize = 256 << 10;

/// The smallest low mark worth its `setsockopt`s: a body (or the rest of one) under twice this
/// is received with the default mark of 1.
const RCVLOWAT_MIN_BYTES: usize = 64 << 10;

const UNKNOWN_TOPIC_OR_PARTITION: ErrorCode = ResponseError::UnknownTopicOrPartition.code();
const LEADER_NOT_AVAILABLE: ErrorCode = ResponseError::LeaderNotAvailable.code();
const NOT_LEADER_OR_FOLLOWER: ErrorCode = ResponseError::NotLeaderOrFollower.code();
const REPLICA_NOT_AVAILABLE: ErrorCode = ResponseError::ReplicaNotAvailable.code();
const COORDINATOR_LOAD_IN_PROGRESS: ErrorCode = ResponseError::CoordinatorLoadInProgress.code();
const COORDINATOR_NOT_AVAILABLE: ErrorCode = ResponseError::CoordinatorNotAvailable.code();
const NOT_COORDINATOR: ErrorCode = ResponseError::NotCoordinator.code();
const UNSUPPORTED_VERSION: ErrorCode = ResponseError::UnsupportedVersion.code();
const KAFKA_STORAGE_ERROR: ErrorCode = ResponseError::KafkaStorageError.code();
const FENCED_LEADER_EPOCH: ErrorCode = ResponseError::FencedLeaderEpoch.code();
const UNKNOWN_LEADER_EPOCH: ErrorCode = ResponseError::UnknownLeaderEpoch.code();
const OFFSET_NOT_AVAILABLE: ErrorCode = ResponseError::OffsetNotAvailable.code();
const UNKNOWN_TOPIC_ID: ErrorCode = ResponseError::UnknownTopicId.code();

/// For each entry of [`CLIENT_API_VERSIONS`], the highest version in the intersection of ours,
/// the node's (`offered`: api key → min, max) and the codec's; `None` when they do not meet.
fn negotiate_versions(offered: &HashMap<i16, (i16, i16)>) -> [Option<i16>; 8] {
    CLIENT_API_VERSIONS.map(|(api, lo, hi)| {
        let (node_lo, node_hi) = *offered.get(&(api as i16))?;
        let codec = api.valid_versions();
        let lo = lo.max(node_lo).max(codec.min);
        let hi = hi.min(node_hi).min(codec.max);
        (lo <= hi).then_some(hi)
    })
}

/// Kafka's error name for a code (`LEADER_NOT_AVAILABLE` as `LeaderNotAvailable`).
fn error_name(code: ErrorCode) -> String {
    match ResponseError::try_from_code(code) {
        Some(e) => e.to_string(),
        None => "NONE".to_string(),
    }
}

fn kafka_error(code: ErrorCode, message: Option<&StrBytes>) -> SourceError {
    SourceError::Kafka {
        code,
        message: message.map_or_else(|| error_name(code), |m| m.to_string()),
    }
}

/// Errors of a leader-only request that mean "ask the leader again, after refreshing metadata".
fn is_stale_leader_error(code: ErrorCode) -> bool {
    matches!(
        code,
        UNKNOWN_TOPIC_OR_PARTITION
            | LEADER_NOT_AVAILABLE
            | NOT_LEADER_OR_FOLLOWER
            | REPLICA_NOT_AVAILABLE
            | KAFKA_STORAGE_ERROR
            | FENCED_LEADER_EPOCH
            | UNKNOWN_LEADER_EPOCH
            | OFFSET_NOT_AVAILABLE
    )
}

/// Errors of a group call that clear up by themselves (the coordinator is loading or moved).
fn is_coordinator_error(code: ErrorCode) -> bool {
    matches!(
        code,
        COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
    )
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// How to reach and talk to a source cluster; named after the Kafka client settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSourceConfig {
    /// `bootstrap.servers`: `host:port` of one or more source brokers (IPv6 as `[addr]:port`),
    /// used only to find the cluster — node addresses come from metadata. No default: at least
    /// one is required, each with a port in `1..=65535`.
    pub bootstrap_servers: Vec<String>,
    /// `client.id`, sent in every request header. Default `mirrorlog-mirror`; at most 32767
    /// bytes.
    pub client_id: String,
    /// `request.timeout.ms`: how long one request may take, from the first byte sent to the last
    /// byte of its response (a fetch adds its `max_wait_ms`). Default 30000; range
    /// `1..=2147483647`.
    pub request_timeout_ms: u64,
    /// `socket.connection.setup.timeout.ms`: how long a TCP connect may take, per resolved
    /// address. Default 10000; range `1..=2147483647`.
    pub connect_timeout_ms: u64,
    /// `retry.backoff.ms`: the pause before the first retry; it doubles with each retry. Default
    /// 100; range `0..=retry_backoff_max_ms`.
    pub retry_backoff_ms: u64,
    /// `retry.backoff.max.ms`: the longest pause between retries. Default 1000; range
    /// `retry_backoff_ms..=2147483647`.
    pub retry_backoff_max_ms: u64,
    /// How many times a call is retried after a transport failure or a retriable error before
    /// the error is returned (0: one attempt only). Default 5; any value.
    pub max_retries: u32,
    /// The largest response frame accepted; a larger one closes the connection (a bound against
    /// a confused or hostile source). Must exceed the fetch's `max_bytes` plus one batch of the
    /// source's `max.message.bytes`. Default 268435456 (256 MiB); range `1024..=2147483647`.
    pub response_max_bytes: usize,
}

impl KafkaSourceConfig {
    /// Default of [`client_id`](Self::client_id).
    pub const DEFAULT_CLIENT_ID: &'static str = "mirrorlog-mirror";
    /// Default of [`request_timeout_ms`](Self::request_timeout_ms).
    pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
    /// Default of [`connect_timeout_ms`](Self::connect_timeout_ms).
    pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
    /// Default of [`retry_backoff_ms`](Self::retry_backoff_ms).
    pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 100;
    /// Default of [`retry_backoff_max_ms`](Self::retry_backoff_max_ms).
    pub const DEFAULT_RETRY_BACKOFF_MAX_MS: u64 = 1_000;
    /// Default of [`max_retries`](Self::max_retries).
    pub const DEFAULT_MAX_RETRIES: u32 = 5;
    /// Default of [`response_max_bytes`](Self::response_max_bytes).
    pub const DEFAULT_RESPONSE_MAX_BYTES: usize = 256 << 20;

    /// The defaults, with these bootstrap servers.
    pub fn new<S: Into<String>>(bootstrap_servers: impl IntoIterator<Item = S>) -> Self {
        KafkaSourceConfig {
            bootstrap_servers: bootstrap_servers.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Rejects out-of-range settings with a message naming the setting.
    ///
    /// # Errors
    /// The first invalid setting.
    pub fn validate(&self) -> Result<(), String> {
        const MAX_MS: u64 = i32::MAX as u64;
        if self.bootstrap_servers.is_empty() {
            return Err("bootstrap.servers must name at least one host:port".into());
        }
        for s in &self.bootstrap_servers {
            split_host_port(s).map_err(|e| format!("bootstrap.servers: {e}"))?;
        }
        if self.client_id.len() > i16::MAX as usize {
            return Err(format!(
                "client.id is {} bytes; at most {}",
                self.client_id.len(),
                i16::MAX
            ));
        }
        for (name, v) in [
            ("request.timeout.ms", self.request_timeout_ms),
            (
                "socket.connection.setup.timeout.ms",
                self.connect_timeout_ms,
            ),
        ] {
            if !(1..=MAX_MS).contains(&v) {
                return Err(format!("{name} {v} is outside 1..={MAX_MS}"));
            }
        }
        if self.retry_backoff_max_ms > MAX_MS {
            return Err(format!(
                "retry.backoff.max.ms {} is above {MAX_MS}",
                self.retry_backoff_max_ms
            ));
        }
        if self.retry_backoff_ms > self.retry_backoff_max_ms {
            return Err(format!(
                "retry.backoff.ms {} is above retry.backoff.max.ms {}",
                self.retry_backoff_ms, self.retry_backoff_max_ms
            ));
        }
        if !(1024..=i32::MAX as usize).contains(&self.response_max_bytes) {
            return Err(format!(
                "response_max_bytes {} is outside 1024..={}",
                self.response_max_bytes,
                i32::MAX
            ));
        }
        Ok(())
    }

    fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

impl Default for KafkaSourceConfig {
    /// The documented defaults, with no bootstrap server (which [`validate`](Self::validate)
    /// refuses: set one).
    fn default() -> Self {
        KafkaSourceConfig {
            bootstrap_servers: vec![],
            client_id: Self::DEFAULT_CLIENT_ID.to_string(),
            request_timeout_ms: Self::DEFAULT_REQUEST_TIMEOUT_MS,
            connect_timeout_ms: Self::DEFAULT_CONNECT_TIMEOUT_MS,
            retry_backoff_ms: Self::DEFAULT_RETRY_BACKOFF_MS,
            retry_backoff_max_ms: Self::DEFAULT_RETRY_BACKOFF_MAX_MS,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            response_max_bytes: Self::DEFAULT_RESPONSE_MAX_BYTES,
        }
    }
}

/// Splits `host:port` (`[v6 addr]:port` for IPv6).
fn split_host_port(s: &str) -> Result<(String, u16), String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?} is not host:port"))?;
    let host = match host.strip_prefix('[') {
        Some(h) => h
            .strip_suffix(']')
            .ok_or_else(|| format!("{s:?}: unbalanced '[' in the host"))?,
        None => host,
    };
    if host.is_empty() {
        return Err(format!("{s:?} has no host"));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{s:?}: port {port:?} is not a number in 1..=65535"))?;
    if port == 0 {
        return Err(format!("{s:?}: port 0 is outside 1..=65535"));
    }
    Ok((host.to_string(), port))
}

/// `host:port` of a node, bracketing an IPv6 literal.
fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Kafka's `ExponentialBackoff`: `base · 2^attempt` capped at `max`, times a jitter factor in
/// `[0.8, 1.2]` drawn from `random`, capped at `max` again.
fn backoff_ms(base: u64, max: u64, attempt: u32, random: u64) -> u64 {
    let exp = base.saturating_mul(1u64.checked_shl(attempt).unwrap_or(u64::MAX));
    let term = exp.min(max);
    let factor = 800 + random % 401; // per mille
    (term.saturating_mul(factor) / 1000).min(max)
}

// ---------------------------------------------------------------------------------------------
// One connection
// ---------------------------------------------------------------------------------------------

/// One TCP connection to one source node, with the versions negotiated on it.
struct Connection {
    stream: TcpStream,
    /// The `host:port` it was opened to; a node whose advertised address changes is reconnected.
    addr: String,
    next_correlation_id: i32,
    /// Negotiated version per entry of [`CLIENT_API_VERSIONS`].
    versions: [Option<i16>; 8],
    /// What the node offered (api key → min, max), for error messages.
    offered: HashMap<i16, (i16, i16)>,
    client_id: StrBytes,
    request_timeout: Duration,
    response_max_bytes: usize,
    /// The socket's `SO_RCVLOWAT` now (1, the default, between frames).
    rcvlowat: usize,
    /// No request is sent before this: the node's quota throttled its last answer (KIP-219).
    throttled_until: Option<Instant>,
}

fn io_error(addr: &str, what: &str, e: &io::Error) -> SourceError {
    let why = match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_string(),
        _ => e.to_string(),
    };
    SourceError::Unreachable(format!("{what} {addr}: {why}"))
}

impl Connection {
    /// Connects to `addr` (each resolved address in turn) and negotiates versions.
    fn open(addr: &str, config: &KafkaSourceConfig) -> Result<Connection, SourceError> {
        let (host, port) = split_host_port(addr).map_err(SourceError::Unreachable)?;
        let resolved = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| io_error(addr, "resolving", &e))?;
        let timeout = Duration::from_millis(config.connect_timeout_ms);
        let mut last = None;
        let mut stream = None;
        for a in resolved {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(io_error(addr, "connecting to", &e)),
            (None, None) => {
                return Err(SourceError::Unreachable(format!(
                    "{addr} resolves to no address"
                )));
            }
        };
        stream
            .set_nodelay(true)
            .map_err(|e| io_error(addr, "configuring", &e))?;
        let mut c = Connection {
            stream,
            addr: addr.to_string(),
            next_correlation_id: 0,
            versions: [None; 8],
            offered: HashMap::new(),
            client_id: sb(&config.client_id),
            request_timeout: config.request_timeout(),
            response_max_bytes: config.response_max_bytes,
            rcvlowat: 1,
            throttled_until: None,
        };
        c.negotiate()?;
        debug!(addr, versions = ?c.negotiated(), "connected to a source node");
        Ok(c)
    }

    /// ApiVersions, stepping down on `UNSUPPORTED_VERSION` (KIP-511).
    fn negotiate(&mut self) -> Result<(), SourceError> {
        let mut version = API_VERSIONS_FIRST;
        loop {
            let request = if version >= 3 {
                ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str(SOFTWARE_NAME))
                    .with_client_software_version(StrBytes::from_static_str(SOFTWARE_VERSION))
            } else {
                ApiVersionsRequest::default()
            };
            let timeout = self.request_timeout;
            let mut body = self.round_trip(ApiKey::ApiVersions, version, &request, timeout)?;
            // The error code opens the body at every version; an UNSUPPORTED_VERSION answer is a
            // v0 body whatever the request's version.
            let code = match body.get(..2) {
                Some(b) => i16::from_be_bytes([b[0], b[1]]),
                None => return Err(self.protocol("an ApiVersions response of under 2 bytes")),
            };
            if code == UNSUPPORTED_VERSION && version > 0 {
                let r = ApiVersionsResponse::decode(&mut body, 0)
                    .map_err(|e| self.protocol(format!("ApiVersions v0 response: {e}")))?;
                let offered = r
                    .api_keys
                    .iter()
                    .find(|k| k.api_key == ApiKey::ApiVersions as i16)
                    .map_or(0, |k| k.max_version.clamp(0, API_VERSIONS_FIRST));
                // Strictly lower each round, so this ends.
                version = if offered < version { offered } else { 0 };
                debug!(addr = %self.addr, version, "ApiVersions not supported; asking again");
                continue;
            }
            let r = ApiVersionsResponse::decode(&mut body, version)
                .map_err(|e| self.protocol(format!("ApiVersions v{version} response: {e}")))?;
            if r.error_code != 0 {
                return Err(kafka_error(r.error_code, None));
            }
            self.offered = r
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect();
            self.versions = negotiate_versions(&self.offered);
            return Ok(());
        }
    }

    fn negotiated(&self) -> Vec<(ApiKey, Option<i16>)> {
        CLIENT_API_VERSIONS
            .iter()
            .zip(self.versions)
            .map(|((api, _, _), v)| (*api, v))
            .collect()
    }

    /// The version to use for `api`, or `Unsupported`.
    fn version(&self, api: ApiKey) -> Result<i16, SourceError> {
        let i = CLIENT_API_VERSIONS
            .iter()
            .position(|(k, _, _)| *k == api)
            .expect("an API this client implements");
        self.versions[i].ok_or_else(|| {
            let (_, lo, hi) = CLIENT_API_VERSIONS[i];
            SourceError::Unsupported(match self.offered.get(&(api as i16)) {
                Some((a, b)) => format!(
                    "{api:?} v{lo}..={hi} (the source node at {} offers v{a}..={b})",
                    self.addr
                ),
                None => format!(
                    "{api:?} (the source node at {} does not offer it)",
                    self.addr
                ),
            })
        })
    }

    fn protocol(&self, what: impl fmt::Display) -> SourceError {
        SourceError::Protocol(format!("from {}: {what}", self.addr))
    }

    /// Sends one request and returns its response body (header checked and removed).
    fn round_trip<Req: Encodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        body: &Req,
        timeout: Duration,
    ) -> Result<Bytes, SourceError> {
        self.wait_out_throttle();
        let deadline = Instant::now() + timeout;
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1) & i32::MAX;
        let mut buf = BytesMut::with_capacity(256);
        buf.put_i32(0);
        // An encoding failure is our bug (a field set that the version lacks): refuse the call
        // rather than take the fetcher thread down.
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(self.client_id.clone()))
            .encode(&mut buf, api.request_header_version(version))
            .map_err(|e| {
                SourceError::Protocol(format!("encoding a {api:?} v{version} header: {e}"))
            })?;
        body.encode(&mut buf, version).map_err(|e| {
            SourceError::Protocol(format!("encoding a {api:?} v{version} request: {e}"))
        })?;
        let size = i32::try_from(buf.len() - 4).map_err(|_| {
            SourceError::Protocol(format!("a {api:?} request of {} bytes", buf.len()))
        })?;
        buf[..4].copy_from_slice(&size.to_be_bytes());

        self.write_request(&buf, deadline)?;

        let mut frame = self.read_frame(deadline)?;
        // ApiVersions responses always carry header v0 (KIP-511).
        let header_version = if api == ApiKey::ApiVersions {
            0
        } else {
            api.response_header_version(version)
        };
        let header = ResponseHeader::decode(&mut frame, header_version)
            .map_err(|e| self.protocol(format!("a {api:?} response header: {e}")))?;
        if header.correlation_id != correlation_id {
            return Err(self.protocol(format!(
                "correlation id {} answers request {correlation_id}",
                header.correlation_id
            )));
        }
        Ok(frame)
    }

    /// One mirror RPC (keys 94–106, `mirror_rpc`): not in the `kafka-protocol` codec, so framed
    /// here; [`SourceError::Unsupported`] when the node does not offer its v0 (a plain Kafka
    /// node, or one of an older build).
    fn mirror_call(
        &mut self,
        request: &crate::mirror_rpc::MirrorRequest,
        timeout: Duration,
    ) -> Result<crate::mirror_rpc::MirrorResponse, SourceError> {
        let key = request.api_key();
        if !self
            .offered
            .get(&(key as i16))
            .is_some_and(|(lo, hi)| (*lo..=*hi).contains(&0))
        {
            return Err(SourceError::Unsupported(
                match self.offered.get(&(key as i16)) {
                    Some((a, b)) => format!(
                        "{key:?} v0 (the source node at {} offers v{a}..={b})",
                        self.addr
                    ),
                    None => format!(
                        "{key:?} (the source node at {} does not offer it)",
                        self.addr
                    ),
                },
            ));
        }
        self.wait_out_throttle();
        let deadline = Instant::now() + timeout;
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1) & i32::MAX;
        let frame = request.to_frame(correlation_id, &self.client_id);
        self.write_request(&frame, deadline)?;
        let body = self.read_frame(deadline)?;
        crate::mirror_rpc::MirrorResponse::from_frame(key, correlation_id, body)
            .map_err(|e| self.protocol(format!("a {key:?} response: {e}")))
    }

    /// One typed request and response.
    fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api: ApiKey,
        version: i16,
        request: &Req,
        timeout: Duration,
    ) -> Result<Resp, SourceError> {
        let mut body = self.round_trip(api, version, request, timeout)?;
        Resp::decode(&mut body, version)
            .map_err(|e| self.protocol(format!("decoding a {api:?} v{version} response: {e}")))
    }

    /// Holds this connection's next request for `throttle_time_ms` (at most the request
    /// timeout), as Kafka's `NetworkClient` does for a response whose version leaves throttling
    /// to the client (KIP-219: the broker mutes the channel meanwhile, so a request sent anyway
    /// only waits there, on the request's clock, and one left waiting past its timeout was
    /// retried on a new connection, outside the quota).
    fn throttle(&mut self, throttle_time_ms: i32) {
        if throttle_time_ms > 0 {
            let pause = Duration::from_millis(throttle_time_ms as u64).min(self.request_timeout);
            debug!(addr = %self.addr, throttle_time_ms, "throttled by the source's quota");
            self.throttled_until = Some(Instant::now() + pause);
        }
    }

    /// Waits out a throttle (see [`throttle`](Self::throttle)) before a request.
    fn wait_out_throttle(&mut self) {
        if let Some(until) = self.throttled_until.take() {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
        }
    }

    /// Writes one whole request frame before `deadline`.
    fn write_request(&mut self, frame: &[u8], deadline: Instant) -> Result<(), SourceError> {
        let left = remaining(deadline, &self.addr)?;
        self.stream
            .set_write_timeout(Some(left))
            .map_err(|e| io_error(&self.addr, "configuring", &e))?;
        self.stream
            .write_all(frame)
            .map_err(|e| io_error(&self.addr, "sending to", &e))
    }

    /// Reads one `int32 size` + body frame before `deadline`.
    fn read_frame(&mut self, deadline: Instant) -> Result<Bytes, SourceError> {
        // A frame given up halfway (an error) may have left the low mark up.
        self.set_rcvlowat(1)?;
        let mut size = [0u8; 4];
        self.read_fully(&mut size, deadline)?;
        let size = i32::from_be_bytes(size);
        if size < 0 || size as usize > self.response_max_bytes {
            return Err(self.protocol(format!(
                "a response of {size} bytes (limit {})",
                self.response_max_bytes
            )));
        }
        let total = size as usize;
        // Received straight into the buffer's spare capacity: a fetch response is mostly record
        // bytes, and zero-filling them first cost the fetcher as much as the copy out of the
        // socket. The buffer grows a chunk at a time, as the bytes arrive.
        let mut body = Vec::with_capacity(total.min(READ_CHUNK_BYTES));
        while body.len() < total {
            let want = (total - body.len()).min(READ_CHUNK_BYTES);
            body.reserve(want);
            // Woken once this much of the frame is there, not at every segment that arrives;
            // at most half of what is left of it (see `set_rcvlowat`). Small answers (and the
            // tail of a large one) are read as they come, without the two extra syscalls.
            let mark = if want >= 2 * RCVLOWAT_MIN_BYTES {
                (want / 2).min(RCVLOWAT_BYTES)
            } else {
                1
            };
            self.set_rcvlowat(mark)?;
            self.read_into_spare(&mut body, want, deadline)?;
        }
        // The next frame's size prefix, or a small answer, must wake the reader.
        self.set_rcvlowat(1)?;
        Ok(Bytes::from(body))
    }

    /// Sets `SO_RCVLOWAT` to `n` unless it is already: a blocking `recv` then returns once it
    /// has `n` bytes (or all it asked for, if fewer), or the read timeout passes (returning what
    /// it has). `n` must be at most half of what is left of the frame being read, as the bytes
    /// after the frame may not come until it is answered: a `recv` that already copied `c < n`
    /// bytes sleeps until `n` *more* are queued (Linux's `tcp_data_ready` wakes the reader by the
    /// socket's low mark, not by what the sleeping `recv` still lacks), and only with `n` ≤ half
    /// do `n` more always follow. A mark of 256 KiB on every `recv` of the body stalled every
    /// answer's tail this way until the request timeout.
    fn set_rcvlowat(&mut self, n: usize) -> Result<(), SourceError> {
        use std::os::fd::AsRawFd;
        if n == self.rcvlowat {
            return Ok(());
        }
        let v = libc::c_int::try_from(n).unwrap_or(libc::c_int::MAX);
        // SAFETY: the fd is the open socket `self.stream` owns for the duration of the call, and
        // the option value points to a live c_int whose size is passed alongside.
        let rc = unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io_error(
                &self.addr,
                "configuring",
                &io::Error::last_os_error(),
            ));
        }
        self.rcvlowat = n;
        Ok(())
    }

    /// One `recv` of at least one and at most `want` bytes, appended to `body` (which has room
    /// for them), before `deadline`.
    fn read_into_spare(
        &mut self,
        body: &mut Vec<u8>,
        want: usize,
        deadline: Instant,
    ) -> Result<usize, SourceError> {
        use std::os::fd::AsRawFd;
        loop {
            let left = remaining(deadline, &self.addr)?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| io_error(&self.addr, "configuring", &e))?;
            let spare = body.spare_capacity_mut();
            let len = want.min(spare.len());
            assert!(len > 0, "no room to receive into");
            // SAFETY: `recv` writes at most `len` bytes at the start of `spare`, memory `body`
            // owns and nothing else refers to; it reads none of it. Through a raw pointer, so no
            // reference to uninitialised bytes is ever made.
            let n = unsafe {
                libc::recv(
                    self.stream.as_raw_fd(),
                    spare.as_mut_ptr().cast::<libc::c_void>(),
                    len,
                    0,
                )
            };
            match n {
                0 => {
                    return Err(SourceError::Unreachable(format!(
                        "{} closed the connection",
                        self.addr
                    )));
                }
                n if n > 0 => {
                    let n = n as usize;
                    debug_assert!(n <= len);
                    // SAFETY: `recv` initialised the first `n` (≤ `len` ≤ spare capacity) bytes
                    // past the length.
                    unsafe { body.set_len(body.len() + n) };
                    return Ok(n);
                }
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(io_error(&self.addr, "reading from", &e));
                    }
                }
            }
        }
    }

    fn read_fully(&mut self, mut buf: &mut [u8], deadline: Instant) -> Result<(), SourceError> {
        while !buf.is_empty() {
            let n = self.read_some(buf, deadline)?;
            buf = &mut buf[n..];
        }
        Ok(())
    }

    /// One read of at least one byte, before `deadline`.
    fn read_some(&mut self, buf: &mut [u8], deadline: Instant) -> Result<usize, SourceError> {
        loop {
            let left = remaining(deadline, &self.addr)?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| io_error(&self.addr, "configuring", &e))?;
            match self.stream.read(buf) {
                Ok(0) => {
                    return Err(SourceError::Unreachable(format!(
                        "{} closed the connection",
                        self.addr
                    )));
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(&self.addr, "reading from", &e)),
            }
        }
    }
}

/// Time left before `deadline`, or a timeout error.
fn remaining(deadline: Instant, addr: &str) -> Result<Duration, SourceError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(SourceError::Unreachable(format!(
            "request to {addr} timed out"
        )));
    }
    Ok(left)
}

// ---------------------------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------------------------

/// Which of a node's two connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Lane {
    /// Fetches only.
    Fetch,
    /// Metadata, offsets, configs, groups.
    Control,
}

type Slot = Arc<Mutex<Option<Connection>>>;

/// What the client remembers of the source's metadata.
#[derive(Debug, Default)]
struct ClusterState {
    /// Node id → `host:port`, from the latest metadata.
    nodes: BTreeMap<i32, String>,
    /// Topic name → id (all zero when the source does not report ids).
    topic_ids: HashMap<String, [u8; 16]>,
    /// Topic → partition → leader node (−1: none).
    leaders: HashMap<String, HashMap<i32, i32>>,
}

/// One attempt's outcome: done, or worth retrying after a pause (errors not worth retrying are
/// `Err`; `Err(Unreachable)` is retried too).
enum Step<R> {
    Done(R),
    Retry(SourceError),
}

/// A [`SourceCluster`] over Kafka's wire protocol. See the module docs. Cheap to share: every
/// method takes `&self` and may be called from many threads.
pub struct KafkaSource {
    config: KafkaSourceConfig,
    state: RwLock<ClusterState>,
    slots: Mutex<HashMap<(i32, Lane), Slot>>,
    /// Feeds the backoff jitter.
    jitter: AtomicU64,
    /// Where [`with_any_node`](Self::with_any_node) starts next.
    next_any_node: AtomicUsize,
    random: std::collections::hash_map::RandomState,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<KafkaSource>();
};

impl fmt::Debug for KafkaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSource")
            .field("bootstrap_servers", &self.config.bootstrap_servers)
            .field("client_id", &self.config.client_id)
            .field("nodes", &self.state.read().nodes)
            .finish_non_exhaustive()
    }
}

impl KafkaSource {
    /// A client for the cluster behind `config.bootstrap_servers`. Connects lazily: nothing is
    /// sent until the first call, so a source that is down at start is not an error here.
    ///
    /// # Errors
    /// [`SourceError::Protocol`] naming the invalid setting (the trait's error has no variant
    /// for configuration).
    pub fn new(config: KafkaSourceConfig) -> Result<Arc<KafkaSource>, SourceError> {
        config
            .validate()
            .map_err(|e| SourceError::Protocol(format!("invalid source configuration: {e}")))?;
        Ok(Arc::new(KafkaSource {
            config,
            state: RwLock::new(ClusterState::default()),
            slots: Mutex::new(HashMap::new()),
            jitter: AtomicU64::new(0),
            next_any_node: AtomicUsize::new(0),
            random: std::collections::hash_map::RandomState::new(),
        }))
    }

    /// The settings.
    pub fn config(&self) -> &KafkaSourceConfig {
        &self.config
    }

    /// The source cluster's id, asked afresh (Metadata v2+) — the mirror compares it with the id
    /// it started from (KIP-1279 §12: a changed id fails the mirror).
    ///
    /// # Errors
    /// As [`SourceCluster::metadata`]; [`SourceError::Unsupported`] when the source reports no
    /// cluster id.
    pub fn cluster_id(&self) -> Result<String, SourceError> {
        let m = self.metadata_retrying(Some(&[]))?;
        if m.cluster_id.is_empty() {
            return Err(SourceError::Unsupported(
                "a cluster id (Metadata v2+ with a non-null ClusterId)".into(),
            ));
        }
        Ok(m.cluster_id)
    }

    /// The version used with `node` for each API this client implements (`None`: no common
    /// version), connecting if needed. For logs and diagnostics.
    ///
    /// # Errors
    /// The node is unknown or cannot be reached.
    pub fn negotiated_versions(
        &self,
        node: i32,
    ) -> Result<Vec<(ApiKey, Option<i16>)>, SourceError> {
        let addr = self.node_addr(node)?;
        self.retrying("ApiVersions", || {
            self.with_node(node, Lane::Control, &addr, |c| Ok(c.negotiated()))
                .map(Step::Done)
        })
    }

    // ---- plumbing ----

    /// Runs `op` until it is done, fails for good, or has been retried `max_retries` times.
    fn retrying<R>(
        &self,
        what: &str,
        mut op: impl FnMut() -> Result<Step<R>, SourceError>,
    ) -> Result<R, SourceError> {
        let mut attempt = 0u32;
        loop {
            let err = match op() {
                Ok(Step::Done(r)) => return Ok(r),
                Ok(Step::Retry(e)) => e,
                Err(e @ SourceError::Unreachable(_)) => e,
                Err(e) => return Err(e),
            };
            if attempt >= self.config.max_retries {
                warn!(what, attempts = attempt + 1, error = %err, "giving up on the source");
                return Err(err);
            }
            let random = self
                .random
                .hash_one(self.jitter.fetch_add(1, Ordering::Relaxed));
            let pause = backoff_ms(
                self.config.retry_backoff_ms,
                self.config.retry_backoff_max_ms,
                attempt,
                random,
            );
            debug!(what, attempt, pause_ms = pause, error = %err, "retrying a source call");
            std::thread::sleep(Duration::from_millis(pause));
            attempt += 1;
        }
    }

    /// Runs `f` on `node`'s `lane` connection (made if missing or made to another address),
    /// dropping the connection when the call breaks it.
    fn with_node<R>(
        &self,
        node: i32,
        lane: Lane,
        addr: &str,
        f: impl FnOnce(&mut Connection) -> Result<R, SourceError>,
    ) -> Result<R, SourceError> {
        let slot = self.slots.lock().entry((node, lane)).or_default().clone();
        let mut guard = slot.lock();
        if guard.as_ref().is_some_and(|c| c.addr != addr) {
            *guard = None;
        }
        let conn = match &mut *guard {
            Some(c) => c,
            None => guard.insert(Connection::open(addr, &self.config)?),
        };
        let r = f(conn);
        // After a transport or framing failure the stream's position is unknown.
        if let Err(SourceError::Unreachable(_) | SourceError::Protocol(_)) = &r {
            debug!(node, ?lane, addr, "dropping a source connection");
            *guard = None;
        }
        r
    }

    /// Runs `f` on any node that answers: the known nodes' control connections, then the
    /// bootstrap servers (short-lived connections). `Unreachable` when none answers.
    fn with_any_node<R>(
        &self,
        mut f: impl FnMut(&mut Connection) -> Result<R, SourceError>,
    ) -> Result<R, SourceError> {
        let mut known: Vec<(i32, String)> = {
            let s = self.state.read();
            s.nodes.iter().map(|(id, a)| (*id, a.clone())).collect()
        };
        // Start at a different node each time, so that no one node takes every such call.
        if !known.is_empty() {
            let start = self.next_any_node.fetch_add(1, Ordering::Relaxed) % known.len();
            known.rotate_left(start);
        }
        let mut last = None;
        for (id, addr) in known {
            match self.with_node(id, Lane::Control, &addr, &mut f) {
                Err(e @ SourceError::Unreachable(_)) => last = Some(e),
                r => return r,
            }
        }
        for addr in &self.config.bootstrap_servers {
            let r = Connection::open(addr, &self.config).and_then(|mut c| f(&mut c));
            match r {
                Err(e @ SourceError::Unreachable(_)) => last = Some(e),
                r => return r,
            }
        }
        Err(SourceError::Unreachable(match last {
            Some(e) => format!("no source node answered (last: {e})"),
            None => "no source node to ask".to_string(),
        }))
    }

    fn cached_addr(&self, node: i32) -> Option<String> {
        self.state.read().nodes.get(&node).cloned()
    }

    /// `node`'s address, refreshing metadata once when it is not known.
    fn node_addr(&self, node: i32) -> Result<String, SourceError> {
        if let Some(a) = self.cached_addr(node) {
            return Ok(a);
        }
        self.metadata_retrying(Some(&[]))?;
        self.cached_addr(node).ok_or_else(|| {
            SourceError::Unreachable(format!("node {node} is not in the source's metadata"))
        })
    }

    fn forget_leader(&self, topic: &str, partition: i32) {
        if let Some(parts) = self.state.write().leaders.get_mut(topic) {
            parts.remove(&partition);
        }
    }

    // ---- Metadata ----

    /// One Metadata request on `c`.
    fn send_metadata(
        &self,
        c: &mut Connection,
        topics: Option<&[String]>,
    ) -> Result<SourceMetadata, SourceError> {
        let v = c.version(ApiKey::Metadata)?;
        let mut req = MetadataRequest::default();
        // v1+: null asks for every topic, an empty list for none.
        req.topics = topics.map(|ts| {
            ts.iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(sb(t)))))
                .collect()
        });
        if v >= 4 {
            // Never create topics on the source by asking about them.
            req.allow_auto_topic_creation = false;
        }
        let timeout = self.config.request_timeout();
        let r: MetadataResponse = c.call(ApiKey::Metadata, v, &req, timeout)?;
        let mut out = SourceMetadata {
            cluster_id: r.cluster_id.map(|c| c.to_string()).unwrap_or_default(),
            nodes: r
                .brokers
                .iter()
                .map(|b| SourceNode {
                    id: b.node_id.0,
                    host: b.host.to_string(),
                    port: b.port,
                })
                .collect(),
            topics: r
                .topics
                .into_iter()
                .filter_map(|t| {
                    let name = t.name?.0.to_string();
                    let mut partitions: Vec<SourcePartition> = t
                        .partitions
                        .iter()
                        .map(|p| SourcePartition {
                            partition: p.partition_index,
                            leader: p.leader_id.0,
                            leader_epoch: LeaderEpoch(if v >= 7 { p.leader_epoch } else { -1 }),
                            error: p.error_code,
                        })
                        .collect();
                    partitions.sort_by_key(|p| p.partition);
                    Some(SourceTopic {
                        name,
                        id: *t.topic_id.as_bytes(),
                        internal: t.is_internal,
                        partitions,
                        error: t.error_code,
                    })
                })
                .collect(),
        };
        out.nodes.sort_by_key(|n| n.id);
        out.topics.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Remembers what `m` says (nodes, topic ids, leaders); `all`: `m` lists every topic.
    fn absorb(&self, m: &SourceMetadata, all: bool) {
        let gone: Vec<i32> = {
            let mut s = self.state.write();
            let nodes: BTreeMap<i32, String> = m
                .nodes
                .iter()
                .map(|n| (n.id, join_host_port(&n.host, n.port)))
                .collect();
            let gone = s
                .nodes
                .keys()
                .filter(|id| !nodes.contains_key(id))
                .copied()
                .collect();
            s.nodes = nodes;
            if all {
                s.topic_ids.clear();
                s.leaders.clear();
            }
            for t in &m.topics {
                if t.error == 0 {
                    s.topic_ids.insert(t.name.clone(), t.id);
                    let parts = t.partitions.iter().map(|p| (p.partition, p.leader));
                    s.leaders.insert(t.name.clone(), parts.collect());
                } else {
                    s.leaders.remove(&t.name);
                    if t.error != LEADER_NOT_AVAILABLE {
                        s.topic_ids.remove(&t.name);
                    }
                }
            }
            gone
        };
        if !gone.is_empty() {
            debug!(
                ?gone,
                "source nodes left the metadata; closing their connections"
            );
            self.slots.lock().retain(|(id, _), _| !gone.contains(id));
        }
    }

    /// One metadata round (any node), remembered.
    fn metadata_once(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        let m = self.with_any_node(|c| self.send_metadata(c, topics))?;
        self.absorb(&m, topics.is_none());
        Ok(m)
    }

    /// Metadata, retried while unreachable or while a topic is `LEADER_NOT_AVAILABLE` (just
    /// created); after the last retry such a topic is returned with its error.
    fn metadata_retrying(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        let mut last = None;
        let r = self.retrying("Metadata", || {
            let m = self.metadata_once(topics)?;
            if m.topics.iter().any(|t| t.error == LEADER_NOT_AVAILABLE) {
                last = Some(m);
                return Ok(Step::Retry(kafka_error(LEADER_NOT_AVAILABLE, None)));
            }
            Ok(Step::Done(m))
        });
        match (r, last) {
            (Err(SourceError::Kafka { code, .. }), Some(m)) if code == LEADER_NOT_AVAILABLE => {
                Ok(m)
            }
            (r, _) => r,
        }
    }

    // ---- Leader calls ----

    /// The leader of `topic`/`partition`, from the cache or one metadata round.
    fn leader_of(&self, topic: &str, partition: i32) -> Result<Step<i32>, SourceError> {
        let cached = self
            .state
            .read()
            .leaders
            .get(topic)
            .and_then(|parts| parts.get(&partition))
            .copied();
        let leader = match cached {
            Some(l) => l,
            None => {
                let m = self.metadata_once(Some(&[topic.to_string()]))?;
                let Some(t) = m.topics.iter().find(|t| t.name == topic) else {
                    return Err(SourceError::Protocol(format!(
                        "metadata for {topic} does not mention it"
                    )));
                };
                match t.error {
                    0 => {}
                    LEADER_NOT_AVAILABLE => {
                        return Ok(Step::Retry(kafka_error(LEADER_NOT_AVAILABLE, None)));
                    }
                    e => return Err(kafka_error(e, None)),
                }
                match t.partitions.iter().find(|p| p.partition == partition) {
                    Some(p) => p.leader,
                    None => return Err(kafka_error(UNKNOWN_TOPIC_OR_PARTITION, None)),
                }
            }
        };
        if leader < 0 {
            self.forget_leader(topic, partition);
            return Ok(Step::Retry(kafka_error(LEADER_NOT_AVAILABLE, None)));
        }
        Ok(Step::Done(leader))
    }

    /// Runs `f` (returning the partition's error code and answer) on the partition leader's
    /// control connection, refreshing the leader and retrying when it moved.
    fn leader_call<R>(
        &self,
        what: &str,
        topic: &str,
        partition: i32,
        mut f: impl FnMut(&mut Connection) -> Result<(ErrorCode, R), SourceError>,
    ) -> Result<R, SourceError> {
        self.retrying(what, || {
            let leader = match self.leader_of(topic, partition)? {
                Step::Done(l) => l,
                Step::Retry(e) => return Ok(Step::Retry(e)),
            };
            let Some(addr) = self.cached_addr(leader) else {
                self.forget_leader(topic, partition);
                return Ok(Step::Retry(SourceError::Unreachable(format!(
                    "leader {leader} of {topic}-{partition} is not in the source's metadata"
                ))));
            };
            match self.with_node(leader, Lane::Control, &addr, &mut f) {
                Ok((0, r)) => Ok(Step::Done(r)),
                // Answers to the caller's leader epoch (only a request naming one gets them):
                // older than the leader's, asked again it would be fenced again, and only the
                // caller, with newer metadata, can ask in the new epoch; newer, the node has not
                // caught up (or no longer leads), and the caller backs off, as Kafka's fetchers
                // do, rather than this call retrying in place.
                Ok((code @ (FENCED_LEADER_EPOCH | UNKNOWN_LEADER_EPOCH), _)) => {
                    if code == UNKNOWN_LEADER_EPOCH {
                        self.forget_leader(topic, partition);
                    }
                    Err(kafka_error(code, None))
                }
                Ok((code, _)) if is_stale_leader_error(code) => {
                    self.forget_leader(topic, partition);
                    Ok(Step::Retry(kafka_error(code, None)))
                }
                Ok((code, _)) => Err(kafka_error(code, None)),
                Err(e @ SourceError::Unreachable(_)) => {
                    self.forget_leader(topic, partition);
                    Err(e)
                }
                Err(e) => Err(e),
            }
        })
    }

    // ---- Fetch ----

    /// Topic ids for the fetch's topics: the caller's, else the source's (metadata asked once
    /// for names not seen yet); all zero when unknown.
    fn fetch_topic_ids(
        &self,
        request: &FetchRequest,
    ) -> Result<HashMap<String, [u8; 16]>, SourceError> {
        let unseen: Vec<String> = {
            let s = self.state.read();
            let mut v: Vec<String> = request
                .partitions
                .iter()
                .filter(|p| p.topic_id == [0; 16] && !s.topic_ids.contains_key(&p.topic))
                .map(|p| p.topic.clone())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        if !unseen.is_empty() {
            self.metadata_retrying(Some(&unseen))?;
        }
        let s = self.state.read();
        Ok(request
            .partitions
            .iter()
            .map(|p| {
                let id = if p.topic_id != [0; 16] {
                    p.topic_id
                } else {
                    s.topic_ids.get(&p.topic).copied().unwrap_or([0; 16])
                };
                (p.topic.clone(), id)
            })
            .collect())
    }

    fn send_fetch(
        &self,
        c: &mut Connection,
        request: &FetchRequest,
        ids: &HashMap<String, [u8; 16]>,
        timeout: Duration,
    ) -> Result<FetchResponse, SourceError> {
        let v = c.version(ApiKey::Fetch)?;
        let id_of = |p: &mirrorlog_mirror::source::PartitionFetch| {
            ids.get(&p.topic).copied().unwrap_or([0; 16])
        };
        // A topic the source's metadata gave no id (an older node answered it, or a server
        // without ids): fetch by name, as Kafka's consumer drops to v12 then.
        let v = if v >= 13 && request.partitions.iter().any(|p| id_of(p) == [0; 16]) {
            12
        } else {
            v
        };
        let by_id = v >= 13;
        let mut req = kafka_protocol::messages::FetchRequest::default();
        // Defaults: replica_id −1 (and replica_state −1 from v15), session 0 / epoch −1
        // (sessionless full fetch), isolation_level 0 (READ_UNCOMMITTED).
        req.max_wait_ms = request.max_wait_ms;
        req.min_bytes = request.min_bytes;
        req.max_bytes = request.max_bytes;
        let mut local = vec![];
        let mut topic_index: HashMap<&str, usize> = HashMap::new();
        let mut names_by_id: HashMap<Uuid, String> = HashMap::new();
        let cached: HashMap<String, [u8; 16]> = {
            let s = self.state.read();
            request
                .partitions
                .iter()
                .filter_map(|p| Some((p.topic.clone(), *s.topic_ids.get(&p.topic)?)))
                .collect()
        };
        for p in &request.partitions {
            let id = id_of(p);
            let known = cached.get(&p.topic).copied().unwrap_or([0; 16]);
            if !by_id && p.topic_id != [0; 16] && known != [0; 16] && known != p.topic_id {
                // By name, the source cannot tell the caller's topic from one recreated under
                // the same name, but its metadata already did: the caller's topic is gone.
                local.push(PartitionData {
                    current_leader: None,
                    topic: p.topic.clone(),
                    partition: p.partition,
                    error: UNKNOWN_TOPIC_ID,
                    high_watermark: Offset::UNKNOWN,
                    log_start_offset: Offset::UNKNOWN,
                    diverging_epoch: None,
                    records: Bytes::new(),
                });
                continue;
            }
            let i = *topic_index.entry(p.topic.as_str()).or_insert_with(|| {
                let mut t = FetchTopic::default();
                if by_id {
                    let uuid = Uuid::from_bytes(id);
                    names_by_id.insert(uuid, p.topic.clone());
                    t.topic_id = uuid;
                } else {
                    t.topic = TopicName(sb(&p.topic));
                }
                req.topics.push(t);
                req.topics.len() - 1
            });
            req.topics[i].partitions.push(fetch_partition(p, v));
        }
        if req.topics.is_empty() {
            return Ok(FetchResponse {
                error: 0,
                partitions: local,
            });
        }
        let r: kafka_protocol::messages::FetchResponse = c.call(ApiKey::Fetch, v, &req, timeout)?;
        // From v8 the broker answers at once and leaves the wait to the client (KIP-219); below,
        // it delayed the answer itself.
        if v >= 8 {
            c.throttle(r.throttle_time_ms);
        }
        let mut out = FetchResponse {
            error: if v >= 7 { r.error_code } else { 0 },
            partitions: vec![],
        };
        for t in r.responses {
            let topic = if by_id {
                match names_by_id.get(&t.topic_id) {
                    Some(n) => n.clone(),
                    None => {
                        return Err(c.protocol(format!(
                            "a fetch answer for topic id {} that was not asked for",
                            t.topic_id
                        )));
                    }
                }
            } else {
                t.topic.0.to_string()
            };
            for p in t.partitions {
                let d = &p.diverging_epoch;
                out.partitions.push(PartitionData {
                    topic: topic.clone(),
                    partition: p.partition_index,
                    error: p.error_code,
                    high_watermark: Offset(p.high_watermark),
                    log_start_offset: Offset(if v >= 5 { p.log_start_offset } else { -1 }),
                    diverging_epoch: (v >= FETCH_VERSION_LAST_FETCHED_EPOCH && d.epoch >= 0)
                        .then_some((LeaderEpoch(d.epoch), Offset(d.end_offset))),
                    current_leader: leader_hint(&p, v),
                    records: p.records.unwrap_or_default(),
                });
            }
        }
        self.take_leader_hints(&mut out, &r.node_endpoints, v);
        out.partitions.extend(local);
        Ok(out)
    }

    /// KIP-951: the nodes a fetch answer with leader hints gives endpoints of (v16+) are
    /// reachable from now on (they override the addresses held, as Kafka's consumer merges
    /// them); a hint naming a node whose address is still unknown is dropped, so the caller
    /// asks the metadata instead.
    fn take_leader_hints(&self, out: &mut FetchResponse, endpoints: &[NodeEndpoint], v: i16) {
        if out.partitions.iter().all(|p| p.current_leader.is_none()) {
            return;
        }
        let mut s = self.state.write();
        if v >= FETCH_VERSION_NODE_ENDPOINTS {
            for e in endpoints {
                s.nodes.insert(e.node_id.0, join_host_port(&e.host, e.port));
            }
        }
        for p in &mut out.partitions {
            if p.current_leader
                .is_some_and(|l| !s.nodes.contains_key(&l.id))
            {
                debug!(topic = %p.topic, partition = p.partition, leader = ?p.current_leader, "a fetch answer names a leader of no known address: asking the metadata");
                p.current_leader = None;
            }
        }
    }

    // ---- Groups ----

    /// FindCoordinator for a group: `(error, node, host:port, message)`.
    fn send_find_coordinator(
        &self,
        c: &mut Connection,
        group_id: &str,
    ) -> Result<(ErrorCode, i32, String, Option<StrBytes>), SourceError> {
        let v = c.version(ApiKey::FindCoordinator)?;
        let mut req = FindCoordinatorRequest::default();
        if v >= 1 {
            req.key_type = COORDINATOR_GROUP;
        }
        if v >= 4 {
            req.coordinator_keys = vec![sb(group_id)];
        } else {
            req.key = sb(group_id);
        }
        let r: FindCoordinatorResponse = c.call(
            ApiKey::FindCoordinator,
            v,
            &req,
            self.config.request_timeout(),
        )?;
        if v >= 4 {
            let Some(k) = r
                .coordinators
                .into_iter()
                .find(|k| k.key.as_str() == group_id)
            else {
                return Err(c.protocol(format!("no coordinator entry for group {group_id:?}")));
            };
            Ok((
                k.error_code,
                k.node_id.0,
                join_host_port(&k.host, k.port),
                k.error_message,
            ))
        } else {
            Ok((
                r.error_code,
                r.node_id.0,
                join_host_port(&r.host, r.port),
                r.error_message,
            ))
        }
    }

    /// OffsetFetch of every committed partition of a group: `(group error, offsets)`.
    /// `all_topics` lists the partitions to ask for at v1 (which has no "all partitions").
    fn send_offset_fetch(
        &self,
        c: &mut Connection,
        group_id: &str,
        all_topics: Option<&[(String, Vec<i32>)]>,
    ) -> Result<(ErrorCode, Vec<CommittedOffset>), SourceError> {
        let v = c.version(ApiKey::OffsetFetch)?;
        let timeout = self.config.request_timeout();
        let mut out = vec![];
        let mut keep = |error: ErrorCode, c: CommittedOffset| {
            if error != 0 {
                warn!(
                    group_id,
                    topic = c.topic,
                    partition = c.partition,
                    error = %error_name(error),
                    "the source could not read a committed offset"
                );
            } else if c.offset.get() >= 0 {
                // −1: no commit (OffsetFetch v1 answers every partition asked for).
                out.push(c);
            }
        };
        let error = if v >= 8 {
            let mut req = OffsetFetchRequest::default();
            req.groups = vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(GroupId(sb(group_id)))
                    .with_topics(None),
            ];
            let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, v, &req, timeout)?;
            let Some(g) = r
                .groups
                .into_iter()
                .find(|g| g.group_id.0.as_str() == group_id)
            else {
                return Err(c.protocol(format!("no OffsetFetch answer for group {group_id:?}")));
            };
            for t in &g.topics {
                for p in &t.partitions {
                    keep(
                        p.error_code,
                        CommittedOffset {
                            topic: t.name.0.to_string(),
                            partition: p.partition_index,
                            offset: Offset(p.committed_offset),
                            leader_epoch: LeaderEpoch(p.committed_leader_epoch),
                            metadata: p.metadata.as_ref().map(|m| m.to_string()),
                        },
                    );
                }
            }
            g.error_code
        } else {
            let mut req = OffsetFetchRequest::default();
            req.group_id = GroupId(sb(group_id));
            req.topics = if v >= 2 {
                None
            } else {
                let Some(all) = all_topics else {
                    // The connection was remade at another version meanwhile: ask again.
                    return Err(SourceError::Unreachable(
                        "OffsetFetch v1 needs the topic list; retrying".into(),
                    ));
                };
                Some(
                    all.iter()
                        .map(|(name, parts)| {
                            OffsetFetchRequestTopic::default()
                                .with_name(TopicName(sb(name)))
                                .with_partition_indexes(parts.clone())
                        })
                        .collect(),
                )
            };
            let r: OffsetFetchResponse = c.call(ApiKey::OffsetFetch, v, &req, timeout)?;
            for t in &r.topics {
                for p in &t.partitions {
                    let epoch = if v >= 5 { p.committed_leader_epoch } else { -1 };
                    keep(
                        p.error_code,
                        CommittedOffset {
                            topic: t.name.0.to_string(),
                            partition: p.partition_index,
                            offset: Offset(p.committed_offset),
                            leader_epoch: LeaderEpoch(epoch),
                            metadata: p.metadata.as_ref().map(|m| m.to_string()),
                        },
                    );
                }
            }
            if v >= 2 { r.error_code } else { 0 }
        };
        Ok((error, out))
    }
}

impl SourceCluster for KafkaSource {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.metadata_retrying(topics)
    }

    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        if request.partitions.is_empty() {
            return Ok(FetchResponse {
                error: 0,
                partitions: vec![],
            });
        }
        let ids = self.fetch_topic_ids(request)?;
        self.node_addr(node)?;
        let timeout = self.config.request_timeout()
            + Duration::from_millis(request.max_wait_ms.max(0) as u64);
        let response = self.retrying("Fetch", || {
            let Some(addr) = self.cached_addr(node) else {
                return Ok(Step::Retry(SourceError::Unreachable(format!(
                    "node {node} left the source's metadata"
                ))));
            };
            self.with_node(node, Lane::Fetch, &addr, |c| {
                self.send_fetch(c, request, &ids, timeout)
            })
            .map(Step::Done)
        })?;
        // A topic recreated on the source has a new id: ask metadata again next time.
        let stale: Vec<&str> = response
            .partitions
            .iter()
            .filter(|p| p.error == UNKNOWN_TOPIC_ID)
            .map(|p| p.topic.as_str())
            .collect();
        if !stale.is_empty() {
            let mut s = self.state.write();
            for t in stale {
                s.topic_ids.remove(t);
            }
        }
        Ok(response)
    }

    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        let timestamp = match spec {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t.get(),
        };
        let timeout = self.config.request_timeout();
        self.leader_call("ListOffsets", topic, partition, |c| {
            let v = c.version(ApiKey::ListOffsets)?;
            let mut req = ListOffsetsRequest::default();
            req.replica_id = BrokerId(CONSUMER_REPLICA_ID);
            // isolation_level stays 0 (READ_UNCOMMITTED): Latest is the high watermark.
            req.topics = vec![
                ListOffsetsTopic::default()
                    .with_name(TopicName(sb(topic)))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_timestamp(timestamp),
                    ]),
            ];
            let r: ListOffsetsResponse = c.call(ApiKey::ListOffsets, v, &req, timeout)?;
            let p = r
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| &t.partitions)
                .find(|p| p.partition_index == partition)
                .ok_or_else(|| {
                    c.protocol(format!("no ListOffsets answer for {topic}-{partition}"))
                })?;
            let epoch = if v >= 4 { p.leader_epoch } else { -1 };
            Ok((p.error_code, (Offset(p.offset), LeaderEpoch(epoch))))
        })
    }

    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        let timeout = self.config.request_timeout();
        self.leader_call("OffsetForLeaderEpoch", topic, partition, |c| {
            let v = c.version(ApiKey::OffsetForLeaderEpoch)?;
            let mut req = OffsetForLeaderEpochRequest::default();
            if v >= 3 {
                req.replica_id = BrokerId(CONSUMER_REPLICA_ID);
            }
            req.topics = vec![
                OffsetForLeaderTopic::default()
                    .with_topic(TopicName(sb(topic)))
                    .with_partitions(vec![
                        OffsetForLeaderPartition::default()
                            .with_partition(partition)
                            // v2+ (all versions offered): fenced as a fetch is.
                            .with_current_leader_epoch(current_leader_epoch.get())
                            .with_leader_epoch(epoch.get()),
                    ]),
            ];
            let r: OffsetForLeaderEpochResponse =
                c.call(ApiKey::OffsetForLeaderEpoch, v, &req, timeout)?;
            let p = r
                .topics
                .iter()
                .filter(|t| t.topic.0.as_str() == topic)
                .flat_map(|t| &t.partitions)
                .find(|p| p.partition == partition)
                .ok_or_else(|| {
                    c.protocol(format!(
                        "no OffsetForLeaderEpoch answer for {topic}-{partition}"
                    ))
                })?;
            Ok((
                p.error_code,
                (LeaderEpoch(p.leader_epoch), Offset(p.end_offset)),
            ))
        })
    }

    fn fetch_reports_divergence(&self, node: i32) -> Result<bool, SourceError> {
        // The control connection: its versions are the node's, and it never waits behind a
        // long-polling fetch.
        let addr = self.node_addr(node)?;
        self.with_node(node, Lane::Control, &addr, |c| {
            Ok(c.version(ApiKey::Fetch)? >= FETCH_VERSION_LAST_FETCHED_EPOCH)
        })
    }

    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        let timeout = self.config.request_timeout();
        self.retrying("DescribeConfigs", || {
            self.with_any_node(|c| {
                let v = c.version(ApiKey::DescribeConfigs)?;
                let mut req = DescribeConfigsRequest::default();
                req.resources = vec![
                    DescribeConfigsResource::default()
                        .with_resource_type(RESOURCE_TOPIC)
                        .with_resource_name(sb(topic))
                        .with_configuration_keys(None),
                ];
                let r: DescribeConfigsResponse =
                    c.call(ApiKey::DescribeConfigs, v, &req, timeout)?;
                let Some(res) = r.results.into_iter().find(|res| {
                    res.resource_type == RESOURCE_TOPIC && res.resource_name.as_str() == topic
                }) else {
                    return Err(c.protocol(format!("no DescribeConfigs answer for {topic}")));
                };
                if res.error_code != 0 {
                    return Err(kafka_error(res.error_code, res.error_message.as_ref()));
                }
                // Sensitive values come back null: there is nothing to copy.
                Ok(res
                    .configs
                    .into_iter()
                    .filter_map(|e| {
                        Some((e.name.to_string(), e.value?.to_string(), e.config_source))
                    })
                    .filter(|(name, value, source)| copied_to_the_mirror(name, value, *source))
                    .map(|(name, value, _)| (name, value))
                    .collect())
            })
            .map(Step::Done)
        })
    }

    fn last_mirror_epoch(
        &self,
        requester_cluster_id: &str,
        topic_id: [u8; 16],
        partition: i32,
    ) -> Result<Option<(LeaderEpoch, Offset)>, SourceError> {
        use crate::mirror_rpc::{
            DescribeClusterMirrorsRequest, LastMirrorEpochLookup, MirrorRequest, MirrorResponse,
        };
        let timeout = self.config.request_timeout();
        let req = MirrorRequest::DescribeClusterMirrors(DescribeClusterMirrorsRequest {
            // No mirror descriptions, only the lookup.
            mirror_names: Some(vec![]),
            include_authorized_operations: false,
            cluster_id: Some(requester_cluster_id.to_string()),
            last_mirror_epoch_lookups: vec![LastMirrorEpochLookup {
                topic_id,
                partitions: vec![partition],
            }],
        });
        self.retrying("DescribeClusterMirrors", || {
            self.with_any_node(|c| {
                // A node without the mirror RPCs answers `Unsupported`, never "no mirror": that
                // answer would truncate a failback's whole log, and a plain Kafka node (or one
                // not upgraded yet) cannot tell whether the cluster mirrored us.
                let MirrorResponse::DescribeClusterMirrors(r) = c.mirror_call(&req, timeout)?
                else {
                    return Err(c.protocol("a response of another API"));
                };
                let answer = r
                    .last_mirror_epochs
                    .iter()
                    .filter(|t| t.topic_id == topic_id)
                    .flat_map(|t| t.partitions.iter())
                    .find(|p| p.partition_index == partition)
                    .ok_or_else(|| c.protocol("no last-mirror-epoch answer for the partition"))?;
                match answer.error_code {
                    0 if answer.last_mirror_epoch >= 0 => Ok(Some((
                        LeaderEpoch(answer.last_mirror_epoch),
                        Offset(answer.last_mirror_offset),
                    ))),
                    0 | UNKNOWN_TOPIC_OR_PARTITION => Ok(None),
                    code if code
                        == crate::errors::MirrorErrorCode::MirrorTopicNotStopped.code() =>
                    {
                        Err(SourceError::Kafka {
                            code,
                            message: "MIRROR_TOPIC_NOT_STOPPED: the source still mirrors this \
                                      partition from us; stop it there before failing back"
                                .into(),
                        })
                    }
                    code => Err(SourceError::Kafka {
                        code,
                        message: crate::errors::error_name(code),
                    }),
                }
            })
            .map(Step::Done)
        })
    }

    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        let nodes = self.metadata_retrying(Some(&[]))?.nodes;
        let timeout = self.config.request_timeout();
        let mut out: BTreeMap<String, GroupListing> = BTreeMap::new();
        for node in nodes {
            let addr = join_host_port(&node.host, node.port);
            let groups = self.retrying("ListGroups", || {
                let (v, r) = self.with_node(node.id, Lane::Control, &addr, |c| {
                    let v = c.version(ApiKey::ListGroups)?;
                    // Empty filters: every state, every type.
                    let req = ListGroupsRequest::default();
                    let r: ListGroupsResponse = c.call(ApiKey::ListGroups, v, &req, timeout)?;
                    Ok((v, r))
                })?;
                match r.error_code {
                    0 => Ok(Step::Done((v, r.groups))),
                    e if is_coordinator_error(e) => Ok(Step::Retry(kafka_error(e, None))),
                    e => Err(kafka_error(e, None)),
                }
            })?;
            let (v, groups) = groups;
            for g in groups {
                let id = g.group_id.0.to_string();
                out.entry(id.clone()).or_insert(GroupListing {
                    group_id: id,
                    protocol_type: g.protocol_type.to_string(),
                    state: (v >= 4).then(|| g.group_state.to_string()),
                    group_type: (v >= 5).then(|| g.group_type.to_string()),
                });
            }
        }
        Ok(out.into_values().collect())
    }

    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.retrying("OffsetFetch", || {
            let (error, node, addr, message) =
                self.with_any_node(|c| self.send_find_coordinator(c, group_id))?;
            match error {
                0 => {}
                e if is_coordinator_error(e) => {
                    return Ok(Step::Retry(kafka_error(e, message.as_ref())));
                }
                e => return Err(kafka_error(e, message.as_ref())),
            }
            let v = self.with_node(node, Lane::Control, &addr, |c| {
                c.version(ApiKey::OffsetFetch)
            })?;
            // OffsetFetch v1 cannot say "all partitions": list them (outside the connection's
            // lock, since metadata may use it).
            let all_topics = if v < 2 {
                let m = self.metadata_once(None)?;
                Some(
                    m.topics
                        .iter()
                        .filter(|t| t.error == 0 && !t.internal)
                        .map(|t| {
                            (
                                t.name.clone(),
                                t.partitions.iter().map(|p| p.partition).collect(),
                            )
                        })
                        .collect::<Vec<_>>(),
                )
            } else {
                None
            };
            let (error, offsets) = self.with_node(node, Lane::Control, &addr, |c| {
                self.send_offset_fetch(c, group_id, all_topics.as_deref())
            })?;
            match error {
                0 => Ok(Step::Done(offsets)),
                e if is_coordinator_error(e) => Ok(Step::Retry(kafka_error(e, None))),
                e => Err(kafka_error(e, None)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_compacting_policy_inherited_from_the_source_brokers_is_copied() {
        use super::copied_to_the_mirror as copied;
        // Kafka's config sources: 1 the topic's own, 2–4 broker settings, 5 the default.
        assert!(copied("retention.ms", "60000", 1));
        for source in [2, 3, 4, 5] {
            assert!(!copied("retention.ms", "60000", source), "{source}");
            assert!(!copied("cleanup.policy", "delete", source), "{source}");
            assert!(copied("cleanup.policy", "compact", source), "{source}");
            assert!(
                copied("cleanup.policy", "delete, compact", source),
                "{source}"
            );
        }
        assert!(copied("cleanup.policy", "delete", 1));
        assert!(!copied("cleanup.policy", "compaction", 4));
    }

    use super::*;

    /// A connection to a peer that answers with `parts` of one frame, each after `pause`.
    fn frame_in_parts(body: &[u8], parts: &[usize], pause: Duration) -> Connection {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut peer, _) = l.accept().unwrap();
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        let parts = parts.to_vec();
        std::thread::spawn(move || {
            let mut at = 0usize;
            for n in parts.into_iter().chain([usize::MAX]) {
                let end = at.saturating_add(n).min(frame.len());
                peer.write_all(&frame[at..end]).unwrap();
                at = end;
                std::thread::sleep(pause);
            }
            // Held open past the reader's deadline: only the frame's own bytes come.
            std::thread::sleep(Duration::from_secs(5));
        });
        Connection {
            stream,
            addr: "peer".into(),
            next_correlation_id: 0,
            versions: [None; 8],
            offered: HashMap::new(),
            client_id: sb("test"),
            request_timeout: Duration::from_secs(3),
            response_max_bytes: 64 << 20,
            rcvlowat: 1,
            throttled_until: None,
        }
    }

    #[test]
    fn a_frame_arriving_in_parts_is_read_without_waiting_for_bytes_after_it() {
        // The receive low mark must never make a `recv` wait for more than the frame still holds:
        // a 256 KiB mark on a 400 KiB body arriving as 200 + 200 KiB stalled until the deadline.
        let cases: &[(usize, &[usize])] = &[
            (400 << 10, &[4 + (200 << 10), 200 << 10]),
            (1 << 20, &[4, 300 << 10, 1, 500 << 10, 7]),
            (3 << 20, &[100, 64 << 10, 2 << 20]),
            (100, &[2, 50]),
            (0, &[4]),
        ];
        for (len, parts) in cases {
            let body: Vec<u8> = (0..*len).map(|i| (i % 253) as u8).collect();
            let mut c = frame_in_parts(&body, parts, Duration::from_millis(30));
            let t = Instant::now();
            let got = c.read_frame(t + Duration::from_secs(3)).unwrap();
            assert!(got == body[..], "{len}: the bytes differ");
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "{len} in {parts:?}: took {:?}",
                t.elapsed()
            );
            assert_eq!(c.rcvlowat, 1, "the mark is back down between frames");
        }
    }

    fn offered(entries: &[(ApiKey, i16, i16)]) -> HashMap<i16, (i16, i16)> {
        entries
            .iter()
            .map(|(k, lo, hi)| (*k as i16, (*lo, *hi)))
            .collect()
    }

    fn version_of(v: &[Option<i16>; 8], api: ApiKey) -> Option<i16> {
        let i = CLIENT_API_VERSIONS
            .iter()
            .position(|(k, _, _)| *k == api)
            .unwrap();
        v[i]
    }

    #[test]
    fn negotiation_picks_the_highest_common_version() {
        let v = negotiate_versions(&offered(&[
            (ApiKey::Metadata, 0, 13),
            (ApiKey::Fetch, 4, 18),
            (ApiKey::ListOffsets, 0, 3),
            (ApiKey::OffsetFetch, 0, 10),
        ]));
        assert_eq!(version_of(&v, ApiKey::Metadata), Some(12));
        assert_eq!(version_of(&v, ApiKey::Fetch), Some(16));
        assert_eq!(version_of(&v, ApiKey::ListOffsets), Some(3));
        assert_eq!(version_of(&v, ApiKey::OffsetFetch), Some(8));
        assert_eq!(version_of(&v, ApiKey::ListGroups), None, "not offered");
    }

    #[test]
    fn negotiation_finds_nothing_when_ranges_do_not_meet() {
        let v = negotiate_versions(&offered(&[
            (ApiKey::Fetch, 0, 3),
            (ApiKey::Metadata, 13, 20),
        ]));
        assert_eq!(version_of(&v, ApiKey::Fetch), None);
        assert_eq!(version_of(&v, ApiKey::Metadata), None);
    }

    #[test]
    fn client_versions_lie_within_the_codec() {
        for (api, lo, hi) in CLIENT_API_VERSIONS {
            let codec = api.valid_versions();
            assert!(codec.min <= lo && hi <= codec.max, "{api:?}");
        }
    }

    #[test]
    fn host_port_parsing_accepts_names_v4_and_bracketed_v6() {
        assert_eq!(
            split_host_port("kafka-1:9092"),
            Ok(("kafka-1".into(), 9092))
        );
        assert_eq!(split_host_port("10.0.0.1:1"), Ok(("10.0.0.1".into(), 1)));
        assert_eq!(split_host_port("[::1]:9093"), Ok(("::1".into(), 9093)));
        for bad in [
            "kafka",
            "kafka:",
            ":9092",
            "kafka:0",
            "kafka:65536",
            "[::1:9092",
            "k:x",
        ] {
            assert!(split_host_port(bad).is_err(), "{bad}");
        }
        assert_eq!(join_host_port("::1", 9093), "[::1]:9093");
        assert_eq!(join_host_port("h", 1), "h:1");
    }

    #[test]
    fn validate_rejects_out_of_range_settings() {
        let ok = KafkaSourceConfig::new(["localhost:9092"]);
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.client_id, "mirrorlog-mirror");
        assert_eq!(ok.request_timeout_ms, 30_000);
        assert_eq!(ok.connect_timeout_ms, 10_000);
        assert_eq!(ok.retry_backoff_ms, 100);
        assert_eq!(ok.retry_backoff_max_ms, 1_000);
        assert_eq!(ok.max_retries, 5);
        let bad: [(&str, KafkaSourceConfig); 7] = [
            ("bootstrap", KafkaSourceConfig::default()),
            ("bootstrap", KafkaSourceConfig::new(["nope"])),
            (
                "request.timeout.ms",
                KafkaSourceConfig {
                    request_timeout_ms: 0,
                    ..ok.clone()
                },
            ),
            (
                "setup.timeout",
                KafkaSourceConfig {
                    connect_timeout_ms: 1 << 40,
                    ..ok.clone()
                },
            ),
            (
                "retry.backoff.ms",
                KafkaSourceConfig {
                    retry_backoff_ms: 2_000,
                    ..ok.clone()
                },
            ),
            (
                "client.id",
                KafkaSourceConfig {
                    client_id: "x".repeat(40_000),
                    ..ok.clone()
                },
            ),
            (
                "response_max_bytes",
                KafkaSourceConfig {
                    response_max_bytes: 10,
                    ..ok.clone()
                },
            ),
        ];
        for (name, c) in bad {
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e} should name {name}");
            assert!(KafkaSource::new(c).is_err());
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_and_stops_at_the_cap() {
        for r in [0, 200, 400, u64::MAX] {
            let b0 = backoff_ms(100, 1_000, 0, r);
            assert!((80..=120).contains(&b0), "{b0}");
            let b2 = backoff_ms(100, 1_000, 2, r);
            assert!((320..=480).contains(&b2), "{b2}");
            assert!(backoff_ms(100, 1_000, 10, r) <= 1_000);
            assert!(backoff_ms(100, 1_000, 200, r) <= 1_000, "no overflow");
            assert_eq!(backoff_ms(0, 1_000, 3, r), 0);
        }
    }

    /// A Fetch request of one partition through `fetch_partition` at version `v`, encoded and
    /// decoded again as the source reads it.
    fn fetch_partition_as_sent(v: i16) -> Result<FetchPartition, String> {
        let p = mirrorlog_mirror::source::PartitionFetch {
            topic: "t".into(),
            topic_id: [0; 16],
            partition: 2,
            fetch_offset: Offset(40),
            last_fetched_epoch: LeaderEpoch(3),
            current_leader_epoch: LeaderEpoch(7),
            max_bytes: 1 << 20,
        };
        let mut req = kafka_protocol::messages::FetchRequest::default();
        let mut t = FetchTopic::default();
        if v >= 13 {
            t.topic_id = Uuid::from_bytes([1; 16]);
        } else {
            t.topic = TopicName(sb("t"));
        }
        t.partitions.push(fetch_partition(&p, v));
        req.topics.push(t);
        let mut buf = bytes::BytesMut::new();
        req.encode(&mut buf, v).map_err(|e| e.to_string())?;
        let mut read = buf.freeze();
        let back = kafka_protocol::messages::FetchRequest::decode(&mut read, v)
            .map_err(|e| e.to_string())?;
        Ok(back.topics[0].partitions[0].clone())
    }

    #[test]
    fn a_fetch_carries_the_current_leader_epoch_from_v9_and_the_last_fetched_from_v12() {
        let (lo, hi) = (CLIENT_API_VERSIONS[1].1, CLIENT_API_VERSIONS[1].2);
        assert_eq!(CLIENT_API_VERSIONS[1].0, ApiKey::Fetch);
        for v in lo..=hi {
            let p = fetch_partition_as_sent(v).unwrap_or_else(|e| panic!("v{v}: {e}"));
            assert_eq!((p.partition, p.fetch_offset), (2, 40), "v{v}");
            let current = if v >= 9 { 7 } else { -1 };
            let last = if v >= 12 { 3 } else { -1 };
            assert_eq!(
                (p.current_leader_epoch, p.last_fetched_epoch),
                (current, last),
                "v{v}"
            );
        }
    }

    #[test]
    fn stale_leader_and_coordinator_errors_are_retried_others_not() {
        assert!(is_stale_leader_error(NOT_LEADER_OR_FOLLOWER));
        assert!(is_stale_leader_error(UNKNOWN_LEADER_EPOCH));
        assert!(!is_stale_leader_error(
            ResponseError::OffsetOutOfRange.code()
        ));
        assert!(is_coordinator_error(COORDINATOR_LOAD_IN_PROGRESS));
        assert!(!is_coordinator_error(
            ResponseError::GroupAuthorizationFailed.code()
        ));
        assert_eq!(error_name(LEADER_NOT_AVAILABLE), "LeaderNotAvailable");
    }
}
