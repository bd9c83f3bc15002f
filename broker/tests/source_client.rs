//! `KafkaSource`, the wire `SourceCluster`, against a real in-process broker on 127.0.0.1:
//! metadata, fetches compared byte for byte with the engine, divergence after an unclean
//! election, offsets, configs, groups, restarts, dead bootstrap addresses, retries, and an old
//! source spoken to at its own versions.
//!
//! No outcome depends on time: timeouts are hang guards, and retry counts are observed through
//! accepted connections.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_response::{LeaderIdAndEpoch, NodeEndpoint};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponseGroup;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, GroupId, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchResponse, RequestHeader, RequestKind, ResponseHeader, ResponseKind, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::coordinators;
use mirrorlog_broker::server::{Handler, RequestContext, Server, ServerConfig, ShutdownHandle};
use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_mirror::source::{
    CommittedOffset, CurrentLeader, FetchRequest, OffsetSpec, PartitionData, PartitionFetch,
    SourceCluster, SourceError, SourceNode,
};
use mirrorlog_segment::io::PwriteStorage;
use mirrorlog_segment::{BatchBuilder, Compression};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

const NOW: i64 = 1_700_000_000_000;
/// Hang guard only: nothing is timed.
const HANG_GUARD: Duration = Duration::from_secs(60);

const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const UNKNOWN_TOPIC_ID: i16 = 100;

// ---------------------------------------------------------------------------------------------
// A source cluster: one broker behind a listener, optionally advertising fewer versions
// ---------------------------------------------------------------------------------------------

/// Version overrides: `None` hides the API.
type Caps = HashMap<ApiKey, Option<(i16, i16)>>;

/// The broker behind the listener. The listener is bound first (to learn its port, which the
/// broker advertises), so the broker is set once it is open.
struct Front {
    broker: OnceLock<Arc<Broker>>,
    caps: Caps,
    /// How many OffsetFetch requests to answer COORDINATOR_LOAD_IN_PROGRESS.
    loading_offset_fetches: AtomicUsize,
    /// How many Metadata requests to answer with every topic LEADER_NOT_AVAILABLE.
    leaderless_metadata: AtomicUsize,
    /// The `throttle_time_ms` Fetch answers carry (a quota the broker enforces; 0: none).
    fetch_throttle_ms: AtomicUsize,
    /// The next Fetch is answered as a node that no longer leads: every partition
    /// NOT_LEADER_OR_FOLLOWER naming this leader (KIP-951).
    not_leader_next_fetch: Mutex<Option<LeaderHint>>,
    /// Metadata requests answered.
    metadata_requests: AtomicUsize,
}

/// The leader a NOT_LEADER_OR_FOLLOWER answer names: node id, epoch, and the node's endpoint
/// (port on 127.0.0.1) when the answer gives one.
#[derive(Clone, Copy)]
struct LeaderHint {
    id: i32,
    epoch: i32,
    endpoint_port: Option<u16>,
}

/// Takes one from `n` if it is not zero.
fn take_one(n: &AtomicUsize) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1))
        .is_ok()
}

impl Handler for Front {
    fn handle(
        &self,
        ctx: &RequestContext,
        header: &RequestHeader,
        request: RequestKind,
    ) -> Option<ResponseKind> {
        let broker = self.broker.get().expect("the broker is set before serving");
        if let RequestKind::ApiVersions(_) = request {
            // Answer with our (capped) versions, not the broker's.
            let api_keys = ApiKey::iter()
                .filter_map(|k| {
                    self.supported_versions(k).map(|(lo, hi)| {
                        ApiVersion::default()
                            .with_api_key(k as i16)
                            .with_min_version(lo)
                            .with_max_version(hi)
                    })
                })
                .collect();
            return Some(ResponseKind::ApiVersions(
                ApiVersionsResponse::default().with_api_keys(api_keys),
            ));
        }
        if let RequestKind::OffsetFetch(r) = &request
            && take_one(&self.loading_offset_fetches)
        {
            let mut resp = OffsetFetchResponse::default();
            if ctx.api_version >= 8 {
                resp.groups = r
                    .groups
                    .iter()
                    .map(|g| {
                        OffsetFetchResponseGroup::default()
                            .with_group_id(g.group_id.clone())
                            .with_error_code(COORDINATOR_LOAD_IN_PROGRESS)
                    })
                    .collect();
            } else {
                resp.error_code = COORDINATOR_LOAD_IN_PROGRESS;
            }
            return Some(ResponseKind::OffsetFetch(resp));
        }
        if matches!(request, RequestKind::Metadata(_)) {
            self.metadata_requests.fetch_add(1, Ordering::SeqCst);
        }
        let leaderless =
            matches!(request, RequestKind::Metadata(_)) && take_one(&self.leaderless_metadata);
        let hint = match request {
            RequestKind::Fetch(_) => self.not_leader_next_fetch.lock().take(),
            _ => None,
        };
        let mut resp = broker.handle(ctx, header, request);
        if let Some(ResponseKind::Fetch(f)) = &mut resp {
            f.throttle_time_ms = self.fetch_throttle_ms.load(Ordering::SeqCst) as i32;
            if let Some(h) = hint {
                for p in f.responses.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    p.error_code = NOT_LEADER_OR_FOLLOWER;
                    p.high_watermark = -1;
                    p.records = None;
                    p.current_leader = LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(h.id))
                        .with_leader_epoch(h.epoch);
                }
                f.node_endpoints = h
                    .endpoint_port
                    .map(|port| {
                        NodeEndpoint::default()
                            .with_node_id(BrokerId(h.id))
                            .with_host(StrBytes::from_static_str("127.0.0.1"))
                            .with_port(i32::from(port))
                    })
                    .into_iter()
                    .collect();
            }
        }
        if leaderless && let Some(ResponseKind::Metadata(m)) = &mut resp {
            for t in &mut m.topics {
                t.error_code = LEADER_NOT_AVAILABLE;
                t.partitions.clear();
            }
        }
        resp
    }

    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        let own = self.broker.get()?.supported_versions(api);
        match self.caps.get(&api) {
            Some(cap) => own.and(*cap),
            None => own,
        }
    }
}

struct Cluster {
    port: u16,
    front: Arc<Front>,
    broker: Arc<Broker>,
    shutdown: ShutdownHandle,
    thread: JoinHandle<io::Result<()>>,
}

impl Cluster {
    /// A broker with coordinators on `dir`, listening on 127.0.0.1:`port` (0: any).
    fn start(dir: &Path, port: u16) -> Cluster {
        Self::start_capped(dir, port, Caps::new())
    }

    fn start_capped(dir: &Path, port: u16, caps: Caps) -> Cluster {
        Self::start_configured(dir, port, caps, |_| {})
    }

    /// [`start_capped`](Self::start_capped) with the broker's settings changed by `configure`.
    fn start_configured(
        dir: &Path,
        port: u16,
        caps: Caps,
        configure: impl FnOnce(&mut BrokerConfig),
    ) -> Cluster {
        let front = Arc::new(Front {
            broker: OnceLock::new(),
            caps,
            loading_offset_fetches: AtomicUsize::new(0),
            leaderless_metadata: AtomicUsize::new(0),
            fetch_throttle_ms: AtomicUsize::new(0),
            not_leader_next_fetch: Mutex::new(None),
            metadata_requests: AtomicUsize::new(0),
        });
        let server = Server::bind(
            ServerConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], port)),
                ..Default::default()
            },
            front.clone(),
        )
        .unwrap();
        let port = server.local_addr().port();
        let mut config = BrokerConfig::new(dir, "127.0.0.1", i32::from(port));
        configure(&mut config);
        let broker = Arc::new(
            Broker::open(
                config,
                Arc::new(PwriteStorage::new()),
                ManualClock::new(NOW),
            )
            .unwrap(),
        );
        coordinators::install(&broker).unwrap();
        assert!(front.broker.set(broker.clone()).is_ok());
        let shutdown = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.run());
        Cluster {
            port,
            front,
            broker,
            shutdown,
            thread,
        }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the listener and shuts the broker down cleanly.
    fn stop(self) {
        self.shutdown.shutdown();
        self.thread.join().unwrap().unwrap();
        drop(self.front);
        let broker = Arc::try_unwrap(self.broker).expect("nothing else holds the broker");
        broker.shutdown().unwrap();
    }

    fn create(&self, topic: &str, partitions: i32, config: LogConfig) -> [u8; 16] {
        let b = &self.broker;
        let meta = b
            .topics
            .create(&b.logs, topic, partitions, config, None)
            .unwrap();
        *meta.id.as_bytes()
    }

    /// Appends one batch as leader at `epoch` and moves the high watermark to the log end.
    fn append(&self, topic: &str, partition: i32, epoch: i32, records: Bytes) -> (i64, i64) {
        let h = self.broker.partition(topic, partition).unwrap();
        let mut log = h.write();
        let info = log
            .append_as_leader(records, LeaderEpoch(epoch), LeaderOrigin::Client)
            .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        self.broker.appends.notify();
        (info.first_offset.get(), info.last_offset.get())
    }

    /// What the engine serves a consumer from `offset`, at most `max_bytes` (one batch at
    /// least).
    fn stored(&self, topic: &str, partition: i32, offset: i64, max_bytes: u32) -> Bytes {
        let h = self.broker.partition(topic, partition).unwrap();
        let log = h.read();
        let info = log
            .read(
                Offset(offset),
                max_bytes,
                FetchIsolation::HighWatermark,
                true,
            )
            .unwrap();
        match info.records {
            Some(d) => d.slice.read_all().unwrap(),
            None => Bytes::new(),
        }
    }

    fn source(&self) -> Arc<KafkaSource> {
        KafkaSource::new(config([self.addr()])).unwrap()
    }
}

/// Defaults with tiny backoffs (so retries cost nothing) and hang-guard timeouts.
fn config<S: Into<String>>(bootstrap: impl IntoIterator<Item = S>) -> KafkaSourceConfig {
    KafkaSourceConfig {
        retry_backoff_ms: 1,
        retry_backoff_max_ms: 5,
        request_timeout_ms: HANG_GUARD.as_millis() as u64,
        connect_timeout_ms: HANG_GUARD.as_millis() as u64,
        ..KafkaSourceConfig::new(bootstrap)
    }
}

/// A batch of `n` records `<tag>-<i>`, timestamps from `ts`.
fn batch(c: Compression, n: usize, tag: &str, ts: i64) -> Bytes {
    let mut bb = BatchBuilder::new().compression(c);
    for i in 0..n {
        let v = format!("{tag}-{i}");
        bb.append(
            TimestampMs(ts + i as i64),
            Some(b"k"),
            Some(v.as_bytes()),
            &[],
        );
    }
    bb.build().into_bytes()
}

fn part(
    topic: &str,
    partition: i32,
    offset: i64,
    last_epoch: i32,
    max_bytes: i32,
) -> PartitionFetch {
    PartitionFetch {
        topic: topic.to_string(),
        topic_id: [0; 16],
        partition,
        fetch_offset: Offset(offset),
        last_fetched_epoch: LeaderEpoch(last_epoch),
        current_leader_epoch: LeaderEpoch(-1),
        max_bytes,
    }
}

fn request(partitions: Vec<PartitionFetch>) -> FetchRequest {
    FetchRequest {
        partitions,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 50 << 20,
    }
}

fn fetch_one(source: &KafkaSource, p: PartitionFetch) -> PartitionData {
    let r = source.fetch(1, &request(vec![p])).unwrap();
    assert_eq!(r.error, 0);
    assert_eq!(r.partitions.len(), 1);
    r.partitions.into_iter().next().unwrap()
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn unreachable(r: Result<impl std::fmt::Debug, SourceError>) -> String {
    match r {
        Err(SourceError::Unreachable(m)) => m,
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

/// Commits `offset` (with `epoch` and `metadata`) for `group` on `topic`-`partition` over a raw
/// OffsetCommit v8 (a simple, memberless commit).
fn commit(
    addr: &str,
    group: &str,
    topic: &str,
    partition: i32,
    offset: i64,
    epoch: i32,
    metadata: &str,
) {
    let version = 8;
    let body = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.into())))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(epoch)
                        .with_committed_metadata(Some(StrBytes::from_string(metadata.into()))),
                ]),
        ]);
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(ApiKey::OffsetCommit as i16)
        .with_request_api_version(version)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("test")))
        .encode(
            &mut buf,
            ApiKey::OffsetCommit.request_header_version(version),
        )
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(HANG_GUARD)).unwrap();
    s.write_all(&buf).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut frame).unwrap();
    let mut frame = Bytes::from(frame);
    let h = ResponseHeader::decode(
        &mut frame,
        ApiKey::OffsetCommit.response_header_version(version),
    )
    .unwrap();
    assert_eq!(h.correlation_id, 7);
    let r = OffsetCommitResponse::decode(&mut frame, version).unwrap();
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "commit refused");
}

fn versions(source: &KafkaSource) -> HashMap<ApiKey, Option<i16>> {
    source.negotiated_versions(1).unwrap().into_iter().collect()
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn metadata_names_nodes_topic_ids_leader_epochs_and_the_cluster_id() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    let id = c.create("orders", 2, LogConfig::default());
    c.broker
        .partition("orders", 1)
        .unwrap()
        .write()
        .assign_leader_epoch(LeaderEpoch(3))
        .unwrap();
    let source = c.source();

    let v = versions(&source);
    for (api, want) in [
        (ApiKey::Metadata, 12),
        (ApiKey::Fetch, 16),
        (ApiKey::ListOffsets, 8),
        (ApiKey::OffsetForLeaderEpoch, 4),
        (ApiKey::DescribeConfigs, 4),
        (ApiKey::ListGroups, 5),
        (ApiKey::FindCoordinator, 6),
        (ApiKey::OffsetFetch, 8),
    ] {
        assert_eq!(v[&api], Some(want), "{api:?}");
    }

    let m = source.metadata(None).unwrap();
    assert_eq!(m.cluster_id, c.broker.cluster_id);
    assert_eq!(
        m.nodes,
        vec![SourceNode {
            id: 1,
            host: "127.0.0.1".into(),
            port: i32::from(c.port)
        }]
    );
    let orders = m.topics.iter().find(|t| t.name == "orders").unwrap();
    assert_eq!(orders.id, id);
    assert_ne!(id, [0; 16]);
    assert!(!orders.internal);
    assert_eq!(orders.error, 0);
    let got: Vec<(i32, i32, i32, i16)> = orders
        .partitions
        .iter()
        .map(|p| (p.partition, p.leader, p.leader_epoch.get(), p.error))
        .collect();
    assert_eq!(got, vec![(0, 1, 0, 0), (1, 1, 3, 0)]);
    for t in &m.topics {
        assert_eq!(t.internal, t.name.starts_with("__"), "{}", t.name);
    }

    // Named topics; an unknown one is reported, never created on the source.
    let m = source
        .metadata(Some(&["orders".to_string(), "missing".to_string()]))
        .unwrap();
    let names: Vec<(&str, i16)> = m
        .topics
        .iter()
        .map(|t| (t.name.as_str(), t.error))
        .collect();
    assert_eq!(
        names,
        vec![("missing", UNKNOWN_TOPIC_OR_PARTITION), ("orders", 0)]
    );
    assert!(c.broker.topics.get("missing").is_none());
    // No topics at all.
    assert!(source.metadata(Some(&[])).unwrap().topics.is_empty());

    assert_eq!(source.cluster_id().unwrap(), c.broker.cluster_id);
    drop(source);
    c.stop();
}

#[test]
fn fetch_returns_the_stored_bytes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    let id = c.create("t", 1, LogConfig::default());
    c.create("u", 1, LogConfig::default());
    c.append("t", 0, 0, batch(Compression::None, 3, "a", NOW));
    c.append("t", 0, 0, batch(Compression::Gzip, 4, "b", NOW));
    c.append("t", 0, 0, batch(Compression::Zstd, 2, "c", NOW));
    c.append("u", 0, 0, batch(Compression::Lz4, 5, "d", NOW));
    let source = c.source();

    // Everything, by name (resolved to the topic id for Fetch v16).
    let d = fetch_one(&source, part("t", 0, 0, -1, 1 << 20));
    assert_eq!(d.topic, "t");
    assert_eq!(d.error, 0);
    assert_eq!(d.high_watermark, Offset(9));
    assert_eq!(d.log_start_offset, Offset(0));
    assert_eq!(d.diverging_epoch, None);
    let all = c.stored("t", 0, 0, 1 << 20);
    assert!(!all.is_empty());
    assert_eq!(d.records, all);

    // From inside the second batch: the source sends that whole batch on.
    let d = fetch_one(&source, part("t", 0, 5, -1, 1 << 20));
    assert_eq!(d.records, c.stored("t", 0, 5, 1 << 20));
    assert_ne!(d.records, all);

    // A byte limit that cuts the second batch: the partial tail comes back untouched.
    let first = c.stored("t", 0, 0, 1).len();
    let limit = first + 10;
    let d = fetch_one(&source, part("t", 0, 0, -1, limit as i32));
    assert_eq!(d.records.len(), limit);
    assert_eq!(d.records, all.slice(..limit));

    // By the caller's topic id, and two topics at once.
    let mut by_id = part("t", 0, 0, -1, 1 << 20);
    by_id.topic_id = id;
    let r = source
        .fetch(1, &request(vec![by_id, part("u", 0, 0, -1, 1 << 20)]))
        .unwrap();
    let got: Vec<(&str, Bytes)> = r
        .partitions
        .iter()
        .map(|p| (p.topic.as_str(), p.records.clone()))
        .collect();
    assert_eq!(
        got,
        vec![("t", all.clone()), ("u", c.stored("u", 0, 0, 1 << 20))]
    );

    // A wrong id is the source's UNKNOWN_TOPIC_ID; an unknown name never reaches it.
    let mut wrong = part("t", 0, 0, -1, 1 << 20);
    wrong.topic_id = [7; 16];
    assert_eq!(fetch_one(&source, wrong).error, UNKNOWN_TOPIC_ID);
    let d = fetch_one(&source, part("nope", 0, 0, -1, 1 << 20));
    assert_eq!(d.error, UNKNOWN_TOPIC_OR_PARTITION);
    assert!(d.records.is_empty());
    assert!(c.broker.topics.get("nope").is_none());

    // At the end: nothing, no error.
    let d = fetch_one(&source, part("t", 0, 9, -1, 1 << 20));
    assert_eq!((d.error, d.records.len()), (0, 0));

    // Empty requests are answered without asking.
    assert!(
        source
            .fetch(1, &request(vec![]))
            .unwrap()
            .partitions
            .is_empty()
    );
    drop(source);
    c.stop();
}

#[test]
fn fetch_answers_a_diverging_epoch_after_an_unclean_election() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("d", 1, LogConfig::default());
    c.append("d", 0, 0, batch(Compression::None, 3, "e0", NOW)); // [0, 3) epoch 0
    c.append("d", 0, 1, batch(Compression::None, 3, "e1", NOW)); // [3, 6) epoch 1
    let source = c.source();
    // The mirror copies all six records.
    let d = fetch_one(&source, part("d", 0, 0, -1, 1 << 20));
    assert_eq!(d.high_watermark, Offset(6));

    // Unclean election on the source: a replica without [3, 6) becomes leader at epoch 2.
    {
        let h = c.broker.partition("d", 0).unwrap();
        let mut log = h.write();
        log.truncate_to(Offset(3)).unwrap();
        log.assign_leader_epoch(LeaderEpoch(2)).unwrap();
    }
    c.append("d", 0, 2, batch(Compression::None, 2, "e2", NOW)); // [3, 5) epoch 2

    // The mirror's last batch has epoch 1, which the source's log no longer has past 3.
    let d = fetch_one(&source, part("d", 0, 6, 1, 1 << 20));
    assert_eq!(d.error, 0);
    assert_eq!(d.diverging_epoch, Some((LeaderEpoch(0), Offset(3))));
    assert!(d.records.is_empty());
    assert_eq!(d.high_watermark, Offset(5));

    // After truncating to 3 the mirror fetches the new history.
    let d = fetch_one(&source, part("d", 0, 3, 0, 1 << 20));
    assert_eq!(d.diverging_epoch, None);
    assert_eq!(d.records, c.stored("d", 0, 3, 1 << 20));

    // The same answer through OffsetForLeaderEpoch.
    assert_eq!(
        source
            .end_offset_for_epoch("d", 0, LeaderEpoch(1), LeaderEpoch::NONE)
            .unwrap(),
        (LeaderEpoch(0), Offset(3))
    );
    drop(source);
    c.stop();
}

#[test]
fn fetch_outside_the_log_is_offset_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("o", 1, LogConfig::default());
    c.append("o", 0, 0, batch(Compression::None, 3, "a", NOW));
    c.append("o", 0, 0, batch(Compression::None, 3, "b", NOW));
    let source = c.source();

    let d = fetch_one(&source, part("o", 0, 100, -1, 1 << 20));
    assert_eq!(d.error, OFFSET_OUT_OF_RANGE);
    assert!(d.records.is_empty());

    c.broker
        .partition("o", 0)
        .unwrap()
        .write()
        .maybe_increment_log_start_offset(Offset(3))
        .unwrap();
    let d = fetch_one(&source, part("o", 0, 0, -1, 1 << 20));
    assert_eq!(d.error, OFFSET_OUT_OF_RANGE);
    // The mirror learns where the source's log starts now.
    let d = fetch_one(&source, part("o", 0, 3, -1, 1 << 20));
    assert_eq!((d.error, d.log_start_offset), (0, Offset(3)));
    assert_eq!(
        source.list_offset("o", 0, OffsetSpec::Earliest).unwrap().0,
        Offset(3)
    );
    drop(source);
    c.stop();
}

#[test]
fn list_offsets_answers_earliest_latest_and_by_timestamp_with_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("lo", 1, LogConfig::default());
    c.append("lo", 0, 0, batch(Compression::None, 3, "a", NOW));
    c.append("lo", 0, 4, batch(Compression::None, 3, "b", NOW + 1_000));
    let source = c.source();

    assert_eq!(
        source.list_offset("lo", 0, OffsetSpec::Earliest).unwrap(),
        (Offset(0), LeaderEpoch(0))
    );
    assert_eq!(
        source.list_offset("lo", 0, OffsetSpec::Latest).unwrap(),
        (Offset(6), LeaderEpoch(4))
    );
    assert_eq!(
        source
            .list_offset("lo", 0, OffsetSpec::Timestamp(TimestampMs(NOW + 1)))
            .unwrap(),
        (Offset(1), LeaderEpoch(0))
    );
    assert_eq!(
        source
            .list_offset("lo", 0, OffsetSpec::Timestamp(TimestampMs(NOW + 1_000)))
            .unwrap(),
        (Offset(3), LeaderEpoch(4))
    );
    // Nothing that late: Kafka's "no offset" answer.
    assert_eq!(
        source
            .list_offset("lo", 0, OffsetSpec::Timestamp(TimestampMs(NOW + 60_000)))
            .unwrap(),
        (Offset(-1), LeaderEpoch(-1))
    );
    // Unknown topic or partition: the metadata says so, no retries needed.
    for (topic, p) in [("nope", 0), ("lo", 5)] {
        match source.list_offset(topic, p, OffsetSpec::Latest) {
            Err(SourceError::Kafka { code, .. }) => assert_eq!(code, UNKNOWN_TOPIC_OR_PARTITION),
            other => panic!("{other:?}"),
        }
    }
    drop(source);
    c.stop();
}

#[test]
fn end_offset_for_epoch_matches_the_source_epoch_cache() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("e", 1, LogConfig::default());
    c.append("e", 0, 0, batch(Compression::None, 3, "a", NOW)); // epoch 0 at 0
    c.append("e", 0, 2, batch(Compression::None, 2, "b", NOW)); // epoch 2 at 3
    c.append("e", 0, 5, batch(Compression::None, 4, "c", NOW)); // epoch 5 at 5, LEO 9
    let source = c.source();
    let h = c.broker.partition("e", 0).unwrap();
    for epoch in -1..=7 {
        let want = {
            let log = h.read();
            log.epoch_cache()
                .end_offset_for(LeaderEpoch(epoch), log.log_end_offset())
        };
        assert_eq!(
            source
                .end_offset_for_epoch("e", 0, LeaderEpoch(epoch), LeaderEpoch::NONE)
                .unwrap(),
            want,
            "epoch {epoch}"
        );
    }
    assert_eq!(
        source
            .end_offset_for_epoch("e", 0, LeaderEpoch(2), LeaderEpoch::NONE)
            .unwrap(),
        (LeaderEpoch(2), Offset(5))
    );
    // Asked in the leader's epoch (5), it answers; in an older one it is fenced (asked again in
    // that epoch, it would be fenced again); in a newer one, which the node has not heard of,
    // it answers UNKNOWN_LEADER_EPOCH. Neither is retried: the caller backs off.
    assert_eq!(
        source
            .end_offset_for_epoch("e", 0, LeaderEpoch(2), LeaderEpoch(5))
            .unwrap(),
        (LeaderEpoch(2), Offset(5))
    );
    for (current, want) in [(4, 74), (6, 75)] {
        match source.end_offset_for_epoch("e", 0, LeaderEpoch(2), LeaderEpoch(current)) {
            Err(SourceError::Kafka { code, .. }) => assert_eq!(code, want, "asked in {current}"),
            other => panic!("asked in {current}: {other:?}"),
        }
    }
    drop(h);
    drop(source);
    c.stop();
}

#[test]
fn topic_configs_are_the_values_set_on_the_topic() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create(
        "cfg",
        1,
        LogConfig {
            retention_ms: 3_600_000,
            ..LogConfig::default()
        },
    );
    c.create("plain", 1, LogConfig::default());
    let source = c.source();
    assert_eq!(
        source.topic_configs("cfg").unwrap(),
        vec![("retention.ms".to_string(), "3600000".to_string())]
    );
    assert_eq!(source.topic_configs("plain").unwrap(), vec![]);
    match source.topic_configs("nope") {
        Err(SourceError::Kafka { code, message }) => {
            assert_eq!(code, UNKNOWN_TOPIC_OR_PARTITION);
            assert!(message.contains("nope"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    drop(source);
    c.stop();
}

/// KIP-1279 §12: only the source's DYNAMIC_TOPIC_CONFIG entries are copied. A value the topic
/// inherits from its broker's settings (here `log.retention.ms`, as a server.properties line
/// would set it) is reported STATIC_BROKER_CONFIG; copied, it pinned the source's broker
/// default as a topic override on every mirror topic of the destination.
#[test]
fn topic_configs_leave_out_values_inherited_from_the_brokers_settings() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start_configured(dir.path(), 0, Caps::new(), |config| {
        config.logs.default_log_config = LogConfig::default()
            .with_overrides([("log.retention.ms", "3600000")])
            .unwrap();
    });
    c.create("plain", 1, c.broker.logs.default_log_config().clone());
    c.create(
        "own",
        1,
        c.broker
            .logs
            .default_log_config()
            .with_topic_overrides([("segment.ms", "600000")])
            .unwrap(),
    );
    let source = c.source();
    assert_eq!(source.topic_configs("plain").unwrap(), vec![]);
    assert_eq!(
        source.topic_configs("own").unwrap(),
        vec![("segment.ms".to_string(), "600000".to_string())]
    );
    drop(source);
    c.stop();
}

#[test]
fn groups_are_listed_and_their_committed_offsets_read() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("g", 2, LogConfig::default());
    commit(&c.addr(), "g1", "g", 0, 2, 0, "m0");
    commit(&c.addr(), "g1", "g", 1, 7, 3, "m1");
    commit(&c.addr(), "g2", "g", 0, 1, 0, "");
    let source = c.source();

    let groups = source.list_groups().unwrap();
    let ids: Vec<&str> = groups.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(ids, vec!["g1", "g2"]);
    for g in &groups {
        assert_eq!(g.protocol_type, "");
        assert_eq!(g.state.as_deref(), Some("Empty"));
        assert_eq!(g.group_type.as_deref(), Some("classic"));
    }

    let mut offsets = source.committed_offsets("g1").unwrap();
    offsets.sort_by_key(|o| o.partition);
    assert_eq!(
        offsets,
        vec![
            CommittedOffset {
                topic: "g".into(),
                partition: 0,
                offset: Offset(2),
                leader_epoch: LeaderEpoch(0),
                metadata: Some("m0".into()),
            },
            CommittedOffset {
                topic: "g".into(),
                partition: 1,
                offset: Offset(7),
                leader_epoch: LeaderEpoch(3),
                metadata: Some("m1".into()),
            },
        ]
    );
    assert_eq!(source.committed_offsets("nobody").unwrap(), vec![]);
    drop(source);
    c.stop();
}

#[test]
fn the_client_reconnects_after_the_source_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    let port = c.port;
    c.create("r", 1, LogConfig::default());
    c.append("r", 0, 0, batch(Compression::None, 3, "a", NOW));
    let source = c.source();
    let before = fetch_one(&source, part("r", 0, 0, -1, 1 << 20));
    assert_eq!(before.records, c.stored("r", 0, 0, 1 << 20));
    let cluster_id = source.cluster_id().unwrap();
    c.stop();

    // Down: every attempt is refused, then the error is returned.
    unreachable(source.fetch(1, &request(vec![part("r", 0, 0, -1, 1 << 20)])));
    unreachable(source.metadata(None));

    // Back on the same port and data: the same client carries on.
    let c = Cluster::start(dir.path(), port);
    assert_eq!(c.port, port);
    c.append("r", 0, 0, batch(Compression::Snappy, 2, "b", NOW));
    let after = fetch_one(&source, part("r", 0, 0, -1, 1 << 20));
    assert_eq!(after.records, c.stored("r", 0, 0, 1 << 20));
    assert!(after.records.len() > before.records.len());
    assert_eq!(after.high_watermark, Offset(5));
    assert_eq!(source.cluster_id().unwrap(), cluster_id);
    assert_eq!(
        source.list_offset("r", 0, OffsetSpec::Latest).unwrap().0,
        Offset(5)
    );
    drop(source);
    c.stop();
}

#[test]
fn bootstrap_skips_a_dead_first_address() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    let dead = format!("127.0.0.1:{}", closed_port());
    let source = KafkaSource::new(KafkaSourceConfig {
        max_retries: 0,
        ..config([dead, c.addr()])
    })
    .unwrap();
    let m = source.metadata(None).unwrap();
    assert_eq!(m.nodes.len(), 1);
    assert_eq!(source.cluster_id().unwrap(), c.broker.cluster_id);
    drop(source);
    c.stop();
}

#[test]
fn a_closed_port_is_unreachable_after_the_retries() {
    let dead = format!("127.0.0.1:{}", closed_port());
    let source = KafkaSource::new(KafkaSourceConfig {
        max_retries: 3,
        ..config([dead.clone()])
    })
    .unwrap();
    let m = unreachable(source.metadata(None));
    assert!(m.contains(&dead), "{m}");
    unreachable(source.fetch(1, &request(vec![part("t", 0, 0, -1, 100)])));
    unreachable(source.list_groups());
    unreachable(source.committed_offsets("g"));
    unreachable(source.topic_configs("t"));
    unreachable(source.list_offset("t", 0, OffsetSpec::Latest));
}

#[test]
fn a_source_that_hangs_up_is_tried_max_retries_plus_one_times() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let accepted = Arc::new(AtomicUsize::new(0));
    {
        let accepted = accepted.clone();
        // Accepts and hangs up at once, forever (the thread ends with the test process).
        std::thread::spawn(move || {
            for s in listener.incoming() {
                accepted.fetch_add(1, Ordering::SeqCst);
                drop(s);
            }
        });
    }
    let source = KafkaSource::new(KafkaSourceConfig {
        max_retries: 3,
        ..config([addr])
    })
    .unwrap();
    // Closed or reset, depending on whether the request arrived before the hang-up.
    unreachable(source.metadata(None));
    // The client saw each hang-up after its accept: the count is exact.
    assert_eq!(accepted.load(Ordering::SeqCst), 4);
}

#[test]
fn an_old_source_is_spoken_to_at_its_own_versions() {
    let dir = tempfile::tempdir().unwrap();
    let caps: Caps = [
        (ApiKey::ApiVersions, Some((0, 0))),
        (ApiKey::Metadata, Some((0, 6))),
        (ApiKey::Fetch, Some((4, 11))),
        (ApiKey::ListOffsets, Some((1, 3))),
        (ApiKey::OffsetForLeaderEpoch, None),
        (ApiKey::ListGroups, Some((0, 3))),
        (ApiKey::FindCoordinator, Some((0, 3))),
        (ApiKey::OffsetFetch, Some((1, 1))),
    ]
    .into_iter()
    .collect();
    let c = Cluster::start_capped(dir.path(), 0, caps);
    c.create("old", 2, LogConfig::default());
    c.append("old", 0, 0, batch(Compression::None, 3, "a", NOW));
    c.append("old", 0, 1, batch(Compression::None, 3, "b", NOW + 1_000));
    commit(&c.addr(), "og", "old", 1, 4, 2, "meta");
    let source = c.source();

    let v = versions(&source);
    for (api, want) in [
        (ApiKey::Metadata, Some(6)),
        (ApiKey::Fetch, Some(11)),
        (ApiKey::ListOffsets, Some(3)),
        (ApiKey::OffsetForLeaderEpoch, None),
        (ApiKey::DescribeConfigs, Some(4)),
        (ApiKey::ListGroups, Some(3)),
        (ApiKey::FindCoordinator, Some(3)),
        (ApiKey::OffsetFetch, Some(1)),
    ] {
        assert_eq!(v[&api], want, "{api:?}");
    }

    // Metadata v6: no topic ids, no leader epochs; a cluster id all the same.
    let m = source.metadata(Some(&["old".to_string()])).unwrap();
    assert_eq!(m.topics[0].id, [0; 16]);
    assert!(
        m.topics[0]
            .partitions
            .iter()
            .all(|p| p.leader_epoch == LeaderEpoch(-1))
    );
    assert_eq!(source.cluster_id().unwrap(), c.broker.cluster_id);

    // Fetch v11, by name: the same bytes; the last fetched epoch cannot be sent, so no
    // divergence is reported (the mirror asks OffsetForLeaderEpoch — or here, cannot).
    let d = fetch_one(&source, part("old", 0, 0, 7, 1 << 20));
    assert_eq!(d.records, c.stored("old", 0, 0, 1 << 20));
    assert_eq!(d.diverging_epoch, None);
    assert_eq!(d.log_start_offset, Offset(0));

    // ListOffsets v3: offsets without epochs.
    assert_eq!(
        source
            .list_offset("old", 0, OffsetSpec::Timestamp(TimestampMs(NOW + 1_000)))
            .unwrap(),
        (Offset(3), LeaderEpoch(-1))
    );
    match source.end_offset_for_epoch("old", 0, LeaderEpoch(0), LeaderEpoch::NONE) {
        Err(SourceError::Unsupported(m)) => assert!(m.contains("OffsetForLeaderEpoch"), "{m}"),
        other => panic!("{other:?}"),
    }

    // ListGroups v3: no state or type; OffsetFetch v1: partitions listed from metadata, no
    // leader epoch.
    let groups = source.list_groups().unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(
        (
            groups[0].group_id.as_str(),
            &groups[0].state,
            &groups[0].group_type
        ),
        ("og", &None, &None)
    );
    assert_eq!(
        source.committed_offsets("og").unwrap(),
        vec![CommittedOffset {
            topic: "old".into(),
            partition: 1,
            offset: Offset(4),
            leader_epoch: LeaderEpoch(-1),
            metadata: Some("meta".into()),
        }]
    );
    drop(source);
    c.stop();
}

#[test]
fn a_loading_coordinator_is_asked_again_until_the_retries_run_out() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("g", 1, LogConfig::default());
    commit(&c.addr(), "grp", "g", 0, 5, 0, "");
    let source = c.source(); // max_retries 5

    c.front.loading_offset_fetches.store(5, Ordering::SeqCst);
    let offsets = source.committed_offsets("grp").unwrap();
    assert_eq!(offsets.len(), 1);
    assert_eq!(offsets[0].offset, Offset(5));
    assert_eq!(c.front.loading_offset_fetches.load(Ordering::SeqCst), 0);

    c.front.loading_offset_fetches.store(6, Ordering::SeqCst);
    match source.committed_offsets("grp") {
        Err(SourceError::Kafka { code, .. }) => assert_eq!(code, COORDINATOR_LOAD_IN_PROGRESS),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.front.loading_offset_fetches.load(Ordering::SeqCst), 0);
    drop(source);
    c.stop();
}

#[test]
fn metadata_waits_out_a_leaderless_topic_then_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("n", 1, LogConfig::default());
    let source = c.source(); // max_retries 5
    let topics = ["n".to_string()];

    c.front.leaderless_metadata.store(5, Ordering::SeqCst);
    let m = source.metadata(Some(&topics)).unwrap();
    assert_eq!((m.topics[0].error, m.topics[0].partitions.len()), (0, 1));
    assert_eq!(c.front.leaderless_metadata.load(Ordering::SeqCst), 0);

    // Still leaderless after the last retry: the answer says so, per topic.
    c.front.leaderless_metadata.store(6, Ordering::SeqCst);
    let m = source.metadata(Some(&topics)).unwrap();
    assert_eq!(m.topics[0].error, LEADER_NOT_AVAILABLE);
    assert_eq!(c.front.leaderless_metadata.load(Ordering::SeqCst), 0);

    // A leader call waits it out too.
    c.front.leaderless_metadata.store(3, Ordering::SeqCst);
    assert_eq!(
        source.list_offset("n", 0, OffsetSpec::Latest).unwrap().0,
        Offset(0)
    );
    drop(source);
    c.stop();
}

// ---------------------------------------------------------------------------------------------
// Found in review: the frame bound the mirror gives its client, fetching topics without ids,
// and a stale topic id below Fetch v13.
// ---------------------------------------------------------------------------------------------

/// A mirror accepts `fetch.response.max.bytes` up to 1 GiB and sends it as the Fetch's
/// `max_bytes`, but the source client it builds keeps its 256 MiB frame bound (no key sets it):
/// every answer above the bound is refused as a protocol error, and the same fetch is sent again.
#[test]
fn the_mirror_sizes_the_clients_frame_bound_for_its_fetch_responses() {
    let configs: std::collections::BTreeMap<String, String> = [
        ("bootstrap.servers", "127.0.0.1:9092"),
        ("fetch.response.max.bytes", "536870912"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let (mirror, source) = mirrorlog_broker::mirrors::parse_mirror_configs("m", &configs)
        .expect("the mirror accepts 512 MiB");
    assert!(
        mirror.response_max_bytes as usize + (1 << 20) <= source.response_max_bytes,
        "fetch.response.max.bytes {} but the client refuses frames above {}",
        mirror.response_max_bytes,
        source.response_max_bytes
    );
}

/// Below Fetch v13 the caller's topic id is dropped: after the source topic is deleted and
/// recreated under the same name — and the client's own metadata already shows the new id — a
/// fetch naming the old id reads the new topic's records as if they were the old topic's.
#[test]
fn below_fetch_v13_a_topic_id_the_client_knows_is_stale_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let caps: Caps = [(ApiKey::Fetch, Some((4, 12)))].into_iter().collect();
    let c = Cluster::start_capped(dir.path(), 0, caps);
    let old_id = c.create("t", 1, LogConfig::default());
    c.append("t", 0, 0, batch(Compression::None, 3, "old", NOW));
    let source = c.source();
    let topics = ["t".to_string()];
    assert_eq!(source.metadata(Some(&topics)).unwrap().topics[0].id, old_id);

    c.broker.topics.delete(&c.broker.logs, "t").unwrap();
    let new_id = c.create("t", 1, LogConfig::default());
    c.append("t", 0, 0, batch(Compression::None, 5, "new", NOW));
    assert_ne!(old_id, new_id);
    // The client learns the new id.
    assert_eq!(source.metadata(Some(&topics)).unwrap().topics[0].id, new_id);

    let mut p = part("t", 0, 0, -1, 1 << 20);
    p.topic_id = old_id;
    let d = fetch_one(&source, p);
    assert!(
        d.error != 0,
        "fetch for topic id {old_id:?} answered error 0 with {} bytes of topic {new_id:?}",
        d.records.len()
    );
    drop(source);
    c.stop();
}

/// A source whose metadata reports no topic ids (Metadata below v10: an older node answering
/// metadata in a rolling upgrade, or a Kafka-compatible broker) while the fetch node speaks
/// Fetch v13+: Kafka's consumer falls back to Fetch v12 by name when a topic has no id; this
/// client answers UNKNOWN_TOPIC_OR_PARTITION itself, on every fetch, without asking the source.
#[test]
fn a_topic_without_an_id_is_fetched_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let caps: Caps = [(ApiKey::Metadata, Some((1, 9)))].into_iter().collect();
    let c = Cluster::start_capped(dir.path(), 0, caps);
    c.create("noid", 1, LogConfig::default());
    c.append("noid", 0, 0, batch(Compression::None, 3, "a", NOW));
    let source = c.source();
    let v = versions(&source);
    assert!(v[&ApiKey::Fetch].unwrap() >= 13, "{v:?}");
    let d = fetch_one(&source, part("noid", 0, 0, -1, 1 << 20));
    assert_eq!(
        (d.error, !d.records.is_empty()),
        (0, true),
        "the topic exists and has records"
    );
    drop(source);
    c.stop();
}

#[test]
fn a_source_without_the_mirror_rpcs_cannot_answer_the_last_mirror_epoch_lookup() {
    // Kafka 3.x/4.x list no API key above 92: "no mirror of us" would truncate a failback's
    // whole log on an answer that says nothing.
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    let id = c.create("t", 1, LogConfig::default());
    let source = c.source();
    match source.last_mirror_epoch("destination-cluster", id, 0) {
        Err(SourceError::Unsupported(m)) => {
            assert!(
                m.contains("DescribeClusterMirrors") && m.contains(&c.addr()),
                "{m}"
            )
        }
        other => panic!("{other:?}"),
    }
    drop(source);
    c.stop();
}

/// A Fetch answer saying the source's quota throttled it (KIP-219, v8+) holds the connection's
/// next request that long, as Kafka's clients do: the broker mutes the channel meanwhile, so a
/// request sent anyway waits there on its own timeout. Only a lower bound is checked, which no
/// slow machine can break.
#[test]
fn a_throttled_fetch_answer_holds_the_next_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("t", 1, LogConfig::default());
    c.append("t", 0, 0, batch(Compression::None, 3, "a", NOW));
    let source = c.source();
    fetch_one(&source, part("t", 0, 0, -1, 1 << 20));
    let start = std::time::Instant::now();
    c.front.fetch_throttle_ms.store(1_000, Ordering::SeqCst);
    fetch_one(&source, part("t", 0, 0, -1, 1 << 20));
    c.front.fetch_throttle_ms.store(0, Ordering::SeqCst);
    let d = fetch_one(&source, part("t", 0, 0, -1, 1 << 20));
    assert!(!d.records.is_empty());
    assert!(
        start.elapsed() >= Duration::from_millis(1_000),
        "the fetch after the throttled answer went out after {:?}",
        start.elapsed()
    );
    drop(source);
    c.stop();
}

/// Fetch v12 (Kafka 2.7) is the first that carries `LastFetchedEpoch`: below it the client says
/// its fetches report no divergence, so the mirror asks OffsetForLeaderEpoch itself — which a
/// Kafka 2.1–2.6 source (Fetch 11, OffsetForLeaderEpoch 3) answers.
#[test]
fn below_fetch_v12_the_client_says_its_fetches_report_no_divergence() {
    for (fetch_max, reports) in [(11, false), (12, true)] {
        let dir = tempfile::tempdir().unwrap();
        let caps: Caps = [
            (ApiKey::Fetch, Some((4, fetch_max))),
            (ApiKey::OffsetForLeaderEpoch, Some((2, 3))),
        ]
        .into_iter()
        .collect();
        let c = Cluster::start_capped(dir.path(), 0, caps);
        c.create("t", 1, LogConfig::default());
        c.append("t", 0, 0, batch(Compression::None, 3, "a", NOW));
        c.append("t", 0, 2, batch(Compression::None, 2, "b", NOW));
        let source = c.source();
        assert_eq!(
            source.fetch_reports_divergence(1).unwrap(),
            reports,
            "Fetch up to v{fetch_max}"
        );
        assert_eq!(
            source
                .end_offset_for_epoch("t", 0, LeaderEpoch(1), LeaderEpoch::NONE)
                .unwrap(),
            (LeaderEpoch(0), Offset(3))
        );
        drop(source);
        c.stop();
    }
}

/// Partition 0 of `t` fetched from `c` by `source`, answered NOT_LEADER_OR_FOLLOWER naming `hint`.
fn answered_not_leader(c: &Cluster, source: &KafkaSource, hint: LeaderHint) -> PartitionData {
    *c.front.not_leader_next_fetch.lock() = Some(hint);
    fetch_one(source, part("t", 0, 0, -1, 1 << 20))
}

/// KIP-951: a node that no longer leads a partition names its leader (and, from Fetch v16, that
/// leader's endpoint) in its NOT_LEADER_OR_FOLLOWER answer. The client dropped both, so the
/// mirror asked the source's metadata before it could fetch again; now the hint reaches it,
/// and the node it names is fetched from at the endpoint given, with no metadata request. A
/// hint naming a node of no known address is dropped (the metadata says who leads then).
#[test]
fn a_not_leader_answer_names_the_leader_and_its_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let c = Cluster::start(dir.path(), 0);
    c.create("t", 1, LogConfig::default());
    c.append("t", 0, 0, batch(Compression::None, 3, "a", NOW));
    let source = c.source();
    assert_eq!(fetch_one(&source, part("t", 0, 0, -1, 1 << 20)).error, 0);
    let asked = || c.front.metadata_requests.load(Ordering::SeqCst);
    let metadata_before = asked();

    // Node 7, which the metadata never named, at this listener's endpoint.
    let d = answered_not_leader(
        &c,
        &source,
        LeaderHint {
            id: 7,
            epoch: 3,
            endpoint_port: Some(c.port),
        },
    );
    assert_eq!(d.error, NOT_LEADER_OR_FOLLOWER);
    assert_eq!(
        d.current_leader,
        Some(CurrentLeader {
            id: 7,
            epoch: LeaderEpoch(3)
        })
    );
    let r = source
        .fetch(7, &request(vec![part("t", 0, 0, -1, 1 << 20)]))
        .unwrap();
    assert_eq!(r.partitions[0].error, 0);
    assert_eq!(r.partitions[0].records, c.stored("t", 0, 0, 1 << 20));
    assert_eq!(asked(), metadata_before, "no metadata round trip");

    // Node 9, named without an endpoint, is no hint: nothing says where it is.
    let d = answered_not_leader(
        &c,
        &source,
        LeaderHint {
            id: 9,
            epoch: 4,
            endpoint_port: None,
        },
    );
    assert_eq!((d.error, d.current_leader), (NOT_LEADER_OR_FOLLOWER, None));
    // A leader named without an epoch (−1) is no hint either, as Kafka's consumer reads it.
    let d = answered_not_leader(
        &c,
        &source,
        LeaderHint {
            id: 1,
            epoch: -1,
            endpoint_port: Some(c.port),
        },
    );
    assert_eq!((d.error, d.current_leader), (NOT_LEADER_OR_FOLLOWER, None));
    drop(source);
    c.stop();
}
